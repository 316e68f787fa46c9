#!/bin/bash
# Front end for one guest tier: build what it needs, then qemu/run-tier.sh.
#   test-tier.sh stock    Debian's generic kernel with our modules
#   test-tier.sh debian   Debian's generic kernel with Debian's own modules
#                         (the baseline our modules are compared against)
#   test-tier.sh shim     our debug kernel with the mm-shim, with our modules
#   test-tier.sh arm64    our arm64 debug kernel, KVM built in (qemu-system-aarch64)
#   test-tier.sh dkms     Debian's kernel, headers and source installed in the
#                         image; our .deb installed there, dkms builds (slow)
# DEBIAN=13: the stock, debian and dkms tiers on trixie's kernel and image.
# Results: build/results/<tier>/, judged against tests/expect/<tier> (what
# the tier must show; a SKIP or a missing case there fails it). Further
# arguments go to run-tier.sh and win over the tier's own (e.g. --tests DIR,
# --shell, --expect '' for no expectations).
# Environment:
#   MODULES=stock   Debian's own kvm modules instead of ours, still judged
#                   by the tier's expectations: the stock tier then fails,
#                   naming what Debian's modules lack
#   REGRESSION=0    leave out the tree's selftests (tests/regression-list)
#   BUILD_OBJ=DIR   our modules from DIR (scripts/build-modules.sh's output)
#   NUMA=N          memory nodes of the guest; the x86 tiers boot 2 by default,
#                   for gmem_numa_test (qemu/boot.sh)
#   GUEST_MB=M      the guest's memory (3072 MiB by default; qemu/boot.sh)
#   ONLY='A B'      run only these programs of the tier's lists (and judge
#                   only their rules), e.g. ONLY=gmem_numa_test
#   ONLY_ARGS='...' with ONLY: arguments for those programs, e.g. a must-fail
#                   run's one case of gmem_fsx (-c [threads-]KIND)
#   BUILD_ONLY=1    build what the tier's run needs (modules, kernel, test
#                   module) and stop before staging and booting (make check
#                   builds the must-fail runs' ahead: check-mutants.sh)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
. "$top/scripts/lib.sh"

tier=${1:?usage: $0 stock|debian|shim|arm64|dkms|stock-boot|shim-boot [run-tier.sh arguments]}
shift
# stock-boot, shim-boot: the tier's kernel and modules, but its list is
# tests/<tier>-boot-list (gmem_linux_boot_test, a Linux guest on guest_memfd) in a
# guest of its own with one host thread per vCPU. QEMU's TCG leaves the
# vector of an interrupt it injected at VMRUN pending as an exception and
# delivers it a second time, IF=0 or not, at the next exit request (docs/linux-guest.md,
# "Two platform problems"); round-robin TCG (thread=single) makes
# one every 100 ms to switch vCPUs, MTTCG only for rare cross-CPU work.
suffix=
case "$tier" in
*-boot)
	tier=${tier%-boot}
	case "$tier" in stock|shim) ;; *) die "no boot tier for $tier (stock-boot, shim-boot)" ;; esac
	suffix=-boot
	export TCG_THREAD=multi
	;;
esac
# DEBIAN=13 (scripts/lib.sh): trixie's kernel and image, for the tiers of
# Debian's kernel; its results and staging apart from bookworm's.
release=
if [ "$DEBIAN" != 12 ]; then
	case "$tier" in
	stock|debian|dkms) release=-deb$DEBIAN ;;
	*) die "tier $tier: its kernel is ours, built from Debian 12's tree (DEBIAN=13: the stock, debian and dkms tiers)" ;;
	esac
fi
name=$tier$release$suffix
# The run's own name for its files: the tier's, or a caller's --tier (the
# must-fail runs, which make check runs two at a time, each its own).
run=$name
prev=
for arg in "$@"; do
	[ "$prev" != --tier ] || run=$arg
	prev=$arg
done
results="$top/build/results/$name"
stage="$top/build/stage/$run"
args=(--tier "$name" --results "$results" --expect "$top/tests/expect/$tier$suffix")
lists=("$top/tests/list")
[ -z "$suffix" ] || lists=("$top/tests/$tier-boot-list")
timeout=${QEMU_TIMEOUT:-900}
extra=()	# files staged next to the tests

# only_list LIST...: the lines of the test lists LIST... for the programs
# ONLY names, each with ONLY_ARGS as its arguments.
only_list() {
	awk -v only=" $ONLY " -v args="${ONLY_ARGS:-}" '$1 !~ /^#/ && NF && index(only, " " $1 " ") {
		if (args != "") $0 = $0 ($0 ~ / -- / ? " " : " -- ") args
		print }' "$@"
}

