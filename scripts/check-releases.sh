#!/bin/bash
# make check's step for Debian's kernel updates: for every linux-source-6.12
# in Debian 12's archive (bookworm-security, bookworm-backports) and Debian
# 13's (trixie, trixie-security), our series applies with zero fuzz and the
# modules build against that release's headers, with their export CRCs
# checked against its Module.symvers. Modules only, no debug info, no guest:
# the newest of each Debian release is not built here, the tiers test it
# (Debian 12) and the Debian 13 step builds it.
# A release's result is kept in the cache under a hash of everything its
# build reads (the source and headers packages' SHA256 in the archive's
# index, the series, the build scripts, the compiler), so a release whose
# inputs did not change is not built again, and any change builds it again.
# The series is made on the newest release and need not apply to older
# ones: debian/control's minimum linux-source-6.12 says from which release
# on it does. Below it the series must not apply (a stale minimum fails),
# from it on it must apply and build.
# Results: build/results/releases/ (a log per release, summary.txt).
#   check-releases.sh [DEBIAN:VERSION...]   default: every release in the archives
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
results="$top/build/results/releases"
rm -rf "$results"
mkdir -p "$results" "$KVM_GMEM_CACHE/releases"

# The newest linux-source-6.12 of each Debian release (the tiers' and the
# Debian 13 step's).
declare -A newest
for debian in 12 13; do
	newest[$debian]=$(DEBIAN=$debian "$top/scripts/kernel-version.sh" pkgver)
done

