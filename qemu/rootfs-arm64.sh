#!/bin/bash
# shellcheck source-path=SCRIPTDIR
# Build (or reuse from the cache) the root filesystem of the arm64 guest: an
# initramfs (cpio) that is the whole root. Prints the path of the .cpio file.
#
# The arm64 tests are static binaries that come in through the 9p share, so
# the root only needs what qemu/guest-init and tests/guest/run.sh run: bash,
# and busybox for everything else. Those come from Debian's arm64 packages,
# downloaded and unpacked (apt-get download + dpkg-deb -x): no foreign
# debootstrap, no qemu-user binfmt on the host, nothing to run at build time.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../scripts/lib.sh"
. "$here/common.sh"

packages=(busybox-static bash libc6 libtinfo6)
need_tools cpio:cpio
dpkg --print-foreign-architectures | grep -x arm64 > /dev/null ||
	die "Debian's arm64 packages are not available here; run as root: dpkg --add-architecture arm64 && apt-get update (or: scripts/install-deps.sh arm64)"

# The exact package versions are part of the key: an update makes a new root.
versions=$(for p in "${packages[@]}"; do
	apt-cache policy "$p:arm64" | awk '/Candidate:/ { print $2 }'
done)
key=$( {
	hash_inputs "$here/rootfs-arm64.sh" "$here/initramfs-init" "$here/guest-init"
	echo "${packages[*]} $versions"
} | sha256sum | cut -c1-16)
out="$KVM_GMEM_CACHE/initramfs/rootfs-arm64-$key.cpio"
if [[ -f "$out" ]]; then
	echo "$out"
	exit 0
fi

step "building the arm64 root initramfs (${packages[*]})" >&2
debs="$KVM_GMEM_CACHE/debs/arm64"
mkdir -p "$debs" "$KVM_GMEM_CACHE/initramfs"
tmp=$(mktemp -d "$KVM_GMEM_CACHE/initramfs/.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
(cd "$debs" && apt-get download -q "${packages[@]/%/:arm64}" >"$tmp/download.log" 2>&1) ||
	{ cat "$tmp/download.log" >&2; die "apt-get download of the arm64 packages failed"; }

root="$tmp/root"
mkdir -p "$root"
for p in "${packages[@]}"; do
	deb=$(ls -t "$debs/${p}_"*_arm64.deb | head -n1)
	dpkg-deb -x "$deb" "$root"
done
# Trim what the guest never reads.
rm -rf "$root"/usr/share/doc "$root"/usr/share/man "$root"/usr/share/locale \
	"$root"/usr/share/info "$root"/usr/share/lintian "$root"/usr/lib/aarch64-linux-gnu/gconv
# busybox-static installs /bin/busybox; /init puts its applets next to it.
[[ -x "$root/bin/busybox" && -x "$root/bin/bash" ]] || die "busybox or bash missing in the arm64 root"
mkdir -p "$root"/{proc,sys,dev,run,tmp,share,root,etc,sbin,lib/modules}
install -m 755 "$here/initramfs-init" "$root/init"
install -m 755 "$here/guest-init" "$root/sbin/kvm-gmem-init"
: >"$root/modules.load"
echo kvm-gmem-guest >"$root/etc/hostname"
echo "root:x:0:0:root:/root:/bin/bash" >"$root/etc/passwd"
echo "root:x:0:" >"$root/etc/group"

(cd "$root" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet) >"$tmp/root.cpio"
mv "$tmp/root.cpio" "$out"
prune_old "$out" "$KVM_GMEM_CACHE/initramfs/rootfs-arm64-"*.cpio
step "arm64 root ready: $(du -h "$out" | cut -f1) ($out)" >&2
echo "$out"
