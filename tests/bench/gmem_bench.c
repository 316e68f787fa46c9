// SPDX-License-Identifier: GPL-2.0
/*
 * gmem_bench: what host mmap() of guest_memfd costs against shmem (memfd) and
 * anonymous memory, and that a guest_memfd-backed VM is counted once
 * (issue 9). Runs in the test guest as root (make bench, scripts/bench.sh).
 *
 * Every case runs in a fresh child process (fork per case); the cases are
 * interleaved: rep 1 of every case, then rep 2, ..., the variants of a case
 * back to back (their ratio is taken per rep, under the same host load), the
 * order of cases and of variants rotated from rep to rep. Absolute numbers
 * under TCG mean little; ratios within a run do. Anonymous memory is mapped
 * MADV_NOHUGEPAGE: 4 KiB pages like guest_memfd (the guest's THP is
 * "always"). Cases:
 *
 *   fault_{seq,rand}_{1t,2t}  first touch (one write per 4 KiB page) of a
 *                             fresh mapping: pages/s, guest_memfd (default VM,
 *                             MMAP|INIT_SHARED) vs memfd vs anonymous
 *   retouch_mapped            write passes over populated, mapped pages
 *   retouch_remap_{read,write} a fresh mapping of a populated file: minor
 *                             faults only (guest_memfd vs memfd)
 *   punch_cycle               FALLOC_FL_PUNCH_HOLE of the whole file + write
 *                             re-fault of every page, per page (gmem vs memfd)
 *   vcpu_{first,retouch}      a vCPU (32-bit flat protected mode) writing one
 *                             byte per page of a memslot: first touch (EPT/NPT
 *                             fault + allocation) and again; memslot backed by
 *                             anonymous memory, memfd, guest_memfd of a default
 *                             VM (gmem-only memslot) or of a SW_PROTECTED VM
 *                             (v7, in place)
 *   numa_first_touch          first touch (as fault_seq_1t) of a guest_memfd
 *                             mapping from a CPU of node 0: no policy (gmem,
 *                             the ref), mbind() to node 0 (the policy lookup's
 *                             cost) and to node 1 (remote placement); n/a
 *                             with one node (make bench NUMA=2)
 *   convert_{4k,2m}_{private,shared}  microseconds per KVM_SET_MEMORY_ATTRIBUTES2
 *                             on a populated, mapped guest_memfd of a VM that
 *                             converts in place (gmem_inplace; with
 *                             HUGEPAGE, gmem_huge_inplace: a 4 KiB range
 *                             inside a 2 MiB folio), per 4 KiB and per
 *                             2 MiB range, to private and back
 *   convert_transient_{latency,ioctls}  a page of a 2 MiB range is in a pipe
 *                             that is drained 20 ms into its conversion to
 *                             private: us from the drain to the converted
 *                             range, and ioctls made; one call letting the
 *                             kernel wait (mm-shim) vs a 1 ms retry loop
 *   ndm_{first_touch,fallocate[_touch],write}  a guest_memfd out of the direct map
 *                             (GUEST_MEMFD_FLAG_NO_DIRECT_MAP, mm-shim kernel:
 *                             make bench TIER=shim): first touch as
 *                             fault_seq_1t, population with fallocate()
 *                             (alone, and followed by a first touch of every
 *                             page) and with one pwrite() of the whole file,
 *                             pages/s;
 *                             plain MMAP|INIT_SHARED guest_memfd (the ref) vs
 *                             our batched flush (gmem_ndm) vs upstream's
 *                             flush per folio (gmem_ndm_upstream,
 *                             kvm.gmem_ndm_batch=0)
 *   fault_huge                first touch as fault_seq_1t, 2 MiB pages:
 *                             guest_memfd with GUEST_MEMFD_FLAG_HUGEPAGE
 *                             (gmem_huge) and without (gmem) vs memfd with THP
 *                             (memfd_thp: shmem_enabled "advise",
 *                             MADV_HUGEPAGE; the ref) vs anonymous memory with
 *                             THP (anon_thp, MADV_HUGEPAGE)
 *   write_huge                one pwrite() of the whole file from a populated
 *                             buffer, as ndm_write: a WRITE|HUGEPAGE
 *                             guest_memfd (gmem_huge: each 2 MiB cleared,
 *                             then copied into) vs a WRITE guest_memfd of
 *                             4 KiB folios (gmem, the ref) and memfd
 *   vcpu_huge_{first,retouch,faults}  as vcpu_*, over 64 MiB, one re-touch
 *                             pass, and the VM's page faults in the first
 *                             touch (pf_taken): gmem_huge and gmem vs
 *                             anonymous memory with THP (the ref)
 *   footprint_{memavail,shmem,unevictable}  a VM of G bytes whose memory is
 *                             written by the VMM through its mapping and
 *                             partly by the vCPU: the drop of MemAvailable
 *                             (plus the per-CPU free lists, which it misses)
 *                             and the growth of Shmem and Unevictable, / G
 *
 * Output (stdout, and /share/results/bench.csv when that directory exists):
 *   meta,KEY,VALUE
 *   raw,CASE,VARIANT,REP,VALUE          VALUE "n/a" when unsupported
 *   summary,CASE,VARIANT,UNIT,REF,MEDIAN,MIN,MAX,N,NOTE
 *   ratio,CASE,VARIANT,REF,MEDIAN,MIN,MAX,N   per rep: REF's pages/s over
 *                                       VARIANT's, the two run back to back
 * REF is the reference variant of the case ("guest" for footprint: the guest
 * size, i.e. 1.0). Cases that need guest_memfd mmap() are n/a on Debian's
 * stock modules; everything else runs there too.
 *
 *   gmem_bench [-r REPS] [-s SCALE] [-c CASE-SUBSTRING[,...]] [-o CSV] [-v] [-T FUNCS[:DEPTH]]
 * -v prints every /proc/meminfo field a footprint case moved; -T traces
 * (see trace_setup()).
 * Exit status: 0, or 1 if some case failed (not merely n/a).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <linux/mempolicy.h>
#include <linux/userfaultfd.h>
#include <poll.h>

#include <linux/falloc.h>
#include <linux/kvm.h>

#include "gmem_flat_mode.h"

#ifndef KVM_CAP_GMEM_SHARED_MEM
#define KVM_CAP_GMEM_SHARED_MEM 239
#endif
#ifndef KVM_CAP_GUEST_MEMFD_FLAGS
#define KVM_CAP_GUEST_MEMFD_FLAGS 244
#endif
#ifndef GUEST_MEMFD_FLAG_MMAP
#define GUEST_MEMFD_FLAG_MMAP		(1ULL << 0)
#define GUEST_MEMFD_FLAG_INIT_SHARED	(1ULL << 1)
#endif
/* Provisional numbers (src/virt/0021, 0024; docs/abi.md). */
#ifndef GUEST_MEMFD_FLAG_WRITE
#define GUEST_MEMFD_FLAG_NO_DIRECT_MAP	(1ULL << 2)
#define GUEST_MEMFD_FLAG_WRITE		(1ULL << 3)
#endif
/* Provisional, our own (src/virt/0032; docs/huge-pages.md). */
#ifndef GUEST_MEMFD_FLAG_HUGEPAGE
#define GUEST_MEMFD_FLAG_HUGEPAGE	(1ULL << 4)
#endif
#define SHMEM_THP	"/sys/kernel/mm/transparent_hugepage/shmem_enabled"
#define SZ_2M		(2UL << 20)
#define IN_PLACE_PARAM	"/sys/module/kvm/parameters/gmem_in_place_conversion"
#define NDM_BATCH_PARAM	"/sys/module/kvm/parameters/gmem_ndm_batch"

#define PAGE		4096UL
#define MAX_METRICS	4
#define MAX_REPS	15
#define CASE_TIMEOUT	120
#define PCP_SYSCTL	"/proc/sys/vm/percpu_pagelist_high_fraction"

/* Sizes in pages, before -s SCALE. */
static long fault_pages = 8192;		/* 32 MiB */
static long retouch_passes = 4;
static long punch_pages = 2048;
static long punch_cycles = 4;
static long vcpu_pages = 1024;		/* nested SVM under TCG is slow */
static long vcpu_passes = 4;		/* re-touch passes */
static long vcpu_huge_pages = 16384;	/* 64 MiB: 32 folios of 2 MiB */
static long foot_pages = 32768;		/* 128 MiB guest */
static long foot_vcpu_pages = 256;
static long convert_pages = 2048;	/* 8 MiB: 2048 4 KiB and 4 2 MiB ranges */
static long convert_rounds = 2;

