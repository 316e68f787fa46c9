#!/bin/bash
# Derive the Debian kernel names from the release's linux-source-6.12 so that
# the source tree, the headers and the guest kernel always match. The host's
# release (lib.sh: DEBIAN): the installed package; the other: its newest in
# its archive.
#   kernel-version.sh pkgver   -> 6.12.118-1~deb12u1      (13: 6.12.118-1)
#   kernel-version.sh kver     -> 6.12.118+deb12-amd64    (13: 6.12.118+deb13-amd64)
#   kernel-version.sh abi      -> 6.12.118+deb12
#   kernel-version.sh gcc      -> gcc-12                  (13: gcc-14)
#   kernel-version.sh headers-meta -> linux-headers-6.12-amd64 (13: linux-headers-amd64):
#                                 the metapackage of the release's newest 6.12 headers
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ -n "${KVM_GMEM_PKGVER:-}" ]; then
	pkgver=$KVM_GMEM_PKGVER
elif [ -n "$debian_native" ]; then
	pkgver=$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null) ||
		die "linux-source-6.12 is not installed: run 'make deps'"
else
	pkgver=$("$(dirname "$0")/debian-archive.sh" "$debian_suite" version linux-source-6.12)
fi
upstream=${pkgver%%-*}
# bookworm-backports' kernels too (6.12.95-1~bpo12+1: 6.12.95+deb12-amd64).
abi=$upstream+deb$DEBIAN
case "${1:-kver}" in
pkgver) echo "$pkgver" ;;
abi)    echo "$abi" ;;
kver)   echo "$abi-amd64" ;;
gcc)    echo "$debian_gcc" ;;
headers-meta)
	# Debian 12's default kernel is 6.1; 6.12 has metapackages of its own.
	if [ "$DEBIAN" = 12 ]; then echo linux-headers-6.12-amd64; else echo linux-headers-amd64; fi ;;
*)      echo "usage: $0 pkgver|kver|abi|gcc|headers-meta" >&2; exit 2 ;;
esac
