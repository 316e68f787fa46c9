# Shared shell helpers for kvm-gmem tooling. Source it; do not run it.

# Caches live outside the clone; deleting them only costs time.
: "${KVM_GMEM_CACHE:=${XDG_CACHE_HOME:-$HOME/.cache}/kvm-gmem}"
export KVM_GMEM_CACHE

: "${KVM_GMEM_T0:=$(date +%s)}"
export KVM_GMEM_T0

# DEBIAN=12 (bookworm) or 13 (trixie): the Debian release whose 6.12 kernel
# the modules are built for; by default the build host's own. The host's
# release builds from the installed linux-source-6.12 with the host's
# compiler; the other one from its archive, into the cache, in a build root
# of that release (scripts/build-root.sh): the two source packages have one
# name, and each kernel wants its release's compiler.
host_debian=$(cut -d. -f1 /etc/debian_version 2>/dev/null || true)
case "$host_debian" in 12|13) ;; *) host_debian=12 ;; esac
: "${DEBIAN:=$host_debian}"
export DEBIAN
# debian_gcc: the compiler the release's kernel was built with (and that
# its linux-headers package depends on).
case "$DEBIAN" in
12) debian_suite=bookworm debian_gcc=gcc-12 ;;
13) debian_suite=trixie debian_gcc=gcc-14 ;;
*)  printf 'error: DEBIAN=%s: 12 (bookworm) or 13 (trixie)\n' "$DEBIAN" >&2; exit 1 ;;
esac
debian_native=; [ "$DEBIAN" != "$host_debian" ] || debian_native=1

# release_build_src TOP: where prepare.sh puts the series applied to the
# release's tree: build/src for the host's release, build/src-debNN else.
release_build_src() {
	if [ -n "$debian_native" ]; then echo "$1/build/src"; else echo "$1/build/src-deb$DEBIAN"; fi
}

# KVM_GMEM_PKGVER=VERSION (scripts/check-releases.sh): build for that
# linux-source-6.12 of the release, not the installed (or newest) one; its
# source and headers packages come from the archive.

# archive_suite VERSION: the suite of debian-archive.sh that has it
# (bookworm-backports for a ~bpo12 version).
archive_suite() {
	case "$1" in
	*~bpo*) echo "$debian_suite-backports" ;;
	*) echo "$debian_suite" ;;
	esac
}

# release_source_deb VERSION: a linux-source-6.12 package from the archive
# (another release than the host's, or KVM_GMEM_PKGVER), downloaded into the
# cache once; prints its path.
release_source_deb() {
	local suite debs deb
	suite=$(archive_suite "$1")
	debs="$KVM_GMEM_CACHE/debs/$suite"
	deb="$debs/linux-source-6.12_${1}_all.deb"
	[ -f "$deb" ] || "$(dirname "${BASH_SOURCE[0]}")/debian-archive.sh" "$suite" \
		download "$debs" "linux-source-6.12=$1" >&2
	echo "$deb"
}

# release_source_tarball VERSION: the release's linux-source-6.12.tar.xz on
# stdout: the host's installed one, or the one inside the package from the
# archive (never extracted into the cache for that).
release_source_tarball() {
	local tarball=/usr/src/linux-source-6.12.tar.xz
	if [ -n "$debian_native" ] && [ -z "${KVM_GMEM_PKGVER:-}" ]; then
		[ -r "$tarball" ] || die "$tarball missing: run 'make deps' (apt-get install linux-source-6.12)"
		cat "$tarball"
	else
		dpkg-deb --fsys-tarfile "$(release_source_deb "$1")" | tar -xO ".$tarball"
	fi
}

# step "message": one progress line with seconds since the run started.
step() {
	printf '[%4ds] %s\n' $(( $(date +%s) - KVM_GMEM_T0 )) "$*"
}

# children_cpu PID: CPU seconds (user + system) of the children PID has
# waited for: what a step cost when its wall time hides a shared CPU.
children_cpu() {
	awk '{ sub(/^.*\) /, ""); printf "%d\n", ($14 + $15) / 100 }' "/proc/$1/stat"
}

die() {
	printf 'error: %s\n' "$*" >&2
	exit 1
}

# summary_wrong_failure SUMMARY: a tier run's summary (qemu/run-tier.sh)
# names a crash, a timeout, a splat, a tainted kernel or a judge error: a
# must-fail run that failed so proves nothing about what it removed.
summary_wrong_failure() {
	grep -qE '^- (kernel log errors|guest TIMED OUT|guest CRASHED|kernel tainted|the judge)' "$1"
}

