#!/bin/bash
# make check's dkms step: what dkms does with our package, natively, in
# seconds instead of the dkms tier's 35-40 minutes under TCG. The .deb is
# unpacked into a scratch dir, and in a private mount namespace its source
# tree becomes /usr/src/kvm-gmem-<VERSION> (next to the host's
# linux-source-6.12 tarball), /lib/modules holds only this kernel's build
# link (headers from the cache) and /var/lib/dkms is empty: dkms runs with
# its own paths, the host's dkms state and modules are never touched, and
# nothing is loaded. Then, with the headers made to say an older Debian
# version, dkms build must skip the kernel (status 77) with our one line,
# the package's kernel hook must build nothing and exit 0, and the Makefile's
# check must refuse; with the kernel's own headers the hook must build and
# install the modules. Fails on a broken dkms.conf, Makefile, prepare or
# build script, hook, or package content.
# The scratch dir is at a fixed place outside the clone, made afresh each
# run, one run at a time: the build uses ccache (KVM_GMEM_DKMS_CCACHE=1),
# which hashes the compiler's paths, and a clone at a new path would
# compile everything again. The logs are copied to build/dkms-native/.
#   check-dkms-build.sh [DEB]
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
# dkms builds with the host's compiler: only the host's release natively.
[ -n "$debian_native" ] ||
	die "the native dkms build is for the host's release (Debian $host_debian); Debian $DEBIAN's: make check-dkms DEBIAN=$DEBIAN"
version=$(cat "$top/VERSION")
deb=${1:-$top/build/deb/kvm-gmem-dkms_${version}_all.deb}
[ -f "$deb" ] || "$top/scripts/build-deb.sh"
"$top/scripts/install-deps.sh" deb
need_tools unshare:util-linux
kver=$("$top/scripts/kernel-version.sh" kver)
kdir=$("$top/scripts/headers.sh" "$kver")
results="$top/build/dkms-native"
rm -rf "$results"
mkdir -p "$results"
cache_lock dkms-native
work="$KVM_GMEM_CACHE/work/dkms-native"
rm -rf "$work"
mkdir -p "$work/dkms"
export KVM_GMEM_DKMS_CCACHE=1
dpkg-deb -x "$deb" "$work/root"
src="$work/root/usr/src"
[ -f "$src/kvm-gmem-$version/dkms.conf" ] || die "the package has no /usr/src/kvm-gmem-$version/dkms.conf"

# The package's files in place, in a private mount namespace: /usr/src
# (the host's linux-source-6.12 tarball and the package's source tree),
# /lib/modules (only this kernel's build link) and /var/lib/dkms are dirs in
# $work there, so dkms runs with its own paths and the host's are untouched.
mkdir -p "$work/usr-src" "$work/modules/$kver" "$work/host-src"
cp -a "$src/kvm-gmem-$version" "$work/usr-src/"
ln -s "$kdir" "$work/modules/$kver/build"
# The same headers, but saying they are of an older Debian version.
older=6.12.1-1~deb${DEBIAN}u1
sed "s/^#define LINUX_PACKAGE_ID .*/#define LINUX_PACKAGE_ID \" Debian $older\"/" \
	"$kdir/include/generated/package.h" >"$work/package-older.h"
hook="$work/root/usr/lib/kvm-gmem-dkms/build-for-kernels"
[ -x "$hook" ] || die "the package has no /usr/lib/kvm-gmem-dkms/build-for-kernels"

step "dkms add, then kvm-gmem/$version for $kver: refused with older headers, built and installed by the package's kernel hook (native, private mount namespace)"
t0=$(date +%s)
rc=0
unshare --mount --propagation private bash -eu -s "$version" "$kver" "$kdir" "$work" "$hook" "$older" \
	>"$work/dkms.log" 2>&1 <<'STEPS' || rc=$?
