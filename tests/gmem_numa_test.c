// SPDX-License-Identifier: GPL-2.0
/*
 * gmem_numa_test: NUMA placement of guest_memfd memory by the memory policy
 * of its host mappings (src/virt/0020, mainline 6.19's behaviour), in a guest
 * with at least two memory nodes (qemu/boot.sh NUMA=2).
 *
 * The policy set with mbind() on a mapping belongs to the file: host faults
 * through any mapping of it, vCPU faults and fallocate() allocate where it
 * says. So that no case can pass by accident, the test runs on a CPU of one
 * node and binds the memory to the other, for each node in turn: the
 * default (first touch on the local node, checked first) would put the pages
 * elsewhere. Where a page went is asked with move_pages(2).
 *
 * get_mempolicy(MPOL_F_ADDR) through a second mapping of the file reports the
 * file's policy where kvm.ko uses mm's shared policy (the mm-shim kernel) and
 * MPOL_DEFAULT on Debian's kernel, which does not export it (docs/numa.md).
 *
 * One memory node: SKIP (the tiers that run this boot two). Modules without
 * host mappings of guest_memfd: SKIP, or FAIL with ours (gmem_test.h).
 */
#include <linux/mempolicy.h>
#include <linux/falloc.h>

#include "gmem_test.h"
#include "gmem_x86_guest.h"

#define NPAGES		16	/* = MEM_SIZE, the vCPU cases' guest_memfd */
#define MAXNODE		64	/* bits in the node masks we pass */

static long page;
static int nnodes;
static int node_cpu[MAXNODE];	/* a CPU of each node, -1 if it has none */
static bool shared_policy;	/* kvm.ko uses mm's shared policy (mm-shim) */
static int kvm_fd_numa = -1;	/* /dev/kvm, for the flags a case needs */

static long sys_mbind(void *addr, unsigned long len, int mode, unsigned long mask,
		      unsigned int flags)
{
	/* mbind() uses maxnode - 1 bits of the mask. */
	return syscall(__NR_mbind, addr, len, mode, mode == MPOL_DEFAULT ? NULL : &mask,
		       mode == MPOL_DEFAULT ? 0 : MAXNODE + 1, flags);
}

static long sys_get_mempolicy(int *mode, unsigned long *mask, void *addr)
{
	return syscall(__NR_get_mempolicy, mode, mask, MAXNODE, addr, MPOL_F_ADDR);
}

/* The node of each of @n pages from @p (mapped), or -errno, into @nodes. */
static int page_nodes(volatile uint8_t *p, int n, int *nodes)
{
	void *pages[NPAGES * 4];

	for (int i = 0; i < n; i++)
		pages[i] = (void *)(p + i * page);
	return syscall(__NR_move_pages, 0, n, pages, NULL, nodes, 0);
}

/* Check that each of @n mapped pages from @p is on node @want (-1: node i % 2). */
static int check_nodes(volatile uint8_t *p, int n, int want, const char *what,
		       char *why, size_t whylen)
{
	int nodes[NPAGES * 4];

	if (page_nodes(p, n, nodes)) {
		snprintf(why, whylen, "move_pages: %s", strerror(errno));
		return KSFT_FAIL;
	}
	for (int i = 0; i < n; i++) {
		int w = want < 0 ? i % 2 : want;

		if (nodes[i] != w) {
			snprintf(why, whylen, "%s: page %d is on node %d, want node %d", what, i,
				 nodes[i], w);
			return KSFT_FAIL;
		}
	}
	return KSFT_PASS;
}

/* Touch (write) @n pages, then check_nodes(). */
static int touch_and_check(volatile uint8_t *p, int n, int want, const char *what,
			   char *why, size_t whylen)
{
	for (int i = 0; i < n; i++)
		p[i * page] = 0x5a;
	return check_nodes(p, n, want, what, why, whylen);
}

static int other_node(int node)
{
	return node == 0 ? 1 : 0;
}

