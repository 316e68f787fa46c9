#!/bin/bash
# Everything CI runs (make check): the series check, then every guest tier,
# then the comparison of our modules against Debian's. Runs all steps even
# when one fails, prints a one-screen summary, exits non-zero on any failure.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
mkdir -p build/results
summary=build/results/check-summary.txt
# Every module build here without the target config's debug info and BTF:
# nothing here reads them, and they cost a fifth of a build's CPU and pahole
# runs. The native dkms step too, which checks the package (dkms.conf, the
# Makefile, the sources); the dkms tier (make check-dkms) builds as a user's
# machine does, with them.
export KVM_GMEM_DEBUG_INFO=n
: > "$summary"
failed=0

# record NAME SECONDS RC LOG CPU: one verdict line of the summary, with the
# step's CPU seconds (two cores are shared by the foreground steps and the
# background job, so a step's wall time alone does not say what it cost).
# A failed step's line also carries the first line of its log that says
# why: the summary is often all that is seen of a CI run.
record() {
	local why
	if [ "$3" -eq 0 ]; then
		printf '%-34s PASS %5ds cpu %5ds\n' "$1" "$2" "$5" >> "$summary"
	else
		failed=1
		why=$(grep -m1 -E '(^|\] )(FAIL|error)[: ]' "$4" 2>/dev/null | sed 's/^\[ *[0-9]*s\] //')
		# A tier's: the first problem under its verdict.
		[ -n "$why" ] || why=$(sed -n '/^RESULT: FAIL/,$ { /^- /{ p; q; } }' "$4" 2>/dev/null)
		why=$(cut -c1-150 <<<"$why")
		printf '%-34s FAIL %5ds cpu %5ds  (exit %d, log: %s)\n' "$1" "$2" "$5" "$3" "$4" >> "$summary"
		[ -z "$why" ] || printf '%-34s      first failure: %s\n' "" "$why" >> "$summary"
	fi
}

# run_step NAME LOG COMMAND...: run one step, log to LOG, record the verdict.
# The step runs in a subshell that reports its own children's CPU time: the
# background job, reaped by this shell whenever it ends, is not charged to
# the step that happened to be running then.
run_step() {
	local name=$1 log=$2 t0 rc cpu lines
	shift 2
	t0=$(date +%s)
	step "$name ..."
	( "$@"; rc=$?; children_cpu $BASHPID > "$log.cpu"; exit $rc ) > "$log" 2>&1
	rc=$?
	cpu=$(cat "$log.cpu" 2>/dev/null || echo 0)
	rm -f "$log.cpu"
	[ $rc -eq 0 ] || tail -n 15 "$log" | sed 's/^/    /'
	# Show what record adds: the verdict, and a failure's first failure.
	lines=$(wc -l < "$summary")
	record "$name" $(( $(date +%s) - t0 )) $rc "$log" "$cpu"
	tail -n +$((lines + 1)) "$summary"
	return $rc
}

