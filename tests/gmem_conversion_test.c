// SPDX-License-Identifier: GPL-2.0
/*
 * gmem_conversion_test: in-place conversion of guest_memfd pages between
 * shared and private (src/virt/0022; the proposed in-place conversion ABI,
 * provisional numbers): KVM_SET_MEMORY_ATTRIBUTES2 on the guest_memfd of a
 * SW_PROTECTED VM created with kvm.gmem_in_place_conversion=1.
 *
 * The test sets the parameter itself (and restores it): a VM keeps the value
 * it was created with, so the "off" expectations are checked on a VM made
 * while it is 0. Conversion preserves contents both ways (nothing encrypts
 * or zeroes on a software VM), and that is exactly what is checked.
 *
 * A conversion to private fails with EAGAIN and the offset of the first page
 * that has a reference beyond the page cache's. On the mm-shim kernel, where
 * mm reports dropped references (src/virt/0023), it first waits for them, up
 * to kvm.gmem_conversion_wait_ms (set to WAIT_MS here): a page spliced into a
 * pipe that is drained meanwhile converts without a retry, a long-term pin
 * (io_uring fixed buffer) still fails, after the wait. On Debian's kernel
 * both fail at once, as upstream.
 *
 * Modules without the parameter: SKIP, or FAIL with ours (gmem_test.h).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <linux/falloc.h>
#include <linux/io_uring.h>
#include <linux/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "gmem_test.h"
#include "gmem_x86_guest.h"

/* Only where mm reports dropped references (the mm-shim kernel): src/virt/0023. */
#define WAIT_PARAM	"/sys/module/kvm/parameters/gmem_conversion_wait_ms"
#define WAIT_MS		400
#define NPAGES		16
#define PRIVATE		KVM_MEMORY_ATTRIBUTE_PRIVATE

static long page;
static int kvm_fd;
/* Does this kernel wait for transient references (mm-shim)? */
static bool waits;
static char wait_saved[16];

static bool param_set(bool on)
{
	return gmem_write_file(GMEM_IN_PLACE_PARAM, on ? "1" : "0");
}

static int param_get(void)
{
	char c = 0;
	int fd = open(GMEM_IN_PLACE_PARAM, O_RDONLY);

	if (fd < 0)
		return -1;
	if (read(fd, &c, 1) != 1)
		c = 0;
	close(fd);
	return c == 'Y' || c == '1';
}

/* Leave the parameter as loaded, whatever happens to the test. */
static void param_off(void)
{
	param_set(false);
	if (wait_saved[0])
		gmem_write_file(WAIT_PARAM, wait_saved);
}

/* An in-place VM's MMAP | INIT_SHARED guest_memfd of @npages, mapped. */
static int shared_file(struct gfile *g, size_t npages, char *why, size_t whylen)
{
	return gfile_open(g, kvm_fd, KVM_X86_SW_PROTECTED_VM,
			  GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED, npages * page,
			  why, whylen);
}

static int convert(int fd, size_t first, size_t n, uint64_t attrs, char *why, size_t whylen)
{
	uint64_t err_off = 0;
	int r = gmem_set_attrs(fd, first * page, n * page, attrs, &err_off);

	if (r) {
		snprintf(why, whylen, "KVM_SET_MEMORY_ATTRIBUTES2(pages %zu-%zu, %s): %s, error_offset %#llx",
			 first, first + n - 1, attrs ? "private" : "shared", strerror(-r),
			 (unsigned long long)err_off);
		return KSFT_FAIL;
	}
	return KSFT_PASS;
}

/*
 * Pages [first, first + n) must SIGBUS; every other page must read @seed's
 * pattern. The pages are only read, so nothing is allocated by the check.
 */
static bool check_private_pages(struct gfile *g, size_t first, size_t n, uint8_t seed,
				char *why, size_t whylen)
{
	for (size_t i = 0; i < g->size / page; i++) {
		volatile uint8_t *p = g->map + i * page;
		bool private = i >= first && i < first + n;
		long bad;

		if (private) {
			if (!gmem_sigbus(p, false) || !gmem_sigbus(p + page - 1, true)) {
				snprintf(why, whylen, "page %zu is private, but the host can touch it", i);
				return false;
			}
		} else if ((bad = gmem_check(g->map, i * page, (i + 1) * page, seed)) >= 0) {
			snprintf(why, whylen, "shared page %zu differs at byte %ld%s", i, bad,
				 gmem_sigbus(p, false) ? " (SIGBUS)" : "");
			return false;
		}
	}
	return true;
}

/*
 * Fill the file, make [first, first + n) private, check that only those pages
 * are out of the host's reach, share them again and check that every page
 * kept its contents. Then a second round with new data.
 */
static int round_trip(size_t first, size_t n, char *why, size_t whylen)
{
	struct gfile g;
	int r;

	r = shared_file(&g, NPAGES, why, whylen);
	for (uint8_t seed = 0x31; r == KSFT_PASS && seed <= 0x32; seed++) {
		gmem_fill(g.map, 0, g.size, seed);
		r = convert(g.fd, first, n, PRIVATE, why, whylen);
		if (r == KSFT_PASS && !check_private_pages(&g, first, n, seed, why, whylen))
			r = KSFT_FAIL;
		if (r == KSFT_PASS)
			r = convert(g.fd, first, n, 0, why, whylen);
		if (r == KSFT_PASS && !check_private_pages(&g, 0, 0, seed, why, whylen)) {
			strncat(why, " (after sharing it again: contents must be preserved)",
				whylen - strlen(why) - 1);
			r = KSFT_FAIL;
		}
	}
	gfile_close(&g);
	return r;
}

static int round_trip_page(char *why, size_t whylen)
{
	return round_trip(5, 1, why, whylen);
}

static int round_trip_range(char *why, size_t whylen)
{
	return round_trip(2, 9, why, whylen);
}

static int round_trip_whole_file(char *why, size_t whylen)
{
	return round_trip(0, NPAGES, why, whylen);
}

/*
 * Converting what already has the attributes is a no-op that succeeds, and
 * a range half shared, half private becomes all private.
 */
static int convert_mixed_range(char *why, size_t whylen)
{
	struct gfile g;
	int r;

	r = shared_file(&g, NPAGES, why, whylen);
	if (r == KSFT_PASS) {
		gmem_fill(g.map, 0, g.size, 0x41);
		r = convert(g.fd, 4, 4, PRIVATE, why, whylen);
	}
	if (r == KSFT_PASS)
		r = convert(g.fd, 4, 4, PRIVATE, why, whylen);
	if (r == KSFT_PASS)
		r = convert(g.fd, 0, 6, PRIVATE, why, whylen);
	if (r == KSFT_PASS && !check_private_pages(&g, 0, 8, 0x41, why, whylen))
		r = KSFT_FAIL;
	if (r == KSFT_PASS)
		r = convert(g.fd, 2, 2, 0, why, whylen);
	if (r == KSFT_PASS) {
		/* Pages 2-3 shared again, 0-1 and 4-7 still private. */
		for (size_t i = 0; i < 8 && r == KSFT_PASS; i++) {
			bool private = i < 2 || i >= 4;

			if (gmem_sigbus(g.map + i * page, false) != private) {
				snprintf(why, whylen, "page %zu: %s, want %s", i,
					 private ? "readable" : "SIGBUS", private ? "SIGBUS" : "readable");
				r = KSFT_FAIL;
			}
		}
	}
	gfile_close(&g);
	return r;
}

/* How many pages of @fd are in its page cache: cachestat(), -1 without it. */
static long cached_pages(int fd, size_t size)
{
	return gmem_cached_pages(fd, 0, size);
}

/*
 * A guest_memfd created without INIT_SHARED starts out all private: every
 * touch is SIGBUS and allocates nothing (cachestat(); without it, the
 * count of typed folios; with neither, the case fails); shared, each page reads zero on first touch and keeps what is
 * written; private again, SIGBUS.
 */
