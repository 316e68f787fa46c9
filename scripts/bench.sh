#!/bin/bash
# shellcheck source-path=SCRIPTDIR
# make bench (issue 9): what guest_memfd mmap() costs against memfd (shmem)
# and anonymous memory, and that a guest_memfd-backed VM is counted once.
#
# Builds tests/bench/gmem_bench, runs it in a TCG guest (qemu/run-program.sh)
# with our modules and then with Debian's (MODULES=stock), one guest at a
# time, and writes build/results/bench/:
#   bench.txt   the table: median [min-max] per case and variant, the cost
#               ratio to the reference column, ours and stock side by side,
#               the targets of issue 9, and agreement with the previous run
#   bench.csv   the same numbers, one row per case and variant
#   bench.png   gnuplot bar chart of the ratios with their min-max
#   ours.csv, stock.csv, ours.log, stock.log   what each guest run produced
#   bench.prev.csv   the previous run's bench.csv, if there was one
# Environment: BENCH_REPS (default 7), BENCH_BOOT_REPS (the Linux boot
# rounds: BENCH_REPS when that is given, else 9, the fewest whose 95 %
# interval of the median drops each side's most extreme round),
# BENCH_BOOT_MAX (rounds in all for a boot target row still undecided after
# those: BENCH_BOOT_REPS when BENCH_REPS is given, else 21; BENCH_BOOT_MORE=
# CASE,... counts those rows undecided, to run that path), BENCH_SCALE
# (sizes, default 1),
# BENCH_STOCK=0 to skip the stock run, TIER=stock|shim (guest kernel),
# NUMA=2 for the numa_first_touch rows (n/a with one node),
# BENCH_CASES=SUBSTRING[,...] to run only the cases whose names contain one
# (e.g. BENCH_CASES=ndm_ TIER=shim BENCH_STOCK=0 for the NO_DIRECT_MAP rows),
# BENCH_REPORT_ONLY=1 to only redo the table and chart from ours.csv and
# stock.csv.
# Exit status: non-zero when a case failed to run in either guest, or is n/a
# with our modules where they must measure it (n/a is documented only for
# NO_DIRECT_MAP rows outside the shim kernel and NUMA rows with one node;
# with Debian's modules n/a is expected); a missed target is only reported.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
. "$here/lib.sh"

reps=${BENCH_REPS:-7}
boot_reps=${BENCH_BOOT_REPS:-${BENCH_REPS:-9}}
# More rounds for an undecided target row (run_boot), none when BENCH_REPS
# asks for a quick run.
boot_max=${BENCH_BOOT_MAX:-$([ -n "${BENCH_REPS:-}" ] && echo "$boot_reps" || echo 21)}
scale=${BENCH_SCALE:-1}
out="$top/build/results/bench"
bin="$top/build/bench/gmem_bench"
mkdir -p "$out"

"$here/install-deps.sh" qemu
"$here/install-deps.sh" bench
[ -f "$top/build/src/usr/include/linux/kvm.h" ] || die "no prepared tree: run make modules first"
make -s -C "$top/tests/bench" KVM_GMEM_SRC="$top/build/src" OUT="$top/build/bench"

# run_guest NAME [ENV...]: one guest run; its CSV lands in $out/NAME.csv.
run_guest() {
	local name=$1 rc=0 csv="$top/build/share/run/results/bench.csv"
	shift
	step "bench: guest run with $name modules ($reps reps)"
	rm -f "$out/$name.csv" "$csv"
	env "$@" RUN_TIMEOUT=480 "$top/qemu/run-program.sh" "$bin" -r "$reps" -s "$scale" \
		${BENCH_CASES:+-c "$BENCH_CASES"} > "$out/$name.log" 2>&1 || rc=$?
	if [ -f "$csv" ] && grep -q '^meta,seconds,' "$csv"; then
		cp "$csv" "$out/$name.csv"
	else
		tail -n 20 "$out/$name.log" >&2
		die "bench: the $name guest run left no complete bench.csv (status $rc): see $out/$name.log"
	fi
	if [ "$rc" != 0 ]; then
		step "bench: some $name cases failed to run (status $rc): see # lines in $out/$name.log"
		failed_runs+=("$name")
	fi
	step "bench: $name: $(sed -n 's/^meta,seconds,//p' "$out/$name.csv") s in the guest"
}

