#!/bin/bash
# Print the path of the full Debian linux-source-6.12 tree of the release
# (DEBIAN, see lib.sh), extracted once into the cache and keyed by the
# package version (never inside the clone). The host's release: the installed
# /usr/src/linux-source-6.12.tar.xz; the other: the tarball in its package,
# downloaded into the cache.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

version=$("$(dirname "$0")/kernel-version.sh" pkgver)
dir="$KVM_GMEM_CACHE/tree/$version"

[ -f "$dir/.complete" ] || cache_lock "tree-$version"
if [ ! -f "$dir/.complete" ]; then
	step "extracting linux-source-6.12 $version (Debian $DEBIAN) into the cache" >&2
	rm -rf "$dir.tmp" "$dir"
	mkdir -p "$dir.tmp"
	release_source_tarball "$version" | tar -xJ -C "$dir.tmp" --strip-components=1
	touch "$dir.tmp/.complete"
	mv "$dir.tmp" "$dir"
fi
echo "$dir"
