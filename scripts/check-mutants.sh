#!/bin/bash
# Show that a tier's expectations (tests/expect/<tier>) notice when a feature
# is gone: the tier's own programs, judged by its own list, must FAIL, and
# for the reason that proves the feature missing:
#   debian-modules   stock tier, with Debian's kvm modules (no guest_memfd mmap)
#   debian-boot      stock-boot tier (a Linux guest on guest_memfd), with
#                    Debian's kvm modules
#   no-host-mmap     stock tier, our modules built without
#                    CONFIG_KVM_GMEM_SHARED_MEM
#   no-numa-policy   stock tier, gmem_numa_test, our modules built without
#                    NUMA placement (CONFIG_KVM_GMEM_MPOL renamed away)
#   no-attr-lookup   stock tier, gmem_conversion_test, our kvm.ko with the
#                    per-file attribute lookup gone (every page reads shared)
#   no-write         stock tier, gmem_write_test, our kvm.ko without
#                    GUEST_MEMFD_FLAG_WRITE
#   no-direct-map    shim tier, gmem_ndm_test, our modules built without
#                    GUEST_MEMFD_FLAG_NO_DIRECT_MAP
#   ndm-no-flush     shim tier, gmem_ndm_test, our kvm.ko taking pages out of
#                    the direct map without the kernel TLB flush
#   no-uffd-ops      shim tier, gmem_uffd_test, our kvm.ko without its
#                    userfaultfd operations (.uffd_ops)
#   ndm-vcpu-one-page shim tier, gmem_ndm_test, our kvm.ko whose vCPU faults
#                    on NO_DIRECT_MAP holes allocate and flush one page each
#   no-vcpu-userfault stock tier, gmem_userfault_test, our kvm.ko whose vCPU
#                    faults do not ask the userfault bitmap
#   kvm-maps-ignore-userfault stock tier, gmem_userfault_test, our kvm.ko whose
#                    pfn caches and kvm_vcpu_map() do not ask the userfault
#                    bitmap (kvmclock allocates a page not restored yet)
#   vcpu-map-ignores-userfault shim tier, gmem_ndm_test, our kvm.ko whose
#                    kvm_vcpu_map() does not ask the userfault bitmap (VMLOAD
#                    maps a VMCB page not restored yet)
#   gpc-unbind-keeps-cache shim tier, gmem_ndm_test, our kvm.ko whose unbinding
#                    of a gmem-only memslot leaves its pfn caches valid
#                    (kvmclock goes on writing the file after a memslot swap)
#   huge-order-0     stock tier, gmem_huge_test, our kvm.ko that offers and
#                    accepts GUEST_MEMFD_FLAG_HUGEPAGE but allocates 4 KiB
#                    folios (each case names the mapping size it misses)
#   huge-level-by-host-mapping stock tier, gmem_huge_test, our kvm.ko without
#                    KVM patch 0031: a gmem-only memslot's mapping level
#                    bounded by the VMM's page tables at userspace_addr
#   huge-fallback-uncounted stock tier, gmem_huge_test, our kvm.ko that falls
#                    back to 4 KiB folios without counting it
#   huge-write-at-folio-start stock tier, gmem_huge_test, our kvm.ko whose
#                    write() copies each page to the start of its folio
#   huge-write-no-clear shim tier, gmem_huge_test, our kvm.ko whose write()
#                    leaves the pages of a new 2 MiB folio it did not fill
#                    as the allocator gave them (the shim kernel has no
#                    init_on_alloc, so they show what was there before)
#   huge-write-poison-by-head stock tier, gmem_huge_test, our kvm.ko whose
#                    write() asks only a 2 MiB folio's first page whether
#                    it is poisoned (the pre-0033 check)
#   huge-vcpu-poison-by-folio stock tier, gmem_huge_test, our kvm.ko whose
#                    vCPU faults ask a folio, not the page, whether it is
#                    poisoned (a 2 MiB folio mm could not split maps its
#                    poisoned page)
#   huge-vcpu-maps-poisoned-2m stock tier, gmem_huge_test, our kvm.ko that
#                    maps a 2 MiB folio with a poisoned page 2 MiB to a vCPU
#   huge-punch-pinned stock tier, gmem_huge_test, our kvm.ko whose punch
#                    leaves a partly covered 2 MiB folio to truncate alone
#                    (unsplittable: not zeroed, and dropped whole if clean)
#   huge-convert-pmd stock tier, gmem_huge_test, our kvm.ko whose host fault
#                    maps a 2 MiB folio with private pages with one PMD
#                    where it finds no page table
#   huge-convert-maps-2m stock tier, gmem_huge_test, our kvm.ko that maps a
#                    2 MiB folio whose pages are not all one kind 2 MiB
#   arm64-huge-pages arm64 tier, gmem_vcpu_test, our arm64 kernel whose
#                    stage 2 asks guest_memfd for no order (2 MiB folios
#                    mapped page by page, as before arm64 patch 0006)
#   huge-ndm-page-by-page shim tier, gmem_ndm_test, our kvm.ko that takes a
#                    2 MiB folio out of the direct map page by page (its
#                    2 MiB direct map entry split into 512)
#   huge-ndm-punch-unmapped shim tier, gmem_ndm_test, our kvm.ko whose punch
#                    of part of a 2 MiB folio out of the direct map has no
#                    map to clear it through (left clean: truncate drops it)
#   huge-ndm-write-puts-back shim tier, gmem_ndm_test, our kvm.ko whose write()
#                    into a 2 MiB folio out of the direct map puts the folio
#                    back for the copy (and takes it out again: a flush)
#   ndm-no-gmem-pfncache shim tier, gmem_ndm_test, our kvm.ko whose pfn caches
#                    (kvmclock) and kvm_vcpu_map() (a nested VMCB) go through
#                    userspace_addr, not guest_memfd
# The exerciser (gmem_fsx, its fixed seeds) must find a defect the reviews
# found, naming the operation and the page:
#   fsx-gpc-restore  stock tier, kvmclock's pfn cache allocates a page armed
#                    for KVM Userfault (as kvm-maps-ignore-userfault)
#   fsx-conversion-ignores-pins stock tier, a conversion to private that does
#                    not look for references (a vmsplice() pin)
#   fsx-ndm-window-into-punched shim tier, a NO_DIRECT_MAP fault's window
#                    that runs into a range punched since (issue 39, 15)
#   fsx-ndm-vcpu-one-page shim tier, a vCPU's NO_DIRECT_MAP fault without
#                    its window (as ndm-vcpu-one-page)
#   fsx-ndm-failed-zap-stays-up-to-date shim tier, write() leaves a page it
#                    failed to take out of the direct map up to date, so a
#                    fault maps it there
#   fsx-huge-order-0 stock tier, 2 MiB folios allocated 4 KiB (as huge-order-0)
#   fsx-huge-policy-by-page stock tier, a 2 MiB folio placed by the policy of
#                    the page touched, not of its first page
#   fsx-huge-write-at-folio-start stock tier, write() into a 2 MiB folio at
#                    the folio's start (as huge-write-at-folio-start)
#   fsx-huge-punch-pinned stock tier, a punch leaves a partly covered 2 MiB
#                    folio a pipe pins to truncate alone (as huge-punch-pinned)
#   fsx-huge-convert-pmd stock tier, a host fault maps a 2 MiB folio with
#                    private pages with one PMD (as huge-convert-pmd)
#   fsx-huge-ndm-punch-unmapped shim tier, a punch of part of a 2 MiB folio
#                    out of the direct map drops it (as huge-ndm-punch-unmapped)
#   fsx-vcpu-window-ignores-private shim tier, a vCPU's NO_DIRECT_MAP window
#                    in a SW_PROTECTED VM that does not stop where the
#                    private attribute changes (issue 39, 6)
# A mutant passes this check only if its run ended in a judged "RESULT:
# FAIL" of its own (the summary is removed first), its modules loaded (our
# mutant, or Debian's), no crash, timeout or splat is among the problems,
# and every pattern below names a case that failed as it must. A mutant
# that does not build, or whose patch no longer applies, fails the check.
# Most run only the cases they must fail (ONLY_ARGS="-c TEXT...", see
# run_cases() in tests/include/gmem_vcpu.h): a guest's time goes to what
# the run proves.
#   check-mutants.sh [NAME]...   (default: all)
#   check-mutants.sh --build-only [NAME]...: only build what their runs
#       need (test-tier.sh's BUILD_ONLY: modules, a mutant kernel); make
#       check does that ahead, in the background, on the core a timed tier
#       leaves idle; the runs then find them built (build-modules.sh's and
#       build-kernel.sh's hashes of their inputs say so) and build what is not
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
kver=$("$top/scripts/kernel-version.sh" kver)
fails=0
build_only=
[ "${1:-}" != --build-only ] || { build_only=1; shift; }

