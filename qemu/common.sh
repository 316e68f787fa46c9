# Helpers shared by the qemu/ scripts. Source it after scripts/lib.sh.
# shellcheck shell=bash

# tap_counts FILE: "PASS FAIL SKIP" counts of the top-level TAP result lines
# ("ok ... # SKIP" is a skip). Same rule as tests/guest/run.sh.
tap_counts() {
	awk '/^not ok([ \t]|$)/ { f++; next }
	     /^ok([ \t]|$)/ { if (tolower($0) ~ /#[ \t]*skip/) s++; else p++ }
	     END { print p+0, f+0, s+0 }' "$1"
}
