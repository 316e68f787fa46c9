#!/bin/bash
# shellcheck source-path=SCRIPTDIR
# Boot a kernel with the guest rootfs under QEMU/TCG, run /share/run.sh inside
# (via the guest init, see qemu/guest-init) and return its exit status.
#
# Usage: qemu/boot.sh --kernel-dir DIR --image FILE --share DIR --log FILE
#                     --timeout SECONDS [--initrd FILE] [--append "ARGS"]
#   --kernel-dir  DIR/vmlinuz is booted; DIR/lib/modules is shared read-only
#                 with the guest as its /lib/modules (see qemu/stock-kernel.sh);
#                 DIR/arch says x86_64 (default) or arm64 (scripts/build-kernel.sh)
#   --image       ext4 root image (qemu/rootfs.sh); never modified (-snapshot);
#                 "none": the initramfs is the root (the arm64 guest); a .qcow2
#                 overlay is written to (a test that boots twice on one disk)
#   --share       host directory mounted at /share in the guest (read-write)
#   --log         serial console log file
#   --timeout     hard wall-clock limit for the whole boot
#   --initrd      initramfs (qemu/initramfs.sh); without it the kernel must
#                 have virtio-blk, ext4 and 9p built in
#   --append      extra kernel command line arguments
#   --interactive the console is this terminal too (Ctrl-A X quits QEMU)
# Environment: NUMA=N boots the guest with N memory nodes (default 1);
# GUEST_MB=M gives it M MiB of memory (default 3072), split over the nodes;
# GUEST_PREALLOC=1 has QEMU touch all of it before the guest starts (no
# first-touch fault of QEMU's own in what the guest measures).
# Exit status: the guest's run.sh status; 124 = timed out (QEMU killed);
# 125 = no exit status came back (guest crashed, panicked or QEMU failed).
# Never uses KVM: the host's /dev/kvm is not to be relied on.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../scripts/lib.sh"
. "$here/common.sh"

# usage: print the comment block at the top of this file.
usage() { awk 'NR > 2 && /^#/ { sub(/^# ?/, ""); print; next } NR > 2 { exit }' "$0" >&2; exit 2; }

kdir='' image='' share='' log='' timeout='' initrd='' append='' interactive=''
while (($#)); do
	case "$1" in
	--interactive) interactive=1; shift; continue ;;
	--kernel-dir) kdir=$2 ;;
	--image) image=$2 ;;
	--share) share=$2 ;;
	--log) log=$2 ;;
	--timeout) timeout=$2 ;;
	--initrd) initrd=$2 ;;
	--append) append=$2 ;;
	-h | --help) usage ;;
	*) echo "unknown argument: $1" >&2; usage ;;
	esac
	shift 2 || usage
done
[[ -n "$kdir" && -n "$image" && -n "$share" && -n "$log" && -n "$timeout" ]] || usage
[[ "$timeout" =~ ^[0-9]+$ ]] || die "--timeout must be whole seconds, got '$timeout'"
[[ -f "$kdir/vmlinuz" ]] || die "no kernel at $kdir/vmlinuz"
[[ "$image" == none || -f "$image" ]] || die "no root image at $image"
[[ -d "$share" ]] || die "share directory $share does not exist"
[[ -z "$initrd" || -f "$initrd" ]] || die "no initramfs at $initrd"

arch=x86_64
[[ ! -f "$kdir/arch" ]] || arch=$(cat "$kdir/arch")
need_tools timeout:coreutils

# The guest writes this last; a stale one would hide a crash.
rm -f "$share/exit-status"
mkdir -p "$(dirname "$log")"

# thread=single: with one host thread per vCPU (MTTCG), QEMU 7.2 lets a vCPU
# run stale translated code after the kernel patched its text on another vCPU
# (text_poke_bp), which shows up as a spurious "Oops: int3". Round-robin TCG
# keeps two vCPUs, without that race. TCG_THREAD=multi (environment) asks for
# MTTCG anyway, to measure what it would buy (docs/packaging.md).
tcg_thread=${TCG_THREAD:-single}
[[ "$tcg_thread" == single || "$tcg_thread" == multi ]] ||
	die "TCG_THREAD must be single or multi, got '$tcg_thread'"
case "$arch" in
x86_64)
	need_tools qemu-system-x86_64:qemu-system-x86
	# QEMU_X86 (environment): another QEMU binary and its options, e.g.
	# "/path/qemu-system-x86_64 -L /path/share/qemu", to compare versions.
	# shellcheck disable=SC2206
	qemu=(${QEMU_X86:-qemu-system-x86_64} -machine q35 -accel "tcg,thread=$tcg_thread" -cpu max)
	console=ttyS0
	;;
arm64)
	# mte=on: KVM can offer MTE to its VMs (gmem_vcpu_test checks that such a
	# VM refuses guest_memfd memslots).
	# virtualization=on: the guest kernel starts at EL2 and runs KVM (VHE);
	# GICv3, because KVM needs a GIC with virtualization support. TCG has
	# no text-patching race here: arm64 patches with cache maintenance.
	need_tools qemu-system-aarch64:qemu-system-arm
	qemu=(qemu-system-aarch64 -machine virt,virtualization=on,mte=on,gic-version=3 -accel tcg -cpu max)
	console=ttyAMA0
	;;
*) die "$kdir/arch: unknown architecture '$arch'" ;;
esac
if [[ "$image" == none ]]; then
	root=initramfs
	[[ -n "$initrd" ]] || die "--image none needs an --initrd to be the root"
