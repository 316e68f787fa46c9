#!/bin/bash
# Print a module build directory (KDIR) for a Debian kernel release, made from
# the headers .debs with apt-get download + dpkg-deb -x into the cache
# (another release than the host's: through scripts/debian-archive.sh).
# Installing linux-headers-* would drag a linux-image onto the build host.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

kver=${1:-$("$(dirname "$0")/kernel-version.sh" kver)}
abi=${kver%-*}                  # 6.12.118+deb12-amd64 -> 6.12.118+deb12
pkgver=$("$(dirname "$0")/kernel-version.sh" pkgver)
root="$KVM_GMEM_CACHE/headers/$kver-$pkgver"
kdir="$root/usr/src/linux-headers-$kver"

# make check's series check (in the background) may want them at once.
[ -f "$root/.complete" ] || cache_lock "headers-$kver-$pkgver"
if [ ! -f "$root/.complete" ]; then
	pkgs=("linux-headers-$kver=$pkgver" "linux-headers-$abi-common=$pkgver" "linux-kbuild-$abi=$pkgver")
	step "downloading headers for $kver ($pkgver)" >&2
	if [ -n "$debian_native" ] && [ -z "${KVM_GMEM_PKGVER:-}" ]; then
		debs="$KVM_GMEM_CACHE/debs"
		mkdir -p "$debs"
		(cd "$debs" && apt-get download -q "${pkgs[@]}" >&2 2>/dev/null) ||
			die "apt-get download of the $kver headers failed (run 'apt-get update'?)"
	else
		suite=$(archive_suite "$pkgver")
		debs="$KVM_GMEM_CACHE/debs/$suite"
		"$(dirname "$0")/debian-archive.sh" "$suite" download "$debs" "${pkgs[@]}"
	fi
	rm -rf "$root.tmp" "$root"
	mkdir -p "$root.tmp"
	for pkg in "linux-headers-$kver" "linux-headers-$abi-common" "linux-kbuild-$abi"; do
		dpkg-deb -x "$debs/${pkg}_${pkgver}"_*.deb "$root.tmp"
	done
	# The arch Makefile includes the -common one by absolute path: point it
	# at our extracted copy instead of /usr/src.
	sed -i "s|^include /usr/src/|include $root/usr/src/|" \
		"$root.tmp/usr/src/linux-headers-$kver/Makefile"
	touch "$root.tmp/.complete"
	mv "$root.tmp" "$root"
fi
echo "$kdir"
