#!/bin/bash
# make check's idle job: the builds that need no guest, one after another,
# at the lowest priority (check.sh starts it under SCHED_IDLE), on the core
# the timed tiers leave idle. Each step's output goes to its own log, and
# its closing line here is its verdict ("NAME: exit N after Ts cpu Cs"),
# which check.sh records when the job has ended; a step with no such line
# died, and counts as failed.
#   check-idle.sh 'STOCK MUTANT...' 'SHIM MUTANT...'
# The must-fail runs' modules are built ahead (check-mutants.sh
# --build-only): a run finds them built, build-modules.sh's hash of their
# inputs says so, or builds what is not, under the mutant's lock. Those
# builds are no check of their own: the run's verdict is theirs.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
read -ra stock_mutants <<< "${1:-}"
read -ra shim_mutants <<< "${2:-}"

# idle NAME LOG COMMAND...: one step, its log, its verdict line.
idle() {
	local name=$1 log=$2 t0 rc
	shift 2
	t0=$(date +%s)
	( "$@"; rc=$?; children_cpu $BASHPID > "$log.cpu"; exit $rc ) > "$log" 2>&1
	rc=$?
	echo "$name: exit $rc after $(( $(date +%s) - t0 ))s cpu $(cat "$log.cpu" 2>/dev/null || echo 0)s"
	rm -f "$log.cpu"
}

idle "stock mutants built ahead" build/results/mutants-ahead-stock.log \
	scripts/check-mutants.sh --build-only "${stock_mutants[@]}"
idle "package: dkms build (native)" build/results/dkms-build.log scripts/check-dkms-build.sh
idle "Debian 13: series, modules, CRCs" build/results/debian13-build.log \
	scripts/check-release-build.sh 13
# Every other linux-source-6.12 in Debian 12's and 13's archives: the series
# applies from the package's minimum on, and not below it (a result kept per
# release for unchanged inputs: 15 s warm, ~150 s cold plus ~2 GB of
# downloads).
idle "Debian's 6.12 releases: series, modules, CRCs" build/results/releases.log \
	scripts/check-releases.sh
# The shim mutants start from our modules for the shim kernel (the shim
# kernel comes from the background job: cold, this waits for it).
idle "shim modules built ahead" build/results/modules-ahead-shim.log \
	bash -c 'k=$(scripts/build-kernel.sh shim) && scripts/build-modules.sh "$(cat "$k/kver")" "$k/build"'
idle "shim mutants built ahead" build/results/mutants-ahead-shim.log \
	scripts/check-mutants.sh --build-only "${shim_mutants[@]}"
echo "idle job: done"
