#!/bin/bash
# Fail when a module other than kvm.ko refers to what the mm-shim exports for
# kvm alone. In 6.12.118, EXPORT_SYMBOL_GPL_FOR_MODULES(sym, "kvm") only puts
# sym in the symbol namespace "module:kvm": the loader lets any module that
# imports that namespace link against it, whatever its name. So check every
# module we build for the shim kernel: ours (build/obj/<kver>/*.ko) and the
# test module gmem_dmap_probe.ko (build/tests-kmod/<hash>/, if the shim tier
# built it for this kernel). Fails closed: no Module.symvers, no kvm.ko, or an export of mm-shim
# 0007 missing or outside "module:kvm" is a failure.
#   check-exports.sh [KERNEL_DIR]
# KERNEL_DIR: a scripts/build-kernel.sh kernel dir; default: the shim kernel
# (cached; built if not, as by qemu/test-tier.sh shim). BUILD_OBJ=DIR: our
# modules from DIR, as in qemu/test-tier.sh.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
export LC_ALL=C	# for sort and comm
need_tools nm:binutils modinfo:kmod
kdir=${1:-$("$top/scripts/build-kernel.sh" shim)}
[ -f "$kdir/kver" ] || die "$kdir: no kver, not a kernel dir of scripts/build-kernel.sh"
kver=$(cat "$kdir/kver")
symvers="$kdir/build/Module.symvers"
obj=${BUILD_OBJ:-$top/build/obj/$kver}
probe="$(dmap_probe_dir "$top" "$kdir")/gmem_dmap_probe.ko"
[ -s "$symvers" ] || die "$symvers missing or empty"

# Module.symvers: crc, symbol, module, export type, namespace (tab-separated;
# the namespace is the fifth field, empty for most exports).
ns_of() {
	awk -F'\t' -v s="$1" '$2 == s { found = 1; ns = $5 } END { if (!found) exit 1; print ns }' "$symvers"
}

# What mm-shim 0007 and 0010 export for kvm's GUEST_MEMFD_FLAG_NO_DIRECT_MAP.
ndm=(set_direct_map_invalid_noflush set_direct_map_default_noflush
     set_direct_map_valid_noflush flush_tlb_kernel_range
     guestmem_no_direct_map_get guestmem_no_direct_map_put)
for sym in "${ndm[@]}"; do
	ns=$(ns_of "$sym") || die "$symvers: $sym is not exported"
	[ "$ns" = module:kvm ] || die "$symvers: $sym is exported in namespace '$ns', not module:kvm"
done
# Every symbol for kvm alone: the above and whatever else is in module:kvm.
mapfile -t kvm_only < <(awk -F'\t' '$5 == "module:kvm" { print $2 }' "$symvers" | sort -u)
step "$symvers: ${#kvm_only[@]} exports in namespace module:kvm"

[ -f "$obj/kvm.ko" ] || die "$obj/kvm.ko missing: build the modules for $kver (qemu/test-tier.sh shim)"
mapfile -t kos < <(find "$obj" -maxdepth 1 -name '*.ko' | sort)
if [ -f "$probe" ]; then
	kos+=("$probe")
else
	step "no test module built for this kernel (${probe#"$top"/}): checking ours only"
fi

bad=0
for ko in "${kos[@]}"; do
	name=$(basename "$ko")
	undef=$(nm -u "$ko" | awk '{ print $NF }') || die "nm -u $ko failed"
	used=$(comm -12 <(sort -u <<<"$undef") <(printf '%s\n' "${kvm_only[@]}"))
	imports=$(modinfo -F import_ns "$ko") || die "modinfo $ko failed"
	step "$name: $(grep -c . <<<"$undef") undefined symbols, $(grep -c . <<<"$used") of them for kvm only${used:+ (${used//$'\n'/ })}"
	[ "$name" != kvm.ko ] || continue
	for sym in $used; do
		printf 'error: %s refers to %s, exported for kvm only\n' "$ko" "$sym" >&2
		bad=1
	done
	if grep -qx 'module:kvm' <<<"$imports"; then
		printf 'error: %s imports the namespace module:kvm\n' "$ko" >&2
		bad=1
	fi
done
[ "$bad" = 0 ] || die "a module other than kvm.ko can link against the exports for kvm"
step "exports for kvm: only kvm.ko of ${#kos[@]} modules refers to them"
