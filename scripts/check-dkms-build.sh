#!/bin/bash
# make check's dkms step: what dkms does with our package, natively, in
# seconds instead of the dkms tier's 35-40 minutes under TCG. The .deb's
# /usr/src tree is unpacked into a scratch dir, then dkms 'add' and 'build'
# run on it for Debian's kernel with every dkms tree pointed there
# (--sourcetree, --dkmstree, --installtree) and the headers from the cache
# (--kernelsourcedir), in a private mount namespace with an empty
# /var/lib/dkms and /lib/modules, so the host's dkms state and modules are
# never touched and nothing is installed or loaded. Fails on a broken
# dkms.conf, Makefile, prepare or build script, or package content.
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
mkdir -p "$work/dkms" "$work/install"
export KVM_GMEM_DKMS_CCACHE=1
dpkg-deb -x "$deb" "$work/root"
src="$work/root/usr/src"
[ -f "$src/kvm-gmem-$version/dkms.conf" ] || die "the package has no /usr/src/kvm-gmem-$version/dkms.conf"

trees=(--sourcetree "$src" --dkmstree "$work/dkms" --installtree "$work/install")
step "dkms add + build kvm-gmem/$version for $kver (native, private mount namespace)"
t0=$(date +%s)
rc=0
unshare --mount --propagation private bash -euc '
	mount -t tmpfs none /var/lib/dkms 2>/dev/null || { mkdir -p /var/lib/dkms; mount -t tmpfs none /var/lib/dkms; }
	[ ! -d /lib/modules ] || mount -t tmpfs none /lib/modules
	dkms add -m kvm-gmem -v "$1" "${@:4}"
	dkms build -m kvm-gmem -v "$1" -k "$2" --kernelsourcedir "$3" "${@:4}"
' _ "$version" "$kver" "$kdir" "${trees[@]}" >"$work/dkms.log" 2>&1 || rc=$?
build_log=$(find "$work/dkms" -name make.log | head -n 1)
[ -z "$build_log" ] || cp "$build_log" "$results/make.log"
cp "$work/dkms.log" "$results/"
if [ "$rc" != 0 ]; then
	tail -n 20 "$work/dkms.log" >&2
	die "dkms build failed (status $rc): see $results/dkms.log and $results/make.log"
fi
step "dkms built in $(($(date +%s) - t0)) s"

# What dkms would install: the three modules, for this kernel, at VERSION.
for m in kvm kvm-amd kvm-intel; do
	ko=$(find "$work/dkms/kvm-gmem/$version/$kver" -name "$m.ko*" | head -n 1)
	[ -n "$ko" ] || die "dkms built no $m.ko: see $results/dkms.log"
	magic=$(modinfo -F vermagic "$ko")
	have=$(modinfo -F version "$ko")
	[ "${magic%% *}" = "$kver" ] || die "$ko: vermagic '$magic', want $kver"
	[ "$have" = "$version" ] || die "$ko: version '$have', want $version"
	step "ok: $(basename "$ko"): version $have, vermagic $kver"
done