fail() {
	step "FAIL: $*"
	fails=$((fails + 1))
}

# mutate NAME FILE PERL [FILE PERL]...: mutant_src=build/mutants/NAME, a
# copy of build/src (the prepared series) with one change per FILE, a perl
# -0p substitution. Each must change its file: one that no longer matches
# the source is a failure, not a silent no-op.
mutate() {
	local name=$1 dir="$top/build/mutants/$1" file perl
	shift
	[ -f "$top/build/src/.prepared" ] || "$top/scripts/prepare.sh" >/dev/null
	rm -rf "$dir"
	mkdir -p "$dir"
	cp -a "$top/build/src/virt" "$top/build/src/arch" "$top/build/src/include" "$dir/"
	while [ $# -ge 2 ]; do
		file=$1 perl=$2
		shift 2
		perl -0pi -e "$perl" "$dir/$file"
		if cmp -s "$top/build/src/$file" "$dir/$file"; then
			fail "mutant $name: its change ($perl) no longer applies to $file"
			return 1
		fi
	done
	mutant_src=$dir
}

# mutant_lock NAME: work on mutant NAME (its sources, its object dir) alone,
# until the next mutant's lock: make check's background build of the
# mutants' modules and the must-fail runs may reach the same one.
mutant_lock() {
	mkdir -p "$top/build/mutants"
	exec 7>"$top/build/mutants/.$1.lock"
	flock 7
}

# kernel_mutant NAME FILE PERL: mutant_patch=build/mutants/NAME.patch, the
# change PERL (a perl -0p substitution) makes to FILE of the arm64 kernel's
# tree (the series applied), as a patch for build-kernel.sh's
# KERNEL_MUTANT: arm64 KVM is built into the kernel. A change that no longer
# applies fails, as in mutate().
kernel_mutant() {
	local name=$1 file=$2 perl=$3 kdir dir="$top/build/mutants/$1"
	kdir=$("$top/scripts/build-kernel.sh" arm64) || { fail "mutant $name: no arm64 kernel"; return 1; }
	rm -rf "$dir"
	mkdir -p "$dir/a/$(dirname "$file")" "$dir/b/$(dirname "$file")"
	cp "$kdir/src/$file" "$dir/a/$file"
	cp "$kdir/src/$file" "$dir/b/$file"
	perl -0pi -e "$perl" "$dir/b/$file"
	if cmp -s "$dir/a/$file" "$dir/b/$file"; then
		fail "mutant $name: its change ($perl) no longer applies to $file"
		return 1
	fi
	# Labels, not file times: the patch (and the kernel keyed by it) is the
	# same for the same change.
	(cd "$dir" && diff -u --label "a/$file" --label "b/$file" "a/$file" "b/$file") > "$dir.patch" || true
	mutant_patch="$dir.patch"
}

# seed_obj TIER DIR: start the mutant's object dir DIR as a copy of the
# tier's own build, its kbuild command and dependency files re-pointed at
# DIR, so that kbuild rebuilds only what the mutant changes (seconds, not
# the ~90 s of a full build). A mutant that changes flags rebuilds all. A
# DIR built before is kept: kbuild rebuilds what changed since, and
# build-modules.sh nothing if its inputs are those it was built from.
seed_obj() {
	local tier=$1 dir=$2 from
	case "$tier" in
	stock) from="$top/build/obj/$kver" ;;
	shim) from="$top/build/obj/$(cat "$("$top/scripts/build-kernel.sh")/kver")" ;;
	esac
	[ ! -f "$dir/Module.symvers" ] || return 0
	rm -rf "$dir"
	[ -f "$from/Module.symvers" ] || return 0
	# Under the lock build-modules.sh holds while it builds there: make
	# check runs the shim tier and its must-fail runs side by side, and
	# the tier's build (nothing to do by then) may be running.
	( cache_lock "kbuild-$(basename "$(kbuild_path "$top" "$from")")"
	  cp -a "$from" "$dir" )
	repoint "$dir" "$from" "$dir"
	# Kbuild saw both through their fixed paths (build-modules.sh).
	repoint "$dir" "$(kbuild_path "$top" "$from")" "$(kbuild_path "$top" "$dir")"
}

# repoint DIR FROM TO: FROM becomes TO in every text file under DIR.
repoint() {
	{ grep -rlIZ -F "$2" "$1" || true; } | xargs -0 -r sed -i "s|$2|$3|g"
}

# must_fail NAME TIER MODULES 'REGEX...' -- ENV=VALUE...: run TIER (our gmem
# programs only, not the regression list) as NAME under ENV. MODULES is
# "ours" or "debian": which kvm the run must have loaded. Every REGEX (one
# per line) must match a problem line of the run's summary.
must_fail() {
	local name=$1 tier=$2 mods=$3 want=$4 results="$top/build/results/mutant-$1" rc=0 re s arg
	local log="$top/build/results/mutant-$1.log"
	shift 5
	s="$results/summary.txt"
	for arg in "$@"; do
		case "$arg" in BUILD_OBJ=*) seed_obj "$tier" "${arg#BUILD_OBJ=}" ;; esac
	done
	# --build-only: what the run would build, as the tier builds it. A
	# failure is only reported: the run builds again and fails.
	if [ -n "$build_only" ]; then
		log="$top/build/results/mutant-$name-build.log"
		if env "$@" BUILD_ONLY=1 REGRESSION=0 "$top/qemu/test-tier.sh" "$tier" \
			--tier "mutant-$name" >"$log" 2>&1; then
			step "mutant $name: built for its run"
		else
			step "mutant $name: did not build here (log: ${log#"$top"/}); its run builds again"
		fi
		return
	fi
	step "mutant $name: the $tier tier must fail"
	rm -rf "$results"
	env "$@" REGRESSION=0 "$top/qemu/test-tier.sh" "$tier" --tier "mutant-$name" \
		--results "$results" >"$log" 2>&1 || rc=$?
	if [ ! -f "$s" ] || ! grep -q '^RESULT: ' "$s"; then
		fail "mutant $name never ran to a verdict (exit $rc; its modules or tests did not build?): see ${log#"$top"/}"
		tail -n 5 "$log" | sed 's/^/    /' >&2
		return
	fi
	if ! grep -q '^RESULT: FAIL' "$s" || [ "$rc" != 1 ]; then
		fail "mutant $name: the tier exited $rc with $(grep '^RESULT' "$s"), want exit 1 and RESULT: FAIL: see ${s#"$top"/}"
		return
	fi
	if summary_wrong_failure "$s"; then
		fail "mutant $name failed for the wrong reason (a crash, splat, timeout or judge error): see ${s#"$top"/}"
		return
	fi
	case "$mods" in
	ours)
		grep -qE '^ok [0-9]+ - loaded kvm is ours' "$results/modules.tap" ||
			{ fail "mutant $name: our mutant kvm.ko did not load: see $results/modules.tap"; return; } ;;
	debian)
		grep -qE '^ok [0-9]+ - modprobe kvm \(stock\)' "$results/modules.tap" ||
			{ fail "mutant $name: Debian's kvm did not load: see $results/modules.tap"; return; } ;;
	esac
	if [ "$mods" = builtin ]; then
		grep -qE '^ok [0-9]+ - /dev/kvm exists' "$results/modules.tap" ||
			{ fail "mutant $name: the mutant kernel's KVM has no /dev/kvm: see $results/modules.tap"; return; }
	else
		grep -qE '^ok [0-9]+ - load kvm_amd$' "$results/modules.tap" &&
			grep -qE '^ok [0-9]+ - /dev/kvm exists' "$results/modules.tap" ||
			{ fail "mutant $name: kvm_amd did not load or no /dev/kvm: see $results/modules.tap"; return; }
	fi
	while IFS= read -r re; do
		[ -n "$re" ] || continue
		if grep -qE -- "^- $re" "$s"; then
			step "ok: mutant $name: the summary names /$re/"
		else
			fail "mutant $name: the summary does not name /$re/: see ${s#"$top"/}"
		fi
	done <<<"$want"
	step "mutant $name failed as it must: $(grep -c '^- ' "$s") problems named"
}

