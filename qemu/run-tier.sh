#!/bin/bash
# shellcheck source-path=SCRIPTDIR
# Run one test tier in a QEMU/TCG guest and judge it.
#
# Usage: qemu/run-tier.sh --tier NAME --modules stock|DIR|FILE.deb --results DIR
#          [--kernel stock|DIR] [--tests DIR] [--timeout SECONDS]
#          [--initrd auto|none|FILE] [--append "KERNEL ARGS"] [--image FILE]
#   --tier     name of the tier; the share is build/share/NAME/
#   --modules  "stock" (Debian's kvm modules in the guest), a directory
#              holding our kvm.ko, kvm-amd.ko [, kvm-intel.ko], or our
#              kvm-gmem-dkms .deb (installed in the guest; dkms builds there)
#   --results  where serial.log, dmesg.txt, *.tap and summary.txt go
#   --kernel   "stock" (default: Debian's generic kernel, qemu/stock-kernel.sh)
#              or a kernel dir: vmlinuz, kver, [lib/modules/KVER/], [arch];
#              an arm64 one (scripts/build-kernel.sh arm64) has KVM built in
#              (--modules builtin) and its initramfs is the root
#   --tests    directory with a "list" file (NAME [TIMEOUT] per line) and the
#              test executables; without it only the module loading is tested
#   --timeout  hard wall-clock limit of the guest run (default 600)
#   --initrd   initramfs: built for the kernel (auto, default), none, or a file
#   --append   extra kernel command line arguments
#   --image    root image (default: qemu/rootfs.sh; the dkms tier's has more)
#   --expect   expected results (tests/expect/<tier>, see qemu/judge-expected.sh):
#              the tier passes only if its TAP shows exactly what the file
#              demands; without it, any "not ok" or missing result fails
#   --shell    after loading the modules, a root shell on this terminal
#              (ends with "poweroff", "exit" or Ctrl-A X); tests still run after
# Any run also fails on an error line in the guest's kernel log, or a kernel
# tainted W, D, B or L at the end of the run (tainted.txt).
# Exit status: 0 all passed; 1 a test or expectation failed or the kernel log shows an error;
# 124 the guest timed out; 125 the guest crashed; 2 usage error.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$here/../scripts/lib.sh"
. "$here/common.sh"

# usage: print the comment block at the top of this file.
usage() { awk 'NR > 2 && /^#/ { sub(/^# ?/, ""); print; next } NR > 2 { exit }' "$0" >&2; exit 2; }

tier='' kernel=stock modules='' tests='' results='' timeout=600 initrd=auto append='' image='' expect=''
shell=''
while (($#)); do
	case "$1" in
	--shell) shell=1; shift; continue ;;
	--tier) tier=$2 ;;
	--kernel) kernel=$2 ;;
	--modules) modules=$2 ;;
	--tests) tests=$2 ;;
	--results) results=$2 ;;
	--timeout) timeout=$2 ;;
	--initrd) initrd=$2 ;;
	--append) append=$2 ;;
	--image) image=$2 ;;
	--expect) expect=$2 ;;
	-h | --help) usage ;;
	*) echo "unknown argument: $1" >&2; usage ;;
	esac
	shift 2 || usage
done
[[ -n "$tier" && -n "$modules" && -n "$results" ]] || usage
[[ "$tier" =~ ^[A-Za-z0-9._-]+$ ]] || die "--tier must be a plain name, got '$tier'"
[[ "$timeout" =~ ^[0-9]+$ ]] || die "--timeout must be whole seconds, got '$timeout'"
[[ -z "$expect" || -f "$expect" ]] || die "--expect $expect: no such file"
t_start=$(date +%s)

# Error signatures in the guest's kernel log that fail a tier even when every
# test passed.
log_errors=(
	"WARNING:" "BUG:" "Oops" "KASAN:" "UBSAN:" "possible circular locking"
	"turning off the locking correctness validator" "lockdep is turned off"
	"general protection" "Kernel panic" "RCU stall" "detected stalls" "self-detected stall"
	"blocked for more than" "hard LOCKUP" "soft lockup" "list_add corruption" "list_del corruption"
)
# /proc/sys/kernel/tainted bits that mean the kernel itself went wrong:
# W (a warning), D (an oops), B (bad page), L (soft lockup).
taint_bits=([9]=W [7]=D [5]=B [14]=L)

