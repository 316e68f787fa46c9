#!/bin/bash
# Install the Debian packages a target needs, or say exactly what to run.
#   install-deps.sh build|qemu|arm64|bench|deb|dkms|all
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# The host's own compiler (gcc-12 on bookworm): another release's kernel
# builds in its build root (scripts/build-root.sh).
host_gcc=gcc-12
[ "$host_debian" != 13 ] || host_gcc=gcc-14
build_pkgs="linux-source-6.12 make $host_gcc bc flex bison libelf-dev libssl-dev dwarves
	    kmod cpio rsync xz-utils patch perl python3 ccache"
qemu_pkgs="qemu-system-x86 qemu-utils debootstrap busybox-static e2fsprogs tmux file"
# The arm64 guest: cross compiler, QEMU, and Debian's arm64 packages for its
# root (qemu/rootfs-arm64.sh downloads them; apt needs the architecture).
arm64_pkgs="gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-system-arm cpio"
bench_pkgs="gnuplot-nox"	# make bench: the PNG chart
deb_pkgs="debhelper dh-dkms dkms lintian"	# make deb (lintian: make check)
# What a dkms build of the modules runs (make modules DKMS=1): the Depends of
# the kvm-gmem-dkms package, so they are only checked, never installed. (In
# dkms DEBIAN is the machine's own release: its kernel's compiler.)
dkms_pkgs="linux-source-6.12 make $debian_gcc rsync xz-utils patch kmod"

case "${1:-all}" in
build) want=$build_pkgs ;;
qemu)  want=$qemu_pkgs ;;
arm64) want=$arm64_pkgs ;;
bench) want=$bench_pkgs ;;
deb)   want=$deb_pkgs ;;
dkms)  want=$dkms_pkgs ;;
all)   want="$build_pkgs $qemu_pkgs $arm64_pkgs" ;;
*)     echo "usage: $0 build|qemu|arm64|bench|deb|dkms|all" >&2; exit 2 ;;
esac

# Inside dkms (root, maybe offline, in the middle of dpkg): never run apt.
if [ "${1:-all}" = dkms ]; then
	missing=$(for p in $want; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || echo "$p"
	done | xargs)
	[ -z "$missing" ] || die "missing packages for the dkms build: $missing (kvm-gmem-dkms depends on them)"
	exit 0
fi

case "${1:-all}" in arm64 | all)
	if ! dpkg --print-foreign-architectures | grep -x arm64 > /dev/null; then
		[[ $(id -u) == 0 ]] || die "the arm64 guest needs Debian's arm64 packages; run as root: dpkg --add-architecture arm64 && apt-get update"
		step "adding the arm64 architecture to apt (for the arm64 guest's root)" >&2
		dpkg --add-architecture arm64
		apt-get update -q >&2 || die "apt-get update failed after dpkg --add-architecture arm64"
	fi
esac

# shellcheck disable=SC2086 # one word per package
need_packages $want