# fsx_mutant NAME TIER KIND FILE PERL PATTERN: a defect the exerciser must
# find (gmem_fsx alone, in TIER, the fixed seeds of file kind KIND alone:
# gmem_fsx -c KIND; KIND threads-K: the threads case of kind K), FILE of
# build/src changed by PERL, PATTERN among the summary's problems.
fsx_mutant() {
	local name=$1 tier=$2 kind=$3 file=$4 perl=$5 pattern=$6 obj
	obj="$top/build/obj/mutant-$name-$kver"
	[ "$tier" != shim ] || obj="$top/build/obj/mutant-$name-shim"
	mutate "$name" "$file" "$perl" || return 0
	must_fail "$name" "$tier" ours "$pattern" -- \
		ONLY=gmem_fsx ONLY_ARGS="-c $kind" BUILD_SRC="$mutant_src" BUILD_OBJ="$obj"
}

# Changes that a tier's mutant and the exerciser's make alike.
huge_order_0='s/\treturn PMD_ORDER;/\treturn 0;/'
convert_maps_pmd='s/\tif \(!pmd_none\(pmdp_get_lockless\(vmf->pmd\)\)\)\n\t\treturn 0;\n/\treturn 0;\n/'
punch_leaves_pinned='s/\tif \(kvm_gmem_is_huge\(inode\)\) \{\n(\t\tbool two)/\tif (0) {\n$1/'
write_at_folio_start='s/size_t offset = \(index - folio->index\) << PAGE_SHIFT;/size_t offset = 0;/'
ndm_edge_unmapped='s/\tif \(!kvm_gmem_no_direct_map\(inode\) \|\| !kvm_gmem_is_huge\(inode\)\)\n\t\treturn NULL;/\treturn NULL;/'

mutants=("$@")
[ $# -gt 0 ] || mutants=(debian-modules debian-boot no-host-mmap no-numa-policy no-attr-lookup no-write no-direct-map ndm-no-flush
			 ndm-no-gmem-pfncache no-uffd-ops no-vcpu-userfault kvm-maps-ignore-userfault
			 ndm-vcpu-one-page gpc-unbind-keeps-cache vcpu-map-ignores-userfault
			 fsx-gpc-restore fsx-conversion-ignores-pins fsx-ndm-window-into-punched
			 fsx-ndm-vcpu-one-page fsx-ndm-failed-zap-stays-up-to-date
			 fsx-vcpu-window-ignores-private fsx-uffd-vcpu-window fsx-threads-private-readable
			 huge-order-0 huge-level-by-host-mapping huge-fallback-uncounted
			 fsx-huge-order-0 fsx-huge-policy-by-page huge-write-at-folio-start
			 fsx-huge-write-at-folio-start huge-write-poison-by-head huge-write-no-clear
			 huge-vcpu-poison-by-folio huge-vcpu-maps-poisoned-2m huge-punch-pinned
			 fsx-huge-punch-pinned huge-convert-pmd huge-convert-maps-2m fsx-huge-convert-pmd
			 huge-ndm-page-by-page huge-ndm-punch-unmapped huge-ndm-write-puts-back
			 fsx-huge-ndm-punch-unmapped
			 arm64-huge-pages)
for m in "${mutants[@]}"; do
	mutant_lock "$m"
	case "$m" in
	debian-modules)
		# Debian's modules have none of it: our cases SKIP on the missing
		# capability, which the stock tier does not allow.
		must_fail debian-modules stock debian \
'gmem_mmap_test: "gmem.write_read_back" was SKIPPED \(neither KVM_CAP_GMEM_SHARED_MEM nor MMAP \| INIT_SHARED in KVM_CAP_GUEST_MEMFD_FLAGS: this KVM cannot mmap\(\) guest_memfd\)
gmem_vcpu_test: "default_vm_gmem_only_in_place" was SKIPPED \(no GUEST_MEMFD_FLAG_MMAP \| INIT_SHARED in KVM_CAP_GUEST_MEMFD_FLAGS\)
gmem_write_test: "\(whole program\)" was SKIPPED \(no GUEST_MEMFD_FLAG_WRITE in KVM_CAP_GUEST_MEMFD_FLAGS
gmem_conversion_test: "round_trip_page" was SKIPPED \(no kvm.gmem_in_place_conversion' -- MODULES=stock \
			ONLY="gmem_mmap_test gmem_vcpu_test gmem_write_test gmem_conversion_test"
		;;
	debian-boot)
		# Only the anonymous-memory control can boot there: every
		# guest_memfd variant SKIPs on the flags Debian's KVM lacks.
		must_fail debian-boot stock-boot debian \
'gmem_linux_boot_test: "\(whole program\)" was SKIPPED \(guest_memfd flags 0x[0-9a-f]+ not offered \(not our modules\)
gmem_linux_boot_test.v7: "\(whole program\)" was SKIPPED \(the v7 ABI needs our modules
gmem_linux_boot_test.write: "\(whole program\)" was SKIPPED \(guest_memfd flags 0x[0-9a-f]+ not offered \(not our modules\)
gmem_linux_boot_test.numa: "\(whole program\)" was SKIPPED \(guest_memfd flags 0x[0-9a-f]+ not offered \(not our modules\)' -- MODULES=stock
		;;
	no-host-mmap)
		# Our kvm.ko loads but cannot map: the cases FAIL, naming it.
		must_fail no-host-mmap stock ours \
'gmem_mmap_test: "gmem.write_read_back" FAILED: .*this KVM cannot mmap\(\) guest_memfd \(with our modules loaded\)
gmem_vcpu_test: "default_vm_memory_comes_from_gmem" FAILED: no GUEST_MEMFD_FLAG_MMAP \| INIT_SHARED in KVM_CAP_GUEST_MEMFD_FLAGS
example_vmm: "example_vmm" was SKIPPED \(no GUEST_MEMFD_FLAG_MMAP \| INIT_SHARED in KVM_CAP_GUEST_MEMFD_FLAGS\)' -- ONLY="gmem_mmap_test gmem_vcpu_test example_vmm" KVM_GMEM_SHARED_MEM=n KVM_GMEM_DEBUG_INFO=n BUILD_OBJ="$top/build/obj/mutant-no-host-mmap-$kver"
		;;
	no-numa-policy)
		# Built as if without CONFIG_KVM_GMEM_MPOL: only guest_memfd.c
		# reads it, so only that file is rebuilt.
		mutate no-numa-policy virt/kvm/guest_memfd.c \
			's/\bCONFIG_KVM_GMEM_MPOL\b/CONFIG_KVM_GMEM_MPOL_OFF_IN_THIS_MUTANT/g' || continue
		must_fail no-numa-policy stock ours \
'gmem_numa_test: "MPOL_BIND node 1, host faults from node 0" FAILED: host fault: page 0 is on node 0, want node 1
gmem_numa_test: "a vCPU on node 0 faults in a gmem-only memslot page bound to node 1" FAILED: .*is on node 0, want node 1
gmem_numa_test: "MPOL_INTERLEAVE nodes 0-1: page i on node i % 2, whatever the touch order" FAILED: interleave: page [0-9]+ is on node' -- ONLY=gmem_numa_test \
			ONLY_ARGS="-c MPOL_BIND -c MPOL_INTERLEAVE -c vCPU" \
			BUILD_SRC="$mutant_src" BUILD_OBJ="$top/build/obj/mutant-no-numa-policy-$kver"
		;;
	no-attr-lookup)
		mutate no-attr-lookup virt/kvm/guest_memfd.c \
			's/void \*entry = mtree_load\(&gmem->attributes, index\);/void *entry = NULL;/' || continue
		must_fail no-attr-lookup stock ours \
'gmem_conversion_test: "round_trip_page" FAILED: page [0-9]+ is private, but the host can touch it
gmem_conversion_test: "kvm_follows_the_file" FAILED: .*data page private: the guest must see guest_memfd.s zeroes' -- ONLY=gmem_conversion_test \
			ONLY_ARGS="-c round_trip_page -c kvm_follows_the_file" \
			BUILD_SRC="$mutant_src" BUILD_OBJ="$top/build/obj/mutant-no-attr-lookup-$kver"
		;;
	no-write)
		mutate no-write virt/kvm/guest_memfd.c \
			's/flags \|= GUEST_MEMFD_FLAG_INIT_SHARED \| GUEST_MEMFD_FLAG_WRITE;/flags |= GUEST_MEMFD_FLAG_INIT_SHARED;/' || continue
		must_fail no-write stock ours \
