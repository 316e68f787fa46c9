#!/bin/bash
# Derive the Debian kernel names from the release's linux-source-6.12 so that
# the source tree, the headers and the guest kernel always match. The host's
# release (lib.sh: DEBIAN): the installed package; the other: its newest in
# its archive.
#   kernel-version.sh pkgver   -> 6.12.118-1~deb12u1      (13: 6.12.118-1)
#   kernel-version.sh kver     -> 6.12.118+deb12-amd64    (13: 6.12.118+deb13-amd64)
#   kernel-version.sh abi      -> 6.12.118+deb12
#   kernel-version.sh gcc      -> gcc-12                  (13: gcc-14)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ -n "$debian_native" ]; then
	pkgver=$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null) ||
		die "linux-source-6.12 is not installed: run 'make deps'"
else
	pkgver=$("$(dirname "$0")/debian-archive.sh" "$debian_suite" version linux-source-6.12)
fi
upstream=${pkgver%%-*}
case "${1:-kver}" in
pkgver) echo "$pkgver" ;;
abi)    echo "$upstream+deb$DEBIAN" ;;
kver)   echo "$upstream+deb$DEBIAN-amd64" ;;
gcc)    echo "$debian_gcc" ;;
*)      echo "usage: $0 pkgver|kver|abi|gcc" >&2; exit 2 ;;
esac