version=$1 kver=$2 kdir=$3 work=$4 hook=$5 older=$6
mount --bind /usr/src "$work/host-src"
mount --bind "$work/usr-src" /usr/src
ln -s "$work/host-src/linux-source-6.12.tar.xz" /usr/src/
mkdir -p /var/lib/dkms /lib/modules
mount --bind "$work/dkms" /var/lib/dkms
mount --bind "$work/modules" /lib/modules
dkms add -m kvm-gmem -v "$version"

echo "=== headers of Debian $older: dkms build is skipped (77), in one line"
mount --bind "$work/package-older.h" "$kdir/include/generated/package.h"
rc=0
dkms build -m kvm-gmem -v "$version" -k "$kver" >"$work/older-build.log" 2>&1 || rc=$?
cat "$work/older-build.log"
[ "$rc" = 77 ] || { echo "FAIL: dkms build exited $rc, want 77 (skipped)"; exit 1; }
grep -q "^kvm-gmem: not built for $kver: it needs linux-source-6.12 $older, the installed one is " \
	"$work/older-build.log" || { echo "FAIL: no 'kvm-gmem: not built' line naming $older"; exit 1; }
echo "=== headers of Debian $older: the kernel hook builds nothing and exits 0, in one line"
"$hook" "$kver" >"$work/older-hook.log" 2>&1 || { echo "FAIL: the kernel hook exited $?"; exit 1; }
cat "$work/older-hook.log"
grep -q "^kvm-gmem: not built for $kver: it needs linux-source-6.12 $older, .*it keeps Debian's kvm modules$" \
	"$work/older-hook.log" || { echo "FAIL: no 'kvm-gmem: not built' line from the hook"; exit 1; }
if dkms status -m kvm-gmem -k "$kver" 2>/dev/null | grep -q ': \(built\|installed\)'; then
	echo "FAIL: kvm-gmem built for headers of another Debian version"; exit 1
fi
echo "=== headers of Debian $older: make modules DKMS=1 refuses before reading the source"
if out=$(/usr/src/kvm-gmem-$version/scripts/check-source-version.sh "$kdir" 2>&1); then
	echo "FAIL: check-source-version.sh accepted them"; exit 1
fi
echo "$out"
grep -q "apt-get install linux-source-6.12=$older\$" <<<"$out" || { echo "FAIL: no apt-get line naming $older"; exit 1; }
umount "$kdir/include/generated/package.h"

echo "=== the kernel's own headers: the kernel hook builds and installs"
"$hook" "$kver"
dkms status -m kvm-gmem -v "$version" -k "$kver"
dkms status -m kvm-gmem -v "$version" -k "$kver" 2>/dev/null | grep -q ': installed' ||
	{ echo "FAIL: kvm-gmem/$version is not installed for $kver"; exit 1; }
STEPS
build_log=$(find "$work/dkms" -name make.log | head -n 1)
[ -z "$build_log" ] || cp "$build_log" "$results/make.log"
cp "$work/dkms.log" "$results/"
if [ "$rc" != 0 ]; then
	tail -n 20 "$work/dkms.log" >&2
	die "the native dkms run failed (status $rc): see $results/dkms.log and $results/make.log"
fi
grep '^kvm-gmem: ' "$work/dkms.log" | sed 's/^/  said: /' || true
step "dkms built and installed in $(($(date +%s) - t0)) s"
# What dkms installed: the three modules, for this kernel, at VERSION.
for m in kvm kvm-amd kvm-intel; do
	ko=$(find "$work/modules/$kver/updates/dkms" -name "$m.ko*" | head -n 1)
	[ -n "$ko" ] || die "dkms built no $m.ko: see $results/dkms.log"
	magic=$(modinfo -F vermagic "$ko")
	have=$(modinfo -F version "$ko")
	[ "${magic%% *}" = "$kver" ] || die "$ko: vermagic '$magic', want $kver"
	[ "$have" = "$version" ] || die "$ko: version '$have', want $version"
	step "ok: $(basename "$ko"): version $have, vermagic $kver"
done
