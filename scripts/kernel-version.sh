#!/bin/bash
# Derive the Debian kernel names from the installed linux-source-6.12 package so
# that the source tree, the headers and the guest kernel always match.
#   kernel-version.sh pkgver   -> 6.12.118-1~deb12u1
#   kernel-version.sh kver     -> 6.12.118+deb12-amd64
#   kernel-version.sh abi      -> 6.12.118+deb12
set -euo pipefail
pkgver=$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null) ||
	{ echo "error: linux-source-6.12 is not installed: run 'make deps'" >&2; exit 1; }
upstream=${pkgver%%-*}
case "${1:-kver}" in
pkgver) echo "$pkgver" ;;
abi)    echo "$upstream+deb12" ;;
kver)   echo "$upstream+deb12-amd64" ;;
*)      echo "usage: $0 pkgver|kver|abi" >&2; exit 2 ;;
esac
