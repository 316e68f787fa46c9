#!/bin/bash
# The packaging files that restate VERSION must agree with it: dkms.conf
# (generated: also from the installed linux-source-6.12) and debian/changelog.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
version=$(cat "$top/VERSION")
mkdir -p "$top/build"
"$top/scripts/gen-dkms-conf.sh" "$top/build/dkms.conf.expected"
diff -u "$top/dkms.conf" "$top/build/dkms.conf.expected" ||
	die "dkms.conf is out of date: run scripts/gen-dkms-conf.sh and commit it"
# The top entry's version, without needing dpkg-dev: "kvm-gmem (0.1.0) ...".
changelog=$(sed -n '1s/^[^ ]* (\([^)]*\)).*/\1/p' "$top/debian/changelog")
[ "$changelog" = "$version" ] ||
	die "debian/changelog is at $changelog, VERSION is $version: add a changelog entry (dch -v $version)"
step "dkms.conf and debian/changelog agree with VERSION $version"
