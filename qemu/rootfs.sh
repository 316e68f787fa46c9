#!/bin/bash
# shellcheck source-path=SCRIPTDIR
# Build (or reuse from the cache) the guest root filesystem: Debian minbase
# of the release DEBIAN names (bookworm; trixie with DEBIAN=13) +
# qemu/rootfs-packages + the guest init, as an ext4 image. Prints the image
# path. Boots use it read-only (QEMU -snapshot), so one image serves all.
# Env: DEBIAN_MIRROR (default http://deb.debian.org/debian).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../scripts/lib.sh"
. "$here/common.sh"

suite=$debian_suite
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
packages=$(sed 's/#.*//' "$here/rootfs-packages" | xargs | tr ' ' ',')
# Before the key: the tool versions are part of it.
need_tools debootstrap:debootstrap mkfs.ext4:e2fsprogs

key=$( {
	hash_inputs "$here/rootfs.sh" "$here/rootfs-packages" "$here/guest-init"
	echo "$suite"
	dpkg-query -W -f='${Version}\n' debootstrap e2fsprogs
} | sha256sum | cut -c1-16)
out="$KVM_GMEM_CACHE/rootfs/rootfs-$suite-$key.ext4"
[[ -f "$out" ]] || cache_lock "rootfs-$suite-$key"
if [[ -f "$out" ]]; then
	echo "$out"
	exit 0
fi

[[ $(id -u) == 0 ]] || die "rootfs.sh needs root (debootstrap); run it once as root to fill the cache"
mkdir -p "$KVM_GMEM_CACHE/rootfs" "$KVM_GMEM_CACHE/debs/debootstrap-$suite"
tmp=$(mktemp -d "$KVM_GMEM_CACHE/rootfs/.tmp.XXXXXX")
# An interrupted debootstrap can leave proc/sys mounted inside the target:
# unmount those before deleting, and never cross into another filesystem.
cleanup() {
	grep -o " $tmp/[^ ]*" /proc/mounts | sort -r | xargs -r -n1 umount -l || true
	rm -rf --one-file-system "$tmp"
}
trap cleanup EXIT
root="$tmp/root"

step "debootstrap $suite minbase (+$packages)" >&2
debootstrap --variant=minbase --include="$packages" \
	--cache-dir="$KVM_GMEM_CACHE/debs/debootstrap-$suite" \
	"$suite" "$root" "$mirror" >"$tmp/debootstrap.log" 2>&1 ||
	{ tail -n 30 "$tmp/debootstrap.log" >&2; die "debootstrap failed"; }

# Trim what a test guest never reads: smaller image, faster mkfs.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
	"$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/*
install -m 755 "$here/guest-init" "$root/sbin/kvm-gmem-init"
mkdir -p "$root/share" "$root/lib/modules"
echo kvm-gmem-guest >"$root/etc/hostname"
echo "/dev/vda / ext4 rw 0 1" >"$root/etc/fstab"

step "mkfs.ext4 ($(du -sh "$root" | cut -f1) of files)" >&2
# 2 GiB sparse: room for test scratch files; unused blocks cost no disk.
mkfs.ext4 -q -F -L kvm-gmem-root -d "$root" "$tmp/rootfs.ext4" 2G >"$tmp/mkfs.log" 2>&1 ||
	{ cat "$tmp/mkfs.log" >&2; die "mkfs.ext4 failed"; }
mv "$tmp/rootfs.ext4" "$out"
prune_old "$out" "$KVM_GMEM_CACHE/rootfs/rootfs-$suite-"*.ext4
step "rootfs ready: $out" >&2
echo "$out"