/* GMEM_BIND_*: a default VM's guest_memfd, its mapping mbind() to node 0 or 1. */
/*
 * GMEM_INPLACE: a SW_PROTECTED VM converting in place (MMAP|INIT_SHARED);
 * GMEM_INPLACE_RETRY: the same, converted by a user-space retry loop;
 * GMEM_HUGE_INPLACE: the same with HUGEPAGE (conversion inside 2 MiB folios).
 * GMEM_NDM: a default VM's guest_memfd with NO_DIRECT_MAP (and WRITE), our
 * batched flush; GMEM_NDM_UPSTREAM: the same with a flush per folio;
 * GMEM_NDM_HUGE: NO_DIRECT_MAP in 2 MiB folios (a flush per folio).
 */
enum mem { ANON, MEMFD, GMEM, GMEM_SWP, GMEM_BIND_LOCAL, GMEM_BIND_REMOTE, GMEM_INPLACE,
	   GMEM_INPLACE_RETRY, GMEM_NDM, GMEM_NDM_UPSTREAM, GMEM_HUGE, ANON_THP, MEMFD_THP,
	   GMEM_HUGE_INPLACE, GMEM_NDM_HUGE };
static const char *const mem_name[] = { "anon", "memfd", "gmem", "gmem_swprot",
					"gmem_bind_local", "gmem_bind_remote", "gmem_inplace",
					"gmem_inplace_retry", "gmem_ndm", "gmem_ndm_upstream",
					"gmem_huge", "anon_thp", "memfd_thp", "gmem_huge_inplace",
					"gmem_ndm_huge" };

struct bench_case;
typedef int (*case_fn)(const struct bench_case *c, double *v, char *why, size_t whylen);

struct bench_case {
	const char *name;
	enum mem mem;
	const char *ref;	/* reference variant */
	const char *unit;
	case_fn fn;
	int order;		/* 0 sequential, 1 random */
	int threads;
	int nmetrics;
	const char *metric[MAX_METRICS];	/* suffix of the case name per value */
};

/* Child's answer */
#define RES_OK	0
#define RES_NA	4
#define RES_ERR	1

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- memory regions ------------------------------------------------------ */

struct region {
	enum mem mem;
	int kvm, vm, fd;
	char *p;
	size_t len;
};

static int kvm_cap(int fd, long cap)
{
	int r = ioctl(fd, KVM_CHECK_EXTENSION, cap);

	return r < 0 ? 0 : r;
}

/* kvm.gmem_in_place_conversion: 0, or -1 where the modules lack it. */
static int in_place_param(bool on)
{
	int fd = open(IN_PLACE_PARAM, O_WRONLY);
	int ret;

	if (fd < 0)
		return -1;
	ret = write(fd, on ? "1" : "0", 1) == 1 ? 0 : -1;
	close(fd);
	return ret;
}

/* kvm.gmem_ndm_batch = @s: 0, or -1 where the modules lack it. */
static int ndm_batch_param(const char *s)
{
	int fd = open(NDM_BATCH_PARAM, O_WRONLY);
	int ret;

	if (fd < 0)
		return -1;
	ret = write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : -1;
	close(fd);
	return ret;
}

/* Write @s to the module parameter file @path. */
static void write_param(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);

	if (fd >= 0) {
		if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
			fprintf(stderr, "# writing %s to %s: %s\n", s, path, strerror(errno));
		close(fd);
	}
}

/* Only the VM and the file, no mapping. KVM VM type: 0 or SW_PROTECTED. */
static int region_file(struct region *r, enum mem mem, size_t len, char *why, size_t whylen)
{
	unsigned long long want = GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED;
	struct kvm_create_guest_memfd gm = { .size = len };
	int types;

	*r = (struct region){ .mem = mem, .kvm = -1, .vm = -1, .fd = -1, .len = len };
	if (mem == ANON || mem == ANON_THP)
		return RES_OK;
	if (mem == MEMFD || mem == MEMFD_THP) {
		/* shmem THP where a mapping asks for it (MADV_HUGEPAGE) only. */
		if (mem == MEMFD_THP && access(SHMEM_THP, W_OK)) {
			snprintf(why, whylen, "no %s", SHMEM_THP);
			return RES_NA;
		}
		if (mem == MEMFD_THP)
			write_param(SHMEM_THP, "advise");
		r->fd = memfd_create("bench", MFD_CLOEXEC);
		if (r->fd < 0 || ftruncate(r->fd, len)) {
			snprintf(why, whylen, "memfd: %s", strerror(errno));
			return RES_ERR;
		}
		return RES_OK;
	}
	r->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (r->kvm < 0) {
		snprintf(why, whylen, "/dev/kvm: %s", strerror(errno));
		return RES_NA;
	}
	if (mem == GMEM_INPLACE || mem == GMEM_INPLACE_RETRY || mem == GMEM_HUGE_INPLACE) {
		/* A VM converts in place if it is created while the parameter is 1. */
		if (in_place_param(true)) {
			snprintf(why, whylen, "no kvm.gmem_in_place_conversion");
			return RES_NA;
		}
		r->vm = ioctl(r->kvm, KVM_CREATE_VM, KVM_X86_SW_PROTECTED_VM);
		in_place_param(false);
		if (mem == GMEM_HUGE_INPLACE)
			want |= GUEST_MEMFD_FLAG_HUGEPAGE;
		gm.flags = want;
	} else if (mem != GMEM_SWP) {
		unsigned long long caps = kvm_cap(r->kvm, KVM_CAP_GUEST_MEMFD_FLAGS);

		if (mem == GMEM_NDM || mem == GMEM_NDM_UPSTREAM || mem == GMEM_NDM_HUGE) {
			want |= GUEST_MEMFD_FLAG_NO_DIRECT_MAP | GUEST_MEMFD_FLAG_WRITE;
			/* The batch is read at each allocation: it holds for the case. */
			if ((caps & want) != want ||
			    ndm_batch_param(mem == GMEM_NDM_UPSTREAM ? "0" : "64")) {
				snprintf(why, whylen, "no GUEST_MEMFD_FLAG_NO_DIRECT_MAP");
				return RES_NA;
			}
		}
		if (mem == GMEM_HUGE || mem == GMEM_NDM_HUGE)
			want |= GUEST_MEMFD_FLAG_HUGEPAGE;
		if ((caps & want) != want) {
			snprintf(why, whylen, "no GUEST_MEMFD_FLAG_MMAP|INIT_SHARED%s",
				 mem == GMEM_HUGE || mem == GMEM_NDM_HUGE ? "|HUGEPAGE" : "");
			return RES_NA;
		}
		r->vm = ioctl(r->kvm, KVM_CREATE_VM, 0);
		/* write() where offered: the population cases use it. */
		gm.flags = want | (caps & GUEST_MEMFD_FLAG_WRITE);
	} else {
		/*
		 * The seed's v7 ABI, in which a SW_PROTECTED VM's memory is
		 * shared in place: one switch away from our default, and a VM
		 * keeps the ABI it was created under. Switch it for this VM's
		 * creation only, as gmem_abi_test does.
		 */
		static const char abi[] = "/sys/module/kvm/parameters/gmem_mainline_abi";
		char was = 0;
		int fd = open(abi, O_RDONLY);

		if (fd >= 0) {
			if (read(fd, &was, 1) != 1)
				was = 0;
			close(fd);
		}
		if (was == 'Y')
			write_param(abi, "0");
		types = kvm_cap(r->kvm, KVM_CAP_VM_TYPES);
		r->vm = (types & (1 << KVM_X86_SW_PROTECTED_VM)) ?
			ioctl(r->kvm, KVM_CREATE_VM, KVM_X86_SW_PROTECTED_VM) : -1;
		if (was == 'Y')
			write_param(abi, "1");
		if (r->vm >= 0 && kvm_cap(r->vm, KVM_CAP_GMEM_SHARED_MEM) <= 0) {
			close(r->vm);
			r->vm = -1;
		}
		if (r->vm < 0) {
			snprintf(why, whylen, "no KVM_CAP_GMEM_SHARED_MEM/SW_PROTECTED_VM, also with gmem_mainline_abi=0");
			return RES_NA;
		}
	}
	if (r->vm < 0) {
		snprintf(why, whylen, "KVM_CREATE_VM: %s", strerror(errno));
		return RES_ERR;
	}
	r->fd = ioctl(r->vm, KVM_CREATE_GUEST_MEMFD, &gm);
	if (r->fd < 0) {
		snprintf(why, whylen, "KVM_CREATE_GUEST_MEMFD: %s", strerror(errno));
		return RES_ERR;
	}
	return RES_OK;
}

