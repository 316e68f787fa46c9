#!/bin/bash
# The one prepare step: copy the KVM sources (and what the selftests need) out
# of the Debian tree into build/src, then apply src/series with zero fuzz.
#
#   prepare.sh [N]   apply only the first N patches (used by check-series)
#
# build/src is re-made whenever the tree version, the series or this script
# changes; nothing else may edit it.
#
# KVM_GMEM_ALLOW_OFFSETS=1: a hunk may apply at an offset (never with fuzz).
# KVM_GMEM_MODULES_ONLY=1 (dkms builds, see dkms.conf): take only the files
# below straight out of /usr/src/linux-source-6.12.tar.xz and skip the
# selftests' uapi headers, so nothing is written outside build/ (no cache,
# no 1.5 GB tree extracted in a dkms build). With DEBIAN naming another
# release than the host's (lib.sh), the tree is that release's and the
# result goes to build/src-debNN.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
limit=${1:-}
modules_only=${KVM_GMEM_MODULES_ONLY:-}
if [ -n "$modules_only" ]; then
	# Straight out of the release's tarball (lib.sh), which for another
	# release than the host's (make check's build of the Debian 13 modules)
	# is read out of its package, not extracted into the cache.
	version=$("$top/scripts/kernel-version.sh" pkgver)
	tree="linux-source-6.12 $version, Debian $DEBIAN (modules only)"
else
	tree=$("$top/scripts/tree.sh")
fi
out=${BUILD_SRC:-$(release_build_src "$top")}

# The part of the tree our modules and tests are built from.
tree_files=(
	virt/kvm
	arch/x86/kvm
	include/linux/kvm_host.h
	include/linux/kvm_types.h
	include/uapi/linux/kvm.h
	arch/x86/include/asm/kvm_host.h
	arch/x86/include/uapi/asm/kvm.h
	scripts/subarch.include
	tools/build
	tools/lib/rbtree.c
	tools/include
	tools/arch/x86/include
	tools/scripts
	tools/testing/selftests/lib.mk
	tools/testing/selftests/kselftest.h
	tools/testing/selftests/kselftest_harness.h
	tools/testing/selftests/kvm
	tools/testing/selftests/rseq
)

patches=()
while read -r p; do
	case "$p" in ''|'#'*) continue ;; esac
	patches+=("$top/src/$p")
done < "$top/src/series"
if [ -n "$limit" ]; then
	patches=("${patches[@]:0:$limit}")
fi

stamp=$( { cat "$0"; echo "$tree ${tree_files[*]}";
	   for p in "${patches[@]}"; do cat "$p"; done; } | sha256sum | cut -c1-16)
if [ -f "$out/.prepared" ] && [ "$(cat "$out/.prepared")" = "$stamp" ]; then
	exit 0
fi

step "preparing ${out#"$top"/} from $tree (${#patches[@]} patches)"
rm -rf "$out.tmp"
mkdir -p "$out.tmp"
if [ -n "$modules_only" ]; then
	release_source_tarball "$version" |
		tar -xJ -C "$out.tmp" --strip-components=1 "${tree_files[@]/#/linux-source-6.12/}"
else
	(cd "$tree" && cp -a --parents "${tree_files[@]}" "$out.tmp/")
fi

# Sanitized uapi headers for the selftests, made once per tree version.
if [ -z "$modules_only" ]; then
	uapi="$KVM_GMEM_CACHE/uapi/$(basename "$tree")"
	# make check's series check prepares its own copy at the same time.
	[ -f "$uapi/.complete" ] || cache_lock "uapi-$(basename "$tree")"
	if [ ! -f "$uapi/.complete" ]; then
		step "installing the tree's uapi headers into the cache"
		rm -rf "$uapi"
		make -s -C "$tree" O="$uapi/obj" ARCH=x86 INSTALL_HDR_PATH="$uapi" headers_install >/dev/null
		# headers_install.sh runs scripts/unifdef relative to its cwd: keep it.
		mkdir -p "$uapi/scripts"
		mv "$uapi/obj/scripts/unifdef" "$uapi/scripts/"
		rm -rf "$uapi/obj"
		touch "$uapi/.complete"
	fi
	mkdir -p "$out.tmp/usr"
	cp -a "$uapi/include" "$out.tmp/usr/"
fi

# Zero fuzz always. No offsets either where the series is made against the
# tree (the installed linux-source-6.12, Debian 13's newest). Another point
# release may have a hunk's exact context a few lines away: a dkms build for
# an older kernel and check-releases.sh allow that (KVM_GMEM_ALLOW_OFFSETS=1).
refused='fuzz|offset'
[ -z "${KVM_GMEM_ALLOW_OFFSETS:-}" ] || refused='fuzz'
for p in "${patches[@]}"; do
	if ! log=$(patch -d "$out.tmp" -p1 -F0 -N --no-backup-if-mismatch < "$p" 2>&1) ||
	   grep -qE "$refused" <<< "$log"; then
		printf '%s\n' "$log" >&2
		die "patch does not apply cleanly (${refused//|/, } refused): ${p#$top/}"
	fi
done

# Re-export our patched uapi headers for the selftests.
if [ -z "$modules_only" ]; then
	for h in linux/kvm.h asm/kvm.h; do
		src=include/uapi/$h
		[ "$h" = asm/kvm.h ] && src=arch/x86/include/uapi/$h
		(cd "$uapi" && sh "$tree/scripts/headers_install.sh" \
			"$out.tmp/$src" "$out.tmp/usr/include/$h")
	done
fi

# Update build/src by content: files that did not change keep their mtimes,
# so make rebuilds only what the new series really changed.
mkdir -p "$out"
rsync -rlc --delete "$out.tmp/" "$out/"
rm -rf "$out.tmp"
echo "$stamp" > "$out/.prepared"
step "${out#"$top"/} ready"
