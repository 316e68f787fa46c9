#!/bin/bash
# Front end for one guest tier: build what it needs, then qemu/run-tier.sh.
#   test-tier.sh stock    Debian's generic kernel with our modules
#   test-tier.sh debian   Debian's generic kernel with Debian's own modules
#                         (the baseline our modules are compared against)
#   test-tier.sh shim     our debug kernel with the mm-shim, with our modules
# Results: build/results/<tier>/. Further arguments go to run-tier.sh and
# win over the tier's own (e.g. --modules stock, --tests DIR, --shell).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
. "$top/scripts/lib.sh"

tier=${1:?usage: $0 stock|debian|shim [run-tier.sh arguments]}
shift
results="$top/build/results/$tier"
stage="$top/build/stage/$tier"
args=(--tier "$tier" --results "$results")

case "$tier" in
stock|debian)
	kver=$("$top/scripts/kernel-version.sh" kver)
	if [ "$tier" = stock ]; then
		"$top/scripts/build-modules.sh" "$kver" > "$top/build/modules-$kver.log" 2>&1 ||
			die "module build failed: see build/modules-$kver.log"
		args+=(--modules "$top/build/obj/$kver")
	else
		args+=(--modules stock)
	fi
	args+=(--kernel stock)
	;;
arm64)
	# Our arm64 kernel, KVM built in, under qemu-system-aarch64; the tests
	# are cross-built for it with their own list (tests/arm64-list).
	kdir=$("$top/scripts/build-kernel.sh" arm64)
	"$top/scripts/build-tests-arm64.sh" "$kdir" > "$top/build/tests-arm64.log" 2>&1 ||
		die "the arm64 tests do not build: see build/tests-arm64.log"
	step "tier arm64: booting"
	exec "$here/run-tier.sh" "${args[@]}" --kernel "$kdir" --modules builtin \
		--tests "$top/build/tests-arm64" --timeout "${QEMU_TIMEOUT:-900}" "$@"
	;;
shim)
	kdir=$("$top/scripts/build-kernel.sh")
	kver=$(cat "$kdir/kver")
	"$top/scripts/build-modules.sh" "$kver" "$kdir/build" > "$top/build/modules-$kver.log" 2>&1 ||
		die "module build against the shim kernel failed: see build/modules-$kver.log"
	grep -q 'KVM_GMEM_MM_HOOK := y' "$top/build/obj/$kver/target.mk" ||
		die "the shim kernel does not export the guestmem hook"
	args+=(--kernel "$kdir" --modules "$top/build/obj/$kver" --initrd none)
	;;
*)
	die "unknown tier $tier (stock, debian, shim)"
	;;
esac

# The Debian kernel tiers also run the tree's selftests of the regression
# comparison (tests/regression-list), before our tests: the last of ours
# reloads the modules.
lists=("$top/tests/list")
if [ "$tier" != shim ] && [ -f "$top/tests/regression-list" ]; then
	lists=("$top/tests/regression-list" "${lists[@]}")
fi
"$top/scripts/stage-tests.sh" "$stage" "${lists[@]}"
step "tier $tier: booting"
exec "$here/run-tier.sh" "${args[@]}" --tests "$stage" --timeout "${QEMU_TIMEOUT:-900}" "$@"
