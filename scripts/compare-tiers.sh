#!/bin/bash
# Compare two tiers' TAP results case by case and print them side by side.
# Fails when a case passes in the baseline tier but not in the other one.
#   compare-tiers.sh BASELINE_RESULTS OURS_RESULTS
set -euo pipefail
. "$(dirname "$0")/lib.sh"

base=$1
ours=$2

# tap_cases FILE: "NUMBER STATUS" per top-level result (pass, fail or skip).
tap_cases() {
	awk '/^not ok[ \t]/ { print $3, "fail"; next }
	     /^ok[ \t]/ { print $2, (tolower($0) ~ /#[ \t]*skip/) ? "skip" : "pass" }' "$1"
}

printf '%-32s %-17s %-17s\n' "test" "baseline p/f/s" "ours p/f/s"
regressions=0
for tap in "$base"/*.tap; do
	name=$(basename "$tap" .tap)
	[ "$name" = modules ] && continue
	theirs_counts=$(tap_cases "$tap" | awk '{ c[$2]++ } END { printf "%d/%d/%d", c["pass"], c["fail"], c["skip"] }')
	if [ -f "$ours/$name.tap" ]; then
		ours_counts=$(tap_cases "$ours/$name.tap" | awk '{ c[$2]++ } END { printf "%d/%d/%d", c["pass"], c["fail"], c["skip"] }')
	else
		ours_counts=missing
	fi
	mark=
	# A case that passed with the baseline must pass with ours.
	while read -r num status; do
		[ "$status" = pass ] || continue
		if ! [ -f "$ours/$name.tap" ] || ! tap_cases "$ours/$name.tap" | grep -qx "$num pass"; then
			mark=" REGRESSION (case $num)"
			regressions=$((regressions + 1))
		fi
	done < <(tap_cases "$tap")
	printf '%-32s %-17s %-17s%s\n' "$name" "$theirs_counts" "$ours_counts" "$mark"
done
[ "$regressions" -eq 0 ] || die "$regressions case(s) pass with the baseline but not with our modules"
step "no regressions against the baseline"