# The boot rows with a target: case, variant, its kind, the reference's
# kind, the target. The report's verdicts and the added rounds read this.
boot_targets="boot_to_init gmem gmem anon 1.05
boot_fill gmem gmem anon 1.05
boot_huge_to_init gmem_huge huge thp 1.00
boot_huge_fill gmem_huge huge thp 1.00
ndm_boot_to_init gmem_ndm ndm gmem 1.30
ndm_boot_fill gmem_ndm ndm gmem 1.30"

# boot_pass FIRST LAST "KINDS" RESULTS: rounds FIRST..LAST of the boots of
# KINDS, interleaved, in one guest; the rounds' TAP is RESULTS/boot-bench.tap.
boot_pass() {
	local first=$1 last=$2 kinds=$3 results=$4 stage="$top/build/stage/bench-boot" rc=0
	rm -rf "$stage" "$results"
	mkdir -p "$stage"
	cp "$top/build/tests/gmem_linux_boot_test" "$top/build/tests/boot-init" "$stage/"
	cp "$("$top/qemu/stock-kernel.sh")/vmlinuz" "$stage/boot-vmlinuz"
	cat > "$stage/boot-bench" <<EOS
#!/bin/sh
d=\$(dirname "\$0")
batch=/sys/module/kvm/parameters/gmem_ndm_batch
for rep in \$(seq $first $last); do
	for kind in $kinds; do
		echo "# bench round \$rep kind \$kind"
		if [ "\$kind" = ndm0 ]; then
			was=\$(cat \$batch)
			echo 0 > \$batch
			"\$d/gmem_linux_boot_test" -M ndm 2>&1 | grep -E '^(# time:|not ok|Bail)' |
				grep -v '^not ok .*NO_DIRECT_MAP: '
			echo "\$was" > \$batch
		else
			"\$d/gmem_linux_boot_test" -M "\$kind" 2>&1 | grep -E '^(# time:|not ok|Bail)'
		fi
	done
done
EOS
	chmod +x "$stage/boot-bench"
	echo "boot-bench $(((last - first + 1) * $(wc -w <<< "$kinds") * 120)) exit-status" > "$stage/list"
	# The tier's boot variant: one host thread per vCPU (qemu/test-tier.sh).
	# init_on_free=1 in L1: under nested TCG, L1's first write to a page
	# the previous L2 used costs up to ~1 ms (532 ms for a 2 MiB folio),
	# and without it each boot paid that for memory its predecessor left,
	# by migratetype: 2 MiB guest_memfd after 2 MiB guest_memfd, THP after
	# THP (docs/benchmarks.md#2-mib-folios). Freeing pays it at teardown.
	# The guest's limit grows with its boots (15-20 s each, a retried
	# hang more): 900 s cut the 48 boots of 12 more rounds at the last.
	local limit=$((300 + (last - first + 1) * $(wc -w <<< "$kinds") * 30))
	((limit > 900)) || limit=900
	QEMU_TIMEOUT=${QEMU_TIMEOUT:-$limit} \
		"$top/qemu/test-tier.sh" "${TIER:-stock}-boot" --tier bench-boot --results "$results" \
		--tests "$stage" --expect "" --append "init_on_free=1" >> "$out/boot.log" 2>&1 || rc=$?
	[ -f "$results/boot-bench.tap" ] || die "bench: the boot run left no output (status $rc): see $out/boot.log"
}

