#!/bin/bash
# make check's packaging step: build the kvm-gmem-dkms package (make deb)
# and require lintian to find no error or warning in it (.changes: the .deb
# and its buildinfo). Tags that are meant are overridden in
# debian/*.lintian-overrides, each with a comment saying why.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/build-deb.sh"
dir=$top/build/deb
[ "$DEBIAN" = 12 ] || dir=$dir-deb$DEBIAN
changes=$(ls "$dir"/*.changes)
step "lintian --fail-on error,warning $(basename "$changes")"
rc=0
report=$(lintian --fail-on error,warning --info "$changes" 2>&1) || rc=$?
# lintian also warns that it runs as root; that is not about the package.
grep -v 'running with root privileges is not recommended' <<<"$report" || true
[ "$rc" = 0 ] || die "lintian found errors or warnings in $changes (status $rc)"
step "lintian: clean"