# --- Inputs: kernel, initramfs, rootfs (all cached) ---------------------
if [[ "$kernel" == stock ]]; then
	kdir=$("$here/stock-kernel.sh")
else
	kdir=$(cd "$kernel" && pwd) || die "no kernel dir $kernel"
fi
arch=$(cat "$kdir/arch" 2>/dev/null || echo x86_64)
case "$initrd" in
auto)
	if [[ "$arch" == arm64 ]]; then
		initrd=$("$here/rootfs-arm64.sh")
	else
		initrd=$("$here/initramfs.sh" "$kdir")
	fi
	;;
none) initrd= ;;
*) [[ -f "$initrd" ]] || die "no initramfs at $initrd" ;;
esac
if [[ "$arch" == arm64 ]]; then
	image=none	# no disk: the initramfs is the root
elif [[ -z "$image" ]]; then
	image=$("$here/rootfs.sh")
else
	[[ -f "$image" ]] || die "no root image at $image"
fi

# --- The share: what the guest sees as /share ------------------------------
share="$repo/build/share/$tier"
rm -rf "$share"
mkdir -p "$share/modules" "$share/tests" "$share/results"
install -m 755 "$repo/tests/guest/run.sh" "$share/run.sh"
[[ -z "$shell" ]] || touch "$share/shell"
if [[ "$arch" == arm64 || "$modules" == builtin ]]; then
	[[ "$modules" == builtin ]] || die "--modules $modules: an $arch kernel has KVM built in (say --modules builtin)"
	touch "$share/modules/BUILTIN"
elif [[ "$modules" == stock ]]; then
	touch "$share/modules/USE_STOCK"
elif [[ "$modules" == *.deb ]]; then
	[[ -f "$modules" ]] || die "--modules $modules: no such package"
	cp "$modules" "$share/modules/"