static int region_map(struct region *r, char *why, size_t whylen)
{
	if (r->mem == ANON) {
		r->p = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		/*
		 * 4 KiB pages, as guest_memfd and memfd here: the guest's THP
		 * is "always", and a PMD-sized anonymous mapping would get
		 * 2 MiB pages (one fault, one clear of 512 pages).
		 */
		if (r->p != MAP_FAILED && madvise(r->p, r->len, MADV_NOHUGEPAGE)) {
			snprintf(why, whylen, "MADV_NOHUGEPAGE: %s", strerror(errno));
			return RES_ERR;
		}
	} else if (r->mem == ANON_THP) {
		/* 2 MiB aligned, so that every whole 2 MiB of it can be a THP. */
		r->p = mmap(NULL, r->len + SZ_2M, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (r->p != MAP_FAILED)
			r->p = (char *)(((uintptr_t)r->p + SZ_2M - 1) & ~(SZ_2M - 1));
	} else {
		r->p = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	}
	if ((r->mem == ANON_THP || r->mem == MEMFD_THP) && r->p != MAP_FAILED &&
	    madvise(r->p, r->len, MADV_HUGEPAGE)) {
		snprintf(why, whylen, "MADV_HUGEPAGE: %s", strerror(errno));
		return RES_ERR;
	}
	if (r->p == MAP_FAILED) {
		r->p = NULL;
		snprintf(why, whylen, "mmap %s: %s", mem_name[r->mem], strerror(errno));
		return RES_ERR;
	}
	if (r->mem == GMEM_BIND_LOCAL || r->mem == GMEM_BIND_REMOTE) {
		/* The toucher runs on node 0 (case_numa_fault()); mbind's maxnode - 1 bits. */
		unsigned long mask = r->mem == GMEM_BIND_LOCAL ? 1 : 2;

		if (syscall(__NR_mbind, r->p, r->len, MPOL_BIND, &mask, 65UL, 0U)) {
			snprintf(why, whylen, "mbind: %s", strerror(errno));
			return RES_ERR;
		}
	}
	return RES_OK;
}

static int region_open(struct region *r, enum mem mem, size_t len, char *why, size_t whylen)
{
	int ret = region_file(r, mem, len, why, whylen);

	return ret ? ret : region_map(r, why, whylen);
}

/* ---- host touches ---------------------------------------------------------- */

static void write_pass(char *p, long n)
{
	for (long i = 0; i < n; i++)
		((volatile char *)p)[i * PAGE] = 1;
}

static unsigned int read_pass(char *p, long n)
{
	unsigned int sum = 0;

	for (long i = 0; i < n; i++)
		sum += ((volatile char *)p)[i * PAGE];
	return sum;
}

/* xorshift, so that every run touches in the same random order */
static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static uint32_t *permutation(long n, uint32_t seed)
{
	uint32_t *idx = malloc(n * sizeof(*idx));

	if (!idx)
		return NULL;
	for (long i = 0; i < n; i++)
		idx[i] = i;
	for (long i = n - 1; i > 0; i--) {
		long j = rnd(&seed) % (i + 1);
		uint32_t t = idx[i];

		idx[i] = idx[j];
		idx[j] = t;
	}
	return idx;
}

struct toucher {
	pthread_t thread;
	pthread_barrier_t *start;
	char *base;
	long n;
	uint32_t *idx;		/* NULL: sequential */
};

static void *touch_thread(void *arg)
{
	struct toucher *t = arg;

	pthread_barrier_wait(t->start);
	if (t->idx) {
		for (long i = 0; i < t->n; i++)
			((volatile char *)t->base)[t->idx[i] * PAGE] = 1;
	} else {
		write_pass(t->base, t->n);
	}
	return NULL;
}

/* First touch of a fresh mapping, 1 or 2 threads, each on its own half. */
static int case_fault(const struct bench_case *c, double *v, char *why, size_t whylen)
{
	struct toucher t[2];
	pthread_barrier_t start;
	long n = fault_pages, per = n / c->threads;
	struct region r;
	double t0, t1;
	int ret;

	ret = region_open(&r, c->mem, n * PAGE, why, whylen);
	if (ret)
		return ret;
	pthread_barrier_init(&start, NULL, c->threads + 1);
	for (int i = 0; i < c->threads; i++) {
		t[i] = (struct toucher){ .start = &start, .base = r.p + i * per * PAGE, .n = per };
		if (c->order && !(t[i].idx = permutation(per, 0x9e3779b9u + i))) {
			snprintf(why, whylen, "out of memory");
			return RES_ERR;
		}
		pthread_create(&t[i].thread, NULL, touch_thread, &t[i]);
	}
	pthread_barrier_wait(&start);
	t0 = now();
	for (int i = 0; i < c->threads; i++)
		pthread_join(t[i].thread, NULL);
	t1 = now();
	v[0] = per * c->threads / (t1 - t0);
	return RES_OK;
}

/*
 * Lazy restore by userfaultfd (a posted series, not in mainline as of 7.3,
 * which has only the generic struct vm_uffd_ops; our kvm.ko on the mm-shim
 * kernel): a handler thread serves every MISSING fault with UFFDIO_COPY of
 * the snapshot's page while the main thread reads each page once, pages/s.
 * Guest_memfd against a shmem memfd, and a NO_DIRECT_MAP guest_memfd.
 */
struct uffd_server {
	int uffd;
	char *base, *src;
	long n, served;
	volatile int stop;
};

static void *uffd_serve(void *arg)
{
	struct uffd_server *s = arg;
	struct pollfd pfd = { .fd = s->uffd, .events = POLLIN };
	struct uffd_msg msg;

	while (!s->stop) {
		struct uffdio_copy copy = { .len = PAGE };
		unsigned long off;

		if (poll(&pfd, 1, 10) <= 0 || read(s->uffd, &msg, sizeof(msg)) != sizeof(msg) ||
		    msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		off = (msg.arg.pagefault.address & ~(PAGE - 1)) - (unsigned long)s->base;
		copy.dst = (unsigned long)s->base + off;
		copy.src = (unsigned long)s->src + off;
		if (!ioctl(s->uffd, UFFDIO_COPY, &copy))
			s->served++;
	}
	return NULL;
}

static int case_uffd_restore(const struct bench_case *c, double *v, char *why, size_t whylen)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct uffd_server s = { .n = fault_pages };
	pthread_t server;
	struct region r;
	double t0, t1;
	int ret;

	ret = region_open(&r, c->mem, s.n * PAGE, why, whylen);
	if (ret)
		return ret;
	s.base = r.p;
	s.src = malloc(s.n * PAGE);
	if (!s.src) {
		snprintf(why, whylen, "out of memory");
		return RES_ERR;
	}
	memset(s.src, 0x5a, s.n * PAGE);
	s.uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (s.uffd < 0 || ioctl(s.uffd, UFFDIO_API, &api)) {
		snprintf(why, whylen, "userfaultfd: %s", strerror(errno));
		return RES_NA;
	}
	reg.range.start = (unsigned long)r.p;
	reg.range.len = s.n * PAGE;
	if (ioctl(s.uffd, UFFDIO_REGISTER, &reg)) {
		/* Debian's kernel: no userfaultfd for guest_memfd (EINVAL). */
		snprintf(why, whylen, "UFFDIO_REGISTER on %s: %s", mem_name[c->mem], strerror(errno));
		return errno == EINVAL && c->mem != MEMFD ? RES_NA : RES_ERR;
	}
	pthread_create(&server, NULL, uffd_serve, &s);
	t0 = now();
	read_pass(r.p, s.n);
	t1 = now();
	s.stop = 1;
	pthread_join(server, NULL);
	if (s.served != s.n) {
		snprintf(why, whylen, "%ld pages served, want %ld", s.served, s.n);
		return RES_ERR;
	}
	v[0] = s.n / (t1 - t0);
	return RES_OK;
}

/*
 * Population of a fresh file: fallocate() (order 0), one pwrite() of the
 * whole file from a populated buffer (order 1), or fallocate() and then a
 * first touch of every page through a mapping (order 2: a plain guest_memfd
 * zeroes its pages at the first fault, one out of the direct map at
 * fallocate(), so only this compares the whole work), pages/s.
 */
static int case_populate(const struct bench_case *c, double *v, char *why, size_t whylen)
{
	long n = fault_pages;
	char *src = NULL;
	struct region r;
	double t0, t1;
	int ret;

	ret = region_file(&r, c->mem, n * PAGE, why, whylen);
	if (ret)
		return ret;
	if (c->order == 1) {
		src = malloc(n * PAGE);
		if (!src) {
			snprintf(why, whylen, "out of memory");
			return RES_ERR;
		}
		memset(src, 0x5a, n * PAGE);
	}
	t0 = now();
	if (c->order == 1)
		ret = pwrite(r.fd, src, n * PAGE, 0) == (ssize_t)(n * PAGE) ? 0 : -1;
	else
		ret = fallocate(r.fd, FALLOC_FL_KEEP_SIZE, 0, n * PAGE);
	if (!ret && c->order == 2) {
		ret = region_map(&r, why, whylen);
		if (ret)
			return ret;
		write_pass(r.p, n);
	}
	t1 = now();
	if (ret) {
		snprintf(why, whylen, "%s: %s", c->order == 1 ? "pwrite" : "fallocate", strerror(errno));
		return errno == EINVAL && c->order == 1 ? RES_NA : RES_ERR;
	}
	v[0] = n / (t1 - t0);
	return RES_OK;
}

/* The first CPU of @node from sysfs, or -1. */
static int node_first_cpu(int node)
{
	char path[64];
	int cpu = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", node);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%d", &cpu) != 1)
			cpu = -1;
		fclose(f);
	}
	return cpu;
}

