// SPDX-License-Identifier: GPL-2.0
/*
 * gmem_write_test: write() population of guest_memfd (GUEST_MEMFD_FLAG_WRITE,
 * provisional number; src/virt/0021, the proposal's v7): whole pages within
 * the file, EINVAL otherwise, ENODEV without the flag; any page of a VM
 * without private memory (the only VMs offered the flag); what write() put
 * there is what the host mapping and a vCPU see; the source may be a
 * mapping of the same file.
 *
 * Modules without the flag: SKIP, or FAIL with ours (gmem_test.h).
 */
#include <linux/falloc.h>

#include "gmem_test.h"
#include "gmem_x86_guest.h"

#define NPAGES		16
#define FLAGS		(GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED | GUEST_MEMFD_FLAG_WRITE)

static long page;
static int kvm_fd;

/* @n pages of pattern @seed, in a buffer of the test's. */
static uint8_t *pattern(int n, uint8_t seed)
{
	uint8_t *b = malloc(n * page);

	if (b)
		gmem_fill(b, 0, n * page, seed);
	return b;
}

/* The whole file with write(), then read back through the mapping. */
static int write_whole_file(char *why, size_t whylen)
{
	uint8_t *src = pattern(NPAGES, 0x11);
	struct gfile g;
	ssize_t n;
	long bad;
	int r;

	r = gfile_open(&g, kvm_fd, 0, FLAGS, NPAGES * page, why, whylen);
	if (r == KSFT_PASS) {
		n = write(g.fd, src, NPAGES * page);
		if (n != NPAGES * page) {
			snprintf(why, whylen, "write(%ld bytes) = %zd (%s)", NPAGES * page, n,
				 n < 0 ? strerror(errno) : "short");
			r = KSFT_FAIL;
		} else if ((bad = gmem_check(g.map, 0, NPAGES * page, 0x11)) >= 0) {
			snprintf(why, whylen, "the mapping differs at byte %ld", bad);
			r = KSFT_FAIL;
		} else if (lseek(g.fd, 0, SEEK_CUR) != NPAGES * page) {
			snprintf(why, whylen, "the file offset did not advance by what was written");
			r = KSFT_FAIL;
		}
	}
	gfile_close(&g);
	free(src);
	return r;
}

/*
 * pwrite() of pages 3-4 over a file the host populated: those two pages
 * change, their neighbours keep what the host wrote.
 */
static int pwrite_overwrites_only_its_pages(char *why, size_t whylen)
{
	uint8_t *src = pattern(2, 0x22);
	struct gfile g;
	long bad;
	int r;

	r = gfile_open(&g, kvm_fd, 0, FLAGS, NPAGES * page, why, whylen);
	if (r == KSFT_PASS) {
		gmem_fill(g.map, 0, NPAGES * page, 0x33);
		if (pwrite(g.fd, src, 2 * page, 3 * page) != 2 * page) {
			snprintf(why, whylen, "pwrite(2 pages at page 3): %s", strerror(errno));
			r = KSFT_FAIL;
		} else if ((bad = gmem_check(g.map + 3 * page, 0, 2 * page, 0x22)) >= 0) {
			snprintf(why, whylen, "pages 3-4 differ at byte %ld", bad);
			r = KSFT_FAIL;
		} else if ((bad = gmem_check(g.map, 0, 3 * page, 0x33)) >= 0 ||
			   (bad = gmem_check(g.map, 5 * page, NPAGES * page, 0x33)) >= 0) {
			snprintf(why, whylen, "a neighbouring page changed (byte %ld)", bad);
			r = KSFT_FAIL;
		}
	}
	gfile_close(&g);
	free(src);
	return r;
}

/*
 * Everything the proposal (v7) refuses: EINVAL for bad offsets and
 * lengths, ENODEV for write() and pwrite() without the flag.
 */