# cache_lock NAME: hold the cache's lock NAME (on fd 9) until this script
# exits, so that two runs never build the same cache entry at once (make
# check builds the guest kernels in the background while its first steps
# need the tree): the second waits, then finds the entry complete.
cache_lock() {
	mkdir -p "$KVM_GMEM_CACHE/.locks"
	exec 9>"$KVM_GMEM_CACHE/.locks/$1.lock"
	flock -n 9 && return 0
	step "waiting for another run to finish $1" >&2
	flock 9
}

# module_ccache: ccache as the module builds use it (depend mode, the
# cache's one directory, no base dir: ccache sees fixed paths instead).
module_ccache() {
	export CCACHE_DIR="$KVM_GMEM_CACHE/ccache" CCACHE_MAXSIZE=8G CCACHE_DEPEND=1
	unset CCACHE_BASEDIR
}

# sync_module_sources SRC OBJ: copy the sources the modules build from (a
# build/src tree) into their object dir by content, without times: files
# whose content did not change keep their mtimes, so kbuild rebuilds only
# what changed.
sync_module_sources() {
	mkdir -p "$2"
	rsync -rl --checksum "$1/virt" "$1/arch" "$1/include" "$2/"
}

# kbuild_path TOP OBJ: the fixed path outside the clone through which
# build-modules.sh builds OBJ (a dir in the clone TOP), so that ccache sees
# the same paths from every clone (build/obj/X -> work/kbuild/build+obj+X).
kbuild_path() {
	local rel=${2#"$1"/}
	echo "$KVM_GMEM_CACHE/work/kbuild/${rel//\//+}"
}

# dmap_probe_dir TOP KDIR: where qemu/test-tier.sh builds the test module
# gmem_dmap_probe.ko for the kernel in KDIR (build-kernel.sh's dir): a dir
# named after the module's sources and the kernel, shared by every run.
dmap_probe_dir() {
	echo "$1/build/tests-kmod/$( { hash_inputs "$1"/tests/kmod/* "$1/tests/include/gmem_dmap_probe.h"
		echo "$2"; } | sha256sum | cut -c1-16)"
}

# hash_inputs FILE...: short content hash of files (names and contents), used as cache keys.
hash_inputs() {
	for f in "$@"; do
		printf '%s\n' "$(basename "$f")"
		cat "$f"
	done | sha256sum | cut -c1-16
}

# need_tools CMD:PACKAGE...: make sure each command exists. As root, install the
# missing packages; otherwise stop with the exact command to run.
need_tools() {
	local spec missing=()
	for spec in "$@"; do
		command -v "${spec%%:*}" >/dev/null 2>&1 || missing+=("${spec#*:}")
	done
	((${#missing[@]})) || return 0
	install_packages "${missing[@]}"
}

# need_packages PACKAGE...: same, for packages checked by name.
need_packages() {
	local p missing=()
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	((${#missing[@]})) || return 0
	install_packages "${missing[@]}"
}

# install_packages PACKAGE...: apt-get install them as root, else die saying how.
install_packages() {
	local missing=("$@")
	local cmd="apt-get install -y --no-install-recommends ${missing[*]}"
	[[ $(id -u) == 0 ]] || die "missing packages; run as root: apt-get update && $cmd"
	step "installing ${missing[*]}" >&2
	# A fresh machine may have no package lists yet.
	export DEBIAN_FRONTEND=noninteractive
	$cmd >&2 || { apt-get update -q >&2 && $cmd >&2; } || die "failed: $cmd"
}

# prune_old KEEP PATH...: delete the PATHs other than KEEP. Called after a new
# cache entry is made, so entries left by older inputs do not pile up. An
# entry used in the last 3 hours stays (its mtime, or for a directory that
# has one its .used stamp's): another clone on the same cache may be running
# on it (a developer's tree beside a CI clone: a shim kernel deleted under
# a running tier once failed it); the next new entry after that prunes it.
prune_old() {
	local keep=$1 p stamp
	shift
	for p in "$@"; do
		[[ "$p" != "$keep" && -e "$p" ]] || continue
		stamp=$p
		[[ ! -e "$p/.used" ]] || stamp=$p/.used
		[[ -z "$(find "$stamp" -maxdepth 0 -mmin -180 2>/dev/null)" ]] || continue
		rm -rf --one-file-system "$p"
	done
}

# series_files DIR: the patches DIR/series lists, in order, as paths.
series_files() {
	grep -v '^#' "$1/series" | grep . | sed "s|^|$1/|"
}
