#!/bin/bash
# Collect the test programs named in a list into one directory for a guest
# run (qemu/run-tier.sh --tests): the programs and a "list" file.
#   stage-tests.sh LIST OUTDIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
list=$1
out=$2
rm -rf "$out"
mkdir -p "$out"
while read -r name timeout; do
	case "$name" in ''|'#'*) continue ;; esac
	found=
	for dir in "$top/build/selftests" "$top/build/selftests/x86_64" "$top/build/tests"; do
		if [ -x "$dir/$name" ]; then found=$dir/$name; break; fi
	done
	[ -n "$found" ] || die "test $name (from $list) was not built"
	cp "$found" "$out/$name"
	echo "$name $timeout" >> "$out/list"
done < "$list"
