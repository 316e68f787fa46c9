#!/bin/bash
# Packages of another Debian release than the build host's (trixie's kernel,
# sid's newest linux-source), through a private apt state in the cache: the
# host's own apt configuration and package lists are left as they are, and
# signatures are checked against the host's keyring as usual.
#   debian-archive.sh SUITE version PACKAGE        -> its newest version
#   debian-archive.sh SUITE versions PACKAGE       -> every version, oldest first
#   debian-archive.sh SUITE sha256 PACKAGE=VERSION -> the index's SHA256 of its .deb
#   debian-archive.sh SUITE records PACKAGE...     -> "PACKAGE VERSION SHA256" of every
#                                                     version (amd64 or all), one apt-cache run
#   debian-archive.sh SUITE download DIR PKG=VER... -> the .debs, into DIR
# SUITE: bookworm or trixie (with their updates and security suites),
# bookworm-backports, sid.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

suite=${1:-}
cmd=${2:-}
shift 2 || die "usage: $0 SUITE version PACKAGE | download DIR PKG=VER..."
case "$suite" in
bookworm) sources="deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main" ;;
bookworm-backports) sources="deb http://deb.debian.org/debian bookworm-backports main" ;;
trixie) sources="deb http://deb.debian.org/debian trixie main
deb http://deb.debian.org/debian trixie-updates main
deb http://deb.debian.org/debian-security trixie-security main" ;;
sid)    sources="deb http://deb.debian.org/debian sid main" ;;
*)      die "unknown suite '$suite' (bookworm, bookworm-backports, trixie, sid)" ;;
esac

dir="$KVM_GMEM_CACHE/apt-$suite"
opts=(-o Dir::Etc::SourceList="$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
      -o Dir::State::Lists="$dir/lists" -o Dir::Cache="$dir"
      -o Dir::Cache::archives="$dir/archives" -o Debug::NoLocking=1
      -o APT::Get::List-Cleanup=0 -o APT::Sandbox::User=root
      -o Dir::State::status=/dev/null)

# The lists are refreshed when older than an hour: what "newest" means
# follows the archive, one apt-get update per run at most.
cache_lock "apt-$suite"
mkdir -p "$dir/lists/partial" "$dir/archives/partial"
if [ "$(cat "$dir/sources.list" 2>/dev/null)" != "$sources" ] ||
   [ -z "$(find "$dir/lists/.updated" -mmin -60 2>/dev/null)" ]; then
	printf '%s\n' "$sources" > "$dir/sources.list"
	step "apt-get update for Debian $suite (private state: $dir)" >&2
	apt-get "${opts[@]}" -qq update > "$dir/update.log" 2>&1 ||
		{ cat "$dir/update.log" >&2; die "apt-get update of Debian $suite failed (log: $dir/update.log)"; }
	touch "$dir/lists/.updated"
fi

case "$cmd" in
version)
	v=$(apt-cache "${opts[@]}" show "$1" 2>/dev/null | sed -n 's/^Version: //p' | sort -V | tail -n 1)
	[ -n "$v" ] || die "Debian $suite has no package $1"
	echo "$v" ;;
versions)
	v=$(apt-cache "${opts[@]}" show "$1" 2>/dev/null | sed -n 's/^Version: //p' | sort -uV || true)
	[ -n "$v" ] || die "Debian $suite has no package $1"
	echo "$v" ;;
sha256)
	# The amd64 entry where the package has one per architecture.
	v=$(apt-cache "${opts[@]}" show "$1" 2>/dev/null |
		awk '/^Architecture:/ { a = $2 } /^SHA256:/ && (a == "amd64" || a == "all") { print $2; exit }' || true)
	[ -n "$v" ] || die "Debian $suite has no package $1"
	echo "$v" ;;
records)
	apt-cache "${opts[@]}" show "$@" 2>/dev/null |
		awk '/^Package:/ { p = $2 } /^Version:/ { v = $2 } /^Architecture:/ { a = $2 }
		     /^SHA256:/ && (a == "amd64" || a == "all") { print p, v, $2 }' || true ;;
download)
	dest=$1
	shift
	mkdir -p "$dest"
	(cd "$dest" && apt-get "${opts[@]}" -q download "$@") > "$dir/download.log" 2>&1 ||
		{ cat "$dir/download.log" >&2; die "apt-get download from Debian $suite failed: $*"; } ;;
*)	die "unknown command '$cmd' (version, versions, sha256, records, download)" ;;
esac
