#!/bin/bash
# shellcheck source-path=SCRIPTDIR
# make check-dkms-upgrade: the kvm-gmem-dkms package through a Debian kernel
# update, in a guest booted twice on one disk (a qcow2 overlay of the dkms
# image made at an older 6.12 point release).
#  1. On the older kernel (FROM=VERSION, default: the newest linux-source-6.12
#     of the release below the one the tiers test), with its headers and
#     linux-source-6.12 installed as packages: apt-get install our package and
#     the newest linux-source-6.12, which the package's minimum asks for. dkms
#     must skip the running kernel, saying why in one line, and leave Debian's
#     kvm. Then apt-get install the newest kernel, headers and kbuild, as an
#     upgrade brings them: the package's kernel hook must build and install
#     our modules for the new kernel, and every package must be configured.
#  2. On the new kernel: kvm is ours, tests/dkms-list pass; apt-get remove
#     kvm-gmem-dkms, and both kernels have Debian's kvm again.
# Results: build/results/dkms-upgrade/{old,new}/ (DEBIAN=13: dkms-upgrade-deb13).
# Not in make check: the guest's dkms build takes ~10 min under TCG.
#
# MUTANT=no-kernel-hook: the must-fail run. The package without its kernel
# hooks (/etc/kernel/{header_postinst.d,postinst.d}/kvm-gmem-dkms), which
# dkms's autoinstall does not stand in for (AUTOINSTALL is off: see
# scripts/gen-dkms-conf.sh): boot 1 must fail, naming the new kernel left
# with Debian's kvm; it ends there (results: dkms-upgrade-no-kernel-hook).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
. "$top/scripts/lib.sh"
need_tools qemu-img:qemu-utils

suffix=
[ -n "$debian_native" ] || suffix=-deb$DEBIAN
new=$("$top/scripts/kernel-version.sh" pkgver)
new_kver=$("$top/scripts/kernel-version.sh" kver)
from=${FROM:-}
if [ -z "$from" ]; then
	for v in $("$top/scripts/debian-archive.sh" "$debian_suite" versions linux-source-6.12); do
		! dpkg --compare-versions "$v" lt "$new" || from=$v
	done
fi
[ -n "$from" ] || die "no linux-source-6.12 older than $new in Debian $DEBIAN's archive"
old_kver=$(KVM_GMEM_PKGVER=$from "$top/scripts/kernel-version.sh" kver)
step "dkms upgrade test: Debian $DEBIAN, $old_kver ($from) -> $new_kver ($new)"

mutant=${MUTANT:-}
case "$mutant" in
"" | no-kernel-hook) ;;
*) die "MUTANT: no-kernel-hook or nothing, not '$mutant'" ;;
esac
results="$top/build/results/dkms-upgrade${mutant:+-$mutant}$suffix"
work="$top/build/dkms-upgrade${mutant:+-$mutant}$suffix"
rm -rf "$results" "$work"
mkdir -p "$results" "$work"

"$top/scripts/build-deb.sh" >"$work/deb.log" 2>&1 || die "make deb failed: see $work/deb.log"
deb=$(ls "$top/build/deb${suffix}"/kvm-gmem-dkms_*_all.deb)
if [ "$mutant" = no-kernel-hook ]; then
	# The same package less its kernel hooks (conffiles: listed there too).
	rm -rf "$work/repack"
	dpkg-deb -R "$deb" "$work/repack"
	rm "$work/repack/etc/kernel/header_postinst.d/kvm-gmem-dkms" \
		"$work/repack/etc/kernel/postinst.d/kvm-gmem-dkms"
	sed -i '\|^/etc/kernel/.*/kvm-gmem-dkms$|d' "$work/repack/DEBIAN/conffiles"
	[ -s "$work/repack/DEBIAN/conffiles" ] || rm "$work/repack/DEBIAN/conffiles"
	sed -i '\| etc/kernel/.*/kvm-gmem-dkms$|d' "$work/repack/DEBIAN/md5sums"
	dpkg-deb -b --root-owner-group "$work/repack" "$work/$(basename "$deb")" >/dev/null
	rm -rf "$work/repack"
	deb="$work/$(basename "$deb")"
fi

