#!/bin/bash
# make deb: build kvm-gmem-dkms_<VERSION>_all.deb (dh-dkms) into build/deb/
# (DEBIAN=13: kvm-gmem-dkms_<VERSION>+deb13_all.deb into build/deb-deb13/).
# The package is built from a copy of the work tree in build/deb/src, so
# dpkg-buildpackage's files never land in the clone.
#   build-deb.sh                      the package at VERSION
#   build-deb.sh --upgrade VERSION2   the same package at VERSION2 (its copy's
#                                     VERSION, dkms.conf and changelog say so),
#                                     into build/deb-upgrade/: the dkms tier
#                                     installs it over the first
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
version=$(cat "$top/VERSION")
out="$top/build/deb"
if [ "${1:-}" = --upgrade ]; then
	version=${2:?usage: $0 [--upgrade VERSION]}
	out="$top/build/deb-upgrade"
fi
# The package for Debian 13 is the same source for trixie's kernel: its
# Debian version is VERSION+deb13 (newer than bookworm's, so a dist-upgrade
# replaces it), its dkms.conf and dependencies name trixie's kernel.
pkgversion=$version
if [ "$DEBIAN" != 12 ]; then
	pkgversion=$version+deb$DEBIAN
	out=$out-deb$DEBIAN
fi
deb="$out/kvm-gmem-dkms_${pkgversion}_all.deb"
# Also reached from qemu/test-tier.sh dkms, not only from make deb.
"$top/scripts/install-deps.sh" deb
# The clone's packaging files are those of the Debian 12 package.
DEBIAN=12 "$top/scripts/check-packaging.sh"

step "building $(basename "$deb")"
t0=$(date +%s)
rm -rf "$out"
src="$out/src/kvm-gmem-$version"
mkdir -p "$src/src"
# What debian/rules installs, plus debian/ and what rules reads.
cp -a "$top"/{Makefile,Kbuild,VERSION,dkms.conf,scripts,debian} "$src/"
cp -a "$top"/src/{series,virt,arch} "$src/src/"
if [ "$version" != "$(cat "$top/VERSION")" ]; then
	echo "$version" > "$src/VERSION"
	# Renumbered as the Debian 12 package; made trixie's below if DEBIAN=13.
	DEBIAN=12 "$src/scripts/gen-dkms-conf.sh" "$src/dkms.conf"
	{
		echo "kvm-gmem ($version) bookworm; urgency=medium"
		echo
		echo "  * Test upgrade: the package at $(cat "$top/VERSION"), renumbered."
		echo
		echo " -- kvm-gmem developers <kvm-gmem@example.invalid>  $(date -R -u -d @"$(stat -c %Y "$top/VERSION")")"
		echo
		cat "$top/debian/changelog"
	} > "$src/debian/changelog"
	DEBIAN=12 "$src/scripts/check-packaging.sh" >&2
fi
if [ "$pkgversion" != "$version" ]; then
	"$src/scripts/gen-dkms-conf.sh" "$src/dkms.conf"
	{
		echo "kvm-gmem ($pkgversion) $debian_suite; urgency=medium"
		echo
		echo "  * The package at $version, for Debian $DEBIAN's 6.12 kernels."
		echo
		echo " -- kvm-gmem developers <kvm-gmem@example.invalid>  $(date -R -u -d @"$(stat -c %Y "$top/VERSION")")"
		echo
		cat "$src/debian/changelog"
	} > "$src/debian/changelog.new"
	mv "$src/debian/changelog.new" "$src/debian/changelog"
fi
(cd "$src" && dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1 ||
	{ tail -n 20 "$out/build.log" >&2; die "dpkg-buildpackage failed: see $out/build.log"; }
mv "$out/src/"*.deb "$out/src/"*.changes "$out/src/"*.buildinfo "$out/"
[ -f "$deb" ] || die "dpkg-buildpackage made no $(basename "$deb"): see $out/build.log"
step "built $deb in $(($(date +%s) - t0)) s ($(du -h "$deb" | cut -f1))"
