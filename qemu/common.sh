# Helpers shared by the qemu/ scripts. Source it after scripts/lib.sh.

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

install_packages() {
	local missing=("$@")
	local cmd="apt-get install -y --no-install-recommends ${missing[*]}"
	[[ $(id -u) == 0 ]] || die "missing packages; run: sudo $cmd"
	step "installing ${missing[*]}" >&2
	# A fresh machine may have no package lists yet.
	$cmd >&2 || { apt-get update -q >&2 && $cmd >&2; } || die "failed: $cmd"
}
