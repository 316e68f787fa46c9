#!/bin/bash
# Cross-build the arm64 guest's tests into build/tests-arm64/, static, against
# the uapi headers of the arm64 kernel (which carries our whole series):
#   guest_memfd_test   the tree's selftest, with our patches (src/series)
#   tests/arm64/*.c    our arm64 end-to-end tests
# and write build/tests-arm64/list from tests/arm64-list.
#   build-tests-arm64.sh KERNEL_DIR     (from scripts/build-kernel.sh arm64)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
kdir=${1:?usage: $0 ARM64_KERNEL_DIR}
[[ "$(cat "$kdir/arch" 2>/dev/null)" == arm64 ]] || die "$kdir is not an arm64 kernel dir"
need_tools aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu
out="$top/build/tests-arm64"
uapi="$top/build/arm64-uapi"
cross=(ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-)

step "arm64 tests: uapi headers of $(cat "$kdir/kver")"
# A separate O= dir: the cached kernel build is never written to.
make -s -C "$kdir/src" O="$uapi/obj" "${cross[@]}" INSTALL_HDR_PATH="$uapi" headers_install

mkdir -p "$out"
step "arm64 tests: guest_memfd_test (selftest) and tests/arm64"
make -s -C "$kdir/src/tools/testing/selftests/kvm" -j"$(nproc)" "${cross[@]}" \
	OUTPUT="$out/selftests" EXTRA_CFLAGS=-static KHDR_INCLUDES="-isystem $uapi/include" \
	"$out/selftests/guest_memfd_test" 2>&1 | { grep -v "warning: Using 'dlopen'" || true; }
make -s -C "$top/tests" ARCH=arm64 UAPI="$uapi/include" OUT="$out" \
	KVM_GMEM_SRC="$kdir/src"
cp "$out/selftests/guest_memfd_test" "$out/"

# The run list: every test named there must have been built. NAME.VARIANT
# runs NAME again under its own name (so its results do not overwrite NAME's).
: >"$out/list"
while read -r name rest; do
	case "$name" in '' | '#'*) continue ;; esac
	[[ -x "$out/${name%%.*}" ]] || die "arm64 test ${name%%.*} (tests/arm64-list) was not built"
	[[ "$name" == "${name%%.*}" ]] || cp "$out/${name%%.*}" "$out/$name"
	echo "$name $rest" >>"$out/list"
done <"$top/tests/arm64-list"
step "arm64 tests ready: $(wc -l <"$out/list") runs in $out/list"