'gmem_write_test: "gmem_write_test exited 1" FAILED: Bail out! our modules must offer GUEST_MEMFD_FLAG_WRITE' -- \
			ONLY=gmem_write_test BUILD_SRC="$mutant_src" BUILD_OBJ="$top/build/obj/mutant-no-write-$kver"
		;;
	no-direct-map)
		# Built as if the kernel had no NO_DIRECT_MAP exports: only
		# guest_memfd.c reads CONFIG_KVM_GMEM_NO_DIRECT_MAP.
		mutate no-direct-map virt/kvm/guest_memfd.c \
			's/\bCONFIG_KVM_GMEM_NO_DIRECT_MAP\b/CONFIG_KVM_GMEM_NO_DIRECT_MAP_OFF_IN_THIS_MUTANT/g' || continue
		must_fail no-direct-map shim ours \
'gmem_ndm_test: "a faulted page is out of the direct map.*" was SKIPPED \(GUEST_MEMFD_FLAG_NO_DIRECT_MAP not offered
gmem_ndm_test: "GUP refuses the memory.*" was SKIPPED \(GUEST_MEMFD_FLAG_NO_DIRECT_MAP not offered
gmem_ndm_test: "a vCPU runs on NO_DIRECT_MAP memory.*" was SKIPPED \(GUEST_MEMFD_FLAG_NO_DIRECT_MAP not offered' -- \
			ONLY=gmem_ndm_test ONLY_ARGS="-c faulted -c GUP -c populated;" \
			BUILD_SRC="$mutant_src" BUILD_OBJ="$top/build/obj/mutant-no-direct-map-shim"
		;;
	no-uffd-ops)
		# Our kvm.ko without its userfaultfd operations on the shim
		# kernel, which has mm's interface for them: registration is
		# refused, and the restores cannot run.
		mutate no-uffd-ops virt/kvm/guest_memfd.c \
			's/\n#ifdef CONFIG_KVM_GMEM_MM_UFFD\n\t\.uffd_ops = &kvm_gmem_uffd_ops,\n#endif//' || continue
		must_fail no-uffd-ops shim ours \
'gmem_uffd_test: "registration: MISSING and MINOR where the kernel has mm.s interface, else EINVAL" FAILED: UFFDIO_REGISTER\(MISSING \| MINOR\) on an INIT_SHARED mapping: Invalid argument
gmem_uffd_test: "lazy restore by MISSING faults: random order, two threads, each page served once" FAILED: UFFDIO_REGISTER\(MISSING\): Invalid argument' -- \
			ONLY=gmem_uffd_test ONLY_ARGS="-c registration: -c random" \
			BUILD_SRC="$mutant_src" BUILD_OBJ="$top/build/obj/mutant-no-uffd-ops-shim"
		;;
	ndm-no-flush)
		# A stale kernel TLB entry shows only while no full flush has
		# happened on that CPU since (a context switch may bring one):
		# which probe cases catch it varies from run to run (the
		# faulted-page case mostly, not always: a cold run of 2026-12-05
		# caught it in four others), so the pattern takes any case that
		# failed because a CPU could still read a page through the
		# direct map: its entry gone (the mutant clears it) and yet
		# readable on some CPU, which only a stale TLB entry explains.
		mutate ndm-no-flush virt/kvm/guest_memfd.c \
			's/(static void kvm_gmem_ndm_flush\(unsigned long start, unsigned long end\)\n\{\n)\tflush_tlb_kernel_range\(start, end\);\n/$1/' || continue
		must_fail ndm-no-flush shim ours \
'gmem_ndm_test: ".*" FAILED: .*direct map entry absent, readable on [1-9][0-9]* of [0-9]+ CPUs' -- \
			ONLY=gmem_ndm_test BUILD_SRC="$mutant_src" BUILD_OBJ="$top/build/obj/mutant-ndm-no-flush-shim"
		;;
	ndm-no-gmem-pfncache)
		# KVM's pfn caches and kvm_vcpu_map() back on GUP through
		# userspace_addr, which refuses NO_DIRECT_MAP memory and need
		# not map the file.
		mutate ndm-no-gmem-pfncache \
			virt/kvm/pfncache.c 's/return !kvm_is_error_gpa\(gpc->gpa\) && kvm_memslot_is_gmem_only\(gpc->memslot\);/return false;/' \
			virt/kvm/kvm_main.c 's/bool gmem = kvm_memslot_is_gmem_only\(slot\);/bool gmem = false;/' || continue
		must_fail ndm-no-gmem-pfncache shim ours \
'gmem_ndm_test: "a vCPU runs on NO_DIRECT_MAP memory that pwrite\(\) populated; KVM writes and updates kvmclock there" FAILED: NO_DIRECT_MAP: KVM did not write kvmclock
gmem_ndm_test: "a hole punched under kvmclock: .*" FAILED: plain guest_memfd: KVM did not write kvmclock through guest_memfd
gmem_ndm_test: "a nested guest.s VMCB on NO_DIRECT_MAP memory: .*" FAILED: NO_DIRECT_MAP: VMLOAD of the VMCB ended in .* \(#GP: KVM could not map the VMCB\)' -- \
			ONLY=gmem_ndm_test ONLY_ARGS="-c populated; -c punched -c VMCB" \
			BUILD_SRC="$mutant_src" BUILD_OBJ="$top/build/obj/mutant-ndm-no-gmem-pfncache-shim"
		;;
	ndm-vcpu-one-page)
		# A vCPU's fault on a NO_DIRECT_MAP hole takes its page alone
		# out of the direct map, as before KVM patches 0028-0029: one flush
		# and one fault per page the guest touches.
		mutate ndm-vcpu-one-page virt/kvm/guest_memfd.c \
			's/(\tif \(nr_around\)\n\t\tend = kvm_gmem_vcpu_fault_end\(slot, inode, index\);\n)/\tif (0)\n\t\tend = kvm_gmem_vcpu_fault_end(slot, inode, index);\n/' || continue
		must_fail ndm-vcpu-one-page shim ours \
