#!/bin/bash
# Build a custom guest kernel from the installed linux-source-6.12, cached in
# $KVM_GMEM_CACHE/kernels/<target>-<hash of all inputs>/, with ccache.
#
#   build-kernel.sh [shim|arm64]
#     shim   x86_64 kernel with src/mm-shim; KVM=m, replaced by our modules
#     arm64  arm64 kernel (cross-built) with src/mm-shim, then the KVM series
#            src/series and src/arm64/series: arm64 KVM can only be built in
#
# The config is allnoconfig plus the target's fragments. Prints the kernel
# directory, which holds what qemu/run-tier.sh --kernel wants: vmlinuz, kver,
# arch, [lib/modules/<kver>/], and build/ (the O= dir for modules).
#
# KERNEL_MUTANT=NAME:PATCH (scripts/check-mutants.sh): PATCH applied after
# the series makes a kernel of its own, kernels/mutant-NAME-<hash>, for the
# must-fail run of a feature built into the kernel (arm64's KVM); ccache
# has every object but those PATCH changes.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
target=${1:-shim}
tree=$("$top/scripts/tree.sh")

mapfile -t patches < <(series_files "$top/src/mm-shim")
case "$target" in
shim)
	arch=x86_64
	make_args=(ARCH=x86_64 CC="ccache gcc")
	image=arch/x86/boot/bzImage
	fragments=("$top"/src/mm-shim/config/*.config)
	# The kernel's own kvm modules are never loaded: ours, built out of
	# tree against this kernel, replace them. So build only the other
	# modules (CONFIG_ option and module), which saves a KASAN build of KVM
	# (~70 CPU-s cold, and a rebuild whenever an mm-shim header changes).
	# Every other =m option must be named here (checked below).
	module_of=(CONFIG_X86_MSR=arch/x86/kernel/msr.ko CONFIG_IRQ_BYPASS_MANAGER=virt/lib/irqbypass.ko)
	not_built=(CONFIG_KVM CONFIG_KVM_X86 CONFIG_KVM_AMD CONFIG_KVM_INTEL CONFIG_HAVE_KVM_IRQ_BYPASS)
	;;
arm64)
	arch=arm64
	need_tools aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu
	make_args=(ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu- CC="ccache aarch64-linux-gnu-gcc")
	image=arch/arm64/boot/Image
	mapfile -t -O "${#patches[@]}" patches < <(series_files "$top/src")
	mapfile -t -O "${#patches[@]}" patches < <(series_files "$top/src/arm64")
	# The same debug options as the x86 shim kernel.
	fragments=("$top"/src/arm64/config/*.config "$top/src/mm-shim/config/debug.config")
	module_of=()
	not_built=()
	;;
*) die "usage: $0 [shim|arm64]" ;;
esac

name=$target
if [ -n "${KERNEL_MUTANT:-}" ]; then
	name="mutant-${KERNEL_MUTANT%%:*}"
	patches+=("${KERNEL_MUTANT#*:}")
	[ -f "${patches[-1]}" ] || die "KERNEL_MUTANT: no patch ${patches[-1]}"
fi
key=$( { basename "$tree"; cat "$0" "${patches[@]}" "${fragments[@]}"; } | sha256sum | cut -c1-16)
out="$KVM_GMEM_CACHE/kernels/$name-$key"
[ -f "$out/.complete" ] || cache_lock "kernel-$name-$key"
# Each use stamps it: prune_old() keeps what another clone uses.
if [ -f "$out/.complete" ]; then
	touch "$out/.used"
	echo "$out"
	exit 0
fi

step "building the $name kernel ($key): tree + ${#patches[@]} patches" >&2
mkdir -p "$out"
src="$out/src"
if [ ! -f "$src/.patched" ]; then
	rm -rf "$src"
	# Hard links are enough: patch replaces the files it changes.
	cp -al "$tree" "$src"
	for p in "${patches[@]}"; do
		patch -d "$src" -p1 -F0 -N -s --no-backup-if-mismatch < "$p" >&2 ||
			die "patch does not apply: ${p#$top/}"
	done
	touch "$src/.patched"
fi

obj="$out/build"
mkdir -p "$obj"
cat "${fragments[@]}" > "$obj/fragments.config"
make -s -C "$src" O="$obj" "${make_args[@]}" KCONFIG_ALLCONFIG="$obj/fragments.config" allnoconfig >&2
# Every option the fragments ask for must survive Kconfig, or they lie.
missing=$(grep -h '^CONFIG_' "${fragments[@]}" | while read -r line; do
	grep -qxF "$line" "$obj/.config" || echo "$line"
done)
[ -z "$missing" ] || die "config fragments not honoured by Kconfig:
$missing"

# Paths relative to the kernel dir, so builds in other cache dirs hit too.
# Depend mode: a miss costs the compile alone. In its default mode ccache
# runs the preprocessor first on every miss, a third more CPU for a cold
# kernel (30 shim objects: 48 s against 36 s for gcc alone, 36-37 s in
# depend mode); hits still come from the direct-mode manifests, which
# kbuild's -MMD dependency files feed.
export CCACHE_DIR="$KVM_GMEM_CACHE/ccache" CCACHE_MAXSIZE=8G CCACHE_BASEDIR="$out" CCACHE_DEPEND=1
export KBUILD_BUILD_TIMESTAMP="2026-01-01" KBUILD_BUILD_USER=kvm-gmem KBUILD_BUILD_HOST=kvm-gmem
targets=("$(basename "$image")")
modorder=()
if grep -q '^CONFIG_MODULES=y' "$obj/.config"; then
	if [ ${#module_of[@]} -eq 0 ] && [ ${#not_built[@]} -eq 0 ]; then
		targets+=(modules)
	else
		for opt in $(sed -n 's/^\(CONFIG_[A-Z0-9_]*\)=m$/\1/p' "$obj/.config"); do
			ko=$(printf '%s\n' "${module_of[@]}" | sed -n "s|^$opt=||p")
			if [ -n "$ko" ]; then
				targets+=("$ko")
				modorder+=("${ko%.ko}.o")
			# Not grep -q: with pipefail, its early exit can fail the
			# pipeline by SIGPIPE (a cold make check did: CONFIG_KVM).
			elif ! printf '%s\n' "${not_built[@]}" | grep -x "$opt" > /dev/null; then
				die "$opt=m: build-kernel.sh $target names no module for it (module_of) nor leaves it out (not_built)"
			fi
		done
		# build-modules.sh: no kvm exports of this kernel's own to check
		# CRCs against; nothing here imports them but our modules.
		echo "built without its kvm modules: ${not_built[*]}" > "$obj/kvm-gmem-no-kvm-modules"
	fi
fi
step "compiling ${targets[*]} (log: $obj/build.log)" >&2
make -C "$src" O="$obj" "${make_args[@]}" -j"$(nproc)" "${targets[@]}" > "$obj/build.log" 2>&1 ||
	{ grep -E 'error|Error' "$obj/build.log" | head -20 >&2; tail -20 "$obj/build.log" >&2
	  die "$target kernel build failed (log: $obj/build.log)"; }
kver=$(make -s -C "$src" O="$obj" "${make_args[@]}" kernelrelease)
rm -rf "$out/lib"
if grep -q '^CONFIG_MODULES=y' "$obj/.config"; then
	# What modules_install reads, which a build of named modules leaves out.
	[ ${#modorder[@]} -eq 0 ] || printf '%s\n' "${modorder[@]}" > "$obj/modules.order"
	make -s -C "$src" O="$obj" "${make_args[@]}" INSTALL_MOD_PATH="$out" modules_install >&2
fi
cp "$obj/$image" "$out/vmlinuz"
echo "$kver" > "$out/kver"
echo "$arch" > "$out/arch"
touch "$out/.complete" "$out/.used"
# Kernels of older inputs can never be used again: free their space.
prune_old "$out" "$KVM_GMEM_CACHE/kernels/$name"-*
step "$target kernel $kver ready: $(du -h "$out/vmlinuz" | cut -f1) $(basename "$image")" >&2
echo "$out"