# boot_rows TAP...: the boot rows of ours.csv from the rounds' TAP.
# rows: summary,CASE,VARIANT,s,REF,median,min,max,n and ratio,CASE,VARIANT,REF,median,lo,hi,n
boot_rows() {
	awk '
	function med(a, n,   i, j, t) {
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	# The rank k of a distribution-free interval [a(k), a(n+1-k)] (a sorted)
	# that holds the median with at least 95 % confidence: the largest k
	# with 2 P(Bin(n, 1/2) <= k - 1) <= 0.05; 1 (min-max) below 6 rounds,
	# where no such k exists (5 rounds: 94 %).
	function ci_rank(n,   k, c, p, j) {
		k = 1; c = 0; p = 1
		for (j = 0; j < n; j++) p /= 2
		for (j = 0; j < n; j++) {
			c += p
			if (2 * c > 0.05) break
			k = j + 1
			p = p * (n - j) / (j + 1)
		}
		return k
	}
	function row(c, v, ref, what, refwhat,   n, m, r, k, lo, hi, x, q) {
		n = 0; m = 0; lo = ""; hi = ""
		for (r = 1; r <= rounds; r++) {
			k = what SUBSEP v SUBSEP r
			if (!(k in t) || ((v SUBSEP r) in bad) || ((ref SUBSEP r) in bad)) continue
			x[++n] = t[k]
			if (lo == "" || t[k] < lo) lo = t[k]
			if (hi == "" || t[k] > hi) hi = t[k]
			if ((refwhat SUBSEP ref SUBSEP r) in t) q[++m] = t[k] / t[refwhat SUBSEP ref SUBSEP r]
		}
		if (n == 0) { printf "summary,%s,%s,s,%s,n/a,,,0,boot did not finish\n", c, name[v], name[ref]; return }
		printf "summary,%s,%s,s,%s,%g,%g,%g,%d,\n", c, name[v], name[ref], med(x, n), lo, hi, n
		if (m == 0) return
		# med() sorts q: the interval is of ranks, not min-max.
		r = med(q, m); k = ci_rank(m)
		printf "ratio,%s,%s,%s,%g,%g,%g,%d\n", c, name[v], name[ref], r, q[k], q[m + 1 - k], m
	}
	BEGIN {
		name["anon"] = "anon"; name["gmem"] = "gmem"
		name["ndm"] = "gmem_ndm"; name["ndm0"] = "gmem_ndm_nobatch"
		name["thp"] = "anon_thp"; name["huge"] = "gmem_huge"
	}
	/^# bench round / { r = $4; kind = $6; if (r > rounds) rounds = r; next }
	/^(not ok|Bail)/ { bad[kind SUBSEP r] = 1; next }
	/^# time: boot to init/ { t["boot" SUBSEP kind SUBSEP r] = $(NF - 1); next }
	/^# time: guest fill and check/ { t["fill" SUBSEP kind SUBSEP r] = $(NF - 1) / 1000; next }
	END {
		row("boot_to_init", "anon", "anon", "boot", "boot")
		row("boot_to_init", "gmem", "anon", "boot", "boot")
		row("boot_fill", "anon", "anon", "fill", "fill")
		row("boot_fill", "gmem", "anon", "fill", "fill")
		row("boot_huge_to_init", "thp", "thp", "boot", "boot")
		row("boot_huge_to_init", "huge", "thp", "boot", "boot")
		row("boot_huge_fill", "thp", "thp", "fill", "fill")
		row("boot_huge_fill", "huge", "thp", "fill", "fill")
		if (ndm) {
			row("ndm_boot_to_init", "gmem", "gmem", "boot", "boot")
			row("ndm_boot_to_init", "ndm", "gmem", "boot", "boot")
			row("ndm_boot_to_init", "ndm0", "gmem", "boot", "boot")
			row("ndm_boot_fill", "gmem", "gmem", "fill", "fill")
			row("ndm_boot_fill", "ndm", "gmem", "fill", "fill")
			row("ndm_boot_fill", "ndm0", "gmem", "fill", "fill")
		}
	}' ndm="$([ "${TIER:-stock}" = shim ] && echo 1 || echo 0)" "$@"
}

# undecided_kinds ROWS: the kinds of the target rows in ROWS whose interval
# straddles their target (both kinds of each), or nothing. BENCH_BOOT_MORE=
# CASE[,CASE...] counts those target rows undecided whatever their interval
# (make check's front-end step: the added rounds run).
undecided_kinds() {
	awk -F, -v force=",${BENCH_BOOT_MORE:-}," '
	NR == FNR { lim[$1 "," $2] = $5; kinds[$1 "," $2] = $3 " " $4; next }
	$1 == "ratio" && (($2 "," $3) in lim) &&
	    (index(force, "," $2 ",") || $6 <= lim[$2 "," $3] && $7 > lim[$2 "," $3]) {
		n = split(kinds[$2 "," $3], k, " ")
		for (i = 1; i <= n; i++) if (!(k[i] in seen)) { seen[k[i]] = 1; printf "%s ", k[i] }
	}' <(tr ' ' , <<< "$boot_targets") "$1" | sed 's/ $//'
}

# run_boot: the boot rows (issue 28). gmem_linux_boot_test boots Debian's
# kernel in a nested guest $boot_reps times per memory kind, interleaved; its
# "# time:" lines become rows of ours.csv: boot to init and the guest's
# 64 MiB fill on guest_memfd against anonymous memory (4 KiB pages both),
# on 2 MiB guest_memfd folios (huge) against anonymous memory with THP (thp),
# and with TIER=shim NO_DIRECT_MAP against plain guest_memfd, with its
# 16-page fault windows (ndm) and without them (ndm0: gmem_ndm_batch=0,
# what NO_DIRECT_MAP alone costs). Ratios are per round: the median over
# the rounds and its 95 % distribution-free interval [r(k), r(n+1-k)]
# (ci_rank(); min-max below 9 rounds). A target row whose interval
# straddles its target after those rounds gets more rounds of its two
# kinds, up to $boot_max in all (issue 44: 9 rounds left the fill row
# undecided in one run of two), and its verdict is of all of them: that is
# a second look at the same row, so its 95 % is nominal. A round whose boot
# did not pass (a "not ok" of the boot's own cases, or "Bail out!") is
# dropped, and the drop is said; the window-less boot's flush-count case
# fails by design and is not counted.
run_boot() {
	local kinds="anon gmem thp huge" more taps=("$out/boot/boot-bench.tap") dropped
	[ "${TIER:-stock}" != shim ] || kinds="anon gmem thp huge ndm ndm0"
	step "bench: Linux boots, $boot_reps rounds of: $kinds"
	make -s -C "$top/tests" KVM_GMEM_SRC="$top/build/src" OUT="$top/build/tests" \
		"$top/build/tests/gmem_linux_boot_test" "$top/build/tests/boot-init"
	: > "$out/boot.log"
	rm -rf "$out/boot-more"
	boot_pass 1 "$boot_reps" "$kinds" "$out/boot"
	boot_rows "${taps[@]}" > "$out/boot-rows.csv"
	more=$(undecided_kinds "$out/boot-rows.csv")
	if [ -n "$more" ] && ((boot_max > boot_reps)); then
		step "bench: undecided after $boot_reps rounds: rounds $((boot_reps + 1))-$boot_max of: $more"
		boot_pass "$((boot_reps + 1))" "$boot_max" "$more" "$out/boot-more"
		taps+=("$out/boot-more/boot-bench.tap")
		boot_rows "${taps[@]}" > "$out/boot-rows.csv"
	fi
	cat "$out/boot-rows.csv" >> "$out/ours.csv"
	dropped=$(awk '/^# bench round /{ k = $4 " " $6 } /^(not ok|Bail)/ && !(k in d) { d[k] = 1; n++ } END { print n + 0 }' \
		"${taps[@]}")
	step "bench: boot rows: $(grep -c '^summary,.*boot' "$out/boot-rows.csv"), $dropped round(s) dropped for a failed boot (log: $out/boot.log)"
}

failed_runs=()
if [ "${BENCH_REPORT_ONLY:-0}" = 0 ]; then
	run_guest ours MODULES=ours
	case ",${BENCH_CASES:-boot}," in *boot*) run_boot ;; esac
	if [ "${BENCH_STOCK:-1}" != 0 ]; then
		run_guest stock MODULES=stock
	else
		: > "$out/stock.csv"
	fi
	[ ! -f "$out/bench.csv" ] || mv "$out/bench.csv" "$out/bench.prev.csv"
