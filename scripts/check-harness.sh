#!/bin/bash
# Show that the guest harness fails when it should: a failing test, a kernel
# splat in the guest's log and a hung guest must each fail the run, with the
# reason; and Debian's modules must not pass what only ours can do.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
work="$top/build/harness-check"
rm -rf "$work"
mkdir -p "$work/bad" "$work/hang"
fails=0

expect() {	# expect WHAT CONDITION...
	local what=$1
	shift
	if "$@"; then step "ok: $what"; else step "FAIL: $what"; fails=$((fails + 1)); fi
}

# A failing test and a splat, in one boot.
cat > "$work/bad/fails" <<'T'
#!/bin/bash
echo "ok 1 - this one passes"
echo "not ok 2 - this one fails on purpose"
exit 1
T
cat > "$work/bad/splat" <<'T'
#!/bin/bash
echo "WARNING: CPU: 0 PID: 1 at harness-check: deliberate splat" > /dev/kmsg
echo "ok 1 - wrote a splat to the kernel log"
T
printf 'fails 60\nsplat 60\n' > "$work/bad/list"
cat > "$work/hang/hang" <<'T'
#!/bin/bash
sleep 100000
T
echo "hang 100000" > "$work/hang/list"
chmod +x "$work"/bad/* "$work"/hang/*

rc=0
"$top/qemu/run-tier.sh" --tier harness-bad --modules stock --tests "$work/bad" \
	--results "$work/results-bad" --timeout 300 > "$work/bad.log" 2>&1 || rc=$?
expect "a failing test fails the run (status $rc)" [ "$rc" = 1 ]
expect "the failing test is named" grep -q "'not ok' in .*fails.tap" "$work/bad.log"
expect "a WARNING in the guest's log fails the run" grep -q "kernel log errors" "$work/bad.log"

rc=0
"$top/qemu/run-tier.sh" --tier harness-hang --modules stock --tests "$work/hang" \
	--results "$work/results-hang" --timeout 45 > "$work/hang.log" 2>&1 || rc=$?
expect "a hung guest is killed and reported (status $rc)" [ "$rc" = 124 ]
expect "the timeout is named with the log" grep -q "TIMED OUT after 45s" "$work/hang.log"

# The debian tier ran earlier in make check: the shared-memory case of the
# seed selftest must be a SKIP there, never a pass.
tap="$top/build/results/debian/guest_memfd_test.tap"
if [ -f "$tap" ]; then
	expect "Debian's modules skip guest_memfd_test's shared case" \
		grep -qE '^ok 2 # SKIP .*KVM_CAP_GMEM_SHARED_MEM' "$tap"
fi
[ $fails = 0 ]
