#!/bin/bash
# Edit the KVM series as git commits, then write it back as patch files.
#   series-git.sh init     build/series-git: the tree subset + one commit per patch
#   series-git.sh export   format-patch the commits back into src/ and src/series
#                          (keeps the cover letter, rewrites its patch list)
# A patch goes to src/arch/x86/ when its subject starts with "KVM: x86:" or "KVM: x86/...",
# to src/virt/ otherwise; its file name starts with its position in the series.
#
# Each series opens with a cover letter, 0000-cover-letter.patch, in the
# shape git format-patch --cover-letter makes (docs/patches.md); no series
# file lists it, so nothing applies it:
#   src/virt/0000-cover-letter.patch     the KVM series, src/series
#   src/mm-shim/0000-cover-letter.patch  src/mm-shim/series
#   src/arm64/0000-cover-letter.patch    src/arm64/series
#   series-git.sh cover-letters        rewrite each letter's patch count
#                                      ([PATCH 0/N]) and patch list from its
#                                      series; its date, title and text stay
#   series-git.sh check-cover-letters  fail when a letter is not what
#                                      cover-letters would write (make check)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
repo="$top/build/series-git"

# The three series: "LETTER SERIES_FILE", paths relative to src/.
cover_letters=(
	"virt/0000-cover-letter.patch series"
	"mm-shim/0000-cover-letter.patch mm-shim/series"
	"arm64/0000-cover-letter.patch arm64/series"
)

# patch_header FILE FIELD: a header of a patch file ("From" or "Subject"),
# its folded lines joined (the second "From" line, not the mbox one).
patch_header() {
	awk -v field="$2:" '
	found && /^[ \t]/ { sub(/^[ \t]+/, " "); value = value $0; next }
	found || /^$/ { exit }
	$1 == field { found = 1; value = substr($0, length(field) + 2) }
	END { if (found) print value }' "$1"
}

# series_shortlog SERIES_FILE: the patch list of a cover letter, as git's
# shortlog writes it ("Author (N):", then each subject indented by two
# spaces), with one group per run of patches by one author, so that the
# subjects read in series order.
series_shortlog() {
	local dir f author subject
	dir=$(dirname "$1")
	grep -v '^#' "$1" | grep . | while read -r f; do
		author=$(patch_header "$dir/$f" From | sed 's/ *<[^>]*>$//')
		subject=$(patch_header "$dir/$f" Subject | sed 's/^\[[^]]*\] *//')
		[ -n "$author" ] && [ -n "$subject" ] || die "${dir#"$top/"}/$f: no From or Subject"
		printf '%s\t%s\n' "$author" "$subject"
	done | awk -F'\t' '
	function flush() { if (n) { if (groups++) print ""; printf "%s (%d):\n", who, n; printf "%s", list } }
	$1 != who { flush(); who = $1; n = 0; list = "" }
	{ n++; list = list "  " $2 "\n" }
	END { flush() }'
}

# cover_letter LETTER SERIES_FILE: the letter as cover-letters writes it,
# on stdout. From an existing letter it keeps the author, date, title and
# text (everything above the patch list); a new one gets git's placeholders.
cover_letter() {
	local letter=$1 series=$2 count width from date title blurb
	count=$(grep -v '^#' "$series" | grep -c .)
	width=${#count}
	from='Seed 27e31213 maintainers <maintainers@users.noreply.a-seed-27e31213.example>'
	date=$(LC_ALL=C date -u '+%a, %-d %b %Y %H:%M:%S %z')
	title='*** SUBJECT HERE ***'
	blurb='*** BLURB HERE ***'
	if [ -f "$letter" ]; then
		from=$(patch_header "$letter" From)
		date=$(patch_header "$letter" Date)
		title=$(patch_header "$letter" Subject | sed 's/^\[[^]]*\] *//')
		# The text: the body up to the patch list, i.e. up to the first
		# "Author (N):" line after which every line belongs to the list.
		blurb=$(awk '
		body { line[++n] = $0; next }
		/^$/ { body = 1 }
		END {
			start = n + 1
			for (i = n; i >= 1; i--) {
				if (line[i] ~ /^  [^ ]/ || line[i] == "") continue
				if (line[i] ~ /^[^ ].* \([0-9]+\):$/) { start = i; continue }
				break
			}
			last = start - 1
			while (last >= 1 && line[last] == "") last--
			for (i = 1; i <= last; i++) print line[i]
		}' "$letter")
	fi
	printf 'From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n'
	# Folded as git folds the other patches' From lines.
	if [ $(( ${#from} + 6 )) -gt 78 ] && [[ "$from" == *" <"* ]]; then
		printf 'From: %s\n <%s\n' "${from%% <*}" "${from#* <}"
	else
		printf 'From: %s\n' "$from"
	fi
	printf 'Date: %s\n' "$date"
	printf 'Subject: [PATCH %0*d/%d] %s\n\n' "$width" 0 "$count" "$title"
	printf '%s\n\n' "$blurb"
	series_shortlog "$series"
}

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
	find "$top/src/virt" "$top/src/arch/x86" -maxdepth 1 -name '*.patch' \
		! -name 0000-cover-letter.patch -delete
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
	"$top/scripts/series-git.sh" cover-letters
	;;
cover-letters)
	for entry in "${cover_letters[@]}"; do
		read -r letter series <<<"$entry"
		new=$(cover_letter "$top/src/$letter" "$top/src/$series")
		printf '%s\n' "$new" > "$top/src/$letter"
		step "src/$letter: $(grep -m1 '^Subject:' "$top/src/$letter")"
	done
	;;
check-cover-letters)
	bad=0
	for entry in "${cover_letters[@]}"; do
		read -r letter series <<<"$entry"
		if [ ! -f "$top/src/$letter" ]; then
			step "FAIL: no src/$letter: scripts/series-git.sh cover-letters writes it"
			bad=$((bad + 1))
			continue
		fi
		if grep -qxF "0000-cover-letter.patch" <(sed 's|.*/||' "$top/src/$series"); then
			step "FAIL: src/$series lists the cover letter: nothing may apply it"
			bad=$((bad + 1))
		fi
		if grep -qF '*** SUBJECT HERE ***' "$top/src/$letter" ||
		   grep -qF '*** BLURB HERE ***' "$top/src/$letter"; then
			step "FAIL: src/$letter still has git's placeholders: write its title and text"
			bad=$((bad + 1))
		fi
		if ! differ=$(diff -u "$top/src/$letter" <(cover_letter "$top/src/$letter" "$top/src/$series")); then
			sed -n '1,30p' <<<"$differ" >&2
			step "FAIL: src/$letter: its patch count or list is not src/$series (scripts/series-git.sh cover-letters)"
			bad=$((bad + 1))
			continue
		fi
		step "ok: src/$letter: $(grep -m1 '^Subject:' "$top/src/$letter" | sed 's/^Subject: //' | cut -d']' -f1)], the subjects of src/$series in order"
	done
	[ "$bad" = 0 ] || die "$bad cover letter problem(s)"
	;;
*)
	echo "usage: $0 init|export|cover-letters|check-cover-letters" >&2
	exit 2
	;;
esac