/*
 * First touch from a CPU of node 0 with no policy (ref), bound to node 0
 * (what the policy lookup costs) and bound to node 1 (what remote placement
 * costs). n/a with fewer than two nodes: make bench NUMA=2.
 */
static int case_numa_fault(const struct bench_case *c, double *v, char *why, size_t whylen)
{
	int cpu0 = node_first_cpu(0);
	cpu_set_t set;

	if (cpu0 < 0 || node_first_cpu(1) < 0) {
		snprintf(why, whylen, "needs two nodes with CPUs (make bench NUMA=2)");
		return RES_NA;
	}
	CPU_ZERO(&set);
	CPU_SET(cpu0, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		snprintf(why, whylen, "sched_setaffinity: %s", strerror(errno));
		return RES_ERR;
	}
	return case_fault(c, v, why, whylen);
}

/*
 * Switch to another process and back: two CR3 writes, each a full flush of
 * QEMU's soft TLB, which is where TCG resizes it to what the last 100 ms used.
 */
static int context_switches(int rounds)
{
	int to[2], from[2];
	char b = 0;
	pid_t pid;

	if (pipe(to) || pipe(from))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		while (read(to[0], &b, 1) == 1 && b)
			if (write(from[1], &b, 1) != 1)
				break;
		_exit(0);
	}
	for (int i = 0; i < rounds; i++) {
		b = 1;
		if (write(to[1], &b, 1) != 1 || read(from[0], &b, 1) != 1)
			break;
	}
	b = 0;
	if (write(to[1], &b, 1) != 1) {
		/* the helper then ends at EOF */
	}
	close(to[0]);
	close(to[1]);
	close(from[0]);
	close(from[1]);
	waitpid(pid, NULL, 0);
	return 0;
}

/*
 * Write passes over pages that are populated and mapped: no faults, no
 * kernel. Under TCG this is QEMU's soft TLB: without the warm-up, whether
 * 8192 pages fit in it depends on what ran before (flushes resize it).
 */
static int case_retouch_mapped(const struct bench_case *c, double *v, char *why, size_t whylen)
{
	cpu_set_t cpus;
	long n = fault_pages;
	struct region r;
	double t0;
	int ret;

	ret = region_open(&r, c->mem, n * PAGE, why, whylen);
	if (ret)
		return ret;
	/* One vCPU's TLB, the helper on the same one. */
	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	sched_setaffinity(0, sizeof(cpus), &cpus);
	for (int i = 0; i < 8; i++) {
		write_pass(r.p, n);
		if (context_switches(1)) {
			snprintf(why, whylen, "pipe/fork: %s", strerror(errno));
			return RES_ERR;
		}
	}
	write_pass(r.p, n);
	t0 = now();
	for (long i = 0; i < retouch_passes; i++)
		write_pass(r.p, n);
	v[0] = n * retouch_passes / (now() - t0);
	return RES_OK;
}

/* A second mapping of a populated file: minor faults only. */
static int case_retouch_remap(const struct bench_case *c, double *v, char *why, size_t whylen)
{
	long n = fault_pages;
	struct region r;
	double t0;
	int ret;

	ret = region_open(&r, c->mem, n * PAGE, why, whylen);
	if (ret)
		return ret;
	write_pass(r.p, n);
	munmap(r.p, r.len);
	ret = region_map(&r, why, whylen);
	if (ret)
		return ret;
	t0 = now();
	if (c->order == 2)
		write_pass(r.p, n);
	else if (read_pass(r.p, n) != (unsigned int)n) {
		snprintf(why, whylen, "populated pages lost their data");
		return RES_ERR;
	}
	v[0] = n / (now() - t0);
	return RES_OK;
}

/* Punch the whole file out and fault every page back in, per page. */
static int case_punch(const struct bench_case *c, double *v, char *why, size_t whylen)
{
	long n = punch_pages;
	struct region r;
	double t0;
	int ret;

	ret = region_open(&r, c->mem, n * PAGE, why, whylen);
	if (ret)
		return ret;
	write_pass(r.p, n);
	t0 = now();
	for (long i = 0; i < punch_cycles; i++) {
		if (fallocate(r.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, r.len)) {
			snprintf(why, whylen, "punch hole: %s", strerror(errno));
			return RES_ERR;
		}
		write_pass(r.p, n);
	}
	v[0] = n * punch_cycles / (now() - t0);
	if (read_pass(r.p, n) != (unsigned int)n) {
		snprintf(why, whylen, "re-faulted pages do not hold the new data");
		return RES_ERR;
	}
	return RES_OK;
}

/* ---- a vCPU touching pages ------------------------------------------------- */

#define CODE_GPA	0x1000
#define TOUCH_PAGE0	16		/* first touched page (GPA 64 KiB) */
#define IO_PORT		0x10

/*
 * 32-bit flat protected mode, no paging (as --32, objdump -d):
 *   0: out %al,$0x10      warm-up exit: the first entry's cost is not timed
 *   2: mov %al,(%esi)     loop: one byte per page
 *   4: add %edx,%esi
 *   6: dec %ecx
 *   7: jne 2
 *   9: out %al,$0x10      done
 *   b: jmp 0
 */
static const uint8_t guest_code[] = {
	0xe6, 0x10, 0x88, 0x06, 0x01, 0xd6, 0x49, 0x75, 0xf9, 0xe6, 0x10, 0xeb, 0xf3,
};

struct vcpu_vm {
	struct region r;
	int vcpu;
	struct kvm_run *run;
};

