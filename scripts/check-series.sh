#!/bin/bash
# Check the series patch by patch: each applies with zero fuzz and passes the
# tree's checkpatch.pl --strict, and what it touches builds with the patches
# up to it, without a compiler warning. Works in build/check-series/. The
# KVM modules build here without debug info and symbol versions (it only has
# to compile).
#   src/series         the KVM modules (and the selftests, for tools/ patches):
#                      in full after the first and the last patch that change
#                      them; after a patch in between, the objects of the C
#                      files it touches in full and every other object that
#                      reads a file it touches with -fsyntax-only
#   src/mm-shim/series in a full tree: the C files each patch touches build
#                      (cross, arm64 config); the whole kernel: the shim tier
#   src/arm64/series   on top of both: arch/arm64/kvm/ (which holds virt/kvm
#                      too) cross-builds after each patch
# The verdict of a passing check is kept in the cache under a hash of
# everything it reads: the three series and their configs, the scripts it
# runs, Kbuild, the linux-source and headers versions, and the tools
# (compilers, patch, perl). A check of the same inputs shows the kept log
# and passes in a second; any change checks again in full, and a failure
# is never kept. SERIES_CHECK_AGAIN=1 checks again anyway.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/.." && pwd)
tree=$("$top/scripts/tree.sh")
work="$top/build/check-series"

need_tools aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu
inputs_key=$( {
	hash_inputs "$0" "$top"/scripts/{lib,prepare,build-modules,build-selftests,tree,headers,kernel-version,debian-archive}.sh \
		"$top/Kbuild" "$top/VERSION" $(find "$top/src" -type f | LC_ALL=C sort)
	"$top/scripts/kernel-version.sh" pkgver
	"$top/scripts/kernel-version.sh" kver
	for t in gcc "$debian_gcc" aarch64-linux-gnu-gcc ccache patch perl; do "$t" --version 2>&1 | head -n 2; done
} | sha256sum | cut -c1-16)
kept="$KVM_GMEM_CACHE/series-check/$inputs_key.log"
if [ -f "$kept" ] && [ -z "${SERIES_CHECK_AGAIN:-}" ]; then
	step "the series check passed for these inputs ($inputs_key) on $(date -r "$kept" '+%F %T'), as it said then:"
	sed 's/^/    /' "$kept"
	step "series OK: the result kept for these inputs (SERIES_CHECK_AGAIN=1 checks again)"
	exit 0
fi
# The KVM series builds, patch by patch, in one fixed place outside the
# clone: ccache's hash holds the compiler's paths, so a build in the clone
# would miss every object a check in another clone compiled. One check at a
# time uses it (cache_lock), and it is made afresh each time: a scratch
# directory, not a cache.
cache_lock check-series
scratch="$KVM_GMEM_CACHE/work/check-series"
rm -rf "$scratch"
mkdir -p "$work" "$scratch"
export BUILD_SRC="$scratch/src" BUILD_OBJ="$scratch/obj" BUILD_SELFTESTS="$work/selftests"

mapfile -t patches < <(grep -v '^#' "$top/src/series" | grep .)
kdir=$("$top/scripts/headers.sh" "$("$top/scripts/kernel-version.sh" kver)")
# syntax_check's compiles hit ccache as the module builds do.
module_ccache

# touches_modules PATCH: PATCH changes a file the modules build from. Kconfig
# files are not read by the module build (Kbuild sets the CONFIG_ symbols
# itself) and tools/ is the selftests'.
touches_modules() {
	grep '^+++ b/' "$1" | grep -vE '^\+\+\+ b/(tools/.*|.*/Kconfig)$' > /dev/null
}

# no_warnings LOG: a compiler warning fails the patch as an error does.
no_warnings() {
	! grep -n 'warning:' "$1" | head -20 | grep . ||
		die "compiler warnings after ${p#"$top"/src/} (log: $1)"
}

