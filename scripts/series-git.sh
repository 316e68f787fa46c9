#!/bin/bash
# Edit the KVM series as git commits, then write it back as patch files.
#   series-git.sh init     build/series-git: the tree subset + one commit per patch
#   series-git.sh export   format-patch the commits back into src/ and src/series
# A patch goes to src/arch/x86/ when its subject starts with "KVM: x86:" or "KVM: x86/...",
# to src/virt/ otherwise; its file name starts with its position in the series.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
repo="$top/build/series-git"

case "${1:-}" in
init)
	[ -e "$repo" ] && die "$repo exists; remove it first"
	"$top/scripts/prepare.sh" 0
	cp -a "$top/build/src" "$repo"
	rm -f "$repo/.prepared"
	rm -rf "$top/build/src"    # it held 0 patches: make prepare redo it
	cd "$repo"
	git init -q
	git add -A
	git commit -qm "base: Debian linux-source-6.12 subset"
	git tag series-base
	grep -v '^#' "$top/src/series" | sed "s|^|$top/src/|" | xargs git am -q
	git log --oneline series-base..
	;;
export)
	cd "$repo"
	out=$(mktemp -d)
	git format-patch -q -N --no-signature --zero-commit -o "$out" series-base..HEAD
	rm -f "$top"/src/virt/*.patch "$top"/src/arch/x86/*.patch
	{
		echo "# KVM module series: applied in this order to build/src by scripts/prepare.sh."
		echo "# Paths are relative to src/. Patch numbers are the position in this list."
		for f in "$out"/*.patch; do
			dir=virt
			grep -qE '^Subject: \[PATCH[^]]*\] KVM: x86[:/]' "$f" && dir=arch/x86
			cp "$f" "$top/src/$dir/"
			echo "$dir/$(basename "$f")"
		done
	} > "$top/src/series"
	rm -rf "$out"
	cat "$top/src/series"
	;;
*)
	echo "usage: $0 init|export" >&2
	exit 2
	;;
esac