static int vm_setup(struct vcpu_vm *vm, enum mem mem, long npages, char *why, size_t whylen)
{
	struct kvm_userspace_memory_region2 slot = { .memory_size = npages * PAGE };
	struct kvm_regs regs;
	int ret, run_size;

	ret = region_open(&vm->r, mem, npages * PAGE, why, whylen);
	if (ret)
		return ret;
	if (vm->r.kvm < 0) {
		vm->r.kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
		if (vm->r.kvm < 0) {
			snprintf(why, whylen, "/dev/kvm: %s", strerror(errno));
			return RES_NA;
		}
		vm->r.vm = ioctl(vm->r.kvm, KVM_CREATE_VM, 0);
		if (vm->r.vm < 0) {
			snprintf(why, whylen, "KVM_CREATE_VM: %s", strerror(errno));
			return RES_ERR;
		}
	}
	slot.userspace_addr = (uintptr_t)vm->r.p;
	if (mem == GMEM || mem == GMEM_SWP || mem == GMEM_INPLACE || mem == GMEM_HUGE) {
		slot.flags = KVM_MEM_GUEST_MEMFD;
		slot.guest_memfd = vm->r.fd;
	}
	if (ioctl(vm->r.vm, KVM_SET_USER_MEMORY_REGION2, &slot)) {
		snprintf(why, whylen, "KVM_SET_USER_MEMORY_REGION2: %s", strerror(errno));
		return RES_ERR;
	}
	memcpy(vm->r.p + CODE_GPA, guest_code, sizeof(guest_code));

	vm->vcpu = ioctl(vm->r.vm, KVM_CREATE_VCPU, 0);
	run_size = ioctl(vm->r.kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (vm->vcpu < 0 || run_size <= 0) {
		snprintf(why, whylen, "KVM_CREATE_VCPU: %s", strerror(errno));
		return RES_ERR;
	}
	vm->run = mmap(NULL, run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vm->vcpu, 0);
	if (vm->run == MAP_FAILED || vcpu_set_flat_mode(vm->vcpu)) {
		snprintf(why, whylen, "kvm_run/KVM_SET_SREGS: %s", strerror(errno));
		return RES_ERR;
	}
	memset(&regs, 0, sizeof(regs));
	regs.rip = CODE_GPA;
	regs.rflags = 2;
	if (ioctl(vm->vcpu, KVM_SET_REGS, &regs)) {
		snprintf(why, whylen, "KVM_SET_REGS: %s", strerror(errno));
		return RES_ERR;
	}
	return RES_OK;
}

/* Run to the guest's next OUT. */
static int vm_run(struct vcpu_vm *vm, char *why, size_t whylen)
{
	for (int i = 0; i < 1000; i++) {
		if (ioctl(vm->vcpu, KVM_RUN, 0)) {
			if (errno == EINTR)
				continue;
			snprintf(why, whylen, "KVM_RUN: %s", strerror(errno));
			return RES_ERR;
		}
		if (vm->run->exit_reason == KVM_EXIT_INTR)
			continue;
		if (vm->run->exit_reason == KVM_EXIT_IO && vm->run->io.port == IO_PORT)
			return RES_OK;
		snprintf(why, whylen, "unexpected exit %u", vm->run->exit_reason);
		return RES_ERR;
	}
	snprintf(why, whylen, "no OUT after 1000 exits");
	return RES_ERR;
}

/* The loop over @n pages from the first touched one; returns seconds or < 0. */
static double vm_touch(struct vcpu_vm *vm, long n, char *why, size_t whylen)
{
	struct kvm_regs regs;
	double t0;

	memset(&regs, 0, sizeof(regs));
	regs.rip = CODE_GPA + 2;
	regs.rflags = 2;
	regs.rax = 1;
	regs.rsi = TOUCH_PAGE0 * PAGE;
	regs.rcx = n;
	regs.rdx = PAGE;
	if (ioctl(vm->vcpu, KVM_SET_REGS, &regs)) {
		snprintf(why, whylen, "KVM_SET_REGS: %s", strerror(errno));
		return -1;
	}
	t0 = now();
	if (vm_run(vm, why, whylen))
		return -1;
	return now() - t0;
}

/* The VM's page faults so far (debugfs kvm/<pid>-<vm fd>/pf_taken), or -1. */
static long vm_pf_taken(int vm_fd)
{
	char path[128], buf[32] = "";
	ssize_t n = -1;
	int fd;

	if (access("/sys/kernel/debug/kvm", F_OK))
		mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	snprintf(path, sizeof(path), "/sys/kernel/debug/kvm/%d-%d/pf_taken", getpid(), vm_fd);
	fd = open(path, O_RDONLY);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	return n > 0 ? strtol(buf, NULL, 10) : -1;
}

/* c->order 1 (vcpu_huge): 64 MiB, one re-touch pass, and the first touch's faults. */
static int case_vcpu(const struct bench_case *c, double *v, char *why, size_t whylen)
{
	long n = c->order ? vcpu_huge_pages : vcpu_pages;
	long passes = c->order ? 1 : vcpu_passes, pf;
	struct vcpu_vm vm;
	double t;
	int ret;

	ret = vm_setup(&vm, c->mem, TOUCH_PAGE0 + n, why, whylen);
	if (ret)
		return ret;
	ret = vm_run(&vm, why, whylen);		/* warm-up: to the first OUT */
	if (ret)
		return ret;
	pf = vm_pf_taken(vm.r.vm);
	t = vm_touch(&vm, n, why, whylen);
	if (t < 0)
		return RES_ERR;
	v[0] = n / t;
	if (c->nmetrics > 2) {
		if (pf < 0) {
			snprintf(why, whylen, "no debugfs kvm/%d-%d/pf_taken", getpid(), vm.r.vm);
			return RES_ERR;
		}
		v[2] = vm_pf_taken(vm.r.vm) - pf;
	}
	t = 0;
	for (long i = 0; i < passes; i++) {
		double ti = vm_touch(&vm, n, why, whylen);

		if (ti < 0)
			return RES_ERR;
		t += ti;
	}
	v[1] = n * passes / t;
	/* The guest's writes are what the host sees. */
	if (read_pass(vm.r.p + TOUCH_PAGE0 * PAGE, n) != (unsigned int)n) {
		snprintf(why, whylen, "host does not see the guest's writes");
		return RES_ERR;
	}
	return RES_OK;
}

/* ---- footprint --------------------------------------------------------------- */

/* kB values of /proc/meminfo; fields we want in order. */
static const char *const mi_field[] = { "MemAvailable:", "Shmem:", "Unevictable:" };
#define MI_N 3

static void sysctl_write(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);

	if (fd < 0)
		return;
	if (write(fd, val, strlen(val)) < 0) {
		/* best effort: the numbers are only a little noisier */
	}
	close(fd);
}

/* kB on the per-CPU free lists (/proc/zoneinfo "count:" of each pageset). */
static long pcp_kb(void)
{
	char line[256];
	long pages = 0;
	FILE *f = fopen("/proc/zoneinfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "count:");

		if (p && strspn(line, " ") == strlen(line) - strlen(p))
			pages += atol(p + 6);
	}
	fclose(f);
	return pages * (PAGE / 1024);
}

static bool verbose;

/* -v: every /proc/meminfo field that moved, in kB. */
#define MI_MAX 80
struct mi_all {
	int n;
	char name[MI_MAX][32];
	long kb[MI_MAX];
};

static void meminfo_all(struct mi_all *m)
{
	char line[256];
	FILE *f = fopen("/proc/meminfo", "r");

	m->n = 0;
	while (f && m->n < MI_MAX && fgets(line, sizeof(line), f))
		if (sscanf(line, "%31s %ld", m->name[m->n], &m->kb[m->n]) == 2)
			m->n++;
	if (f)
		fclose(f);
}

static void meminfo_delta(const char *what, const struct mi_all *a, const struct mi_all *b)
{
	char buf[2048];
	int len = 0;

	for (int i = 0; i < a->n && i < b->n; i++)
		if (b->kb[i] != a->kb[i] && len < (int)sizeof(buf) - 64)
			len += snprintf(buf + len, sizeof(buf) - len, " %s%+ld", a->name[i],
					b->kb[i] - a->kb[i]);
	printf("# %s meminfo delta kB:%s\n", what, buf);
	fflush(stdout);
}

static int meminfo(long *kb)
{
	char line[256];
	FILE *f;

	/*
	 * Freed pages parked on the per-CPU lists are not "free": fold the
	 * per-CPU counters and let the lists decay (stat_refresh), then
	 * count what is left on them (below).
	 */
	for (int i = 0; i < 8; i++)
		sysctl_write("/proc/sys/vm/stat_refresh", "1");
	f = fopen("/proc/meminfo", "r");
	if (!f)
		return -1;
	for (int i = 0; i < MI_N; i++)
		kb[i] = -1;
	while (fgets(line, sizeof(line), f))
		for (int i = 0; i < MI_N; i++)
			if (!strncmp(line, mi_field[i], strlen(mi_field[i])))
				kb[i] = atol(line + strlen(mi_field[i]));
	fclose(f);
	for (int i = 0; i < MI_N; i++)
		if (kb[i] < 0)
			return -1;
	/* Free pages on the per-CPU lists are available too. */
	kb[0] += pcp_kb();
	return 0;
}

/*
 * A VM of G bytes (memslot on its memory), the VMM writes all of it through
 * its mapping, the vCPU writes some of it too; (before - after) / G.
 */
static int case_footprint(const struct bench_case *c, double *v, char *why, size_t whylen)
{
	long n = foot_pages, before[MI_N], after[MI_N], pcp_before;
	double g = n * PAGE / 1024.0;	/* kB */
	static struct mi_all mi_before, mi_after;
	struct vcpu_vm vm;
	int ret;

	ret = vm_setup(&vm, c->mem, n, why, whylen);
	if (ret)
		return ret;
	ret = vm_run(&vm, why, whylen);	/* the code page is already in */
	if (ret)
		return ret;
	if (meminfo(before)) {
		snprintf(why, whylen, "/proc/meminfo unreadable");
		return RES_ERR;
	}
	if (verbose)
		meminfo_all(&mi_before);
	pcp_before = pcp_kb();
	write_pass(vm.r.p, n);
	if (vm_touch(&vm, foot_vcpu_pages, why, whylen) < 0)
		return RES_ERR;
	if (meminfo(after)) {
		snprintf(why, whylen, "/proc/meminfo unreadable");
		return RES_ERR;
	}
	if (verbose) {
		char what[64];

		meminfo_all(&mi_after);
		snprintf(what, sizeof(what), "footprint %s, pcp %+ld kB,", mem_name[c->mem],
			 pcp_kb() - pcp_before);
		meminfo_delta(what, &mi_before, &mi_after);
	}
	v[0] = (before[0] - after[0]) / g;
	v[1] = (after[1] - before[1]) / g;
	v[2] = (after[2] - before[2]) / g;
	return RES_OK;
}

/* ---- in-place conversion ------------------------------------------------------- */

/* KVM_SET_MEMORY_ATTRIBUTES2 on a guest_memfd (provisional, src/virt/0022). */
static int set_attrs(int fd, size_t off, size_t len, unsigned long long attrs)
{
	struct kvm_memory_attributes2 a = { .offset = off, .size = len, .attributes = attrs };

	return ioctl(fd, KVM_SET_MEMORY_ATTRIBUTES2, &a);
}

/*
 * Microseconds per conversion of a populated, mapped range, to private
 * (unmap, reference check) and back to shared: 4 KiB ranges one after the
 * other over the file, then 2 MiB ranges. The pages are written again
 * after each round, so every to-private conversion has mappings to zap.
 */
