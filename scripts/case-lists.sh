#!/bin/bash
# Write a tier's case list, tests/expect/TIER.cases, from a run's TAP: one
# "PROGRAM<tab>DESCRIPTION" line per case (qemu/tap-cases.awk names them;
# numbers in a description read "N", qemu/case-key.awk, since counts vary).
# qemu/judge-expected.sh then fails the tier when a listed case does not
# report or an unlisted one does, so a case cannot vanish or be renamed
# unnoticed. Run it after adding, removing or renaming a case, on a full
# run of the tier, and commit the diff with the change.
#   case-lists.sh TIER [RESULTS_DIR]    (default: build/results/TIER)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
tier=${1:?usage: $0 TIER [RESULTS_DIR]}
results=${2:-$top/build/results/$tier}
[ -f "$top/tests/expect/$tier" ] || die "no tests/expect/$tier"
grep -q '^RESULT: ' "$results/summary.txt" 2>/dev/null || die "$results holds no finished run"
out="$top/tests/expect/$tier.cases"
{
	echo "# Every case of the $tier tier (scripts/case-lists.sh from a full run):"
	echo "# a listed case that does not report, or one not listed, fails the tier."
	awk -f "$top/qemu/tap-cases.awk" "$results"/*.tap |
		awk -F '\t' -f "$top/qemu/case-key.awk" -f <(echo '$1 == "case" { print $2 "\t" case_key($4) }') |
		LC_ALL=C sort -u
} >"$out"
step "wrote ${out#"$top"/}: $(grep -vc '^#' "$out") cases"
