#!/bin/bash
# The ABI table of docs/abi.md, made from what gmem_abi_test checked: each of its TAP
# case names is "ABI WHO: WHAT = VALUE" or "ABI WHO: WHAT: VALUE", and a
# passing case is a cell of the table (row WHO: WHAT, column ABI).
#   abi-table.sh [TAP]            print the table (default: the stock tier's
#                                 build/results/stock/gmem_abi_test.tap)
#   abi-table.sh --check [TAP]    docs/abi.md's table must be that table
#   abi-table.sh --update [TAP]   write it into docs/abi.md, between its markers
# Refuses a TAP file with a failed or skipped case: only checked facts go in.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
mode=print
case "${1:-}" in --check|--update) mode=${1#--}; shift ;; esac
tap=${1:-$top/build/results/stock/gmem_abi_test.tap}
doc="$top/docs/abi.md"
begin='<!-- abi-table: scripts/abi-table.sh --update writes this table from gmem_abi_test'"'"'s cases -->'
end='<!-- /abi-table -->'

[ -f "$tap" ] || die "no $tap: run the stock tier first (make qemu-test)"
if grep -qE '^not ok|^ok [0-9]+ .*# SKIP' "$tap"; then
	die "$tap has failed or skipped cases: the table only takes what passed"
fi

table() {
	awk '
	function cell(v) { gsub(/\|/, "\\|", v); return v }
	function flags(v) {
		return v == 27 ? "MMAP | INIT_SHARED | WRITE | HUGEPAGE" : v == 11 ? "MMAP | INIT_SHARED | WRITE" : v == 3 ? "MMAP | INIT_SHARED" : v == 1 ? "MMAP" : v
	}
	function add(abi, row, v) {
		if (!(row in seen)) { seen[row] = 1; order[++n] = row }
		val[abi, row] = v
	}
	/^ok [0-9]+ / {
		sub(/^ok [0-9]+ /, "")
		sub(/ *$/, "")
		if (match($0, /^kvm\.gmem_mainline_abi is . as loaded/)) {
			split($0, w, " ")
			add("mainline", "`kvm.gmem_mainline_abi` as loaded", w[3])
			add("v7", "`kvm.gmem_mainline_abi` as loaded", "(set to N at run time by the test)")
			next
		}
		abi = $1
		sub(/^[^ ]+ /, "")
		i = index($0, ": ")
		who = substr($0, 1, i - 1); what = substr($0, i + 2)
		if (j = index(what, " = ")) {
			v = substr(what, j + 3); what = substr(what, 1, j - 1)
			sub(/ \(want .*\)$/, "", v)
			if (what == "KVM_CAP_GUEST_MEMFD_FLAGS") { v = flags(v); what = what " (244)" }
			if (what == "KVM_CAP_GMEM_SHARED_MEM") what = what " (239)"
		} else if (j = index(what, ": ")) {
			v = substr(what, j + 2); what = substr(what, 1, j - 1)
		} else {
			v = "yes"
		}
		add(abi, who ": " what, v)
	}
	END {
		print "| | mainline (default) | v7 (`gmem_mainline_abi=0`) |"
		print "|---|---|---|"
		for (k = 1; k <= n; k++) {
			r = order[k]; m = val["mainline", r]; s = val["v7", r]
			if (s == m) s = "same"
			printf "| %s | %s | %s |\n", cell(r), cell(m), cell(s)
		}
	}' "$tap"
}

case "$mode" in
print)
	table
	;;
check|update)
	grep -qxF "$begin" "$doc" && grep -qxF "$end" "$doc" ||
		die "docs/abi.md has no abi-table markers"
	new=$(mktemp)
	trap 'rm -f "$new"' EXIT
	awk -v begin="$begin" -v end="$end" -v tablefile=<(table) '
		$0 == begin { print; print ""; while ((getline l < tablefile) > 0) print l; print ""; skip = 1; next }
		$0 == end { skip = 0 }
		!skip' "$doc" >"$new"
	if [ "$mode" = update ]; then
		cat "$new" >"$doc"
		step "docs/abi.md: ABI table written from $tap"
	elif cmp -s "$new" "$doc"; then
		step "ok: docs/abi.md's ABI table is what gmem_abi_test checked ($tap)"
	else
		diff -u "$doc" "$new" | sed -n '1,40p' >&2
		die "docs/abi.md's ABI table differs from what gmem_abi_test checked: run scripts/abi-table.sh --update"
	fi
	;;
esac