# syntax_check PATCH OBJ...: compile with -fsyntax-only, by the command of
# its last full compile, every module object but OBJ... whose dependencies
# (as kbuild recorded them) include a file PATCH touches: any error or
# warning a changed header causes anywhere in the modules fails the patch,
# at a third of the cost of compiling those objects (x86.o: 1.3 CPU-s
# against 5.8). ccache keeps the result (and the warnings) like an object's.
syntax_check() {
	local p=$1 f o n=0 failed=
	shift
	local -a pats=() cmds=()
	# The sources as after PATCH (build-modules.sh copies them for a build).
	sync_module_sources "$BUILD_SRC" "$BUILD_OBJ"
	for f in $(sed -n 's|^+++ b/||p' "$p" | grep -vE '^tools/|/Kconfig$'); do
		pats+=(-e "$BUILD_OBJ/$f")
	done
	mapfile -t cmds < <(find "$BUILD_OBJ/virt" "$BUILD_OBJ/arch" -name '.*.o.cmd' |
		xargs grep -l -F "${pats[@]}" | sort)
	rm -rf "$work/syntax"
	mkdir -p "$work/syntax"
	for f in "${cmds[@]}"; do
		o=$(sed -n '1s/^savedcmd_\([^ ]*\) := .*/\1/p' "$f")
		[[ " $* " != *" ${o#"$BUILD_OBJ"/} "* ]] || continue
		n=$((n + 1))
		{ echo "cd '$kdir' || exit 1"
		  sed -n '1s/^savedcmd_[^ ]* := //p' "$f" |
			sed -e "s| -c -o $o | -fsyntax-only |" \
			    -e "s|-Wp,-MMD,[^ ]*|-Wp,-MMD,${f%.cmd}.syntax.d|"
		} > "$work/syntax/$n.sh"
		echo "${o#"$BUILD_OBJ"/}" > "$work/syntax/$n.obj"
		grep -q -- ' -fsyntax-only ' "$work/syntax/$n.sh" || die "no compile command in $f"
	done
	step "  -fsyntax-only: $n objects that read what it touches"
	((n > 0)) || return 0
	# Each command writes its own log; xargs runs two at a time.
	seq 1 "$n" | xargs -P"$(nproc)" -I{} sh -c "sh '$work/syntax/{}.sh' > '$work/syntax/{}.log' 2>&1 || echo {} >> '$work/syntax/failed'"
	if [ -f "$work/syntax/failed" ]; then
		f=$(sort -n "$work/syntax/failed" | head -n 1)
		echo "$(cat "$work/syntax/$f.obj"):"
		head -30 "$work/syntax/$f.log"
		for f in $(sort -n "$work/syntax/failed"); do failed+=" $(cat "$work/syntax/$f.obj")"; done
		die "does not compile after ${p#$top/src/} ($(wc -l < "$work/syntax/failed") objects, logs: $work/syntax/):$failed"
	fi
	cat "$work/syntax/"*.log > "$work/syntax.log"
	no_warnings "$work/syntax.log"
}

# The first and the last patch that change the modules build them in full.
first_full= last_full=
n=0
for p in "${patches[@]}"; do
	n=$((n + 1))
	touches_modules "$top/src/$p" || continue
	first_full=${first_full:-$n}
	last_full=$n
done

