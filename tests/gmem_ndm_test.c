// SPDX-License-Identifier: GPL-2.0
/*
 * gmem_ndm_test: GUEST_MEMFD_FLAG_NO_DIRECT_MAP (provisional number;
 * src/virt/0024, mm-shim 0007). A page of such a guest_memfd is out of the
 * kernel's direct map once anyone can reach it, on every CPU, and back in it
 * once it is freed; population costs one TLB flush per batch, not per page;
 * GUP refuses the memory with a clean errno; a vCPU runs on it; a module
 * unload right after the last file closed leaves no page out of the direct
 * map. A plain guest_memfd is the control: its pages are in the direct map
 * and GUP takes them, so the checks can tell the two apart.
 *
 * Where KVM_CAP_GUEST_MEMFD_FLAGS lacks the flag (Debian's kernel: no
 * exports for it), creating a file with it must fail with EINVAL, and the
 * other cases SKIP: the tier's expected list says where that is allowed.
 *
 * The direct map is read by tests/kmod/gmem_dmap_probe.ko, which the shim
 * tier stages next to this program. Unloads and reloads the modules: run it
 * with the last tests.
 */
#include <linux/falloc.h>
#include <linux/mempolicy.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>

#include "gmem_test.h"
#include "gmem_x86_guest.h"
#include "gmem_dmap_probe.h"

#define NDM		GUEST_MEMFD_FLAG_NO_DIRECT_MAP
#define SHARED		(GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED)
#define HUGE		GUEST_MEMFD_FLAG_HUGEPAGE
#define SZ_2M		(2L << 20)
#define NPAGES		16
/* More than one default batch (64) and less than two. */
#define POP_PAGES	96
/* write() takes pages out up to 512 at a time. */
#define WRITE_BATCH	512
#define PROBE_KO	"/share/tests/gmem_dmap_probe.ko"
#define NDM_FLUSHES	GMEM_DEBUGFS "/kvm/gmem_ndm_flushes"
#define NDM_BATCH_PARAM	"/sys/module/kvm/parameters/gmem_ndm_batch"

static long page;
static cpu_set_t all_cpus;
static int kvm_fd;
static int probe_fd = -1;
static bool offered;

static const char not_offered[] =
	"GUEST_MEMFD_FLAG_NO_DIRECT_MAP not offered (the kernel lacks mm-shim 0007)";

/*
 * The direct map state of page @off of guest_memfd @fd, or with @fd < 0 of
 * *@pfn; *@pfn gets the page's pfn. 0 or -errno (-ENOENT: no page there).
 */
static int probe(int fd, long off, uint64_t *pfn, struct gmem_dmap_probe *p)
{
	*p = (struct gmem_dmap_probe){ .fd = fd, .offset = off, .pfn = fd < 0 ? *pfn : 0 };
	if (ioctl(probe_fd, GMEM_DMAP_PROBE, p))
		return -errno;
	*pfn = p->pfn;
	return 0;
}

/* Is the page gone from the direct map: no entry, no CPU can read it? */
static bool probe_says_absent(const struct gmem_dmap_probe *p)
{
	return !p->present && !p->readable_cpus;
}

static bool probe_says_present(const struct gmem_dmap_probe *p)
{
	return p->present && p->readable_cpus == p->nr_cpus;
}

/* What the cases that need the flag and the probe return first. */
static int need_flag_and_probe(char *why, size_t whylen)
{
	if (!offered) {
		snprintf(why, whylen, "%s", not_offered);
		return KSFT_SKIP;
	}
	if (probe_fd < 0) {
		snprintf(why, whylen, "%s missing or not loadable: the shim tier stages it", PROBE_KO);
		return KSFT_FAIL;
	}
	return KSFT_PASS;
}

/*
 * A new VM of @type creates a guest_memfd with the flag if its
 * KVM_CAP_GUEST_MEMFD_FLAGS has it, else fails with EINVAL. *@has says which.
 * @abi names the ABI for the message.
 */
static int create_as_offered(unsigned long type, const char *abi, bool *has,
			     char *why, size_t whylen)
{
	unsigned long long flags = type ? NDM : NDM | SHARED;
	int vm = ioctl(kvm_fd, KVM_CREATE_VM, type);
	int fd, r = KSFT_PASS;

	*has = false;
	if (vm < 0) {
		snprintf(why, whylen, "KVM_CREATE_VM(%lu): %s", type, strerror(errno));
		return KSFT_FAIL;
	}
	*has = gmem_has_flags(vm, NDM);
	fd = gmem_create(vm, NPAGES * page, flags);
	if (*has ? fd < 0 : fd != -EINVAL) {
		snprintf(why, whylen, "VM type %lu (%s) %s the flag, but creating %#llx: %s",
			 type, abi, *has ? "offers" : "lacks", flags,
			 fd < 0 ? strerror(-fd) : "worked, want EINVAL");
		r = KSFT_FAIL;
	}
	if (fd >= 0)
		close(fd);
	close(vm);
	return r;
}

/*
 * Offered exactly where it works: a VM whose KVM_CAP_GUEST_MEMFD_FLAGS has
 * the flag creates files with it, one whose capability lacks it gets EINVAL:
 * every VM on Debian's kernel; with our modules, a SW_PROTECTED VM under
 * the v7 ABI, whose guest_memfd is shared as a whole. A default VM and
 * /dev/kvm agree.
 */
static int flag_offered_or_einval(char *why, size_t whylen)
{
	bool has;
	int r;

	r = create_as_offered(0, "mainline ABI", &has, why, whylen);
	if (r == KSFT_PASS && has != offered) {
		snprintf(why, whylen, "/dev/kvm %s the flag, a default VM %s",
			 offered ? "offers" : "lacks", has ? "offers it" : "does not");
		r = KSFT_FAIL;
	}
	if (r == KSFT_PASS && kvm_cap(kvm_fd, KVM_CAP_VM_TYPES) & (1 << KVM_X86_SW_PROTECTED_VM))
		r = create_as_offered(KVM_X86_SW_PROTECTED_VM, "mainline ABI", &has, why, whylen);
	if (r == KSFT_PASS && gmem_ours()) {
		if (!gmem_write_file(GMEM_ABI_PARAM, "0")) {
			snprintf(why, whylen, "cannot select the v7 ABI (%s)", GMEM_ABI_PARAM);
			return KSFT_FAIL;
		}
		r = create_as_offered(KVM_X86_SW_PROTECTED_VM, "v7 ABI", &has, why, whylen);
		if (r == KSFT_PASS && has) {
			snprintf(why, whylen, "a VM under the v7 ABI offers the flag");
			r = KSFT_FAIL;
		}
		gmem_write_file(GMEM_ABI_PARAM, "1");
	}
	return r;
}

/*
 * A page faulted through the mapping is out of the direct map on every CPU
 * and still reads and writes through the mapping; the same page of a plain
 * guest_memfd is in it, and an untouched page does not exist yet.
 */
static int faulted_page_leaves_direct_map(char *why, size_t whylen)
{
	struct gfile ndm, plain = { .vm = -1, .fd = -1 };
	struct gmem_dmap_probe p;
	uint64_t pfn = 0;
	int r, e;

	r = need_flag_and_probe(why, whylen);
	if (r != KSFT_PASS)
		return r;
	r = gfile_open(&ndm, kvm_fd, 0, SHARED | NDM, NPAGES * page, why, whylen);
	if (r == KSFT_PASS)
		r = gfile_open(&plain, kvm_fd, 0, SHARED, NPAGES * page, why, whylen);
	if (r != KSFT_PASS)
		goto out;

	gmem_fill(ndm.map, 3 * page, 4 * page, 0x31);
	gmem_fill(plain.map, 3 * page, 4 * page, 0x31);
	if ((e = probe(ndm.fd, 3 * page, &pfn, &p))) {
		snprintf(why, whylen, "probe of the faulted page: %s", strerror(-e));
		r = KSFT_FAIL;
	} else if (!probe_says_absent(&p)) {
		snprintf(why, whylen, "faulted page: direct map entry %s, readable on %u of %u CPUs",
			 p.present ? "present" : "absent", p.readable_cpus, p.nr_cpus);
		r = KSFT_FAIL;
	} else if (gmem_check(ndm.map, 3 * page, 4 * page, 0x31) >= 0) {
		snprintf(why, whylen, "the mapping does not read back what was written");
		r = KSFT_FAIL;
	} else if ((e = probe(plain.fd, 3 * page, &pfn, &p)) || !probe_says_present(&p)) {
		snprintf(why, whylen, "control: a plain guest_memfd page %s (%u of %u CPUs)",
			 e ? strerror(-e) : "is not in the direct map", p.readable_cpus, p.nr_cpus);
		r = KSFT_FAIL;
	} else if ((e = probe(ndm.fd, 1 * page, &pfn, &p)) != -ENOENT) {
		snprintf(why, whylen, "an untouched page below it: %s, want ENOENT (not allocated)",
			 e ? strerror(-e) : "exists");
		r = KSFT_FAIL;
	}
out:
	gfile_close(&plain);
	gfile_close(&ndm);
	return r;
}

/*
 * Every page of [from, to) of @fd is out of the direct map; @pfns, if given,
 * gets their pfns.
 */
static bool all_absent(int fd, long from, long to, uint64_t *pfns, char *why, size_t whylen)
{
	struct gmem_dmap_probe p;
	uint64_t pfn = 0;
	int e;

	for (long off = from; off < to; off += page) {
		e = probe(fd, off, &pfn, &p);
		if (e) {
			snprintf(why, whylen, "page %ld: %s", off / page, strerror(-e));
			return false;
		}
		if (!probe_says_absent(&p)) {
			snprintf(why, whylen, "page %ld: direct map entry %s, readable on %u of %u CPUs",
				 off / page, p.present ? "present" : "absent",
				 p.readable_cpus, p.nr_cpus);
			return false;
		}
		if (pfns)
			pfns[(off - from) / page] = pfn;
	}
	return true;
}

/* Each of the @n pages @pfns is back in the direct map, readable on every CPU, @when. */
static bool all_present(const uint64_t *pfns, long n, const char *when, char *why, size_t whylen)
{
	struct gmem_dmap_probe p;
	uint64_t pfn;
	int e;

	for (long i = 0; i < n; i++) {
		pfn = pfns[i];
		e = probe(-1, 0, &pfn, &p);
		if (e || !probe_says_present(&p)) {
			snprintf(why, whylen, "page %ld %s: %s", i, when,
				 e ? strerror(-e) : "not back in the direct map");
			return false;
		}
	}
	return true;
}

/*
 * fallocate() and write() populate out of the direct map, with one TLB flush
 * per batch of 64 pages: at most two for POP_PAGES pages each. write() puts
 * what it wrote there. With gmem_ndm_batch=0 (upstream's scheme, one flush
 * per page) the same fallocate() counts a flush per page.
 */
