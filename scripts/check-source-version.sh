#!/bin/bash
# A dkms build (make modules DKMS=1 KDIR=...) refuses, in one line, a kernel
# whose headers are another Debian version than the installed
# linux-source-6.12: our KVM is that source, and it must match the kernel it
# loads into. dkms.conf skips such kernels already; this is for a build
# started by hand, before prepare reads the tarball.
#   check-source-version.sh KDIR
set -euo pipefail
. "$(dirname "$0")/lib.sh"
kdir=${1:?usage: $0 KDIR}
headers=$(sed -n 's/^#define LINUX_PACKAGE_ID " Debian \(.*\)"$/\1/p' \
	"$kdir/include/generated/package.h" 2>/dev/null || true)
source=$("$(dirname "$0")/kernel-version.sh" pkgver)
[ -n "$headers" ] || die "$kdir names no Debian version (include/generated/package.h): not a Debian kernel's headers"
[ "$headers" = "$source" ] ||
	die "the kernel in $kdir is Debian $headers, the installed linux-source-6.12 is $source: apt-get install linux-source-6.12=$headers"
