#!/bin/bash
# Build the shim guest kernel: the installed linux-source-6.12 + src/mm-shim
# + the config fragments in src/mm-shim/config, merged onto allnoconfig.
# Cached in $KVM_GMEM_CACHE/kernels/shim-<hash of those inputs>/, with ccache.
# Prints that directory, which holds what qemu/run-tier.sh --kernel wants:
# vmlinuz, kver, lib/modules/<kver>/, and build/ (the O= dir for modules).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
tree=$("$top/scripts/tree.sh")
shim="$top/src/mm-shim"
mapfile -t patches < <(grep -v '^#' "$shim/series" | grep . | sed "s|^|$shim/|")
fragments=("$shim"/config/*.config)

key=$( { basename "$tree"; cat "$0" "${patches[@]}" "${fragments[@]}"; } | sha256sum | cut -c1-16)
out="$KVM_GMEM_CACHE/kernels/shim-$key"
if [ -f "$out/.complete" ]; then
	echo "$out"
	exit 0
fi

step "building the shim kernel ($key): tree + ${#patches[@]} mm-shim patches" >&2
mkdir -p "$out"
src="$out/src"
if [ ! -f "$src/.patched" ]; then
	rm -rf "$src"
	# Hard links are enough: patch replaces the files it changes.
	cp -al "$tree" "$src"
	for p in "${patches[@]}"; do
		patch -d "$src" -p1 -F0 -N -s --no-backup-if-mismatch < "$p" >&2 ||
			die "mm-shim patch does not apply: ${p#$top/}"
	done
	touch "$src/.patched"
fi

obj="$out/build"
mkdir -p "$obj"
cat "${fragments[@]}" > "$obj/fragments.config"
make -s -C "$src" O="$obj" KCONFIG_ALLCONFIG="$obj/fragments.config" allnoconfig >&2
# Every option the fragments ask for must survive Kconfig, or they lie.
missing=$(grep -h '^CONFIG_' "${fragments[@]}" | while read -r line; do
	grep -qxF "$line" "$obj/.config" || echo "$line"
done)
[ -z "$missing" ] || die "config fragments not honoured by Kconfig:
$missing"

# Paths relative to the kernel dir, so builds in other cache dirs hit too.
export CCACHE_DIR="$KVM_GMEM_CACHE/ccache" CCACHE_MAXSIZE=5G CCACHE_BASEDIR="$out"
export KBUILD_BUILD_TIMESTAMP="2026-01-01" KBUILD_BUILD_USER=kvm-gmem KBUILD_BUILD_HOST=kvm-gmem
step "compiling (log: $obj/build.log)" >&2
make -C "$src" O="$obj" CC="ccache gcc" -j"$(nproc)" bzImage modules > "$obj/build.log" 2>&1 ||
	{ tail -30 "$obj/build.log" >&2; die "shim kernel build failed (log: $obj/build.log)"; }
kver=$(make -s -C "$src" O="$obj" kernelrelease)
rm -rf "$out/lib"
make -s -C "$src" O="$obj" INSTALL_MOD_PATH="$out" modules_install >&2
cp "$obj/arch/x86/boot/bzImage" "$out/vmlinuz"
echo "$kver" > "$out/kver"
touch "$out/.complete"
# Kernels of older inputs can never be used again: free their 2 GB.
prune_old "$out" "$KVM_GMEM_CACHE"/kernels/shim-*
step "shim kernel $kver ready: $(du -h "$out/vmlinuz" | cut -f1) bzImage" >&2
echo "$out"