static int refused(char *why, size_t whylen)
{
	uint8_t *src = pattern(2, 0x44);
	struct gfile g, nowrite = { .vm = -1, .fd = -1 };
	struct {
		const char *what;
		int *fd;
		size_t len;
		off_t off;
	} bad[] = {
		{ "an unaligned offset", &g.fd, page, 1 },
		{ "an unaligned length", &g.fd, page - 1, 0 },
		{ "a length of a page and a byte", &g.fd, page + 1, 0 },
		{ "past the end", &g.fd, 2 * page, (NPAGES - 1) * page },
		{ "at the end", &g.fd, page, NPAGES * page },
	};
	int r;

	r = gfile_open(&g, kvm_fd, 0, FLAGS, NPAGES * page, why, whylen);
	if (r == KSFT_PASS)
		r = gfile_open(&nowrite, kvm_fd, 0, GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED,
			       NPAGES * page, why, whylen);
	for (size_t i = 0; r == KSFT_PASS && i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		if (pwrite(*bad[i].fd, src, bad[i].len, bad[i].off) != -1 || errno != EINVAL) {
			snprintf(why, whylen, "pwrite of %s: %s, want EINVAL", bad[i].what,
				 errno ? strerror(errno) : "written");
			r = KSFT_FAIL;
		}
	}
	/*
	 * Without the flag, write() and pwrite() are ENODEV, as the proposal's
	 * own test (write_not_supported) expects; such a file still has no
	 * position (lseek() ESPIPE), and read() and pread() still fail.
	 */
	errno = 0;
	if (r == KSFT_PASS && (write(nowrite.fd, src, page) != -1 || errno != ENODEV)) {
		snprintf(why, whylen, "write() without GUEST_MEMFD_FLAG_WRITE: %s, want ENODEV",
			 errno ? strerror(errno) : "written");
		r = KSFT_FAIL;
	}
	errno = 0;
	if (r == KSFT_PASS && (pwrite(nowrite.fd, src, page, 0) != -1 || errno != ENODEV)) {
		snprintf(why, whylen, "pwrite() without GUEST_MEMFD_FLAG_WRITE: %s, want ENODEV",
			 errno ? strerror(errno) : "written");
		r = KSFT_FAIL;
	}
	errno = 0;
	if (r == KSFT_PASS && (lseek(nowrite.fd, 0, SEEK_SET) != -1 || errno != ESPIPE)) {
		snprintf(why, whylen, "lseek() without GUEST_MEMFD_FLAG_WRITE: %s, want ESPIPE",
			 errno ? strerror(errno) : "worked");
		r = KSFT_FAIL;
	}
	if (r == KSFT_PASS && (read(nowrite.fd, src, page) >= 0 || pread(nowrite.fd, src, page, 0) >= 0 ||
			       read(g.fd, src, page) >= 0 || pread(g.fd, src, page, 0) >= 0)) {
		snprintf(why, whylen, "read() or pread() of a guest_memfd worked");
		r = KSFT_FAIL;
	}
	/* Nothing refused left a trace: the file still reads zero. */
	if (r == KSFT_PASS && gmem_check_zero(g.map, 0, NPAGES * page) >= 0) {
		snprintf(why, whylen, "a refused write changed the file");
		r = KSFT_FAIL;
	}
	if (r == KSFT_PASS && pwrite(g.fd, src, 0, 0) != 0) {
		snprintf(why, whylen, "a write of 0 bytes: %s, want 0", strerror(errno));
		r = KSFT_FAIL;
	}
	gfile_close(&nowrite);
	gfile_close(&g);
	free(src);
	return r;
}

/*
 * Which pages write() may populate: in the VMs offered the flag (no private
 * memory) any page of the file, with or without INIT_SHARED and MMAP. A file
 * with WRITE alone takes a page-aligned pwrite(), as the proposal's test
 * (write_supported) expects; so does MMAP | WRITE, whose host mapping still
 * SIGBUSes without INIT_SHARED. Counted in the page cache (cachestat()).
 */
