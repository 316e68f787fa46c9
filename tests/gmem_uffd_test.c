// SPDX-License-Identifier: GPL-2.0
/*
 * gmem_uffd_test: userfaultfd on guest_memfd mappings (Mike Rapoport's
 * posted series, not in mainline as of 7.3, which has only the generic
 * struct vm_uffd_ops; our kvm.ko with mm-shim 0008/0009): lazy restore of a snapshot by MISSING
 * faults (UFFDIO_COPY) and by MINOR faults (pages written with write(),
 * mapped by UFFDIO_CONTINUE), each page served exactly once whatever the
 * order of the accesses; bad input gets a clean errno; a closed
 * userfaultfd lets a waiting fault go on; NO_DIRECT_MAP and NUMA compose.
 *
 * On a kernel without mm's interface for it (Debian's), registering a
 * guest_memfd mapping must fail with EINVAL and the other cases SKIP. On the
 * shim kernel (it exports handle_userfault() to kvm) our modules must accept
 * it: a refusal there is a FAIL.
 */
#include <linux/mempolicy.h>
#include <poll.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "gmem_test.h"
#include "gmem_uffd.h"
#include "gmem_userfault.h"

#define NPAGES		64
#define FLAGS		(GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED)
#define NDM_FOLIOS	GMEM_DEBUGFS "/kvm/gmem_ndm_folios"
#define MAXNODE		64

static long page;
static int kvm_fd;
static bool kernel_has_uffd;	/* the shim kernel: handle_userfault() exported */

/* A userfaultfd with [@p, @p + @len) registered in @mode: the fd, or -1 with @why. */
static int uffd_open_on(volatile void *p, size_t len, __u64 mode, const char *what,
			char *why, size_t whylen)
{
	int uffd = uffd_open(why, whylen), e;

	if (uffd < 0)
		return -1;
	e = uffd_register(uffd, p, len, mode, NULL);
	if (!e)
		return uffd;
	snprintf(why, whylen, "UFFDIO_REGISTER(%s): %s", what, strerror(-e));
	close(uffd);
	return -1;
}

/* Skip the cases that need mm's interface where the kernel lacks it. */
static int need_uffd(char *why, size_t whylen)
{
	if (kernel_has_uffd)
		return KSFT_PASS;
	snprintf(why, whylen, "this kernel has no userfaultfd for guest_memfd (not the shim kernel)");
	return KSFT_SKIP;
}

/*
 * Registration: on the shim kernel MISSING and MINOR are taken, with COPY,
 * ZEROPAGE and CONTINUE among the ioctls and neither POISON nor MOVE, which
 * guest_memfd refuses; elsewhere it is EINVAL.
 */
static int registers_where_the_kernel_can(char *why, size_t whylen)
{
	__u64 want = (1ULL << _UFFDIO_COPY) | (1ULL << _UFFDIO_ZEROPAGE) |
		     (1ULL << _UFFDIO_CONTINUE), ioctls = 0;
	struct gfile g;
	int uffd, r, err;

	r = gfile_open(&g, kvm_fd, 0, FLAGS, NPAGES * page, why, whylen);
	uffd = r == KSFT_PASS ? uffd_open(why, whylen) : -1;
	if (uffd < 0) {
		gfile_close(&g);
		return KSFT_FAIL;
	}
	err = uffd_register(uffd, g.map, NPAGES * page,
			    UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_MINOR, &ioctls);
	if (!kernel_has_uffd) {
		if (err != -EINVAL) {
			snprintf(why, whylen, "UFFDIO_REGISTER without mm's interface: %s, want EINVAL",
				 err ? strerror(-err) : "taken");
			r = KSFT_FAIL;
		}
	} else if (err) {
		snprintf(why, whylen, "UFFDIO_REGISTER(MISSING | MINOR) on an INIT_SHARED mapping: %s%s",
			 strerror(-err), err == -EINVAL ?
			 " (the kernel has mm's interface: kvm.ko without its uffd operations?)" : "");
		r = KSFT_FAIL;
	} else if ((ioctls & want) != want) {
		snprintf(why, whylen, "ioctls %#llx lack COPY, ZEROPAGE or CONTINUE",
			 (unsigned long long)ioctls);
		r = KSFT_FAIL;
	} else if (ioctls & ((1ULL << _UFFDIO_POISON) | (1ULL << _UFFDIO_MOVE))) {
		snprintf(why, whylen, "ioctls %#llx list POISON or MOVE, which the range refuses",
			 (unsigned long long)ioctls);
		r = KSFT_FAIL;
	}
	close(uffd);
	gfile_close(&g);
	return r;
}

/* The restore's shared state: the snapshot, the mapping, what was served. */
struct restore {
	int uffd;
	volatile uint8_t *map;
	uint8_t *snapshot;
	int first, npages;	/* the pages the touchers read */
	bool minor;
	int served[NPAGES];	/* UFFDIO_COPY or UFFDIO_CONTINUE that resolved it */
	int again;		/* a second event for a page served meanwhile */
	int events, errors;
	volatile int stop;
	char err[256];
};

/* Close and free what a restore holds (@rs may be NULL). */
static void restore_free(struct restore *rs)
{
	if (rs && rs->uffd > 0)
		close(rs->uffd);
	if (rs)
		free(rs->snapshot);
	free(rs);
}

/* Serve fault events until told to stop: COPY from the snapshot or CONTINUE. */
static void *restore_handler(void *arg)
{
	struct restore *rs = arg;
	struct uffd_msg msg;
	struct pollfd pfd = { .fd = rs->uffd, .events = POLLIN };

	while (!rs->stop) {
		unsigned long addr, idx;
		int err;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		if (read(rs->uffd, &msg, sizeof(msg)) != sizeof(msg))
			continue;
		if (msg.event != UFFD_EVENT_PAGEFAULT) {
			snprintf(rs->err, sizeof(rs->err), "unexpected event %u", msg.event);
			rs->errors++;
			continue;
		}
		rs->events++;
		addr = msg.arg.pagefault.address & ~(page - 1);
		idx = (addr - (unsigned long)rs->map) / page;
		if (idx >= NPAGES) {
			snprintf(rs->err, sizeof(rs->err), "fault at %#lx, outside the mapping", addr);
			rs->errors++;
			continue;
		}
		if (!!(msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_MINOR) != rs->minor) {
			snprintf(rs->err, sizeof(rs->err), "page %lu: a %s fault, want %s", idx,
				 rs->minor ? "MISSING" : "MINOR", rs->minor ? "MINOR" : "MISSING");
			rs->errors++;
		}
		err = rs->minor ? uffd_continue(rs->uffd, rs->map + idx * page, page) :
				  uffd_copy(rs->uffd, rs->map + idx * page,
					    rs->snapshot + idx * page, page);
		if (!err) {
			rs->served[idx]++;
		} else if (err == -EEXIST) {
			/* Two threads faulted on it; the first event served both. */
			rs->again++;
		} else {
			snprintf(rs->err, sizeof(rs->err), "page %lu: %s: %s", idx,
				 rs->minor ? "UFFDIO_CONTINUE" : "UFFDIO_COPY", strerror(-err));
			rs->errors++;
		}
	}
	return NULL;
}

