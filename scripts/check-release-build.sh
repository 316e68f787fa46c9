#!/bin/bash
# make check's build for another Debian release (DEBIAN=13: trixie): the
# series applies with zero fuzz to that release's linux-source-6.12 and the
# modules build against its headers, in its build root, with their export
# CRCs checked against its Module.symvers (build-modules.sh). Only the
# modules' files are read out of the source package, and no debug info is
# made: this step proves the build, the tiers run the bookworm build.
#   check-release-build.sh RELEASE
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
[ $# = 1 ] || { echo "usage: $0 RELEASE (13)" >&2; exit 2; }
export DEBIAN=$1
KVM_GMEM_MODULES_ONLY=1 "$top/scripts/prepare.sh"
KVM_GMEM_DEBUG_INFO=n "$top/scripts/build-modules.sh"
