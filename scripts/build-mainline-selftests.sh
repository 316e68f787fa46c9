#!/bin/bash
# Build mainline's own guest_memfd selftests, unmodified, from the newest
# Linux source Debian ships (sid's linux-source-$SERIES), against that
# release's uapi headers: "a VMM written for current upstream" that the tiers
# run against our modules. Nothing of it enters the repo: the .deb comes from
# the Debian archive through apt (signature checked), the build is cached in
# $KVM_GMEM_CACHE/mainline-selftests/<package version>-<hash of this script>/.
#   build-mainline-selftests.sh   -> build/mainline-selftests/mainline_<test>
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
# The mainline series whose selftests we hold ourselves to; a new series is
# a deliberate bump (its tests may check what our modules do not have yet).
SERIES=7.2
# The guest_memfd ABI. (Mainline's set_memory_region_test, which has 7.2's
# overlapping-bindings case, cannot run on 6.12: its MMIO-during-vectoring
# case, a 6.14 behaviour, never ends there. tests/gmem_bind_test.c has the
# binding cases.)
TESTS=(guest_memfd_test)
out="$top/build/mainline-selftests"

# Debian unstable's package lists, in a private apt state of the cache: the
# build host's own apt configuration is left as it is.
apt_dir="$KVM_GMEM_CACHE/apt-sid"
cache_lock apt-sid
mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial"
echo "deb http://deb.debian.org/debian sid main" > "$apt_dir/sources.list"
apt_opts=(-o Dir::Etc::SourceList="$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
	  -o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir"
	  -o Dir::Cache::archives="$apt_dir/archives" -o Debug::NoLocking=1
	  -o APT::Get::List-Cleanup=0)
step "sid package lists (for linux-source-$SERIES)"
apt-get "${apt_opts[@]}" -qq update > "$apt_dir/update.log" 2>&1 ||
	{ cat "$apt_dir/update.log"; die "apt-get update of Debian sid failed (see above)"; }
version=$(apt-cache "${apt_opts[@]}" show "linux-source-$SERIES" 2>/dev/null |
	sed -n 's/^Version: //p' | sort -V | tail -n 1)
[ -n "$version" ] || die "Debian sid has no linux-source-$SERIES any more: bump SERIES in $0"

key=$( { echo "$version"; cat "$0"; } | sha256sum | cut -c1-16)
cache="$KVM_GMEM_CACHE/mainline-selftests/$version-$key"
[ -f "$cache/.complete" ] || cache_lock "mainline-selftests-$key"
if [ ! -f "$cache/.complete" ]; then
	step "building mainline $SERIES selftests from linux-source-$SERIES $version: ${TESTS[*]}"
	rm -rf "$cache"
	mkdir -p "$cache/debs"
	(cd "$cache/debs" && apt-get "${apt_opts[@]}" -q download "linux-source-$SERIES=$version") \
		> "$cache/download.log" 2>&1 ||
		{ cat "$cache/download.log"; die "apt-get download linux-source-$SERIES=$version failed"; }
	# Only what the selftests and the uapi headers need of the tree.
	dpkg-deb --fsys-tarfile "$cache/debs"/linux-source-"$SERIES"_*.deb |
		tar -xO "./usr/src/linux-source-$SERIES.tar.xz" |
		tar -xJ -C "$cache" --wildcards "linux-source-$SERIES/Makefile" \
			"linux-source-$SERIES/scripts/*" "linux-source-$SERIES/tools/*" \
			"linux-source-$SERIES/include/uapi/*" "linux-source-$SERIES/arch/x86/include/uapi/*" \
			"linux-source-$SERIES/arch/x86/entry/syscalls/*" "linux-source-$SERIES/arch/x86/Makefile*" \
			"linux-source-$SERIES/include/asm-generic/*"
	rm -rf "$cache/debs"
	tree="$cache/linux-source-$SERIES"
	make -s -C "$tree" ARCH=x86_64 headers_install INSTALL_HDR_PATH="$cache/usr" \
		> "$cache/build.log" 2>&1 ||
		{ tail -20 "$cache/build.log"; die "mainline $SERIES headers_install failed (log: $cache/build.log)"; }
	# Static, like the tree's selftests (build-selftests.sh): any guest runs them.
	targets=()
	for t in "${TESTS[@]}"; do targets+=("$cache/bin/$t"); done
	make -s -C "$tree/tools/testing/selftests/kvm" -j"$(nproc)" ARCH=x86 OUTPUT="$cache/bin" \
		EXTRA_CFLAGS=-static KHDR_INCLUDES="-isystem $cache/usr/include" "${targets[@]}" \
		>> "$cache/build.log" 2>&1 ||
		{ tail -20 "$cache/build.log"; die "mainline $SERIES selftests do not build (log: $cache/build.log)"; }
	echo "$version" > "$cache/version"
	rm -rf "$tree"
	touch "$cache/.complete"
	prune_old "$cache" "$KVM_GMEM_CACHE/mainline-selftests"/*
fi

rm -rf "$out"
mkdir -p "$out"
for t in "${TESTS[@]}"; do cp "$cache/bin/$t" "$out/mainline_$t"; done
cp "$cache/version" "$out/version"
step "mainline selftests ready: linux-source-$SERIES $version: ${TESTS[*]}"