static int case_convert(const struct bench_case *c, double *v, char *why, size_t whylen)
{
	const long huge = 512;
	long n = convert_pages;
	double t_priv[2] = { 0 }, t_shared[2] = { 0 }, t0;
	long ops[2] = { 0 };
	struct region r;
	int ret;

	ret = region_open(&r, c->mem, n * PAGE, why, whylen);
	if (ret)
		return ret;
	for (int size = 0; size < 2; size++) {
		long step = size ? huge : 1;

		for (int round = 0; round < convert_rounds; round++) {
			write_pass(r.p, n);
			for (long i = 0; i + step <= n; i += step) {
				t0 = now();
				if (set_attrs(r.fd, i * PAGE, step * PAGE, KVM_MEMORY_ATTRIBUTE_PRIVATE)) {
					snprintf(why, whylen, "to private (%ld pages at %ld): %s",
						 step, i, strerror(errno));
					return RES_ERR;
				}
				t_priv[size] += now() - t0;
				t0 = now();
				if (set_attrs(r.fd, i * PAGE, step * PAGE, 0)) {
					snprintf(why, whylen, "to shared: %s", strerror(errno));
					return RES_ERR;
				}
				t_shared[size] += now() - t0;
				ops[size]++;
			}
		}
	}
	if (read_pass(r.p, n) != (unsigned int)n) {
		snprintf(why, whylen, "converted pages lost their contents");
		return RES_ERR;
	}
	v[0] = t_priv[0] / ops[0] * 1e6;
	v[1] = t_shared[0] / ops[0] * 1e6;
	v[2] = t_priv[1] / ops[1] * 1e6;
	v[3] = t_shared[1] / ops[1] * 1e6;
	return RES_OK;
}

#define WAIT_PARAM	"/sys/module/kvm/parameters/gmem_conversion_wait_ms"
#define TRANSIENT_MS	20

struct drainer {
	int fd;
	double at;
};

static void *drain_after(void *arg)
{
	struct drainer *d = arg;
	char buf[PAGE];

	usleep(TRANSIENT_MS * 1000);
	d->at = now();
	while (read(d->fd, buf, sizeof(buf)) > 0)
		;
	return NULL;
}

/*
 * A transient reference that goes while user space converts: one page of
 * the 2 MiB range is spliced into a pipe that a thread drains TRANSIENT_MS
 * later. Microseconds from the drain to the converted range, and ioctls
 * made: gmem_inplace makes one call and lets the kernel wait where it can
 * (the mm-shim kernel; elsewhere it must loop like the other),
 * gmem_inplace_retry retries on EAGAIN every 1 ms, the waiting switched off.
 */
static int case_transient(const struct bench_case *c, double *v, char *why, size_t whylen)
{
	bool retry = c->mem == GMEM_INPLACE_RETRY;
	struct iovec iov;
	struct drainer d;
	pthread_t thread;
	struct region r;
	long calls = 0;
	int ret, fds[2], wfd = open(WAIT_PARAM, O_RDWR);
	char saved[16] = "";
	double done;

	if (wfd >= 0 && read(wfd, saved, sizeof(saved) - 1) <= 0)
		saved[0] = 0;
	if (retry && wfd >= 0 && write(wfd, "0", 1) != 1) {
		snprintf(why, whylen, "%s: %s", WAIT_PARAM, strerror(errno));
		return RES_ERR;
	}
	ret = region_open(&r, c->mem, 512 * PAGE, why, whylen);
	if (ret)
		goto out;
	write_pass(r.p, 512);
	iov = (struct iovec){ .iov_base = r.p + 100 * PAGE, .iov_len = PAGE };
	if (pipe(fds) || vmsplice(fds[1], &iov, 1, 0) != PAGE) {
		snprintf(why, whylen, "vmsplice: %s", strerror(errno));
		ret = RES_ERR;
		goto out;
	}
	close(fds[1]);		/* the drainer reads to EOF */
	d.fd = fds[0];
	pthread_create(&thread, NULL, drain_after, &d);
	for (;;) {
		calls++;
		if (!set_attrs(r.fd, 0, 512 * PAGE, KVM_MEMORY_ATTRIBUTE_PRIVATE))
			break;
		if (errno != EAGAIN) {
			snprintf(why, whylen, "to private: %s", strerror(errno));
			ret = RES_ERR;
			break;
		}
		usleep(1000);
	}
	done = now();
	pthread_join(thread, NULL);
	close(fds[0]);
	v[0] = (done - d.at) * 1e6;
	v[1] = calls;
out:
	if (wfd >= 0) {
		if (retry && saved[0] && write(wfd, saved, strlen(saved)) < 0) {
			/* best effort: the parameter as it was */
		}
		close(wfd);
	}
	return ret;
}

/* ---- the cases ------------------------------------------------------------------ */

#define PPS "pages/s"
#define FAULT(name, ord, thr) \
	{ name, GMEM, "memfd", PPS, case_fault, ord, thr, 1, { "" } }, \
	{ name, MEMFD, "memfd", PPS, case_fault, ord, thr, 1, { "" } }, \
	{ name, ANON, "memfd", PPS, case_fault, ord, thr, 1, { "" } }
#define NUMA(m) { "numa_first_touch", m, "gmem", PPS, case_numa_fault, 0, 1, 1, { "" } }
#define VCPU(m) { "vcpu", m, "anon", PPS, case_vcpu, 0, 1, 2, { "_first", "_retouch" } }
#define VCPU_HUGE(m) { "vcpu_huge", m, "anon_thp", PPS, case_vcpu, 1, 1, 3, \
		       { "_first", "_retouch", "_faults" } }
#define FOOT(m) { "footprint", m, "guest", "x guest", case_footprint, 0, 1, 3, \
		  { "_memavail", "_shmem", "_unevictable" } }
#define NDM(name, fn, ord) \
	{ name, GMEM, "gmem", PPS, fn, ord, 1, 1, { "" } }, \
	{ name, GMEM_NDM, "gmem", PPS, fn, ord, 1, 1, { "" } }, \
	{ name, GMEM_NDM_UPSTREAM, "gmem", PPS, fn, ord, 1, 1, { "" } }

