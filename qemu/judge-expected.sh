#!/bin/bash
# Judge a tier's TAP results against its expected-results file.
#   judge-expected.sh EXPECT_FILE RESULTS_DIR LIST_FILE
# Prints one "problem: ..." line per way the results differ from what the
# tier must show, then one "expected: ..." line of counts. Exit status 1 if
# there was a problem.
#
# EXPECT_FILE (tests/expect/<tier>) has one rule per line:
#   PROGRAM pass                        every case of PROGRAM passes
#   PROGRAM skip REGEX -- REASON        ... except those matching REGEX, which may SKIP
#   PROGRAM absent REGEX -- REASON      cases matching REGEX must SKIP or fail:
#                                       the feature is missing on this tier
#   PROGRAM rare-skip REGEX -- REASON   a "skip" for an event that happens in
#                                       some runs only (a known emulator hang
#                                       retried): it may match no case
# REGEX is an awk ERE matched against the case description, or else its
# SKIP reason (see qemu/tap-cases.awk; a program that skipped as a whole is
# "(whole program)").
# Every program in LIST_FILE, and every TAP file in RESULTS_DIR, needs a
# "pass" rule; a program's TAP must carry a plan equal to its number of
# results; a "skip" or "absent" rule must match at least one case; a TODO,
# XFAIL or XPASS directive is a problem (our programs never print one).
#
# EXPECT_FILE.cases, where it exists, lists every case of the tier as
# "PROGRAM<tab>DESCRIPTION" (scripts/case-lists.sh writes it from a run;
# numbers read "N", qemu/case-key.awk):
# for each program that ran, a case missing from the run (gone, renamed)
# and a case the list lacks (new, renamed) are problems, so a case cannot
# quietly disappear.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

expect=$1 results=$2 list=$3
[[ -f "$expect" ]] || { echo "problem: no expected-results file $expect"; exit 1; }

# Programs that ran: those listed, and whatever left TAP (modules, dkms-remove).
programs=$( { awk '$1 !~ /^#/ && NF { print $1 }' "$list"
	for tap in "$results"/*.tap; do [[ -f "$tap" ]] && basename "$tap" .tap; done; } | sort -u)
taps=()
for tap in "$results"/*.tap; do [[ -f "$tap" ]] && taps+=("$tap"); done

{
	for p in $programs; do printf 'ran\t%s\n' "$p"; done
	((${#taps[@]} == 0)) || awk -f "$here/tap-cases.awk" "${taps[@]}"
} | awk -F '\t' -v expect="$expect" -v cases="$expect.cases" \
	-v efile="$(basename "$(dirname "$expect")")/$(basename "$expect")" "$(cat "$here/case-key.awk")"'
function problem(msg) { print "problem: " msg; bad++ }
BEGIN {
	if ((getline line < cases) > 0) {
		have_cases = 1
		do {
			if (line ~ /^[ \t]*(#|$)/)
				continue
			split(line, w, /\t/)
			listed[w[1], w[2]] = 1
		} while ((getline line < cases) > 0)
	}
	while ((getline line < expect) > 0) {
		if (line ~ /^[ \t]*(#|$)/)
			continue
		split(line, w, /[ \t]+/)
		prog = w[1]; rule = w[2]
		if (rule == "pass") {
			must_pass[prog] = 1
			continue
		}
		if (rule != "skip" && rule != "absent" && rule != "rare-skip") {
			problem(efile ": unknown rule in: " line)
			continue
		}
		rest = line
		sub(/^[ \t]*[^ \t]+[ \t]+[^ \t]+[ \t]+/, "", rest)
		reason = ""
		if (match(rest, /[ \t]+--[ \t]+/)) {
			reason = substr(rest, RSTART + RLENGTH)
			rest = substr(rest, 1, RSTART - 1)
		}
		if (rest == "" || reason == "") {
			problem(efile ": a " rule " rule needs REGEX -- REASON: " line)
			continue
		}
		n = ++nex[prog]
		ex_rule[prog, n] = rule; ex_re[prog, n] = rest; ex_why[prog, n] = reason
	}
}
$1 == "ran" { ran[$2] = 1; next }
$1 == "plan" { if (!($2 in plan)) plan[$2] = $3; next }
$1 == "case" {
	prog = $2; status = $3; desc = $4
	results[prog]++
	key = case_key(desc)
	got[prog, key] = 1
	if (have_cases && !((prog, key) in listed))
		problem(prog ": case \"" key "\" is not in " efile ".cases (new or renamed? scripts/case-lists.sh)")
	if (status == "bad") {
		problem(prog ": \"" desc "\" reported " $5 ": our programs must pass, fail or SKIP")
		next
	}
	ex = 0
	for (i = 1; i <= nex[prog]; i++)
		if (desc ~ ex_re[prog, i] || ($5 != "" && $5 ~ ex_re[prog, i])) { ex = i; break }
	if (ex) matched[prog, ex]++
	rule = ex ? ex_rule[prog, ex] : ""
	if (status == "pass") {
		if (rule == "absent")
			problem(prog ": \"" desc "\" passed, but " efile " says it is absent here (" ex_why[prog, ex] ")")
		else
			passes++
	} else if (status == "fail") {
		if (rule == "absent")
			absents++
		else
			problem(prog ": \"" desc "\" FAILED" ($5 != "" ? ": " $5 : ""))
	} else {
		if (rule == "absent")
			absents++
		else if (rule == "skip" || rule == "rare-skip")
			skips++
		else
			problem(prog ": \"" desc "\" was SKIPPED (" $5 "), but must pass here: " efile " allows no such skip")
	}
	next
}
END {
	for (prog in ran) {
		if (!(prog in must_pass)) {
			problem(prog ": no \"" prog " pass\" rule in " efile)
			continue
		}
		if (!(prog in results)) {
			problem(prog ": reported no result (missing, or no TAP)")
			continue
		}
		if (!(prog in plan))
			problem(prog ": no TAP plan (1..N) in its output")
		else if (plan[prog] > 0 && plan[prog] != results[prog])
			problem(prog ": TAP plan 1.." plan[prog] " but " results[prog] " results")
	}
	for (prog in nex)
		for (i = 1; i <= nex[prog]; i++)
			if ((prog in ran) && !matched[prog, i] && ex_rule[prog, i] != "rare-skip")
				problem(prog ": no case matches the " ex_rule[prog, i] " rule /" ex_re[prog, i] "/ of " efile)
	if (have_cases)
		for (key in listed) {
			split(key, k, SUBSEP)
			if ((k[1] in ran) && !(key in got))
				problem(k[1] ": case \"" k[2] "\" of " efile ".cases did not report (gone or renamed?)")
		}
	for (prog in must_pass)
		if (!(prog in ran))
			problem(prog ": " efile " expects it, but it did not run in this tier")
	printf "expected: %d passed, %d allowed skips, %d absent as expected (%s)\n", passes, skips, absents, efile
	exit bad > 0
}'
