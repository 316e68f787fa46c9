#!/bin/bash
# Build the tree's x86 KVM selftests (with our patched guest_memfd_test)
# statically against our patched uapi headers, into build/selftests/.
#   build-selftests.sh [TEST...]   default: those the test lists name
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
src=${BUILD_SRC:-$top/build/src}
out=${BUILD_SELFTESTS:-$top/build/selftests}
kvm_tests="$src/tools/testing/selftests/kvm"
mkdir -p "$out"

# Default: the tree's selftests that a test list names (tests/*list), not
# all of them: the rest would only cost build time.
if [ $# -eq 0 ]; then
	for name in $(cat "$top"/tests/*list | awk '$1 !~ /^#/ && NF { sub(/\..*/, "", $1); print $1 }' | sort -u); do
		if [ -f "$kvm_tests/$name.c" ]; then
			set -- "$@" "$name"
		elif [ -f "$kvm_tests/x86_64/$name.c" ]; then
			set -- "$@" "x86_64/$name"
		fi
	done
fi
targets=()
for t in "$@"; do targets+=("$out/$t"); done
step "building KVM selftests${*:+: $*}"
# Static binaries run in any guest image; KHDR_INCLUDES points the tests at
# our uapi headers (Debian's linux-libc-dev is 6.1 and knows no guest_memfd).
make -s -C "$kvm_tests" -j"$(nproc)" ARCH=x86 OUTPUT="$out" \
	EXTRA_CFLAGS=-static KHDR_INCLUDES="-isystem $src/usr/include" \
	"${targets[@]}" 2>&1 | { grep -v "warning: Using 'dlopen'" || true; }
step "selftests built: $(find "$out" -maxdepth 2 -type f -executable | wc -l) programs"
