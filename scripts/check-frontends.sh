#!/bin/bash
# Check the developer front ends end to end: make qemu-run hands back the
# guest program's exit status (0 and 3), make bench runs to its end (small),
# and make qemu-shell gives a working root shell on a terminal (driven
# through tmux) that ends cleanly.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
fails=0

# make itself can only fail with 2: the status comes back in its output
# ("program exited with N", or make's "Error N"), and qemu/run-program.sh,
# which make runs, exits with it.
for want in 0 3; do
	rc=0
	log=build/results/qemu-run-$want.log
	make -s qemu-run RUN=build/tests/exit_with ARGS="$want" > "$log" 2>&1 || rc=$?
	make_ok=n
	if [ "$want" = 0 ]; then [ "$rc" = 0 ] && make_ok=y; else [ "$rc" != 0 ] && make_ok=y; fi
	if [ $make_ok = y ] && grep -q "exit_with: exiting with $want" "$log" &&
	   grep -q "program exited with $want " "$log"; then
		step "ok: make qemu-run exit_with $want: the program's status $want came back (make: $rc)"
	else
		step "FAIL: make qemu-run exit_with $want (make: $rc; log: $log)"
		fails=$((fails + 1))
	fi
done

# make bench, as a new user runs it (its default rows, our modules and
# Debian's, the Linux boot rows), small: it must run to its end, every row
# it lists measured (bench.sh fails on a row not measured where it must be).
# The boot-to-init row is counted undecided after its one round, so the
# rounds bench.sh adds for such a row run too: the row must have two.
rc=0
log=build/results/bench-check.log
make -s bench BENCH_REPS=1 BENCH_SCALE=0.25 BENCH_BOOT_MAX=2 BENCH_BOOT_MORE=boot_to_init > "$log" 2>&1 || rc=$?
if [ "$rc" = 0 ] && [ -s build/results/bench/bench.csv ] &&
   awk -F, '$1 == "boot_to_init" && $2 == "gmem" && $8 == 2 { ok = 1 } END { exit !ok }' build/results/bench/bench.csv; then
	step "ok: make bench (BENCH_REPS=1 BENCH_SCALE=0.25) ran to its end, boot rows included, one added round"
else
	step "FAIL: make bench (exit $rc; log: $log)"
	fails=$((fails + 1))
fi

# qemu-shell through a pseudo-terminal.
session=kvm-gmem-check-$$
version=$(cat VERSION)
tmux kill-session -t "$session" 2>/dev/null || true
tmux new-session -d -s "$session" -x 160 -y 50 \
	"make -s qemu-shell; echo \"qemu-shell-exit=\$?\"; sleep 120"
wait_for() {	# wait_for PATTERN SECONDS
	for _ in $(seq "$2"); do
		tmux capture-pane -p -S -200 -t "$session" | grep "$1" > /dev/null && return 0
		sleep 1
	done
	return 1
}
ok=1
wait_for 'kvm-gmem-guest#' 300 || ok=0
[ $ok = 1 ] && tmux send-keys -t "$session" 'cat /sys/module/kvm/version' Enter
[ $ok = 1 ] && { wait_for "^$version\$" 30 || ok=0; }
[ $ok = 1 ] && tmux send-keys -t "$session" 'poweroff' Enter
[ $ok = 1 ] && { wait_for 'qemu-shell-exit=0' 120 || ok=0; }
tmux capture-pane -p -S -200 -t "$session" > build/results/qemu-shell-check.log
tmux kill-session -t "$session" 2>/dev/null || true
if [ $ok = 1 ]; then
	step "ok: make qemu-shell: version $version read on the guest console, clean poweroff"
else
	step "FAIL: make qemu-shell (screen: build/results/qemu-shell-check.log)"
	fails=$((fails + 1))
fi
[ $fails = 0 ]