'gmem_ndm_test: "a vCPU.s fault on a hole takes its 16-page window out under one flush and maps it all" FAILED: a vCPU reading 12 holes: 12 flushes, 12 pages, 12 faults; want 1, 12, 1' -- \
			ONLY=gmem_ndm_test ONLY_ARGS="-c 16-page" \
			BUILD_SRC="$mutant_src" BUILD_OBJ="$top/build/obj/mutant-ndm-vcpu-one-page-shim"
		;;
	no-vcpu-userfault)
		# Our kvm.ko takes KVM_MEM_USERFAULT but its x86 fault path does
		# not ask the bitmap: a vCPU reads a zeroed page where the VMM
		# would have restored its snapshot.
		mutate no-vcpu-userfault arch/x86/kvm/mmu/mmu.c \
			's/if \(unlikely\(kvm_is_userfault_memslot\(fault->slot\)\)\) \{/if (0) {/' || continue
		must_fail no-vcpu-userfault stock ours \
'gmem_userfault_test: "restore by exits" FAILED: page [0-9]+: round 2, exit gpa 0; want the userfault exit for it
gmem_userfault_test: "anonymous memslot" FAILED: page 4: round 2, exit gpa 0; want the userfault exit for it
gmem_userfault_test: "setting the flag zaps" FAILED: page 4: round [0-9]+, exit gpa 0; want the userfault exit for it
gmem_userfault_test: "bad input" FAILED: KVM_PRE_FAULT_MEMORY of an armed page: mapped it, want EFAULT
gmem_userfault_test: "no bitmap: taken, and KVM_RUN fails with EFAULT" FAILED: no bitmap: round [0-9]+ exit [0-9]+, page allocated, want KVM_RUN to fail with EFAULT, nothing allocated' -- \
			ONLY=gmem_userfault_test BUILD_SRC="$mutant_src" BUILD_OBJ="$top/build/obj/mutant-no-vcpu-userfault-$kver"
		;;
	kvm-maps-ignore-userfault)
		# Our kvm.ko's own mappings (kvmclock's pfn cache) take a page
		# whose bit is set from guest_memfd, which allocates and zeroes
		# it behind the VMM's back (issue 39, 1).
		mutate kvm-maps-ignore-userfault virt/kvm/pfncache.c \
			's/if \(!kvm_is_error_gpa\(gpc->gpa\) && kvm_is_userfault_memslot\(gpc->memslot\) &&/if (0 \&\&/' || continue
		must_fail kvm-maps-ignore-userfault stock ours \
'gmem_userfault_test: "kvmclock on a page not restored yet" FAILED: kvmclock.s page 9 was allocated before it was restored' -- \
			ONLY=gmem_userfault_test ONLY_ARGS="-c kvmclock" \
			BUILD_SRC="$mutant_src" BUILD_OBJ="$top/build/obj/mutant-kvm-maps-ignore-userfault-$kver"
		;;
	vcpu-map-ignores-userfault)
		# kvm_vcpu_map() (a nested VMCB on VMLOAD) does not ask the
		# userfault bitmap: it maps a page the VMM has not restored yet.
		mutate vcpu-map-ignores-userfault virt/kvm/kvm_main.c \
			's/\tif \(kvm_is_userfault_memslot\(slot\)\) \{\n(\t\tint r = kvm_gfn_userfault\(slot, gfn\);)/\tif (0) {\n$1/' || continue
		must_fail vcpu-map-ignores-userfault shim ours \
'gmem_ndm_test: "a nested VMCB on a page not restored yet \(KVM Userfault\): VMLOAD exits with its gpa, then loads it" FAILED: VMLOAD of an armed VMCB page: KVM_RUN returned 0, exit HLT' -- \
			ONLY=gmem_ndm_test ONLY_ARGS="-c restored" \
			BUILD_SRC="$mutant_src" BUILD_OBJ="$top/build/obj/mutant-vcpu-map-ignores-userfault-shim"
		;;
	gpc-unbind-keeps-cache)
		# Unbinding a gmem-only memslot leaves its pfn caches valid: a
		# plain memslot at the same hva then gets kvmclock written into
		# the old guest_memfd page (issue 39, 13: caches refresh on a
		# memslot change only where the hva changed or it is gmem-only).
		mutate gpc-unbind-keeps-cache virt/kvm/guest_memfd.c \
			's/\tif \(kvm_memslot_is_gmem_only\(slot\)\)\n(\t\tgfn_to_pfn_cache_gmem_invalidate\(gmem->kvm, )/\tif (0)\n$1/' || continue
		must_fail gpc-unbind-keeps-cache shim ours \
'gmem_ndm_test: "kvmclock follows a gmem-only memslot swapped for a plain one at the same hva" FAILED: plain guest_memfd: after the memslot swap at the same hva, kvmclock never reached the new memslot.s memory' -- \
			ONLY=gmem_ndm_test ONLY_ARGS="-c swapped" \
			BUILD_SRC="$mutant_src" BUILD_OBJ="$top/build/obj/mutant-gpc-unbind-keeps-cache-shim"
		;;
	fsx-gpc-restore)
		fsx_mutant fsx-gpc-restore stock plain virt/kvm/pfncache.c \
			's/if \(!kvm_is_error_gpa\(gpc->gpa\) && kvm_is_userfault_memslot\(gpc->memslot\) &&/if (0 \&\&/' \
'gmem_fsx: "plain file: fixed seeds, .*" FAILED: plain file, seed [0-9]+, op #[0-9]+ \([a-z-]+ pages [0-9]+-[0-9]+\): (armed page [0-9]+ (was allocated|is in the file) before it was restored|page [0-9]+ is in the file, the model says a hole \(armed, not restored yet\))'
		;;
	fsx-conversion-ignores-pins)
		fsx_mutant fsx-conversion-ignores-pins stock inplace virt/kvm/guest_memfd.c \
			's/if \(refs > expected\) \{/if (0) {/' \
'gmem_fsx: "in-place file: fixed seeds, .*" FAILED: inplace file, seed [0-9]+, op #[0-9]+ \(convert pages [0-9]+-[0-9]+\): to private over pinned page [0-9]+: converted'
		;;
	fsx-ndm-window-into-punched)
		fsx_mutant fsx-ndm-window-into-punched shim ndm virt/kvm/guest_memfd.c \
			's/\tif \(mas_find\(&mas, end - 1\)\)\n\t\tend = max\(mas.index, index \+ 1\);/\tmas_find(&mas, end - 1);/' \
'gmem_fsx: "NO_DIRECT_MAP file: fixed seeds, .*" FAILED: ndm file, seed [0-9]+, op #[0-9]+ \([a-z-]+ pages [0-9]+-[0-9]+\): (page [0-9]+ is (not )?in the file, the model says .*|[0-9]+ folios out of the direct map, the file has [0-9]+)'
		;;
	fsx-ndm-vcpu-one-page)
		fsx_mutant fsx-ndm-vcpu-one-page shim ndm virt/kvm/guest_memfd.c \
			's/(\tif \(nr_around\)\n\t\tend = kvm_gmem_vcpu_fault_end\(slot, inode, index\);\n)/\tif (0)\n\t\tend = kvm_gmem_vcpu_fault_end(slot, inode, index);\n/' \