static int private_by_default(char *why, size_t whylen)
{
	struct gfile g;
	long cached, typed;
	int r;

	r = gfile_open(&g, kvm_fd, KVM_X86_SW_PROTECTED_VM, GUEST_MEMFD_FLAG_MMAP, NPAGES * page,
		       why, whylen);
	typed = gmem_has_mm_hook() ? gmem_counter(GMEM_TYPED) : -1;
	if (r == KSFT_PASS && !check_private_pages(&g, 0, NPAGES, 0, why, whylen))
		r = KSFT_FAIL;
	cached = r == KSFT_PASS ? cached_pages(g.fd, g.size) : -1;
	if (cached > 0) {
		snprintf(why, whylen, "touching private pages allocated %ld of them", cached);
		r = KSFT_FAIL;
	}
	/* Without cachestat(), the count of typed folios (mm-shim hook). */
	if (r == KSFT_PASS && cached < 0) {
		if (typed < 0) {
			snprintf(why, whylen, "no allocation probe: neither cachestat() nor %s", GMEM_TYPED);
			r = KSFT_FAIL;
		} else if (gmem_counter(GMEM_TYPED) != typed) {
			snprintf(why, whylen, "touching private pages typed %ld folios",
				 gmem_counter(GMEM_TYPED) - typed);
			r = KSFT_FAIL;
		}
	}
	if (r == KSFT_PASS)
		r = convert(g.fd, 0, NPAGES, 0, why, whylen);
	if (r == KSFT_PASS && gmem_check_zero(g.map, 0, g.size) >= 0) {
		snprintf(why, whylen, "a page shared for the first time is not zero");
		r = KSFT_FAIL;
	}
	if (r == KSFT_PASS) {
		gmem_fill(g.map, 0, g.size, 0x51);
		if (cached >= 0 && cached_pages(g.fd, g.size) != NPAGES) {
			snprintf(why, whylen, "cachestat() counts %ld pages after filling %d: the probe is blind",
				 cached_pages(g.fd, g.size), NPAGES);
			r = KSFT_FAIL;
		}
	}
	if (r == KSFT_PASS)
		r = convert(g.fd, 0, NPAGES, PRIVATE, why, whylen);
	if (r == KSFT_PASS && !check_private_pages(&g, 0, NPAGES, 0, why, whylen))
		r = KSFT_FAIL;
	gfile_close(&g);
	return r;
}

/* Every malformed request is EINVAL (EFAULT for a bad pointer) and changes nothing. */
static int bad_requests(char *why, size_t whylen)
{
	struct {
		const char *what;
		struct kvm_memory_attributes2 a;
		int err;
	} bad[] = {
		{ "flags 1", { .size = 4096, .attributes = PRIVATE, .flags = 1 }, EINVAL },
		{ "attributes 1 << 0", { .size = 4096, .attributes = 1 }, EINVAL },
		{ "reserved[0] 1", { .size = 4096, .attributes = PRIVATE, .reserved = { 1 } }, EINVAL },
		{ "reserved[10] 1", { .size = 4096, .attributes = PRIVATE, .reserved[10] = 1 }, EINVAL },
		{ "size 0", { .size = 0, .attributes = PRIVATE }, EINVAL },
		{ "offset 1", { .offset = 1, .size = 4096, .attributes = PRIVATE }, EINVAL },
		{ "size 4095", { .size = 4095, .attributes = PRIVATE }, EINVAL },
		{ "offset at EOF", { .offset = NPAGES * 4096, .size = 4096, .attributes = PRIVATE }, EINVAL },
		{ "past EOF", { .offset = 4096, .size = NPAGES * 4096, .attributes = PRIVATE }, EINVAL },
		{ "wrapping", { .offset = 4096, .size = -4096ULL, .attributes = PRIVATE }, EINVAL },
	};
	struct gfile g;
	int r;

	r = shared_file(&g, NPAGES, why, whylen);
	if (r == KSFT_PASS)
		gmem_fill(g.map, 0, g.size, 0x61);
	for (size_t i = 0; r == KSFT_PASS && i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (!ioctl(g.fd, KVM_SET_MEMORY_ATTRIBUTES2, &bad[i].a) || errno != bad[i].err) {
			snprintf(why, whylen, "%s: %s, want %s", bad[i].what,
				 errno ? strerror(errno) : "accepted", strerror(bad[i].err));
			r = KSFT_FAIL;
		}
		errno = 0;
	}
	if (r == KSFT_PASS && (!ioctl(g.fd, KVM_SET_MEMORY_ATTRIBUTES2, (void *)8) || errno != EFAULT)) {
		snprintf(why, whylen, "a bad pointer: %s, want EFAULT", strerror(errno));
		r = KSFT_FAIL;
	}
	if (r == KSFT_PASS && !check_private_pages(&g, 0, 0, 0x61, why, whylen))
		r = KSFT_FAIL;
	gfile_close(&g);
	return r;
}

/*
 * Capabilities with the parameter on: /dev/kvm and a SW_PROTECTED VM report
 * KVM_MEMORY_ATTRIBUTE_PRIVATE in KVM_CAP_GUEST_MEMFD_MEMORY_ATTRIBUTES and no
 * VM-wide KVM_CAP_MEMORY_ATTRIBUTES, and offer INIT_SHARED; a default VM
 * (no private memory) converts nothing. A SW_PROTECTED VM created with the
 * parameter off keeps the old ABI while it is on again: no conversion
 * (ENOTTY on its guest_memfd), VM-wide attributes.
 */