# The newer release's packages, as the archive has them.
upgrade="$work/stage-old/kernel-upgrade"
mkdir -p "$upgrade"
src_deb=$(KVM_GMEM_PKGVER=$new bash -c '. "$1/scripts/lib.sh"; release_source_deb "$2"' _ "$top" "$new")
KVM_GMEM_PKGVER=$new "$top/scripts/headers.sh" "$new_kver" >/dev/null
new_stock=$("$here/stock-kernel.sh")
abi=${new_kver%-amd64}
suite=$(KVM_GMEM_PKGVER=$new bash -c '. "$1/scripts/lib.sh"; archive_suite "$2"' _ "$top" "$new")
ln "$src_deb" "$upgrade/" 2>/dev/null || cp "$src_deb" "$upgrade/"
# Downloaded by headers.sh and stock-kernel.sh: from the host's apt into
# debs/, or from the private apt state into debs/SUITE/.
for pkg in "linux-headers-$new_kver" "linux-headers-$abi-common" "linux-kbuild-$abi" "linux-image-$new_kver-unsigned"; do
	f=$(ls "$KVM_GMEM_CACHE/debs/${pkg}_${new}"_*.deb "$KVM_GMEM_CACHE/debs/$suite/${pkg}_${new}"_*.deb 2>/dev/null | head -n 1 || true)
	[ -n "$f" ] || die "no $pkg $new package in the cache"
	cp "$f" "$upgrade/"
done
echo old >"$work/stage-old/upgrade-stage"
: >"$work/stage-old/list"

# The second boot's tests: the dkms tier's.
"$top/scripts/stage-tests.sh" "$work/stage-new" "$top/tests/dkms-list"
echo new >"$work/stage-new/upgrade-stage"

# Kernels: vmlinuz only, the modules are the image's own (dkms installs there).
old_stock=$(PKGVER=$from "$here/stock-kernel.sh")
for k in old new; do
	stock=$old_stock
	[ "$k" = old ] || stock=$new_stock
	mkdir -p "$work/kernel-$k"
	ln -s "$stock/vmlinuz" "$work/kernel-$k/vmlinuz"
	cp "$stock/kver" "$work/kernel-$k/kver"
done
old_initrd=$("$here/initramfs.sh" "$old_stock")
new_initrd=$("$here/initramfs.sh" "$new_stock")

# The image at the older release, and the disk both boots share.
image=$(KVM_GMEM_PKGVER=$from "$here/dkms-image.sh")
qemu-img create -q -f qcow2 -F raw -b "$image" "$work/disk.qcow2"

# make -j2 on two vCPUs, one host thread each (see the dkms tier).
export TCG_THREAD=${TCG_THREAD:-multi} BOOT_ALL_CPUS=1
rc=0
step "boot 1: $old_kver: install the package, upgrade the kernel"
"$here/run-tier.sh" --tier "dkms-upgrade-old$suffix" --modules "$deb" --results "$results/old" \
	--kernel "$work/kernel-old" --initrd "$old_initrd" --image "$work/disk.qcow2" \
	--tests "$work/stage-old" --expect "$top/tests/expect/dkms-upgrade-old" \
	--timeout "${QEMU_TIMEOUT:-3600}" || rc=$?
if [ -n "$mutant" ]; then
	rm -f "$work/disk.qcow2"
	summary="$results/old/summary.txt"
	version=$(cat "$top/VERSION")
	kre=$(sed 's/[.+]/\\&/g' <<<"$new_kver")
	# Failed as it must: judged, no crash or splat, the package installed
	# and the kernel upgraded, and both cases below named among the problems.
	if [ ! -f "$summary" ] || ! grep -q '^RESULT: FAIL' "$summary"; then
		die "must-fail $mutant: boot 1 was not judged a failure (status $rc): see $results/old/"
	fi
	# The package's install and the kernel upgrade themselves must succeed.
	if summary_wrong_failure "$summary" || grep -qE '^- modules: "(apt-get install|kernel upgrade)' "$summary"; then
		die "must-fail $mutant: boot 1 failed for another reason: see $summary"
	fi
	unnamed=0
	for pattern in "\"kvm-gmem/$version not installed for $kre\" FAILED" \
		"\"on $kre kvm resolves to /lib/modules/$kre/kernel/arch/x86/kvm/kvm\\.ko(\\.xz)?\" FAILED"; do
		grep -qE -- "^- modules: $pattern" "$summary" ||
			{ step "FAIL: the summary does not name /$pattern/"; unnamed=1; }
	done
	[ "$unnamed" = 0 ] || die "must-fail $mutant: boot 1 failed, but not as it must: see $summary"
	step "must-fail $mutant: boot 1 failed as it must: $(grep -c '^- ' "$summary") problems named"
	exit 0
fi
if [ "$rc" = 0 ]; then
	step "boot 2: $new_kver: our kvm, the tests, apt-get remove"
	"$here/run-tier.sh" --tier "dkms-upgrade-new$suffix" --modules "$deb" --results "$results/new" \
		--kernel "$work/kernel-new" --initrd "$new_initrd" --image "$work/disk.qcow2" \
		--tests "$work/stage-new" --expect "$top/tests/expect/dkms-upgrade-new" \
		--timeout "${QEMU_TIMEOUT:-1800}" || rc=$?
fi
# The overlay holds the guest's whole dkms build: not kept.
rm -f "$work/disk.qcow2"
[ "$rc" = 0 ] || die "dkms upgrade test failed (status $rc): see $results/"
step "dkms upgrade test passed: $old_kver -> $new_kver"