/* Run on a CPU of @node. */
static bool run_on(int node, char *why, size_t whylen)
{
	if (node_cpu[node] < 0) {
		snprintf(why, whylen, "node %d has no CPU", node);
		return false;
	}
	pin_cpu(node_cpu[node]);
	return true;
}

/* A fresh MMAP | INIT_SHARED (| @extra) guest_memfd of @npages, one mapping of it. */
struct file {
	int kvm, vm, fd;
	volatile uint8_t *map;
	size_t len;
};

static int file_open_with(struct file *f, int npages, unsigned long long extra,
			  char *why, size_t whylen)
{
	void *map;

	*f = (struct file){ .kvm = -1, .vm = -1, .fd = -1, .len = npages * page };
	f->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (f->kvm < 0) {
		snprintf(why, whylen, "/dev/kvm: %s", strerror(errno));
		return KSFT_FAIL;
	}
	f->vm = ioctl(f->kvm, KVM_CREATE_VM, 0);
	if (f->vm < 0) {
		snprintf(why, whylen, "KVM_CREATE_VM: %s", strerror(errno));
		return KSFT_FAIL;
	}
	f->fd = gmem_create(f->vm, f->len,
			    GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED | extra);
	if (f->fd < 0) {
		snprintf(why, whylen, "KVM_CREATE_GUEST_MEMFD: %s", strerror(-f->fd));
		return KSFT_FAIL;
	}
	map = gmem_map(f->fd, f->len);
	if (map == MAP_FAILED) {
		snprintf(why, whylen, "mmap: %s", strerror(errno));
		return KSFT_FAIL;
	}
	f->map = map;
	return KSFT_PASS;
}

static int file_open(struct file *f, int npages, char *why, size_t whylen)
{
	return file_open_with(f, npages, 0, why, whylen);
}

static void file_close(struct file *f)
{
	if (f->map)
		munmap((void *)f->map, f->len);
	if (f->fd >= 0)
		close(f->fd);
	if (f->vm >= 0)
		close(f->vm);
	if (f->kvm >= 0)
		close(f->kvm);
}

static bool punch(struct file *f, char *why, size_t whylen)
{
	if (fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, f->len)) {
		snprintf(why, whylen, "punch hole: %s", strerror(errno));
		return false;
	}
	return true;
}

static bool bind_file(struct file *f, volatile uint8_t *map, int mode, unsigned long mask,
		 char *why, size_t whylen)
{
	if (sys_mbind((void *)map, f->len, mode, mask, 0)) {
		snprintf(why, whylen, "mbind(mode %d, mask %#lx): %s", mode, mask, strerror(errno));
		return false;
	}
	return true;
}

/* With no policy, first touch lands on the local node: what the rest must beat. */
static int default_is_local(int node, char *why, size_t whylen)
{
	struct file f;
	int r;

	if (!run_on(node, why, whylen))
		return KSFT_FAIL;
	r = file_open(&f, NPAGES, why, whylen);
	if (r == KSFT_PASS)
		r = touch_and_check(f.map, NPAGES, node, "no policy", why, whylen);
	file_close(&f);
	return r;
}

/* mbind(@mode, node @node) from a CPU of the other node; host faults. */
static int mode_places_on(int mode, int node, char *why, size_t whylen)
{
	struct file f;
	int r;

	if (!run_on(other_node(node), why, whylen))
		return KSFT_FAIL;
	r = file_open(&f, NPAGES, why, whylen);
	if (r == KSFT_PASS && !bind_file(&f, f.map, mode, 1UL << node, why, whylen))
		r = KSFT_FAIL;
	if (r == KSFT_PASS)
		r = touch_and_check(f.map, NPAGES, node, "host fault", why, whylen);
	file_close(&f);
	return r;
}

