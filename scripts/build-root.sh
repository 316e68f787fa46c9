#!/bin/bash
# Run a command in the build root of a Debian release other than the build
# host's: a minbase chroot of that release with the compiler its kernel
# headers name (trixie's were built with gcc-14, which bookworm has not, and
# its kbuild tools need trixie's libc). Made once with debootstrap into the
# cache, keyed by this script and the debootstrap version.
#   build-root.sh DIR... -- COMMAND...
# Each DIR is bind-mounted at its own path, so paths mean the same inside.
# Needs root (debootstrap, chroot); runs in a private mount namespace, so
# nothing stays mounted.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -z "$debian_native" ] || die "build-root.sh: Debian $DEBIAN is the host's release: build on the host"
binds=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
	binds+=("$(cd "$1" && pwd)")
	shift
done
[ "${1:-}" = -- ] && [ $# -gt 1 ] || die "usage: $0 DIR... -- COMMAND..."
shift

# What trixie's linux-headers and linux-kbuild packages depend on to build
# modules, and make.
packages=gcc-14,libc6-dev,make,libelf1t64,libssl3t64,zlib1g,pahole
need_tools debootstrap:debootstrap
key=$( { cat "$0"; echo "$debian_suite $packages"; dpkg-query -W -f='${Version}\n' debootstrap; } |
	sha256sum | cut -c1-16)
root="$KVM_GMEM_CACHE/build-root/$debian_suite-$key"
[ -f "$root/.complete" ] || cache_lock "build-root-$debian_suite-$key"
if [ ! -f "$root/.complete" ]; then
	[ "$(id -u)" = 0 ] || die "the Debian $DEBIAN build root needs root once (debootstrap): run this as root"
	step "debootstrap $debian_suite build root (+$packages)" >&2
	rm -rf --one-file-system "$root"
	mkdir -p "$root" "$KVM_GMEM_CACHE/debs/debootstrap-$debian_suite"
	debootstrap --variant=minbase --include="$packages" \
		--cache-dir="$KVM_GMEM_CACHE/debs/debootstrap-$debian_suite" \
		"$debian_suite" "$root" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" \
		> "$root.log" 2>&1 ||
		{ tail -n 30 "$root.log" >&2; die "debootstrap of the $debian_suite build root failed (log: $root.log)"; }
	rm -rf "$root"/var/cache/apt/archives/*.deb
	touch "$root/.complete"
	prune_old "$root" "$KVM_GMEM_CACHE/build-root/$debian_suite-"*
fi

[ "$(id -u)" = 0 ] || die "building in the Debian $DEBIAN build root needs root (chroot)"
unshare --mount --propagation private /bin/bash -euc '
	root=$1
	shift
	mount -t proc proc "$root/proc"
	while [ "$1" != -- ]; do
		mkdir -p "$root$1"
		mount --bind "$1" "$root$1"
		shift
	done
	shift
	exec chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root LANG=C.UTF-8 "$@"
' _ "$root" "${binds[@]}" -- "$@"