fi
[ -f "$out/ours.csv" ] || die "no $out/ours.csv: run make bench"
[ -f "$out/stock.csv" ] || : > "$out/stock.csv"

# --- bench.csv: ours and stock side by side, with the ratios --------------
# ratio: for pages/s the cost per page against the reference variant of the
# same case: gmem_bench's paired ratios (per rep, ref pages/s / pages/s of two
# runs back to back; median and min-max over the reps); for the reference
# row itself ref median / its own median, min, max; for footprint the value
# itself (guest size = 1); none for a count (vcpu_huge_faults).
awk -F, -v OFS=, '
function ratio(med, ref) { return ref == "" || med == "" || med == 0 ? "" : ref / med }
FNR == 1 { side = FILENAME ~ /stock\.csv$/ ? "stock" : "ours" }
$1 == "ratio" { k = $2 SUBSEP $3; pq[side, k] = $5; pqlo[side, k] = $6; pqhi[side, k] = $7 }
$1 == "summary" {
	k = $2 SUBSEP $3
	if (!(k in seen)) {
		# rows grouped by case, in the order the cases first appear
		if (!($2 in ncase)) corder[++nc] = $2
		seen[k] = 1; rows[$2, ++ncase[$2]] = k; cas[k] = $2; var[k] = $3; unit[k] = $4; ref[k] = $5
	}
	if ($6 ~ /^[0-9.e+-]+$/) { med[side, k] = $6; lo[side, k] = $7; hi[side, k] = $8; cnt[side, k] = $9 }
	else { med[side, k] = ""; note[side, k] = $6 }
}
END {
	print "case,variant,unit,ref,ours_median,ours_min,ours_max,ours_n,ours_ratio,ours_ratio_min,ours_ratio_max," \
	      "stock_median,stock_min,stock_max,stock_n,stock_ratio,stock_ratio_min,stock_ratio_max"
	for (c = 1; c <= nc; c++) for (j = 1; j <= ncase[corder[c]]; j++) {
		k = rows[corder[c], j]; line = cas[k] OFS var[k] OFS unit[k] OFS ref[k]
		for (s = 1; s <= 2; s++) {
			side = s == 1 ? "ours" : "stock"
			if (med[side, k] == "") {
				v = (side, k) in note ? note[side, k] : "n/a"
				line = line OFS v OFS OFS OFS 0 OFS OFS OFS
				continue
			}
			if ((side, k) in pq) {
				q = pq[side, k]; qlo = pqlo[side, k]; qhi = pqhi[side, k]
			} else if (unit[k] == "pages/s") {
				r = med[side, cas[k] SUBSEP ref[k]]
				q = ratio(med[side, k], r); qlo = ratio(hi[side, k], r); qhi = ratio(lo[side, k], r)
			} else if (unit[k] == "faults") {
				q = qlo = qhi = ""	# a count: "vCPU faults" in the targets compares them
			} else {
				q = med[side, k]; qlo = lo[side, k]; qhi = hi[side, k]
			}
			line = line OFS med[side, k] OFS lo[side, k] OFS hi[side, k] OFS cnt[side, k] OFS q OFS qlo OFS qhi
		}
		print line
	}
}' "$out/ours.csv" "$out/stock.csv" > "$out/bench.csv"

