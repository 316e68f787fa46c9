#!/bin/bash
# make qemu-run: run one static program as root in a guest with our modules
# loaded, stream its output, keep it with dmesg in build/results/run/, and
# exit with its exit status.
#   run-program.sh PROGRAM [ARGS...]
# Environment: TIER=stock|shim (kernel, default stock), MODULES=ours|stock.
# A kernel splat in the guest, a guest timeout or crash exit 125 instead,
# with the reason; the program's own status is never 125 then.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
. "$top/scripts/lib.sh"

prog=${1:?usage: $0 PROGRAM [ARGS...]}
shift
[ -f "$prog" ] && [ -x "$prog" ] || die "$prog is not an executable file"
file "$prog" 2>/dev/null | grep 'statically linked' > /dev/null ||
	step "warning: $prog is not statically linked; the guest has Debian 12's libc only"

results="$top/build/results/run"
stage="$top/build/stage/run"
# Nothing of an earlier run may be read as this one's: the share's exit
# status and bench.csv would survive a run that dies before run-tier.sh
# makes the share anew.
rm -rf "$stage" "$results" "$top/build/share/run"
mkdir -p "$stage" "$results"
cp "$prog" "$stage/program.bin"
# The guest runs this wrapper as a test: it streams the output to the
# console and records the program's own exit status.
{
	echo '#!/bin/bash'
	args=
	[ $# -eq 0 ] || args=$(printf ' %q' "$@")
	printf '/share/tests/program.bin%s 2>&1 | tee /dev/ttyS0\n' "$args"
	echo 'rc=${PIPESTATUS[0]}'
	echo 'echo "$rc" > /share/results/program.exit'
	echo 'exit "$rc"'
} > "$stage/program"
chmod +x "$stage/program"
# Its exit status is its result: it need not print TAP.
echo "program ${RUN_TIMEOUT:-600} exit-status" > "$stage/list"

extra=(--tier run --results "$results" --tests "$stage" --expect "")
[ "${MODULES:-ours}" = stock ] && extra+=(--modules stock)
rc=0
"$here/test-tier.sh" "${TIER:-stock}" "${extra[@]}" > "$results/run-tier.log" 2>&1 &
runner=$!
# Stream the guest console while it runs.
touch "$results/serial.log"
tail -n +1 -F "$results/serial.log" 2>/dev/null &
tailer=$!
wait "$runner" || rc=$?
sleep 1
kill "$tailer" 2>/dev/null || true

# run-tier.sh copies TAP and dmesg; the exit status stays in the share.
exit_file="$top/build/share/run/results/program.exit"
if ! grep -q '^RESULT: ' "$results/summary.txt" 2>/dev/null ||
   grep -qE 'TIMED OUT|CRASHED|kernel log errors' "$results/summary.txt" ||
   [ ! -f "$exit_file" ]; then
	sed -n '/^- /p' "$results/summary.txt" 2>/dev/null >&2 || true
	echo "error: the guest run failed (runner status $rc): see $results/serial.log and $results/run-tier.log" >&2
	exit 125
fi
status=$(cat "$exit_file")
cp "$exit_file" "$results/"
step "program exited with $status (output and dmesg in $results/)"
exit "$status"