n=0
for p in "${patches[@]}"; do
	n=$((n + 1))
	step "[$n/${#patches[@]}] $p (cpu so far $(children_cpu $$)s)"
	# checkpatch wants to run from the top of a kernel tree.
	if ! (cd "$tree" && perl scripts/checkpatch.pl --strict -q "$top/src/$p") > "$work/checkpatch.log" 2>&1; then
		cat "$work/checkpatch.log"
		die "checkpatch --strict: $p"
	fi
	"$top/scripts/prepare.sh" "$n" > "$work/prepare.log" 2>&1 ||
		{ cat "$work/prepare.log"; die "does not apply: $p"; }
	if ! touches_modules "$top/src/$p"; then
		step "  touches tools/ or Kconfig only: the modules are as after the patch before"
	elif [ "$n" = "$first_full" ] || [ "$n" = "$last_full" ]; then
		KVM_GMEM_COMPILE_ONLY=1 "$top/scripts/build-modules.sh" > "$work/build.log" 2>&1 ||
			{ tail -40 "$work/build.log"; die "modules do not build after $p (log: $work/build.log)"; }
		no_warnings "$work/build.log"
		step "  modules built in full"
	else
		# Objects of the C files it touches that the modules have.
		objs=()
		for f in $(sed -n 's|^+++ b/\(.*\)\.c$|\1|p' "$top/src/$p"); do
			[ ! -f "$BUILD_OBJ/$(dirname "$f")/.$(basename "$f").o.cmd" ] || objs+=("$f.o")
		done
		if ((${#objs[@]})); then
			KVM_GMEM_COMPILE_ONLY=1 KVM_GMEM_OBJECTS="${objs[*]}" "$top/scripts/build-modules.sh" \
				> "$work/build.log" 2>&1 ||
				{ tail -40 "$work/build.log"; die "${objs[*]} do not build after $p (log: $work/build.log)"; }
			no_warnings "$work/build.log"
			step "  compiled: ${objs[*]}"
		fi
		syntax_check "$top/src/$p" "${objs[@]}"
	fi
	if grep -q '^+++ b/tools/' "$top/src/$p"; then
		"$top/scripts/build-selftests.sh" guest_memfd_test > "$work/selftests.log" 2>&1 ||
			{ tail -40 "$work/selftests.log"; die "selftests do not build after $p"; }
	fi
done
kvm_ok="KVM series OK (cpu $(children_cpu $$)s): ${#patches[@]} patches apply with zero fuzz, pass checkpatch --strict and compile one by one without a warning"
step "$kvm_ok"

# checkpatch FILE: the tree's checkpatch.pl --strict, run from the tree's top.
checkpatch() {
	(cd "$tree" && perl scripts/checkpatch.pl --strict -q "$1") > "$work/checkpatch.log" 2>&1 ||
		{ cat "$work/checkpatch.log"; die "checkpatch --strict: ${1#$top/}"; }
}

# apply DIR FILE: zero fuzz, no offsets beyond what patch reports.
apply() {
	patch -d "$1" -p1 -F0 -N -s --no-backup-if-mismatch < "$2" > "$work/patch.log" 2>&1 ||
		{ cat "$work/patch.log"; die "does not apply with zero fuzz: ${2#$top/}"; }
}

# A full tree with the mm-shim and the KVM series, then the arm64 series:
# what the arm64 kernel gets. Cross-built with the arm64 kernel's config, in
# the same src/ and build/ layout as its cache dir, so ccache hits what
# build-kernel.sh arm64 compiled.
arm64="$work/arm64"
rm -rf "$arm64"
mkdir -p "$arm64"
cp -al "$tree" "$arm64/src"
export CCACHE_DIR="$KVM_GMEM_CACHE/ccache" CCACHE_MAXSIZE=8G CCACHE_BASEDIR="$arm64" CCACHE_DEPEND=1
cross=(ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu- CC="ccache aarch64-linux-gnu-gcc")
cat "$top"/src/arm64/config/*.config "$top/src/mm-shim/config/debug.config" > "$arm64/fragments.config"

# configured_objs OBJ...: those OBJs the arm64 config builds. An object
# that its Makefile puts under a CONFIG_ the arm64 kernel does not set (e.g.
# mm/mempolicy.o, CONFIG_NUMA) does not compile there, nor does another
# architecture's (arch/x86/mm/tlb.o); the shim tier's x86 kernel
# (CONFIG_NUMA=y) builds them with the whole series.
configured_objs() {
	local obj sym
	for obj in "$@"; do
		case "$obj" in
		arch/arm64/*) ;;
		arch/*)
			step "  $obj: another architecture's; the shim tier's kernel builds it" >&2
			continue
			;;
		esac
		sym=$(sed -n "s/^obj-\\\$(\(CONFIG_[A-Z0-9_]*\))[[:space:]]*+=.*\<$(basename "$obj")\>.*/\1/p" \
			"$arm64/src/$(dirname "$obj")/Makefile" | head -n 1)
		if [ -n "$sym" ] && ! grep -q "^$sym=y" "$arm64/build/.config"; then
			step "  $obj: not in the arm64 config ($sym); the shim tier's kernel builds it" >&2
			continue
		fi
		echo "$obj"
	done
}

# configure_arm64 PATCH: the arm64 config, made again (allnoconfig plus the
# fragments, as build-kernel.sh does) when there is none yet or PATCH touches
# a Kconfig file: a patch may change what Kconfig offers or selects.
configure_arm64() {
	[ ! -f "$arm64/build/.config" ] || ! grep -q '^+++ b/.*Kconfig' "$1" || return 0
	make -s -C "$arm64/src" O="$arm64/build" "${cross[@]}" \
		KCONFIG_ALLCONFIG="$arm64/fragments.config" allnoconfig > "$work/arm64-config.log" 2>&1 ||
		{ cat "$work/arm64-config.log"; die "arm64 config failed after ${1#$top/}"; }
}

# build_arm64 PATCH TARGET...: build TARGETs in the arm64 tree.
build_arm64() {
	local p=$1
	shift
	make -C "$arm64/src" O="$arm64/build" "${cross[@]}" -j"$(nproc)" "$@" \
		> "$work/arm64-build.log" 2>&1 ||
		{ tail -40 "$work/arm64-build.log"; die "$* does not build after ${p#$top/} (log: $work/arm64-build.log)"; }
}

# mm-shim: the objects of the C files each patch touches. The whole kernel
# with all of them is built by the shim tier (x86) and build-kernel.sh arm64.
mapfile -t shim < <(series_files "$top/src/mm-shim")
n=0
for p in "${shim[@]}"; do
	n=$((n + 1))
	step "mm-shim [$n/${#shim[@]}] ${p#$top/src/} (cpu so far $(children_cpu $$)s)"
	checkpatch "$p"
	apply "$arm64/src" "$p"
	configure_arm64 "$p"
	mapfile -t objs < <(sed -n 's|^+++ b/\(.*\)\.c$|\1.o|p' "$p")
	mapfile -t objs < <(configured_objs "${objs[@]}")
	((${#objs[@]} == 0)) || build_arm64 "$p" "${objs[@]}"
done
for p in "${patches[@]}"; do apply "$arm64/src" "$top/src/$p"; done
# The KVM series changes KVM's Kconfig: configure before the first arm64 build.
rm -f "$arm64/build/.config"

# arm64: arch/arm64/kvm/, which holds virt/kvm too.
mapfile -t a64 < <(series_files "$top/src/arm64")
n=0
for p in "${a64[@]}"; do
	n=$((n + 1))
	step "arm64 [$n/${#a64[@]}] ${p#$top/src/} (cpu so far $(children_cpu $$)s)"
	checkpatch "$p"
	apply "$arm64/src" "$p"
	configure_arm64 "$p"
	build_arm64 "$p" arch/arm64/kvm/
done
other_ok="mm-shim and arm64 series OK (cpu $(children_cpu $$)s): ${#shim[@]} + ${#a64[@]} patches apply with zero fuzz, pass checkpatch --strict and build one by one"
step "$other_ok"

# Passed: keep the log under the inputs' key (a failure exits before this).
mkdir -p "$(dirname "$kept")"
printf '%s\n' "$kvm_ok" "$other_ok" > "$kept.tmp"
mv "$kept.tmp" "$kept"
prune_old "$kept" "$KVM_GMEM_CACHE/series-check/"*.log