# The releases: DEBIAN:VERSION, the newest of each Debian release left out.
releases=("$@")
if [ ${#releases[@]} = 0 ]; then
	for debian in 12 13; do
		suites=(bookworm bookworm-backports)
		[ "$debian" = 12 ] || suites=(trixie)
		for suite in "${suites[@]}"; do
			for v in $("$top/scripts/debian-archive.sh" "$suite" versions linux-source-6.12); do
				[ "$v" = "${newest[$debian]}" ] || releases+=("$debian:$v")
			done
		done
	done
fi

# What every build reads besides its packages.
tools_hash=$( { hash_inputs "$0" "$top"/scripts/{prepare,build-modules,check-crc,lib,kernel-version,headers,build-root,debian-archive}.sh \
	"$top/Kbuild" "$top/VERSION" $(series_files "$top/src"); patch --version | head -n 1; } | sha256sum | cut -c1-16)

# The oldest linux-source-6.12 the series applies to, as the package says
# (debian/control: linux-source-6.12 (>= VERSION)).
min=$(sed -n 's/^ *linux-source-6\.12 (>= \([^)]*\)),*$/\1/p' "$top/debian/control")
[ -n "$min" ] || die "debian/control names no minimum linux-source-6.12 (>= VERSION)"
for debian in 12 13; do
	dpkg --compare-versions "${newest[$debian]}" ge "$min" ||
		die "Debian $debian's newest linux-source-6.12 ${newest[$debian]} is below the package's minimum $min"
done

# Per Debian release: the compiler (the build root's name is the hash of
# what it is made from; made now if missing). Per suite: the index records
# of the packages a build reads, in one apt-cache run.
declare -A compilers
records="$results/.records"
: >"$records"
for release in "${releases[@]}"; do
	debian=${release%%:*} version=${release#*:}
	if [ -z "${compilers[$debian]:-}" ]; then
		if [ "$debian" = "$host_debian" ]; then
			compilers[$debian]=$("$(DEBIAN=$debian "$top/scripts/kernel-version.sh" gcc)" --version | head -n 1)
		else
			DEBIAN=$debian "$top/scripts/build-root.sh" /tmp -- true
			compilers[$debian]=$(DEBIAN=$debian bash -c '. "$1/scripts/lib.sh"; ls -d "$KVM_GMEM_CACHE/build-root/$debian_suite"-*/' _ "$top" | head -n 1)
			compilers[$debian]=$(basename "${compilers[$debian]}")
		fi
	fi
done
declare -A suite_pkgs
for release in "${releases[@]}"; do
	debian=${release%%:*} version=${release#*:}
	suite=$(DEBIAN=$debian bash -c '. "$1/scripts/lib.sh"; archive_suite "$2"' _ "$top" "$version")
	abi=$(DEBIAN=$debian KVM_GMEM_PKGVER=$version "$top/scripts/kernel-version.sh" abi)
	suite_pkgs[$suite]+=" linux-source-6.12 linux-headers-$abi-amd64 linux-headers-$abi-common linux-kbuild-$abi"
done
for suite in "${!suite_pkgs[@]}"; do
	# shellcheck disable=SC2086 # one word per package
	"$top/scripts/debian-archive.sh" "$suite" records $(tr ' ' '\n' <<<"${suite_pkgs[$suite]}" | sort -u) >>"$records"
done

pass=0 fail=0 below=0 nokernel=0
: >"$results/summary.txt"
for release in "${releases[@]}"; do
	debian=${release%%:*} version=${release#*:}
	log="$results/$version.log"
	t0=$(date +%s)
	abi=$(DEBIAN=$debian KVM_GMEM_PKGVER=$version "$top/scripts/kernel-version.sh" abi)
	kver=$abi-amd64
	compiler=${compilers[$debian]}
	# The archive's SHA256 of each package the build reads, "" if absent.
	hashes=()
	for pkg in linux-source-6.12 "linux-headers-$kver" "linux-headers-$abi-common" "linux-kbuild-$abi"; do
		hashes+=("$(awk -v p="$pkg" -v v="$version" '$1 == p && $2 == v { print $3; exit }' "$records")")
	done
	# A linux-source-6.12 without a kernel of its version (a source-only
	# upload: trixie's 6.12.115-2): nothing to build for.
	if [ -z "${hashes[1]}" ]; then
		printf 'Debian %s  %-20s %-22s ok, no kernel: the archive has no linux-headers-%s at this version\n' \
			"$debian" "$version" "$kver" "$kver" | tee -a "$results/summary.txt"
		nokernel=$((nokernel + 1))
		continue
	fi
	for h in "${hashes[@]}"; do
		[ -n "$h" ] || die "the archive's index has linux-headers-$kver $version but not all of its packages: ${hashes[*]}"
	done
	key=$(echo "$tools_hash $debian $version $compiler ${hashes[*]}" | sha256sum | cut -c1-16)
	cached="$KVM_GMEM_CACHE/releases/$version-$key"
	if [ -f "$cached.result" ]; then
		cp "$cached.log" "$log"
		result=$(cat "$cached.result")
		how="the result kept for these inputs ($key)"
	else
		step "Debian $debian, linux-source-6.12 $version ($kver): series, modules, CRCs"
		rc=0
		(
			export DEBIAN=$debian KVM_GMEM_PKGVER=$version KVM_GMEM_MODULES_ONLY=1 KVM_GMEM_DEBUG_INFO=n
			# As a dkms build of the package for that kernel would.
			export KVM_GMEM_ALLOW_OFFSETS=1
			export BUILD_SRC="$top/build/releases/src-$version" BUILD_OBJ="$top/build/releases/obj-$version"
			# Each download first: one that fails is not the series' fault.
			. "$top/scripts/lib.sh"
			release_source_deb "$version" >/dev/null || exit 12
			"$top/scripts/prepare.sh" || exit 10
			kdir=$("$top/scripts/headers.sh" "$kver") || exit 12
			"$top/scripts/build-modules.sh" "$kver" "$kdir" || exit 11
		) >"$log" 2>&1 || rc=$?
		if [ "$rc" = 12 ]; then
			cat "$log" >&2
			die "downloading linux-source-6.12 $version or its headers failed"
		fi
		case $rc in
		0) result="PASS" ;;
		10) result="NOT APPLIED: $(sed -n 's/^error: patch does not apply cleanly ([^)]*): //p' "$log" | head -n 1)" ;;
		11) result="FAIL: the modules do not build or their CRCs differ: $(grep -m1 -E 'error|CRC|differ' "$log" || tail -n 1 "$log")" ;;
		*) result="FAIL: exit $rc: $(tail -n 1 "$log")" ;;
		esac
		rm -rf "$top/build/releases/src-$version" "$top/build/releases/obj-$version"
		cp "$log" "$cached.log.tmp"
		echo "$result" >"$cached.result.tmp"
		mv "$cached.log.tmp" "$cached.log"
		mv "$cached.result.tmp" "$cached.result"
		prune_old "$cached.result" "$KVM_GMEM_CACHE/releases/$version-"*.result
		prune_old "$cached.log" "$KVM_GMEM_CACHE/releases/$version-"*.log
		how="ran in $(($(date +%s) - t0)) s"
	fi
	# Below the package's minimum the series must not apply (else the
	# minimum is stale); from it on, it must apply and build.
	if dpkg --compare-versions "$version" lt "$min"; then
		case "$result" in
		"NOT APPLIED: "*) verdict="ok, below linux-source-6.12 $min" below=$((below + 1)) ;;
		*) verdict="PROBLEM: below the package's minimum ($min in debian/control), but not 'NOT APPLIED'"
		   fail=$((fail + 1)) ;;
		esac
	elif [ "$result" = PASS ]; then
		verdict=ok pass=$((pass + 1))
	else
		verdict="PROBLEM: at or above the package's minimum ($min)" fail=$((fail + 1))
	fi
	printf 'Debian %s  %-20s %-22s %s: %s (%s)\n' "$debian" "$version" "$kver" "$verdict" "$result" "$how" |
		tee -a "$results/summary.txt"
done
step "releases: $pass built, $below below the package's minimum (series not applied), $nokernel without a kernel, $fail problems (build/results/releases/summary.txt)"
[ "$fail" = 0 ]
