// SPDX-License-Identifier: GPL-2.0
/*
 * gmem_fsx: an fsx for guest_memfd (issue 41, its first step: one file, the
 * host's operations). Random operations on a guest_memfd, each on a random
 * page range; a shadow model says for every page what it must hold and
 * whether the file has it, and every read and every probe is checked against
 * it. A mismatch stops the run and prints the seed, the operation number and
 * the last 50 operations; `gmem_fsx -s SEED -n OPS [-k plain|ndm]` replays a
 * run exactly.
 *
 * Operations: write and read through the mapping (each page faulted in
 * order), pwrite() (GUEST_MEMFD_FLAG_WRITE), fallocate() allocate and punch
 * hole, unmap and map again, MADV_RANDOM and MADV_NORMAL, and a probe of
 * the whole file with cachestat(). The model knows what allocates what:
 * a plain file's fault its own page; a NO_DIRECT_MAP file's fault on a hole
 * the window of src/virt/0024 (only where the page before it is there, up to
 * the end of its 16-page block, never into a range punched since the file
 * was created, not under MADV_RANDOM, none with gmem_ndm_batch=0), which the
 * probe then checks page by page. With NO_DIRECT_MAP the pages out of the
 * direct map (debugfs kvm/gmem_ndm_folios) must be the pages the file has.
 *
 * Without arguments: TAP cases, fixed seeds and one random seed (printed),
 * on a plain MMAP | INIT_SHARED | WRITE file and, where offered, a
 * NO_DIRECT_MAP one. Not yet (issue 41): vCPUs, conversion, userfaultfd,
 * KVM Userfault, kvmclock, memslot changes, threads.
 *
 * Modules without host mappings of guest_memfd: SKIP, or FAIL with ours.
 */
#include <linux/falloc.h>
#include <stdarg.h>
#include <sys/random.h>
#include <time.h>

#include "gmem_test.h"
#include "gmem_x86_guest.h"

#define NPAGES		256	/* in one page table: a window never crosses one */
#define MAXRUN		16	/* pages an operation covers at most */
#define HISTORY		50
#define NDM_FOLIOS	GMEM_DEBUGFS "/kvm/gmem_ndm_folios"
#define NDM_BATCH_PARAM	"/sys/module/kvm/parameters/gmem_ndm_batch"
#define WINDOW		16	/* KVM_GMEM_NDM_FAULT_AROUND */
#define FLAGS		(GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED | GUEST_MEMFD_FLAG_WRITE)

enum op_kind { MAP_WRITE, MAP_READ, PWRITE, FALLOC, PUNCH, REMAP, RANDOM, NORMAL, PROBE, NR_KINDS };

static const char *const kind_name[NR_KINDS] = {
	"map-write", "map-read", "pwrite", "fallocate", "punch", "remap", "madv-random",
	"madv-normal", "probe",
};

/* Out of 100: what a run is made of. */
static const int kind_weight[NR_KINDS] = { 22, 22, 12, 10, 14, 4, 3, 3, 10 };

struct op {
	long nr;
	enum op_kind kind;
	int first, n;
	uint8_t val;
};

/* What the file must be: per page, its bytes (all one value) and whether it is there. */
struct model {
	uint8_t val[NPAGES];
	bool present[NPAGES];
	bool punched[NPAGES];	/* ever, since the file was created */
	bool random;		/* MADV_RANDOM on the mapping */
};

struct run {
	uint64_t seed, rng;
	long ops;
	bool ndm;
	int batch;		/* gmem_ndm_batch */
	int vm, fd;
	uint8_t *map;
	uint8_t *buf;
	long ndm_base;
	struct model m;
	struct op history[HISTORY];
	long done;
	char *why;
	size_t whylen;
};

static long page;

static uint64_t rnd(struct run *r)
{
	/* xorshift64*: the same sequence for the same seed, everywhere. */
	r->rng ^= r->rng >> 12;
	r->rng ^= r->rng << 25;
	r->rng ^= r->rng >> 27;
	return r->rng * 2685821657736338717ULL;
}

static int rnd_below(struct run *r, int n)
{
	return (int)(rnd(r) % (uint64_t)n);
}

static void print_history(struct run *r)
{
	long from = r->done > HISTORY ? r->done - HISTORY : 0;

	ksft_print_msg("seed %llu: the last %ld operations (replay: gmem_fsx -s %llu -n %ld -k %s)\n",
		       (unsigned long long)r->seed, r->done - from, (unsigned long long)r->seed,
		       r->done, r->ndm ? "ndm" : "plain");
	for (long i = from; i < r->done; i++) {
		const struct op *o = &r->history[i % HISTORY];

		ksft_print_msg("  #%ld %s pages %d-%d value %#x\n", o->nr, kind_name[o->kind],
			       o->first, o->first + o->n - 1, o->val);
	}
}