case "$tier" in
stock|debian)
	kver=$("$top/scripts/kernel-version.sh" kver)
	if [ "$tier" = stock ] && [ "${MODULES:-ours}" != stock ]; then
		"$top/scripts/build-modules.sh" "$kver" > "$top/build/modules-$run.log" 2>&1 ||
			die "module build failed: see build/modules-$run.log"
		args+=(--modules "${BUILD_OBJ:-$top/build/obj/$kver}")
	else
		args+=(--modules stock)
	fi
	args+=(--kernel stock)
	;;
arm64)
	# The tests are cross-built for the arm64 kernel with their list
	# (tests/arm64-list) by build-tests-arm64.sh into build/tests-arm64/,
	# one build at a time (make check runs the tier and its must-fail run
	# side by side), then staged for this run.
	kdir=$("$top/scripts/build-kernel.sh" arm64)
	# A mutant kernel (KERNEL_MUTANT) changes no uapi: its run takes the
	# tests built against the series' own kernel, as the tier's does.
	tests_kdir=$kdir
	[ -z "${KERNEL_MUTANT:-}" ] || tests_kdir=$(KERNEL_MUTANT= "$top/scripts/build-kernel.sh" arm64)
	( flock 6
	  "$top/scripts/build-tests-arm64.sh" "$tests_kdir" > "$top/build/tests-arm64.log" 2>&1 ) \
		6>"$top/build/tests-arm64.lock" ||
		die "the arm64 tests do not build: see build/tests-arm64.log"
	rm -rf "$stage"
	mkdir -p "$(dirname "$stage")"
	cp -a "$top/build/tests-arm64" "$stage"
	if [ -n "${ONLY:-}" ]; then
		only_list "$stage/list" > "$stage/list.only"
		[ -s "$stage/list.only" ] || die "ONLY='$ONLY': no such program in tests/arm64-list"
		mv "$stage/list.only" "$stage/list"
	fi
	args+=(--kernel "$kdir" --modules builtin)
	lists=()
	;;
