#!/bin/bash
# Check the KVM series patch by patch: each applies with zero fuzz, passes the
# tree's checkpatch.pl --strict, and the modules (and the selftests it
# touches) build with the patches up to it. Works in build/check-series/.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
tree=$("$top/scripts/tree.sh")
work="$top/build/check-series"
export BUILD_SRC="$work/src" BUILD_OBJ="$work/obj" BUILD_SELFTESTS="$work/selftests"
mkdir -p "$work"

mapfile -t patches < <(grep -v '^#' "$top/src/series" | grep .)
n=0
for p in "${patches[@]}"; do
	n=$((n + 1))
	step "[$n/${#patches[@]}] $p"
	# checkpatch wants to run from the top of a kernel tree.
	if ! (cd "$tree" && perl scripts/checkpatch.pl --strict -q "$top/src/$p") > "$work/checkpatch.log" 2>&1; then
		cat "$work/checkpatch.log"
		die "checkpatch --strict: $p"
	fi
	"$top/scripts/prepare.sh" "$n" > "$work/prepare.log" 2>&1 ||
		{ cat "$work/prepare.log"; die "does not apply: $p"; }
	"$top/scripts/build-modules.sh" > "$work/build.log" 2>&1 ||
		{ tail -40 "$work/build.log"; die "modules do not build after $p (log: $work/build.log)"; }
	if grep -q '^+++ b/tools/' "$top/src/$p"; then
		"$top/scripts/build-selftests.sh" guest_memfd_test > "$work/selftests.log" 2>&1 ||
			{ tail -40 "$work/selftests.log"; die "selftests do not build after $p"; }
	fi
done
step "series OK: ${#patches[@]} patches apply with zero fuzz, pass checkpatch --strict and build one by one"