static bool fail(struct run *r, const struct op *o, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static bool fail(struct run *r, const struct op *o, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(r->why, r->whylen, "seed %llu, op #%ld (%s pages %d-%d): %s",
		 (unsigned long long)r->seed, o->nr, kind_name[o->kind], o->first,
		 o->first + o->n - 1, what);
	print_history(r);
	return false;
}

/* A hole at @i is faulted in through the mapping: what the file then has. */
static void model_fault(struct run *r, int i)
{
	struct model *m = &r->m;
	int end = i + 1;

	if (m->present[i])
		return;
	if (r->ndm && r->batch && !m->random && i > 0 && m->present[i - 1]) {
		end = (i + WINDOW) / WINDOW * WINDOW;
		if (end > NPAGES)
			end = NPAGES;
		if (end > i + r->batch)
			end = i + r->batch;
		for (int j = i + 1; j < end; j++) {
			if (m->punched[j] || m->present[j]) {
				end = j;
				break;
			}
		}
	}
	for (int j = i; j < end; j++) {
		m->present[j] = true;
		m->val[j] = 0;
	}
}

static bool map_file(struct run *r)
{
	/* 2 MiB-aligned, so that the file sits in one page table. */
	uint8_t *area = mmap(NULL, NPAGES * page + (2UL << 20), PROT_NONE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (area == MAP_FAILED)
		return false;
	r->map = (uint8_t *)(((uintptr_t)area + (2UL << 20) - 1) & ~((2UL << 20) - 1));
	if ((uint8_t *)r->map != area)
		munmap(area, r->map - area);
	munmap(r->map + NPAGES * page, area + NPAGES * page + (2UL << 20) - (r->map + NPAGES * page));
	return mmap(r->map, NPAGES * page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		    r->fd, 0) != MAP_FAILED;
}

/* Every byte of page @i through the mapping is the model's. */
static bool check_page(struct run *r, const struct op *o, int i)
{
	const uint8_t *p = r->map + (long)i * page;

	for (long b = 0; b < page; b++) {
		if (p[b] != r->m.val[i])
			return fail(r, o, "page %d byte %ld reads %#x, want %#x", i, b, p[b],
				    r->m.val[i]);
	}
	return true;
}

/* The file has exactly the pages the model says, and NO_DIRECT_MAP counts them. */
static bool probe(struct run *r, const struct op *o)
{
	long want = 0, got, out;

	for (int i = 0; i < NPAGES; i++) {
		if (gmem_cached_pages(r->fd, (long)i * page, page) != r->m.present[i])
			return fail(r, o, "page %d is %s the file, the model says %s", i,
				    r->m.present[i] ? "not in" : "in",
				    r->m.present[i] ? "there" : "a hole");
		want += r->m.present[i];
	}
	got = gmem_cached_pages(r->fd, 0, NPAGES * page);
	if (got != want)
		return fail(r, o, "cachestat counts %ld pages, the model %ld", got, want);
	if (r->ndm) {
		out = gmem_counter(NDM_FOLIOS) - r->ndm_base;
		if (out != want)
			return fail(r, o, "%ld pages out of the direct map, the file has %ld", out, want);
	}
	return true;
}

static bool do_op(struct run *r, struct op *o)
{
	struct model *m = &r->m;
	off_t off = (off_t)o->first * page;
	size_t len = (size_t)o->n * page;

	switch (o->kind) {
	case MAP_WRITE:
		for (int i = o->first; i < o->first + o->n; i++) {
			model_fault(r, i);
			memset(r->map + (long)i * page, o->val, page);
			m->val[i] = o->val;
		}
		return true;
	case MAP_READ:
		for (int i = o->first; i < o->first + o->n; i++) {
			/* The first touch of each page faults it in. */
			volatile uint8_t first = r->map[(long)i * page];

			(void)first;
			model_fault(r, i);
			if (!check_page(r, o, i))
				return false;
		}
		return true;
	case PWRITE:
		memset(r->buf, o->val, len);
		if (pwrite(r->fd, r->buf, len, off) != (ssize_t)len)
			return fail(r, o, "pwrite: %s", strerror(errno));
		for (int i = o->first; i < o->first + o->n; i++) {
			m->present[i] = true;
			m->val[i] = o->val;
		}
		return true;
	case FALLOC:
		if (fallocate(r->fd, FALLOC_FL_KEEP_SIZE, off, len))
			return fail(r, o, "fallocate: %s", strerror(errno));
		for (int i = o->first; i < o->first + o->n; i++) {
			if (!m->present[i])
				m->val[i] = 0;
			m->present[i] = true;
		}
		return true;
	case PUNCH:
		if (fallocate(r->fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, off, len))
			return fail(r, o, "punch hole: %s", strerror(errno));
		for (int i = o->first; i < o->first + o->n; i++) {
			m->present[i] = false;
			m->punched[i] = true;
			m->val[i] = 0;
		}
		return true;
	case REMAP:
		munmap(r->map, NPAGES * page);
		m->random = false;
		if (!map_file(r))
			return fail(r, o, "mmap: %s", strerror(errno));
		return true;
	case RANDOM:
	case NORMAL:
		if (madvise(r->map, NPAGES * page, o->kind == RANDOM ? MADV_RANDOM : MADV_NORMAL))
			return fail(r, o, "madvise: %s", strerror(errno));
		m->random = o->kind == RANDOM;
		return true;
	case PROBE:
		return probe(r, o);
	default:
		return fail(r, o, "unknown operation");
	}
}

static enum op_kind pick_kind(struct run *r)
{
	int w = rnd_below(r, 100);

	for (int k = 0; k < NR_KINDS; k++) {
		if (w < kind_weight[k])
			return k;
		w -= kind_weight[k];
	}
	return PROBE;
}

/* One run: @ops operations from @seed on a fresh file (NO_DIRECT_MAP if @ndm). */
static int fsx_run(uint64_t seed, long ops, bool ndm, char *why, size_t whylen)
{
	struct run *r = calloc(1, sizeof(*r));
	unsigned long long flags = FLAGS | (ndm ? GUEST_MEMFD_FLAG_NO_DIRECT_MAP : 0);
	char batch[16] = "0";
	int ret = KSFT_FAIL;
	int kvm = -1;

	if (!r) {
		snprintf(why, whylen, "out of memory");
		return KSFT_FAIL;
	}
	*r = (struct run){ .seed = seed, .rng = seed ? seed : 1, .ops = ops, .ndm = ndm,
			   .vm = -1, .fd = -1, .why = why, .whylen = whylen };
	r->buf = malloc(MAXRUN * page);
	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	r->vm = kvm < 0 ? -1 : ioctl(kvm, KVM_CREATE_VM, 0);
	if (!r->buf || r->vm < 0) {
		snprintf(why, whylen, "/dev/kvm or KVM_CREATE_VM: %s", strerror(errno));
		goto out;
	}
	if (ndm) {
		int fd = open(NDM_BATCH_PARAM, O_RDONLY);
		ssize_t n = fd < 0 ? -1 : read(fd, batch, sizeof(batch) - 1);

		if (fd >= 0)
			close(fd);
		batch[n > 0 ? n : 0] = 0;
		r->batch = atoi(batch);
		r->ndm_base = gmem_counter(NDM_FOLIOS);
		if (r->ndm_base < 0) {
			snprintf(why, whylen, "no %s", NDM_FOLIOS);
			goto out;
		}
	}
	r->fd = gmem_create(r->vm, NPAGES * page, flags);
	if (r->fd < 0) {
		snprintf(why, whylen, "KVM_CREATE_GUEST_MEMFD(%#llx): %s", flags, strerror(-r->fd));
		r->fd = -1;
		goto out;
	}
	if (!map_file(r)) {
		snprintf(why, whylen, "mmap: %s", strerror(errno));
		goto out;
	}
	for (long nr = 0; nr < ops; nr++) {
		struct op *o = &r->history[nr % HISTORY];

		if (timed_out) {
			snprintf(why, whylen, "seed %llu: timed out after %ld of %ld operations",
				 (unsigned long long)seed, nr, ops);
			goto out;
		}
		o->nr = nr;
		o->kind = pick_kind(r);
		o->n = 1 + rnd_below(r, MAXRUN);
		o->first = rnd_below(r, NPAGES - o->n + 1);
		o->val = (uint8_t)(1 + rnd_below(r, 255));
		r->done = nr + 1;
		if (!do_op(r, o))
			goto out;
	}
	/* The end state, once more. */
	{
		struct op end = { .nr = ops, .kind = PROBE, .first = 0, .n = NPAGES };

		if (!probe(r, &end))
			goto out;
		for (int i = 0; i < NPAGES; i++)
			if (r->m.present[i] && !check_page(r, &end, i))
				goto out;
	}
	ret = KSFT_PASS;
	snprintf(why, whylen, "seed %llu: %ld operations, %s file", (unsigned long long)seed, ops,
		 ndm ? "NO_DIRECT_MAP" : "plain");
out:
	if (r->map)
		munmap(r->map, NPAGES * page);
	if (r->fd >= 0)
		close(r->fd);
	if (r->vm >= 0)
		close(r->vm);
	if (kvm >= 0)
		close(kvm);
	/* Everything the file had is back in the direct map once it is closed. */
	if (ret == KSFT_PASS && ndm && gmem_settle_counter(NDM_FOLIOS, r->ndm_base) != r->ndm_base) {
		snprintf(why, whylen, "seed %llu: after close, %ld pages are still out of the direct map",
			 (unsigned long long)seed, gmem_counter(NDM_FOLIOS) - r->ndm_base);
		ret = KSFT_FAIL;
	}
	free(r->buf);
	free(r);
	return ret;
}

#define OPS		2000
static const uint64_t fixed_seeds[] = { 1, 2, 3, 20261206 };
static bool ndm_offered;

static int fixed(bool ndm, char *why, size_t whylen)
{
	int r = KSFT_PASS;

	if (ndm && !ndm_offered) {
		snprintf(why, whylen, "GUEST_MEMFD_FLAG_NO_DIRECT_MAP not offered (the kernel lacks mm-shim 0007)");
		return KSFT_SKIP;
	}
	for (size_t i = 0; r == KSFT_PASS && i < sizeof(fixed_seeds) / sizeof(fixed_seeds[0]); i++)
		r = fsx_run(fixed_seeds[i], OPS, ndm, why, whylen);
	if (r == KSFT_PASS)
		snprintf(why, whylen, "%zu seeds x %d operations", sizeof(fixed_seeds) / sizeof(fixed_seeds[0]),
			 OPS);
	return r;
}

static int fixed_plain(char *why, size_t whylen)
{
	return fixed(false, why, whylen);
}

static int fixed_ndm(char *why, size_t whylen)
{
	return fixed(true, why, whylen);
}

/* A seed of this run's own: a failure names it, and it replays. */
static int random_seed(char *why, size_t whylen)
{
	uint64_t seed;
	int r;

	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = (uint64_t)time(NULL);
	seed &= 0xffffffffffffULL;
	ksft_print_msg("random seed %llu\n", (unsigned long long)seed);
	r = fsx_run(seed, OPS, false, why, whylen);
	if (r == KSFT_PASS && ndm_offered)
		r = fsx_run(seed, OPS, true, why, whylen);
	return r;
}

static const struct gmem_case cases[] = {
	{ "plain file: fixed seeds, every read and probe as the model says", fixed_plain },
	{ "NO_DIRECT_MAP file: fixed seeds, windows and direct map counted as the model says",
	  fixed_ndm },
	{ "a random seed on each file kind offered", random_seed },
};

int main(int argc, char **argv)
{
	uint64_t seed = 0;
	long ops = OPS;
	bool ndm = false, replay = false;
	char why[512] = "";
	int kvm, opt;

	page = getpagesize();
	while ((opt = getopt(argc, argv, "s:n:k:")) != -1) {
		switch (opt) {
		case 's':
			seed = strtoull(optarg, NULL, 0);
			replay = true;
			break;
		case 'n':
			ops = strtol(optarg, NULL, 0);
			break;
		case 'k':
			ndm = !strcmp(optarg, "ndm");
			break;
		default:
			fprintf(stderr, "usage: %s [-s SEED] [-n OPS] [-k plain|ndm]\n", argv[0]);
			return 2;
		}
	}

	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		ksft_exit_skip("/dev/kvm: %s\n", strerror(errno));
	if (!gmem_has_flags(kvm, FLAGS)) {
		ksft_print_msg("no GUEST_MEMFD_FLAG_MMAP | INIT_SHARED | WRITE: nothing to exercise\n");
		if (gmem_skip_or_fail() == KSFT_SKIP)
			ksft_exit_skip("these modules cannot map or write guest_memfd\n");
		ksft_exit_fail_msg("our modules must map and write guest_memfd\n");
	}
	ndm_offered = gmem_has_flags(kvm, FLAGS | GUEST_MEMFD_FLAG_NO_DIRECT_MAP);
	close(kvm);
	gmem_counter(NDM_FOLIOS);	/* mounts debugfs */

	if (replay) {
		int r = fsx_run(seed, ops, ndm, why, sizeof(why));

		printf("%s: %s\n", r == KSFT_PASS ? "ok" : "FAIL", why);
		return r == KSFT_PASS ? 0 : 1;
	}
	run_cases(cases, sizeof(cases) / sizeof(cases[0]));
	return 0;
}