# Steps two at a time: start_step NAME LOG COMMAND... starts one in the
# background (first waiting, while two run, for either to end), and
# end_steps waits for the rest; each verdict is recorded when its step
# ends, as run_step records it. For steps that need no quiet machine: the
# must-fail runs (one TCG guest each, one host thread per guest, gmem
# programs only, no timing-sensitive selftests), the package builds, the
# boot tiers (a Linux guest, whose checks count pages and flushes), the
# shim and arm64 tiers, the harness check and the front ends; a step that
# needs another's output waits for it (wait_for_step). The tiers whose
# selftests measure time (stock, debian: xapic_state_test) run alone.
par_pids=() par_names=() par_logs=() par_t0=()
start_step() {
	local name=$1 log=$2
	shift 2
	while [ ${#par_pids[@]} -ge 2 ]; do finish_a_step; done
	step "$name ... (two at a time)"
	rm -f "$log.rc" "$log.cpu"	# a stale one would end the step at once
	( ( "$@"; rc=$?; children_cpu $BASHPID > "$log.cpu"; exit $rc ) > "$log" 2>&1
	  echo "$? $(date +%s)" > "$log.rc" ) &
	par_pids+=($!) par_names+=("$name") par_logs+=("$log") par_t0+=("$(date +%s)")
}
# finish_a_step: record the first step that has ended (waiting for one).
finish_a_step() {
	local i log rc end cpu lines
	while :; do
		for i in "${!par_pids[@]}"; do
			[ -f "${par_logs[i]}.rc" ] && break 2
		done
		sleep 1
	done
	log=${par_logs[i]}
	wait "${par_pids[i]}"
	read -r rc end < "$log.rc" || rc=1 end=$(date +%s)
	cpu=$(cat "$log.cpu" 2>/dev/null || echo 0)
	rm -f "$log.rc" "$log.cpu"
	[ "$rc" -eq 0 ] || tail -n 15 "$log" | sed 's/^/    /'
	lines=$(wc -l < "$summary")
	record "${par_names[i]}" $(( end - par_t0[i] )) "$rc" "$log" "$cpu"
	tail -n +$((lines + 1)) "$summary"
	unset 'par_pids[i]' 'par_names[i]' 'par_logs[i]' 'par_t0[i]'
	par_pids=("${par_pids[@]}") par_names=("${par_names[@]}")
	par_logs=("${par_logs[@]}") par_t0=("${par_t0[@]}")
}
end_steps() {
	while [ ${#par_pids[@]} -gt 0 ]; do finish_a_step; done
}
# wait_for_step NAME: until the step NAME has ended (recording those that end
# meanwhile), for a step that needs what NAME made.
step_running() {
	local n
	for n in "${par_names[@]}"; do [ "$n" != "$1" ] || return 0; done
	return 1
}
wait_for_step() {
	while step_running "$1"; do finish_a_step; done
}

# The guest image and the two custom kernels cost ~25 min of CPU cold. Build
# them from the start, in the background and at the lowest priority: they
# take the core a TCG guest leaves idle during the first tiers, and a tier
# that needs one waits for it (cache_lock). Warm, each is a cache hit. The
# series check (all CPU, needed by no other step) runs in the same job from
# the start, at SCHED_IDLE: it takes what the others leave, the serial
# phases of a kernel build (links, modpost), the core a TCG guest leaves
# idle (one host thread per guest), the wait at the end.
prebuild_log=build/results/prebuild.log
step "building the guest image and kernels in the background (log: $prebuild_log)"
# Its own process group, so that an interrupted check stops it too. That
# makes it a session, which the scheduler weighs as much as this one
# (autogroup) whatever its nice value: lower the session's weight too.
setsid bash -c '
	. scripts/lib.sh
	echo 19 > /proc/self/autogroup 2>/dev/null
	t0=$(date +%s) rc=0
	( src=0 me=$BASHPID
	  chrt --idle 0 nice -n 19 scripts/check-series.sh > build/results/check-series.log 2>&1 || src=1
	  echo "series check: exit $src after $(( $(date +%s) - t0 ))s cpu $(children_cpu $me)s" ) &
	nice -n 19 qemu/rootfs.sh || rc=1
	nice -n 19 scripts/build-kernel.sh shim || rc=1
	nice -n 19 scripts/build-kernel.sh arm64 || rc=1
	echo "prebuild: exit $rc after $(( $(date +%s) - t0 ))s cpu $(children_cpu $$)s"
	wait
	exit $rc' > "$prebuild_log" 2>&1 &
prebuild=$!
trap 'kill -- -$prebuild 2>/dev/null' EXIT

# dkms.conf is generated: it must match VERSION and the installed source;
# debian/changelog must be at VERSION too.
run_step "dkms.conf, changelog up to date" build/results/dkms-conf.log scripts/check-packaging.sh
run_step "package: make deb, lintian" build/results/deb.log scripts/check-deb.sh
run_step "prepare + modules (Debian kernel)" build/results/modules.log make -s modules
run_step "selftests + tests" build/results/selftests.log make -s selftests

# job_verdict TITLE JOB_LOG NAME LOG: record, as TITLE, the step NAME of a
# background job by its closing line in JOB_LOG ("NAME: exit N after Ts cpu
# Cs"): a step that died without one failed. Returns the step's status.
job_verdict() {
	local rc took cpu
	read -r rc took cpu <<<"$(sed -n "s/^$3: exit \([0-9]*\) after \([0-9]*\)s cpu \([0-9]*\)s$/\1 \2 \3/p" "$2")"
	record "$1" "${took:-0}" "${rc:-1}" "$4" "${cpu:-0}"
	return "${rc:-1}"
}

# The must-fail runs, by group: "title|name" (scripts/check-mutants.sh NAME).
stock_must_fail=(
	"Debian's modules|debian-modules"
	"Linux guest, Debian's modules|debian-boot"
	"ours without host mmap|no-host-mmap"
	"ours without NUMA placement|no-numa-policy"
	"ours without attribute lookup|no-attr-lookup"
	"ours without write()|no-write"
	"ours without vCPU userfault exits|no-vcpu-userfault"
	"KVM's mappings ignore userfault|kvm-maps-ignore-userfault"
	"the exerciser: kvmclock's pfn cache in a restore|fsx-gpc-restore"
	"the exerciser: a conversion ignores a pin|fsx-conversion-ignores-pins"
	"the exerciser's threads: a private page the host can read|fsx-threads-private-readable"
	"2 MiB folios allocated 4 KiB|huge-order-0"
	"2 MiB vCPU mappings bounded by the VMM's page tables|huge-level-by-host-mapping"
	"a 4 KiB fallback not counted|huge-fallback-uncounted"
	"write() into 2 MiB folios at each folio's start|huge-write-at-folio-start"
	"write() asks a 2 MiB folio, not its page, for poison|huge-write-poison-by-head"
	"a vCPU's fault asks a 2 MiB folio, not its page, for poison|huge-vcpu-poison-by-folio"
	"a vCPU maps a 2 MiB folio with a poisoned page 2 MiB|huge-vcpu-maps-poisoned-2m"
	"a punch leaves a pinned 2 MiB folio to truncate|huge-punch-pinned"
	"a host PMD over a 2 MiB folio with private pages|huge-convert-pmd"
	"a vCPU maps a 2 MiB folio of both kinds 2 MiB|huge-convert-maps-2m"
	"the exerciser: 2 MiB folios allocated 4 KiB|fsx-huge-order-0"
	"the exerciser: a 2 MiB folio placed by its touched page's policy|fsx-huge-policy-by-page"
	"the exerciser: write() into 2 MiB folios at each folio's start|fsx-huge-write-at-folio-start"
	"the exerciser: a punch leaves a pinned 2 MiB folio to truncate|fsx-huge-punch-pinned"
	"the exerciser: a host PMD over a 2 MiB folio with private pages|fsx-huge-convert-pmd"
)
shim_must_fail=(
	"ours without NO_DIRECT_MAP|no-direct-map"
	"ours without the TLB flush|ndm-no-flush"
	"pfn caches not on guest_memfd|ndm-no-gmem-pfncache"
	"ours without userfaultfd ops|no-uffd-ops"
	"a vCPU's NO_DIRECT_MAP fault page by page|ndm-vcpu-one-page"
	"pfn caches kept across a memslot unbind|gpc-unbind-keeps-cache"
	"kvm_vcpu_map() ignores userfault|vcpu-map-ignores-userfault"
	"write() leaves a new 2 MiB folio's other pages as they were|huge-write-no-clear"
	"a 2 MiB folio out of the direct map page by page|huge-ndm-page-by-page"
	"a punch drops a 2 MiB folio out of the direct map|huge-ndm-punch-unmapped"
	"write() puts a 2 MiB folio back in the direct map|huge-ndm-write-puts-back"
	"the exerciser: a window into a punched range|fsx-ndm-window-into-punched"
	"the exerciser: a vCPU fault without its window|fsx-ndm-vcpu-one-page"
	"the exerciser: a page a failed zap left up to date|fsx-ndm-failed-zap-stays-up-to-date"
	"the exerciser: a vCPU window past the private attribute|fsx-vcpu-window-ignores-private"
	"the exerciser: a vCPU window in a userfaultfd file|fsx-uffd-vcpu-window"
	"the exerciser: a punch drops a 2 MiB folio out of the direct map|fsx-huge-ndm-punch-unmapped"
	"arm64: 2 MiB folios mapped page by page|arm64-huge-pages"
)
names_of() { local e; for e in "$@"; do printf '%s ' "${e#*|}"; done; }

# The idle job (scripts/check-idle.sh): from here on, in the background at
# the lowest priority (SCHED_IDLE), the builds that need no guest, one after
# another: they take the core that the stock and debian tiers (timed
# selftests: they run alone) leave idle, the first ~8 min of a warm run.
# The must-fail runs' modules are built there ahead; the native dkms build,
# the Debian 13 build and the releases check are steps recorded when it
# ends. Its own process group and session weight, as the background job's.
idle_log=build/results/idle-job.log
step "the idle job: builds beside the timed tiers (log: $idle_log)"
setsid bash -c 'echo 19 > /proc/self/autogroup 2>/dev/null
	exec chrt --idle 0 nice -n 19 scripts/check-idle.sh "$1" "$2"' _ \
	"$(names_of "${stock_must_fail[@]}")" "$(names_of "${shim_must_fail[@]}")" > "$idle_log" 2>&1 &
idle_job=$!
trap 'kill -- -$prebuild 2>/dev/null; kill -- -$idle_job 2>/dev/null' EXIT
run_step "tier stock (our modules)" build/results/tier-stock.log qemu/test-tier.sh stock
run_step "README ABI table = gmem_abi_test's cases" build/results/abi-table.log scripts/abi-table.sh --check
# Every Markdown link resolves (anchors, files), no network.
run_step "Markdown links resolve" build/results/links.log scripts/check-links.sh
# Each series' cover letter lists its series' patches, in order.
run_step "cover letters = the series" build/results/cover-letters.log scripts/series-git.sh check-cover-letters
run_step "tier debian (Debian's modules)" build/results/tier-debian.log qemu/test-tier.sh debian
# Only a real run of both can be compared.
if [ -f build/results/stock/summary.txt ] && [ -f build/results/debian/summary.txt ]; then
	run_step "regression: debian vs ours" build/results/compare.log \
		scripts/compare-tiers.sh build/results/debian build/results/stock
fi
# The tiers' expectations must notice each feature gone
# (scripts/check-mutants.sh); each run's own log is
# build/results/mutant-NAME.log, the check's verdict mutant-NAME-check.log.
must_fail_step() {
	start_step "must fail: $1" "build/results/mutant-$2-check.log" scripts/check-mutants.sh "$2"
}
# The stock tier's must-fail runs, two at a time with the Linux guest (its
# checks count pages and flushes, they time nothing).
start_step "tier stock-boot (a Linux guest)" build/results/tier-stock-boot.log qemu/test-tier.sh stock-boot
# gmem_huge_test's fragmented-node case fills a memory node: 3 s in a new
# guest, 10-80 s after other programs under TCG, so it runs in a guest of
# its own, beside the must-fail runs (in the shim group too).
# 1 GiB of guest memory: the case fills node 1 (half of it) to its last
# free 2 MiB block, a TCG-time cost that grows with the node's size.
fragmented_step() {
	start_step "2 MiB folios: a fragmented node, $1" "build/results/$2-check.log" \
		env ONLY=gmem_huge_test ONLY_ARGS="-c fragmented" REGRESSION=0 GUEST_MB=1024 \
		qemu/test-tier.sh "$1" --tier "$2" --results "build/results/$2"
}
fragmented_step stock huge-fragmented
for e in "${stock_must_fail[@]}"; do must_fail_step "${e%%|*}" "${e#*|}"; done
end_steps
# The shim tier (gmem programs only, no timed selftests) with the steps that
# need nothing from it: the arm64 tier (its own TCG guest, KVM selftests
# that time nothing), the harness's own failure kinds (fake tests, a hang)
# and the front ends (make bench there only has to run to its end; its
# numbers are not judged). Our modules for the shim kernel are a step of
# their own, first: the Linux guest on the shim kernel and the shim tier's
# must-fail runs (each starts from a copy of their object dir) need only
# them, not the shim tier's ~9 min guest run, and take the second core
# while it runs. (The shim tier's own module build waits for this one's
# and finds nothing to do.)
shim_modules="modules for the shim kernel"
start_step "$shim_modules" build/results/modules-shim.log \
	bash -c 'k=$(scripts/build-kernel.sh shim) && scripts/build-modules.sh "$(cat "$k/kver")" "$k/build"'
start_step "tier shim (mm-shim debug kernel)" build/results/tier-shim.log qemu/test-tier.sh shim
start_step "tier arm64 (KVM built in)" build/results/tier-arm64.log qemu/test-tier.sh arm64
start_step "harness fails when it should" build/results/harness-check.log scripts/check-harness.sh
start_step "front ends: qemu-run, bench, qemu-shell" build/results/frontends.log scripts/check-frontends.sh
wait_for_step "$shim_modules"
start_step "tier shim-boot (a Linux guest)" build/results/tier-shim-boot.log qemu/test-tier.sh shim-boot
fragmented_step shim huge-fragmented-shim
for e in "${shim_must_fail[@]}"; do must_fail_step "${e%%|*}" "${e#*|}"; done
# The exports of every module built for the shim kernel, the shim tier's
# probe module too.
wait_for_step "tier shim (mm-shim debug kernel)"
run_step "mm-shim exports: only kvm imports them" build/results/mm-shim-exports.log scripts/check-exports.sh
end_steps
# The idle job's steps, by their closing lines (a step that died without one
# failed).
step "waiting for the idle job (log: $idle_log)"
wait "$idle_job"
for e in "package: dkms build (native)|dkms-build" "Debian 13: series, modules, CRCs|debian13-build" \
	 "Debian's 6.12 releases: series, modules, CRCs|releases"; do
	job_verdict "${e%%|*}" "$idle_log" "${e%%|*}" "build/results/${e#*|}.log"
done
# The tiers above have waited for what they needed; the series check may
# still be running.
step "waiting for the background job: the series check (log: build/results/check-series.log)"
wait "$prebuild"
job_verdict "guest image + kernels (background)" "$prebuild_log" prebuild "$prebuild_log"
job_verdict "series check (patch by patch, background)" "$prebuild_log" "series check" \
	build/results/check-series.log || tail -n 15 build/results/check-series.log | sed 's/^/    /'
echo
wall=$(( $(date +%s) - KVM_GMEM_T0 ))
echo "=== make check: ${wall}s, cpu $(children_cpu $$)s of $(( wall * $(nproc) ))s on $(nproc) cores (details: build/results/) ==="
cat "$summary"
echo
# One line per tier: the sums over its TAP files.
for t in stock stock-boot debian shim shim-boot arm64; do
	f=build/results/$t/summary.txt
	[ -f "$f" ] || continue
	awk -v t="$t" '/^TAP file/ { on = 1; next } /^(boot to|expected:)/ { on = 0 }
		on && NF >= 4 { n++; p += $(NF-2); f += $(NF-1); s += $NF }
		/^expected:/ { e = $0; sub(/^expected: /, "", e); sub(/ \(.*$/, "", e) }
		/^RESULT/ { r = $2 }
		END { printf "tier %-10s %3d programs: %4d passed, %2d failed, %3d skipped  %s\n", t, n, p, f, s, r
		      if (e != "") printf "             expected: %s\n", e }' "$f"
done
if [ -f build/results/compare.log ]; then
	echo "regression comparison: $(grep -E '^[0-9]+ regressions' build/results/compare.log || echo 'did not finish') (table: build/results/compare.log)"
fi
# Verdict lines only, not the "first failure" lines under them.
passed=$(grep -cE '^[^ ].* PASS +[0-9]+s cpu +[0-9]+s$' "$summary")
nfailed=$(grep -cE '^[^ ].* FAIL +[0-9]+s cpu +[0-9]+s  \(exit' "$summary")
# The failed steps again, last: a CI log shows its tail, and the verdict
# lines are far up.
if ((nfailed)); then
	echo "failed steps:"
	awk '/^[^ ].* FAIL +[0-9]+s cpu +[0-9]+s  \(exit/ { print "  " $0; f = 1; next }
	     f && /^ +first failure:/ { print "  " $0 } { f = 0 }' "$summary"
fi
echo "check: $passed passed, $nfailed failed"
exit $failed
