#!/bin/bash
# make soak HOURS=N: the exerciser (tests/gmem_fsx.c) on random seeds until
# the time is up, on every file kind the kernel offers, in one guest of the
# mm-shim kernel (KASAN, lockdep; TIER=stock for Debian's kernel). The first
# mismatch ends it with the seed that replays it. Results in
# build/results/soak/: the TAP with operations per second and the coverage
# (each operation kind x file kind x the state of its first page), and the
# tier's verdict (a splat or a leak fails it as any tier run).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
hours=${HOURS:-1}
seconds=$(awk -v h="$hours" 'BEGIN { s = int(h * 3600); if (s < 60) s = 60; print s }')
stage="$top/build/stage/soak"
results="$top/build/results/soak"
make -s -C "$top/tests" KVM_GMEM_SRC="$top/build/src" OUT="$top/build/tests" "$top/build/tests/gmem_fsx"
rm -rf "$stage" "$results"
mkdir -p "$stage"
cp "$top/build/tests/gmem_fsx" "$stage/"
# The program's own clock ends it; the list's timeout only catches a hang.
echo "gmem_fsx $((seconds + 300)) -- -t $seconds" > "$stage/list"
step "soak: gmem_fsx on random seeds for ${seconds}s in the ${TIER:-shim} tier (log: build/results/soak.log)"
rc=0
QEMU_TIMEOUT=$((seconds + 900)) "$top/qemu/test-tier.sh" "${TIER:-shim}" --tier soak \
	--results "$results" --tests "$stage" --expect "" > "$top/build/results/soak.log" 2>&1 || rc=$?
[ -f "$results/gmem_fsx.tap" ] || die "soak: the guest left no gmem_fsx.tap (status $rc): see build/results/soak.log"
grep -E '^# soak|^(not )?ok ' "$results/gmem_fsx.tap" | sed 's/^# //'
grep -E '^RESULT' "$results/summary.txt" || true
[ "$rc" = 0 ] || { sed -n '/^RESULT/,$p' "$results/summary.txt" >&2; die "soak failed (status $rc): see build/results/soak/"; }
