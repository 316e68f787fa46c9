#!/bin/bash
# Compare two tiers' TAP results case by case, matched by name (the case
# description, qemu/tap-cases.awk; only a baseline SKIP line that carries no
# name, as kselftest prints them, is matched by its number), and print them
# side by side. Fails
#   - when a case passes in the baseline but not with ours (a regression), and
#   - when a case passes with ours but not in the baseline, unless the
#     baseline's expected results (tests/expect/debian) say it is absent
#     there: what only ours can do must be exactly what that list names.
#   compare-tiers.sh BASELINE_RESULTS OURS_RESULTS [BASELINE_EXPECT]
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
base=$1 ours=$2 expect=${3:-$top/tests/expect/debian}
[ -f "$expect" ] || die "no expected-results file $expect"

records() {	# records TAG DIR: tap-cases records of DIR's TAP files, tagged
	local f=() tap
	for tap in "$1"/*.tap; do
		[ -f "$tap" ] && [ "$(basename "$tap")" != modules.tap ] && f+=("$tap")
	done
	[ ${#f[@]} -eq 0 ] || awk -f "$top/qemu/tap-cases.awk" "${f[@]}" | sed "s/^/$2\t/"
}

{ records "$base" base; records "$ours" ours; } | awk -F '\t' -v expect="$expect" '
BEGIN {
	while ((getline line < expect) > 0) {
		if (line ~ /^[ \t]*(#|$)/) continue
		split(line, w, /[ \t]+/)
		if (w[2] != "absent") continue
		re = line
		sub(/^[ \t]*[^ \t]+[ \t]+[^ \t]+[ \t]+/, "", re)
		sub(/[ \t]+--[ \t]+.*$/, "", re)
		n = ++nabs[w[1]]; abs[w[1], n] = re
	}
}
function absent(prog, desc,   i) {
	for (i = 1; i <= nabs[prog]; i++)
		if (desc ~ abs[prog, i]) return 1
	return 0
}
$2 != "case" { next }
{
	side = $1; prog = $3; st = $4; desc = $5
	progs[prog] = 1
	key = prog SUBSEP desc
	if (!(key in order)) { order[key] = ++ncase[prog]; name[prog, ncase[prog]] = desc }
	status[side, key] = st
	why[side, key] = $6
	num[side, key] = $7
	count[side, prog, st]++
	if (side == "base" && desc == "(whole program)" && st == "skip") whole[prog] = 1
}
END {
	printf "%-30s %-13s %-13s %s\n", "test", "baseline p/f/s", "ours p/f/s", "notes"
	for (prog in progs) {
		notes = ""
		for (i = 1; i <= ncase[prog]; i++) {
			desc = name[prog, i]; key = prog SUBSEP desc
			if (("ours", key) in status) {
				o = status["ours", key]
			} else if (desc ~ /^#[0-9]+$/ && ("base", key) in status && used[key]) {
				continue	# a nameless baseline skip, matched by number below
			} else {
				o = "missing"
			}
			bkey = key
			# kselftest prints a skipped case as "ok N # SKIP reason", with no
			# name: such a baseline case can only be matched by its number.
			if (!(("base", key) in status) && ("ours", key) in status) {
				alt = prog SUBSEP "#" num["ours", key]
				if (("base", alt) in status) { bkey = alt; used[alt] = 1 }
			}
			b = (("base", bkey) in status) ? status["base", bkey] : (whole[prog] ? "skip" : "missing")
			if (desc == "(whole program)" && o == "missing") continue
			if (b == "pass" && o != "pass") {
				notes = notes " REGRESSION(\"" desc "\": " o ")"; regressions++
			} else if (o == "pass" && b != "pass") {
				if (absent(prog, desc) || (("base", bkey) in why && why["base", bkey] != "" && absent(prog, why["base", bkey])) ||
				    (whole[prog] && absent(prog, "(whole program)")))
					gained++
				else {
					notes = notes " UNEXPLAINED(\"" desc "\" passes only with ours; baseline: " b ")"
					unexplained++
				}
			}
		}
		line = sprintf("%-30s %-13s %-13s%s", prog,
			count["base", prog, "pass"] + 0 "/" count["base", prog, "fail"] + 0 "/" count["base", prog, "skip"] + 0,
			count["ours", prog, "pass"] + 0 "/" count["ours", prog, "fail"] + 0 "/" count["ours", prog, "skip"] + 0, notes)
		print line | "sort"
	}
	close("sort")
	printf "%d regressions, %d cases pass only with ours that are not named absent on the baseline, %d gmem cases only ours pass\n",
		regressions, unexplained, gained
	exit (regressions + unexplained) > 0
}' || die "the comparison failed: see the REGRESSION / UNEXPLAINED notes above"
step "no regressions against the baseline, and every gain is named in $(basename "$(dirname "$expect")")/$(basename "$expect")"
