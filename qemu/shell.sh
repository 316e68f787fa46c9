#!/bin/bash
# make qemu-shell: boot a guest, load our modules, and give this terminal a
# root shell on its console (job control on). "poweroff" or "exit" end it
# cleanly; Ctrl-A X kills QEMU. dmesg is kept in build/results/shell/.
# Environment: TIER=stock|shim (kernel, default stock), MODULES=ours|stock.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
. "$top/scripts/lib.sh"

[ -t 0 ] || die "qemu-shell needs a terminal"
stage="$top/build/stage/shell"
rm -rf "$stage"
mkdir -p "$stage"
: > "$stage/list"
args=(--tier shell --results "$top/build/results/shell" --tests "$stage" --shell --expect "")
[ "${MODULES:-ours}" = stock ] && args+=(--modules stock)
# A person is at the keyboard: a day, not the test timeout.
QEMU_TIMEOUT=${QEMU_TIMEOUT:-86400} exec "$here/test-tier.sh" "${TIER:-stock}" "${args[@]}"