'gmem_fsx: "NO_DIRECT_MAP file: fixed seeds, .*" FAILED: ndm file, seed [0-9]+, op #[0-9]+ \([a-z-]+ pages [0-9]+-[0-9]+\): (page [0-9]+ is (not )?in the file, the model says .*|[0-9]+ folios out of the direct map, the file has [0-9]+)'
		;;
	fsx-ndm-failed-zap-stays-up-to-date)
		fsx_mutant fsx-ndm-failed-zap-stays-up-to-date shim ndm-failzap virt/kvm/guest_memfd.c \
			's/(\t\t\t\tclear_highpage\(folio_page\(folio, j\)\);\n)\t\t\tfolio_clear_uptodate\(folio\);\n/$1/' \
'gmem_fsx: "NO_DIRECT_MAP file with failing zaps: fixed seeds, .*" FAILED: ndm-failzap file, seed [0-9]+, op #[0-9]+ \([a-z-]+ pages [0-9]+-[0-9]+\): [0-9]+ folios out of the direct map, the file has [0-9]+ \([0-9]+ left in by a failed zap; taken out since the last probe:( [0-9]+)+\)'
		;;
	fsx-vcpu-window-ignores-private)
		fsx_mutant fsx-vcpu-window-ignores-private shim swprot virt/kvm/guest_memfd.c \
			's/(\t\t    kvm_mem_is_private\(gmem->kvm, \+\+gfn\) != private)\)/($1 \&\& 0))/' \
'gmem_fsx: "SW_PROTECTED VM, NO_DIRECT_MAP private memory: fixed seeds, .*" FAILED: swprot file, seed [0-9]+, op #[0-9]+ \([a-z-]+ pages [0-9]+-[0-9]+\): page [0-9]+ is in the file, the model says a hole'
		;;
	fsx-uffd-vcpu-window)
		fsx_mutant fsx-uffd-vcpu-window shim uffd virt/kvm/guest_memfd.c \
			's/if \(kvm_is_userfault_memslot\(slot\) \|\| READ_ONCE\(gmem->userfault_seen\) \|\|/if (kvm_is_userfault_memslot(slot) ||/' \
'gmem_fsx: "userfaultfd on a NO_DIRECT_MAP file: fixed seeds, .*" FAILED: uffd file, seed [0-9]+, op #[0-9]+ \([a-z-]+ pages [0-9]+-[0-9]+\): (page [0-9]+ is in the file, the model says a hole|touching page [0-9]+ \(a hole: one MISSING event\) raised 1 userfaultfd events, one MINOR on page [0-9]+|[0-9]+ folios out of the direct map, the file has [0-9]+)'
		;;
	fsx-threads-private-readable)
		# Both checks of the host's fault, before and under the folio
		# lock: the threads' end state must find a private page readable.
		fsx_mutant fsx-threads-private-readable stock threads-inplace virt/kvm/guest_memfd.c \
			's/if \(!kvm_gmem_offset_is_shared\(vmf->vma->vm_file, vmf->pgoff\)\)/if (0)/g' \
'gmem_fsx: "threads: 3 threads and a vCPU on an in-place file, .*" FAILED: inplace file, seed [0-9]+: page [0-9]+ is private after the threads, but the host can read it'
		;;
	fsx-huge-order-0)
		# The exerciser's huge kind: a touch allocates one page, not its 2 MiB.
		fsx_mutant fsx-huge-order-0 stock huge virt/kvm/guest_memfd.c "$huge_order_0" \
'gmem_fsx: "2 MiB folios \(HUGEPAGE\): fixed seeds, .*" FAILED: huge file, seed [0-9]+, op #[0-9]+ \([a-z-]+ pages [0-9]+-[0-9]+\): page [0-9]+ is not in the file, the model says there'
		;;
	fsx-huge-policy-by-page)
		# A 2 MiB folio placed by the policy of the page that was
		# touched, not of its first page.
		fsx_mutant fsx-huge-policy-by-page stock huge virt/kvm/guest_memfd.c \
			's/kvm_gmem_policy_alloc\(&gmem->policy, start, PMD_ORDER, gfp\)/kvm_gmem_policy_alloc(\&gmem->policy, index, PMD_ORDER, gfp)/' \
'gmem_fsx: "2 MiB folios \(HUGEPAGE\): fixed seeds, .*" FAILED: huge file, seed [0-9]+, op #[0-9]+ \([a-z-]+ pages [0-9]+-[0-9]+\): page [0-9]+ is on node [0-9]+, want node [0-9]+'
		;;
	fsx-huge-punch-pinned)
		# The exerciser's huge-pin kind: a punch of part of a 2 MiB folio
		# a pipe pins leaves it to truncate alone (as huge-punch-pinned):
		# old data where the punch was, or, the folio clean (write()), all
		# of it dropped; a read finds the wrong bytes or no page.
		fsx_mutant fsx-huge-punch-pinned stock huge-pin virt/kvm/guest_memfd.c \
			"$punch_leaves_pinned" \
'gmem_fsx: "2 MiB folios pinned by a pipe: fixed seeds, .*" FAILED: huge-pin file, seed [0-9]+, op #[0-9]+ \([a-z-]+ pages [0-9]+-[0-9]+\): (page [0-9]+ is not in the file, the model says there|.*page [0-9]+ byte [0-9]+ reads (0|0x[0-9a-f]+), want (0|0x[0-9a-f]+)|the vCPU reads page [0-9]+ differently at byte [0-9]+, want (0|0x[0-9a-f]+) everywhere)'
		;;
	fsx-huge-convert-pmd)
		# The exerciser's huge-inplace kind: a host fault maps a 2 MiB
		# folio with private pages with one PMD (as huge-convert-pmd).
		fsx_mutant fsx-huge-convert-pmd stock huge-inplace virt/kvm/guest_memfd.c \
			"$convert_maps_pmd" \
'gmem_fsx: "2 MiB folios converting in place: fixed seeds, .*" FAILED: huge-inplace file, seed [0-9]+, op #[0-9]+ \([a-z-]+ pages [0-9]+-[0-9]+\): (through a second mapping: |in a forked child: )?page [0-9]+ is private, but the host can (read|write) it'
		;;
	fsx-huge-write-at-folio-start)
		# The exerciser's huge-write kind: write() copies each page to
		# the start of its folio (as huge-write-at-folio-start): a read,
		# the host's or the vCPU's, finds a page's bytes elsewhere.
		fsx_mutant fsx-huge-write-at-folio-start stock huge-write virt/kvm/guest_memfd.c \
			"$write_at_folio_start" \
'gmem_fsx: "2 MiB folios with write\(\) \(HUGEPAGE \| WRITE\): fixed seeds, .*" FAILED: huge-write file, seed [0-9]+, op #[0-9]+ \([a-z-]+ pages [0-9]+-[0-9]+\): (.*page [0-9]+ byte [0-9]+ reads (0|0x[0-9a-f]+), want 0x[0-9a-f]+|the vCPU reads page [0-9]+ differently at byte [0-9]+, want (0|0x[0-9a-f]+) everywhere)'
		;;
	fsx-huge-ndm-punch-unmapped)
		# The exerciser's huge-ndm kind: a punch of part of a 2 MiB folio
		# out of the direct map does not clear it and leaves it clean, so
		# truncate drops all of it (as huge-ndm-punch-unmapped).
		fsx_mutant fsx-huge-ndm-punch-unmapped shim huge-ndm virt/kvm/guest_memfd.c \
			"$ndm_edge_unmapped" \