else
	[[ -f "$modules/kvm.ko" ]] || die "--modules $modules: no kvm.ko there (or say --modules stock)"
	cp "$modules"/*.ko "$share/modules/"
	# What run.sh would ask modinfo in the guest, read here: kmod's tools
	# take ~1 s each to start on the KASAN kernel under TCG.
	need_tools modinfo:kmod
	for ko in "$share"/modules/*.ko; do
		modinfo -F depends "$ko" >"$ko.depends"
		modinfo -F srcversion "$ko" >"$ko.srcversion"
	done
fi
if [[ -n "$tests" ]]; then
	[[ -f "$tests/list" ]] || die "--tests $tests: no 'list' file there"
	cp -a "$tests/." "$share/tests/"
else
	: >"$share/tests/list"
fi

mkdir -p "$results"
results=$(cd "$results" && pwd)
rm -f "$results"/*.log "$results"/dmesg.txt "$results"/summary.txt "$results"/*.tap "$results"/tainted.txt

# --- Boot -----------------------------------------------------------------
t_boot=$(date +%s)
boot_args=(--kernel-dir "$kdir" --image "$image" --share "$share" --log "$results/serial.log" --timeout "$timeout")
[[ -z "$initrd" ]] || boot_args+=(--initrd "$initrd")
[[ -z "$append" ]] || boot_args+=(--append "$append")
[[ -z "$shell" ]] || boot_args+=(--interactive)
guest_rc=0
"$here/boot.sh" "${boot_args[@]}" || guest_rc=$?
t_end=$(date +%s)
# Logs the guest kept besides TAP (e.g. the dkms tier's dpkg and make logs).
cp "$share"/results/*.tap "$share"/results/*.log "$share"/results/dmesg.txt "$share"/results/tainted.txt \
	"$results/" 2>/dev/null || true

# --- Judge ------------------------------------------------------------------
problems=()
case $guest_rc in
0) ;;
124) problems+=("guest TIMED OUT after ${timeout}s and was killed: see $results/serial.log") ;;
125) problems+=("guest CRASHED (no exit status came back): see $results/serial.log") ;;
*) problems+=("run.sh in the guest exited with $guest_rc") ;;
esac
[[ $guest_rc == 124 || $guest_rc == 125 || -f "$results/modules.tap" ]] ||
	problems+=("run.sh left no modules.tap: see $results/serial.log")

for log in "$results/serial.log" "$results/dmesg.txt"; do
	[[ -f "$log" ]] || continue
	pattern_args=()
	for p in "${log_errors[@]}"; do pattern_args+=(-e "$p"); done
	if hits=$(grep -nF "${pattern_args[@]}" "$log"); then
		problems+=("kernel log errors in $log:"$'\n'"$(head -n 8 <<<"$hits" | sed 's/^/      /')")
	fi
done
if [[ -f "$results/tainted.txt" ]]; then
	taint=$(cat "$results/tainted.txt")
	letters=
	for bit in "${!taint_bits[@]}"; do
		(((taint >> bit) & 1)) && letters+=${taint_bits[$bit]}
	done
	[[ -z "$letters" ]] ||
		problems+=("kernel tainted $letters at the end of the run (tainted=$taint): see $results/dmesg.txt")
elif ((guest_rc != 124 && guest_rc != 125)); then
	problems+=("the guest left no tainted.txt: see $results/serial.log")
fi

summary="$results/summary.txt"
{
	echo "tier:    $tier"
	echo "kernel:  $(cat "$kdir/kver") ($kdir)"
	echo "modules: $modules"
	echo "numa:    ${NUMA:-1} node(s) (NUMA=), ${GUEST_MB:-3072} MiB (GUEST_MB=)"
	printf '%-28s %5s %5s %5s\n' "TAP file" pass fail skip
	for tap in "$results"/*.tap; do
		[[ -f "$tap" ]] || continue
		read -r pass fail skip <<<"$(tap_counts "$tap")"
		printf '%-28s %5d %5d %5d\n' "$(basename "$tap")" "$pass" "$fail" "$skip"
		[[ -n "$expect" ]] || ((fail == 0)) || problems+=("$fail 'not ok' in $tap")
	done
	if [[ -n "$expect" ]]; then
		# The expected results decide every case (tests/expect/<tier>).
		# The judge exits 0 (no problem) or 1 (problems named); anything
		# else, or no "expected:" line, means it died before its end
		# checks ran, and the tier cannot pass on what it printed.
		judge_rc=0
		judged=$("$here/judge-expected.sh" "$expect" "$results" "$share/tests/list" 2>&1) || judge_rc=$?
		seen_expected=
		while IFS= read -r line; do
			case "$line" in
			problem:*) problems+=("${line#problem: }") ;;
			expected:*) echo "$line"; seen_expected=1 ;;
			esac
		done <<<"$judged"
		if ((judge_rc > 1)) || [[ -z "$seen_expected" ]]; then
			problems+=("the judge (qemu/judge-expected.sh $expect) died with exit $judge_rc before its end checks:"$'\n'"$(tail -n 4 <<<"$judged" | sed 's/^/      /')")
		fi
	else
		# A test that never finished (timeout, crash) may have left no result line.
		while read -r name _; do
			[[ -n "$name" && "$name" != \#* ]] || continue
			tap="$results/$name.tap"
			if [[ ! -f "$tap" ]] || [[ $(tap_counts "$tap") == "0 0 0" ]]; then
				problems+=("test $name reported no result")
			fi
		done <"$share/tests/list"
	fi
	boot=$(grep -ao 'running /share/run.sh (uptime [0-9.]* s)' "$results/serial.log" 2>/dev/null |
		grep -o '[0-9.]* s' || echo "n/a")
	echo "boot to run.sh (guest uptime): $boot"
	# Linux guests booted again after a hang before init (gmem_linux_boot_test):
	# each is also a case of its own, failed unless a known TCG hang.
	retries=$(cat "$results"/*.tap 2>/dev/null | grep -c 'hung before init: booting a new VM' || true)
	echo "boot retries: $retries"
	# Durations the guest measured ("# time: WHAT: N s" lines in its TAP).
	cat "$results"/*.tap 2>/dev/null | sed -n 's/^# time: /guest: /p'
	echo "guest wall time: $((t_end - t_boot)) s (timeout ${timeout} s)"
	echo "total time:      $((t_end - t_start)) s"
	if ((${#problems[@]})); then
		echo "RESULT: FAIL"
		printf -- '- %s\n' "${problems[@]}"
	else
		echo "RESULT: PASS"
	fi
} >"$summary"
cat "$summary"

((${#problems[@]} == 0)) && exit 0
((guest_rc == 124 || guest_rc == 125)) && exit "$guest_rc"
exit 1
