#!/bin/bash
# Build kvm.ko, kvm-amd.ko and kvm-intel.ko from build/src for one target
# kernel, in build/obj/<kver>/, then check the export CRCs against it.
#   build-modules.sh [KVER [KDIR]]
# Defaults: the Debian kernel matching the release's linux-source-6.12 (the
# installed one; DEBIAN=13: trixie's), with its headers fetched into the cache.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
kver=${1:-$("$top/scripts/kernel-version.sh" kver)}
kdir=${2:-$("$top/scripts/headers.sh" "$kver")}
src=${BUILD_SRC:-$(release_build_src "$top")}
obj=${BUILD_OBJ:-$top/build/obj/$kver}
[ -f "$kdir/Module.symvers" ] || die "$kdir is not a kernel build directory (no Module.symvers)"

# One build of an object dir at a time, sources, target.mk and kbuild: make
# check starts the shim tier (which builds its modules) and the shim
# modules' own step together, and the second must find the first's done.
mkdir -p "$obj"
exec 8>"$obj/.build.lock"
flock -n 8 || { step "waiting for another build of $obj" >&2; flock 8; }

sync_module_sources "$src" "$obj"
rsync -a "$top/Kbuild" "$top/VERSION" "$obj/"

# Target-kernel facts, detected here once and recorded next to the objects.
hook=n
grep -qw guestmem_register_free_ops "$kdir/Module.symvers" && hook=y
put=n
grep -qw guestmem_put_notify_begin "$kdir/Module.symvers" && put=y
mpol=n
grep -qw mpol_set_shared_policy "$kdir/Module.symvers" && mpol=y
# GUEST_MEMFD_FLAG_NO_DIRECT_MAP needs all four (mm-shim 0007, 0010).
ndm=n
grep -qw set_direct_map_invalid_noflush "$kdir/Module.symvers" &&
	grep -qw set_direct_map_valid_noflush "$kdir/Module.symvers" &&
	grep -qw flush_tlb_kernel_range "$kdir/Module.symvers" &&
	grep -qw guestmem_no_direct_map_get "$kdir/Module.symvers" && ndm=y
# userfaultfd on guest_memfd mappings: mm's vm_uffd_ops (mm-shim 0008) and
# handle_userfault() exported to kvm (0009).
uffd=n
grep -qw handle_userfault "$kdir/Module.symvers" && uffd=y
printf 'KVM_GMEM_MM_HOOK := %s\nKVM_GMEM_MM_PUT_NOTIFY := %s\nKVM_GMEM_MM_MPOL := %s\nKVM_GMEM_MM_NO_DIRECT_MAP := %s\nKVM_GMEM_MM_UFFD := %s\n' \
	"$hook" "$put" "$mpol" "$ndm" "$uffd" > "$obj/target.mk.new"
cmp -s "$obj/target.mk.new" "$obj/target.mk" 2>/dev/null &&
	rm "$obj/target.mk.new" || mv "$obj/target.mk.new" "$obj/target.mk"

# KVM_GMEM_DEBUG_INFO=n: without the target config's -g (and BTF), a fifth less
# compile time, for builds that only have to compile (the series check).
# Debug info changes no layout and no export CRC.
# KVM_GMEM_COMPILE_ONLY=1 (the series check): that and no symbol versions.
# genksyms preprocesses each exporting file again, uncached: four fifths of
# a rebuild whose objects ccache has (30 CPU-s of 37). Such modules cannot
# load into a kernel with CONFIG_MODVERSIONS, so there is no CRC check.
compile_only=${KVM_GMEM_COMPILE_ONLY:-}
make_args=()
[ "${KVM_GMEM_DEBUG_INFO:-}" != n ] && [ -z "$compile_only" ] ||
	make_args+=(CONFIG_DEBUG_INFO= CONFIG_DEBUG_INFO_BTF_MODULES=)
[ -z "$compile_only" ] || make_args+=(CONFIG_MODVERSIONS=)
# KVM_GMEM_OBJECTS="virt/kvm/x.o ..." (the series check, between its full
# builds): compile just these objects; no link, no modules, no CRC check.
targets=(modules)
[ -z "${KVM_GMEM_OBJECTS:-}" ] || read -ra targets <<< "$KVM_GMEM_OBJECTS"