/* Interleave over nodes 0 and 1: the page's index in the file picks the node. */
static int interleave_by_index(int mode, char *why, size_t whylen)
{
	struct file f;
	int r;

	if (!run_on(0, why, whylen))
		return KSFT_FAIL;
	r = file_open(&f, NPAGES, why, whylen);
	if (r == KSFT_PASS && !bind_file(&f, f.map, mode, 3, why, whylen))
		r = KSFT_FAIL;
	/* Touch the odd pages first: placement must not follow touch order. */
	for (int i = 1; r == KSFT_PASS && i < NPAGES; i += 2)
		f.map[i * page] = 1;
	if (r == KSFT_PASS)
		r = touch_and_check(f.map, NPAGES, -1, "interleave", why, whylen);
	file_close(&f);
	return r;
}

/*
 * Interleave set and faulted through a mapping of the file from its page 1
 * on: file page j (mapping page j - 1) still lands on node j % 2. The
 * interleave index is the page's index in the file, counted once (mainline
 * 7.2 fixed guest_memfd counting the mapping's offset twice: every page of
 * such a mapping on one node, or the parity flipped).
 */
static int interleave_at_offset(char *why, size_t whylen)
{
	volatile uint8_t *map2 = MAP_FAILED;
	int nodes[NPAGES];
	struct file f;
	int r;

	if (!run_on(0, why, whylen))
		return KSFT_FAIL;
	r = file_open(&f, NPAGES, why, whylen);
	if (r == KSFT_PASS) {
		map2 = mmap(NULL, f.len - page, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd, page);
		if (map2 == MAP_FAILED) {
			snprintf(why, whylen, "mmap at file page 1: %s", strerror(errno));
			r = KSFT_FAIL;
		}
	}
	if (r == KSFT_PASS && sys_mbind((void *)map2, f.len - page, MPOL_INTERLEAVE, 3, 0)) {
		snprintf(why, whylen, "mbind(MPOL_INTERLEAVE) at file page 1: %s", strerror(errno));
		r = KSFT_FAIL;
	}
	/* Last page first: placement must not follow touch order either. */
	for (int i = NPAGES - 2; r == KSFT_PASS && i >= 0; i--)
		map2[i * page] = 0x5a;
	if (r == KSFT_PASS && page_nodes(map2, NPAGES - 1, nodes)) {
		snprintf(why, whylen, "move_pages: %s", strerror(errno));
		r = KSFT_FAIL;
	}
	for (int j = 1; r == KSFT_PASS && j < NPAGES; j++) {
		if (nodes[j - 1] != j % 2) {
			snprintf(why, whylen, "file page %d (mapped at file page 1) is on node %d, want node %d",
				 j, nodes[j - 1], j % 2);
			r = KSFT_FAIL;
		}
	}
	if (map2 != MAP_FAILED)
		munmap((void *)map2, f.len - page);
	file_close(&f);
	return r;
}

/*
 * The policy belongs to the file: bind through one mapping, fault through a
 * second, unbound one; and what get_mempolicy() says through each.
 */
