#!/bin/bash
# shellcheck source-path=SCRIPTDIR
# Build (or reuse from the cache) the dkms tier's guest image: Debian minbase
# of the release DEBIAN names (bookworm; trixie with DEBIAN=13) + qemu/dkms-image-packages (dkms, the generic 6.12 kernel, its
# headers and linux-source-6.12, installed as packages, the way a user's
# machine has them) + the guest init, as an ext4 image. Prints its path.
# Boots use it read-only (QEMU -snapshot): every run starts from this state.
# Env: DEBIAN_MIRROR, DEBIAN_SECURITY_MIRROR; KVM_GMEM_PKGVER: an older
# point release's kernel, headers and source (qemu/dkms-upgrade.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
. "$top/scripts/lib.sh"

suite=$debian_suite
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
kver=$("$top/scripts/kernel-version.sh" kver)
pkgver=$("$top/scripts/kernel-version.sh" pkgver)
gcc=$("$top/scripts/kernel-version.sh" gcc)
packages=$(sed 's/#.*//' "$here/dkms-image-packages" | xargs |
	sed "s/@KVER@/$kver/g; s/@PKGVER@/$pkgver/g; s/@GCC@/$gcc/g")
need_tools debootstrap:debootstrap mkfs.ext4:e2fsprogs

key=$( {
	hash_inputs "$here/dkms-image.sh" "$here/dkms-image-packages" "$here/guest-init"
	echo "$suite $kver $pkgver"
	dpkg-query -W -f='${Version}\n' debootstrap e2fsprogs
} | sha256sum | cut -c1-16)
# The version in the name: the dkms tier's image (the newest release) and
# the upgrade test's (an older one, KVM_GMEM_PKGVER) are kept side by side.
out="$KVM_GMEM_CACHE/rootfs/dkms-$suite-$pkgver-$key.ext4"
if [[ -f "$out" ]]; then
	echo "$out"
	exit 0
fi

[[ $(id -u) == 0 ]] || die "dkms-image.sh needs root (debootstrap, chroot); run it once as root to fill the cache"
debs="$KVM_GMEM_CACHE/debs/dkms-image-$suite"
mkdir -p "$KVM_GMEM_CACHE/rootfs" "$KVM_GMEM_CACHE/debs/debootstrap-$suite" "$debs/partial"
tmp=$(mktemp -d "$KVM_GMEM_CACHE/rootfs/.tmp.XXXXXX")
# proc, dev and the apt cache are mounted inside the target while apt runs:
# unmount them before deleting, and never cross into another filesystem.
cleanup() {
	grep -o " $tmp/[^ ]*" /proc/mounts | sort -r | xargs -r -n1 umount -l || true
	rm -rf --one-file-system "$tmp"
}
trap cleanup EXIT
root="$tmp/root"
t0=$(date +%s)

step "dkms image: debootstrap $suite minbase" >&2
debootstrap --variant=minbase --cache-dir="$KVM_GMEM_CACHE/debs/debootstrap-$suite" \
	"$suite" "$root" "$mirror" >"$tmp/debootstrap.log" 2>&1 ||
	{ tail -n 30 "$tmp/debootstrap.log" >&2; die "debootstrap failed"; }

# The kernel packages of this version are in the security suite only.
cat >"$root/etc/apt/sources.list" <<-EOS
	deb $mirror $suite main
	deb $security $suite-security main
EOS
# No daemons start in the chroot.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
# Downloaded .debs are kept in the cache: a rebuild with a new key downloads nothing again.
mount --bind "$debs" "$root/var/cache/apt/archives"

step "dkms image: apt-get install $packages" >&2
# shellcheck disable=SC2086 # one word per package
chroot "$root" /usr/bin/env DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 sh -c \
	"apt-get update -q && apt-get install -y -q --no-install-recommends $packages" \
	>"$tmp/apt.log" 2>&1 || { tail -n 30 "$tmp/apt.log" >&2; die "apt-get install in the image failed (log above)"; }
umount "$root/var/cache/apt/archives" "$root/dev" "$root/proc"
rm -f "$root/usr/sbin/policy-rc.d"

# Trim what a test guest never reads. The initrd the kernel package made is
# not used either: the harness boots its own (qemu/initramfs.sh).
rm -rf "$root"/var/lib/apt/lists/* "$root"/boot/initrd.img-* \
	"$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/locale/*
install -m 755 "$here/guest-init" "$root/sbin/kvm-gmem-init"
mkdir -p "$root/share"
echo kvm-gmem-guest >"$root/etc/hostname"
echo "/dev/vda / ext4 rw 0 1" >"$root/etc/fstab"

step "dkms image: mkfs.ext4 ($(du -sh "$root" | cut -f1) of files)" >&2
# 8 GiB sparse: the dkms build tree and objects go on it; unused blocks cost no disk.
mkfs.ext4 -q -F -L kvm-gmem-root -d "$root" "$tmp/rootfs.ext4" 8G >"$tmp/mkfs.log" 2>&1 ||
	{ cat "$tmp/mkfs.log" >&2; die "mkfs.ext4 failed"; }
mv "$tmp/rootfs.ext4" "$out"
prune_old "$out" "$KVM_GMEM_CACHE/rootfs/dkms-$suite-$pkgver-"*.ext4
step "dkms image ready in $(($(date +%s) - t0)) s: $out ($(du -h "$out" | cut -f1) used)" >&2
echo "$out"