# --- n/a with our modules: only where the platform, not they, lacks it ------
# A row that is n/a in ours.csv (gmem_bench could not run the case) is a
# failure, but for the documented ones: NO_DIRECT_MAP rows outside the shim
# kernel (Debian's kernel lacks mm-shim 0007's exports) and NUMA rows in a
# guest with one node (make bench NUMA=2).
shim_guest=0
case "$(sed -n "s/^meta,kernel,//p" "$out/ours.csv")" in
*-kvm-gmem-shim) shim_guest=1 ;;
esac
# na_allowed(CASE): why CASE may be n/a in this run, "" if it may not (awk,
# for both the check and the targets below).
na_allowed='function na_allowed(c) {
	if (c ~ /^(ndm|uffd)_/ && !shim) return "needs TIER=shim"
	if (c ~ /^numa_/ && nodes < 2) return "needs NUMA=2"
	return ""
}'
unexpected_na=$(awk -F, -v shim="$shim_guest" -v nodes="${NUMA:-1}" "$na_allowed"'
	$1 == "summary" && $6 == "n/a" && na_allowed($2) == "" { printf "%s/%s (%s); ", $2, $3, $10 }' \
	"$out/ours.csv")

# --- bench.txt ---------------------------------------------------------------
meta() { sed -n "s/^meta,$2,//p" "$out/$1.csv" 2>/dev/null | head -n 1; }
{
	echo "kvm-gmem benchmarks (issue 9), $(date -u '+%Y-%m-%d %H:%M UTC'), make bench"
	echo "guest: $(meta ours kernel || true) (TIER=${TIER:-stock}) under QEMU TCG," \
	     "2 vCPUs round-robin, 3 GiB; host: $(nproc) CPUs, shared"
	echo "ours: kvm $(meta ours kvm_version), $(meta ours seconds) s;" \
	     "stock: Debian's modules, $(meta stock seconds) s; $(meta ours reps) reps per case, interleaved, fork per case"
	echo "sizes: faults $(meta ours fault_pages) pages (1t: all, 2t: half each); punch $(meta ours punch_pages) pages x $(meta ours punch_cycles);" \
	     "vCPU $(meta ours vcpu_pages) pages (2 MiB rows: $(meta ours vcpu_huge_pages)); footprint guest $(($(meta ours footprint_pages) * 4 / 1024)) MiB," \
	     "vCPU writes $(meta ours footprint_vcpu_pages) pages of it"
	echo
	echo "median [min-max] of the reps. ratio (pages/s): time per page against the ref variant, per rep"
	echo "(ref pages/s / pages/s, the two run back to back; > 1 = slower), median [min-max] over the reps"
	echo "(boot rows: the median's 95 % interval from 9 rounds on, min-max below; a target row"
	echo "undecided after $boot_reps rounds gets rounds up to $boot_max: n is in bench.csv);"
	echo "on the ref row its own spread. footprint: MemAvailable drop, Shmem and Unevictable growth, each"
	echo "/ guest size (ref = guest size). The anon variant uses 4 KiB pages (MADV_NOHUGEPAGE)."
	echo
	awk -F, '
	function f(v, u) {
		if (v == "") return ""
		if (u != "pages/s") return sprintf("%.4f", v)
		if (v >= 1e6) return sprintf("%.3gM", v / 1e6)
		if (v >= 1e3) return sprintf("%.3gk", v / 1e3)
		return sprintf("%.3g", v)
	}
	function cell(m, lo, hi, u) { return m ~ /^[0-9.e+-]+$/ ? sprintf("%s [%s-%s]", f(m, u), f(lo, u), f(hi, u)) : m }
	function rat(q, lo, hi) { return q == "" ? "" : sprintf("%.3f [%.2f-%.2f]", q, lo, hi) }
	NR == 1 {
		printf "%-22s %-12s %-8s %-6s | %-24s %-20s | %-24s %-20s\n", "case", "variant", "unit", "ref",
		       "ours", "ratio", "stock", "ratio"
		next
	}
	$1 != last { if (last != "") print ""; last = $1 }
	{
		printf "%-22s %-12s %-8s %-6s | %-24s %-20s | %-24s %-20s\n", $1, $2, $3, $4,
		       cell($5, $6, $7, $3), rat($9, $10, $11), cell($12, $13, $14, $3), rat($16, $17, $18)
	}' "$out/bench.csv"
	echo
	echo "targets (ours):"
	awk -F, -v shim="$shim_guest" -v nodes="${NUMA:-1}" -v boot_targets="$boot_targets" "$na_allowed"'
	BEGIN {
		n = split(boot_targets, l, "\n")
		for (i = 1; i <= n; i++) { split(l[i], w, " "); blim[w[1] "," w[2]] = w[5] }
	}
	function chk(what, q, lim) {
		if (q == "" && na_allowed($1) != "") {
			printf "  %-44s n/a (%s)\n", what, na_allowed($1)
			return
		}
		if (q == "") { printf "  %-44s MISSED (not measured: %s)\n", what, $5 == "" ? "no result" : $5; return }
		# The verdict by the median, with the interval of the rounds next
		# to it: one that straddles the target decides nothing.
		printf "  %-44s %.3f [%.2f-%.2f] (<= %.2f) %s%s\n", what, q, $10, $11, lim,
		       q <= lim ? "met" : "MISSED",
		       ($10 <= lim && $11 > lim) ? sprintf(" (undecided: the interval of %d rounds straddles the target)", $8) : ""
	}
	$1 ~ /^fault_/ && $1 != "fault_huge" && $2 == "gmem" { chk("guest_memfd first-touch fault vs memfd, " substr($1, 7), $9, 1.05) }
	$1 == "vcpu_first" && $2 ~ /^gmem/ { chk("vCPU first touch, " $2 " vs anon", $9, 1.10) }
	$1 == "fault_huge" && $2 == "gmem_huge" { chk("2 MiB guest_memfd first touch vs memfd THP", $9, 1.00) }
	$1 == "write_huge" && $2 == "gmem_huge" { chk("write() into 2 MiB vs 4 KiB guest_memfd folios", $9, 1.00) }
	$1 == "vcpu_huge_first" && $2 == "gmem_huge" { chk("vCPU first touch, 2 MiB guest_memfd vs anon THP", $9, 1.00) }
	$1 == "footprint_memavail" && $2 == "gmem" { chk("footprint, guest_memfd VM, MemAvailable", $9, 1.02) }
	$1 == "footprint_memavail" && $2 == "gmem_inplace" { chk("footprint, VM converting in place, MemAvailable", $9, 1.02) }
	$1 == "footprint_memavail" && $2 == "gmem_huge" { chk("footprint, 2 MiB guest_memfd VM, MemAvailable", $9, 1.02) }
	$1 == "numa_first_touch" && $2 == "gmem_bind_local" { chk("NUMA policy lookup: bound to the local node vs none", $9, 1.03) }
	$1 == "numa_first_touch" && $2 == "gmem_bind_remote" { printf "  %-44s %s (no target)\n", "NUMA: bound to the remote node vs none", $9 == "" ? "n/a" : sprintf("%.3f", $9) }
	$1 == "boot_to_init" && $2 == "gmem" { chk("Linux boot to init, guest_memfd vs anon", $9, blim[$1 "," $2]) }
	$1 == "boot_fill" && $2 == "gmem" { chk("Linux guest 64 MiB fill, guest_memfd vs anon", $9, blim[$1 "," $2]) }
	$1 == "boot_huge_to_init" && $2 == "gmem_huge" { chk("Linux boot to init, 2 MiB gmem vs anon THP", $9, blim[$1 "," $2]) }
	$1 == "boot_huge_fill" && $2 == "gmem_huge" { chk("Linux 64 MiB fill, 2 MiB gmem vs anon THP", $9, blim[$1 "," $2]) }
	$1 == "ndm_boot_to_init" && $2 == "gmem_ndm" { chk("Linux boot, NO_DIRECT_MAP + windows vs gmem", $9, blim[$1 "," $2]) }
	$1 == "ndm_boot_fill" && $2 == "gmem_ndm" { chk("Linux fill, NO_DIRECT_MAP + windows vs gmem", $9, blim[$1 "," $2]) }
	$1 ~ /^ndm_boot_/ && $2 == "gmem_ndm_nobatch" { printf "  %-44s %s (gmem_ndm_batch=0: NO_DIRECT_MAP alone, no target)\n", "Linux " substr($1, 10) ", NO_DIRECT_MAP alone vs gmem", $9 == "" ? "n/a" : sprintf("%.3f", $9) }
	$1 == "ndm_first_touch" && $2 == "gmem_ndm" { chk("NO_DIRECT_MAP first touch vs plain gmem", $9, 1.30) }
	$1 == "ndm_fallocate" && $2 == "gmem_ndm" { printf "  %-44s %s (zeroes what plain gmem zeroes at fault: see fallocate_touch)\n", "NO_DIRECT_MAP fallocate() alone vs plain gmem", $9 == "" ? "n/a" : sprintf("%.3f", $9) }
	$1 == "ndm_fallocate_touch" && $2 == "gmem_ndm" { chk("NO_DIRECT_MAP fallocate()+touch vs plain gmem", $9, 1.20) }
	$1 == "ndm_write" && $2 == "gmem_ndm" { chk("NO_DIRECT_MAP write() vs plain gmem", $9, 1.20) }
	$1 == "uffd_restore" && $2 == "gmem" { chk("userfaultfd restore, guest_memfd vs memfd", $9, 1.10) }
	$1 == "uffd_restore" && $2 == "gmem_ndm" { chk("userfaultfd restore, NO_DIRECT_MAP vs memfd", $9, 1.30) }
	$1 == "ndm_first_touch_huge" && $2 == "gmem_ndm_huge" { chk("NO_DIRECT_MAP first touch, 2 MiB vs 2 MiB gmem", $9, 1.30) }
	$1 == "ndm_write_huge" && $2 == "gmem_ndm_huge" { chk("NO_DIRECT_MAP write(), 2 MiB vs 2 MiB gmem", $9, 1.20) }
	$1 ~ /^ndm_/ && $2 == "gmem_ndm_upstream" { printf "  %-44s %s (upstream, no target)\n", "NO_DIRECT_MAP flush per folio, " substr($1, 5), $9 == "" ? "n/a" : sprintf("%.3f", $9) }
	' "$out/bench.csv"
	# vCPU faults of the first touch: 4 KiB over 2 MiB guest_memfd folios,
	# 512 at best (the code's page and the tail take a few more).
	awk -F, '$1 == "summary" && $2 == "vcpu_huge_faults" { f[$3] = $6 }
	END {
		if (f["gmem"] == "" || f["gmem_huge"] == "" || f["gmem_huge"] + 0 == 0) {
			printf "  %-44s MISSED (not measured)\n", "vCPU faults, 4 KiB / 2 MiB guest_memfd"
			exit
		}
		q = f["gmem"] / f["gmem_huge"]
		printf "  %-44s %.0f (%d / %d faults; >= 256) %s\n", "vCPU faults, 4 KiB / 2 MiB guest_memfd",
		       q, f["gmem"], f["gmem_huge"], (q >= 256 ? "met" : "MISSED")
	}' "$out/ours.csv"
	if [ -f "$out/bench.prev.csv" ]; then
		echo
		echo "reproducibility against the previous make bench (bench.prev.csv): ratio rows compare"
		echo "ratios, reference rows their medians; agree = each run's value inside the other's min-max"
		awk -F, '
		function num(v) { return v ~ /^[0-9.e+-]+$/ }
		function cmp(a, alo, ahi, b, blo, bhi) {
			if (!num(a) || !num(b)) return ""
			if (a >= blo && a <= bhi && b >= alo && b <= ahi) return "agree"
			if (a >= blo && a <= bhi || b >= alo && b <= ahi) return "agree one way"
			return "DIFFER"
		}
		FNR == 1 { file++; next }
		{
			k = $1 "," $2; isref = $2 == $4
			for (s = 0; s < 2; s++) {
				o = s ? 12 : 5; key = k SUBSEP s
				if (isref || $3 != "pages/s") { v = $(o); lo = $(o + 1); hi = $(o + 2) }
				else { v = $(o + 4); lo = $(o + 5); hi = $(o + 6) }
				if (file == 1) { pv[key] = v; plo[key] = lo; phi[key] = hi; continue }
				if (!(key in pv)) continue
				r = cmp(v, lo, hi, pv[key], plo[key], phi[key])
				if (r == "") continue
				t = isref && $3 == "pages/s" ? "abs" : "ratio"
				total[t]++; if (r == "agree") ok[t]++; else if (r == "DIFFER") bad[t]++
				if (r != "agree")
					printf "  %-36s %-5s %s: now %.4g [%.4g-%.4g], before %.4g [%.4g-%.4g]\n", k,
					       s ? "stock" : "ours", r, v, lo, hi, pv[key], plo[key], phi[key]
			}
		}
		END {
			printf "  ratios and footprints: %d of %d agree both ways, %d one way, %d differ\n",
			       ok["ratio"], total["ratio"], total["ratio"] - ok["ratio"] - bad["ratio"], bad["ratio"]
			printf "  absolute pages/s of the references: %d of %d agree both ways, %d one way, %d differ\n",
			       ok["abs"], total["abs"], total["abs"] - ok["abs"] - bad["abs"], bad["abs"]
			print "  (absolute rates follow the host load on the shared machine; ratios are taken per rep)"
		}
		' "$out/bench.prev.csv" "$out/bench.csv"
	fi
} > "$out/bench.txt"

# --- bench.png -------------------------------------------------------------------
# One bar pair (ours, stock) per non-reference row: its ratio, with min-max.
awk -F, -v OFS='\t' 'NR > 1 && $2 != $4 && ($3 == "pages/s" || $1 == "footprint_memavail") {
	o = $9 == "" ? "NaN" OFS "NaN" OFS "NaN" : $9 OFS $10 OFS $11
	s = $16 == "" ? "NaN" OFS "NaN" OFS "NaN" : $16 OFS $17 OFS $18
	print "\"" $1 " " $2 "\"", o, s
}' "$out/bench.csv" > "$out/bench.dat"
# A run of only the boot rows (BENCH_CASES=boot) has no bar to draw.
if [ ! -s "$out/bench.dat" ]; then
	rm -f "$out/bench.png"
	step "bench: no pages/s or footprint rows: no chart"
