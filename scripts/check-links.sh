#!/bin/bash
# Every link of the project's Markdown resolves, without the network: a
# "#anchor" names a heading of its file (GitHub's slugs: lower case, spaces
# to '-', punctuation but '-' and '_' dropped), a relative path names a file
# or folder of the repository (and its "#anchor", if any, a heading there).
# http(s) and mailto links are not followed.
#   check-links.sh [FILE.md...]    (default: every tracked *.md)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
if [ $# -eq 0 ]; then
	mapfile -t files < <(git ls-files '*.md')
else
	files=("$@")
fi

# anchors FILE: the slug of each heading of FILE, one a line (a repeated
# heading gets -1, -2..., as GitHub numbers them).
anchors() {
	awk '
	/^```/ { fence = !fence; next }
	fence { next }
	/^#+ / {
		h = $0
		sub(/^#+ +/, "", h)
		h = tolower(h)
		gsub(/`/, "", h)
		gsub(/[^a-z0-9 _-]/, "", h)
		gsub(/ /, "-", h)
		n = seen[h]++
		print n ? h "-" n : h
	}' "$1"
}

bad=0
for f in "${files[@]}"; do
	dir=$(dirname "$f")
	# Links outside code spans and fences: [text](target).
	while IFS= read -r target; do
		case "$target" in
		http://* | https://* | mailto:*) continue ;;
		esac
		path=${target%%#*}
		anchor=
		[[ "$target" != *"#"* ]] || anchor=${target#*#}
		dest=$f
		if [ -n "$path" ]; then
			dest=$dir/$path
			if [ ! -e "$dest" ]; then
				step "FAIL: $f: link to $target: no $dest"
				bad=$((bad + 1))
				continue
			fi
		fi
		if [ -n "$anchor" ] && [[ "$dest" == *.md ]] &&
		   ! anchors "$dest" | grep -xF -- "$anchor" > /dev/null; then
			step "FAIL: $f: link to $target: no heading with anchor #$anchor in $dest"
			bad=$((bad + 1))
		fi
	done < <(awk '/^```/ { fence = !fence; next } !fence' "$f" | sed 's/`[^`]*`//g' |
		 grep -oE '\]\([^) ]+\)' | sed 's/^](//; s/)$//')
done
[ "$bad" = 0 ] || die "$bad broken link(s)"
step "links: every link of ${#files[@]} Markdown files resolves"