static int write_without_init_shared(char *why, size_t whylen)
{
	static const unsigned long long flags[] = {
		GUEST_MEMFD_FLAG_WRITE,
		GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_WRITE,
	};
	uint8_t *src = pattern(1, 0x55);
	int r = src ? KSFT_PASS : KSFT_FAIL;

	for (size_t i = 0; r == KSFT_PASS && i < sizeof(flags) / sizeof(flags[0]); i++) {
		struct gfile g;
		long cached;

		r = gfile_open(&g, kvm_fd, 0, flags[i], NPAGES * page, why, whylen);
		if (r == KSFT_PASS && pwrite(g.fd, src, page, 5 * page) != page) {
			snprintf(why, whylen, "flags %#llx: pwrite of page 5: %s, want a page written",
				 flags[i], strerror(errno));
			r = KSFT_FAIL;
		}
		if (r == KSFT_PASS && (cached = gmem_cached_pages(g.fd, 0, NPAGES * page)) != 1) {
			snprintf(why, whylen, "flags %#llx: %ld pages in the file after a one-page pwrite, want 1",
				 flags[i], cached);
			r = KSFT_FAIL;
		}
		if (r == KSFT_PASS && g.map && !gmem_sigbus(g.map + 5 * page, false)) {
			snprintf(why, whylen, "flags %#llx: a host read of the written page did not SIGBUS",
				 flags[i]);
			r = KSFT_FAIL;
		}
		gfile_close(&g);
	}
	free(src);
	return r;
}

/* A VM with private memory is not offered the flag, and refuses it. */
static int sw_protected_vm_refuses_flag(char *why, size_t whylen)
{
	int vm, fd, caps;

	if (!(kvm_cap(kvm_fd, KVM_CAP_VM_TYPES) & (1 << KVM_X86_SW_PROTECTED_VM))) {
		snprintf(why, whylen, "no KVM_X86_SW_PROTECTED_VM");
		return KSFT_FAIL;
	}
	vm = ioctl(kvm_fd, KVM_CREATE_VM, KVM_X86_SW_PROTECTED_VM);
	if (vm < 0) {
		snprintf(why, whylen, "KVM_CREATE_VM(SW_PROTECTED): %s", strerror(errno));
		return KSFT_FAIL;
	}
	caps = kvm_cap(vm, KVM_CAP_GUEST_MEMFD_FLAGS);
	fd = gmem_create(vm, NPAGES * page, GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_WRITE);
	close(vm);
	if (caps & GUEST_MEMFD_FLAG_WRITE) {
		snprintf(why, whylen, "its flags cap %#x offers GUEST_MEMFD_FLAG_WRITE", caps);
		return KSFT_FAIL;
	}
	if (fd != -EINVAL) {
		if (fd >= 0)
			close(fd);
		snprintf(why, whylen, "MMAP | WRITE: %s, want EINVAL", fd >= 0 ? "created" : strerror(-fd));
		return KSFT_FAIL;
	}
	return KSFT_PASS;
}

/*
 * The source is a mapping of the same file: the write of page 2 faults in
 * page 9 of the file itself, which is not there yet; the write must not
 * deadlock on its own folio (the case has a timeout) and must copy.
 */
static int source_in_the_same_file(char *why, size_t whylen)
{
	struct gfile g;
	long bad;
	int r;

	r = gfile_open(&g, kvm_fd, 0, FLAGS, NPAGES * page, why, whylen);
	if (r == KSFT_PASS && pwrite(g.fd, (void *)(g.map + 9 * page), page, 2 * page) != page) {
		snprintf(why, whylen, "pwrite from the file's own unpopulated page: %s",
			 strerror(errno));
		r = KSFT_FAIL;
	}
	if (r == KSFT_PASS) {
		gmem_fill(g.map + 9 * page, 0, page, 0x55);
		if (pwrite(g.fd, (void *)(g.map + 9 * page), page, 2 * page) != page) {
			snprintf(why, whylen, "pwrite from the file's own page 9: %s", strerror(errno));
			r = KSFT_FAIL;
		} else if ((bad = gmem_check(g.map + 2 * page, 0, page, 0x55)) >= 0) {
			snprintf(why, whylen, "page 2 differs from page 9 at byte %ld", bad);
			r = KSFT_FAIL;
		}
	}
	if (r == KSFT_PASS && pwrite(g.fd, (void *)(g.map + 4 * page), page, 4 * page) != page) {
		snprintf(why, whylen, "pwrite of page 4 onto itself: %s", strerror(errno));
		r = KSFT_FAIL;
	}
	gfile_close(&g);
	return r;
}

