#!/bin/bash
# shellcheck source-path=SCRIPTDIR
# Usage: qemu/initramfs.sh KERNEL_DIR
# Build (or reuse from the cache) a busybox-static initramfs that loads the
# modules needed for root on virtio-blk ext4 and for the 9p share, then
# switch_roots into the guest init. Prints the path of the .cpio file.
# Modules the kernel has built in are left out; a kernel with everything built
# in gets an initramfs that loads nothing (it can also boot with none).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../scripts/lib.sh"
. "$here/common.sh"

kdir=${1:?usage: $0 KERNEL_DIR}
[[ -f "$kdir/kver" ]] || die "$kdir/kver missing: not a kernel dir (see qemu/stock-kernel.sh)"
kver=$(cat "$kdir/kver")
moddir="$kdir/lib/modules/$kver"

need_tools cpio:cpio xz:xz-utils
# The initramfs has no libc: it needs the static busybox, not the dynamic one.
need_packages busybox-static
busybox=/bin/busybox

# crc32c_generic is a soft dependency of ext4/jbd2 (not in modules.dep), so it
# is listed explicitly; the rest of the dependencies come from modules.dep.
wanted="crc32c_generic virtio_pci virtio_blk ext4 9pnet_virtio 9p"

# find_module NAME FILE: print the first line of a modules.* FILE whose module
# (file name without .ko*, '-' folded to '_') is NAME.
find_module() {
	awk -v want="$1" '{
		b = $1; sub(/:$/, "", b); sub(/.*\//, "", b); sub(/\.ko.*/, "", b); gsub(/-/, "_", b)
		if (b == want) { print; exit }
	}' "$2"
}

# resolve NAME: print the module files (relative to moddir) to load, in order;
# nothing when the module is built in.
resolve() {
	local name=${1//-/_} line deps i
	if [[ -f "$moddir/modules.builtin" && -n $(find_module "$name" "$moddir/modules.builtin") ]]; then
		return 0
	fi
	line=$(find_module "$name" "$moddir/modules.dep")
	[[ -n "$line" ]] || die "module $name is neither built into $kver nor in modules.dep"
	read -ra deps <<<"${line#*:}"
	# modules.dep lists the deepest dependency last: load from the end.
	for ((i = ${#deps[@]} - 1; i >= 0; i--)); do echo "${deps[i]}"; done
	echo "${line%%:*}"
}

modules=()
if [[ -f "$moddir/modules.dep" ]]; then
	mapfile -t modules < <(for m in $wanted; do resolve "$m"; done | awk '!seen[$0]++')
else
	step "note: $kdir has no modules.dep; assuming everything needed is built in" >&2
fi

# The key covers this script, /init, busybox and the exact module files.
key=$( {
	hash_inputs "$here/initramfs.sh" "$here/initramfs-init"
	sha256sum "$busybox" | cut -d' ' -f1
	echo "$kver"
	for m in "${modules[@]}"; do echo "$m $(sha256sum <"$moddir/$m" | cut -d' ' -f1)"; done
} | sha256sum | cut -c1-16)
out="$KVM_GMEM_CACHE/initramfs/initramfs-$kver-$key.cpio"
if [[ -f "$out" ]]; then
	echo "$out"
	exit 0
fi

step "building initramfs for $kver (${#modules[@]} modules)" >&2
mkdir -p "$KVM_GMEM_CACHE/initramfs"
tmp=$(mktemp -d "$KVM_GMEM_CACHE/initramfs/.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
root="$tmp/root"
mkdir -p "$root/bin" "$root/lib/modules"
cp "$busybox" "$root/bin/busybox"
install -m 755 "$here/initramfs-init" "$root/init"
: >"$root/modules.load"
for m in "${modules[@]}"; do
	base=${m##*/}
	# Decompress here so the guest's insmod needs no xz/zstd support.
	case "$base" in
	*.ko.xz) xz -dc "$moddir/$m" >"$root/lib/modules/${base%.xz}" ;;
	*.ko.gz) gzip -dc "$moddir/$m" >"$root/lib/modules/${base%.gz}" ;;
	*.ko.zst) zstd -qdc "$moddir/$m" >"$root/lib/modules/${base%.zst}" ;;
	*.ko) cp "$moddir/$m" "$root/lib/modules/" ;;
	*) die "unexpected module file $m" ;;
	esac
	echo "${base%.ko*}.ko" >>"$root/modules.load"
done
# Uncompressed: a few MB, and nothing to decompress under slow TCG.
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) >"$tmp/initramfs.cpio"
mv "$tmp/initramfs.cpio" "$out"
step "initramfs ready: $out ($(du -h "$out" | cut -f1))" >&2
echo "$out"
