#!/bin/bash
# make deb: build kvm-gmem-dkms_<VERSION>_all.deb (dh-dkms) into build/deb/.
# The package is built from a copy of the work tree in build/deb/src, so
# dpkg-buildpackage's files never land in the clone.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
version=$(cat "$top/VERSION")
out="$top/build/deb"
deb="$out/kvm-gmem-dkms_${version}_all.deb"
# Also reached from qemu/test-tier.sh dkms, not only from make deb.
"$top/scripts/install-deps.sh" deb
"$top/scripts/check-packaging.sh"

step "building $(basename "$deb")"
t0=$(date +%s)
rm -rf "$out"
src="$out/src/kvm-gmem-$version"
mkdir -p "$src/src"
# What debian/rules installs, plus debian/ and what rules reads.
cp -a "$top"/{Makefile,Kbuild,VERSION,dkms.conf,scripts,debian} "$src/"
cp -a "$top"/src/{series,virt,arch} "$src/src/"
(cd "$src" && dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1 ||
	{ tail -n 20 "$out/build.log" >&2; die "dpkg-buildpackage failed: see $out/build.log"; }
mv "$out/src/"*.deb "$out/src/"*.changes "$out/src/"*.buildinfo "$out/"
[ -f "$deb" ] || die "dpkg-buildpackage made no $(basename "$deb"): see $out/build.log"
step "built $deb in $(($(date +%s) - t0)) s ($(du -h "$deb" | cut -f1))"