# ccache in depend mode, as for the kernels (build-kernel.sh), keyed by what
# each object is compiled from, so that a rebuild of the same sources
# (the series check's patch-by-patch builds, a fresh clone's make check)
# compiles nothing again. Not in another release's build root, which has no
# ccache.
nodebug=${make_args[*]:+, no debug info}
[ -z "$compile_only" ] || nodebug=", compile only (no debug info, no symbol versions)"
cc=
kbuild_dir=$obj
# A user's dkms build (KVM_GMEM_MODULES_ONLY) writes nothing outside its
# build dir: no ccache unless asked (make check's native dkms build).
use_ccache=1
[ -z "${KVM_GMEM_MODULES_ONLY:-}" ] || [ -n "${KVM_GMEM_DKMS_CCACHE:-}" ] || use_ccache=
if [ -n "$debian_native" ] && [ -n "$use_ccache" ] && command -v ccache > /dev/null; then
	module_ccache
	cc=", ccache"
	# The compiler sees the object dir's path (in flags, file names, debug
	# info), and ccache hashes it: a clone at a new path would compile
	# everything again. A dir in the clone is built through a symlink at a
	# fixed path outside it instead, named after its place in the clone,
	# one build at a time per name.
	case "$obj" in
	"$top"/*)
		kbuild_dir=$(kbuild_path "$top" "$obj")
		mkdir -p "$(dirname "$kbuild_dir")"
		cache_lock "kbuild-$(basename "$kbuild_dir")"
		ln -sfn "$obj" "$kbuild_dir"
		;;
	esac
	# Debian's headers know ccache themselves; our kernels use plain gcc.
	if grep -qs DEBIAN_KERNEL_USE_CCACHE "$kdir/.kernelvariables"; then
		make_args+=(DEBIAN_KERNEL_USE_CCACHE=1)
	else
		make_args+=(CC="ccache gcc")
	fi
fi

# Another release's headers build in its build root (its compiler, its libc).
in_root=()
[ -n "$debian_native" ] ||
	in_root=("$top/scripts/build-root.sh" "${kdir%/usr/src/*}" "$obj" --)

# A full build records a hash of its inputs (the sources it copied, Kbuild,
# the target kernel's symbols and config, the compiler, this script, the
# make arguments and every KVM_GMEM_ setting Kbuild may read): a build of
# the same inputs into the same dir has nothing to do and ends here, before
# make (3-8 s for a no-op under kbuild). make check builds the must-fail
# runs' modules ahead, on the core a timed tier leaves idle.
inputs=
if [ -z "${KVM_GMEM_OBJECTS:-}" ]; then
	inputs=$( { (cd "$src" && find virt arch include -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
		    sha256sum "$obj/Kbuild" "$obj/VERSION" "$obj/target.mk" "$0" "$kdir/Module.symvers" "$kdir/.config" 2>&1
		    echo "$kver $kdir $kbuild_dir ${in_root[*]:-native} ${make_args[*]} ${targets[*]}"
		    env | grep '^KVM_GMEM_' | grep -vE '^KVM_GMEM_(T0|CACHE)=' | LC_ALL=C sort
		    # The compiler: the host's, or the build root's (named after it).
		    if [ -n "$debian_native" ]; then "$debian_gcc" --version | head -n 1; fi
		  } | sha256sum | cut -c1-16)
	if [ -f "$obj/.built-inputs" ] && [ "$(cat "$obj/.built-inputs")" = "$inputs" ] &&
	   [ -f "$obj/kvm.ko" ] && [ -f "$obj/kvm-amd.ko" ] && [ -f "$obj/kvm-intel.ko" ]; then
		step "modules for $kver up to date: built from these inputs ($inputs) before, nothing to do"
		exit 0
	fi
	rm -f "$obj/.built-inputs"
fi

step "building modules for $kver (mm hook: $hook, put notify: $put, mm shared policy: $mpol, no direct map: $ndm, userfaultfd: $uffd$nodebug$cc)"
"${in_root[@]}" make -C "$kdir" M="$kbuild_dir" -j"$(nproc)" ${V:+V=$V} "${make_args[@]}" "${targets[@]}"
if [ -n "${KVM_GMEM_OBJECTS:-}" ]; then
	step "compiled: ${targets[*]}"
	exit 0
fi
step "built: $(cd "$obj" && ls -1 kvm.ko kvm-amd.ko kvm-intel.ko | tr '\n' ' ')"
# A kernel of ours built without its own kvm modules (build-kernel.sh shim)
# has no kvm exports to compare: nothing there imports them but our modules.
if [ -n "$compile_only" ]; then
	step "CRC check: none, compiled without symbol versions"
elif [ -f "$kdir/kvm-gmem-no-kvm-modules" ]; then
	step "CRC check: none, $kdir has no kvm modules of its own"
else
	"$top/scripts/check-crc.sh" "$obj/Module.symvers" "$kdir/Module.symvers"
fi
[ -z "$inputs" ] || echo "$inputs" > "$obj/.built-inputs"