static int second_mapping(int node, char *why, size_t whylen)
{
	unsigned long mask = 0;
	volatile uint8_t *map2;
	int mode = -1, r;
	struct file f;

	if (!run_on(other_node(node), why, whylen))
		return KSFT_FAIL;
	r = file_open(&f, NPAGES, why, whylen);
	if (r != KSFT_PASS)
		goto out;
	map2 = gmem_map(f.fd, f.len);
	if (map2 == MAP_FAILED) {
		snprintf(why, whylen, "second mmap: %s", strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	if (!bind_file(&f, f.map, MPOL_BIND, 1UL << node, why, whylen))
		r = KSFT_FAIL;
	if (r == KSFT_PASS)
		r = touch_and_check(map2, NPAGES, node, "fault through the second mapping",
				    why, whylen);
	if (r == KSFT_PASS && sys_get_mempolicy(&mode, &mask, (void *)f.map)) {
		snprintf(why, whylen, "get_mempolicy(bound mapping): %s", strerror(errno));
		r = KSFT_FAIL;
	}
	if (r == KSFT_PASS && (mode != MPOL_BIND || mask != 1UL << node)) {
		snprintf(why, whylen, "get_mempolicy(bound mapping): mode %d mask %#lx, want %d %#lx",
			 mode, mask, MPOL_BIND, 1UL << node);
		r = KSFT_FAIL;
	}
	mode = -1;
	mask = 0;
	if (r == KSFT_PASS && sys_get_mempolicy(&mode, &mask, (void *)map2)) {
		snprintf(why, whylen, "get_mempolicy(second mapping): %s", strerror(errno));
		r = KSFT_FAIL;
	}
	/* mm's shared policy answers for every mapping; the module's own cannot. */
	if (r == KSFT_PASS && shared_policy && (mode != MPOL_BIND || mask != 1UL << node)) {
		snprintf(why, whylen, "get_mempolicy(second mapping): mode %d mask %#lx, want the file's %d %#lx",
			 mode, mask, MPOL_BIND, 1UL << node);
		r = KSFT_FAIL;
	}
	if (r == KSFT_PASS && !shared_policy && mode != MPOL_DEFAULT) {
		snprintf(why, whylen, "get_mempolicy(second mapping): mode %d, want MPOL_DEFAULT without mm's shared policy",
			 mode);
		r = KSFT_FAIL;
	}
	if (r == KSFT_PASS)
		snprintf(why, whylen, "second mapping reports %s",
			 shared_policy ? "the file's MPOL_BIND" : "MPOL_DEFAULT");
	munmap((void *)map2, f.len);
out:
	file_close(&f);
	return r;
}

/* KVM's own allocation: a vCPU on the other node reads a never-touched page. */
static int vcpu_fault(int node, char *why, size_t whylen)
{
	struct kvm_userspace_memory_region2 region;
	unsigned char resident = 0;
	struct vm vm = { .kvm = -1, .vm = -1, .vcpu = -1, .gmem = -1 };
	int r;

	if (!run_on(other_node(node), why, whylen))
		return KSFT_FAIL;
	vm.kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (vm.kvm < 0) {
		snprintf(why, whylen, "/dev/kvm: %s", strerror(errno));
		return KSFT_FAIL;
	}
	r = vm_create_with_gmem(&vm, 0, GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED,
				why, whylen);
	if (r != KSFT_PASS)
		goto out;
	if (sys_mbind((void *)vm.mem, MEM_SIZE, MPOL_BIND, 1UL << node, 0)) {
		snprintf(why, whylen, "mbind: %s", strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	/* A gmem-only memslot: KVM reaches the memory only through the file. */
	region = (struct kvm_userspace_memory_region2){
		.slot = 0,
		.flags = KVM_MEM_GUEST_MEMFD,
		.memory_size = MEM_SIZE,
		.guest_memfd = vm.gmem,
	};
	if (ioctl(vm.vm, KVM_SET_USER_MEMORY_REGION2, &region)) {
		snprintf(why, whylen, "KVM_SET_USER_MEMORY_REGION2: %s", strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	memcpy((void *)(vm.mem + CODE_GPA), guest_code, sizeof(guest_code));
	r = vm_create_vcpu(&vm, why, whylen);
	if (r == KSFT_PASS)
		r = vcpu_real_mode_at_code(vm.vcpu, why, whylen);
	if (r != KSFT_PASS)
		goto out;
	/* The data page is zero: the guest checks seed 0, step 0. */
	r = guest_round(&vm, 0, 0, why, whylen);
	if (r != STATUS_MATCH) {
		if (r >= 0)
			snprintf(why, whylen, "the guest reported status %d, want %d", r,
				 STATUS_MATCH);
		r = KSFT_FAIL;
		goto out;
	}
	r = KSFT_PASS;
	/* KVM allocated it, not a host fault: in the page cache before the host looks. */
	if (mincore((void *)(vm.mem + DATA_GPA), page, &resident) || !(resident & 1)) {
		snprintf(why, whylen, "the data page is not in the file after the guest read it");
		r = KSFT_FAIL;
		goto out;
	}
	(void)host_read(vm.mem + DATA_GPA);
	r = check_nodes(vm.mem + DATA_GPA, 1, node, "the page the vCPU faulted in", why, whylen);
out:
	vm_teardown(&vm);
	return r;
}

/*
 * fallocate() allocates under the policy too. Then the policy is switched to
 * the other node: a page fallocate() did not allocate would be faulted in
 * there by the host's read, so it cannot pass by the read's own placement.
 */
static int fallocate_follows(int node, char *why, size_t whylen)
{
	struct file f;
	int r;

	if (!run_on(other_node(node), why, whylen))
		return KSFT_FAIL;
	r = file_open(&f, NPAGES, why, whylen);
	if (r == KSFT_PASS && !bind_file(&f, f.map, MPOL_BIND, 1UL << node, why, whylen))
		r = KSFT_FAIL;
	if (r == KSFT_PASS && fallocate(f.fd, FALLOC_FL_KEEP_SIZE, 0, f.len)) {
		snprintf(why, whylen, "fallocate: %s", strerror(errno));
		r = KSFT_FAIL;
	}
	if (r == KSFT_PASS &&
	    !bind_file(&f, f.map, MPOL_BIND, 1UL << other_node(node), why, whylen))
		r = KSFT_FAIL;
	for (int i = 0; r == KSFT_PASS && i < NPAGES; i++)
		(void)host_read(f.map + i * page);
	if (r == KSFT_PASS)
		r = check_nodes(f.map, NPAGES, node, "fallocate", why, whylen);
	file_close(&f);
	return r;
}

/*
 * Punch and refault: the policy stays with the file; a new mbind() moves
 * later allocations; MPOL_DEFAULT gives first touch back.
 */
static int punch_rebind_default(char *why, size_t whylen)
{
	struct file f;
	int r;

	if (!run_on(0, why, whylen))
		return KSFT_FAIL;
	r = file_open(&f, NPAGES, why, whylen);
	if (r == KSFT_PASS && !bind_file(&f, f.map, MPOL_BIND, 2, why, whylen))
		r = KSFT_FAIL;
	if (r == KSFT_PASS)
		r = touch_and_check(f.map, NPAGES, 1, "bound to 1", why, whylen);
	if (r == KSFT_PASS && !punch(&f, why, whylen))
		r = KSFT_FAIL;
	if (r == KSFT_PASS)
		r = touch_and_check(f.map, NPAGES, 1, "refault after the punch", why, whylen);
	/* Rebind to node 0 and run on node 1. */
	if (r == KSFT_PASS && !run_on(1, why, whylen))
		r = KSFT_FAIL;
	if (r == KSFT_PASS && !bind_file(&f, f.map, MPOL_BIND, 1, why, whylen))
		r = KSFT_FAIL;
	if (r == KSFT_PASS && !punch(&f, why, whylen))
		r = KSFT_FAIL;
	if (r == KSFT_PASS)
		r = touch_and_check(f.map, NPAGES, 0, "rebound to 0", why, whylen);
	/* MPOL_DEFAULT, still on node 1: local first touch again. */
	if (r == KSFT_PASS && !bind_file(&f, f.map, MPOL_DEFAULT, 0, why, whylen))
		r = KSFT_FAIL;
	if (r == KSFT_PASS && !punch(&f, why, whylen))
		r = KSFT_FAIL;
	if (r == KSFT_PASS)
		r = touch_and_check(f.map, NPAGES, 1, "MPOL_DEFAULT", why, whylen);
	file_close(&f);
	return r;
}

/* A policy on half the file: only that half follows it. */
static int partial_range(char *why, size_t whylen)
{
	struct file f;
	int r;

	if (!run_on(0, why, whylen))
		return KSFT_FAIL;
	r = file_open(&f, NPAGES, why, whylen);
	if (r == KSFT_PASS && sys_mbind((void *)(f.map + 4 * page), 8 * page, MPOL_BIND, 2, 0)) {
		snprintf(why, whylen, "mbind(pages 4-11): %s", strerror(errno));
		r = KSFT_FAIL;
	}
	if (r == KSFT_PASS)
		r = touch_and_check(f.map, 4, 0, "pages 0-3", why, whylen);
	if (r == KSFT_PASS)
		r = touch_and_check(f.map + 4 * page, 8, 1, "pages 4-11 (from 4)", why, whylen);
	if (r == KSFT_PASS)
		r = touch_and_check(f.map + 12 * page, 4, 0, "pages 12-15 (from 12)", why, whylen);
	file_close(&f);
	return r;
}

/*
 * Pages already there do not move: guest_memfd folios cannot migrate. As in
 * mainline, MPOL_MF_MOVE | MPOL_MF_STRICT says so with EIO; without STRICT
 * mbind() succeeds, the pages stay, and later allocations follow.
 */
static int populated_pages_stay(char *why, size_t whylen)
{
	struct file f;
	int r;

	if (!run_on(0, why, whylen))
		return KSFT_FAIL;
	r = file_open(&f, NPAGES, why, whylen);
	if (r == KSFT_PASS)
		r = touch_and_check(f.map, NPAGES, 0, "populated", why, whylen);
	errno = 0;
	if (r == KSFT_PASS && (sys_mbind((void *)f.map, f.len, MPOL_BIND, 2,
					 MPOL_MF_MOVE | MPOL_MF_STRICT) != -1 || errno != EIO)) {
		snprintf(why, whylen, "mbind(MPOL_MF_MOVE | MPOL_MF_STRICT) on populated pages: %s, want EIO",
			 errno ? strerror(errno) : "success");
		r = KSFT_FAIL;
	}
	if (r == KSFT_PASS && sys_mbind((void *)f.map, f.len, MPOL_BIND, 2, MPOL_MF_MOVE)) {
		snprintf(why, whylen, "mbind(MPOL_MF_MOVE): %s, want success", strerror(errno));
		r = KSFT_FAIL;
	}
	if (r == KSFT_PASS)
		r = touch_and_check(f.map, NPAGES, 0, "after MPOL_MF_MOVE", why, whylen);
	if (r == KSFT_PASS && !punch(&f, why, whylen))
		r = KSFT_FAIL;
	if (r == KSFT_PASS)
		r = touch_and_check(f.map, NPAGES, 1, "refault after MPOL_MF_MOVE", why, whylen);
	file_close(&f);
	return r;
}

/*
 * NO_DIRECT_MAP (shim kernel): ranges of the mapping bound to alternating
 * nodes (pages 0-3 to the node the test does not run on, 4-7 to its own,
 * and so on), then every page touched in order, as Firecracker's
 * numa_allocation case does: each page lands on its own range's node,
 * those a fault's window allocates ahead of the touch too.
 */
static int no_direct_map_ranges(char *why, size_t whylen)
{
	struct file f;
	int r;

	if (!gmem_has_flags(kvm_fd_numa, GUEST_MEMFD_FLAG_NO_DIRECT_MAP)) {
		snprintf(why, whylen, "GUEST_MEMFD_FLAG_NO_DIRECT_MAP not offered (the kernel lacks mm-shim 0007)");
		return KSFT_SKIP;
	}
	if (!run_on(0, why, whylen))
		return KSFT_FAIL;
	r = file_open_with(&f, NPAGES, GUEST_MEMFD_FLAG_NO_DIRECT_MAP, why, whylen);
	for (int i = 0; r == KSFT_PASS && i < NPAGES; i += 4) {
		if (sys_mbind((void *)(f.map + i * page), 4 * page, MPOL_BIND,
			      1UL << ((i / 4 + 1) % 2), 0)) {
			snprintf(why, whylen, "mbind(pages %d-%d): %s", i, i + 3, strerror(errno));
			r = KSFT_FAIL;
		}
	}
	for (int i = 0; r == KSFT_PASS && i < NPAGES; i++) {
		int node;

		f.map[i * page] = 1;
		if (page_nodes(f.map + i * page, 1, &node)) {
			snprintf(why, whylen, "move_pages: %s", strerror(errno));
			r = KSFT_FAIL;
		} else if (node != (i / 4 + 1) % 2) {
			snprintf(why, whylen, "page %d of a range bound to node %d is on node %d",
				 i, (i / 4 + 1) % 2, node);
			r = KSFT_FAIL;
		}
	}
	file_close(&f);
	return r;
}

/* Bad input: mbind()'s own errnos, nothing allocated differently. */
static int bad_input(char *why, size_t whylen)
{
	static const struct {
		const char *what;
		int mode;
		unsigned long mask;
		unsigned int flags;
	} bad[] = {
		{ "a node that is not online", MPOL_BIND, 1UL << 40, 0 },
		{ "no nodes", MPOL_BIND, 0, 0 },
		{ "mode 99", 99, 1, 0 },
		{ "STATIC | RELATIVE_NODES", MPOL_BIND | MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES, 1, 0 },
		{ "flags 0x100", MPOL_BIND, 1, 0x100 },
	};
	struct file f;
	int r;

	r = file_open(&f, NPAGES, why, whylen);
	for (size_t i = 0; r == KSFT_PASS && i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		if (sys_mbind((void *)f.map, f.len, bad[i].mode, bad[i].mask, bad[i].flags) != -1 ||
		    errno != EINVAL) {
			snprintf(why, whylen, "mbind(%s): %s, want EINVAL", bad[i].what,
				 errno ? strerror(errno) : "success");
			r = KSFT_FAIL;
		}
	}
	file_close(&f);
	return r;
}

/*
 * MPOL_WEIGHTED_INTERLEAVE: mm's shared policy follows it (default weights:
 * plain interleave); the module's own policy store refuses it with EINVAL,
 * as its weights are mm's (docs/numa.md).
 */
static int weighted_interleave(char *why, size_t whylen)
{
	struct file f;
	int r;

	if (shared_policy)
		return interleave_by_index(MPOL_WEIGHTED_INTERLEAVE, why, whylen);
	r = file_open(&f, NPAGES, why, whylen);
	errno = 0;
	if (r == KSFT_PASS && (sys_mbind((void *)f.map, f.len, MPOL_WEIGHTED_INTERLEAVE, 3, 0) != -1 ||
			       errno != EINVAL)) {
		snprintf(why, whylen, "mbind(MPOL_WEIGHTED_INTERLEAVE): %s, want EINVAL without mm's shared policy",
			 errno ? strerror(errno) : "success");
		r = KSFT_FAIL;
	}
	if (r == KSFT_PASS)
		snprintf(why, whylen, "refused with EINVAL (no mm shared policy)");
	file_close(&f);
	return r;
}

#define CASE_FN(name, call)						\
	static int name(char *why, size_t whylen) { return call; }

CASE_FN(default_local_0, default_is_local(0, why, whylen))
CASE_FN(default_local_1, default_is_local(1, why, whylen))
CASE_FN(bind_0, mode_places_on(MPOL_BIND, 0, why, whylen))
CASE_FN(bind_1, mode_places_on(MPOL_BIND, 1, why, whylen))
CASE_FN(preferred_0, mode_places_on(MPOL_PREFERRED, 0, why, whylen))
CASE_FN(preferred_1, mode_places_on(MPOL_PREFERRED, 1, why, whylen))
CASE_FN(preferred_many_1, mode_places_on(MPOL_PREFERRED_MANY, 1, why, whylen))
CASE_FN(interleave, interleave_by_index(MPOL_INTERLEAVE, why, whylen))
CASE_FN(second_mapping_0, second_mapping(0, why, whylen))
CASE_FN(second_mapping_1, second_mapping(1, why, whylen))
CASE_FN(vcpu_fault_0, vcpu_fault(0, why, whylen))
CASE_FN(vcpu_fault_1, vcpu_fault(1, why, whylen))
CASE_FN(fallocate_1, fallocate_follows(1, why, whylen))

static const struct gmem_case cases[] = {
	{ "no policy: first touch on node 0 lands on node 0", default_local_0 },
	{ "no policy: first touch on node 1 lands on node 1", default_local_1 },
	{ "MPOL_BIND node 0, host faults from node 1", bind_0 },
	{ "MPOL_BIND node 1, host faults from node 0", bind_1 },
	{ "MPOL_PREFERRED node 0, host faults from node 1", preferred_0 },
	{ "MPOL_PREFERRED node 1, host faults from node 0", preferred_1 },
	{ "MPOL_PREFERRED_MANY node 1, host faults from node 0", preferred_many_1 },
	{ "MPOL_INTERLEAVE nodes 0-1: page i on node i % 2, whatever the touch order", interleave },
	{ "MPOL_INTERLEAVE through a mapping at file page 1: file page j on node j % 2", interleave_at_offset },
	{ "MPOL_WEIGHTED_INTERLEAVE", weighted_interleave },
	{ "bound to node 0 through one mapping, faults through a second land on node 0", second_mapping_0 },
	{ "bound to node 1 through one mapping, faults through a second land on node 1", second_mapping_1 },
	{ "a vCPU on node 1 faults in a gmem-only memslot page bound to node 0", vcpu_fault_0 },
	{ "a vCPU on node 0 faults in a gmem-only memslot page bound to node 1", vcpu_fault_1 },
	{ "fallocate() from node 0 allocates on bound node 1", fallocate_1 },
	{ "punch + refault keeps the policy, a rebind moves it, MPOL_DEFAULT ends it", punch_rebind_default },
	{ "a policy on pages 4-11 places only those", partial_range },
	{ "populated pages stay: MOVE|STRICT is EIO, MOVE moves nothing, refaults follow", populated_pages_stay },
	{ "bad input: offline node, no nodes, bad mode, bad mode flags, bad flags: EINVAL", bad_input },
	{ "NO_DIRECT_MAP: ranges bound to alternating nodes, pages touched in order, each on its range's node",
	  no_direct_map_ranges },
};

int main(int argc, char **argv)
{
	int kvm;

	gmem_parse_case_args(argc, argv);

	page = getpagesize();
	nnodes = read_online_nodes();
	if (nnodes < 2)
		ksft_exit_skip("one memory node: boot the guest with NUMA=2\n");
	for (int n = 0; n < nnodes && n < MAXNODE; n++)
		node_cpu[n] = first_cpu_of(n);

	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		ksft_exit_skip("/dev/kvm: %s\n", strerror(errno));
	if (!gmem_has_flags(kvm, GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED)) {
		ksft_print_msg("no GUEST_MEMFD_FLAG_MMAP | INIT_SHARED: no host mappings to bind\n");
		if (gmem_skip_or_fail() == KSFT_SKIP)
			ksft_exit_skip("these modules cannot map guest_memfd\n");
		ksft_exit_fail_msg("our modules must map guest_memfd\n");
	}
	kvm_fd_numa = kvm;
	/* kvm.ko uses mm's shared policy where the kernel exports it (mm-shim). */
	shared_policy = gmem_has_mm_hook();
	ksft_print_msg("%d nodes; CPU %d on node 0, CPU %d on node 1; %s\n", nnodes,
		       node_cpu[0], node_cpu[1],
		       shared_policy ? "mm's shared policy (mm-shim kernel)" :
				       "the module's own policy store");
	run_cases(cases, sizeof(cases) / sizeof(cases[0]));
	return 0;
}