else
	root=/dev/vda
	if [[ "$image" == *.qcow2 ]]; then
		# An overlay a test keeps across boots (qemu/dkms-upgrade.sh): written.
		qemu+=(-drive "file=$image,if=virtio,format=qcow2")
	else
		qemu+=(-drive "file=$image,if=virtio,format=raw,snapshot=on")
	fi
fi
# NUMA=N (environment): N memory nodes, the memory split evenly, and the
# CPUs (at least 2, one per node) spread over them round-robin.
numa=${NUMA:-1}
[[ "$numa" =~ ^[1-8]$ ]] || die "NUMA must be 1 to 8 nodes, got '$numa'"
prealloc=
[[ "${GUEST_PREALLOC:-0}" != 1 ]] || prealloc=1
((numa > 1)) || [[ -z "$prealloc" ]] || qemu+=(-mem-prealloc)
guest_mb=${GUEST_MB:-3072}
if [[ ! "$guest_mb" =~ ^[0-9]+$ ]] || ((guest_mb < 512)); then
	die "GUEST_MB must be at least 512 (MiB), got '$guest_mb'"
fi
cpus=$((numa > 2 ? numa : 2))
node_mb=$((guest_mb / numa))
if ((numa > 1)); then
	for ((i = 0; i < numa; i++)); do
		qemu+=(-object "memory-backend-ram,id=mem$i,size=${node_mb}M${prealloc:+,prealloc=on}")
		node="node,nodeid=$i,memdev=mem$i"
		for ((c = i; c < cpus; c += numa)); do node+=",cpus=$c"; done
		qemu+=(-numa "$node")
	done
fi
echo "$numa" >"$share/numa-nodes"
# One socket per CPU with NUMA: a node boundary inside a socket's shared
# cache makes the guest kernel warn (topology_sane).
smp=$cpus
((numa == 1)) || smp+=",sockets=$cpus"
# With more than one socket the guest assumes unsynchronized TSCs and falls
# back to the HPET, and the KVM selftests that need a TSC clocksource skip.
# QEMU derives every vCPU's TSC from one host clock: tell the guest so.
((numa == 1)) || append+=" tsc=reliable"
# Tells the guest's run.sh to take the other vCPUs offline before it loads
# modules (see thread=single above). The kernel patches its text while it
# boots too (static keys of late initcalls: make check of 166c6de, the
# bench's boot round, "Oops: int3" at sched_clock_tick+0x5), so under MTTCG
# only the boot CPU comes up (maxcpus=1), as run.sh would leave it anyway.
# BOOT_ALL_CPUS=1 (environment; the dkms tier, whose make -j2 wants both)
# brings every vCPU up and leaves the offlining to run.sh.
if [[ "$arch" == x86_64 && "$tcg_thread" == multi ]]; then
	append+=" kvm_gmem.mttcg"
	[[ "${BOOT_ALL_CPUS:-0}" == 1 ]] || append+=" maxcpus=1"
fi
# Under TCG a vCPU thread can go unscheduled for tens of seconds while the
# other host core runs a second guest and the idle job (make check of
# b03e77e: "soft lockup - CPU#0 stuck for 30s! [swapper/0:0]" in pv_native_safe_halt,
# the debian tier, Debian's own modules). Report a CPU stuck for 120 s of the
# guest's clock, not 20, as the Linux guest of the boot tiers does: a real
# lockup still fails the run (the judge counts the line), a hang meets the
# tier's timeout.
append+=" watchdog_thresh=60 rcupdate.rcu_cpu_stall_timeout=120"
qemu+=(-smp "$smp" -m "$((node_mb * numa))M"
	-nodefaults -display none -monitor none -no-reboot
	-serial chardev:console
	-virtfs "local,path=$share,mount_tag=share,security_model=none,id=share"
	-kernel "$kdir/vmlinuz"
	-append "console=$console panic=-1 oops=panic root=$root rw init=/sbin/kvm-gmem-init $append")
[[ -z "$initrd" ]] || qemu+=(-initrd "$initrd")
if [[ -n "$interactive" ]]; then
	# The console on this terminal, still logged; Ctrl-A X quits QEMU.
	qemu+=(-chardev "stdio,id=console,mux=on,signal=off,logfile=$log")
	qemu+=(-mon chardev=console,mode=readline)
else
	qemu+=(-chardev "file,id=console,path=$log")
fi
if [[ -d "$kdir/lib/modules" ]]; then
	qemu+=(-virtfs "local,path=$kdir/lib/modules,mount_tag=modules,security_model=none,readonly=on,id=modules")
fi

step "booting $(basename "$kdir") under TCG (timeout ${timeout}s, console: $log)"
t0=$(date +%s)
rc=0
# SIGTERM first so QEMU can flush the log; SIGKILL if it does not go.
if [[ -n "$interactive" ]]; then
	timeout --foreground --kill-after=10 "$timeout" "${qemu[@]}" || rc=$?
else
	timeout --kill-after=10 "$timeout" "${qemu[@]}" </dev/null || rc=$?
fi
elapsed=$(($(date +%s) - t0))

if ((rc == 124 || rc == 137)); then
	step "TIMEOUT: guest still running after ${timeout}s; QEMU killed (console: $log)"
	exit 124
fi
if [[ ! -s "$share/exit-status" ]]; then
	step "CRASH: guest stopped after ${elapsed}s without an exit status (QEMU status $rc; console: $log)"
	exit 125
fi
status=$(cat "$share/exit-status")
[[ "$status" =~ ^[0-9]+$ ]] || { step "CRASH: garbled exit status '$status' (console: $log)"; exit 125; }
step "guest finished in ${elapsed}s: run.sh exited with $status"
exit "$status"
