# Helpers shared by the qemu/ scripts. Source it after scripts/lib.sh.
# shellcheck shell=bash

# need_tools CMD:PACKAGE...: make sure each command exists. As root, install the
# missing packages; otherwise stop with the exact command to run.
need_tools() {
	local spec missing=()
	for spec in "$@"; do
		command -v "${spec%%:*}" >/dev/null 2>&1 || missing+=("${spec#*:}")
	done
	((${#missing[@]})) || return 0
	install_packages "${missing[@]}"
}

# need_packages PACKAGE...: same, for packages checked by name.
need_packages() {
	local p missing=()
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	((${#missing[@]})) || return 0
	install_packages "${missing[@]}"
}

# install_packages PACKAGE...: apt-get install them as root, else die saying how.
install_packages() {
	local missing=("$@")
	local cmd="apt-get install -y --no-install-recommends ${missing[*]}"
	[[ $(id -u) == 0 ]] || die "missing packages; run: sudo $cmd"
	step "installing ${missing[*]}" >&2
	# A fresh machine may have no package lists yet.
	$cmd >&2 || { apt-get update -q >&2 && $cmd >&2; } || die "failed: $cmd"
}

# tap_counts FILE: "PASS FAIL SKIP" counts of the top-level TAP result lines
# ("ok ... # SKIP" is a skip). Same rule as tests/guest/run.sh.
tap_counts() {
	awk '/^not ok([ \t]|$)/ { f++; next }
	     /^ok([ \t]|$)/ { if (tolower($0) ~ /#[ \t]*skip/) s++; else p++ }
	     END { print p+0, f+0, s+0 }' "$1"
}

# prune_old KEEP PATH...: delete the PATHs other than KEEP. Called after a new
# cache entry is made, so entries left by older inputs do not pile up.
prune_old() {
	local keep=$1 p
	shift
	for p in "$@"; do
		[[ "$p" == "$keep" || ! -e "$p" ]] || rm -rf --one-file-system "$p"
	done
}
