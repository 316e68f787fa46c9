#!/bin/bash
# Collect the test programs named in lists into one directory for a guest
# run (qemu/run-tier.sh --tests): the programs and one "list" file.
#   stage-tests.sh OUTDIR LIST...
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
out=$1
shift
[ $# -gt 0 ] || die "usage: $0 OUTDIR LIST..."
# OUTDIR is wiped: never let a mixed-up argument wipe a list.
[ ! -e "$out" ] || [ -d "$out" ] || die "$out exists and is not a directory"
rm -rf "$out"
mkdir -p "$out"
# NAME.VARIANT runs program NAME again under its own name (e.g. with other
# kvm parameters), so its results do not overwrite NAME's.
cat "$@" | while read -r name timeout params; do
	case "$name" in ''|'#'*) continue ;; esac
	found=
	for dir in "$top/build/selftests" "$top/build/selftests/x86_64" "$top/build/mainline-selftests" \
		"$top/build/tests"; do
		if [ -x "$dir/${name%%.*}" ]; then found=$dir/${name%%.*}; break; fi
	done
	[ -n "$found" ] || die "test ${name%%.*} (from $*) was not built"
	cp "$found" "$out/$name"
	echo "$name $timeout $params" >> "$out/list"
done