static int population_flushes_per_batch(char *why, size_t whylen)
{
	size_t len = POP_PAGES * page;
	uint8_t *src = malloc(len);
	long before, flushes;
	struct gfile g;
	ssize_t n;
	int r;

	r = need_flag_and_probe(why, whylen);
	if (r != KSFT_PASS)
		goto out_free;
	r = gfile_open(&g, kvm_fd, 0, SHARED | NDM | GUEST_MEMFD_FLAG_WRITE, 2 * len, why, whylen);
	if (r != KSFT_PASS)
		goto out;
	if (gmem_counter(NDM_FLUSHES) < 0) {
		snprintf(why, whylen, "no %s", NDM_FLUSHES);
		r = KSFT_FAIL;
		goto out;
	}

	before = gmem_counter(NDM_FLUSHES);
	if (fallocate(g.fd, FALLOC_FL_KEEP_SIZE, 0, len)) {
		snprintf(why, whylen, "fallocate: %s", strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	flushes = gmem_counter(NDM_FLUSHES) - before;
	if (flushes < 1 || flushes > 2) {
		snprintf(why, whylen, "fallocate of %d pages: %ld TLB flushes, want 1-2", POP_PAGES, flushes);
		r = KSFT_FAIL;
		goto out;
	}
	if (!all_absent(g.fd, 0, len, NULL, why, whylen)) {
		r = KSFT_FAIL;
		goto out;
	}

	gmem_fill(src, 0, len, 0x52);
	before = gmem_counter(NDM_FLUSHES);
	n = pwrite(g.fd, src, len, len);
	flushes = gmem_counter(NDM_FLUSHES) - before;
	if (n != (ssize_t)len) {
		snprintf(why, whylen, "pwrite: %s", n < 0 ? strerror(errno) : "short");
		r = KSFT_FAIL;
	} else if (flushes < 1 || flushes > (POP_PAGES + WRITE_BATCH - 1) / WRITE_BATCH) {
		snprintf(why, whylen, "pwrite of %d pages: %ld TLB flushes, want 1-%d", POP_PAGES, flushes,
			 (POP_PAGES + WRITE_BATCH - 1) / WRITE_BATCH);
		r = KSFT_FAIL;
	} else if (!all_absent(g.fd, len, 2 * len, NULL, why, whylen)) {
		r = KSFT_FAIL;
	} else if (gmem_check(g.map + len, 0, len, 0x52) >= 0 ||
		   gmem_check_zero(g.map, 0, len) >= 0) {
		snprintf(why, whylen, "the mapping does not show zeroes, then what pwrite() wrote");
		r = KSFT_FAIL;
	}
	if (r != KSFT_PASS)
		goto out;

	/* The counter is real: upstream's scheme flushes once per page. */
	if (!gmem_write_file(NDM_BATCH_PARAM, "0")) {
		snprintf(why, whylen, "cannot write %s", NDM_BATCH_PARAM);
		r = KSFT_FAIL;
		goto out;
	}
	before = gmem_counter(NDM_FLUSHES);
	if (fallocate(g.fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, 0, len) ||
	    fallocate(g.fd, FALLOC_FL_KEEP_SIZE, 0, len)) {
		snprintf(why, whylen, "punch and fallocate again: %s", strerror(errno));
		r = KSFT_FAIL;
	} else if ((flushes = gmem_counter(NDM_FLUSHES) - before) < POP_PAGES) {
		snprintf(why, whylen, "gmem_ndm_batch=0: %ld TLB flushes for %d pages, want at least %d",
			 flushes, POP_PAGES, POP_PAGES);
		r = KSFT_FAIL;
	}
	gmem_write_file(NDM_BATCH_PARAM, "64");
out:
	gfile_close(&g);
out_free:
	free(src);
	return r;
}

/*
 * A hole punch puts the page back in the direct map, and so does closing
 * the file (eviction) for the others, on every CPU.
 */
static int freed_pages_return_to_direct_map(char *why, size_t whylen)
{
	struct gmem_dmap_probe p;
	uint64_t pfn[NPAGES];
	struct gfile g;
	int r, e;

	r = need_flag_and_probe(why, whylen);
	if (r != KSFT_PASS)
		return r;
	r = gfile_open(&g, kvm_fd, 0, SHARED | NDM, NPAGES * page, why, whylen);
	if (r != KSFT_PASS)
		goto out;
	gmem_fill(g.map, 0, NPAGES * page, 0x44);
	if (!all_absent(g.fd, 0, NPAGES * page, pfn, why, whylen)) {
		r = KSFT_FAIL;
		goto out;
	}
	if (fallocate(g.fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, 2 * page, page)) {
		snprintf(why, whylen, "punch hole: %s", strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	if (!all_present(&pfn[2], 1, "(punched)", why, whylen)) {
		r = KSFT_FAIL;
		goto out;
	}
	if ((e = probe(g.fd, 3 * page, &pfn[3], &p)) || !probe_says_absent(&p)) {
		snprintf(why, whylen, "the punch also restored its neighbour");
		r = KSFT_FAIL;
		goto out;
	}
	gfile_close(&g);
	return all_present(pfn, NPAGES, "after close", why, whylen) ? KSFT_PASS : KSFT_FAIL;
out:
	gfile_close(&g);
	return r;
}

#define COOKIE		0x6b766d2d676d656dULL	/* "kvm-gmem" */

/*
 * A page goes back to the direct map cleared: what the guest kept there
 * never reaches the page's next owner (secretmem does the same). Every
 * 64-bit word of every page holds the cookie; after the punch none may,
 * read through the direct map at once (a page taken again meanwhile by
 * someone else would only hide the old behaviour, never fake the new).
 */
static int freed_pages_are_cleared(char *why, size_t whylen)
{
	struct gmem_dmap_probe p;
	uint64_t pfn[NPAGES];
	struct gfile g;
	int r, e;

	r = need_flag_and_probe(why, whylen);
	if (r != KSFT_PASS)
		return r;
	r = gfile_open(&g, kvm_fd, 0, SHARED | NDM, NPAGES * page, why, whylen);
	if (r != KSFT_PASS)
		goto out;
	for (long i = 0; i < NPAGES * page / 8; i++)
		((volatile uint64_t *)g.map)[i] = COOKIE;
	if (!all_absent(g.fd, 0, NPAGES * page, pfn, why, whylen)) {
		r = KSFT_FAIL;
		goto out;
	}
	if (fallocate(g.fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, 0, NPAGES * page)) {
		snprintf(why, whylen, "punch hole: %s", strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	for (int i = 0; i < NPAGES; i++) {
		p = (struct gmem_dmap_probe){ .fd = -1, .pfn = pfn[i], .cookie = COOKIE };
		e = ioctl(probe_fd, GMEM_DMAP_PROBE, &p) ? -errno : 0;
		if (e || !p.present || p.cookie_words) {
			snprintf(why, whylen, "punched page %d: %s, %u of its words still hold what the guest wrote",
				 i, e ? strerror(-e) : p.present ? "back in the direct map" : "not in the direct map",
				 p.cookie_words);
			r = KSFT_FAIL;
			goto out;
		}
	}
out:
	gfile_close(&g);
	return r;
}

#define HWPOISON_INJECT	GMEM_DEBUGFS "/hwpoison/corrupt-pfn"

/*
 * Memory failure on a page out of the direct map (injected by pfn: GUP, and
 * so MADV_HWPOISON, refuses such memory): the host's access SIGBUSes, and
 * once the page leaves the file it stays out of the direct map, where
 * set_mce_nospec() would have put it on real hardware; putting it back
 * would let the kernel touch poisoned memory.
 */
static int poisoned_page_stays_out(char *why, size_t whylen)
{
	struct gmem_dmap_probe p;
	char pfnstr[32];
	uint64_t pfn = 0;
	struct gfile g;
	int r, e;

	r = need_flag_and_probe(why, whylen);
	if (r != KSFT_PASS)
		return r;
	r = gfile_open(&g, kvm_fd, 0, SHARED | NDM, NPAGES * page, why, whylen);
	if (r != KSFT_PASS)
		goto out;
	g.map[2 * page] = 1;
	if ((e = probe(g.fd, 2 * page, &pfn, &p)) || !probe_says_absent(&p)) {
		snprintf(why, whylen, "page 2 before the failure: %s", e ? strerror(-e) : "in the direct map");
		r = KSFT_FAIL;
		goto out;
	}
	snprintf(pfnstr, sizeof(pfnstr), "%#llx", (unsigned long long)pfn);
	/*
	 * 6.12's memory_failure() logs guest_memfd's MF_DELAYED as "Failed to
	 * punch page" and returns EBUSY, for any guest_memfd page: the page is
	 * poisoned all the same, which the SIGBUS below shows.
	 */
	if (!gmem_write_file(HWPOISON_INJECT, pfnstr) && errno != EBUSY) {
		snprintf(why, whylen, "cannot write %s (CONFIG_HWPOISON_INJECT): %s", HWPOISON_INJECT,
			 strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	if (!gmem_sigbus(g.map + 2 * page, false)) {
		snprintf(why, whylen, "a read of the poisoned page did not SIGBUS");
		r = KSFT_FAIL;
		goto out;
	}
	if (fallocate(g.fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, 0, NPAGES * page)) {
		snprintf(why, whylen, "punch hole: %s", strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	if ((e = probe(-1, 0, &pfn, &p)) || p.present || p.readable_cpus) {
		snprintf(why, whylen, "the poisoned page after the punch: %s",
			 e ? strerror(-e) : "back in the direct map");
		r = KSFT_FAIL;
	}
out:
	gfile_close(&g);
	return r;
}

#define SNAPSHOT_DEV	"/dev/snapshot"

/* open(/dev/snapshot, O_RDONLY), the start of a hibernation: 0 or -errno. */
static int snapshot_open(void)
{
	int fd = open(SNAPSHOT_DEV, O_RDONLY | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT &&
	    !mknod(SNAPSHOT_DEV, S_IFCHR | 0600, makedev(10, 231)))
		fd = open(SNAPSHOT_DEV, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/*
 * Hibernation would write every page to disk, those out of the direct map
 * too: while a NO_DIRECT_MAP file exists it is refused (EBUSY, as secretmem
 * refuses it), and once the last one is closed it may start again.
 */
static int hibernation_refused(char *why, size_t whylen)
{
	struct gfile g;
	int r, e;

	r = need_flag_and_probe(why, whylen);
	if (r != KSFT_PASS)
		return r;
	e = snapshot_open();
	if (e) {
		snprintf(why, whylen, "%s without a NO_DIRECT_MAP file: %s, want it to open",
			 SNAPSHOT_DEV, strerror(-e));
		return KSFT_FAIL;
	}
	r = gfile_open(&g, kvm_fd, 0, SHARED | NDM, NPAGES * page, why, whylen);
	if (r == KSFT_PASS && (e = snapshot_open()) != -EBUSY) {
		snprintf(why, whylen, "%s while a NO_DIRECT_MAP file exists: %s, want EBUSY",
			 SNAPSHOT_DEV, e ? strerror(-e) : "opened");
		r = KSFT_FAIL;
	}
	gfile_close(&g);
	if (r == KSFT_PASS && (e = snapshot_open())) {
		snprintf(why, whylen, "%s after the file was closed: %s", SNAPSHOT_DEV, strerror(-e));
		r = KSFT_FAIL;
	}
	return r;
}

/* process_vm_readv() of @len bytes at @addr of this process: 0 or -errno. */
static int vm_readv(volatile void *addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)addr, len };

	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) < 0 ? -errno : 0;
}

static int vm_writev(volatile void *addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)addr, len };

	return process_vm_writev(getpid(), &local, 1, &remote, 1, 0) < 0 ? -errno : 0;
}

/* vmsplice() of @len bytes at @addr into a pipe: 0 or -errno. */
static int splice_in(volatile void *addr, size_t len)
{
	struct iovec iov = { (void *)addr, len };
	int p[2], r;

	if (pipe(p))
		return -errno;
	r = vmsplice(p[1], &iov, 1, 0) < 0 ? -errno : 0;
	close(p[0]);
	close(p[1]);
	return r;
}

/* A read of /proc/self/mem at @addr: 0 or -errno. */
static int procmem_read(volatile void *addr, void *buf, size_t len)
{
	int fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	int r;

	if (fd < 0)
		return -errno;
	r = pread(fd, buf, len, (off_t)(uintptr_t)addr) < 0 ? -errno : 0;
	close(fd);
	return r;
}

/*
 * An O_DIRECT read (@write false) or write of one page between a file on the
 * guest's ext4 root (/var/tmp) and @addr: 0 or -errno.
 */
static int odirect(volatile void *addr, bool write)
{
	char path[] = "/var/tmp/gmem-ndm-XXXXXX";
	void *buf = NULL;
	int fd, r;

	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	unlink(path);
	r = posix_memalign(&buf, page, page) ? -ENOMEM : 0;
	if (!r) {
		memset(buf, 0x2d, page);
		if (pwrite(fd, buf, page, 0) != page || fsync(fd) || fcntl(fd, F_SETFL, O_DIRECT))
			r = -errno;
	}
	if (!r && (write ? pwrite(fd, (void *)addr, page, 0) : pread(fd, (void *)addr, page, 0)) != page)
		r = errno ? -errno : -EIO;
	free(buf);
	close(fd);
	return r;
}

#define GUP_USERS	7

/* Each GUP user on one faulted page of @g: *@errs gets its -errno or 0. */
static void gup_users(struct gfile *g, int errs[GUP_USERS])
{
	uint8_t buf[64];

	errs[0] = vm_readv(g->map, buf, sizeof(buf));
	errs[1] = vm_writev(g->map, buf, sizeof(buf));
	errs[2] = splice_in(g->map, page);
	errs[3] = mlock((void *)g->map, page) ? -errno : 0;
	munlock((void *)g->map, page);
	errs[4] = procmem_read(g->map, buf, sizeof(buf));
	errno = 0;
	errs[5] = odirect(g->map, false);
	errno = 0;
	errs[6] = odirect(g->map, true);
}

/*
 * GUP refuses the memory: process_vm_readv()/writev(), vmsplice() and
 * O_DIRECT reads and writes on ext4 get EFAULT, mlock() ENOMEM,
 * /proc/self/mem EIO; all of them work on a plain guest_memfd, and the
 * mapping itself still reads and writes.
 */
static int gup_refuses_the_memory(char *why, size_t whylen)
{
	static const char *const what[] = { "process_vm_readv", "process_vm_writev",
					     "vmsplice", "mlock", "/proc/self/mem",
					     "O_DIRECT read into the mapping",
					     "O_DIRECT write from the mapping" };
	static const int want[] = { -EFAULT, -EFAULT, -EFAULT, -ENOMEM, -EIO, -EFAULT, -EFAULT };
	struct gfile ndm, plain = { .vm = -1, .fd = -1 };
	int errs[GUP_USERS];
	int r;

	r = need_flag_and_probe(why, whylen);
	if (r != KSFT_PASS)
		return r;
	r = gfile_open(&ndm, kvm_fd, 0, SHARED | NDM, NPAGES * page, why, whylen);
	if (r == KSFT_PASS)
		r = gfile_open(&plain, kvm_fd, 0, SHARED, NPAGES * page, why, whylen);
	if (r != KSFT_PASS)
		goto out;

	gmem_fill(plain.map, 0, page, 0x17);
	gup_users(&plain, errs);
	for (int i = 0; i < GUP_USERS && r == KSFT_PASS; i++) {
		if (errs[i]) {
			snprintf(why, whylen, "control: %s on a plain guest_memfd: %s", what[i],
				 strerror(-errs[i]));
			r = KSFT_FAIL;
		}
	}
	gmem_fill(ndm.map, 0, page, 0x17);
	gup_users(&ndm, errs);
	for (int i = 0; i < GUP_USERS && r == KSFT_PASS; i++) {
		if (errs[i] != want[i]) {
			snprintf(why, whylen, "%s: %s, want %s", what[i],
				 errs[i] ? strerror(-errs[i]) : "worked", strerror(-want[i]));
			r = KSFT_FAIL;
		}
	}
	if (r == KSFT_PASS && gmem_check(ndm.map, 0, page, 0x17) >= 0) {
		snprintf(why, whylen, "the mapping no longer reads back what was written");
		r = KSFT_FAIL;
	}
out:
	gfile_close(&plain);
	gfile_close(&ndm);
	return r;
}

/*
 * The cases of KVM's own mappings of guest memory (kvmclock, a nested VMCB)
 * run on NO_DIRECT_MAP, on NO_DIRECT_MAP in 2 MiB folios (pages inside a
 * folio out of the direct map whole), and on a plain guest_memfd as the
 * control; the memslot swap on the first two.
 */
static const struct {
	const char *name;
	unsigned long long flags;
} kvm_map_files[] = {
	{ "plain guest_memfd", SHARED | GUEST_MEMFD_FLAG_WRITE },
	{ "NO_DIRECT_MAP", SHARED | GUEST_MEMFD_FLAG_WRITE | NDM },
	{ "NO_DIRECT_MAP, 2 MiB folios", SHARED | GUEST_MEMFD_FLAG_WRITE | NDM | HUGE },
};

#define NR_KVM_MAP_FILES	(sizeof(kvm_map_files) / sizeof(kvm_map_files[0]))

/* A file of 2 MiB folios is 4 MiB: the guest's pages in its first folio. */
static size_t vm_size_for(unsigned long long flags)
{
	return flags & HUGE ? 2 * SZ_2M : 0;
}

#define CLOCK_GPA		0x5000

/* struct pvclock_vcpu_time_info, as KVM writes it at CLOCK_GPA. */
struct pvclock {
	uint32_t version, pad0;
	uint64_t tsc_timestamp, system_time;
	uint32_t tsc_to_system_mul;
	int8_t tsc_shift;
	uint8_t flags, pad[2];
};

/* kvmclock as the file holds it; false if KVM never wrote it there. */
static bool read_clock(struct vm *vm, struct pvclock *c)
{
	uint8_t *b = (uint8_t *)c;

	for (size_t i = 0; i < sizeof(*c); i++)
		b[i] = vm->mem[CLOCK_GPA + i];
	return c->version && !(c->version & 1) && c->tsc_to_system_mul;
}

/*
 * KVM_GET_CLOCK, then KVM_SET_CLOCK of the same: every vCPU rewrites its
 * kvmclock before it next runs.
 */
static bool clock_update(struct vm *vm, char *why, size_t whylen)
{
	struct kvm_clock_data clock = { 0 };

	if (ioctl(vm->vm, KVM_GET_CLOCK, &clock)) {
		snprintf(why, whylen, "KVM_GET_CLOCK: %s", strerror(errno));
		return false;
	}
	clock.flags = 0;
	if (ioctl(vm->vm, KVM_SET_CLOCK, &clock)) {
		snprintf(why, whylen, "KVM_SET_CLOCK: %s", strerror(errno));
		return false;
	}
	return true;
}

/*
 * kvmclock across a memslot swap at the same hva (pfn caches x memslot
 * changes): a gmem-only memslot whose userspace_addr is other memory (the
 * test's copy of the guest) has kvmclock on a page of the file; the VMM
 * deletes it and creates a plain memslot on that other memory at the same
 * gpa and hva. The clock must now be written there. A cache refreshes on a
 * memslot change only where the hva changed or the new memslot is gmem-only,
 * so this needs unbinding the gmem-only memslot to invalidate its caches:
 * otherwise kvmclock keeps going to the file's page.
 */
static int kvmclock_follows_a_memslot_swap(char *why, size_t whylen)
{
	int r = need_flag_and_probe(why, whylen);

	for (size_t f = 0; f < 2 && r == KSFT_PASS; f++) {
		struct vm vm = { .kvm = -1, .vm = -1, .vcpu = -1, .gmem = -1 };
		struct kvm_userspace_memory_region2 region = { .slot = 0 };
		volatile uint8_t *file_map;
		struct pvclock clock;
		uint8_t data[DATA_LEN];
		int e;

		r = vm_with_written_code_at(&vm, kvm_map_files[f].flags, guest_code,
					    sizeof(guest_code), true, why, whylen);
		for (int i = 0; r == KSFT_PASS && i < DATA_LEN; i++)
			data[i] = (uint8_t)(0x60 + i * 5);
		if (r == KSFT_PASS && pwrite(vm.gmem, data, DATA_LEN, DATA_GPA) != DATA_LEN) {
			snprintf(why, whylen, "pwrite of the data: %s", strerror(errno));
			r = KSFT_FAIL;
		}
		if (r == KSFT_PASS && (e = gmem_set_kvmclock(&vm, CLOCK_GPA))) {
			snprintf(why, whylen, "KVM_SET_MSRS(MSR_KVM_SYSTEM_TIME_NEW): %s", strerror(-e));
			r = KSFT_FAIL;
		}
		if (r == KSFT_PASS && (!expect_round(&vm, 0x60, 5, STATUS_MATCH, DATA_GPA + DATA_LEN, 1,
						     why, whylen) || !read_clock(&vm, &clock))) {
			if (r == KSFT_PASS && !why[0])
				snprintf(why, whylen, "%s: kvmclock not written into the file",
					 kvm_map_files[f].name);
			r = KSFT_FAIL;
		}
		/* The guest, copied to the other memory but for its clock page. */
		if (r == KSFT_PASS) {
			memcpy(vm.other, (const void *)vm.mem, MEM_SIZE);
			memset((uint8_t *)vm.other + CLOCK_GPA, 0, page);
			region.flags = KVM_MEM_GUEST_MEMFD;
			region.guest_memfd = vm.gmem;
			region.userspace_addr = (uintptr_t)vm.other;
			if (ioctl(vm.vm, KVM_SET_USER_MEMORY_REGION2, &region)) {
				snprintf(why, whylen, "deleting the gmem-only memslot: %s", strerror(errno));
				r = KSFT_FAIL;
			}
		}
		if (r == KSFT_PASS) {
			region = (struct kvm_userspace_memory_region2){
				.slot = 0, .memory_size = MEM_SIZE,
				.userspace_addr = (uintptr_t)vm.other,
			};
			if (ioctl(vm.vm, KVM_SET_USER_MEMORY_REGION2, &region)) {
				snprintf(why, whylen, "a plain memslot at the same hva: %s", strerror(errno));
				r = KSFT_FAIL;
			}
		}
		/* The guest's memory is the other memory now. */
		file_map = vm.mem;
		vm.mem = vm.other;
		if (r == KSFT_PASS && (!clock_update(&vm, why, whylen) ||
				       !expect_round(&vm, 0x60, 5, STATUS_MATCH, DATA_GPA + DATA_LEN, 2,
						     why, whylen)))
			r = KSFT_FAIL;
		if (r == KSFT_PASS && !read_clock(&vm, &clock)) {
			snprintf(why, whylen, "%s: after the memslot swap at the same hva, kvmclock never reached the new memslot's memory (still written into the file?)",
				 kvm_map_files[f].name);
			r = KSFT_FAIL;
		}
		vm.mem = file_map;
		vm_teardown(&vm);
	}
	return r;
}

/*
 * A vCPU on a gmem-only memslot of a guest_memfd with @flags runs two rounds
 * of code and data that pwrite() put there, kvmclock enabled on a page of it
 * and updated between the rounds; @clock[i] gets kvmclock as the file holds
 * it after round i, @written[i] whether KVM wrote it. With @punch, the
 * memslot's userspace_addr is a decoy, not the file's mapping, and a hole is
 * punched under kvmclock between the rounds: only guest_memfd can tell KVM
 * that the page it caches is gone. With NO_DIRECT_MAP, every page the vCPU
 * and KVM used must stay out of the direct map. Returns a KSFT_* code.
 */
static int vcpu_rounds_with_kvmclock(unsigned long long flags, bool punch,
				     struct pvclock clock[2], bool written[2],
				     char *why, size_t whylen)
{
	struct vm vm = { .kvm = -1, .vm = -1, .vcpu = -1, .gmem = -1,
			 .mem_size = vm_size_for(flags) };
	uint8_t data[DATA_LEN];
	int r, e;

	r = vm_with_written_code_at(&vm, flags, guest_code, sizeof(guest_code), punch,
				    why, whylen);
	if (r != KSFT_PASS)
		goto out;
	for (int i = 0; i < DATA_LEN; i++)
		data[i] = (uint8_t)(0x60 + i * 5);
	if (pwrite(vm.gmem, data, DATA_LEN, DATA_GPA) != DATA_LEN) {
		snprintf(why, whylen, "pwrite of the data: %s", strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	e = gmem_set_kvmclock(&vm, CLOCK_GPA);
	if (e) {
		snprintf(why, whylen, "KVM_SET_MSRS(MSR_KVM_SYSTEM_TIME_NEW): %s", strerror(-e));
		r = KSFT_FAIL;
		goto out;
	}
	for (int i = 0; i < 2; i++) {
		/* kvmclock's page of a NO_DIRECT_MAP file has one kernel alias. */
		long aliases = i && punch && (flags & NDM) ? gmem_kvm_vmap_aliases() : -2;

		if (aliases != -2 && aliases < 1) {
			snprintf(why, whylen, "kvmclock on a NO_DIRECT_MAP page: %ld vmap() aliases of kvm.ko in /proc/vmallocinfo, want one",
				 aliases);
			r = KSFT_FAIL;
			goto out;
		}
		if (i && punch && fallocate(vm.gmem, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					    CLOCK_GPA, page)) {
			snprintf(why, whylen, "punching the kvmclock page: %s", strerror(errno));
			r = KSFT_FAIL;
			goto out;
		}
		/*
		 * The punched page is free once the punch returns: its alias
		 * must be gone with it, not wait for the next clock update.
		 */
		if (aliases != -2 && gmem_kvm_vmap_aliases() != aliases - 1) {
			snprintf(why, whylen, "after the punch, before any clock update: %ld vmap() aliases of kvm.ko, want %ld (the punched page's still mapped)",
				 gmem_kvm_vmap_aliases(), aliases - 1);
			r = KSFT_FAIL;
			goto out;
		}
		/* Time passes between the two clock updates. */
		if (i)
			usleep(20000);
		if (i && !clock_update(&vm, why, whylen)) {
			r = KSFT_FAIL;
			goto out;
		}
		if (!expect_round(&vm, 0x60, 5, STATUS_MATCH, DATA_GPA + DATA_LEN, i + 1,
				  why, whylen)) {
			r = KSFT_FAIL;
			goto out;
		}
		written[i] = read_clock(&vm, &clock[i]);
	}
	if ((flags & NDM) && (!all_absent(vm.gmem, CODE_GPA, PARAM_GPA + page, NULL, why, whylen) ||
			      !all_absent(vm.gmem, CLOCK_GPA, CLOCK_GPA + page, NULL, why, whylen)))
		r = KSFT_FAIL;
out:
	vm_teardown(&vm);
	return r;
}

/*
 * A vCPU runs on memory that only pwrite() filled, NO_DIRECT_MAP and, the
 * control, plain guest_memfd; the pages stay out of the direct map. KVM
 * writes kvmclock placed there, through its pfn cache, and updates it.
 */
static int vcpu_runs_on_the_memory(char *why, size_t whylen)
{
	int r = need_flag_and_probe(why, whylen);

	for (size_t f = 0; f < NR_KVM_MAP_FILES && r == KSFT_PASS; f++) {
		struct pvclock clock[2];
		bool written[2] = { false, false };

		r = vcpu_rounds_with_kvmclock(kvm_map_files[f].flags, false, clock, written, why, whylen);
		if (r != KSFT_PASS)
			break;
		if (!written[0] || !written[1]) {
			snprintf(why, whylen, "%s: KVM did not write kvmclock (after round %d)",
				 kvm_map_files[f].name, written[0] ? 2 : 1);
			r = KSFT_FAIL;
		} else if (clock[1].system_time <= clock[0].system_time) {
			snprintf(why, whylen, "%s: kvmclock did not advance: system_time %llu, then %llu 20 ms later",
				 kvm_map_files[f].name, (unsigned long long)clock[0].system_time,
				 (unsigned long long)clock[1].system_time);
			r = KSFT_FAIL;
		}
	}
	return r;
}

/*
 * A hole punched under kvmclock, with the memslot's userspace_addr a decoy
 * (no mmu_notifier event reaches KVM's cache): guest_memfd itself must drop
 * the page from KVM's pfn cache, so the next clock update goes to the new
 * page, not to the freed one.
 */
static int punch_under_kvmclock(char *why, size_t whylen)
{
	int r = need_flag_and_probe(why, whylen);

	for (size_t f = 0; f < NR_KVM_MAP_FILES && r == KSFT_PASS; f++) {
		struct pvclock clock[2];
		bool written[2] = { false, false };

		r = vcpu_rounds_with_kvmclock(kvm_map_files[f].flags, true, clock, written, why, whylen);
		if (r != KSFT_PASS)
			break;
		if (!written[0]) {
			snprintf(why, whylen, "%s: KVM did not write kvmclock through guest_memfd (userspace_addr is a decoy)",
				 kvm_map_files[f].name);
			r = KSFT_FAIL;
		} else if (!written[1]) {
			snprintf(why, whylen, "%s: after the hole punch, kvmclock in the file stays zero: KVM kept writing the freed page",
				 kvm_map_files[f].name);
			r = KSFT_FAIL;
		}
	}
	return r;
}

/*
 * Nested SVM: KVM reads a nested guest's VMCB with kvm_vcpu_map() (VMRUN,
 * VMLOAD, VMSAVE). The vCPU, in 64-bit mode with EFER.SVME, runs VMLOAD on
 * a VMCB that pwrite() put into guest memory, then HLT. KVM's VMLOAD
 * intercept copies the VMCB's KernelGsBase and LSTAR into the vCPU, where
 * KVM_GET_MSRS reads them. Had KVM failed to map the VMCB, the guest would
 * have got #GP and, without an IDT, a triple fault (KVM_EXIT_SHUTDOWN).
 */
#define LM_PML4_GPA		0x6000
#define LM_PDPT_GPA		0x7000
#define LM_PD_GPA		0x8000
#define VMCB_GPA		0x9000
#define VMCB_TR			0x490	/* struct vmcb_seg: selector, attrib, limit, base */
#define VMCB_LSTAR		0x608
#define VMCB_KERNEL_GS_BASE	0x620
#define MSR_LSTAR		0xc0000082
#define MSR_KERNEL_GS_BASE	0xc0000102
#define WANT_LSTAR		0xffffffff81234560ULL
#define WANT_KERNEL_GS_BASE	0xffff888012345000ULL

static const uint8_t vmload_code[] = {
	0x48, 0xc7, 0xc0, 0x00, 0x90, 0x00, 0x00,	/* mov  $VMCB_GPA, %rax */
	0x0f, 0x01, 0xda,				/* vmload               */
	0xf4,						/* hlt                  */
};

static bool pwrite_page(int fd, const void *buf, long gpa, char *why, size_t whylen)
{
	if (pwrite(fd, buf, page, gpa) == page)
		return true;
	snprintf(why, whylen, "pwrite at %#lx: %s", gpa, strerror(errno));
	return false;
}

/* vCPU 0 at CODE_GPA in 64-bit mode, identity-mapped 2 MiB, EFER.SVME, no IDT. */
static int vcpu_long_mode_with_svm(struct vm *vm, char *why, size_t whylen)
{
	struct kvm_segment code = { .limit = 0xffffffff, .selector = 8, .type = 11,
				    .present = 1, .s = 1, .l = 1, .g = 1 };
	struct kvm_segment data = { .limit = 0xffffffff, .selector = 16, .type = 3,
				    .present = 1, .s = 1, .db = 1, .g = 1 };
	uint64_t *t = calloc(1, page);
	struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + 256 * sizeof(c->entries[0]));
	struct kvm_sregs sregs;
	struct kvm_regs regs = { .rip = CODE_GPA, .rflags = 2 };
	bool svm = false;
	int r = KSFT_FAIL;

	if (!t || !c)
		goto out;
	c->nent = 256;
	if (ioctl(vm->kvm, KVM_GET_SUPPORTED_CPUID, c)) {
		snprintf(why, whylen, "KVM_GET_SUPPORTED_CPUID: %s", strerror(errno));
		goto out;
	}
	for (uint32_t i = 0; i < c->nent; i++)
		if (c->entries[i].function == 0x80000001)
			svm = c->entries[i].ecx & (1U << 2);
	if (!svm) {
		snprintf(why, whylen, "KVM offers no SVM to its guests (kvm_amd.nested=0?)");
		goto out;
	}
	if (ioctl(vm->vcpu, KVM_SET_CPUID2, c)) {
		snprintf(why, whylen, "KVM_SET_CPUID2: %s", strerror(errno));
		goto out;
	}
	t[0] = LM_PDPT_GPA | 3;
	if (!pwrite_page(vm->gmem, t, LM_PML4_GPA, why, whylen))
		goto out;
	t[0] = LM_PD_GPA | 3;
	if (!pwrite_page(vm->gmem, t, LM_PDPT_GPA, why, whylen))
		goto out;
	t[0] = 0x83;		/* 2 MiB page at 0, present, writable */
	if (!pwrite_page(vm->gmem, t, LM_PD_GPA, why, whylen))
		goto out;
	if (ioctl(vm->vcpu, KVM_GET_SREGS, &sregs)) {
		snprintf(why, whylen, "KVM_GET_SREGS: %s", strerror(errno));
		goto out;
	}
	sregs.cs = code;
	sregs.ds = sregs.es = sregs.ss = sregs.fs = sregs.gs = data;
	sregs.idt.base = 0;
	sregs.idt.limit = 0;
	sregs.cr0 = 0x80000031;		/* PG, NE, ET, PE */
	sregs.cr3 = LM_PML4_GPA;
	sregs.cr4 = 0x20;		/* PAE */
	sregs.efer = 0x1500;		/* SVME, LMA, LME */
	if (ioctl(vm->vcpu, KVM_SET_SREGS, &sregs)) {
		snprintf(why, whylen, "KVM_SET_SREGS (64-bit, EFER.SVME): %s", strerror(errno));
		goto out;
	}
	if (ioctl(vm->vcpu, KVM_SET_REGS, &regs)) {
		snprintf(why, whylen, "KVM_SET_REGS: %s", strerror(errno));
		goto out;
	}
	r = KSFT_PASS;
out:
	free(t);
	free(c);
	return r;
}

/*
 * VMLOAD of a VMCB in a guest_memfd with @flags; what the vCPU holds after.
 * Returns a KSFT_* code; @exit_reason is KVM_RUN's last exit.
 */
/*
 * The VMCB's page armed in the KVM_MEM_USERFAULT bitmap (a page not restored
 * yet): VMLOAD maps it with kvm_vcpu_map(), which must exit to the VMM with
 * the page's gpa (KVM_EXIT_MEMORY_FAULT, USERFAULT) and map nothing; with
 * the bit cleared, the caller's KVM_RUN re-executes VMLOAD.
 */
static int vmload_armed(struct vm *vm, char *why, size_t whylen)
{
	/* A bit per page of the largest memslot here (2 MiB folios: 4 MiB). */
	static unsigned long bitmap[2 * SZ_2M / 4096 / 64];
	struct kvm_userspace_memory_region2 region = {
		.slot = 0,
		.flags = KVM_MEM_GUEST_MEMFD | KVM_MEM_USERFAULT,
		.memory_size = vm_mem_size(vm),
		.userspace_addr = (uintptr_t)vm->mem,
		.guest_memfd = vm->gmem,
		.userfault_bitmap = (uintptr_t)bitmap,
	};
	int e;

	bitmap[0] = 1UL << (VMCB_GPA / page);
	if (ioctl(vm->vm, KVM_SET_USER_MEMORY_REGION2, &region)) {
		snprintf(why, whylen, "setting KVM_MEM_USERFAULT: %s", strerror(errno));
		return KSFT_FAIL;
	}
	arm_timeout();
	e = ioctl(vm->vcpu, KVM_RUN, 0) ? errno : 0;
	alarm(0);
	if (e != EFAULT || vm->run->exit_reason != KVM_EXIT_MEMORY_FAULT ||
	    !(vm->run->memory_fault.flags & KVM_MEMORY_EXIT_FLAG_USERFAULT) ||
	    vm->run->memory_fault.gpa != VMCB_GPA) {
		snprintf(why, whylen, "VMLOAD of an armed VMCB page: KVM_RUN %s, exit %s, gpa %#llx, want EFAULT and a userfault exit for %#x",
			 e ? strerror(e) : "returned 0", exit_name(vm->run->exit_reason),
			 (unsigned long long)vm->run->memory_fault.gpa, VMCB_GPA);
		return KSFT_FAIL;
	}
	__atomic_store_n(&bitmap[0], 0, __ATOMIC_RELEASE);
	return KSFT_PASS;
}

static int vmload_from(unsigned long long flags, bool armed, uint32_t *exit_reason,
		       uint64_t *lstar, uint64_t *kernel_gs_base, char *why, size_t whylen)
{
	struct vm vm = { .kvm = -1, .vm = -1, .vcpu = -1, .gmem = -1,
			 .mem_size = vm_size_for(flags) };
	uint8_t *vmcb = calloc(1, page);
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry entries[2];
	} msrs = { .hdr.nmsrs = 2,
		   .entries = { { .index = MSR_LSTAR }, { .index = MSR_KERNEL_GS_BASE } } };
	uint16_t tr_attrib = 0x8b, ldtr_attrib = 0x82;	/* busy 64-bit TSS; LDT */
	uint32_t seg_limit = 0xffff;
	uint64_t v;
	int r;

	r = vm_with_written_code(&vm, flags, vmload_code, sizeof(vmload_code), why, whylen);
	if (r == KSFT_PASS && !vmcb)
		r = KSFT_FAIL;
	if (r == KSFT_PASS)
		r = vcpu_long_mode_with_svm(&vm, why, whylen);
	if (r != KSFT_PASS)
		goto out;
	/* TR and LDTR as a vCPU has them at reset: VMLOAD loads them too. */
	memcpy(vmcb + VMCB_TR + 2, &tr_attrib, 2);
	memcpy(vmcb + VMCB_TR + 4, &seg_limit, 4);
	memcpy(vmcb + VMCB_TR - 0x20 + 2, &ldtr_attrib, 2);	/* ldtr, 0x470 */
	memcpy(vmcb + VMCB_TR - 0x20 + 4, &seg_limit, 4);
	v = WANT_LSTAR;
	memcpy(vmcb + VMCB_LSTAR, &v, 8);
	v = WANT_KERNEL_GS_BASE;
	memcpy(vmcb + VMCB_KERNEL_GS_BASE, &v, 8);
	if (!pwrite_page(vm.gmem, vmcb, VMCB_GPA, why, whylen)) {
		r = KSFT_FAIL;
		goto out;
	}
	if (armed) {
		r = vmload_armed(&vm, why, whylen);
		if (r != KSFT_PASS)
			goto out;
	}
	arm_timeout();
	if (ioctl(vm.vcpu, KVM_RUN, 0)) {
		snprintf(why, whylen, "KVM_RUN: %s", strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	alarm(0);
	*exit_reason = vm.run->exit_reason;
	if (ioctl(vm.vcpu, KVM_GET_MSRS, &msrs) != 2) {
		snprintf(why, whylen, "KVM_GET_MSRS: %s", strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	*lstar = msrs.entries[0].data;
	*kernel_gs_base = msrs.entries[1].data;
	if ((flags & NDM) && !all_absent(vm.gmem, VMCB_GPA, VMCB_GPA + page, NULL, why, whylen))
		r = KSFT_FAIL;
out:
	free(vmcb);
	vm_teardown(&vm);
	return r;
}

/*
 * A nested guest's VMCB on NO_DIRECT_MAP memory, and on a plain guest_memfd
 * (the control): KVM maps it and VMLOAD loads it. @armed: the VMCB's page
 * is not restored yet (KVM Userfault) when VMLOAD first runs.
 */
static int nested_vmcb(bool armed, char *why, size_t whylen)
{
	int r = need_flag_and_probe(why, whylen);
	FILE *param = fopen("/sys/module/kvm_amd/parameters/vls", "r");
	char vls = 'N';

	/* With virtual VMLOAD, the CPU loads the VMCB itself: KVM maps nothing. */
	if (param) {
		if (fscanf(param, " %c", &vls) != 1)
			vls = '?';
		fclose(param);
	}
	if (r == KSFT_PASS && vls != 'N' && vls != '0') {
		snprintf(why, whylen, "kvm_amd.vls=%c: VMLOAD is not intercepted, so it tests nothing of KVM's",
			 vls);
		r = KSFT_FAIL;
	}
	for (size_t f = 0; f < NR_KVM_MAP_FILES && r == KSFT_PASS; f++) {
		uint32_t exit_reason = 0;
		uint64_t lstar = 0, gs = 0;

		r = vmload_from(kvm_map_files[f].flags, armed, &exit_reason, &lstar, &gs, why, whylen);
		if (r != KSFT_PASS)
			break;
		if (exit_reason != KVM_EXIT_HLT) {
			snprintf(why, whylen, "%s: VMLOAD of the VMCB ended in %s, not HLT%s",
				 kvm_map_files[f].name, exit_name(exit_reason),
				 exit_reason == KVM_EXIT_SHUTDOWN ?
				 " (#GP: KVM could not map the VMCB)" : "");
			r = KSFT_FAIL;
		} else if (lstar != WANT_LSTAR || gs != WANT_KERNEL_GS_BASE) {
			snprintf(why, whylen, "%s: after VMLOAD, LSTAR %#llx and KernelGsBase %#llx, want %#llx and %#llx",
				 kvm_map_files[f].name, (unsigned long long)lstar, (unsigned long long)gs,
				 WANT_LSTAR, WANT_KERNEL_GS_BASE);
			r = KSFT_FAIL;
		}
	}
	return r;
}

static int nested_vmcb_on_the_memory(char *why, size_t whylen)
{
	return nested_vmcb(false, why, whylen);
}

static int nested_vmcb_not_restored(char *why, size_t whylen)
{
	return nested_vmcb(true, why, whylen);
}

/*
 * A store to a GPA without a memslot (0x20000): KVM emulates it, reading the
 * instruction from guest memory through the VMM's mapping, never the direct
 * map. Hand-assembled, real mode.
 */
static const uint8_t mmio_store_code[] = {
	0xb8, 0x00, 0x20,			/* mov  $0x2000, %ax              */
	0x8e, 0xc0,				/* mov  %ax, %es                  */
	0x26, 0xc6, 0x06, 0x00, 0x00, 0x5a,	/* movb $0x5a, %es:0x0 (GPA 0x20000) */
	0xf4,					/* hlt                            */
};

/*
 * KVM's instruction emulator works on NO_DIRECT_MAP memory: the guest's MMIO
 * store, whose code only pwrite() put there, exits to the VMM with the
 * address and the byte.
 */
static int emulation_reads_the_memory(char *why, size_t whylen)
{
	struct vm vm = { .kvm = -1, .vm = -1, .vcpu = -1, .gmem = -1 };
	int r;

	r = need_flag_and_probe(why, whylen);
	if (r == KSFT_PASS)
		r = vm_with_written_code(&vm, SHARED | NDM | GUEST_MEMFD_FLAG_WRITE, mmio_store_code,
					 sizeof(mmio_store_code), why, whylen);
	if (r != KSFT_PASS)
		goto out;
	if (ioctl(vm.vcpu, KVM_RUN, 0)) {
		snprintf(why, whylen, "KVM_RUN: %s", strerror(errno));
		r = KSFT_FAIL;
	} else if (vm.run->exit_reason != KVM_EXIT_MMIO || vm.run->mmio.phys_addr != 0x20000 ||
		   vm.run->mmio.len != 1 || !vm.run->mmio.is_write || vm.run->mmio.data[0] != 0x5a) {
		snprintf(why, whylen, "exit %s, want an MMIO write of 0x5a to 0x20000 (got %#llx, len %u, %s, %#x)",
			 exit_name(vm.run->exit_reason), (unsigned long long)vm.run->mmio.phys_addr,
			 vm.run->mmio.len, vm.run->mmio.is_write ? "write" : "read", vm.run->mmio.data[0]);
		r = KSFT_FAIL;
	} else if (!all_absent(vm.gmem, CODE_GPA, CODE_GPA + page, NULL, why, whylen)) {
		r = KSFT_FAIL;
	}
out:
	vm_teardown(&vm);
	return r;
}

/* Is the page at @addr mapped in this process's page table? -1: cannot tell. */
static int pte_present(volatile void *addr)
{
	uint64_t entry;
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = pread(fd, &entry, sizeof(entry), ((uintptr_t)addr / page) * sizeof(entry));
	close(fd);
	return n == sizeof(entry) ? !!(entry & (1ULL << 63)) : -1;
}

/* How many of the @n pages from @map are mapped; -1 if pagemap cannot tell. */
static long ptes_present(volatile uint8_t *map, long n)
{
	long mapped = 0;

	for (long i = 0; i < n; i++) {
		int p = pte_present(map + i * page);

		if (p < 0)
			return -1;
		mapped += p;
	}
	return mapped;
}

#define NDM_FOLIOS	GMEM_DEBUGFS "/kvm/gmem_ndm_folios"
#define SMALL_FILES	32
#define AROUND		16	/* what a host fault maps around itself */
#define BIG_PAGES	64

/*
 * A host fault maps the pages it allocates around itself with the page
 * table of the fault, so it stops where that page table ends: the file is
 * mapped so that page 1 sits 2 pages before a 2 MiB boundary; after a first
 * touch of page 0 (its page alone), a touch of page 1 continues the run and
 * must map pages 1-2 only, take out only those, and leave the rest to later
 * faults (which map them). Crossing the boundary would write PTEs past the
 * end of the page table.
 */
#define BEFORE_PMD	2

static int fault_around_stays_in_its_page_table(char *why, size_t whylen)
{
	size_t len = AROUND * page, pmd = 2UL << 20;
	volatile uint8_t *map;
	uint8_t *area = MAP_FAILED;
	long base, got, mapped;
	int r;
	int vm = -1, fd = -1;

	r = need_flag_and_probe(why, whylen);
	if (r != KSFT_PASS)
		return r;
	vm = ioctl(kvm_fd, KVM_CREATE_VM, 0);
	fd = vm < 0 ? -1 : gmem_create(vm, len, SHARED | NDM);
	base = gmem_counter(NDM_FOLIOS);
	/* Room for a 2 MiB-aligned boundary with pages on both sides. */
	area = mmap(NULL, 2 * pmd, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (vm < 0 || fd < 0 || base < 0 || area == MAP_FAILED) {
		snprintf(why, whylen, "VM, guest_memfd, %s or address space: %s", NDM_FOLIOS,
			 strerror(fd < 0 && vm >= 0 ? -fd : errno));
		r = KSFT_FAIL;
		goto out;
	}
	/* File page 1 is BEFORE_PMD pages before the boundary. */
	map = (uint8_t *)(((uintptr_t)area + pmd) & ~(pmd - 1)) - (BEFORE_PMD + 1) * page;
	if (mmap((void *)map, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
		snprintf(why, whylen, "mmap at %p: %s", (void *)map, strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	/* Page 0 alone (a first touch), then page 1 continues the run. */
	map[0] = 1;
	map[page] = 1;
	got = gmem_counter(NDM_FOLIOS) - base - 1;
	mapped = ptes_present(map, AROUND) - 1;
	if (got != BEFORE_PMD || mapped != BEFORE_PMD) {
		snprintf(why, whylen, "a touch %d pages before a page table's end took %ld pages and mapped %ld, want %d and %d",
			 BEFORE_PMD, got, mapped, BEFORE_PMD, BEFORE_PMD);
		r = KSFT_FAIL;
		goto out;
	}
	/* The rest fault in on their own, in the next page table. */
	map[(BEFORE_PMD + 1) * page] = 1;
	mapped = ptes_present(map, AROUND);
	if (mapped != AROUND) {
		snprintf(why, whylen, "after a touch past the boundary %ld of %d pages are mapped, want all",
			 mapped, AROUND);
		r = KSFT_FAIL;
	}
out:
	if (area != MAP_FAILED)
		munmap(area, 2 * pmd);
	if (fd >= 0)
		close(fd);
	if (vm >= 0)
		close(vm);
	return r;
}

/* The VM's page faults taken so far (debugfs kvm/<pid>-<vm fd>/pf_taken). */
static long vm_pf_taken(int vm_fd)
{
	char path[128];

	snprintf(path, sizeof(path), GMEM_DEBUGFS "/kvm/%d-%d/pf_taken", getpid(), vm_fd);
	return gmem_counter(path);
}

/*
 * A guest reads pages 4-15 of its NO_DIRECT_MAP memslot, holes until then:
 * with @batch "64" (the default) its fault on page 4 takes the 12 pages of
 * that 16-page window out of the direct map under one TLB flush and maps
 * them all, so the reads of pages 5-15 are no faults of their own; with
 * "0" (upstream's scheme) each page is a fault and a flush. The code and
 * parameter pages are written with pwrite() and mapped by a first round,
 * so nothing else allocates in the window.
 */
static int vcpu_window_round(const char *batch, long *flushes, long *folios, long *faults,
			     char *why, size_t whylen)
{
	struct vm vm = { .kvm = -1, .vm = -1, .vcpu = -1, .gmem = -1 };
	uint8_t *zeroes = calloc(1, page);
	long f0, n0, p0;
	int r, s;

	if (!zeroes || !gmem_write_file(NDM_BATCH_PARAM, batch)) {
		snprintf(why, whylen, "cannot write %s", NDM_BATCH_PARAM);
		free(zeroes);
		return KSFT_FAIL;
	}
	r = vm_with_written_code(&vm, SHARED | NDM | GUEST_MEMFD_FLAG_WRITE, guest_code,
				 sizeof(guest_code), why, whylen);
	if (r == KSFT_PASS && pwrite(vm.gmem, zeroes, page, PARAM_GPA) != page) {
		snprintf(why, whylen, "pwrite of the parameter page: %s", strerror(errno));
		r = KSFT_FAIL;
	}
	/* The first round maps the code and parameter pages: 16 zero bytes. */
	if (r == KSFT_PASS) {
		s = guest_round_at(&vm, PARAM_GPA + 0x100, 16, 0, 0, NULL, why, whylen);
		r = s == STATUS_MATCH ? KSFT_PASS : KSFT_FAIL;
	}
	if (r == KSFT_PASS) {
		f0 = gmem_counter(NDM_FLUSHES);
		n0 = gmem_counter(NDM_FOLIOS);
		p0 = vm_pf_taken(vm.vm);
		s = guest_round_at(&vm, 4 * page, 12 * page, 0, 0, NULL, why, whylen);
		if (s != STATUS_MATCH || f0 < 0 || n0 < 0 || p0 < 0) {
			if (s >= 0)
				snprintf(why, whylen, "gmem_ndm_batch=%s: round %d, counters %ld %ld %ld",
					 batch, s, f0, n0, p0);
			r = KSFT_FAIL;
		} else {
			*flushes = gmem_counter(NDM_FLUSHES) - f0;
			*folios = gmem_counter(NDM_FOLIOS) - n0;
			*faults = vm_pf_taken(vm.vm) - p0;
		}
	}
	gmem_write_file(NDM_BATCH_PARAM, "64");
	vm_teardown(&vm);
	free(zeroes);
	return r;
}

static int vcpu_fault_takes_its_window(char *why, size_t whylen)
{
	long flushes[2], folios[2], faults[2];
	int r = need_flag_and_probe(why, whylen);

	if (r == KSFT_PASS)
		r = vcpu_window_round("64", &flushes[0], &folios[0], &faults[0], why, whylen);
	if (r == KSFT_PASS)
		r = vcpu_window_round("0", &flushes[1], &folios[1], &faults[1], why, whylen);
	if (r != KSFT_PASS)
		return r;
	if (flushes[0] != 1 || folios[0] != 12 || faults[0] != 1) {
		snprintf(why, whylen, "a vCPU reading 12 holes: %ld flushes, %ld pages, %ld faults; want 1, 12, 1",
			 flushes[0], folios[0], faults[0]);
		return KSFT_FAIL;
	}
	if (flushes[1] != 12 || folios[1] != 12 || faults[1] != 12) {
		snprintf(why, whylen, "the same with gmem_ndm_batch=0: %ld flushes, %ld pages, %ld faults; want 12 each",
			 flushes[1], folios[1], faults[1]);
		return KSFT_FAIL;
	}
	snprintf(why, whylen, "12 pages: 1 flush and 1 fault (12 and 12 with gmem_ndm_batch=0)");
	return KSFT_PASS;
}

/* Pages [@first, @first + @n) of the VM's memory private (1) or shared (0). */
static bool set_private(struct vm *vm, int first, int n, bool private, char *why, size_t whylen)
{
	struct kvm_memory_attributes attrs = {
		.address = (uint64_t)first * page,
		.size = (uint64_t)n * page,
		.attributes = private ? KVM_MEMORY_ATTRIBUTE_PRIVATE : 0,
	};

	if (!ioctl(vm->vm, KVM_SET_MEMORY_ATTRIBUTES, &attrs))
		return true;
	snprintf(why, whylen, "KVM_SET_MEMORY_ATTRIBUTES(pages %d-%d): %s", first, first + n - 1,
		 strerror(errno));
	return false;
}

/*
 * The vCPU window in a SW_PROTECTED VM (issue 39, 6): private memory on a
 * NO_DIRECT_MAP guest_memfd (not mappable, all private), shared memory from
 * the memslot's userspace_addr (anonymous memory with the guest's code).
 * Pages 4-15 are private but page 8. A window opens where a fault continues
 * a run, so page 4 and page 9 are touched alone first. Then a round over
 * pages 5-7: the fault on page 5 takes pages 5-7 only (the window ends where
 * the kind changes: a shared page has no business in the file) and maps
 * pages 6-7 as private, so the round is one fault. A round over pages
 * 10-15: one window of 6 private pages, one fault. Before the fix the window
 * faulted the neighbours as shared, each failing the private/shared check
 * (and writing a memory-fault record for a gfn the guest never touched), so
 * every page was a fault of its own.
 */
static int vcpu_window_private(char *why, size_t whylen)
{
	struct vm vm = { .kvm = -1, .vm = -1, .vcpu = -1, .gmem = -1 };
	long p0, in_file[2], faults[2];
	uint8_t *shared = MAP_FAILED;
	int r = need_flag_and_probe(why, whylen), s;
	struct kvm_userspace_memory_region2 region = {
		.flags = KVM_MEM_GUEST_MEMFD,
		.memory_size = MEM_SIZE,
	};

	if (r != KSFT_PASS)
		return r;
	r = KSFT_FAIL;
	vm.kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	vm.vm = vm.kvm < 0 ? -1 : ioctl(vm.kvm, KVM_CREATE_VM, KVM_X86_SW_PROTECTED_VM);
	if (vm.vm < 0) {
		snprintf(why, whylen, "KVM_CREATE_VM(SW_PROTECTED): %s", strerror(errno));
		goto out;
	}
	vm.gmem = gmem_create(vm.vm, MEM_SIZE, NDM);
	if (vm.gmem < 0) {
		snprintf(why, whylen, "a NO_DIRECT_MAP guest_memfd of a SW_PROTECTED VM: %s",
			 strerror(-vm.gmem));
		goto out;
	}
	shared = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		goto out;
	memcpy(shared + CODE_GPA, guest_code, sizeof(guest_code));
	vm.mem = shared;	/* the rounds' parameters: shared memory */
	region.userspace_addr = (uintptr_t)shared;
	region.guest_memfd = vm.gmem;
	if (ioctl(vm.vm, KVM_SET_USER_MEMORY_REGION2, &region)) {
		snprintf(why, whylen, "KVM_SET_USER_MEMORY_REGION2: %s", strerror(errno));
		goto out;
	}
	if (!set_private(&vm, 4, 12, true, why, whylen) ||
	    !set_private(&vm, 8, 1, false, why, whylen))
		goto out;
	if (vm_create_vcpu(&vm, why, whylen) != KSFT_PASS ||
	    vcpu_real_mode_at_code(vm.vcpu, why, whylen) != KSFT_PASS)
		goto out;
	/* The code and parameter pages (shared) mapped first. */
	s = guest_round_at(&vm, PARAM_GPA + 0x100, 16, 0, 0, NULL, why, whylen);
	if (s != STATUS_MATCH)
		goto bad_round;
	for (int i = 0; i < 2; i++) {
		int first = i ? 10 : 5, n = i ? 6 : 3;

		/* The page before the round, alone: the round continues a run. */
		s = guest_round_at(&vm, (first - 1) * page, 16, 0, 0, NULL, why, whylen);
		if (s != STATUS_MATCH)
			goto bad_round;
		p0 = vm_pf_taken(vm.vm);
		s = guest_round_at(&vm, first * page, n * page, 0, 0, NULL, why, whylen);
		if (s != STATUS_MATCH)
			goto bad_round;
		faults[i] = vm_pf_taken(vm.vm) - p0;
		in_file[i] = gmem_cached_pages(vm.gmem, 0, MEM_SIZE);
		if (p0 < 0) {
			snprintf(why, whylen, "no pf_taken counter in debugfs");
			goto out;
		}
	}
	if (in_file[0] != 4 || faults[0] != 1 || in_file[1] != 11 || faults[1] != 1) {
		snprintf(why, whylen, "private pages 5-7 after 4 (8 shared): %ld pages in the file, %ld faults, want 4 and 1; then 10-15 after 9: %ld in the file, %ld faults, want 11 and 1",
			 in_file[0], faults[0], in_file[1], faults[1]);
		goto out;
	}
	snprintf(why, whylen, "3 + 6 private pages, one fault each run");
	r = KSFT_PASS;
	goto out;
bad_round:
	if (s >= 0)
		snprintf(why, whylen, "the guest's round reported %d", s);
out:
	vm.mem = NULL;
	if (shared != MAP_FAILED)
		munmap(shared, MEM_SIZE);
	vm_teardown(&vm);
	return r;
}

/*
 * What each operation allocates, and all of it comes back when the file is
 * closed: a touch of a one-page file takes one page out of the direct map.
 * In a bigger file, a first touch (page 0) takes its page alone; a touch
 * that continues the run (page 1) takes the rest of its 16-page window,
 * which it maps (counted in the page table). A punched range stays empty
 * until something touches it: a touch of its first page takes that page
 * alone, although the page before it is there. A fallocate() takes its
 * range.
 */
static int nothing_allocated_ahead(char *why, size_t whylen)
{
	int vm, fds[SMALL_FILES], big = -1, n = 0;
	volatile uint8_t *maps[SMALL_FILES], *map = MAP_FAILED;
	long base, got, mapped;
	int r;

	r = need_flag_and_probe(why, whylen);
	if (r != KSFT_PASS)
		return r;
	vm = ioctl(kvm_fd, KVM_CREATE_VM, 0);
	if (vm < 0) {
		snprintf(why, whylen, "KVM_CREATE_VM: %s", strerror(errno));
		return KSFT_FAIL;
	}
	base = gmem_counter(NDM_FOLIOS);
	if (base < 0) {
		snprintf(why, whylen, "no %s", NDM_FOLIOS);
		r = KSFT_FAIL;
		goto out;
	}

	for (n = 0; n < SMALL_FILES; n++) {
		fds[n] = gmem_create(vm, page, SHARED | NDM);
		if (fds[n] < 0) {
			snprintf(why, whylen, "guest_memfd %d: %s", n, strerror(-fds[n]));
			r = KSFT_FAIL;
			goto out;
		}
		maps[n] = gmem_map(fds[n], page);
		if (maps[n] == MAP_FAILED) {
			snprintf(why, whylen, "mmap %d: %s", n, strerror(errno));
			close(fds[n]);
			r = KSFT_FAIL;
			goto out;
		}
		maps[n][0] = 1;
	}
	got = gmem_counter(NDM_FOLIOS) - base;
	if (got != SMALL_FILES) {
		snprintf(why, whylen, "%d one-page files touched once took %ld pages out of the direct map, want %d",
			 SMALL_FILES, got, SMALL_FILES);
		r = KSFT_FAIL;
		goto out;
	}

	big = gmem_create(vm, BIG_PAGES * page, SHARED | NDM);
	/*
	 * At the start of a page table: the window stops at the end of the
	 * fault's page table, so wherever mmap() put the file the count would
	 * depend on the address (seen: 9 pages, mapped 503 PTEs into a table).
	 */
	map = big < 0 ? MAP_FAILED : mmap(NULL, BIG_PAGES * page + (2UL << 20), PROT_NONE,
					  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map != MAP_FAILED)
		map = mmap((void *)(((uintptr_t)map + (2UL << 20) - 1) & ~((2UL << 20) - 1)),
			   BIG_PAGES * page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
			   big, 0);
	if (map == MAP_FAILED) {
		snprintf(why, whylen, "the %d-page file: %s", BIG_PAGES,
			 strerror(big < 0 ? -big : errno));
		r = KSFT_FAIL;
		goto out;
	}
	map[0] = 1;
	got = gmem_counter(NDM_FOLIOS) - base - SMALL_FILES;
	mapped = ptes_present(map, BIG_PAGES);
	if (got != 1 || mapped != 1) {
		snprintf(why, whylen, "a first touch (page 0 of %d) took %ld pages and mapped %ld, want 1 and 1",
			 BIG_PAGES, got, mapped);
		r = KSFT_FAIL;
		goto out;
	}
	map[page] = 1;
	got = gmem_counter(NDM_FOLIOS) - base - SMALL_FILES;
	mapped = ptes_present(map, BIG_PAGES);
	if (got != AROUND || mapped != AROUND) {
		snprintf(why, whylen, "a touch of page 1 after page 0 took %ld pages in all and mapped %ld, want %d and %d",
			 got, mapped, AROUND, AROUND);
		r = KSFT_FAIL;
		goto out;
	}
	if (fallocate(big, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, 4 * page, 8 * page)) {
		snprintf(why, whylen, "punch hole: %s", strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	map[4 * page] = 1;
	got = gmem_cached_pages(big, 4 * page, 8 * page);
	if (got != 1) {
		snprintf(why, whylen, "a touch of page 4, first of the punched pages 4-11, left %ld of them in the file, want 1",
			 got);
		r = KSFT_FAIL;
		goto out;
	}
	if (fallocate(big, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, 4 * page, page)) {
		snprintf(why, whylen, "punch hole: %s", strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	if (fallocate(big, FALLOC_FL_KEEP_SIZE, 20 * page, 10 * page)) {
		snprintf(why, whylen, "fallocate: %s", strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	got = gmem_counter(NDM_FOLIOS) - base - SMALL_FILES - (AROUND - 8);
	if (got != 10) {
		snprintf(why, whylen, "fallocate() of 10 pages took %ld out of the direct map", got);
		r = KSFT_FAIL;
	}
out:
	if (map != MAP_FAILED)
		munmap((void *)map, BIG_PAGES * page);
	if (big >= 0)
		close(big);
	while (n--) {
		munmap((void *)maps[n], page);
		close(fds[n]);
	}
	close(vm);
	got = gmem_settle_counter(NDM_FOLIOS, base);
	if (r == KSFT_PASS && got != base) {
		snprintf(why, whylen, "after every file closed, %ld pages are still out of the direct map",
			 got - base);
		r = KSFT_FAIL;
	}
	return r;
}

/* The node of the page at @p (mapped), or -1. */
static int page_node(volatile void *p)
{
	void *pages[1] = { (void *)p };
	int node = -1;

	if (syscall(__NR_move_pages, 0, 1, pages, NULL, &node, 0))
		return -1;
	return node;
}

/*
 * Every page lands where the policy in force at its fault says: a file is
 * touched once (page 0) on this CPU's node, then bound with mbind() to the
 * other node; that first touch took its page alone (nothing ahead of a run
 * that has not started), and every other page lands on the other node,
 * those a later fault's window takes too (Firecracker's numa_allocation
 * case binds before it touches; this binds after).
 */
static int pages_follow_the_policy_at_their_fault(char *why, size_t whylen)
{
	unsigned long mask[2] = { 0, 0 };
	bool before[BIG_PAGES];
	unsigned int cpu, node;
	struct gfile g;
	int r, other, later = 0;

	r = need_flag_and_probe(why, whylen);
	if (r != KSFT_PASS)
		return r;
	if (access("/sys/devices/system/node/node1", F_OK)) {
		snprintf(why, whylen, "one NUMA node: boot the guest with NUMA=2");
		return KSFT_SKIP;
	}
	if (syscall(__NR_getcpu, &cpu, &node, NULL)) {
		snprintf(why, whylen, "getcpu: %s", strerror(errno));
		return KSFT_FAIL;
	}
	pin_cpu(cpu);
	other = !node;
	r = gfile_open(&g, kvm_fd, 0, SHARED | NDM, BIG_PAGES * page, why, whylen);
	if (r != KSFT_PASS)
		goto out;

	g.map[0] = 1;
	mask[0] = 1UL << other;
	if (syscall(__NR_mbind, g.map, g.size, MPOL_BIND, mask, 65, 0)) {
		snprintf(why, whylen, "mbind(MPOL_BIND, node %d): %s", other, strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	for (int i = 0; i < BIG_PAGES; i++)
		before[i] = pte_present(g.map + i * page) == 1;
	gmem_fill(g.map, 0, g.size, 0x17);
	for (int i = 0; i < BIG_PAGES; i++) {
		int n = page_node(g.map + i * page);

		if (before[i])
			continue;
		later++;
		if (n != other) {
			snprintf(why, whylen, "page %d, first touched after mbind() to node %d, is on node %d",
				 i, other, n);
			r = KSFT_FAIL;
			goto out;
		}
	}
	if (later != BIG_PAGES - 1) {
		snprintf(why, whylen, "a first touch of page 0 took %d pages before the mbind(), want 1",
			 BIG_PAGES - later);
		r = KSFT_FAIL;
	}
out:
	gfile_close(&g);
	sched_setaffinity(0, sizeof(all_cpus), &all_cpus);
	return r;
}

#define TEST_CGROUP	GMEM_CGROUP "/gmem_ndm_test"

/*
 * Every page a NO_DIRECT_MAP guest_memfd takes is charged to the memory
 * cgroup of the task that faulted it: in a cgroup of its own, the pages out
 * of the direct map are no more than the file pages the cgroup is charged.
 */
static int pages_are_charged_to_the_faulting_cgroup(char *why, size_t whylen)
{
	long base, charged_before, charged, taken;
	struct gfile g[4];
	int r, n = 0;

	r = need_flag_and_probe(why, whylen);
	if (r != KSFT_PASS)
		return r;
	if (!gmem_cgroup_enter_new(TEST_CGROUP)) {
		snprintf(why, whylen, "cannot set up a memory cgroup at %s: %s", TEST_CGROUP,
			 strerror(errno));
		return KSFT_FAIL;
	}
	base = gmem_counter(NDM_FOLIOS);
	charged_before = gmem_cgroup_stat(TEST_CGROUP, "file");
	for (n = 0; n < 4 && r == KSFT_PASS; n++) {
		r = gfile_open(&g[n], kvm_fd, 0, SHARED | NDM, 4 * page, why, whylen);
		if (r == KSFT_PASS)
			g[n].map[0] = 1;
	}
	taken = gmem_counter(NDM_FOLIOS) - base;
	/*
	 * memory.stat is flushed from per-CPU counters only past a threshold
	 * of updates, or every 2 s: give the flush up to 10 s.
	 */
	for (int i = 0; i < 10; i++) {
		charged = gmem_cgroup_stat(TEST_CGROUP, "file") - charged_before;
		if (taken * page <= charged)
			break;
		sleep(1);
	}
	if (r == KSFT_PASS && (charged_before < 0 || taken < 4 || taken * page > charged)) {
		snprintf(why, whylen, "%ld pages out of the direct map, %ld bytes of file memory charged to the cgroup that faulted them",
			 taken, charged);
		r = KSFT_FAIL;
	}
	while (n--)
		gfile_close(&g[n]);
	gmem_cgroup_leave(TEST_CGROUP);
	return r;
}

struct stalled_write {
	int fd;
	void *src, *area;	/* area: the anonymous mapping src is in */
	size_t len;
	ssize_t ret;
	int err;
};

static void *stalled_write_thread(void *arg)
{
	struct stalled_write *w = arg;

	w->ret = pwrite(w->fd, w->src, w->len, 0);
	w->err = errno;
	return NULL;
}

/*
 * write() faults its source in a batch (WRITE_BATCH pages) at a time, before
 * it takes any folio of the batch: stalled in the second batch, it has the
 * whole first one in the file, out of the direct map and flushed. (Stalled
 * in the first, the file would be empty and the check prove nothing.)
 */
#define STALL_PAGES	(WRITE_BATCH + 8)
#define STALL_AT	(WRITE_BATCH + 3)	/* the source page an unserved userfaultfd holds */
#define STALL_2M	(2UL << 20)

/*
 * A write() stalled on its source (a page that an unserved userfaultfd
 * holds): every page already in the file is out of the direct map on every
 * CPU, and the TLB flush that covers it is done, before anyone can map it.
 */
static int stalled_write_exposes_nothing(char *why, size_t whylen)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct stalled_write w = { .fd = -1, .area = MAP_FAILED };
	struct uffdio_register reg;
	struct uffdio_zeropage zero;
	struct pollfd pfd;
	struct uffd_msg msg;
	long flushes, in_file = 0, timed_out_at = -1;
	struct gmem_dmap_probe p;
	bool started = false;
	uint64_t pfn = 0;
	pthread_t thread;
	struct gfile g;
	int uffd, r, e;

	r = need_flag_and_probe(why, whylen);
	if (r != KSFT_PASS)
		return r;
	uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api)) {
		snprintf(why, whylen, "userfaultfd: %s (the shim kernel has CONFIG_USERFAULTFD)",
			 strerror(errno));
		return KSFT_FAIL;
	}
	/*
	 * The source is anonymous memory that the test faults in page by page,
	 * placed 2 MiB aligned, so that it always holds the case that made this
	 * test fail once in make check (1 run in ~64: a mapping of 520 pages
	 * holds an aligned 2 MiB when it starts within 8 pages before one):
	 * there THP ("always" on Debian's and the shim kernel) brought the page
	 * userfaultfd is to hold with the fill, and write() never faulted on it.
	 * MADV_NOHUGEPAGE keeps it 4 KiB.
	 */
	w.len = STALL_PAGES * page;
	w.area = mmap(NULL, 2 * STALL_2M, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	w.src = w.area == MAP_FAILED ? MAP_FAILED :
		(void *)(((uintptr_t)w.area + STALL_2M - 1) & ~(STALL_2M - 1));
	r = gfile_open(&g, kvm_fd, 0, SHARED | NDM | GUEST_MEMFD_FLAG_WRITE, w.len, why, whylen);
	if (r != KSFT_PASS || w.src == MAP_FAILED)
		goto out;
	if (madvise(w.area, 2 * STALL_2M, MADV_NOHUGEPAGE)) {
		snprintf(why, whylen, "MADV_NOHUGEPAGE: %s", strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	gmem_fill(w.src, 0, STALL_AT * page, 0x44);
	reg = (struct uffdio_register){
		.range = { .start = (uintptr_t)w.src + STALL_AT * page, .len = page },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	if (ioctl(uffd, UFFDIO_REGISTER, &reg)) {
		snprintf(why, whylen, "UFFDIO_REGISTER: %s", strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}

	flushes = gmem_counter(NDM_FLUSHES);
	w.fd = g.fd;
	if (pthread_create(&thread, NULL, stalled_write_thread, &w)) {
		snprintf(why, whylen, "pthread_create failed");
		r = KSFT_FAIL;
		goto out;
	}
	started = true;
	pfd = (struct pollfd){ .fd = uffd, .events = POLLIN };
	if (poll(&pfd, 1, 20000) != 1 || read(uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT) {
		/* Said once the writer is joined: what it did instead. */
		timed_out_at = gmem_cached_pages(g.fd, 0, w.len);
		r = KSFT_FAIL;
		goto serve;
	}

	/* Stalled: what is in the file now must be out and flushed. */
	flushes = gmem_counter(NDM_FLUSHES) - flushes;
	for (long i = 0; i < STALL_PAGES; i++) {
		e = probe(g.fd, i * page, &pfn, &p);
		if (e == -ENOENT)
			continue;
		in_file++;
		if (e || !probe_says_absent(&p)) {
			snprintf(why, whylen, "write() stalled at page %d: page %ld %s (readable on %u of %u CPUs)",
				 STALL_AT, i, e ? strerror(-e) : "is in the direct map",
				 p.readable_cpus, p.nr_cpus);
			r = KSFT_FAIL;
			goto serve;
		}
	}
	if (r == KSFT_PASS && in_file != WRITE_BATCH) {
		snprintf(why, whylen, "write() stalled at page %d with %ld pages in the file, want its first batch, %d",
			 STALL_AT, in_file, WRITE_BATCH);
		r = KSFT_FAIL;
	} else if (r == KSFT_PASS && flushes < 1) {
		snprintf(why, whylen, "write() stalled at page %d with %ld pages in the file and no TLB flush yet",
			 STALL_AT, in_file);
		r = KSFT_FAIL;
	}
serve:
	zero = (struct uffdio_zeropage){
		.range = { .start = (uintptr_t)w.src + STALL_AT * page, .len = page },
	};
	ioctl(uffd, UFFDIO_ZEROPAGE, &zero);
	if (started)
		pthread_join(thread, NULL);
	if (timed_out_at >= 0)
		snprintf(why, whylen, "write() did not fault on the userfaultfd page in 20 s: %ld pages in the file then; the write returned %zd (%s)",
			 timed_out_at, w.ret, w.ret < 0 ? strerror(w.err) : "bytes");
	if (r == KSFT_PASS && w.ret != (ssize_t)w.len) {
		snprintf(why, whylen, "pwrite: %s", w.ret < 0 ? strerror(w.err) : "short");
		r = KSFT_FAIL;
	} else if (r == KSFT_PASS && !all_absent(g.fd, 0, w.len, NULL, why, whylen)) {
		r = KSFT_FAIL;
	} else if (r == KSFT_PASS && (gmem_check(g.map, 0, STALL_AT * page, 0x44) >= 0 ||
				      gmem_check_zero(g.map, STALL_AT * page, w.len) >= 0)) {
		snprintf(why, whylen, "the mapping does not show what pwrite() wrote");
		r = KSFT_FAIL;
	}
out:
	gfile_close(&g);
	if (w.area != MAP_FAILED)
		munmap(w.area, 2 * STALL_2M);
	close(uffd);
	return r;
}

#define FAIL_ZAP	GMEM_FAIL_NDM_ZAP

/*
 * When a page cannot be taken out of the direct map (injected: debugfs
 * kvm/fail_gmem_ndm_zap), write() gets a clean error and the page is never
 * mapped while it is in the direct map: fault-around does not map it, and a
 * fault on it takes it out first (and reads zeroes: nothing was written).
 */
static int failed_zap_never_maps_the_page(char *why, size_t whylen)
{
	struct gmem_dmap_probe p;
	uint64_t pfn = 0;
	struct gfile g;
	uint8_t *src;
	ssize_t n;
	int r, e, v;

	r = need_flag_and_probe(why, whylen);
	if (r != KSFT_PASS)
		return r;
	if (access(FAIL_ZAP, F_OK)) {
		snprintf(why, whylen, "no %s", FAIL_ZAP);
		return KSFT_FAIL;
	}
	src = malloc(2 * page);
	memset(src, 0x5a, 2 * page);
	r = gfile_open(&g, kvm_fd, 0, SHARED | NDM | GUEST_MEMFD_FLAG_WRITE, 4 * page, why, whylen);
	if (r != KSFT_PASS)
		goto out;
	if (!gmem_fail_next_once(FAIL_ZAP)) {
		snprintf(why, whylen, "cannot arm %s", FAIL_ZAP);
		r = KSFT_FAIL;
		goto out;
	}
	n = pwrite(g.fd, src, 2 * page, 0);
	e = errno;
	gmem_write_file(FAIL_ZAP "/probability", "0");
	if (n != -1 || e != ENOMEM) {
		snprintf(why, whylen, "pwrite() with the first page failing to leave the direct map: %s, want ENOMEM",
			 n < 0 ? strerror(e) : "worked");
		r = KSFT_FAIL;
		goto out;
	}
	/* A read fault next to them: fault-around maps what is up to date. */
	if (gmem_read_byte(g.map + 2 * page) != 0) {
		snprintf(why, whylen, "page 2 does not read as zero");
		r = KSFT_FAIL;
		goto out;
	}
	for (int i = 0; i < 2; i++) {
		if (pte_present(g.map + i * page) != 1)
			continue;
		e = probe(g.fd, i * page, &pfn, &p);
		snprintf(why, whylen, "page %d, which write() failed to take out, got mapped (%s)", i,
			 e ? strerror(-e) : probe_says_absent(&p) ? "out of the direct map" :
			 "in the direct map");
		r = KSFT_FAIL;
		goto out;
	}
	v = gmem_read_byte(g.map);
	e = probe(g.fd, 0, &pfn, &p);
	if (v != 0 || e || !probe_says_absent(&p)) {
		snprintf(why, whylen, "page 0 after a fault: reads %d (want 0: nothing was written), %s",
			 v, e ? strerror(-e) : probe_says_absent(&p) ? "out of the direct map" :
			 "still in the direct map");
		r = KSFT_FAIL;
	}
out:
	gfile_close(&g);
	free(src);
	return r;
}

/*
 * Closing the last NO_DIRECT_MAP file puts its pages back in the direct map
 * at once, even while something holds its inode (an inotify watch on
 * /proc/self/fd/N); kvm_amd and kvm then unload without waiting, the inode
 * is evicted after that without calling into them, and they load again.
 */
static int unload_restores_every_page(char *why, size_t whylen)
{
	uint64_t pfn[NPAGES];
	char path[64];
	struct gfile g;
	int r, e, in;
	bool absent;

	r = need_flag_and_probe(why, whylen);
	if (r != KSFT_PASS)
		return r;
	in = inotify_init1(IN_CLOEXEC);
	r = gfile_open(&g, kvm_fd, 0, SHARED | NDM, NPAGES * page, why, whylen);
	if (r != KSFT_PASS) {
		gfile_close(&g);
		close(in);
		return r;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", g.fd);
	if (in < 0 || inotify_add_watch(in, path, IN_ATTRIB) < 0) {
		snprintf(why, whylen, "inotify watch on %s: %s", path, strerror(errno));
		gfile_close(&g);
		close(in);
		return KSFT_FAIL;
	}
	gmem_fill(g.map, 0, NPAGES * page, 0x66);
	absent = all_absent(g.fd, 0, NPAGES * page, pfn, why, whylen);
	gfile_close(&g);
	close(kvm_fd);
	kvm_fd = -1;
	if (!absent) {
		close(in);
		return KSFT_FAIL;
	}
	/* The inode lives on; its pages must not. */
	if (!all_present(pfn, NPAGES, "after the last close (inode still held)", why, whylen))
		r = KSFT_FAIL;
	else if ((e = gmem_unload_module("kvm_amd")) || (e = gmem_unload_module("kvm"))) {
		snprintf(why, whylen, "unload with the inode still held: %s", strerror(-e));
		r = KSFT_FAIL;
	}
	/* Evicted now, with kvm unloaded (if it did). */
	close(in);
	if ((e = gmem_load_module("kvm", "kvm.ko")) || (e = gmem_load_module("kvm_amd", "kvm-amd.ko"))) {
		if (r == KSFT_PASS)
			snprintf(why, whylen, "reload: %s", strerror(-e));
		r = KSFT_FAIL;
	}
	return r;
}

/*
 * 2 MiB folios out of the direct map (src/virt/0035, mm-shim 0010): each
 * leaves it with one call, its 2 MiB direct map entry made not present
 * whole, under one flush. The checks below use files of HUGE_FILE bytes.
 */
#define HUGE_FILE	(8 * SZ_2M)
#define HUGE_FOLIOS	GMEM_DEBUGFS "/kvm/gmem_huge_folios"
#define NDM_KEPT	GMEM_DEBUGFS "/kvm/gmem_ndm_kept"
#define LEVEL_2M	2	/* x86's PG_LEVEL_2M, as the probe reports it */

static const char *const level_names[] = { "no entry", "4 KiB", "2 MiB", "1 GiB" };

static const char *level_name(uint32_t level)
{
	return level < 4 ? level_names[level] : "?";
}

/*
 * A NO_DIRECT_MAP file of 2 MiB folios, mapped 2 MiB aligned, where the flag
 * and the probe are there. A KSFT_* code; gfile_close() after.
 */
static int huge_open(struct gfile *g, unsigned long long more, char *why, size_t whylen)
{
	int r = need_flag_and_probe(why, whylen);

	*g = (struct gfile){ .vm = -1, .fd = -1 };
	if (r != KSFT_PASS)
		return r;
	r = gfile_open(g, kvm_fd, 0, SHARED | NDM | HUGE | more, HUGE_FILE, why, whylen);

	if (r == KSFT_PASS && ((uintptr_t)g->map & (SZ_2M - 1))) {
		snprintf(why, whylen, "the mapping of a file of 2 MiB folios is at %p, not 2 MiB aligned",
			 (void *)g->map);
		r = KSFT_FAIL;
	}
	return r;
}

/*
 * Pages 0, @page_in and 511 of the folio at @off are out of the direct map on
 * every CPU; *@level gets the size of the entry that maps page 0 (all three
 * must share it: one entry, not one per page, where it is 2 MiB), *@pfn its
 * pfn if asked.
 */
static bool folio_absent(int fd, long off, long page_in, uint32_t *level, uint64_t *pfn,
			 char *why, size_t whylen)
{
	const long pages[] = { 0, page_in, SZ_2M / page - 1 };
	struct gmem_dmap_probe p;
	uint64_t f = 0;
	int e;

	for (int i = 0; i < 3; i++) {
		e = probe(fd, off + pages[i] * page, &f, &p);
		if (e || !probe_says_absent(&p)) {
			snprintf(why, whylen, "page %ld of the folio at %ld MiB: %s", pages[i],
				 off >> 20, e ? strerror(-e) : "in the direct map");
			return false;
		}
		if (!i) {
			*level = p.level;
			if (pfn)
				*pfn = f;
		} else if (*level == LEVEL_2M && p.level != LEVEL_2M) {
			snprintf(why, whylen, "the folio at %ld MiB: page 0 in a 2 MiB entry, page %ld in a %s one",
				 off >> 20, pages[i], level_name(p.level));
			return false;
		}
	}
	return true;
}

/*
 * huge_open(), and its first 2 MiB filled through the mapping with @seed,
 * out of the direct map (pages 0, @page_in and 511; *@level its entry's
 * size). A KSFT_* code; gfile_close() after.
 */
static int huge_filled(struct gfile *g, unsigned long long more, uint8_t seed, long page_in,
		       uint32_t *level, char *why, size_t whylen)
{
	int r = huge_open(g, more, why, whylen);

	if (r != KSFT_PASS)
		return r;
	gmem_fill(g->map, 0, SZ_2M, seed);
	return folio_absent(g->fd, 0, page_in, level, NULL, why, whylen) ? KSFT_PASS : KSFT_FAIL;
}

/*
 * Eight 2 MiB folios, one byte touched in each: eight 2 MiB folios, out of
 * the direct map on every CPU under one flush each, and no 2 MiB direct map
 * entry split (/proc/meminfo's DirectMap4k unchanged: the shim kernel has no
 * vmstat event counters, and x86 never merges 4 KiB entries back, so it
 * only grows by splits); at least one of them
 * found in a 2 MiB entry, made not present whole (one that landed where the
 * direct map was split already cannot show it). Taking a folio out page by
 * page splits its entry into 512.
 */
static int huge_folio_leaves_direct_map_whole(char *why, size_t whylen)
{
	long splits, flushes, folios, whole = 0;
	uint32_t level;
	struct gfile g;
	int r;

	r = huge_open(&g, 0, why, whylen);
	if (r != KSFT_PASS)
		goto out;
	splits = gmem_meminfo_kib("DirectMap4k");
	flushes = gmem_counter(NDM_FLUSHES);
	folios = gmem_counter(HUGE_FOLIOS);
	if (splits < 0 || flushes < 0 || folios < 0) {
		snprintf(why, whylen, "cannot read DirectMap4k (/proc/meminfo) or kvm's counters");
		r = KSFT_FAIL;
		goto out;
	}
	for (long off = 0; off < HUGE_FILE; off += SZ_2M)
		g.map[off + 5 * page] = (uint8_t)(off >> 21) + 1;
	splits = (gmem_meminfo_kib("DirectMap4k") - splits) / 2048;
	flushes = gmem_counter(NDM_FLUSHES) - flushes;
	folios = gmem_counter(HUGE_FOLIOS) - folios;
	if (folios != HUGE_FILE / SZ_2M || flushes != HUGE_FILE / SZ_2M || splits) {
		snprintf(why, whylen, "8 touches: %ld 2 MiB folios, %ld flushes, %ld 2 MiB direct map entries split; want 8, 8 and 0",
			 folios, flushes, splits);
		r = KSFT_FAIL;
		goto out;
	}
	for (long off = 0; off < HUGE_FILE; off += SZ_2M) {
		if (!folio_absent(g.fd, off, 5, &level, NULL, why, whylen)) {
			r = KSFT_FAIL;
			goto out;
		}
		whole += level == LEVEL_2M;
		if (g.map[off + 5 * page] != (uint8_t)(off >> 21) + 1 ||
		    gmem_check_zero(g.map, off + 6 * page, off + SZ_2M) >= 0) {
			snprintf(why, whylen, "the folio at %ld MiB does not read back its byte and zeroes",
				 off >> 20);
			r = KSFT_FAIL;
			goto out;
		}
	}
	if (!whole) {
		snprintf(why, whylen, "no folio of 8 is in a 2 MiB direct map entry: cannot tell whether one left it whole");
		r = KSFT_FAIL;
	} else {
		snprintf(why, whylen, "8 folios, 8 flushes, 0 splits; %ld of them in a 2 MiB entry", whole);
	}
out:
	gfile_close(&g);
	return r;
}

/*
 * A punch of part of a 2 MiB folio out of the direct map clears that part
 * and keeps the folio whole and out (no split: its pieces would have to
 * leave the direct map again one by one); a punch of all of it frees the
 * folio, back in the direct map, cleared. The rest of the folio keeps what
 * the guest wrote.
 */
static int huge_punch_keeps_the_folio_out(char *why, size_t whylen)
{
	long splits, folios, cached;
	uint64_t pfn[2] = { 0, 0 };
	uint32_t level, after;
	struct gfile g;
	int r, e;

	r = huge_filled(&g, 0, 0x51, 10, &level, why, whylen);
	if (r != KSFT_PASS)
		goto out;
	for (long i = 0; i < SZ_2M / 8; i++)
		((volatile uint64_t *)(g.map + SZ_2M))[i] = COOKIE;
	if (!folio_absent(g.fd, SZ_2M, 7, &after, &pfn[0], why, whylen)) {
		r = KSFT_FAIL;
		goto out;
	}
	e = probe(g.fd, SZ_2M + SZ_2M - page, &pfn[1], &(struct gmem_dmap_probe){ 0 });
	splits = gmem_meminfo_kib("DirectMap4k");
	folios = gmem_counter(NDM_FOLIOS);
	if (e || fallocate(g.fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, 10 * page, 3 * page)) {
		snprintf(why, whylen, "punch of pages 10-12: %s", strerror(e ? -e : errno));
		r = KSFT_FAIL;
		goto out;
	}
	cached = gmem_cached_pages(g.fd, 0, SZ_2M);
	if (gmem_check(g.map, 0, 10 * page, 0x51) >= 0 ||
	    gmem_check(g.map, 13 * page, SZ_2M, 0x51) >= 0) {
		snprintf(why, whylen, "pages outside the punch lost what was written: byte %ld",
			 gmem_check(g.map, 0, 10 * page, 0x51) >= 0 ?
			 gmem_check(g.map, 0, 10 * page, 0x51) : gmem_check(g.map, 13 * page, SZ_2M, 0x51));
		r = KSFT_FAIL;
	} else if (gmem_check_zero(g.map, 10 * page, 13 * page) >= 0) {
		snprintf(why, whylen, "the punched pages do not read zero");
		r = KSFT_FAIL;
	} else if (cached != SZ_2M / page || gmem_counter(NDM_FOLIOS) != folios) {
		snprintf(why, whylen, "after the punch: %ld of 512 pages in the file, %ld folios out of the direct map (%ld before): the folio was split or freed",
			 cached, gmem_counter(NDM_FOLIOS), folios);
		r = KSFT_FAIL;
	} else if (!folio_absent(g.fd, 0, 10, &after, NULL, why, whylen)) {
		r = KSFT_FAIL;
	} else if (after != level || gmem_meminfo_kib("DirectMap4k") != splits) {
		snprintf(why, whylen, "the punch split the direct map: the folio's entry %s, then %s",
			 level_name(level), level_name(after));
		r = KSFT_FAIL;
	}
	if (r != KSFT_PASS)
		goto out;

	if (fallocate(g.fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, SZ_2M, SZ_2M)) {
		snprintf(why, whylen, "punch of the second 2 MiB: %s", strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	for (int i = 0; i < 2; i++) {
		struct gmem_dmap_probe p = { .fd = -1, .pfn = pfn[i], .cookie = COOKIE };

		e = ioctl(probe_fd, GMEM_DMAP_PROBE, &p) ? -errno : 0;
		if (e || !probe_says_present(&p) || p.cookie_words) {
			snprintf(why, whylen, "the freed folio's page %d: %s, %u words still hold what was written",
				 i ? 511 : 0, e ? strerror(-e) : p.present ? "in the direct map" :
				 "not back in the direct map", p.cookie_words);
			r = KSFT_FAIL;
			goto out;
		}
	}
	if (gmem_counter(NDM_FOLIOS) != folios - 1) {
		snprintf(why, whylen, "punching a whole folio: %ld folios out of the direct map, want %ld",
			 gmem_counter(NDM_FOLIOS), folios - 1);
		r = KSFT_FAIL;
	}
out:
	gfile_close(&g);
	return r;
}

/*
 * write() into a 2 MiB folio out of the direct map copies through a map of
 * its own: the folio never goes back into the direct map for it, so there is
 * nothing to flush after. write() of part of a new folio: the rest reads
 * zero, the folio out under one flush.
 */
static int huge_write_keeps_the_folio_out(char *why, size_t whylen)
{
	uint8_t buf[3 * 4096];	/* x86: three pages */
	long flushes, folios;
	uint32_t level;
	struct gfile g;
	int r;

	r = huge_open(&g, GUEST_MEMFD_FLAG_WRITE, why, whylen);
	if (r != KSFT_PASS)
		goto out;
	/* A new folio: pages 4-6 of the second 2 MiB written, nothing else. */
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = gmem_pat(SZ_2M + 4 * page + i, 0x62);
	flushes = gmem_counter(NDM_FLUSHES);
	folios = gmem_counter(HUGE_FOLIOS);
	if (pwrite(g.fd, buf, sizeof(buf), SZ_2M + 4 * page) != (ssize_t)sizeof(buf)) {
		snprintf(why, whylen, "pwrite into a new folio: %s", strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	if (gmem_counter(HUGE_FOLIOS) != folios + 1 || gmem_counter(NDM_FLUSHES) != flushes + 1) {
		snprintf(why, whylen, "pwrite of 3 pages into a new 2 MiB: %ld folios, %ld flushes; want 1 and 1",
			 gmem_counter(HUGE_FOLIOS) - folios, gmem_counter(NDM_FLUSHES) - flushes);
		r = KSFT_FAIL;
		goto out;
	}
	if (!folio_absent(g.fd, SZ_2M, 5, &level, NULL, why, whylen)) {
		r = KSFT_FAIL;
		goto out;
	}
	if (gmem_check(g.map, SZ_2M + 4 * page, SZ_2M + 7 * page, 0x62) >= 0 ||
	    gmem_check_zero(g.map, SZ_2M, SZ_2M + 4 * page) >= 0 ||
	    gmem_check_zero(g.map, SZ_2M + 7 * page, 2 * SZ_2M) >= 0) {
		snprintf(why, whylen, "the new folio does not read the 3 pages written and zeroes around them");
		r = KSFT_FAIL;
		goto out;
	}

	/* An old folio: filled through the mapping, then pages 7-9 written. */
	gmem_fill(g.map, 0, SZ_2M, 0x63);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = gmem_pat(7 * page + i, 0x64);
	flushes = gmem_counter(NDM_FLUSHES);
	if (pwrite(g.fd, buf, sizeof(buf), 7 * page) != (ssize_t)sizeof(buf)) {
		snprintf(why, whylen, "pwrite into an old folio: %s", strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	if (gmem_counter(NDM_FLUSHES) != flushes) {
		snprintf(why, whylen, "pwrite into a 2 MiB folio out of the direct map flushed %ld times: it put the folio back for the copy",
			 gmem_counter(NDM_FLUSHES) - flushes);
		r = KSFT_FAIL;
	} else if (!folio_absent(g.fd, 0, 8, &level, NULL, why, whylen)) {
		r = KSFT_FAIL;
	} else if (gmem_check(g.map, 7 * page, 10 * page, 0x64) >= 0 ||
		   gmem_check(g.map, 0, 7 * page, 0x63) >= 0 ||
		   gmem_check(g.map, 10 * page, SZ_2M, 0x63) >= 0) {
		snprintf(why, whylen, "the old folio does not read the 3 pages written and what it held around them");
		r = KSFT_FAIL;
	}
out:
	gfile_close(&g);
	return r;
}

/*
 * Memory failure on a page of a 2 MiB folio out of the direct map: mm
 * cannot split the folio, the page SIGBUSes and the rest reads as written;
 * once the file is gone, the folio stays out of the direct map for good
 * (gmem_ndm_kept): putting its other pages back would split its entry on a
 * path that must not fail. The mapping is gone before the failure: mm kills
 * whoever maps a folio it could not split.
 */
static int huge_poisoned_folio_stays_out(char *why, size_t whylen)
{
	struct gmem_dmap_probe p;
	uint64_t pfn = 0, pfn4 = 0;
	char pfnstr[32];
	long kept;
	uint32_t level;
	struct gfile g;
	void *map;
	int r, e;

	r = huge_filled(&g, 0, 0x71, 3, &level, why, whylen);
	if (r != KSFT_PASS)
		goto out;
	if ((e = probe(g.fd, 3 * page, &pfn, &p)) || (e = probe(g.fd, 4 * page, &pfn4, &p))) {
		snprintf(why, whylen, "probe of pages 3 and 4: %s", strerror(-e));
		r = KSFT_FAIL;
		goto out;
	}
	munmap((void *)g.map, g.size);
	g.map = NULL;
	snprintf(pfnstr, sizeof(pfnstr), "%#llx", (unsigned long long)pfn);
	if (!gmem_write_file(HWPOISON_INJECT, pfnstr) && errno != EBUSY && errno != EHWPOISON) {
		snprintf(why, whylen, "cannot write %s: %s", HWPOISON_INJECT, strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	map = gmem_map(g.fd, g.size);
	if (map == MAP_FAILED) {
		snprintf(why, whylen, "mmap again: %s", strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	g.map = map;
	if (!gmem_sigbus(g.map + 3 * page, false)) {
		snprintf(why, whylen, "a read of the poisoned page did not SIGBUS");
		r = KSFT_FAIL;
	} else if (gmem_check(g.map, 4 * page, SZ_2M, 0x71) >= 0 ||
		   gmem_check(g.map, 0, 3 * page, 0x71) >= 0) {
		snprintf(why, whylen, "the folio's other pages lost what was written");
		r = KSFT_FAIL;
	} else if (gmem_cached_pages(g.fd, 0, SZ_2M) != SZ_2M / page) {
		snprintf(why, whylen, "%ld of 512 pages in the file after the failure: the folio was split",
			 gmem_cached_pages(g.fd, 0, SZ_2M));
		r = KSFT_FAIL;
	}
	if (r != KSFT_PASS)
		goto out;
	kept = gmem_counter(NDM_KEPT);
	gfile_close(&g);
	for (int i = 0; i < 200 && gmem_counter(NDM_KEPT) == kept; i++)
		usleep(10000);
	if (gmem_counter(NDM_KEPT) != kept + 1) {
		snprintf(why, whylen, "file closed: gmem_ndm_kept %ld, then %ld; want one more",
			 kept, gmem_counter(NDM_KEPT));
		return KSFT_FAIL;
	}
	for (int i = 0; i < 2; i++) {
		uint64_t f = i ? pfn4 : pfn;

		e = probe(-1, 0, &f, &p);
		if (e || p.present || p.readable_cpus) {
			snprintf(why, whylen, "page %d of the kept folio: %s", i ? 4 : 3,
				 e ? strerror(-e) : "back in the direct map");
			return KSFT_FAIL;
		}
	}
	return KSFT_PASS;
out:
	gfile_close(&g);
	return r;
}

/*
 * A VM that converts in place refuses 2 MiB folios with NO_DIRECT_MAP
 * (EINVAL: a conversion inside such a folio is not done); either alone it
 * creates.
 */
static int huge_refused_where_memory_converts(char *why, size_t whylen)
{
	static const unsigned long long tries[] = { SHARED | NDM | HUGE, SHARED | HUGE, SHARED | NDM };
	int vm, fd, r;

	r = need_flag_and_probe(why, whylen);
	if (r != KSFT_PASS)
		return r;
	if (!(kvm_cap(kvm_fd, KVM_CAP_VM_TYPES) & (1 << KVM_X86_SW_PROTECTED_VM)))
		return KSFT_SKIP;
	if (!gmem_write_file(GMEM_IN_PLACE_PARAM, "1")) {
		snprintf(why, whylen, "cannot set %s", GMEM_IN_PLACE_PARAM);
		return KSFT_FAIL;
	}
	vm = ioctl(kvm_fd, KVM_CREATE_VM, KVM_X86_SW_PROTECTED_VM);
	gmem_write_file(GMEM_IN_PLACE_PARAM, "0");
	if (vm < 0) {
		snprintf(why, whylen, "KVM_CREATE_VM(SW_PROTECTED): %s", strerror(errno));
		return KSFT_FAIL;
	}
	for (int i = 0; i < 3 && r == KSFT_PASS; i++) {
		fd = gmem_create(vm, 2 * SZ_2M, tries[i]);
		if (i ? fd < 0 : fd != -EINVAL) {
			snprintf(why, whylen, "a VM converting in place, flags %#llx: %s", tries[i],
				 fd >= 0 ? "created, want EINVAL" : strerror(-fd));
			r = KSFT_FAIL;
		}
		if (fd >= 0)
			close(fd);
	}
	close(vm);
	return r;
}

static const struct gmem_case cases[] = {
	{ "SW_PROTECTED: a vCPU's window holds pages of its fault's kind, mapped as private", vcpu_window_private },
	{ "the flag is offered where it works and EINVAL where it is not", flag_offered_or_einval },
	{ "a faulted page is out of the direct map on every CPU; a plain one is in it",
	  faulted_page_leaves_direct_map },
	{ "fallocate() and pwrite() populate out of the direct map, one TLB flush per batch",
	  population_flushes_per_batch },
	{ "a hole punch and closing the file put the pages back in the direct map",
	  freed_pages_return_to_direct_map },
	{ "a punched page goes back to the direct map cleared", freed_pages_are_cleared },
	{ "a page memory-failure poisoned SIGBUSes and stays out of the direct map once punched",
	  poisoned_page_stays_out },
	{ "no hibernation while a NO_DIRECT_MAP file exists (EBUSY), again once it is closed",
	  hibernation_refused },
	{ "GUP refuses the memory (process_vm_*, vmsplice, mlock, /proc/self/mem, O_DIRECT); a plain guest_memfd's it takes",
	  gup_refuses_the_memory },
	{ "a vCPU runs on NO_DIRECT_MAP memory that pwrite() populated; KVM writes and updates kvmclock there",
	  vcpu_runs_on_the_memory },
	{ "a hole punched under kvmclock: KVM's pfn cache lets the freed page go (userspace_addr a decoy)",
	  punch_under_kvmclock },
	{ "kvmclock follows a gmem-only memslot swapped for a plain one at the same hva",
	  kvmclock_follows_a_memslot_swap },
	{ "a nested guest's VMCB on NO_DIRECT_MAP memory: KVM maps it and VMLOAD loads it",
	  nested_vmcb_on_the_memory },
	{ "a nested VMCB on a page not restored yet (KVM Userfault): VMLOAD exits with its gpa, then loads it",
	  nested_vmcb_not_restored },
	{ "KVM's instruction emulator reads guest code from NO_DIRECT_MAP memory (an MMIO store exits)",
	  emulation_reads_the_memory },
	{ "faults and fallocate() allocate only what they map or fill; closing the files gives it all back",
	  nothing_allocated_ahead },
	{ "a vCPU's fault on a hole takes its 16-page window out under one flush and maps it all",
	  vcpu_fault_takes_its_window },
	{ "a fault 2 pages before a page table's end maps and takes only those 2 pages",
	  fault_around_stays_in_its_page_table },
	{ "a page first touched after mbind() lands on the node bound, not where an earlier fault ran",
	  pages_follow_the_policy_at_their_fault },
	{ "every page out of the direct map is charged to the memory cgroup that faulted it",
	  pages_are_charged_to_the_faulting_cgroup },
	{ "a write() stalled on its source (userfaultfd) has flushed every page already in the file",
	  stalled_write_exposes_nothing },
	{ "a page that cannot leave the direct map (injected) fails write() with ENOMEM and is never mapped",
	  failed_zap_never_maps_the_page },
	{ "2 MiB folios leave the direct map whole: one flush each, no 2 MiB entry split",
	  huge_folio_leaves_direct_map_whole },
	{ "a punch of part of a 2 MiB folio clears it and keeps the folio out; of all of it frees it",
	  huge_punch_keeps_the_folio_out },
	{ "write() into a 2 MiB folio out of the direct map copies without putting it back",
	  huge_write_keeps_the_folio_out },
	{ "a poisoned page of a 2 MiB folio SIGBUSes; the folio stays out of the direct map for good",
	  huge_poisoned_folio_stays_out },
	{ "a VM that converts in place refuses 2 MiB folios with NO_DIRECT_MAP (EINVAL)",
	  huge_refused_where_memory_converts },
	{ "the last close frees every page while the inode lives on; kvm unloads without waiting",
	  unload_restores_every_page },
};

/*
 * Pages out of the direct map after a case: its files are closed by then,
 * so kvm/gmem_ndm_folios must come back (bounded wait: the last reference
 * may sit in a per-CPU batch for a moment) to where it was before the case.
 * A page a case leaks out of the direct map turns its PASS into a FAIL.
 */
static long ndm_folios_now(void)
{
	return gmem_counter(NDM_FOLIOS);
}

static int ndm_folios_back(const struct gmem_case *c, long base, char *why, size_t whylen)
{
	long now = gmem_counter(NDM_FOLIOS);

	/* The unload case reloads kvm, which starts its counters at 0. */
	if (c->fn == unload_restores_every_page)
		return KSFT_PASS;
	/* Where the modules offer the flag, the counter is theirs: it must be there. */
	if (base < 0 && offered) {
		snprintf(why, whylen, "kvm/gmem_ndm_folios cannot be read: no leak check");
		return KSFT_FAIL;
	}
	if (base < 0)
		return KSFT_PASS;
	for (int i = 0; i < 200 && now > base; i++) {
		usleep(10000);
		now = gmem_counter(NDM_FOLIOS);
	}
	if (now == base)
		return KSFT_PASS;
	snprintf(why, whylen, "kvm/gmem_ndm_folios is %ld after the case, %ld before it", now, base);
	return KSFT_FAIL;
}

static const struct gmem_case_check ndm_folios_check = {
	.before = ndm_folios_now,
	.after = ndm_folios_back,
};

int main(int argc, char **argv)
{
	int ko;

	gmem_parse_case_args(argc, argv);

	page = getpagesize();
	sched_getaffinity(0, sizeof(all_cpus), &all_cpus);
	kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm_fd < 0)
		ksft_exit_skip("/dev/kvm: %s\n", strerror(errno));
	offered = gmem_has_flags(kvm_fd, NDM);
	/* The probe module: loaded by the first run, EEXIST after that. */
	ko = open(PROBE_KO, O_RDONLY | O_CLOEXEC);
	if (ko >= 0) {
		if (syscall(SYS_finit_module, ko, "", 0) && errno != EEXIST)
			ksft_print_msg("loading %s: %s\n", PROBE_KO, strerror(errno));
		close(ko);
	}
	gmem_counter(NDM_FLUSHES);	/* mounts debugfs */
	probe_fd = open(GMEM_DMAP_PROBE_FILE, O_RDONLY | O_CLOEXEC);
	run_cases_checked(cases, sizeof(cases) / sizeof(cases[0]), &ndm_folios_check);
	return 0;
}
