#!/bin/bash
# Write a tier's case list, tests/expect/TIER.cases, from a run's TAP: one
# "PROGRAM<tab>DESCRIPTION" line per case (qemu/tap-cases.awk names them;
# numbers in a description read "N", qemu/case-key.awk, since counts vary).
# qemu/judge-expected.sh then fails the tier when a listed case does not
# report or an unlisted one does, so a case cannot vanish or be renamed
# unnoticed. Run it after adding, removing or renaming a case, on a full
# run of the tier, and commit the diff with the change.
#   case-lists.sh [--merge] TIER [RESULTS_DIR]    (default: build/results/TIER)
# --merge: the run covered some programs only (ONLY=...): replace their
# lines, keep every other program's.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
merge=
[ "${1:-}" != --merge ] || { merge=1; shift; }
tier=${1:?usage: $0 [--merge] TIER [RESULTS_DIR]}
results=${2:-$top/build/results/$tier}
[ -f "$top/tests/expect/$tier" ] || die "no tests/expect/$tier"
grep -q '^RESULT: ' "$results/summary.txt" 2>/dev/null || die "$results holds no finished run"
# Only a run whose sole problems are the case lists' may rewrite them: the
# cases of a program that crashed or failed would silently drop out.
other=$(grep '^- ' "$results/summary.txt" |
	grep -vE '^- [^ ]+: case ".*" (is not in [^ ]+\.cases \(new or renamed\?|of [^ ]+\.cases did not report \(gone or renamed\?\))' || true)
[ -z "$other" ] || die "the run in $results has problems besides the case lists; fix them first:
$other"
out="$top/tests/expect/$tier.cases"
ran=$(for f in "$results"/*.tap; do basename "$f" .tap; done)
{
	echo "# Every case of the $tier tier (scripts/case-lists.sh from a full run):"
	echo "# a listed case that does not report, or one not listed, fails the tier."
	{
		awk -f "$top/qemu/tap-cases.awk" "$results"/*.tap |
			awk -F '\t' -f "$top/qemu/case-key.awk" -f <(echo '$1 == "case" { print $2 "\t" case_key($4) }')
		# Merging: the other programs' lines, as they were.
		[ -z "$merge" ] || grep -v '^#' "$out" |
			awk -F '\t' -v ran="$(echo $ran)" 'BEGIN { n = split(ran, r, " "); for (i = 1; i <= n; i++) skip[r[i]] = 1 } !($1 in skip)'
	} | LC_ALL=C sort -u
} >"$out.new"
mv "$out.new" "$out"
step "wrote ${out#"$top"/}: $(grep -vc '^#' "$out") cases"