shim)
	kdir=$("$top/scripts/build-kernel.sh")
	kver=$(cat "$kdir/kver")
	obj=${BUILD_OBJ:-$top/build/obj/$kver}
	BUILD_OBJ=$obj "$top/scripts/build-modules.sh" "$kver" "$kdir/build" > "$top/build/modules-$run.log" 2>&1 ||
		die "module build against the shim kernel failed: see build/modules-$run.log"
	grep -q 'KVM_GMEM_MM_HOOK := y' "$obj/target.mk" ||
		die "the shim kernel does not export the guestmem hook"
	# gmem_ndm_test's test-only direct map probe, for this kernel only:
	# built once per kernel and sources, in a dir named after both (make
	# check's shim runs, two at a time, share it; one builds, under its
	# lock, the others wait and find it).
	kmod=$(dmap_probe_dir "$top" "$kdir")
	mkdir -p "$(dirname "$kmod")"
	(
		flock 6
		[ ! -f "$kmod/gmem_dmap_probe.ko" ] || exit 0
		rm -rf "$kmod"
		mkdir -p "$kmod/include"
		cp "$top"/tests/kmod/* "$kmod/"
		cp "$top/tests/include/gmem_dmap_probe.h" "$kmod/include/"
		make -C "$kdir/build" M="$kmod" modules > "$kmod.log" 2>&1 ||
			{ rm -f "$kmod/gmem_dmap_probe.ko"; exit 1; }
	) 6>"$kmod.lock" || die "the test module build failed: see ${kmod#"$top"/}.log"
	extra+=("$kmod/gmem_dmap_probe.ko")
	args+=(--kernel "$kdir" --modules "$obj" --initrd none)
	;;
dkms)
	"$top/scripts/build-deb.sh" > "$top/build/deb.log" 2>&1 ||
		die "make deb failed: see build/deb.log"
	deb=$(ls "$top/build/deb$release"/kvm-gmem-dkms_*_all.deb)
	# The same package at a higher version, installed over the first in
	# the guest (the upgrade path; run.sh finds it next to the tests).
	upgrade="$(cat "$top/VERSION")+upgrade1"
	"$top/scripts/build-deb.sh" --upgrade "$upgrade" > "$top/build/deb-upgrade.log" 2>&1 ||
		die "the upgrade package failed to build: see build/deb-upgrade.log"
	extra+=("$(ls "$top/build/deb-upgrade$release"/kvm-gmem-dkms_*_all.deb)")
	stock=$("$here/stock-kernel.sh")
	# The same vmlinuz, but without the host's read-only /lib/modules share:
	# dkms installs into the image's own /lib/modules and runs depmod there.
	kdir="$top/build/kernel-dkms"
	rm -rf "$kdir"
	mkdir -p "$kdir"
	ln -s "$stock/vmlinuz" "$kdir/vmlinuz"
	cp "$stock/kver" "$kdir/kver"
	initrd=$("$here/initramfs.sh" "$stock")
	image=$("$here/dkms-image.sh")
	args+=(--kernel "$kdir" --initrd "$initrd" --image "$image" --modules "$deb")
	lists=("$top/tests/dkms-list")
	# The in-guest compile takes most of it: make -j2 on two vCPUs, one
	# host thread each (MTTCG: ~10 min; one thread for both: ~30 min).
	# run.sh takes the second vCPU offline before it loads kvm (boot.sh).
	export TCG_THREAD=${TCG_THREAD:-multi} BOOT_ALL_CPUS=1
	timeout=${QEMU_TIMEOUT:-4800}
	;;
*)
	die "unknown tier $tier (stock, debian, shim, arm64, dkms)"
	;;
esac
[ -z "${BUILD_ONLY:-}" ] || { step "tier $name: built, not run (BUILD_ONLY)"; exit 0; }
# Two memory nodes for the x86 tiers with our test list: gmem_numa_test
# binds memory to the node it does not run on.
case "$tier" in stock|debian|shim) export NUMA=${NUMA:-2} ;; esac

# The Debian kernel tiers also run the tree's selftests of the regression
# comparison (tests/regression-list), before our tests: the last of ours
# reloads the modules.
# (Not the boot tiers: their list is the boot alone.)
if [ -z "$suffix" ] && { [ "$tier" = stock ] || [ "$tier" = debian ]; } && [ "${REGRESSION:-1}" != 0 ]; then
	lists=("$top/tests/regression-list" "${lists[@]}")
fi
# A caller that brings its own tests (qemu-run, qemu-shell: --tests DIR)
# needs none of the tier's staged, nor built.
case " $* " in *" --tests "*) lists=() ;; esac
if [ -n "${ONLY:-}" ] && [ ${#lists[@]} -gt 0 ]; then
	only="$top/build/stage/$run.only-list"
	mkdir -p "$top/build/stage"
	only_list "${lists[@]}" >"$only"
	[ -s "$only" ] || die "ONLY='$ONLY': no such program in the tier's lists"
	lists=("$only")
fi
[ ${#lists[@]} -eq 0 ] || "$top/scripts/stage-tests.sh" "$stage" "${lists[@]}"
[ ${#lists[@]} -eq 0 ] || [ ${#extra[@]} -eq 0 ] || cp "${extra[@]}" "$stage/"
# gmem_linux_boot_test boots Debian's kernel with our init (tests/boot/).
if [ ${#lists[@]} -gt 0 ] && grep -q '^gmem_linux_boot_test' "$stage/list"; then
	cp "$top/build/tests/boot-init" "$stage/boot-init"
	cp "$("$here/stock-kernel.sh")/vmlinuz" "$stage/boot-vmlinuz"
fi
if { [ "${REGRESSION:-1}" = 0 ] || [ -n "${ONLY:-}" ]; } && [ -f "$stage/list" ]; then
	# A subset of the tier's programs: only their rules apply (not their
	# skip rules when ONLY_ARGS chose some of their cases).
	awk -v some="${ONLY_ARGS:-}" 'NR == FNR { if ($1 !~ /^#/ && NF) ran[$1] = 1; next }
	     /^[ \t]*(#|$)/ || ($1 in ran && !(some != "" && $2 == "skip")) || $1 == "modules"' \
		"$stage/list" "$top/tests/expect/$tier$suffix" >"$stage/expect"
	# Case lists are checked only for the programs that ran, and not when
	# ONLY_ARGS chose some of their cases.
	rm -f "$stage/expect.cases"
	[ ! -f "$top/tests/expect/$tier$suffix.cases" ] || [ -n "${ONLY_ARGS:-}" ] ||
		cp "$top/tests/expect/$tier$suffix.cases" "$stage/expect.cases"
	args+=(--expect "$stage/expect")
fi
step "tier $name: booting"
exec "$here/run-tier.sh" "${args[@]}" --tests "$stage" --timeout "$timeout" "$@"
