#!/bin/bash
# Install the Debian packages a target needs, or say exactly what to run.
#   install-deps.sh build|qemu|bench|all
set -euo pipefail
. "$(dirname "$0")/lib.sh"

build_pkgs="linux-source-6.12 make gcc-12 bc flex bison libelf-dev libssl-dev dwarves
	    kmod cpio rsync xz-utils patch perl python3 ccache"
qemu_pkgs="qemu-system-x86 qemu-utils debootstrap busybox-static e2fsprogs tmux file"
bench_pkgs="gnuplot-nox"	# make bench: the PNG chart

case "${1:-all}" in
build) want=$build_pkgs ;;
qemu)  want=$qemu_pkgs ;;
bench) want=$bench_pkgs ;;
all)   want="$build_pkgs $qemu_pkgs" ;;
*)     echo "usage: $0 build|qemu|bench|all" >&2; exit 2 ;;
esac

# shellcheck disable=SC2086 # one word per package
need_packages $want