else
gnuplot <<EOF
set terminal pngcairo size 1400,760 font "sans,10" noenhanced
set output "$out/bench.png"
set title "guest_memfd mmap(): cost per page vs reference (host: memfd, vCPU: anon) and footprint / guest size\n(TCG guest, median of $(meta ours reps) reps with min-max; ours vs Debian's stock modules; missing bar = n/a)"
set datafile separator "\t"
set datafile missing "NaN"
set style data histogram
set style histogram errorbars gap 2 lw 1
set style fill solid 0.7 border -1
set boxwidth 0.9
set xtics rotate by -40 left nomirror
set ylabel "ratio, log scale (1 = as the reference; < 1 = faster / smaller)"
set logscale y 2
set yrange [0.25:8]
set ytics ("1/4" 0.25, "1/2" 0.5, "0.8" 0.8, "1" 1, "1.25" 1.25, "2" 2, "4" 4, "8" 8)
set grid ytics
set key top left
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 1.5 lc rgb "black"
set bmargin 12
set rmargin 12
plot "$out/bench.dat" using 2:3:4:xtic(1) title "ours" lc rgb "#3b6fb6", \
     "" using 5:6:7 title "stock" lc rgb "#d08a2c"
EOF
fi
rm -f "$out/bench.dat"

cat "$out/bench.txt"
step "bench: results in $out/ (bench.txt, bench.csv, bench.png)"
[ -z "$unexpected_na" ] || die "bench: n/a with our modules, where they must measure: ${unexpected_na%; }"
((${#failed_runs[@]} == 0)) || die "bench: cases failed to run with ${failed_runs[*]} modules: see ${failed_runs[*]/%/.log} in $out"