static int caps(char *why, size_t whylen)
{
	int vm_on = -1, vm_off = -1, vm_default = -1, fd = -1, r = KSFT_FAIL;
	int c;

	vm_on = ioctl(kvm_fd, KVM_CREATE_VM, KVM_X86_SW_PROTECTED_VM);
	vm_default = ioctl(kvm_fd, KVM_CREATE_VM, 0);
	if (!param_set(false) || (vm_off = ioctl(kvm_fd, KVM_CREATE_VM, KVM_X86_SW_PROTECTED_VM)) < 0 ||
	    !param_set(true) || vm_on < 0 || vm_default < 0) {
		snprintf(why, whylen, "creating the VMs: %s", strerror(errno));
		goto out;
	}
	if ((c = kvm_cap(kvm_fd, KVM_CAP_GUEST_MEMFD_MEMORY_ATTRIBUTES)) != PRIVATE) {
		snprintf(why, whylen, "/dev/kvm: KVM_CAP_GUEST_MEMFD_MEMORY_ATTRIBUTES %d, want %llu", c, PRIVATE);
		goto out;
	}
	/*
	 * As the conversion series' v8 does: while conversion is in place,
	 * no VM type has VM-level attributes, and /dev/kvm says so.
	 */
	if ((c = kvm_cap(kvm_fd, KVM_CAP_MEMORY_ATTRIBUTES)) != 0 ||
	    kvm_cap(vm_default, KVM_CAP_MEMORY_ATTRIBUTES) != 0) {
		snprintf(why, whylen, "in place: KVM_CAP_MEMORY_ATTRIBUTES %d on /dev/kvm, %d on a default VM, want 0",
			 c, kvm_cap(vm_default, KVM_CAP_MEMORY_ATTRIBUTES));
		goto out;
	}
	if ((c = kvm_cap(vm_on, KVM_CAP_GUEST_MEMFD_MEMORY_ATTRIBUTES)) != PRIVATE ||
	    kvm_cap(vm_on, KVM_CAP_MEMORY_ATTRIBUTES) != 0) {
		snprintf(why, whylen, "SW_PROTECTED VM: KVM_CAP_GUEST_MEMFD_MEMORY_ATTRIBUTES %d (want %llu), KVM_CAP_MEMORY_ATTRIBUTES %d (want 0)",
			 c, PRIVATE, kvm_cap(vm_on, KVM_CAP_MEMORY_ATTRIBUTES));
		goto out;
	}
	if (!gmem_has_flags(vm_on, GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED)) {
		snprintf(why, whylen, "SW_PROTECTED VM: KVM_CAP_GUEST_MEMFD_FLAGS %#x lacks MMAP | INIT_SHARED",
			 kvm_cap(vm_on, KVM_CAP_GUEST_MEMFD_FLAGS));
		goto out;
	}
	if ((c = kvm_cap(vm_default, KVM_CAP_GUEST_MEMFD_MEMORY_ATTRIBUTES)) != 0) {
		snprintf(why, whylen, "default VM: KVM_CAP_GUEST_MEMFD_MEMORY_ATTRIBUTES %d, want 0", c);
		goto out;
	}
	if ((c = kvm_cap(vm_off, KVM_CAP_GUEST_MEMFD_MEMORY_ATTRIBUTES)) != 0 ||
	    kvm_cap(vm_off, KVM_CAP_MEMORY_ATTRIBUTES) != PRIVATE) {
		snprintf(why, whylen, "SW_PROTECTED VM made with the parameter off: KVM_CAP_GUEST_MEMFD_MEMORY_ATTRIBUTES %d (want 0), KVM_CAP_MEMORY_ATTRIBUTES %d (want %llu)",
			 c, kvm_cap(vm_off, KVM_CAP_MEMORY_ATTRIBUTES), PRIVATE);
		goto out;
	}
	fd = gmem_create(vm_off, NPAGES * page, GUEST_MEMFD_FLAG_MMAP);
	if (fd < 0) {
		snprintf(why, whylen, "guest_memfd of the VM made with the parameter off: %s", strerror(-fd));
		goto out;
	}
	if ((c = gmem_set_attrs(fd, 0, page, PRIVATE, NULL)) != -ENOTTY) {
		snprintf(why, whylen, "KVM_SET_MEMORY_ATTRIBUTES2 on the VM made with the parameter off: %s, want ENOTTY",
			 c ? strerror(-c) : "accepted");
		goto out;
	}
	close(fd);
	fd = gmem_create(vm_default, NPAGES * page, GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED);
	if (fd < 0 || (c = gmem_set_attrs(fd, 0, page, PRIVATE, NULL)) != -ENOTTY) {
		snprintf(why, whylen, "KVM_SET_MEMORY_ATTRIBUTES2 on a default VM's guest_memfd: %s, want ENOTTY",
			 fd < 0 ? strerror(-fd) : c ? strerror(-c) : "accepted");
		goto out;
	}
	/* And with it off, /dev/kvm has them again (SW_PROTECTED VMs do). */
	if (!param_set(false) || (c = kvm_cap(kvm_fd, KVM_CAP_MEMORY_ATTRIBUTES)) != PRIVATE) {
		snprintf(why, whylen, "parameter off: /dev/kvm KVM_CAP_MEMORY_ATTRIBUTES %d, want %llu", c, PRIVATE);
		goto out;
	}
	r = KSFT_PASS;
out:
	if (fd >= 0)
		close(fd);
	if (vm_on >= 0)
		close(vm_on);
	if (vm_off >= 0)
		close(vm_off);
	if (vm_default >= 0)
		close(vm_default);
	param_set(true);
	return r;
}

/*
 * An extra reference on one page fails a conversion of the range with EAGAIN
 * and that page's offset in error_offset, and leaves the range shared (no
 * page SIGBUSes, contents intact); once the reference is dropped, the same
 * conversion succeeds. @pin takes the reference on page @pinned and returns
 * a handle, @unpin drops it.
 */
static int eagain_until_released(int (*pin)(volatile uint8_t *p, char *why, size_t whylen),
				 void (*unpin)(int handle), size_t pinned, double *fail_ms,
				 char *why, size_t whylen)
{
	uint64_t err_off = 0;
	struct gfile g;
	int r, h = -1, e;
	double t0;

	r = shared_file(&g, NPAGES, why, whylen);
	if (r == KSFT_PASS) {
		gmem_fill(g.map, 0, g.size, 0x71);
		h = pin(g.map + pinned * page, why, whylen);
		if (h < 0)
			r = KSFT_FAIL;
	}
	if (r == KSFT_PASS) {
		t0 = gmem_now();
		e = gmem_set_attrs(g.fd, 2 * page, 8 * page, PRIVATE, &err_off);
		if (fail_ms)
			*fail_ms = (gmem_now() - t0) * 1000;
		if (e != -EAGAIN || err_off != pinned * page) {
			snprintf(why, whylen, "converting pages 2-9 with page %zu referenced: %s, error_offset %#llx; want EAGAIN, %#lx",
				 pinned, e ? strerror(-e) : "success", (unsigned long long)err_off,
				 pinned * page);
			r = KSFT_FAIL;
		}
	}
	if (r == KSFT_PASS && !check_private_pages(&g, 0, 0, 0x71, why, whylen)) {
		strncat(why, " (after the failed conversion)", whylen - strlen(why) - 1);
		r = KSFT_FAIL;
	}
	if (h >= 0)
		unpin(h);
	if (r == KSFT_PASS)
		r = convert(g.fd, 2, 8, PRIVATE, why, whylen);
	if (r == KSFT_PASS && !check_private_pages(&g, 2, 8, 0x71, why, whylen))
		r = KSFT_FAIL;
	gfile_close(&g);
	return r;
}

