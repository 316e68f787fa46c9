#!/bin/bash
# Build mainline's own guest_memfd selftests, unmodified, from the newest
# Linux source Debian ships (sid's linux-source-$SERIES), against that
# release's uapi headers: "a VMM written for current upstream" that the tiers
# run against our modules. Nothing of it enters the repo: the .deb comes from
# the Debian archive through apt (scripts/debian-archive.sh), the build is cached in
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

version=$("$top/scripts/debian-archive.sh" sid version "linux-source-$SERIES") ||
	die "no linux-source-$SERIES in Debian sid (any more?): bump SERIES in $0"

key=$( { echo "$version"; cat "$0"; } | sha256sum | cut -c1-16)
cache="$KVM_GMEM_CACHE/mainline-selftests/$version-$key"
[ -f "$cache/.complete" ] || cache_lock "mainline-selftests-$key"
if [ ! -f "$cache/.complete" ]; then
	step "building mainline $SERIES selftests from linux-source-$SERIES $version: ${TESTS[*]}"
	rm -rf "$cache"
	mkdir -p "$cache/debs"
	"$top/scripts/debian-archive.sh" sid download "$cache/debs" "linux-source-$SERIES=$version"
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
