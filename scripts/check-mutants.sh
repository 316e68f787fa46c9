#!/bin/bash
# Show that a tier's expectations (tests/expect/<tier>) notice when the
# product is gone: the tier's own programs, judged by its own list, must FAIL
#   debian-modules   stock tier, with Debian's kvm modules (no guest_memfd mmap)
#   no-host-mmap     stock tier, with our modules built without
#                    CONFIG_KVM_GMEM_SHARED_MEM
#   no-numa-policy   stock tier, gmem_numa_test alone, with our modules built
#                    without NUMA placement (KVM_GMEM_MPOL=n)
#   no-direct-map    shim tier, gmem_ndm_test alone, with our modules built
#                    without GUEST_MEMFD_FLAG_NO_DIRECT_MAP
# and the failure must name the guest_memfd cases that did not pass, not a
# crash, a timeout or a kernel splat.
#   check-mutants.sh [debian-modules|no-host-mmap|no-numa-policy|no-direct-map]...
#   (default: all)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
kver=$("$top/scripts/kernel-version.sh" kver)
fails=0

# must_fail NAME TIER 'REGEX...' -- ENV=VALUE...: run TIER (our gmem programs
# only, not the regression list) as NAME under ENV; it must exit 1 and its
# summary must match every REGEX (one per line).
must_fail() {
	local name=$1 tier=$2 want=$3 results="$top/build/results/mutant-$1" rc=0 re
	shift 4
	step "mutant $name: the $tier tier must fail"
	env "$@" REGRESSION=0 "$top/qemu/test-tier.sh" "$tier" --tier "mutant-$name" \
		--results "$results" >"$top/build/results/mutant-$name.log" 2>&1 || rc=$?
	if [ "$rc" != 1 ]; then
		step "FAIL: mutant $name: the tier exited $rc, want 1 (a judged failure): see build/results/mutant-$name.log"
		fails=$((fails + 1))
		return
	fi
	if grep -qE 'kernel log errors|TIMED OUT|CRASHED|kernel tainted' "$results/summary.txt"; then
		step "FAIL: mutant $name failed for the wrong reason: see $results/summary.txt"
		fails=$((fails + 1))
		return
	fi
	while IFS= read -r re; do
		[ -n "$re" ] || continue
		if grep -qE -- "$re" "$results/summary.txt"; then
			step "ok: mutant $name: the summary names /$re/"
		else
			step "FAIL: mutant $name: the summary does not name /$re/: see $results/summary.txt"
			fails=$((fails + 1))
		fi
	done <<<"$want"
	step "mutant $name failed as it must: $(grep -c '^- ' "$results/summary.txt") problems named"
}

mutants=("$@")
[ $# -gt 0 ] || mutants=(debian-modules no-host-mmap no-numa-policy no-direct-map)
for m in "${mutants[@]}"; do
	case "$m" in
	debian-modules)
		must_fail debian-modules stock \
'^- gmem_mmap_test: ".*" was SKIPPED
^- gmem_vcpu_test: ".*" (was SKIPPED|FAILED)
^- gmem_stress_test: 
^- gmem_conversion_test: ".*" was SKIPPED' -- MODULES=stock
		;;
	no-host-mmap)
		must_fail no-host-mmap stock \
'^- gmem_mmap_test: ".*" (was SKIPPED|FAILED)
^- gmem_vcpu_test: ".*" (was SKIPPED|FAILED)
^- example_vmm: ' -- KVM_GMEM_SHARED_MEM=n BUILD_OBJ="$top/build/obj/mutant-no-host-mmap-$kver"
		;;
	no-numa-policy)
		must_fail no-numa-policy stock \
'^- gmem_numa_test: "MPOL_BIND node 1, host faults from node 0 .*" FAILED
^- gmem_numa_test: "a vCPU on node 0 faults in a gmem-only memslot page bound to node 1 .*" FAILED
^- gmem_numa_test: "MPOL_INTERLEAVE' -- KVM_GMEM_MPOL=n ONLY=gmem_numa_test \
			BUILD_OBJ="$top/build/obj/mutant-no-numa-policy-$kver"
		;;
	no-direct-map)
		must_fail no-direct-map shim \
'^- gmem_ndm_test: "a faulted page is out of the direct map.*" was SKIPPED
^- gmem_ndm_test: "GUP refuses the memory.*" was SKIPPED
^- gmem_ndm_test: "a vCPU runs on NO_DIRECT_MAP memory.*" was SKIPPED' -- \
			KVM_GMEM_NO_DIRECT_MAP=n ONLY=gmem_ndm_test \
			BUILD_OBJ="$top/build/obj/mutant-no-direct-map-shim"
		;;
	*) die "unknown mutant $m" ;;
	esac
done
[ "$fails" = 0 ]