/* vmsplice() of a page into a pipe: the pipe references it until it is read. */
static int pin_vmsplice(volatile uint8_t *p, char *why, size_t whylen)
{
	struct iovec iov = { .iov_base = (void *)p, .iov_len = page };
	int fds[2];

	if (pipe(fds)) {
		snprintf(why, whylen, "pipe: %s", strerror(errno));
		return -1;
	}
	if (vmsplice(fds[1], &iov, 1, 0) != page) {
		snprintf(why, whylen, "vmsplice: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	close(fds[1]);
	return fds[0];
}

static void unpin_pipe(int fd)
{
	char buf[4096];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
}

static int eagain_vmsplice(char *why, size_t whylen)
{
	return eagain_until_released(pin_vmsplice, unpin_pipe, 6, NULL, why, whylen);
}

/* io_uring fixed buffers: a FOLL_LONGTERM pin until they are unregistered. */
static int pin_io_uring(volatile uint8_t *p, char *why, size_t whylen)
{
	struct io_uring_params params = { 0 };
	struct iovec iov = { .iov_base = (void *)p, .iov_len = page };
	int ring = syscall(__NR_io_uring_setup, 1, &params);

	if (ring < 0) {
		snprintf(why, whylen, "io_uring_setup: %s", strerror(errno));
		return -1;
	}
	if (syscall(__NR_io_uring_register, ring, IORING_REGISTER_BUFFERS, &iov, 1)) {
		snprintf(why, whylen, "IORING_REGISTER_BUFFERS on a guest_memfd page: %s", strerror(errno));
		close(ring);
		return -1;
	}
	return ring;
}

static void unpin_io_uring(int ring)
{
	syscall(__NR_io_uring_register, ring, IORING_UNREGISTER_BUFFERS, NULL, 0);
	close(ring);
}

/*
 * A long-term pin outlasts any wait: EAGAIN on both kernels, at once on
 * Debian's, after kvm.gmem_conversion_wait_ms (WAIT_MS here) on the shim's.
 */
static int eagain_longterm_pin(char *why, size_t whylen)
{
	/* Only the conversion that fails is timed, not the setup around it. */
	double ms = 0;
	int r = eagain_until_released(pin_io_uring, unpin_io_uring, 9, &ms, why, whylen);

	if (r == KSFT_PASS && waits && ms < WAIT_MS * 0.9) {
		snprintf(why, whylen, "EAGAIN after %.0f ms: the mm-shim kernel must wait %d ms first",
			 ms, WAIT_MS);
		r = KSFT_FAIL;
	}
	if (r == KSFT_PASS && !waits && ms > WAIT_MS / 2) {
		snprintf(why, whylen, "EAGAIN after %.0f ms: without mm's reports it must come at once",
			 ms);
		r = KSFT_FAIL;
	}
	return r;
}

struct drain {
	int fd, delay_ms;
};

static void *drain_later(void *arg)
{
	struct drain *d = arg;

	usleep(d->delay_ms * 1000);
	unpin_pipe(d->fd);
	return NULL;
}

/*
 * A transient reference that goes by itself while the conversion runs: a
 * page spliced into a pipe that another thread drains DRAIN_MS later. On the
 * mm-shim kernel the conversion waits for it and succeeds, no retry needed,
 * returning only once the pipe let go; on Debian's it fails at once with
 * EAGAIN and the page's offset, as upstream.
 */
#define DRAIN_MS	150
static int transient_ref_waited(char *why, size_t whylen)
{
	struct drain d = { .delay_ms = DRAIN_MS };
	uint64_t err_off = 0;
	pthread_t thread;
	struct gfile g;
	double t0, ms;
	int r, e;

	r = shared_file(&g, NPAGES, why, whylen);
	if (r != KSFT_PASS)
		goto out;
	gmem_fill(g.map, 0, g.size, 0x75);
	d.fd = pin_vmsplice(g.map + 6 * page, why, whylen);
	if (d.fd < 0) {
		r = KSFT_FAIL;
		goto out;
	}
	pthread_create(&thread, NULL, drain_later, &d);
	t0 = gmem_now();
	e = gmem_set_attrs(g.fd, 2 * page, 8 * page, PRIVATE, &err_off);
	ms = (gmem_now() - t0) * 1000;
	pthread_join(thread, NULL);
	if (waits && (e || ms < DRAIN_MS * 0.8)) {
		snprintf(why, whylen, "mm-shim kernel: %s after %.0f ms (error_offset %#llx); want success once the pipe is drained (%d ms)",
			 e ? strerror(-e) : "success", ms, (unsigned long long)err_off, DRAIN_MS);
		r = KSFT_FAIL;
	} else if (!waits && (e != -EAGAIN || err_off != (uint64_t)(6 * page) || ms > DRAIN_MS / 2)) {
		snprintf(why, whylen, "%s after %.0f ms, error_offset %#llx; want EAGAIN at once for page 6 (%#lx)",
			 e ? strerror(-e) : "success", ms, (unsigned long long)err_off, 6 * page);
		r = KSFT_FAIL;
	} else if (!waits) {
		r = convert(g.fd, 2, 8, PRIVATE, why, whylen);
	}
	if (r == KSFT_PASS && !check_private_pages(&g, 2, 8, 0x75, why, whylen))
		r = KSFT_FAIL;
	if (r == KSFT_PASS)
		snprintf(why, whylen, "%s after %.0f ms", e ? "EAGAIN" : "converted", ms);
out:
	gfile_close(&g);
	return r;
}

/* Slot 0 at GPA 0: vm->gmem, MEM_SIZE bytes, userspace_addr @hva. */
static bool bind_gmem(struct vm *vm, void *hva, char *why, size_t whylen)
{
	struct kvm_userspace_memory_region2 region = {
		.slot = 0,
		.flags = KVM_MEM_GUEST_MEMFD,
		.memory_size = MEM_SIZE,
		.userspace_addr = (uintptr_t)hva,
		.guest_memfd = vm->gmem,
	};

	if (ioctl(vm->vm, KVM_SET_USER_MEMORY_REGION2, &region)) {
		snprintf(why, whylen, "KVM_SET_USER_MEMORY_REGION2: %s", strerror(errno));
		return false;
	}
	return true;
}

/*
 * KVM's view follows the file: a SW_PROTECTED VM whose guest_memfd is not
 * mappable (flags 0, all private), bound with userspace_addr on the test's
 * own memory, as VMMs did before in-place conversion. KVM takes private
 * pages from guest_memfd and shared ones from userspace_addr, so whether the
 * guest sees the host's pattern on its data page says which one KVM thinks
 * it is: private (zeroes from guest_memfd: mismatch), shared after
 * KVM_SET_MEMORY_ATTRIBUTES2 (the pattern: match), private again (mismatch).
 * The code and parameter pages are converted to shared so the host can write
 * them.
 */
static int kvm_follows_the_file(char *why, size_t whylen)
{
	struct vm vm = { .kvm = kvm_fd, .vm = -1, .vcpu = -1, .gmem = -1 };
	volatile uint8_t *mem;
	int r = KSFT_FAIL, fd;

	vm.vm = ioctl(kvm_fd, KVM_CREATE_VM, KVM_X86_SW_PROTECTED_VM);
	if (vm.vm < 0) {
		snprintf(why, whylen, "KVM_CREATE_VM: %s", strerror(errno));
		goto out;
	}
	fd = gmem_create(vm.vm, MEM_SIZE, 0);
	if (fd < 0) {
		snprintf(why, whylen, "KVM_CREATE_GUEST_MEMFD(0): %s", strerror(-fd));
		goto out;
	}
	vm.gmem = fd;
	mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		snprintf(why, whylen, "mmap(anonymous): %s", strerror(errno));
		goto out;
	}
	vm.mem = mem;
	if (!bind_gmem(&vm, (void *)mem, why, whylen))
		goto out;
	memcpy((void *)(mem + CODE_GPA), guest_code, sizeof(guest_code));
	host_fill(&vm, 0x81, 3);
	if (convert(vm.gmem, CODE_GPA / page, 1, 0, why, whylen) != KSFT_PASS ||
	    convert(vm.gmem, PARAM_GPA / page, 1, 0, why, whylen) != KSFT_PASS)
		goto out;
	if (vm_create_vcpu(&vm, why, whylen) != KSFT_PASS ||
	    vcpu_real_mode_at_code(vm.vcpu, why, whylen) != KSFT_PASS)
		goto out;
	if (!expect_round(&vm, 0x81, 3, STATUS_MISMATCH, DATA_GPA, 1, why, whylen)) {
		strncat(why, " (data page private: the guest must see guest_memfd's zeroes)",
			whylen - strlen(why) - 1);
		goto out;
	}
	if (convert(vm.gmem, DATA_GPA / page, 1, 0, why, whylen) != KSFT_PASS)
		goto out;
	if (!expect_round(&vm, 0x81, 3, STATUS_MATCH, DATA_GPA + DATA_LEN, 2, why, whylen)) {
		strncat(why, " (data page shared: the guest must see the host's pattern)",
			whylen - strlen(why) - 1);
		goto out;
	}
	if (convert(vm.gmem, DATA_GPA / page, 1, PRIVATE, why, whylen) != KSFT_PASS)
		goto out;
	if (!expect_round(&vm, 0x81, 3, STATUS_MISMATCH, DATA_GPA, 3, why, whylen)) {
		strncat(why, " (data page private again)", whylen - strlen(why) - 1);
		goto out;
	}
	r = KSFT_PASS;
out:
	vm.kvm = -1;	/* the test's, closed in main() */
	vm_teardown(&vm);
	return r;
}

/*
 * One copy: a SW_PROTECTED VM's MMAP | INIT_SHARED guest_memfd, bound as a
 * gmem-only memslot with userspace_addr on the test's other memory (a
 * decoy of 0xa5). The host fills the data page and converts it to private:
 * the guest sees the host's data (conversion preserves it, and private
 * memory is the same page), the host cannot touch it; shared again, the host
 * reads it back; new host data, private again, and the guest sees that.
 */
static int vcpu_in_place(char *why, size_t whylen)
{
	struct vm vm = { .kvm = kvm_fd, .vm = -1, .vcpu = -1, .gmem = -1 };
	int r = KSFT_FAIL;

	if (vm_create_with_gmem(&vm, KVM_X86_SW_PROTECTED_VM,
				GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED, why, whylen) != KSFT_PASS ||
	    !vm_map_decoy(&vm, why, whylen))
		goto out;
	if (!bind_gmem(&vm, (void *)vm.other, why, whylen))
		goto out;
	memcpy((void *)(vm.mem + CODE_GPA), guest_code, sizeof(guest_code));
	if (vm_create_vcpu(&vm, why, whylen) != KSFT_PASS ||
	    vcpu_real_mode_at_code(vm.vcpu, why, whylen) != KSFT_PASS)
		goto out;

	for (int round = 1; round <= 2; round++) {
		uint8_t seed = 0x90 + round;

		host_fill(&vm, seed, 7);
		if (convert(vm.gmem, DATA_GPA / page, 1, PRIVATE, why, whylen) != KSFT_PASS)
			goto out;
		if (!gmem_sigbus(vm.mem + DATA_GPA, false)) {
			snprintf(why, whylen, "round %d: the private data page is readable by the host", round);
			goto out;
		}
		if (!expect_round(&vm, seed, 7, STATUS_MATCH, DATA_GPA + DATA_LEN, round, why, whylen))
			goto out;
		if (convert(vm.gmem, DATA_GPA / page, 1, 0, why, whylen) != KSFT_PASS)
			goto out;
		for (unsigned int i = 0; i < DATA_LEN; i++) {
			if (vm.mem[DATA_GPA + i] != (uint8_t)(seed + i * 7)) {
				snprintf(why, whylen, "round %d: shared again, the data page differs at byte %u",
					 round, i);
				goto out;
			}
		}
	}
	for (size_t i = 0; i < MEM_SIZE; i++) {
		if (((uint8_t *)vm.other)[i] != 0xa5) {
			snprintf(why, whylen, "the memory behind userspace_addr changed at %#zx", i);
			goto out;
		}
	}
	r = KSFT_PASS;
out:
	vm.kvm = -1;
	vm_teardown(&vm);
	return r;
}

/*
 * The guest asks for the conversions, as a confidential guest does: with
 * KVM_HC_MAP_GPA_RANGE exits enabled, a real-mode guest makes its data page
 * private (hypercall 12, KVM_MAP_GPA_RANGE_ENCRYPTED), increments the byte
 * the host left there, makes the page shared again (DECRYPTED) and reports.
 * The VMM converts the guest_memfd in place on each exit: while the page is
 * private the host cannot touch it, and afterwards it reads the guest's
 * increment of its own byte, from the one copy there is.
 */
static const uint8_t hypercall_guest[] = {
	0x66, 0xbb, 0x00, 0x20, 0x00, 0x00,	/* mov $DATA_GPA, %ebx       */
	0x66, 0xb9, 0x01, 0x00, 0x00, 0x00,	/* mov $1, %ecx   (pages)    */
	0x66, 0xba, 0x10, 0x00, 0x00, 0x00,	/* mov $0x10, %edx (ENCRYPTED) */
	0x66, 0xb8, 0x0c, 0x00, 0x00, 0x00,	/* mov $12, %eax  (MAP_GPA_RANGE) */
	0x0f, 0x01, 0xd9,			/* vmmcall                   */
	0xfe, 0x06, 0x00, 0x20,			/* incb DATA_GPA             */
	0x66, 0xba, 0x20, 0x00, 0x00, 0x00,	/* mov $0x20, %edx (DECRYPTED) */
	0x66, 0xb8, 0x0c, 0x00, 0x00, 0x00,	/* mov $12, %eax             */
	0x0f, 0x01, 0xd9,			/* vmmcall                   */
	0xe6, 0x10,				/* out %al, $0x10            */
	0xf4,					/* hlt                       */
};

#define KVM_HC_MAP_GPA_RANGE		12
#define MAP_GPA_RANGE_ENCRYPTED		(1 << 4)
#define MAP_GPA_RANGE_DECRYPTED		(1 << 5)

static int guest_converts_via_hypercall(char *why, size_t whylen)
{
	struct kvm_enable_cap cap = {
		.cap = KVM_CAP_EXIT_HYPERCALL, .args[0] = 1 << KVM_HC_MAP_GPA_RANGE,
	};
	struct vm vm = { .kvm = kvm_fd, .vm = -1, .vcpu = -1, .gmem = -1 };
	int r = KSFT_FAIL, hypercalls = 0;

	if (vm_create_with_gmem(&vm, KVM_X86_SW_PROTECTED_VM,
				GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED, why, whylen) != KSFT_PASS)
		goto out;
	if (ioctl(vm.vm, KVM_ENABLE_CAP, &cap)) {
		snprintf(why, whylen, "KVM_CAP_EXIT_HYPERCALL: %s", strerror(errno));
		goto out;
	}
	if (!bind_gmem(&vm, (void *)vm.mem, why, whylen))
		goto out;
	memcpy((void *)(vm.mem + CODE_GPA), hypercall_guest, sizeof(hypercall_guest));
	vm.mem[DATA_GPA] = 0x41;
	if (vm_create_vcpu(&vm, why, whylen) != KSFT_PASS ||
	    vcpu_real_mode_at_code(vm.vcpu, why, whylen) != KSFT_PASS)
		goto out;

	for (int exits = 0; exits < MAX_EXITS; exits++) {
		struct kvm_run *run = vm.run;
		bool private;

		if (ioctl(vm.vcpu, KVM_RUN, 0)) {
			if (errno == EINTR)
				continue;
			snprintf(why, whylen, "KVM_RUN: %s (exit %u)", strerror(errno), run->exit_reason);
			goto out;
		}
		if (run->exit_reason == KVM_EXIT_INTR)
			continue;
		if (run->exit_reason == KVM_EXIT_IO && run->io.port == IO_PORT)
			break;
		if (run->exit_reason != KVM_EXIT_HYPERCALL ||
		    run->hypercall.nr != KVM_HC_MAP_GPA_RANGE ||
		    run->hypercall.args[0] != DATA_GPA || run->hypercall.args[1] != 1) {
			snprintf(why, whylen, "exit %u (%s), hypercall %llu args %#llx %#llx",
				 run->exit_reason, exit_name(run->exit_reason),
				 (unsigned long long)run->hypercall.nr,
				 (unsigned long long)run->hypercall.args[0],
				 (unsigned long long)run->hypercall.args[1]);
			goto out;
		}
		private = run->hypercall.args[2] & MAP_GPA_RANGE_ENCRYPTED;
		if (private != (hypercalls == 0)) {
			snprintf(why, whylen, "hypercall %d asks for %s", hypercalls + 1,
				 private ? "private" : "shared");
			goto out;
		}
		if (convert(vm.gmem, DATA_GPA / page, 1, private ? PRIVATE : 0, why, whylen) != KSFT_PASS)
			goto out;
		if (private && !gmem_sigbus(vm.mem + DATA_GPA, false)) {
			snprintf(why, whylen, "the page the guest made private is readable by the host");
			goto out;
		}
		run->hypercall.ret = 0;
		hypercalls++;
	}
	if (hypercalls != 2) {
		snprintf(why, whylen, "the guest reported after %d hypercalls, want 2", hypercalls);
		goto out;
	}
	if (host_read(vm.mem + DATA_GPA) != 0x42) {
		snprintf(why, whylen, "shared again, the data byte is %d, want 0x42 (the host's 0x41, incremented by the guest while private)",
			 host_read(vm.mem + DATA_GPA));
		goto out;
	}
	r = KSFT_PASS;
out:
	vm.kvm = -1;
	vm_teardown(&vm);
	return r;
}

#define POISON_FILE	512	/* 2 MiB */
#define POISON_PAGES	12

struct converter {
	int fd;
	int rounds, eagain;
	atomic_bool stop;
	char failure[200];
};

/* Make the whole file private and shared again until told; EAGAIN is fine. */
static void *convert_thread(void *arg)
{
	struct converter *c = arg;

	for (int i = 0; !atomic_load(&c->stop) && !c->failure[0]; i++, c->rounds++) {
		for (int priv = 1; priv >= 0; priv--) {
			int e = gmem_set_attrs(c->fd, 0, POISON_FILE * page, priv ? PRIVATE : 0, NULL);

			if (e == -EAGAIN)
				c->eagain++;
			else if (e)
				snprintf(c->failure, sizeof(c->failure), "round %d, to %s: %s", i,
					 priv ? "private" : "shared", strerror(-e));
		}
		/* Shared for a moment: the poisoner's chance. */
		usleep(5000);
	}
	return NULL;
}

/*
 * memory_failure() holds a folio's lock when it takes the invalidate lock
 * (kvm_gmem_error_folio()); a conversion holds the invalidate lock. One
 * thread converts a 2 MiB file back and forth while this one poisons pages
 * of it with MADV_HWPOISON: both must finish (lockdep does not see folio
 * locks, so only finishing shows there is no ABBA deadlock).
 */
static int hwpoison_during_conversions(char *why, size_t whylen)
{
	struct converter c = { .rounds = 0 };
	int r, poisoned = 0, refused = 0, last_err = 0;
	pthread_t thread;
	struct gfile g;

	if (geteuid()) {
		snprintf(why, whylen, "MADV_HWPOISON needs root");
		return KSFT_FAIL;
	}
	r = shared_file(&g, POISON_FILE, why, whylen);
	if (r != KSFT_PASS)
		goto out;
	gmem_fill(g.map, 0, g.size, 0x29);
	c.fd = g.fd;
	if (pthread_create(&thread, NULL, convert_thread, &c)) {
		snprintf(why, whylen, "pthread_create failed");
		r = KSFT_FAIL;
		goto out;
	}
	for (int i = 0; i < POISON_PAGES && !why[0]; i++) {
		volatile uint8_t *p = g.map + (size_t)(7 + i * 41) * page;

		/* Until the page is shared when madvise() faults it in. */
		for (int tries = 0; tries < 200; tries++) {
			int e = gmem_poison_page(p);

			if (!e) {
				poisoned++;
				break;
			}
			if (e == -EPERM || e == -EINVAL) {
				snprintf(why, whylen, "MADV_HWPOISON: %s (needs CONFIG_MEMORY_FAILURE)",
					 strerror(-e));
				break;
			}
			refused++;	/* private right then: the host cannot reach it */
			last_err = e;
			usleep(1000);
		}
	}
	atomic_store(&c.stop, true);
	pthread_join(thread, NULL);
	if (why[0]) {
		r = KSFT_FAIL;
	} else if (c.failure[0]) {
		snprintf(why, whylen, "conversion: %s", c.failure);
		r = KSFT_FAIL;
	} else if (poisoned < POISON_PAGES / 2) {
		snprintf(why, whylen, "%d of %d pages got poisoned (%d refused, the last with %s)",
			 poisoned, POISON_PAGES, refused, strerror(-last_err));
		r = KSFT_FAIL;
	} else {
		ksft_print_msg("hwpoison_during_conversions: %d pages poisoned, %d refused, %d rounds, %d EAGAIN\n",
			       poisoned, refused, c.rounds, c.eagain);
	}
out:
	gfile_close(&g);
	return r;
}

/*
 * The cases below follow the in-place conversion series' own test
 * (guest_memfd_conversions_test, v13, next-20260923): its case names, our
 * checks. Its init_private is private_by_default above, its
 * elevated-refcount case eagain_vmsplice and eagain_longterm_pin.
 */

/*
 * A guest_memfd created with INIT_SHARED starts shared: every page reads
 * zero; made private, its data is out of reach and kept; shared again, the
 * data is back.
 */
static int init_shared(char *why, size_t whylen)
{
	struct gfile g;
	long bad;
	int r;

	r = shared_file(&g, NPAGES, why, whylen);
	if (r == KSFT_PASS && (bad = gmem_check_zero(g.map, 0, g.size)) >= 0) {
		snprintf(why, whylen, "a new INIT_SHARED file reads %#x at byte %ld, want zero",
			 g.map[bad], bad);
		r = KSFT_FAIL;
	}
	if (r == KSFT_PASS) {
		gmem_fill(g.map, 0, g.size, 0x73);
		r = convert(g.fd, 0, NPAGES, PRIVATE, why, whylen);
	}
	if (r == KSFT_PASS && !check_private_pages(&g, 0, NPAGES, 0, why, whylen))
		r = KSFT_FAIL;
	if (r == KSFT_PASS)
		r = convert(g.fd, 0, NPAGES, 0, why, whylen);
	if (r == KSFT_PASS && !check_private_pages(&g, 0, 0, 0x73, why, whylen))
		r = KSFT_FAIL;
	gfile_close(&g);
	return r;
}

#define INDEX_PAGES	4

/*
 * Each page has its own contents; converting page i changes page i only,
 * for every i: the others stay readable with their own contents, and page i
 * comes back with its own.
 */
static int indexing(char *why, size_t whylen)
{
	struct gfile g;
	int r;

	r = shared_file(&g, INDEX_PAGES, why, whylen);
	for (size_t j = 0; r == KSFT_PASS && j < INDEX_PAGES; j++)
		gmem_fill(g.map, j * page, (j + 1) * page, 0x20 + j);
	for (size_t i = 0; r == KSFT_PASS && i < INDEX_PAGES; i++) {
		r = convert(g.fd, i, 1, PRIVATE, why, whylen);
		for (size_t j = 0; r == KSFT_PASS && j < INDEX_PAGES; j++) {
			bool sigbus = gmem_sigbus(g.map + j * page, false);

			if (sigbus != (j == i) ||
			    (j != i && gmem_check(g.map, j * page, (j + 1) * page, 0x20 + j) >= 0)) {
				snprintf(why, whylen, "page %zu private: page %zu %s", i, j,
					 sigbus ? "SIGBUS" : j == i ? "readable" : "lost its contents");
				r = KSFT_FAIL;
			}
		}
		if (r == KSFT_PASS)
			r = convert(g.fd, i, 1, 0, why, whylen);
		if (r == KSFT_PASS && gmem_check(g.map, i * page, (i + 1) * page, 0x20 + i) >= 0) {
			snprintf(why, whylen, "page %zu shared again: its contents are lost", i);
			r = KSFT_FAIL;
		}
	}
	gfile_close(&g);
	return r;
}

/*
 * A VM of the in-place kind whose guest_memfd (MEM_SIZE, @flags) is bound
 * as a gmem-only memslot over a decoy, with its code and parameter pages
 * shared and written, and vCPU 0 ready. Pages of a file without
 * INIT_SHARED start private: the host shares the two it must write.
 */
static int conversion_vm(struct vm *vm, uint64_t flags, char *why, size_t whylen)
{
	int r;

	r = vm_create_with_gmem(vm, KVM_X86_SW_PROTECTED_VM, flags, why, whylen);
	if (r == KSFT_PASS && !vm_map_decoy(vm, why, whylen))
		r = KSFT_FAIL;
	if (r == KSFT_PASS && !(flags & GUEST_MEMFD_FLAG_INIT_SHARED))
		r = convert(vm->gmem, CODE_GPA / page, 1, 0, why, whylen);
	if (r == KSFT_PASS && !(flags & GUEST_MEMFD_FLAG_INIT_SHARED))
		r = convert(vm->gmem, PARAM_GPA / page, 1, 0, why, whylen);
	if (r == KSFT_PASS && !bind_gmem(vm, vm->other, why, whylen))
		r = KSFT_FAIL;
	if (r == KSFT_PASS) {
		memcpy((void *)(vm->mem + CODE_GPA), guest_code, sizeof(guest_code));
		r = vm_create_vcpu(vm, why, whylen);
	}
	if (r == KSFT_PASS)
		r = vcpu_real_mode_at_code(vm->vcpu, why, whylen);
	return r;
}

/*
 * Shared from the start, the data page is made private before anything
 * allocated it: the host cannot touch it, the guest reads zeroes; shared
 * again, the host reads zeroes too.
 */
static int before_allocation_shared(char *why, size_t whylen)
{
	struct vm vm = { .kvm = kvm_fd, .vm = -1, .vcpu = -1, .gmem = -1 };
	int r;

	r = conversion_vm(&vm, GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED, why, whylen);
	if (r == KSFT_PASS)
		r = convert(vm.gmem, DATA_GPA / page, 1, PRIVATE, why, whylen);
	if (r == KSFT_PASS && !gmem_sigbus(vm.mem + DATA_GPA, false)) {
		snprintf(why, whylen, "the data page, made private before its first use, is readable by the host");
		r = KSFT_FAIL;
	}
	if (r == KSFT_PASS &&
	    !expect_round(&vm, 0, 0, STATUS_MATCH, DATA_GPA + DATA_LEN, 1, why, whylen)) {
		strncat(why, " (the guest must read zeroes)", whylen - strlen(why) - 1);
		r = KSFT_FAIL;
	}
	if (r == KSFT_PASS)
		r = convert(vm.gmem, DATA_GPA / page, 1, 0, why, whylen);
	if (r == KSFT_PASS && !host_data_is_zero(&vm)) {
		snprintf(why, whylen, "shared again: the host does not read zeroes");
		r = KSFT_FAIL;
	}
	vm.kvm = -1;
	vm_teardown(&vm);
	return r;
}

/*
 * Private from the start (no INIT_SHARED), the data page is shared before
 * anything allocated it: the host reads zeroes and the guest does too; what
 * the host writes next is what the guest sees.
 */
static int before_allocation_private(char *why, size_t whylen)
{
	struct vm vm = { .kvm = kvm_fd, .vm = -1, .vcpu = -1, .gmem = -1 };
	int r;

	r = conversion_vm(&vm, GUEST_MEMFD_FLAG_MMAP, why, whylen);
	if (r == KSFT_PASS && !gmem_sigbus(vm.mem + DATA_GPA, false)) {
		snprintf(why, whylen, "the data page of a file without INIT_SHARED is readable by the host");
		r = KSFT_FAIL;
	}
	if (r == KSFT_PASS)
		r = convert(vm.gmem, DATA_GPA / page, 1, 0, why, whylen);
	if (r == KSFT_PASS && !host_data_is_zero(&vm)) {
		snprintf(why, whylen, "shared before its first use: the host does not read zeroes");
		r = KSFT_FAIL;
	}
	if (r == KSFT_PASS &&
	    !expect_round(&vm, 0, 0, STATUS_MATCH, DATA_GPA + DATA_LEN, 1, why, whylen))
		r = KSFT_FAIL;
	if (r == KSFT_PASS) {
		host_fill(&vm, 0x75, 5);
		if (!expect_round(&vm, 0x75, 5, STATUS_MATCH, DATA_GPA + DATA_LEN, 2, why, whylen))
			r = KSFT_FAIL;
	}
	vm.kvm = -1;
	vm_teardown(&vm);
	return r;
}

#define SPARSE_PAGES	8

/*
 * A range of which only some pages were ever allocated converts in one call
 * both ways: the allocated pages keep their data, the others read zero.
 */
static int unallocated_folios(char *why, size_t whylen)
{
	static const size_t used[] = { 2, 5 };
	struct gfile g;
	int r;

	r = shared_file(&g, SPARSE_PAGES, why, whylen);
	for (size_t k = 0; r == KSFT_PASS && k < 2; k++)
		gmem_fill(g.map, used[k] * page, (used[k] + 1) * page, 0x77);
	if (r == KSFT_PASS)
		r = convert(g.fd, 0, SPARSE_PAGES, PRIVATE, why, whylen);
	if (r == KSFT_PASS && !check_private_pages(&g, 0, SPARSE_PAGES, 0, why, whylen))
		r = KSFT_FAIL;
	for (size_t i = 0; r == KSFT_PASS && i < SPARSE_PAGES; i++) {
		bool was_used = i == used[0] || i == used[1];

		r = convert(g.fd, i, 1, 0, why, whylen);
		if (r == KSFT_PASS &&
		    (was_used ? gmem_check(g.map, i * page, (i + 1) * page, 0x77) :
				gmem_check_zero(g.map, i * page, (i + 1) * page)) >= 0) {
			snprintf(why, whylen, "page %zu, shared again: %s", i,
				 was_used ? "its data is lost" : "not zero");
			r = KSFT_FAIL;
		}
	}
	gfile_close(&g);
	return r;
}

/*
 * A punched hole keeps the pages' attributes: a shared page is still shared
 * (the host reads zeroes, no SIGBUS); a private page is still private (the
 * host cannot touch it) and the guest reads zeroes from it.
 */
static int truncate_keeps_attributes(char *why, size_t whylen)
{
	struct vm vm = { .kvm = kvm_fd, .vm = -1, .vcpu = -1, .gmem = -1 };
	int r;

	r = conversion_vm(&vm, GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED, why, whylen);
	if (r == KSFT_PASS) {
		host_fill(&vm, 0x79, 1);
		if (fallocate(vm.gmem, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, DATA_GPA, DATA_LEN)) {
			snprintf(why, whylen, "punch hole (shared): %s", strerror(errno));
			r = KSFT_FAIL;
		} else if (gmem_sigbus(vm.mem + DATA_GPA, false) || !host_data_is_zero(&vm)) {
			snprintf(why, whylen, "a punched shared page must stay shared and read zero");
			r = KSFT_FAIL;
		}
	}
	if (r == KSFT_PASS) {
		host_fill(&vm, 0x7b, 3);
		r = convert(vm.gmem, DATA_GPA / page, 1, PRIVATE, why, whylen);
	}
	if (r == KSFT_PASS &&
	    !expect_round(&vm, 0x7b, 3, STATUS_MATCH, DATA_GPA + DATA_LEN, 1, why, whylen))
		r = KSFT_FAIL;
	if (r == KSFT_PASS &&
	    fallocate(vm.gmem, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, DATA_GPA, DATA_LEN)) {
		snprintf(why, whylen, "punch hole (private): %s", strerror(errno));
		r = KSFT_FAIL;
	}
	if (r == KSFT_PASS && !gmem_sigbus(vm.mem + DATA_GPA, false)) {
		snprintf(why, whylen, "a punched private page became readable by the host");
		r = KSFT_FAIL;
	}
	if (r == KSFT_PASS &&
	    !expect_round(&vm, 0, 0, STATUS_MATCH, DATA_GPA + DATA_LEN, 2, why, whylen)) {
		strncat(why, " (a punched private page must read zero to the guest)",
			whylen - strlen(why) - 1);
		r = KSFT_FAIL;
	}
	vm.kvm = -1;
	vm_teardown(&vm);
	return r;
}

/*
 * A forked child maps the file itself and reads the parent's data; after
 * the parent makes the page private, the child's reads and writes SIGBUS,
 * as the parent's do.
 */
static int forked_accesses(char *why, size_t whylen)
{
	int to_child[2] = { -1, -1 }, to_parent[2] = { -1, -1 }, status;
	struct gfile g;
	char c = 0;
	pid_t pid = -1;
	int r;

	r = shared_file(&g, NPAGES, why, whylen);
	if (r == KSFT_PASS && (pipe(to_child) || pipe(to_parent))) {
		snprintf(why, whylen, "pipe: %s", strerror(errno));
		r = KSFT_FAIL;
	}
	if (r == KSFT_PASS) {
		gmem_fill(g.map, 0, page, 0x7d);
		pid = fork();
		if (pid < 0) {
			snprintf(why, whylen, "fork: %s", strerror(errno));
			r = KSFT_FAIL;
		}
	}
	if (pid == 0) {
		volatile uint8_t *m = gmem_map(g.fd, page);
		/* 1: mapped and read the data, 2: SIGBUS both ways after. */
		char ok = m != MAP_FAILED && gmem_check(m, 0, page, 0x7d) < 0;

		if (write(to_parent[1], &ok, 1) != 1 || read(to_child[0], &c, 1) != 1 || !ok)
			_exit(1);
		_exit(gmem_sigbus(m, false) && gmem_sigbus(m + page - 1, true) ? 0 : 2);
	}
	if (r == KSFT_PASS && (read(to_parent[0], &c, 1) != 1 || !c)) {
		snprintf(why, whylen, "the child could not map the file or read the parent's data");
		r = KSFT_FAIL;
	}
	if (r == KSFT_PASS)
		r = convert(g.fd, 0, 1, PRIVATE, why, whylen);
	if (pid > 0) {
		if (write(to_child[1], &c, 1) != 1)
			kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		if (r == KSFT_PASS && (!WIFEXITED(status) || WEXITSTATUS(status))) {
			snprintf(why, whylen, "after the conversion the child %s",
				 WIFEXITED(status) && WEXITSTATUS(status) == 2 ?
				 "could still touch the private page" : "died");
			r = KSFT_FAIL;
		}
	}
	if (r == KSFT_PASS && !gmem_sigbus(g.map, false)) {
		snprintf(why, whylen, "the parent can still read the private page");
		r = KSFT_FAIL;
	}
	for (int i = 0; i < 2; i++) {
		if (to_child[i] >= 0)
			close(to_child[i]);
		if (to_parent[i] >= 0)
			close(to_parent[i]);
	}
	gfile_close(&g);
	return r;
}

struct page6_converter {
	int fd;
	int err;
	double ms;
};

static void *convert_page_6(void *arg)
{
	struct page6_converter *c = arg;
	uint64_t err_off = 0;
	double t0 = gmem_now();

	c->err = gmem_set_attrs(c->fd, 6 * page, page, PRIVATE, &err_off);
	c->ms = (gmem_now() - t0) * 1000;
	return NULL;
}

/*
 * A conversion waiting for a transient reference must not hold off the rest
 * of the VM (issue 39, 5): while it waits for a pipe to drain (DRAIN_MS) on
 * page 6, moving kvmclock to another page (a pfn cache refresh) and a memslot
 * update finish at once. Before the fix the wait ran inside the guest_memfd
 * invalidation, whose count makes every refresh VM-wide spin and memslot
 * updates sleep until the conversion ends.
 *
 * The pipe drains well inside the conversion's wait (WAIT_MS), so the
 * conversion succeeds without racing its own deadline; the probes start a
 * fifth of the way in and must finish in STALL_PROBE_MS, less than the rest
 * of the wait a stalled probe would sit out.
 */
#define STALL_DRAIN_MS	250
#define STALL_PROBE_MS	100
static int wait_does_not_stall_vm(char *why, size_t whylen)
{
	struct vm vm = { .kvm = kvm_fd, .vm = -1, .vcpu = -1, .gmem = -1 };
	struct drain d = { .delay_ms = STALL_DRAIN_MS, .fd = -1 };
	struct page6_converter c = { .err = 1 };
	struct kvm_userspace_memory_region2 other = {
		.slot = 1,
		.guest_phys_addr = 0x100000,
		.memory_size = page,
	};
	pthread_t drainer, converter;
	double t0, msr_ms, slot_ms;
	bool threads = false;
	int r, e;

	r = conversion_vm(&vm, GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED, why, whylen);
	if (r != KSFT_PASS)
		goto out;
	r = KSFT_FAIL;
	e = gmem_set_kvmclock(&vm, 10 * page);
	if (e) {
		snprintf(why, whylen, "kvmclock on page 10: %s", strerror(-e));
		goto out;
	}
	vm.mem[6 * page] = 1;
	d.fd = pin_vmsplice(vm.mem + 6 * page, why, whylen);
	if (d.fd < 0)
		goto out;
	c.fd = vm.gmem;
	pthread_create(&drainer, NULL, drain_later, &d);
	pthread_create(&converter, NULL, convert_page_6, &c);
	threads = true;
	usleep(STALL_DRAIN_MS * 1000 / 5);

	t0 = gmem_now();
	e = gmem_set_kvmclock(&vm, 11 * page);
	msr_ms = (gmem_now() - t0) * 1000;
	other.userspace_addr = (uintptr_t)vm.other;
	t0 = gmem_now();
	if (!e && ioctl(vm.vm, KVM_SET_USER_MEMORY_REGION2, &other))
		e = -errno;
	slot_ms = (gmem_now() - t0) * 1000;

	pthread_join(converter, NULL);
	pthread_join(drainer, NULL);
	threads = false;
	if (e) {
		snprintf(why, whylen, "kvmclock or memslot during the conversion: %s", strerror(-e));
		goto out;
	}
	if (waits && (c.err || c.ms < STALL_DRAIN_MS * 0.8)) {
		snprintf(why, whylen, "the conversion: %s after %.0f ms; want success after the drain (%d ms)",
			 c.err ? strerror(-c.err) : "success", c.ms, STALL_DRAIN_MS);
		goto out;
	}
	if (msr_ms > STALL_PROBE_MS || slot_ms > STALL_PROBE_MS) {
		snprintf(why, whylen, "during a conversion's wait (%.0f ms): moving kvmclock took %.0f ms, a memslot update %.0f ms; want both under %d ms",
			 c.ms, msr_ms, slot_ms, STALL_PROBE_MS);
		goto out;
	}
	snprintf(why, whylen, "conversion %.0f ms; kvmclock moved in %.1f ms, memslot in %.1f ms",
		 c.ms, msr_ms, slot_ms);
	r = KSFT_PASS;
out:
	if (threads) {
		pthread_join(converter, NULL);
		pthread_join(drainer, NULL);
	}
	vm.kvm = -1;
	vm_teardown(&vm);
	return r;
}

static const struct gmem_case cases[] = {
	{ "caps", caps },
	{ "bad_requests", bad_requests },
	{ "round_trip_page", round_trip_page },
	{ "round_trip_range", round_trip_range },
	{ "round_trip_whole_file", round_trip_whole_file },
	{ "convert_mixed_range", convert_mixed_range },
	{ "private_by_default", private_by_default },
	{ "eagain_vmsplice", eagain_vmsplice },
	{ "eagain_longterm_pin", eagain_longterm_pin },
	{ "transient_ref_waited", transient_ref_waited },
	{ "kvm_follows_the_file", kvm_follows_the_file },
	{ "vcpu_in_place", vcpu_in_place },
	{ "guest_converts_via_hypercall", guest_converts_via_hypercall },
	{ "hwpoison_during_conversions", hwpoison_during_conversions },
	{ "init_shared", init_shared },
	{ "indexing", indexing },
	{ "before_allocation_shared", before_allocation_shared },
	{ "before_allocation_private", before_allocation_private },
	{ "unallocated_folios", unallocated_folios },
	{ "truncate", truncate_keeps_attributes },
	{ "forked_accesses", forked_accesses },
	{ "wait_does_not_stall_vm", wait_does_not_stall_vm },
};

int main(int argc, char **argv)
{
	size_t n = sizeof(cases) / sizeof(cases[0]);
	int was;

	gmem_parse_case_args(argc, argv);

	page = sysconf(_SC_PAGESIZE);
	gmem_sigbus_setup();
	kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	was = param_get();
	if (kvm_fd < 0 || was < 0 || !param_set(true)) {
		int code = kvm_fd < 0 ? KSFT_SKIP : gmem_skip_or_fail();

		ksft_print_header();
		ksft_set_plan(n);
		for (size_t i = 0; i < n; i++)
			ksft_test_result_code(code, cases[i].name, "%s",
					      kvm_fd < 0 ? "no /dev/kvm" :
					      "no kvm.gmem_in_place_conversion: no in-place conversion");
		ksft_finished();
	}
	if (was) {
		ksft_print_msg("kvm.gmem_in_place_conversion was already Y: the default is N\n");
		exit(KSFT_FAIL);
	}
	/*
	 * The mm-shim kernel must wait (and the parameter exist); Debian's
	 * kernel has no mm reports, so our modules must not wait there.
	 */
	waits = gmem_has_mm_hook();
	if (waits) {
		char ms[16];
		int fd = open(WAIT_PARAM, O_RDONLY);
		ssize_t len = fd < 0 ? -1 : read(fd, wait_saved, sizeof(wait_saved) - 1);

		if (fd >= 0)
			close(fd);
		if (len <= 0) {
			ksft_print_msg("mm-shim kernel, but no kvm.gmem_conversion_wait_ms\n");
			exit(KSFT_FAIL);
		}
		wait_saved[len] = 0;
		snprintf(ms, sizeof(ms), "%d", WAIT_MS);
		gmem_write_file(WAIT_PARAM, ms);
	} else if (!access(WAIT_PARAM, F_OK)) {
		ksft_print_msg("kvm.gmem_conversion_wait_ms on a kernel without mm's reports\n");
		exit(KSFT_FAIL);
	}
	atexit(param_off);
	run_cases(cases, n);
}