struct toucher {
	struct restore *rs;
	unsigned int seed;
	long bad;		/* first wrong byte, -1 if none */
};

/* Read every page once, in an order of its own, and check it. */
static void *touch_pages(void *arg)
{
	struct toucher *t = arg;
	int order[NPAGES], n = t->rs->npages - t->rs->first;

	for (int i = 0; i < n; i++)
		order[i] = t->rs->first + i;
	for (int i = n - 1; i > 0; i--) {
		int j = rand_r(&t->seed) % (i + 1), k = order[i];

		order[i] = order[j];
		order[j] = k;
	}
	t->bad = -1;
	for (int i = 0; i < n && t->bad < 0; i++) {
		long off = (long)order[i] * page;

		for (long b = 0; b < page; b++) {
			if (t->rs->map[off + b] != t->rs->snapshot[off + b]) {
				t->bad = off + b;
				break;
			}
		}
	}
	return NULL;
}

/*
 * A restore: two threads read all pages in random orders while the handler
 * serves the faults; every byte is the snapshot's and each page was served
 * exactly once. @minor: the file holds the snapshot already (write()), and
 * UFFDIO_CONTINUE maps it; otherwise UFFDIO_COPY fills the holes. @node >= 0:
 * the mapping is bound there, and every page must be on it.
 */
static long ndm_during;	/* kvm/gmem_ndm_folios after a restore, before its close */

