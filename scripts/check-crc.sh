#!/bin/bash
# Fail when any symbol our kvm modules export has a CRC different from the
# target kernel's: the built-in kernel and in-tree modules (kvmgt.ko...) import
# them, so a difference means we changed an ABI they rely on.
#   check-crc.sh OUR_MODULE_SYMVERS TARGET_MODULE_SYMVERS
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ours=$1
theirs=$2
bad=$(awk '
	NR == FNR { if ($3 ~ /\/kvm(-amd|-intel)?$/) crc[$2] = $1; next }
	($2 in crc) { seen++; if (crc[$2] != $1) { print $2, "ours", crc[$2], "target", $1; bad++ } }
	END { printf "checked %d\n", seen > "/dev/stderr" }
' "$theirs" "$ours" 2>"$ours.checked")
checked=$(cut -d' ' -f2 "$ours.checked")
rm -f "$ours.checked"
if [ -n "$bad" ]; then
	printf '%s\n' "$bad" >&2
	die "kvm export CRCs differ from $(dirname "$theirs"): ABI changed"
fi
[ "$checked" -gt 0 ] || die "no kvm exports compared: wrong Module.symvers?"
step "CRC check: $checked kvm exports match the target kernel"