/*
 * A source that runs into unreadable memory: what was readable is written,
 * whole pages only, then the write stops (a short count, or EFAULT when not
 * even the first page can be read).
 */
static int unreadable_source(char *why, size_t whylen)
{
	uint8_t *src = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct gfile g;
	ssize_t n;
	int r;

	if (src == MAP_FAILED) {
		snprintf(why, whylen, "mmap: %s", strerror(errno));
		return KSFT_FAIL;
	}
	gmem_fill(src, 0, page, 0x66);
	mprotect(src + page, page, PROT_NONE);
	r = gfile_open(&g, kvm_fd, 0, FLAGS, NPAGES * page, why, whylen);
	if (r == KSFT_PASS) {
		n = pwrite(g.fd, src, 2 * page, 0);
		if (n != page) {
			snprintf(why, whylen, "pwrite over a half-unreadable source = %zd (%s), want one page",
				 n, n < 0 ? strerror(errno) : "count");
			r = KSFT_FAIL;
		} else if (gmem_check(g.map, 0, page, 0x66) >= 0 ||
			   gmem_check_zero(g.map, page, 2 * page) >= 0) {
			snprintf(why, whylen, "page 0 is not the source or page 1 is not zero");
			r = KSFT_FAIL;
		}
	}
	errno = 0;
	if (r == KSFT_PASS && (pwrite(g.fd, src + page, page, 0) != -1 || errno != EFAULT)) {
		snprintf(why, whylen, "pwrite from an unreadable source: %s, want EFAULT",
			 errno ? strerror(errno) : "written");
		r = KSFT_FAIL;
	}
	gfile_close(&g);
	munmap(src, 2 * page);
	return r;
}

/*
 * A vCPU runs code that only write() put into the file and checks a page
 * that only write() filled, on a gmem-only memslot.
 */
static int vcpu_runs_written_memory(char *why, size_t whylen)
{
	struct vm vm = { .kvm = -1, .vm = -1, .vcpu = -1, .gmem = -1 };
	uint8_t data[DATA_LEN];
	int r;

	r = vm_with_written_code(&vm, FLAGS, guest_code, sizeof(guest_code), why, whylen);
	if (r != KSFT_PASS)
		goto out;
	for (int i = 0; i < DATA_LEN; i++)
		data[i] = (uint8_t)(0x70 + i * 3);
	if (pwrite(vm.gmem, data, DATA_LEN, DATA_GPA) != DATA_LEN) {
		snprintf(why, whylen, "pwrite of the data: %s", strerror(errno));
		r = KSFT_FAIL;
	} else if (!expect_round(&vm, 0x70, 3, STATUS_MATCH, DATA_GPA + DATA_LEN, 1, why, whylen)) {
		r = KSFT_FAIL;
	}
out:
	vm_teardown(&vm);
	return r;
}

static const struct gmem_case cases[] = {
	{ "write() of the whole file, read back through the mapping", write_whole_file },
	{ "pwrite() of pages 3-4 changes only those", pwrite_overwrites_only_its_pages },
	{ "EINVAL: unaligned offset or length, past the end; ENODEV without the WRITE flag", refused },
	{ "WRITE alone, and MMAP | WRITE without INIT_SHARED, take pwrite()", write_without_init_shared },
	{ "a SW_PROTECTED VM neither offers nor takes GUEST_MEMFD_FLAG_WRITE", sw_protected_vm_refuses_flag },
	{ "the source is a mapping of the same guest_memfd", source_in_the_same_file },
	{ "a half-unreadable source writes one page; an unreadable one is EFAULT", unreadable_source },
	{ "a vCPU runs code and checks data that only write() put there", vcpu_runs_written_memory },
};

int main(void)
{
	page = getpagesize();
	kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm_fd < 0)
		ksft_exit_skip("/dev/kvm: %s\n", strerror(errno));
	gmem_require_flags(kvm_fd, FLAGS, "GUEST_MEMFD_FLAG_WRITE");
	run_cases(cases, sizeof(cases) / sizeof(cases[0]));
	return 0;
}
