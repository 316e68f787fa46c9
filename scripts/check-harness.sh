#!/bin/bash
# Show that the guest harness fails when it should, for every kind of
# failure, each named in the run's summary: a failing case, a list line's
# arguments that do not reach the program, a splat, an RCU stall, a hard
# lockup, a tainted kernel, a per-test timeout, a test killed
# by a signal, exit 4 or exit 0 without TAP (no made-up "ok"), a short TAP
# plan, a SKIP where a pass is expected, a pass where the feature must be
# absent, a program without a rule, an expected program that never ran, an
# XFAIL or TODO, a skip rule that matches nothing, a case gone from or new
# to the case list (one boot); a judge that dies on a broken regex (one
# boot); a guest panic (exit 125) and a hung guest (exit 124).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
work="$top/build/harness-check"
rm -rf "$work"
mkdir -p "$work/bad" "$work/panic" "$work/hang"
fails=0

expect() {	# expect WHAT CONDITION...
	local what=$1
	shift
	if "$@"; then step "ok: $what"; else step "FAIL: $what"; fails=$((fails + 1)); fi
}
# names FILE REGEX: the summary FILE has a problem line matching REGEX.
names() { grep -qE -- "^- .*$2" "$1"; }

# run_judged NAME: boot the tests in $work/NAME, judged by $work/NAME/expect;
# sets rc (run-tier.sh's status) and s (the run's summary).
run_judged() {
	rc=0
	"$top/qemu/run-tier.sh" --tier "harness-$1" --modules stock --tests "$work/$1" \
		--expect "$work/$1/expect" --results "$work/results-$1" --timeout 300 \
		>"$work/$1.log" 2>&1 || rc=$?
	s="$work/results-$1/summary.txt"
}

# prog DIR NAME [TIMEOUT]: a guest test from the shell body on stdin.
prog() {
	{ echo '#!/bin/bash'; cat; } >"$1/$2"
	chmod +x "$1/$2"
	echo "$2 ${3:-60}" >>"$1/list"
}

prog "$work/bad" good <<'T'
echo "1..1"; echo "ok 1 - this one passes"
T
# A list line's "-- ARG..." reaches the program, word by word.
prog "$work/bad" args <<'T'
echo "1..1"
if [ "$#" = 2 ] && [ "$1" = -b ] && [ "$2" = 128M ]; then echo "ok 1 - got -b 128M"; else echo "not ok 1 - got $# arguments: $*"; fi
T
sed -i 's/^args 60$/args 60 -- -b 128M/' "$work/bad/list"
prog "$work/bad" fails <<'T'
echo "1..2"; echo "ok 1 - this one passes"; echo "not ok 2 - this one fails on purpose"; exit 1
T
prog "$work/bad" splat <<'T'
echo "WARNING: CPU: 0 PID: 1 at harness-check: deliberate splat" >/dev/kmsg
echo "1..1"; echo "ok 1 - wrote a splat to the kernel log"
T
prog "$work/bad" stall <<'T'
echo "rcu: INFO: rcu_preempt self-detected stall on CPU (harness-check)" >/dev/kmsg
echo "1..1"; echo "ok 1 - wrote an RCU stall to the kernel log"
T
prog "$work/bad" lockup <<'T'
echo "watchdog: Watchdog detected hard LOCKUP on cpu 1 (harness-check)" >/dev/kmsg
echo "1..1"; echo "ok 1 - wrote a hard lockup to the kernel log"
T
# Taint W without any log line: only the taint check can see it.
prog "$work/bad" taint <<'T'
echo 512 >/proc/sys/kernel/tainted
echo "1..1"; echo "ok 1 - tainted the kernel W"
T
prog "$work/bad" slow 3 <<'T'
echo "1..1"; sleep 60; echo "ok 1 - too late"
T
prog "$work/bad" segv <<'T'
echo "1..2"; echo "ok 1 - first"; kill -SEGV $$
T
prog "$work/bad" skip_no_tap <<'T'
exit 4
T
prog "$work/bad" silent <<'T'
exit 0
T
prog "$work/bad" short_plan <<'T'
echo "1..3"; echo "ok 1 - one"; echo "ok 2 - two"
T
prog "$work/bad" skipped <<'T'
echo "1..1"; echo "ok 1 - the feature # SKIP not here"
T
prog "$work/bad" absent_passes <<'T'
echo "1..1"; echo "ok 1 - gmem feature"
T
prog "$work/bad" unruled <<'T'
echo "1..1"; echo "ok 1 - fine, but nobody said it must run"
T
prog "$work/bad" xfail <<'T'
echo "1..2"; echo "ok 1 - known broken # XFAIL not fixed yet"; echo "ok 2 - later # TODO write it"
T
prog "$work/bad" renamed <<'T'
echo "1..2"; echo "ok 1 - kept case"; echo "ok 2 - new name of a case"
T
cat >"$work/bad/expect" <<'E'
modules pass
modules skip load kvm_(amd|intel) -- the harness guest loads Debian's modules as they come
good pass
args pass
fails pass
splat pass
stall pass
lockup pass
taint pass
slow pass
segv pass
skip_no_tap pass
silent pass
short_plan pass
skipped pass
absent_passes pass
absent_passes absent ^gmem -- pretend the feature is missing here
ghost pass
xfail pass
renamed pass
renamed skip ^no such case -- a skip rule that matches nothing
E
# The case list: "renamed" lost "old name of a case" and gained a new one;
# "good" is listed as it reports.
printf '%s\t%s\n' good "this one passes" renamed "kept case" renamed "old name of a case" \
	>"$work/bad/expect.cases"

