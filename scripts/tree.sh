#!/bin/bash
# Print the path of the full Debian linux-source-6.12 tree, extracted once into
# the cache and keyed by the package version (never inside the clone).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

tarball=/usr/src/linux-source-6.12.tar.xz
[ -r "$tarball" ] || die "$tarball missing: run 'make deps' (apt-get install linux-source-6.12)"
version=$(dpkg-query -W -f='${Version}' linux-source-6.12)
dir="$KVM_GMEM_CACHE/tree/$version"

[ -f "$dir/.complete" ] || cache_lock "tree-$version"
if [ ! -f "$dir/.complete" ]; then
	step "extracting $tarball ($version) into the cache" >&2
	rm -rf "$dir.tmp" "$dir"
	mkdir -p "$dir.tmp"
	tar -C "$dir.tmp" -xf "$tarball" --strip-components=1
	touch "$dir.tmp/.complete"
	mv "$dir.tmp" "$dir"
fi
echo "$dir"