static const struct bench_case cases[] = {
	FAULT("fault_seq_1t", 0, 1),
	FAULT("fault_rand_1t", 1, 1),
	FAULT("fault_seq_2t", 0, 2),
	FAULT("fault_rand_2t", 1, 2),
	{ "retouch_mapped", GMEM, "memfd", PPS, case_retouch_mapped, 0, 1, 1, { "" } },
	{ "retouch_mapped", MEMFD, "memfd", PPS, case_retouch_mapped, 0, 1, 1, { "" } },
	{ "retouch_mapped", ANON, "memfd", PPS, case_retouch_mapped, 0, 1, 1, { "" } },
	{ "retouch_remap_read", GMEM, "memfd", PPS, case_retouch_remap, 1, 1, 1, { "" } },
	{ "retouch_remap_read", MEMFD, "memfd", PPS, case_retouch_remap, 1, 1, 1, { "" } },
	{ "retouch_remap_write", GMEM, "memfd", PPS, case_retouch_remap, 2, 1, 1, { "" } },
	{ "retouch_remap_write", MEMFD, "memfd", PPS, case_retouch_remap, 2, 1, 1, { "" } },
	{ "punch_cycle", GMEM, "memfd", PPS, case_punch, 0, 1, 1, { "" } },
	{ "punch_cycle", MEMFD, "memfd", PPS, case_punch, 0, 1, 1, { "" } },
	VCPU(ANON), VCPU(MEMFD), VCPU(GMEM), VCPU(GMEM_SWP),
	{ "fault_huge", GMEM_HUGE, "memfd_thp", PPS, case_fault, 0, 1, 1, { "" } },
	{ "fault_huge", GMEM, "memfd_thp", PPS, case_fault, 0, 1, 1, { "" } },
	{ "fault_huge", MEMFD_THP, "memfd_thp", PPS, case_fault, 0, 1, 1, { "" } },
	{ "fault_huge", ANON_THP, "memfd_thp", PPS, case_fault, 0, 1, 1, { "" } },
	VCPU_HUGE(GMEM_HUGE), VCPU_HUGE(GMEM), VCPU_HUGE(ANON_THP),
	{ "write_huge", GMEM_HUGE, "gmem", PPS, case_populate, 1, 1, 1, { "" } },
	{ "write_huge", GMEM, "gmem", PPS, case_populate, 1, 1, 1, { "" } },
	{ "write_huge", MEMFD, "gmem", PPS, case_populate, 1, 1, 1, { "" } },
	NUMA(GMEM), NUMA(GMEM_BIND_LOCAL), NUMA(GMEM_BIND_REMOTE),
	NDM("ndm_first_touch", case_fault, 0),
	NDM("ndm_fallocate", case_populate, 0),
	NDM("ndm_fallocate_touch", case_populate, 2),
	NDM("ndm_write", case_populate, 1),
	/* 2 MiB folios out of the direct map, against 2 MiB folios in it. */
	{ "ndm_first_touch_huge", GMEM_NDM_HUGE, "gmem_huge", PPS, case_fault, 0, 1, 1, { "" } },
	{ "ndm_first_touch_huge", GMEM_HUGE, "gmem_huge", PPS, case_fault, 0, 1, 1, { "" } },
	{ "ndm_write_huge", GMEM_NDM_HUGE, "gmem_huge", PPS, case_populate, 1, 1, 1, { "" } },
	{ "ndm_write_huge", GMEM_HUGE, "gmem_huge", PPS, case_populate, 1, 1, 1, { "" } },
	{ "uffd_restore", MEMFD, "memfd", PPS, case_uffd_restore, 0, 1, 1, { "" } },
	{ "uffd_restore", GMEM, "memfd", PPS, case_uffd_restore, 0, 1, 1, { "" } },
	{ "uffd_restore", GMEM_NDM, "memfd", PPS, case_uffd_restore, 0, 1, 1, { "" } },
	FOOT(GMEM), FOOT(MEMFD), FOOT(ANON), FOOT(GMEM_INPLACE), FOOT(GMEM_HUGE), FOOT(ANON_THP),
	{ "convert_transient", GMEM_INPLACE, "gmem_inplace_retry", "us", case_transient, 0, 1, 2,
	  { "_latency", "_ioctls" } },
	{ "convert_transient", GMEM_INPLACE_RETRY, "gmem_inplace_retry", "us", case_transient, 0, 1, 2,
	  { "_latency", "_ioctls" } },
	{ "convert", GMEM_INPLACE, "gmem_inplace", "us", case_convert, 0, 1, 4,
	  { "_4k_private", "_4k_shared", "_2m_private", "_2m_shared" } },
	{ "convert", GMEM_HUGE_INPLACE, "gmem_inplace", "us", case_convert, 0, 1, 4,
	  { "_4k_private", "_4k_shared", "_2m_private", "_2m_shared" } },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* ---- driver ------------------------------------------------------------------------ */

/* A metric that counts (the vCPU's faults), not a rate: no ratio for it. */
static bool metric_is_count(const struct bench_case *c, int m)
{
	return !strcmp(c->metric[m], "_faults");
}

struct result {
	int status;		/* RES_* of the first failing rep, else RES_OK */
	int n;
	double v[MAX_METRICS][MAX_REPS];
	char why[160];
};

static FILE *csv;

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
	if (csv) {
		va_start(ap, fmt);
		vfprintf(csv, fmt, ap);
		va_end(ap);
		fflush(csv);
	}
}

/* Run one case in a child; the values come back through a pipe. */
static int run_child(const struct bench_case *c, double *v, char *why, size_t whylen)
{
	char buf[256] = "";
	int pfd[2], st, len = 0, r;
	pid_t pid;

	if (pipe(pfd))
		return snprintf(why, whylen, "pipe: %s", strerror(errno)), RES_ERR;
	fflush(stdout);
	if (csv)
		fflush(csv);
	pid = fork();
	if (pid < 0)
		return snprintf(why, whylen, "fork: %s", strerror(errno)), RES_ERR;
	if (pid == 0) {
		double cv[MAX_METRICS] = { 0 };
		char cwhy[160] = "";
		int ret;

		close(pfd[0]);
		alarm(CASE_TIMEOUT);
		ret = c->fn(c, cv, cwhy, sizeof(cwhy));
		if (ret == RES_OK)
			len = snprintf(buf, sizeof(buf), "0 %.6g %.6g %.6g %.6g",
				       cv[0], cv[1], cv[2], cv[3]);
		else
			len = snprintf(buf, sizeof(buf), "%d %s", ret, cwhy);
		if (write(pfd[1], buf, len) != len)
			_exit(3);
		_exit(0);
	}
	close(pfd[1]);
	while (len < (int)sizeof(buf) - 1 && (r = read(pfd[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += r;
	buf[len] = 0;
	close(pfd[0]);
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) || !len) {
		snprintf(why, whylen, "child %s %d", WIFSIGNALED(st) ? "killed by signal" : "exited",
			 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		return RES_ERR;
	}
	if (buf[0] != '0' || buf[1] != ' ') {
		r = atoi(buf);
		snprintf(why, whylen, "%s", strchr(buf, ' ') ? strchr(buf, ' ') + 1 : buf);
		return r ? r : RES_ERR;
	}
	if (sscanf(buf + 2, "%lf %lf %lf %lf", &v[0], &v[1], &v[2], &v[3]) != MAX_METRICS)
		return snprintf(why, whylen, "garbled child answer"), RES_ERR;
	return RES_OK;
}

/*
 * -T FUNCS[:DEPTH]: where the time goes, with ftrace in the guest. Each case
 * runs under the function_graph tracer restricted to FUNCS (space or comma
 * separated, to DEPTH, default 3) with the kvm_exit event on; afterwards the
 * trace is summed per function (inclusive time, calls) and printed as "#"
 * lines. The timing of a traced run is of course not the benchmark's.
 */
#define TRACING "/sys/kernel/debug/tracing/"
static char *trace_funcs;

static void trace_write(const char *file, const char *val, int flags)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), TRACING "%s", file);
	fd = open(path, O_WRONLY | flags);
	if (fd < 0 || write(fd, val, strlen(val)) < 0)
		fprintf(stdout, "# trace: cannot write %s: %s\n", path, strerror(errno));
	if (fd >= 0)
		close(fd);
}

static void trace_setup(void)
{
	char *depth = strchr(trace_funcs, ':'), *tok, *save, buf[256];
	int flags = O_TRUNC;

	if (depth)
		*depth++ = 0;
	trace_write("tracing_on", "0", 0);
	trace_write("current_tracer", "nop", 0);
	trace_write("buffer_size_kb", "32768", 0);
	/* one function per write(): ftrace parses only the first */
	snprintf(buf, sizeof(buf), "%s", trace_funcs);
	for (tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		trace_write("set_graph_function", tok, flags);
		flags = O_APPEND;
	}
	trace_write("max_graph_depth", depth ? depth : "3", 0);
	trace_write("current_tracer", "function_graph", 0);
	trace_write("trace_options", "funcgraph-tail", 0);
	trace_write("events/kvm/kvm_exit/enable", "1", 0);
}

struct fn_time {
	char name[64];
	double us;
	long calls;
};

static int cmp_fn_time(const void *a, const void *b)
{
	double x = ((const struct fn_time *)a)->us, y = ((const struct fn_time *)b)->us;

	return (x < y) - (x > y);
}