run_judged bad
expect "the bad run fails (status $rc, want 1)" [ "$rc" = 1 ]
expect "a failing case is named" names "$s" 'fails: "this one fails on purpose" FAILED'
expect "a WARNING in the guest's log is named" grep -q "deliberate splat" "$s"
expect "an RCU stall is named" grep -q "self-detected stall" "$s"
expect "a hard lockup is named" grep -q "hard LOCKUP" "$s"
expect "a kernel tainted W fails the run" grep -q '^- kernel tainted W' "$s"
expect "a per-test timeout is named" names "$s" 'slow: "slow timed out after 3s" FAILED'
expect "a test killed by a signal is named" names "$s" 'segv: "segv killed by signal SEGV" FAILED'
expect "exit 4 without TAP fails" names "$s" 'skip_no_tap: "skip_no_tap exited 4 \(skip\) without a TAP skip line'
expect "exit 0 without TAP fails" names "$s" 'silent: "silent exited 0 but printed no TAP result" FAILED'
expect "no made-up ok for a silent test" bash -c "! grep -q '^ok' '$work/results-bad/silent.tap'"
expect "a short TAP plan is named" names "$s" 'short_plan: TAP plan 1..3 but 2 results'
expect "a SKIP where a pass is expected is named" names "$s" 'skipped: "the feature" was SKIPPED'
expect "a pass where the feature must be absent is named" names "$s" 'absent_passes: "gmem feature" passed, but'
expect "a program without a rule is named" names "$s" 'unruled: no "unruled pass" rule'
expect "an expected program that did not run is named" names "$s" 'ghost: .* did not run'
expect "a passing test is not named" bash -c "! grep -q '^- good' '$s'"
expect "a list line's arguments reach the program" grep -q '^ok 1 - got -b 128M' "$work/results-bad/args.tap"
expect "an XFAIL is a problem" names "$s" 'xfail: "known broken" reported XFAIL'
expect "a TODO is a problem" names "$s" 'xfail: "later" reported TODO'
expect "a skip rule that matches nothing is named" names "$s" 'renamed: no case matches the skip rule'
expect "a listed case that did not report is named" names "$s" 'renamed: case "old name of a case" of .* did not report'
expect "an unlisted case is named" names "$s" 'renamed: case "new name of a case" is not in'
expect "a listed case that reported is not named" bash -c "! grep -q 'kept case' '$s'"

# A judge that dies (an expect file with a broken regex) fails the tier:
# what it printed before dying cannot pass it.
mkdir -p "$work/judge"
prog "$work/judge" good <<'T'
echo "1..1"; echo "ok 1 - this one passes"
T
cat >"$work/judge/expect" <<'E'
modules pass
modules skip load kvm_(amd|intel) -- the harness guest loads Debian's modules as they come
good pass
good skip ^(unclosed[ -- a broken regex kills awk
E
run_judged judge
expect "a judge that dies fails the tier (status $rc, want 1)" [ "$rc" = 1 ]
expect "the dead judge is named" names "$s" 'the judge .* died with exit'

# A guest panic: QEMU exits (panic=-1, -no-reboot) without an exit status.
prog "$work/panic" panic <<'T'
echo "1..1"; echo c >/proc/sysrq-trigger; echo "ok 1 - still alive"
T
rc=0
"$top/qemu/run-tier.sh" --tier harness-panic --modules stock --tests "$work/panic" \
	--results "$work/results-panic" --timeout 300 >"$work/panic.log" 2>&1 || rc=$?
expect "a guest panic fails the run with 125 (status $rc)" [ "$rc" = 125 ]
expect "the crash is named with the log" grep -q "guest CRASHED" "$work/results-panic/summary.txt"

prog "$work/hang" hang 100000 <<'T'
sleep 100000
T
rc=0
"$top/qemu/run-tier.sh" --tier harness-hang --modules stock --tests "$work/hang" \
	--results "$work/results-hang" --timeout 45 >"$work/hang.log" 2>&1 || rc=$?
expect "a hung guest is killed and reported (status $rc)" [ "$rc" = 124 ]
expect "the timeout is named with the log" grep -q "TIMED OUT after 45s" "$work/hang.log"
[ $fails = 0 ]