'gmem_fsx: "2 MiB folios out of the direct map: fixed seeds, .*" FAILED: huge-ndm file, seed [0-9]+, op #[0-9]+ \([a-z-]+ pages [0-9]+-[0-9]+\): (page [0-9]+ is not in the file, the model says there|.*page [0-9]+ byte [0-9]+ reads (0|0x[0-9a-f]+), want (0|0x[0-9a-f]+)|the vCPU reads page [0-9]+ differently at byte [0-9]+, want (0|0x[0-9a-f]+) everywhere|[0-9]+ folios out of the direct map, the file has [0-9]+.*)'
		;;
	huge-ndm-page-by-page)
		# A 2 MiB folio leaves the direct map a page at a time, as the
		# one-page calls of mm-shim 0007 did: its 2 MiB entry is split.
		mutate huge-ndm-page-by-page virt/kvm/guest_memfd.c \
			's/\tr = set_direct_map_valid_noflush\(page, nr, false\);\n/\tfor (r = 0; !r \&\& page < folio_page(folio, 0) + nr; page++)\n\t\tr = set_direct_map_valid_noflush(page, 1, false);\n\tpage = folio_page(folio, 0);\n/' || continue
		must_fail huge-ndm-page-by-page shim ours \
'gmem_ndm_test: "2 MiB folios leave the direct map whole: .*" FAILED: 8 touches: 8 2 MiB folios, 8 flushes, [1-9][0-9]* 2 MiB direct map entries split; want 8, 8 and 0' -- \
			ONLY=gmem_ndm_test ONLY_ARGS="-c whole:" \
			BUILD_SRC="$mutant_src" BUILD_OBJ="$top/build/obj/mutant-huge-ndm-page-by-page-shim"
		;;
	huge-ndm-punch-unmapped)
		# A punch of part of a 2 MiB folio out of the direct map without
		# the map its pages are cleared through: nothing clears them, and
		# truncate, which cannot split the folio, keeps it with the old
		# bytes where it is dirty (filled through the mapping, as here)
		# and drops all of it where it is clean.
		mutate huge-ndm-punch-unmapped virt/kvm/guest_memfd.c "$ndm_edge_unmapped" || continue
		must_fail huge-ndm-punch-unmapped shim ours \
'gmem_ndm_test: "a punch of part of a 2 MiB folio .*" FAILED: (the punched pages do not read zero|pages outside the punch lost what was written: byte [0-9]+)' -- \
			ONLY=gmem_ndm_test ONLY_ARGS="-c keeps" \
			BUILD_SRC="$mutant_src" BUILD_OBJ="$top/build/obj/mutant-huge-ndm-punch-unmapped-shim"
		;;
	huge-ndm-write-puts-back)
		# write() into a 2 MiB folio out of the direct map puts all of it
		# back for the copy, as for a 4 KiB one, and takes it out again.
		mutate huge-ndm-write-puts-back virt/kvm/guest_memfd.c \
			's/\tif \(nr == 1 \|\| !kvm_gmem_ndm_zapped\(folio\)\)\n\t\treturn NULL;/\treturn NULL;/' || continue
		must_fail huge-ndm-write-puts-back shim ours \
'gmem_ndm_test: "write\(\) into a 2 MiB folio .*" FAILED: pwrite into a 2 MiB folio out of the direct map flushed 1 times: it put the folio back for the copy' -- \
			ONLY=gmem_ndm_test ONLY_ARGS="-c copies" \
			BUILD_SRC="$mutant_src" BUILD_OBJ="$top/build/obj/mutant-huge-ndm-write-puts-back-shim"
		;;
	huge-order-0)
		# GUEST_MEMFD_FLAG_HUGEPAGE still offered and accepted, every
		# folio 4 KiB: the cases must name the mapping size they miss.
		mutate huge-order-0 virt/kvm/guest_memfd.c "$huge_order_0" || continue
		must_fail huge-order-0 stock ours \
'gmem_huge_test: "host_maps_pmd" FAILED: FilePmdMapped: 0 kB of the 8192 kB mapping, expected all
gmem_huge_test: "vcpu_maps_2m" FAILED: touching 3584 pages took [0-9]+ vCPU faults \(at most 16 expected\) and left 0 2 MiB mappings
gmem_huge_test: "punch_splits_one_folio" FAILED: the first 2 MiB is no longer one PMD-mapped folio \(FilePmdMapped 0 kB\)
gmem_huge_test: "numa_policy_per_folio" FAILED: .* in a small folio, expected node [01] in a 2 MiB one
gmem_huge_test: "memcg_charge_and_fallback" FAILED: 0 bytes of file_thp charged
gmem_huge_test: "fragmented_node_falls_back" FAILED: fallocate of the 2 MiB at 0 MiB made neither a 2 MiB folio nor a counted fallback
gmem_huge_test: "kvmclock_brings_armed_page" FAILED: after kvmclock.s update: its page in the file, the armed page not in, 1 of their 2 MiB \(expected all: one 2 MiB folio\)' -- \
			ONLY=gmem_huge_test \
			ONLY_ARGS="-c host_maps_pmd -c vcpu_maps_2m -c punch_splits -c numa_policy -c memcg -c fragmented -c kvmclock_brings" \
			BUILD_SRC="$mutant_src" BUILD_OBJ="$top/build/obj/mutant-huge-order-0-$kver"
		;;
	huge-level-by-host-mapping)
		# Without KVM patch 0031: the level of a gmem-only memslot's
		# mapping comes from the VMM's page tables at userspace_addr,
		# where nothing maps the memory a vCPU touches first.
		mutate huge-level-by-host-mapping arch/x86/kvm/mmu/mmu.c \
			's/fault->is_private \|\|\n\s+kvm_memslot_is_gmem_only\(slot\)\);/fault->is_private);/' || continue
		must_fail huge-level-by-host-mapping stock ours \
'gmem_huge_test: "vcpu_maps_2m" FAILED: touching 3584 pages took [0-9]+ vCPU faults \(at most 16 expected\) and left [0-6] 2 MiB mappings' -- \
			ONLY=gmem_huge_test ONLY_ARGS="-c vcpu_maps_2m" \
			BUILD_SRC="$mutant_src" BUILD_OBJ="$top/build/obj/mutant-huge-level-by-host-mapping-$kver"
		;;
	huge-fallback-uncounted)
		# A 2 MiB folio that cannot be had or charged falls back
		# uncounted.
		mutate huge-fallback-uncounted virt/kvm/guest_memfd.c \
			's/atomic_inc\(&kvm_gmem_huge_fallbacks\);/(void)0;/g' || continue
		must_fail huge-fallback-uncounted stock ours \
'gmem_huge_test: "memcg_charge_and_fallback" FAILED: at the cgroup.s limit a touch of a hole took a 4 KiB folio, gmem_huge_fallbacks ([0-9]+) -> \1,
gmem_huge_test: "fragmented_node_falls_back" FAILED: fallocate of the 2 MiB at [0-9]+ MiB made neither a 2 MiB folio nor a counted fallback' -- \
			ONLY=gmem_huge_test ONLY_ARGS="-c memcg -c fragmented" \
			BUILD_SRC="$mutant_src" BUILD_OBJ="$top/build/obj/mutant-huge-fallback-uncounted-$kver"
		;;
	huge-write-at-folio-start)
		# write() copies each page to the start of its folio, as it did
		# when every folio was one page (before KVM patch 0033).
		mutate huge-write-at-folio-start virt/kvm/guest_memfd.c \
			"$write_at_folio_start" || continue
		must_fail huge-write-at-folio-start stock ours \