static void trace_report(const struct bench_case *c)
{
	static struct fn_time fn[512];
	char line[512];
	long exits = 0, lost = 0;
	int nfn = 0;
	FILE *f;

	trace_write("tracing_on", "0", 0);
	f = fopen(TRACING "trace", "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *bar = strchr(line, '|'), *us, *name, *end;
		double d;
		int i;

		if (strstr(line, "kvm_exit:"))
			exits++;
		if (strstr(line, "LOST"))
			lost++;
		if (!bar || !(us = strstr(line, " us ")) || us > bar)
			continue;
		while (us > line && us[-1] != ' ')
			us--;
		d = atof(us);
		name = bar + 1;
		while (*name == ' ')
			name++;
		if (*name == '}') {
			if (!(name = strstr(name, "/* ")))
				continue;
			name += 3;
			end = strstr(name, " */");
		} else {
			end = strstr(name, "();");
		}
		if (!end || end - name >= (int)sizeof(fn[0].name))
			continue;
		*end = 0;
		for (i = 0; i < nfn && strcmp(fn[i].name, name); i++)
			;
		if (i == nfn) {
			if (nfn == (int)(sizeof(fn) / sizeof(fn[0])))
				continue;
			fn[nfn] = (struct fn_time){ .us = 0 };
			snprintf(fn[nfn++].name, sizeof(fn[0].name), "%s", name);
		}
		fn[i].us += d;
		fn[i].calls++;
	}
	if (f)
		fclose(f);
	qsort(fn, nfn, sizeof(fn[0]), cmp_fn_time);
	printf("# trace %s/%s: %ld kvm_exit events%s\n", c->name, mem_name[c->mem], exits,
	       lost ? " (events LOST: enlarge the buffer)" : "");
	for (int i = 0; i < nfn && i < 25; i++)
		printf("# trace %s/%s: %-40s %10.0f us %7ld calls %8.2f us/call\n", c->name,
		       mem_name[c->mem], fn[i].name, fn[i].us, fn[i].calls, fn[i].us / fn[i].calls);
	fflush(stdout);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* -c A,B: cases whose name contains A or B */
static bool selected(const char *filter, const char *name)
{
	char buf[256], *tok, *save;

	if (!filter)
		return true;
	snprintf(buf, sizeof(buf), "%s", filter);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (strstr(name, tok))
			return true;
	return false;
}

/* of sorted values */
static double median(const double *v, int n)
{
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static size_t group[NCASES + 1], ngroups;

static long scaled(long v, double s, long min)
{
	long r = v * s;

	return r < min ? min : r;
}

int main(int argc, char **argv)
{
	static struct result res[NCASES];
	const char *filter = NULL, *csv_path = NULL;
	int reps = 5, opt, failed = 0;
	double scale = 1.0, t_start = now();
	char line[64] = "none", pcp_saved[32] = "0";
	FILE *f;

	while ((opt = getopt(argc, argv, "r:s:c:o:vT:")) != -1) {
		switch (opt) {
		case 'r': reps = atoi(optarg); break;
		case 's': scale = atof(optarg); break;
		case 'c': filter = optarg; break;
		case 'o': csv_path = optarg; break;
		case 'v': verbose = true; break;
		case 'T': trace_funcs = optarg; break;
		default:
			fprintf(stderr, "usage: %s [-r REPS] [-s SCALE] [-c CASE-SUBSTRING[,...]] [-o CSV] [-v] [-T FUNCS[:DEPTH]]\n",
				argv[0]);
			return 2;
		}
	}
	if (reps < 1 || reps > MAX_REPS || scale <= 0) {
		fprintf(stderr, "reps must be 1..%d, scale > 0\n", MAX_REPS);
		return 2;
	}
	fault_pages = scaled(fault_pages, scale, 16) & ~1L;
	punch_pages = scaled(punch_pages, scale, 16);
	vcpu_pages = scaled(vcpu_pages, scale, 4);
	vcpu_huge_pages = scaled(vcpu_huge_pages, scale, 1024);
	foot_pages = scaled(foot_pages, scale, 1024);
	convert_pages = scaled(convert_pages, scale, 1024) & ~511L;
	foot_vcpu_pages = scaled(foot_vcpu_pages, scale, 4);
	if (foot_vcpu_pages > foot_pages - TOUCH_PAGE0)
		foot_vcpu_pages = foot_pages - TOUCH_PAGE0;
	if (!csv_path && !access("/share/results", W_OK))
		csv_path = "/share/results/bench.csv";
	if (csv_path && !(csv = fopen(csv_path, "w")))
		fprintf(stderr, "cannot write %s: %s\n", csv_path, strerror(errno));

	/* Our modules carry a MODULE_VERSION, Debian's never do. */
	f = fopen("/sys/module/kvm/version", "r");
	if (f) {
		if (fgets(line, sizeof(line), f))
			line[strcspn(line, "\n")] = 0;
		fclose(f);
	}
	out("meta,modules,%s\n", f ? "ours" : "stock");
	out("meta,kvm_version,%s\n", line);
	out("meta,reps,%d\n", reps);
	{
		struct utsname u;

		if (!uname(&u))
			out("meta,kernel,%s\n", u.release);
	}
	out("meta,fault_pages,%ld\n", fault_pages);
	out("meta,punch_pages,%ld\nmeta,punch_cycles,%ld\n", punch_pages, punch_cycles);
	out("meta,vcpu_pages,%ld\nmeta,vcpu_retouch_passes,%ld\n", vcpu_pages, vcpu_passes);
	out("meta,vcpu_huge_pages,%ld\n", vcpu_huge_pages);
	out("meta,retouch_passes,%ld\n", retouch_passes);
	out("meta,footprint_pages,%ld\nmeta,footprint_vcpu_pages,%ld\n", foot_pages, foot_vcpu_pages);
	out("meta,ncpus,%ld\n", sysconf(_SC_NPROCESSORS_ONLN));
	f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (f) {
		if (fgets(line, sizeof(line), f))
			line[strcspn(line, "\n")] = 0;
		fclose(f);
		out("meta,thp,%s\n", line);
	}
	if (trace_funcs)
		trace_setup();

	/* Small per-CPU free lists: less to correct MemAvailable for. */
	f = fopen(PCP_SYSCTL, "r");
	if (f) {
		if (!fgets(pcp_saved, sizeof(pcp_saved), f))
			strcpy(pcp_saved, "0");
		fclose(f);
	}
	sysctl_write(PCP_SYSCTL, "100000");

	/*
	 * A group is the variants of one case, next to each other in cases[].
	 * Each rep runs every group, its variants back to back (so that their
	 * ratio is taken under the same host load), with the group order and
	 * the order inside each group rotated from rep to rep.
	 */
	for (size_t i = 0; i < NCASES; i++)
		if (!i || strcmp(cases[i].name, cases[i - 1].name))
			group[ngroups++] = i;
	group[ngroups] = NCASES;

	for (int rep = 0; rep < reps; rep++) {
		size_t ord[NCASES], no = 0;

		for (size_t gi = 0; gi < ngroups; gi++) {
			size_t g = (gi + rep) % ngroups, len = group[g + 1] - group[g];

			for (size_t j = 0; j < len; j++)
				ord[no++] = group[g] + (j + rep) % len;
		}
		for (size_t k = 0; k < NCASES; k++) {
			size_t i = ord[k];
			const struct bench_case *c = &cases[i];
			struct result *r = &res[i];
			double v[MAX_METRICS];
			int ret;

			if (!selected(filter, c->name))
				continue;
			if (r->status)		/* n/a or failed once: not again */
				continue;
			if (trace_funcs) {
				trace_write("trace", "", O_TRUNC);
				trace_write("tracing_on", "1", 0);
			}
			ret = run_child(c, v, r->why, sizeof(r->why));
			if (trace_funcs)
				trace_report(c);
			if (ret) {
				r->status = ret;
				out("raw,%s,%s,%d,%s\n", c->name, mem_name[c->mem], rep + 1,
				    ret == RES_NA ? "n/a" : "error");
				if (ret != RES_NA)
					fprintf(stdout, "# %s/%s: %s\n", c->name, mem_name[c->mem], r->why);
				continue;
			}
			for (int m = 0; m < c->nmetrics; m++) {
				r->v[m][r->n] = v[m];
				out("raw,%s%s,%s,%d,%.6g\n", c->name, c->metric[m], mem_name[c->mem],
				    rep + 1, v[m]);
			}
			r->n++;
		}
	}
	sysctl_write(PCP_SYSCTL, pcp_saved);

	/*
	 * Paired ratios: per rep, the reference's value over this variant's
	 * (pages/s: the cost per page relative to the reference, > 1 slower),
	 * both measured in the same rep, back to back.
	 */
	for (size_t i = 0; i < NCASES; i++) {
		const struct bench_case *c = &cases[i];
		const struct result *r = &res[i], *ref = NULL;
		double q[MAX_REPS];

		if (!selected(filter, c->name) || r->status || strcmp(c->unit, PPS))
			continue;
		for (size_t j = 0; j < NCASES; j++)
			if (!strcmp(cases[j].name, c->name) && !strcmp(mem_name[cases[j].mem], c->ref))
				ref = &res[j];
		if (!ref || ref->status || ref->n != r->n)
			continue;
		for (int m = 0; m < c->nmetrics; m++) {
			if (metric_is_count(c, m))
				continue;
			for (int k = 0; k < r->n; k++)
				q[k] = ref->v[m][k] / r->v[m][k];
			qsort(q, r->n, sizeof(double), cmp_double);
			out("ratio,%s%s,%s,%s,%.6g,%.6g,%.6g,%d\n", c->name, c->metric[m],
			    mem_name[c->mem], c->ref, median(q, r->n), q[0], q[r->n - 1], r->n);
		}
	}

	for (size_t i = 0; i < NCASES; i++) {
		const struct bench_case *c = &cases[i];
		struct result *r = &res[i];

		if (!selected(filter, c->name))
			continue;
		for (int m = 0; m < c->nmetrics; m++) {
			if (r->status) {
				out("summary,%s%s,%s,%s,%s,%s,,,0,%s\n", c->name, c->metric[m],
				    mem_name[c->mem], c->unit, c->ref,
				    r->status == RES_NA ? "n/a" : "error", r->why);
				continue;
			}
			qsort(r->v[m], r->n, sizeof(double), cmp_double);
			out("summary,%s%s,%s,%s,%s,%.6g,%.6g,%.6g,%d,\n", c->name, c->metric[m],
			    mem_name[c->mem], metric_is_count(c, m) ? "faults" : c->unit, c->ref,
			    median(r->v[m], r->n),
			    r->v[m][0], r->v[m][r->n - 1], r->n);
		}
		failed |= r->status == RES_ERR;
	}
	out("meta,seconds,%.1f\n", now() - t_start);
	if (csv)
		fclose(csv);
	return failed;
}