static int restore(unsigned long long flags, bool minor, int node, char *why, size_t whylen)
{
	struct restore *rs = calloc(1, sizeof(*rs));
	struct toucher t[2] = { { .seed = 1 }, { .seed = 2 } };
	pthread_t handler, touchers[2];
	struct gfile g;
	int r;

	r = need_uffd(why, whylen);
	if (r != KSFT_PASS || !rs) {
		free(rs);
		return r != KSFT_PASS ? r : KSFT_FAIL;
	}
	rs->snapshot = malloc(NPAGES * page);
	gmem_fill(rs->snapshot, 0, NPAGES * page, minor ? 0x5a : 0xa5);
	r = gfile_open(&g, kvm_fd, 0, flags, NPAGES * page, why, whylen);
	if (r != KSFT_PASS)
		goto out;
	if (minor && pwrite(g.fd, rs->snapshot, NPAGES * page, 0) != NPAGES * page) {
		/* Without GUEST_MEMFD_FLAG_WRITE: through a mapping of its own. */
		void *m = gmem_map(g.fd, NPAGES * page);

		if (m == MAP_FAILED) {
			snprintf(why, whylen, "populating the file: %s", strerror(errno));
			r = KSFT_FAIL;
			goto out;
		}
		memcpy(m, rs->snapshot, NPAGES * page);
		munmap(m, NPAGES * page);
	}
	if (node >= 0) {
		unsigned long mask = 1UL << node;

		if (syscall(__NR_mbind, g.map, NPAGES * page, MPOL_BIND, &mask, MAXNODE + 1, 0)) {
			snprintf(why, whylen, "mbind(node %d): %s", node, strerror(errno));
			r = KSFT_FAIL;
			goto out;
		}
	}
	rs->map = g.map;
	rs->npages = NPAGES;
	rs->minor = minor;
	rs->uffd = uffd_open(why, whylen);
	if (rs->uffd < 0) {
		r = KSFT_FAIL;
		goto out;
	}
	if (uffd_register(rs->uffd, g.map, NPAGES * page, minor ? UFFDIO_REGISTER_MODE_MINOR :
			  UFFDIO_REGISTER_MODE_MISSING, NULL)) {
		snprintf(why, whylen, "UFFDIO_REGISTER(%s): %s", minor ? "MINOR" : "MISSING",
			 strerror(errno));
		r = KSFT_FAIL;
		goto out_uffd;
	}
	pthread_create(&handler, NULL, restore_handler, rs);
	for (int i = 0; i < 2; i++) {
		t[i].rs = rs;
		pthread_create(&touchers[i], NULL, touch_pages, &t[i]);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(touchers[i], NULL);
	rs->stop = 1;
	pthread_join(handler, NULL);
	ndm_during = gmem_counter(NDM_FOLIOS);

	for (int i = 0; i < 2 && r == KSFT_PASS; i++) {
		if (t[i].bad >= 0) {
			snprintf(why, whylen, "thread %d read a wrong byte at %ld", i, t[i].bad);
			r = KSFT_FAIL;
		}
	}
	if (r == KSFT_PASS && rs->errors) {
		snprintf(why, whylen, "%d handler errors, the last: %s", rs->errors, rs->err);
		r = KSFT_FAIL;
	}
	for (int i = 0; i < NPAGES && r == KSFT_PASS; i++) {
		if (rs->served[i] != 1) {
			snprintf(why, whylen, "page %d served %d times, want once", i, rs->served[i]);
			r = KSFT_FAIL;
		}
	}
	for (int i = 0; i < NPAGES && r == KSFT_PASS && node >= 0; i++) {
		void *addr = (void *)(g.map + i * page);
		int where = -1;

		if (syscall(__NR_move_pages, 0, 1, &addr, NULL, &where, 0) || where != node) {
			snprintf(why, whylen, "page %d is on node %d, want the bound node %d", i,
				 where, node);
			r = KSFT_FAIL;
		}
	}
	if (r == KSFT_PASS)
		snprintf(why, whylen, "%d pages, %d events (%d for pages served meanwhile)",
			 NPAGES, rs->events, rs->again);
out_uffd:
	close(rs->uffd);
out:
	gfile_close(&g);
	free(rs->snapshot);
	free(rs);
	return r;
}

static int restore_missing(char *why, size_t whylen)
{
	return restore(FLAGS, false, -1, why, whylen);
}

static int restore_minor(char *why, size_t whylen)
{
	return restore(FLAGS, true, -1, why, whylen);
}

/*
 * NUMA: run on node 0 with the mapping bound to node 1, the node the test
 * is not on: every page UFFDIO_COPY installs lands on node 1.
 */
static int restore_numa(char *why, size_t whylen)
{
	cpu_set_t was;
	int r = need_uffd(why, whylen);

	if (r != KSFT_PASS)
		return r;
	if (read_online_nodes() < 2 || first_cpu_of(0) < 0) {
		snprintf(why, whylen, "one memory node, or none with a CPU: the tier boots NUMA=2");
		return KSFT_FAIL;
	}
	sched_getaffinity(0, sizeof(was), &was);
	pin_cpu(first_cpu_of(0));
	r = restore(FLAGS, false, 1, why, whylen);
	sched_setaffinity(0, sizeof(was), &was);
	return r;
}

/* The same, secret-free: every page restored is out of the direct map. */
static int restore_no_direct_map(char *why, size_t whylen)
{
	long before;
	int r;

	r = need_uffd(why, whylen);
	if (r != KSFT_PASS)
		return r;
	if (!gmem_has_flags(kvm_fd, FLAGS | GUEST_MEMFD_FLAG_NO_DIRECT_MAP)) {
		snprintf(why, whylen, "no GUEST_MEMFD_FLAG_NO_DIRECT_MAP with these modules");
		return gmem_skip_or_fail();
	}
	before = gmem_counter(NDM_FOLIOS);
	r = restore(FLAGS | GUEST_MEMFD_FLAG_NO_DIRECT_MAP, false, -1, why, whylen);
	if (r == KSFT_PASS && (before < 0 || ndm_during - before < NPAGES)) {
		snprintf(why, whylen, "%s went from %ld to %ld: want all %d restored pages out of the direct map",
			 NDM_FOLIOS, before, ndm_during, NPAGES);
		r = KSFT_FAIL;
	}
	return r;
}

/*
 * The restore a VMM does for a running guest: KVM_MEM_USERFAULT on the
 * guest_memfd memslot and userfaultfd on its mapping. The vCPU reads the
 * snapshot's pages in random order and a host thread reads them too in its
 * own; a vCPU's first access to a page exits (it must not get a zeroed page
 * from KVM), the VMM touches the page through its mapping, which the
 * handler serves by UFFDIO_COPY, clears the bit and runs the vCPU again.
 * Each page exits once, is served once and is byte-exact for both.
 */
static int restore_vcpu(char *why, size_t whylen)
{
	const unsigned long long flags = FLAGS | GUEST_MEMFD_FLAG_WRITE;
	struct vm vm = { .kvm = -1, .vm = -1, .vcpu = -1, .gmem = -1 };
	struct restore *rs = calloc(1, sizeof(*rs));
	struct toucher t = { .seed = 3 };
	int order[NPAGES], exits[NPAGES] = { 0 }, n = 0;
	pthread_t handler, toucher;
	unsigned long bitmap = 0;
	bool threads = false;
	int r;

	r = need_uffd(why, whylen);
	if (r == KSFT_PASS && kvm_cap(kvm_fd, KVM_CAP_USERFAULT) != 1) {
		snprintf(why, whylen, "no KVM_CAP_USERFAULT with our modules");
		r = KSFT_FAIL;
	}
	if (r == KSFT_PASS && !gmem_has_flags(kvm_fd, flags)) {
		snprintf(why, whylen, "no GUEST_MEMFD_FLAG_WRITE with our modules");
		r = KSFT_FAIL;
	}
	if (r != KSFT_PASS || !rs)
		goto out;
	r = vm_with_written_code(&vm, flags, guest_code, sizeof(guest_code), why, whylen);
	if (r != KSFT_PASS)
		goto out;
	r = KSFT_FAIL;
	vm.mem[PARAM_GPA] = 0;	/* present before the registration: no event */
	rs->snapshot = calloc(1, MEM_SIZE);
	rs->map = vm.mem;
	rs->first = 4;
	rs->npages = MEM_SIZE / page;
	for (int p = rs->first; p < rs->npages; p++) {
		snapshot_page(rs->snapshot + p * page, p);
		bitmap |= 1UL << p;
		order[n++] = p;
	}
	rs->uffd = uffd_open(why, whylen);
	if (rs->uffd < 0)
		goto out;
	if (uffd_register(rs->uffd, vm.mem, MEM_SIZE, UFFDIO_REGISTER_MODE_MISSING, NULL)) {
		snprintf(why, whylen, "UFFDIO_REGISTER(MISSING): %s", strerror(errno));
		goto out;
	}
	{
		struct kvm_userspace_memory_region2 region = {
			.flags = KVM_MEM_GUEST_MEMFD | KVM_MEM_USERFAULT,
			.memory_size = MEM_SIZE,
			.userspace_addr = (uintptr_t)vm.mem,
			.guest_memfd = vm.gmem,
			.userfault_bitmap = (uintptr_t)&bitmap,
		};

		if (ioctl(vm.vm, KVM_SET_USER_MEMORY_REGION2, &region)) {
			snprintf(why, whylen, "KVM_MEM_USERFAULT on the memslot: %s", strerror(errno));
			goto out;
		}
	}
	pthread_create(&handler, NULL, restore_handler, rs);
	t.rs = rs;
	pthread_create(&toucher, NULL, touch_pages, &t);
	threads = true;

	for (int i = n - 1; i > 0; i--) {
		int j = rand() % (i + 1), k = order[i];

		order[i] = order[j];
		order[j] = k;
	}
	for (int i = 0; i < n; i++) {
		int p = order[i];

		if (!round_exits(&vm, p, page_seed(p), page_step(p), why, whylen))
			goto out;
		exits[p]++;
		(void)vm.mem[p * page];	/* the handler serves it, or has */
		__atomic_and_fetch(&bitmap, ~(1UL << p), __ATOMIC_RELEASE);
		if (!round_is(&vm, p, page_seed(p), page_step(p), STATUS_MATCH, why, whylen))
			goto out;
	}
	pthread_join(toucher, NULL);
	rs->stop = 1;
	pthread_join(handler, NULL);
	threads = false;
	if (t.bad >= 0) {
		snprintf(why, whylen, "the host thread read a wrong byte at %ld", t.bad);
		goto out;
	}
	if (rs->errors) {
		snprintf(why, whylen, "%d handler errors, the last: %s", rs->errors, rs->err);
		goto out;
	}
	for (int p = rs->first; p < rs->npages; p++) {
		if (exits[p] != 1 || rs->served[p] != 1) {
			snprintf(why, whylen, "page %d: %d vCPU exits, served %d times; want once each",
				 p, exits[p], rs->served[p]);
			goto out;
		}
	}
	snprintf(why, whylen, "%d pages, %d events (%d for pages served meanwhile)", n,
		 rs->events, rs->again);
	r = KSFT_PASS;
out:
	if (threads) {
		/* A failed round: let the host thread finish, then stop the handler. */
		pthread_join(toucher, NULL);
		rs->stop = 1;
		pthread_join(handler, NULL);
	}
	restore_free(rs);
	vm_teardown(&vm);
	return r;
}

/*
 * Bad input: a file that is not INIT_SHARED, or WP mode, is not registered
 * (EINVAL); UFFDIO_COPY onto a page that is there is EEXIST; UFFDIO_CONTINUE
 * on a hole and UFFDIO_COPY past the end of the file are EFAULT.
 */
static int bad_input(char *why, size_t whylen)
{
	struct gfile g = { .vm = -1, .fd = -1 }, priv = { .vm = -1, .fd = -1 };
	uint8_t *src = calloc(1, page);
	volatile uint8_t *big = MAP_FAILED;
	int uffd = -1, r, err;

	r = need_uffd(why, whylen);
	if (r != KSFT_PASS)
		goto out;
	r = gfile_open(&priv, kvm_fd, 0, GUEST_MEMFD_FLAG_MMAP, NPAGES * page, why, whylen);
	if (r == KSFT_PASS)
		r = gfile_open(&g, kvm_fd, 0, FLAGS, NPAGES * page, why, whylen);
	uffd = r == KSFT_PASS ? uffd_open(why, whylen) : -1;
	if (uffd < 0) {
		r = KSFT_FAIL;
		goto out;
	}
	r = KSFT_FAIL;
	err = uffd_register(uffd, priv.map, NPAGES * page, UFFDIO_REGISTER_MODE_MISSING, NULL);
	if (err != -EINVAL) {
		snprintf(why, whylen, "registering a file that is not INIT_SHARED: %s, want EINVAL",
			 err ? strerror(-err) : "taken");
		goto out;
	}
	err = uffd_register(uffd, g.map, NPAGES * page, UFFDIO_REGISTER_MODE_WP, NULL);
	if (err != -EINVAL) {
		snprintf(why, whylen, "registering in WP mode: %s, want EINVAL",
			 err ? strerror(-err) : "taken");
		goto out;
	}
	/* Page 0 is there (the host wrote it) before the registration. */
	g.map[0] = 1;
	err = uffd_register(uffd, g.map, NPAGES * page,
			    UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_MINOR, NULL);
	if (err) {
		snprintf(why, whylen, "UFFDIO_REGISTER: %s", strerror(-err));
		goto out;
	}
	err = uffd_copy(uffd, g.map, src, page);
	if (err != -EEXIST) {
		snprintf(why, whylen, "UFFDIO_COPY onto a page that is there: %s, want EEXIST",
			 err ? strerror(-err) : "done");
		goto out;
	}
	err = uffd_continue(uffd, g.map + page, page);
	if (err != -EFAULT) {
		snprintf(why, whylen, "UFFDIO_CONTINUE on a hole: %s, want EFAULT",
			 err ? strerror(-err) : "done");
		goto out;
	}
	/* A mapping twice the file's size, registered as a whole. */
	big = mmap(NULL, 2 * NPAGES * page, PROT_READ | PROT_WRITE, MAP_SHARED, g.fd, 0);
	if (big == MAP_FAILED) {
		snprintf(why, whylen, "mmap past the end: %s", strerror(errno));
		goto out;
	}
	err = uffd_register(uffd, big, 2 * NPAGES * page, UFFDIO_REGISTER_MODE_MISSING, NULL);
	if (!err)
		err = uffd_copy(uffd, big + NPAGES * page, src, page);
	if (err != -EFAULT) {
		snprintf(why, whylen, "UFFDIO_COPY past the end of the file: %s, want EFAULT",
			 err ? strerror(-err) : "done");
		goto out;
	}
	r = KSFT_PASS;
out:
	if (big != MAP_FAILED)
		munmap((void *)big, 2 * NPAGES * page);
	if (uffd >= 0)
		close(uffd);
	gfile_close(&g);
	gfile_close(&priv);
	free(src);
	return r;
}

struct waiter {
	volatile uint8_t *p;
	int value;
};

static void *read_page(void *arg)
{
	struct waiter *w = arg;

	w->value = gmem_read_byte(w->p);
	return NULL;
}

/*
 * Close @uffd and wait up to 10 s for thread @t, which waited in a fault on
 * it. A thread that does not wake ends the program: it still points into
 * the test's mapping.
 */
static void close_and_join(int uffd, pthread_t t, char *why, size_t whylen)
{
	struct timespec ts;

	close(uffd);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	if (pthread_timedjoin_np(t, NULL, &ts)) {
		snprintf(why, whylen, "the waiting thread did not wake within 10 s of the close");
		ksft_exit_fail_msg("%s\n", why);
	}
}

/*
 * A thread waits in a MISSING fault; the VMM closes its userfaultfd instead
 * of serving it: the fault goes on as without one (a zeroed page), and no
 * thread is left waiting.
 */
static int close_with_a_waiter(char *why, size_t whylen)
{
	struct waiter w = { .value = -2 };
	pthread_t t;
	struct gfile g;
	int uffd = -1, r;

	r = need_uffd(why, whylen);
	if (r != KSFT_PASS)
		return r;
	r = gfile_open(&g, kvm_fd, 0, FLAGS, NPAGES * page, why, whylen);
	uffd = r == KSFT_PASS ? uffd_open(why, whylen) : -1;
	if (uffd < 0 || uffd_register(uffd, g.map, NPAGES * page,
				      UFFDIO_REGISTER_MODE_MISSING, NULL)) {
		snprintf(why, whylen, "UFFDIO_REGISTER: %s", strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	w.p = g.map + 3 * page;
	pthread_create(&t, NULL, read_page, &w);
	usleep(200 * 1000);
	if (w.value != -2) {
		snprintf(why, whylen, "the read did not wait for the handler (%d)", w.value);
		r = KSFT_FAIL;
	}
	close_and_join(uffd, t, why, whylen);
	uffd = -1;
	if (r == KSFT_PASS && w.value != 0) {
		snprintf(why, whylen, "the fault after the close read %d, want a zeroed page", w.value);
		r = KSFT_FAIL;
	}
out:
	if (uffd >= 0)
		close(uffd);
	gfile_close(&g);
	return r;
}

/* Wait up to 10 s for one event on @uffd into @msg: 0, or -1 with @why. */
static int uffd_wait_event(int uffd, struct uffd_msg *msg, char *why, size_t whylen)
{
	struct pollfd pfd = { .fd = uffd, .events = POLLIN };

	if (poll(&pfd, 1, 10 * 1000) != 1 || read(uffd, msg, sizeof(*msg)) != sizeof(*msg)) {
		snprintf(why, whylen, "no userfaultfd event within 10 s");
		return -1;
	}
	return 0;
}

/*
 * A page fallocate() allocated and nothing touched is in the file but not up
 * to date (issue 39, 8): a read through a MINOR-registered mapping raises the
 * MINOR fault, and UFFDIO_CONTINUE must map it, zeroed (as shmem does), not
 * fail with EFAULT and leave the reader waiting.
 */
static int minor_on_allocated_page(char *why, size_t whylen)
{
	struct waiter w = { .value = -2 };
	struct uffd_msg msg;
	struct gfile g;
	int uffd = -1, r, e;
	pthread_t t;
	bool thread = false;

	r = need_uffd(why, whylen);
	if (r != KSFT_PASS)
		return r;
	r = gfile_open(&g, kvm_fd, 0, FLAGS, NPAGES * page, why, whylen);
	if (r != KSFT_PASS)
		goto out;
	r = KSFT_FAIL;
	if (fallocate(g.fd, FALLOC_FL_KEEP_SIZE, 2 * page, page)) {
		snprintf(why, whylen, "fallocate(page 2): %s", strerror(errno));
		goto out;
	}
	if (gmem_cached_pages(g.fd, 2 * page, page) != 1) {
		snprintf(why, whylen, "fallocate() left no page 2 in the file");
		goto out;
	}
	uffd = uffd_open_on(g.map, NPAGES * page, UFFDIO_REGISTER_MODE_MINOR, "MINOR", why, whylen);
	if (uffd < 0)
		goto out;
	w.p = g.map + 2 * page;
	pthread_create(&t, NULL, read_page, &w);
	thread = true;
	if (uffd_wait_event(uffd, &msg, why, whylen))
		goto out;
	if (!(msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_MINOR) ||
	    (msg.arg.pagefault.address & ~(page - 1)) != (unsigned long)w.p) {
		snprintf(why, whylen, "event flags %#llx at %#llx, want MINOR for page 2",
			 (unsigned long long)msg.arg.pagefault.flags,
			 (unsigned long long)msg.arg.pagefault.address);
		goto out;
	}
	e = uffd_continue(uffd, w.p, page);
	if (e) {
		snprintf(why, whylen, "UFFDIO_CONTINUE of the allocated page: %s", strerror(-e));
		goto out;
	}
	pthread_join(t, NULL);
	thread = false;
	if (w.value != 0) {
		snprintf(why, whylen, "the reader read %d, want a zeroed page", w.value);
		goto out;
	}
	r = KSFT_PASS;
out:
	if (thread)
		close_and_join(uffd, t, why, whylen);
	else if (uffd >= 0)
		close(uffd);
	gfile_close(&g);
	return r;
}

/*
 * In-place conversion (a SW_PROTECTED VM created with
 * kvm.gmem_in_place_conversion=1): a private page raises no event (the
 * host's read is a SIGBUS) and UFFDIO_COPY onto it is EFAULT; a page
 * converted to private while a fault on it waits for the VMM: the waiter
 * gets a SIGBUS once the userfaultfd is closed, and the page stays a hole.
 */
static int conversion(char *why, size_t whylen)
{
	struct waiter w = { .value = -2 };
	struct gfile g = { .vm = -1, .fd = -1 };
	uint8_t *src = calloc(1, page);
	struct uffd_msg msg;
	int uffd = -1, r, e;
	pthread_t t;

	r = need_uffd(why, whylen);
	if (r != KSFT_PASS || !src)
		goto out;
	if (!gmem_write_file(GMEM_IN_PLACE_PARAM, "1")) {
		snprintf(why, whylen, "cannot set kvm.gmem_in_place_conversion");
		r = KSFT_FAIL;
		goto out;
	}
	r = gfile_open(&g, kvm_fd, KVM_X86_SW_PROTECTED_VM, FLAGS, 4 * page, why, whylen);
	gmem_write_file(GMEM_IN_PLACE_PARAM, "0");
	if (r != KSFT_PASS)
		goto out;
	r = KSFT_FAIL;
	uffd = uffd_open(why, whylen);
	if (uffd < 0)
		goto out;
	e = uffd_register(uffd, g.map, 4 * page, UFFDIO_REGISTER_MODE_MISSING, NULL);
	if (e) {
		snprintf(why, whylen, "UFFDIO_REGISTER(MISSING): %s", strerror(-e));
		goto out;
	}
	e = gmem_set_attrs(g.fd, 0, page, KVM_MEMORY_ATTRIBUTE_PRIVATE, NULL);
	if (e) {
		snprintf(why, whylen, "converting page 0 to private: %s", strerror(-e));
		goto out;
	}
	if (!gmem_sigbus(g.map, false)) {
		snprintf(why, whylen, "the host read a private page");
		goto out;
	}
	if (read(uffd, &msg, sizeof(msg)) >= 0 || errno != EAGAIN) {
		snprintf(why, whylen, "a private page raised a userfaultfd event");
		goto out;
	}
	e = uffd_copy(uffd, g.map, src, page);
	if (e != -EFAULT) {
		snprintf(why, whylen, "UFFDIO_COPY onto a private page: %s, want EFAULT",
			 e ? strerror(-e) : "filled it");
		goto out;
	}

	w.p = g.map + page;
	pthread_create(&t, NULL, read_page, &w);
	if (uffd_wait_event(uffd, &msg, why, whylen))
		goto out_join;
	if ((msg.arg.pagefault.address & ~(page - 1)) != (unsigned long)w.p) {
		snprintf(why, whylen, "an event for %#llx, want page 1",
			 (unsigned long long)msg.arg.pagefault.address);
		goto out_join;
	}
	e = gmem_set_attrs(g.fd, page, page, KVM_MEMORY_ATTRIBUTE_PRIVATE, NULL);
	if (e) {
		snprintf(why, whylen, "converting page 1 while a fault on it waits: %s", strerror(-e));
		goto out_join;
	}
	r = KSFT_PASS;
out_join:
	close_and_join(uffd, t, why, whylen);
	uffd = -1;
	if (r == KSFT_PASS && w.value != -1) {
		snprintf(why, whylen, "the waiter read %d from a page converted to private, want SIGBUS",
			 w.value);
		r = KSFT_FAIL;
	}
	/* cachestat(): mincore() cannot see a folio that is not up to date. */
	if (r == KSFT_PASS &&
	    gmem_cached_pages(g.fd, (const uint8_t *)w.p - (const uint8_t *)g.map, page) != 0) {
		snprintf(why, whylen, "page 1 was allocated (or cachestat() failed)");
		r = KSFT_FAIL;
	}
out:
	if (uffd >= 0)
		close(uffd);
	gfile_close(&g);
	free(src);
	return r;
}

#define FAIL_ZAP	GMEM_FAIL_NDM_ZAP

/*
 * A NO_DIRECT_MAP file whose mapping is registered, in a memslot without
 * KVM_MEM_USERFAULT: a vCPU's fault on a hole allocates its own page only
 * (no 16-page window as elsewhere), so the next page is still a hole whose
 * host read is a MISSING event for the VMM, not a zeroed page.
 */
static int vcpu_fault_allocates_one_page(char *why, size_t whylen)
{
	const unsigned long long flags = FLAGS | GUEST_MEMFD_FLAG_NO_DIRECT_MAP |
					 GUEST_MEMFD_FLAG_WRITE;
	struct vm vm = { .kvm = -1, .vm = -1, .vcpu = -1, .gmem = -1 };
	struct waiter w = { .value = -2 };
	uint8_t *zeroes = calloc(1, page);
	struct uffd_msg msg;
	int uffd = -1, r, s;
	pthread_t t;
	long before;

	r = need_uffd(why, whylen);
	if (r != KSFT_PASS || !zeroes)
		goto out;
	r = KSFT_FAIL;
	if (!gmem_has_flags(kvm_fd, flags)) {
		snprintf(why, whylen, "no GUEST_MEMFD_FLAG_NO_DIRECT_MAP | WRITE with our modules");
		goto out;
	}
	if (vm_with_written_code(&vm, flags, guest_code, sizeof(guest_code), why, whylen) != KSFT_PASS)
		goto out;
	if (pwrite(vm.gmem, zeroes, page, PARAM_GPA) != page) {
		snprintf(why, whylen, "pwrite of the parameter page: %s", strerror(errno));
		goto out;
	}
	uffd = uffd_open(why, whylen);
	if (uffd < 0)
		goto out;
	if (uffd_register(uffd, vm.mem, MEM_SIZE, UFFDIO_REGISTER_MODE_MISSING, NULL)) {
		snprintf(why, whylen, "UFFDIO_REGISTER(MISSING): %s", strerror(errno));
		goto out;
	}
	before = gmem_counter(NDM_FOLIOS);
	s = guest_round_at(&vm, 4 * page, 16, 0, 0, NULL, why, whylen);
	if (s != STATUS_MATCH) {
		if (s >= 0)
			snprintf(why, whylen, "the guest's round on page 4 reported %d", s);
		goto out;
	}
	if (gmem_counter(NDM_FOLIOS) - before != 1) {
		snprintf(why, whylen, "a vCPU fault on page 4 took %ld pages, want 1 (the file is registered)",
			 gmem_counter(NDM_FOLIOS) - before);
		goto out;
	}
	w.p = vm.mem + 5 * page;
	pthread_create(&t, NULL, read_page, &w);
	if (!uffd_wait_event(uffd, &msg, why, whylen) &&
	    (msg.arg.pagefault.address & ~(page - 1)) == (unsigned long)w.p) {
		r = KSFT_PASS;
	} else if (!why[0]) {
		snprintf(why, whylen, "an event for %#llx, want page 5",
			 (unsigned long long)msg.arg.pagefault.address);
	}
	close_and_join(uffd, t, why, whylen);
	uffd = -1;
out:
	if (uffd >= 0)
		close(uffd);
	vm_teardown(&vm);
	free(zeroes);
	return r;
}

#define CLOCK_PAGE		9	/* kvmclock's page: a hole until restored */

/*
 * KVM's own mapping of a page not restored yet (issue 39, 1), for
 * userfaultfd: kvmclock placed on a hole of a registered file. KVM must not
 * take a zeroed page from guest_memfd behind the VMM's back: the MISSING
 * event reaches the handler, which fills the page from the snapshot
 * (UFFDIO_COPY succeeds: not EEXIST), and the clock is written over it.
 * With @ndm the file is NO_DIRECT_MAP (the pfn cache maps the page alone).
 */
static int kvmclock_restore(bool ndm, char *why, size_t whylen)
{
	const unsigned long long flags = FLAGS | GUEST_MEMFD_FLAG_WRITE |
					 (ndm ? GUEST_MEMFD_FLAG_NO_DIRECT_MAP : 0);
	struct vm vm = { .kvm = -1, .vm = -1, .vcpu = -1, .gmem = -1 };
	struct restore *rs = calloc(1, sizeof(*rs));
	uint8_t *zeroes = calloc(1, page);
	bool thread = false;
	pthread_t handler;
	int r, e;

	r = need_uffd(why, whylen);
	if (r != KSFT_PASS || !rs || !zeroes)
		goto out;
	r = KSFT_FAIL;
	if (!gmem_has_flags(kvm_fd, flags)) {
		snprintf(why, whylen, "flags %#llx not offered by our modules", flags);
		goto out;
	}
	if (vm_with_written_code(&vm, flags, guest_code, sizeof(guest_code), why, whylen) != KSFT_PASS)
		goto out;
	/* The pages the guest's round uses are there before the registration. */
	if (pwrite(vm.gmem, zeroes, page, PARAM_GPA) != page ||
	    pwrite(vm.gmem, zeroes, page, DATA_GPA) != page) {
		snprintf(why, whylen, "pwrite: %s", strerror(errno));
		goto out;
	}
	rs->snapshot = calloc(1, MEM_SIZE);
	if (!rs->snapshot)
		goto out;
	snapshot_page(rs->snapshot + CLOCK_PAGE * page, CLOCK_PAGE);
	rs->map = vm.mem;
	rs->uffd = uffd_open_on(vm.mem, MEM_SIZE, UFFDIO_REGISTER_MODE_MISSING, "MISSING", why,
				whylen);
	if (rs->uffd < 0)
		goto out;
	pthread_create(&handler, NULL, restore_handler, rs);
	thread = true;
	e = gmem_set_kvmclock(&vm, CLOCK_PAGE * page);
	if (e) {
		snprintf(why, whylen, "KVM_SET_MSRS(MSR_KVM_SYSTEM_TIME_NEW): %s", strerror(-e));
		goto out;
	}
	if (guest_round(&vm, 0, 0, why, whylen) != STATUS_MATCH) {
		if (!why[0])
			snprintf(why, whylen, "the guest's round failed");
		goto out;
	}
	rs->stop = 1;
	pthread_join(handler, NULL);
	thread = false;
	if (rs->errors || rs->again) {
		snprintf(why, whylen, "%d handler errors, %d EEXIST (the page was allocated behind the VMM's back): %s",
			 rs->errors, rs->again, rs->err);
		goto out;
	}
	if (rs->served[CLOCK_PAGE] != 1 || rs->events != 1) {
		snprintf(why, whylen, "kvmclock's page served %d times, %d events; want one MISSING event for it",
			 rs->served[CLOCK_PAGE], rs->events);
		goto out;
	}
	if (!gmem_kvmclock_over(vm.mem + CLOCK_PAGE * page, rs->snapshot + CLOCK_PAGE * page,
				page, why, whylen))
		goto out;
	r = KSFT_PASS;
out:
	if (thread) {
		rs->stop = 1;
		pthread_join(handler, NULL);
	}
	restore_free(rs);
	vm_teardown(&vm);
	free(zeroes);
	return r;
}

static int kvmclock_restore_plain(char *why, size_t whylen)
{
	return kvmclock_restore(false, why, whylen);
}

static int kvmclock_restore_ndm(char *why, size_t whylen)
{
	return kvmclock_restore(true, why, whylen);
}

/*
 * The host-fault window and a second mapping (issue 39, 7): a NO_DIRECT_MAP
 * file whose first mapping is registered for MISSING faults; a second,
 * unregistered mapping (a vhost-user backend's) faults page 1, after page 0
 * (fallocate()), continuing a run. It must allocate that page only: its
 * 16-page window would fill holes the registered mapping then never sees as
 * MISSING.
 */
static int second_mapping_no_window(char *why, size_t whylen)
{
	const unsigned long long flags = FLAGS | GUEST_MEMFD_FLAG_NO_DIRECT_MAP;
	struct gfile g = { .vm = -1, .fd = -1 };
	volatile uint8_t *second = MAP_FAILED;
	long cached;
	int uffd = -1, r;

	r = need_uffd(why, whylen);
	if (r != KSFT_PASS)
		return r;
	if (!gmem_has_flags(kvm_fd, flags)) {
		snprintf(why, whylen, "no GUEST_MEMFD_FLAG_NO_DIRECT_MAP with our modules");
		return KSFT_FAIL;
	}
	r = gfile_open(&g, kvm_fd, 0, flags, NPAGES * page, why, whylen);
	if (r != KSFT_PASS)
		goto out;
	r = KSFT_FAIL;
	uffd = uffd_open_on(g.map, NPAGES * page, UFFDIO_REGISTER_MODE_MISSING, "MISSING", why,
			    whylen);
	if (uffd < 0)
		goto out;
	second = mmap(NULL, NPAGES * page, PROT_READ | PROT_WRITE, MAP_SHARED, g.fd, 0);
	if (second == MAP_FAILED) {
		snprintf(why, whylen, "a second mapping: %s", strerror(errno));
		goto out;
	}
	if (fallocate(g.fd, FALLOC_FL_KEEP_SIZE, 0, page)) {
		snprintf(why, whylen, "fallocate(page 0): %s", strerror(errno));
		goto out;
	}
	second[page] = 1;
	cached = gmem_cached_pages(g.fd, 0, 16 * page);
	if (cached != 2) {
		snprintf(why, whylen, "the second mapping's fault on page 1 left %ld pages of 0-15 in the file, want 2",
			 cached);
		goto out;
	}
	r = KSFT_PASS;
out:
	if (second != MAP_FAILED)
		munmap((void *)second, NPAGES * page);
	if (uffd >= 0)
		close(uffd);
	gfile_close(&g);
	return r;
}

/*
 * UFFDIO_UNREGISTER over a mapping that was never registered (allowed, and
 * nothing to do) asks guest_memfd whether the VMA may userfault, as a
 * registration does: it must not make the file look registered. Its host
 * faults keep their window: page 1, after page 0, takes pages 1-15.
 */
static int unregister_keeps_windows(char *why, size_t whylen)
{
	const unsigned long long flags = FLAGS | GUEST_MEMFD_FLAG_NO_DIRECT_MAP;
	struct uffdio_range range;
	struct gfile g = { .vm = -1, .fd = -1 };
	long cached;
	int uffd = -1, r;

	r = need_uffd(why, whylen);
	if (r != KSFT_PASS)
		return r;
	if (!gmem_has_flags(kvm_fd, flags)) {
		snprintf(why, whylen, "no GUEST_MEMFD_FLAG_NO_DIRECT_MAP with our modules");
		return KSFT_FAIL;
	}
	r = gfile_open(&g, kvm_fd, 0, flags, NPAGES * page, why, whylen);
	if (r != KSFT_PASS)
		goto out;
	r = KSFT_FAIL;
	uffd = uffd_open(why, whylen);
	if (uffd < 0)
		goto out;
	range = (struct uffdio_range){ .start = (uintptr_t)g.map, .len = NPAGES * page };
	if (ioctl(uffd, UFFDIO_UNREGISTER, &range)) {
		snprintf(why, whylen, "UFFDIO_UNREGISTER of a mapping never registered: %s", strerror(errno));
		goto out;
	}
	g.map[0] = 1;
	g.map[page] = 1;
	cached = gmem_cached_pages(g.fd, 0, 16 * page);
	if (cached != 16) {
		snprintf(why, whylen, "after an UFFDIO_UNREGISTER that had nothing to do, pages 0 and 1 touched: %ld of pages 0-15 in the file, want 16",
			 cached);
		goto out;
	}
	r = KSFT_PASS;
out:
	if (uffd >= 0)
		close(uffd);
	gfile_close(&g);
	return r;
}

/*
 * A NO_DIRECT_MAP page that cannot leave the direct map (injected: debugfs
 * kvm/fail_gmem_ndm_zap): UFFDIO_COPY fails with ENOMEM and leaves a hole,
 * nothing stays counted out of the direct map; the next copy fills it.
 */
static int copy_fails_cleanly(char *why, size_t whylen)
{
	const unsigned long long flags = FLAGS | GUEST_MEMFD_FLAG_NO_DIRECT_MAP;
	struct gfile g = { .vm = -1, .fd = -1 };
	uint8_t *src = malloc(page);
	long cached;
	int uffd = -1, r, e;
	long before;

	r = need_uffd(why, whylen);
	if (r != KSFT_PASS || !src)
		goto out;
	r = KSFT_FAIL;
	if (!gmem_has_flags(kvm_fd, flags) || access(FAIL_ZAP, F_OK)) {
		snprintf(why, whylen, "no GUEST_MEMFD_FLAG_NO_DIRECT_MAP or no %s with our modules",
			 FAIL_ZAP);
		goto out;
	}
	memset(src, 0x5a, page);
	before = gmem_counter(NDM_FOLIOS);
	if (gfile_open(&g, kvm_fd, 0, flags, 4 * page, why, whylen) != KSFT_PASS)
		goto out;
	uffd = uffd_open(why, whylen);
	if (uffd < 0)
		goto out;
	e = uffd_register(uffd, g.map, 4 * page, UFFDIO_REGISTER_MODE_MISSING, NULL);
	if (e) {
		snprintf(why, whylen, "UFFDIO_REGISTER(MISSING): %s", strerror(-e));
		goto out;
	}
	if (!gmem_fail_next_once(FAIL_ZAP)) {
		snprintf(why, whylen, "cannot arm %s", FAIL_ZAP);
		goto out;
	}
	e = uffd_copy(uffd, g.map, src, page);
	gmem_write_file(FAIL_ZAP "/probability", "0");
	if (e != -ENOMEM) {
		snprintf(why, whylen, "UFFDIO_COPY with the page failing to leave the direct map: %s, want ENOMEM",
			 e ? strerror(-e) : "worked");
		goto out;
	}
	cached = gmem_cached_pages(g.fd, 0, page);
	if (cached != 0 || gmem_counter(NDM_FOLIOS) != before) {
		snprintf(why, whylen, "after the failed copy: page 0 %s, %s %ld (was %ld)",
			 cached ? "in the file (or cachestat() failed)" : "a hole", NDM_FOLIOS,
			 gmem_counter(NDM_FOLIOS), before);
		goto out;
	}
	e = uffd_copy(uffd, g.map, src, page);
	if (e || g.map[page - 1] != 0x5a || gmem_counter(NDM_FOLIOS) != before + 1) {
		snprintf(why, whylen, "the next UFFDIO_COPY: %s, byte %d, %s %ld (want %ld)",
			 e ? strerror(-e) : "done", g.map[page - 1], NDM_FOLIOS,
			 gmem_counter(NDM_FOLIOS), before + 1);
		goto out;
	}
	r = KSFT_PASS;
out:
	if (uffd >= 0)
		close(uffd);
	gfile_close(&g);
	free(src);
	return r;
}

/*
 * A fault waiting for the VMM is killable: a process whose thread waits in
 * a MISSING fault nobody serves dies of SIGKILL at once, and the page its
 * NO_DIRECT_MAP guest_memfd had is freed (back in the direct map).
 */
static int kill_while_waiting(char *why, size_t whylen)
{
	const unsigned long long flags = FLAGS | GUEST_MEMFD_FLAG_NO_DIRECT_MAP;
	long before = gmem_counter(NDM_FOLIOS), now;
	int r, status = 0;
	pid_t pid;

	r = need_uffd(why, whylen);
	if (r != KSFT_PASS)
		return r;
	if (!gmem_has_flags(kvm_fd, flags) || before < 0) {
		snprintf(why, whylen, "no GUEST_MEMFD_FLAG_NO_DIRECT_MAP or no %s with our modules",
			 NDM_FOLIOS);
		return KSFT_FAIL;
	}
	pid = fork();
	if (pid == 0) {
		struct waiter w = { .value = -2 };
		struct gfile g;
		char buf[256];
		pthread_t t;
		int uffd;

		if (gfile_open(&g, kvm_fd, 0, flags, 32 * page, buf, sizeof(buf)) != KSFT_PASS)
			_exit(2);
		/* Pages the kill must free (NO_DIRECT_MAP fault-around: up to 0-15). */
		g.map[0] = 1;
		uffd = uffd_open(buf, sizeof(buf));
		if (uffd < 0 || uffd_register(uffd, g.map, 32 * page, UFFDIO_REGISTER_MODE_MISSING, NULL))
			_exit(3);
		w.p = g.map + 24 * page;
		pthread_create(&t, NULL, read_page, &w);
		pthread_join(t, NULL);
		_exit(4);	/* nothing serves the fault: it must not end */
	}
	usleep(300 * 1000);
	now = gmem_counter(NDM_FOLIOS);
	kill(pid, SIGKILL);
	if (now <= before) {
		waitpid(pid, &status, 0);
		snprintf(why, whylen, "%s did not grow in the child (%ld, was %ld)", NDM_FOLIOS, now,
			 before);
		return KSFT_FAIL;
	}
	for (int i = 0; i < 100; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		usleep(100 * 1000);
		status = -1;
	}
	if (status == -1) {
		snprintf(why, whylen, "the process waiting in a fault did not die within 10 s of SIGKILL");
		ksft_exit_fail_msg("%s\n", why);
	}
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
		snprintf(why, whylen, "the child ended with status %#x, want killed by SIGKILL (exit 2-3: setup failed, 4: the fault did not wait)",
			 status);
		return KSFT_FAIL;
	}
	for (int i = 0; i < 200 && (now = gmem_counter(NDM_FOLIOS)) > before; i++)
		usleep(10000);
	if (now != before) {
		snprintf(why, whylen, "%s is %ld after the kill, was %ld", NDM_FOLIOS, now, before);
		return KSFT_FAIL;
	}
	return KSFT_PASS;
}

static const struct gmem_case cases[] = {
	{ "registration: MISSING and MINOR where the kernel has mm's interface, else EINVAL", registers_where_the_kernel_can },
	{ "lazy restore by MISSING faults: random order, two threads, each page served once", restore_missing },
	{ "lazy restore by MINOR faults of written pages: UFFDIO_CONTINUE, each page once", restore_minor },
	{ "lazy restore of a NO_DIRECT_MAP file by UFFDIO_COPY", restore_no_direct_map },
	{ "lazy restore from node 0 into a mapping bound to node 1: every page on node 1", restore_numa },
	{ "lazy restore for a vCPU: KVM_MEM_USERFAULT exits, the VMM's touch served by UFFDIO_COPY", restore_vcpu },
	{ "bad input: EINVAL, EEXIST, EFAULT", bad_input },
	{ "closing the userfaultfd wakes a waiting fault, which then faults as usual", close_with_a_waiter },
	{ "in-place conversion: no event for a private page, a fault waiting on a page converted meanwhile ends in SIGBUS", conversion },
	{ "a NO_DIRECT_MAP page failing to leave the direct map: UFFDIO_COPY is ENOMEM, nothing leaks", copy_fails_cleanly },
	{ "a registered NO_DIRECT_MAP file: a vCPU fault allocates its page only, the next stays a MISSING fault", vcpu_fault_allocates_one_page },
	{ "a process waiting in a fault nobody serves dies of SIGKILL, its pages freed", kill_while_waiting },
	{ "kvmclock on a hole of a registered file: a MISSING event, the snapshot kept", kvmclock_restore_plain },
	{ "kvmclock on a hole of a registered NO_DIRECT_MAP file: a MISSING event, the snapshot kept", kvmclock_restore_ndm },
	{ "a second, unregistered mapping of a registered NO_DIRECT_MAP file faults its own page only", second_mapping_no_window },
	{ "UFFDIO_UNREGISTER of a mapping never registered keeps its host faults' window", unregister_keeps_windows },
	{ "MINOR on a page fallocate() allocated: UFFDIO_CONTINUE maps it zeroed", minor_on_allocated_page },
};

int main(int argc, char **argv)
{
	gmem_parse_case_args(argc, argv);
	page = getpagesize();
	gmem_sigbus_setup();
	kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm_fd < 0)
		ksft_exit_skip("/dev/kvm: %s\n", strerror(errno));
	gmem_require_flags(kvm_fd, FLAGS, "GUEST_MEMFD_FLAG_MMAP | INIT_SHARED");
	kernel_has_uffd = gmem_kernel_exports("handle_userfault") == 1;
	run_cases(cases, sizeof(cases) / sizeof(cases[0]));
	return 0;
}