'gmem_huge_test: "write_fills_folios" FAILED: byte [0-9]+ of page [0-9]+ reads 0x[0-9a-f]+, write\(\) put 0x[0-9a-f]+ there' -- \
			ONLY=gmem_huge_test ONLY_ARGS="-c write_fills" \
			BUILD_SRC="$mutant_src" BUILD_OBJ="$top/build/obj/mutant-huge-write-at-folio-start-$kver"
		;;
	huge-write-no-clear)
		# write() does not clear the pages of a new 2 MiB folio that it
		# does not fill: they hold what the page held before.
		mutate huge-write-no-clear virt/kvm/guest_memfd.c \
			's/\t\tfolio_zero_segments\(folios\[0\], 0, start, start \+ nr_ok \* PAGE_SIZE,\n\t\t\t\t    folio_size\(folios\[0\]\)\);\n//' || continue
		must_fail huge-write-no-clear shim ours \
'gmem_huge_test: "write_fills_folios" FAILED: byte [0-9]+ of page [0-9]+, which write\(\) did not fill, reads 0xa5, not 0' -- \
			ONLY=gmem_huge_test ONLY_ARGS="-c write_fills" \
			BUILD_SRC="$mutant_src" BUILD_OBJ="$top/build/obj/mutant-huge-write-no-clear-shim"
		;;
	huge-write-poison-by-head)
		# write() into a 2 MiB folio that mm could not split asks the
		# folio, i.e. its first page, whether it is poisoned, not the
		# page it copies into.
		mutate huge-write-poison-by-head virt/kvm/guest_memfd.c \
			's/if \(folio_test_large\(folio\) && PageHWPoison\(folio_file_page\(folio, index\)\)\) \{/if (folio_test_large(folio) \&\& folio_test_hwpoison(folio)) {/' || continue
		must_fail huge-write-poison-by-head stock ours \
'gmem_huge_test: "write_poisoned_folio" FAILED: pwrite\(\) of the poisoned page [0-9]+ in a 2 MiB folio: 4096 \(written\), expected EHWPOISON' -- \
			ONLY=gmem_huge_test ONLY_ARGS="-c write_poisoned" \
			BUILD_SRC="$mutant_src" BUILD_OBJ="$top/build/obj/mutant-huge-write-poison-by-head-$kver"
		;;
	huge-vcpu-poison-by-folio)
		# A vCPU's fault asks the folio (its first page) whether it is
		# poisoned: a 2 MiB folio mm could not split maps its poisoned
		# page to the guest.
		mutate huge-vcpu-poison-by-folio virt/kvm/guest_memfd.c \
			's/\tif \(PageHWPoison\(folio_file_page\(folio, index\)\)\) \{/\tif (folio_test_hwpoison(folio)) {/' || continue
		must_fail huge-vcpu-poison-by-folio stock ours \
'gmem_huge_test: "vcpu_poisoned_folio" FAILED: the guest.s write of page [0-9]+ \(poisoned, in a 2 MiB folio mm could not split\): KVM_RUN done, the guest wrote it \(exit reason 2\), expected EHWPOISON' -- \
			ONLY=gmem_huge_test ONLY_ARGS="-c vcpu_poisoned" \
			BUILD_SRC="$mutant_src" BUILD_OBJ="$top/build/obj/mutant-huge-vcpu-poison-by-folio-$kver"
		;;
	huge-vcpu-maps-poisoned-2m)
		# The order a vCPU may map ignores a poisoned page of the folio.
		mutate huge-vcpu-maps-poisoned-2m virt/kvm/guest_memfd.c \
			's/if \(nr == 1 \|\| folio_test_has_hwpoisoned\(folio\) \|\|/if (nr == 1 ||/' || continue
		must_fail huge-vcpu-maps-poisoned-2m stock ours \
'gmem_huge_test: "vcpu_poisoned_folio" FAILED: the vCPU mapped the 2 MiB at page [0-9]+, page [0-9]+ of it poisoned, as one: pages_2m [0-9]+ -> [0-9]+' -- \
			ONLY=gmem_huge_test ONLY_ARGS="-c vcpu_poisoned" \
			BUILD_SRC="$mutant_src" BUILD_OBJ="$top/build/obj/mutant-huge-vcpu-maps-poisoned-2m-$kver"
		;;
	huge-punch-pinned)
		# A punch leaves a partly covered 2 MiB folio to truncate alone.
		mutate huge-punch-pinned virt/kvm/guest_memfd.c "$punch_leaves_pinned" || continue
		must_fail huge-punch-pinned stock ours \
'gmem_huge_test: "punch_pinned_folio" FAILED: the punched page [0-9]+ of a 2 MiB folio a pipe holds, filled by the mapping, reads 0x[0-9a-f]+ at byte [0-9]+, not zero; a punch of page [0-9]+ of a 2 MiB folio a pipe holds, filled by write\(\), lost page [0-9]+.s data \(reads 0\); 0 of the folio.s 512 pages in the file' -- \
			ONLY=gmem_huge_test ONLY_ARGS="-c punch_pinned" \
			BUILD_SRC="$mutant_src" BUILD_OBJ="$top/build/obj/mutant-huge-punch-pinned-$kver"
		;;
	huge-convert-pmd)
		# A host fault maps a 2 MiB folio with private pages with one
		# PMD where it finds no page table (KVM patch 0034 gives it one).
		mutate huge-convert-pmd virt/kvm/guest_memfd.c "$convert_maps_pmd" || continue
		must_fail huge-convert-pmd stock ours \
'gmem_huge_test: "convert_inside_folio" FAILED: page [0-9]+ is private, but the host reads it \(FilePmdMapped 4096 kB\)' -- \
			ONLY=gmem_huge_test ONLY_ARGS="-c convert_inside_folio" \
			BUILD_SRC="$mutant_src" BUILD_OBJ="$top/build/obj/mutant-huge-convert-pmd-$kver"
		;;
	huge-convert-maps-2m)
		# KVM maps a 2 MiB folio whose pages are not all one kind whole
		# (kvm_gmem_mapping_order() without KVM patch 0034's check).
		mutate huge-convert-maps-2m virt/kvm/guest_memfd.c \
			's/ \|\|\n\t    !kvm_gmem_folio_is_uniform\(gmem, folio\)\)/)/' || continue
		must_fail huge-convert-maps-2m stock ours \
'gmem_huge_test: "convert_inside_folio" FAILED: one page private: the guest.s pass over the 2 MiB took [0-9]+ faults and left [0-9]+ 2 MiB mappings, expected one a page and [0-9]+' -- \
			ONLY=gmem_huge_test ONLY_ARGS="-c convert_inside_folio" \
			BUILD_SRC="$mutant_src" BUILD_OBJ="$top/build/obj/mutant-huge-convert-maps-2m-$kver"
		;;
	arm64-huge-pages)
		# arm64's stage 2 asks guest_memfd for no order, as before arm64
		# patch 0006: 2 MiB folios map page by page.
		kernel_mutant arm64-huge-pages arch/arm64/kvm/mmu.c \
			's/ret = kvm_gmem_get_pfn\(vcpu->kvm, slot, gfn, pfn, max_order\);/ret = kvm_gmem_get_pfn(vcpu->kvm, slot, gfn, pfn, NULL);/' || continue
		must_fail arm64-huge-pages arm64 builtin \
'gmem_vcpu_test: "huge_block_mapping" FAILED: 512 pages of a 2 MiB folio written in [0-9]+ exits, want <= 16 \(one stage-2 block; a plain guest_memfd took [0-9]+\)' -- \
			ONLY=gmem_vcpu_test ONLY_ARGS="-c huge_block" KERNEL_MUTANT="arm64-huge-pages:$mutant_patch"
		;;
	*) die "unknown mutant $m" ;;
	esac
done
[ "$fails" = 0 ]
