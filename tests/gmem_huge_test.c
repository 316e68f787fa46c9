// SPDX-License-Identifier: GPL-2.0
/*
 * gmem_huge_test: GUEST_MEMFD_FLAG_HUGEPAGE, the shared memory of a
 * guest_memfd in 2 MiB folios (src/virt/0032; provisional ABI, docs/huge-pages.md).
 *
 * Every file here is MMAP | INIT_SHARED | HUGEPAGE of a default VM, but
 * convert_inside_folio's, of a SW_PROTECTED VM that converts in place. A folio
 * is "2 MiB" when /proc/kpageflags says THP of the page mapped at an address
 * (root only: the tiers run as root); a mapping is PMD-mapped when its
 * /proc/self/smaps entry says FilePmdMapped.
 *
 * Cases:
 *   flags_offered             KVM_CAP_GUEST_MEMFD_FLAGS has the flag on
 *                             /dev/kvm and for a default VM; not for a
 *                             SW_PROTECTED VM, whose memory may be private.
 *   create_rules              the page size field: 2 MiB or none; anything
 *                             else, or the field without the flag, EINVAL;
 *                             with NO_DIRECT_MAP where that is offered; with WRITE; alone
 *                             on a 4 KiB file, as mainline's guest_memfd_test
 *                             creates every flag it is offered; a binding at
 *                             an offset that is not 2 MiB aligned, EINVAL.
 *   host_maps_pmd             an 8 MiB mapping lands 2 MiB aligned, reads
 *                             zeroes, is all FilePmdMapped once touched, each
 *                             2 MiB is one folio (4 more gmem_huge_folios), and
 *                             what was written reads back.
 *   vcpu_maps_2m              a vCPU writes a byte in each page of 14 MiB of a
 *                             16 MiB gmem-only memslot: at most 16 faults
 *                             (pf_taken; 3584 with 4 KiB folios) and at least 7
 *                             2 MiB mappings (pages_2m); the host reads the
 *                             bytes through its mapping. A page punched out of
 *                             one 2 MiB: the vCPU's 2 MiB mapping of it is gone,
 *                             and its next pass there is a fault per page.
 *   punch_splits_one_folio    punching one page out of a 2 MiB folio frees that
 *                             page only (cachestat: 1023 of 1024 cached), the
 *                             rest keeps its data, the range is 4 KiB folios
 *                             from then on (and a refill there one), the
 *                             other 2 MiB stays PMD-mapped; punching all of
 *                             the range makes it one 2 MiB folio again.
 *   punch_pinned_folio        a page punched out of a 2 MiB folio a pipe holds
 *                             (vmsplice()), so mm cannot split it: the page
 *                             reads zero, every other page keeps its data, the
 *                             folio stays whole (512 cached), the pipe's page
 *                             is the file's; the pipe gone, the punch splits
 *                             it and frees the page. Filled through the
 *                             mapping (a dirty folio) and by write() (clean).
 *   numa_policy_per_folio     mbind(MPOL_BIND) to the node this task does not
 *                             run on puts each folio there; MPOL_INTERLEAVE
 *                             over both nodes alternates them folio by folio.
 *   memcg_charge_and_fallback the folios are charged to the faulting task's
 *                             memory cgroup (file_thp); where the cgroup has no
 *                             room for 2 MiB, the range takes a 4 KiB folio
 *                             (gmem_huge_fallbacks + 1), and the page is there.
 *   crossings_refused         userfaultfd registration of a mapping of such a
 *                             file EINVAL (where the kernel has userfaultfd
 *                             for guest_memfd, a plain file's registers: the
 *                             flag is why).
 *   convert_inside_folio      a VM that converts in place (src/virt/0034): a
 *                             page of a 2 MiB folio made private SIGBUSes,
 *                             the other 511 keep their data, the folio stays
 *                             whole; the host (its mapping and a new one) and
 *                             the vCPU map it page by page; shared again, the
 *                             vCPU maps it 2 MiB; a pin of another page of
 *                             the folio refuses the conversion (EAGAIN at the
 *                             range's first page); all of it private, one
 *                             2 MiB mapping again.
 *   userfault_memslot_maps_4k a KVM_MEM_USERFAULT memslot (nothing armed) over
 *                             such a file: a vCPU maps 4 KiB pages, a fault
 *                             each, no 2 MiB mapping.
 *   kvmclock_brings_armed_page kvmclock on a hole of a 2 MiB of holes, in a
 *                             KVM_MEM_USERFAULT memslot, another page of it
 *                             armed: the clock's update on entry brings all of
 *                             the 2 MiB (cachestat), the armed page zero; the
 *                             guest's write of it still exits (EFAULT,
 *                             KVM_MEMORY_EXIT_FLAG_USERFAULT); after the
 *                             restore the guest finds what was restored.
 *   write_fills_folios        a WRITE | HUGEPAGE file (src/virt/0033): pwrite()
 *                             of a page into a hole gives the file all of its
 *                             2 MiB (cachestat), one 2 MiB folio (kpageflags,
 *                             gmem_huge_folios), the other pages zero; a write
 *                             over the end of a folio and one of a whole 2 MiB
 *                             (more than a write() batch) read back page by
 *                             page; a vCPU maps the whole one 2 MiB at a time
 *                             (pages_2m, at most 4 faults) and keeps its data.
 *   write_charges_writer      the 2 MiB folios pwrite() brings are charged to
 *                             the writer's memory cgroup (file_thp); at the
 *                             cgroup's limit a pwrite() into a hole takes a
 *                             4 KiB folio (gmem_huge_fallbacks + 1), whole.
 *   write_poisoned_folio      a page of a 2 MiB folio write() filled poisoned
 *                             (MADV_HWPOISON): mm splits the folio, pwrite()
 *                             of that page EHWPOISON, of the pages around it
 *                             done, a write over it short at the page; with a
 *                             pipe holding a page of the folio mm cannot split
 *                             it, and the same holds of the 2 MiB folio.
 *   vcpu_poisoned_folio       the vCPU's side: a page of a 2 MiB folio the host
 *                             filled poisoned before the guest touches it, mm
 *                             splitting the folio (so 4 KiB folios); again
 *                             after the guest mapped the folio 2 MiB; and, with
 *                             a pipe holding a page, unsplit: the guest writes
 *                             the other 511 pages (the host reads them)
 *                             without a 2 MiB mapping (pages_2m); its write of
 *                             the poisoned page fails KVM_RUN with EHWPOISON
 *                             and a memory fault exit naming the page, flags 0.
 *
 * Prints TAP. Without the flag (modules other than ours), cases SKIP or
 * FAIL as gmem_skip_or_fail() says.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include <linux/falloc.h>
#include <linux/mempolicy.h>

#include "gmem_flat_mode.h"
#include "gmem_uffd.h"
#include "gmem_x86_guest.h"

#define SZ_2M		(2UL << 20)
#define FLAGS		(GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED | \
			 GUEST_MEMFD_FLAG_HUGEPAGE)
#define HUGE_FOLIOS	GMEM_DEBUGFS "/kvm/gmem_huge_folios"
#define HUGE_FALLBACKS	GMEM_DEBUGFS "/kvm/gmem_huge_fallbacks"
#define KPF_THP		22
#define TEST_CGROUP	GMEM_CGROUP "/gmem_huge_test"

static long page;

/* A default VM (kvm and vm fds), or a KSFT_* code other than PASS. */
static int open_vm(int *kvm, int *vm, unsigned long type, char *why, size_t whylen)
{
	*vm = -1;
	*kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (*kvm < 0) {
		snprintf(why, whylen, "cannot open /dev/kvm: %s", strerror(errno));
		return KSFT_SKIP;
	}
	if (!gmem_has_flags(*kvm, FLAGS)) {
		snprintf(why, whylen, "no GUEST_MEMFD_FLAG_HUGEPAGE in KVM_CAP_GUEST_MEMFD_FLAGS");
		close(*kvm);
		return gmem_skip_or_fail();
	}
	*vm = ioctl(*kvm, KVM_CREATE_VM, type);
	if (*vm < 0) {
		snprintf(why, whylen, "KVM_CREATE_VM(%lu): %s", type, strerror(errno));
		close(*kvm);
		return KSFT_FAIL;
	}
	return KSFT_PASS;
}

/* A file of @len bytes of @vm with @flags, mapped; NULL (why set) on failure. */
static uint8_t *huge_map_flags(int vm, size_t len, uint64_t flags, int *fd, char *why,
			       size_t whylen)
{
	uint8_t *p;

	*fd = gmem_create(vm, len, flags);
	if (*fd < 0) {
		snprintf(why, whylen, "KVM_CREATE_GUEST_MEMFD(%zu, %#llx): %s", len,
			 (unsigned long long)flags, strerror(errno));
		return NULL;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (p == MAP_FAILED) {
		snprintf(why, whylen, "mmap: %s", strerror(errno));
		close(*fd);
		*fd = -1;	/* huge_vm_close() must not close it again */
		return NULL;
	}
	return p;
}

/* A huge file of @len bytes of @vm, mapped; NULL (why set) on failure. */
static uint8_t *huge_map(int vm, size_t len, int *fd, char *why, size_t whylen)
{
	return huge_map_flags(vm, len, FLAGS, fd, why, whylen);
}

/* The kpageflags of the page mapped at @p, or -1. */
static long long kpageflags_at(volatile uint8_t *p)
{
	uint64_t entry = 0, flags = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);
	bool ok;

	ok = fd >= 0 && pread(fd, &entry, 8, (uintptr_t)p / page * 8) == 8;
	if (fd >= 0)
		close(fd);
	/* Present, with a PFN (root only). */
	if (!ok || !(entry >> 63) || !(entry & ((1ULL << 55) - 1)))
		return -1;
	fd = open("/proc/kpageflags", O_RDONLY);
	ok = fd >= 0 && pread(fd, &flags, 8, (entry & ((1ULL << 55) - 1)) * 8) == 8;
	if (fd >= 0)
		close(fd);
	return ok ? (long long)flags : -1;
}

/* Is the page at @p (touched first) part of a 2 MiB folio? -1: cannot tell. */
static int in_huge_folio(volatile uint8_t *p)
{
	long long flags;

	(void)gmem_read_byte(p);
	flags = kpageflags_at(p);
	return flags < 0 ? -1 : !!(flags & (1LL << KPF_THP));
}

/* The @key (kB) of the smaps entry of the VMA that starts at @addr, or -1. */
static long smaps_kb(void *addr, const char *key)
{
	char line[256], start[32];
	size_t klen = strlen(key);
	bool in = false;
	long v = -1;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return -1;
	snprintf(start, sizeof(start), "%lx-", (unsigned long)addr);
	while (v < 0 && fgets(line, sizeof(line), f)) {
		if (strchr(line, '-') && strchr(line, '-') < strchr(line, ' '))
			in = !strncmp(line, start, strlen(start));
		else if (in && !strncmp(line, key, klen) && line[klen] == ':')
			v = strtol(line + klen + 1, NULL, 10);
	}
	fclose(f);
	return v;
}

static int flags_offered(char *why, size_t whylen)
{
	int kvm, vm, r, swp;

	r = open_vm(&kvm, &vm, 0, why, whylen);
	if (r != KSFT_PASS)
		return r;
	if (!gmem_has_flags(vm, GUEST_MEMFD_FLAG_HUGEPAGE)) {
		snprintf(why, whylen, "a default VM does not offer GUEST_MEMFD_FLAG_HUGEPAGE");
		r = KSFT_FAIL;
	}
	/* Our modules have SW_PROTECTED VMs; in-place conversion is off by default. */
	swp = ioctl(kvm, KVM_CREATE_VM, KVM_X86_SW_PROTECTED_VM);
	if (r == KSFT_PASS && swp < 0) {
		snprintf(why, whylen, "KVM_CREATE_VM(SW_PROTECTED): %s", strerror(errno));
		r = KSFT_FAIL;
	} else if (r == KSFT_PASS && gmem_has_flags(swp, GUEST_MEMFD_FLAG_HUGEPAGE)) {
		snprintf(why, whylen, "a SW_PROTECTED VM (private memory) offers GUEST_MEMFD_FLAG_HUGEPAGE");
		r = KSFT_FAIL;
	}
	if (swp >= 0)
		close(swp);
	close(vm);
	close(kvm);
	return r;
}

static int create_rules(char *why, size_t whylen)
{
	static const struct {
		const char *what;
		uint64_t flags;
		long size;
		int err;	/* 0: must succeed; -1: as the VM offers the flags */
	} rules[] = {
		{ "2 MiB page size", FLAGS | GUEST_MEMFD_HUGE_2MB, 4 << 20, 0 },
		{ "no page size", FLAGS, 4 << 20, 0 },
		{ "the flag alone, 4 KiB file", GUEST_MEMFD_FLAG_HUGEPAGE, 4096, 0 },
		{ "a 4 KiB tail", FLAGS, (2 << 20) + 4096, 0 },
		{ "1 MiB page size", FLAGS | (20ULL << GUEST_MEMFD_HUGE_SHIFT), 4 << 20, EINVAL },
		{ "1 GiB page size", FLAGS | (30ULL << GUEST_MEMFD_HUGE_SHIFT), 4 << 20, EINVAL },
		{ "page size without the flag", GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_HUGE_2MB,
		  4 << 20, EINVAL },
		{ "with NO_DIRECT_MAP", FLAGS | GUEST_MEMFD_FLAG_NO_DIRECT_MAP, 4 << 20, -1 },
		{ "with WRITE", FLAGS | GUEST_MEMFD_FLAG_WRITE, 4 << 20, 0 },
	};
	struct kvm_userspace_memory_region2 slot = {
		.flags = KVM_MEM_GUEST_MEMFD, .memory_size = SZ_2M,
		.guest_memfd_offset = SZ_2M / 2,
	};
	int kvm, vm, fd, r;

	r = open_vm(&kvm, &vm, 0, why, whylen);
	if (r != KSFT_PASS)
		return r;
	for (size_t i = 0; r == KSFT_PASS && i < sizeof(rules) / sizeof(rules[0]); i++) {
		int err = rules[i].err;

		/* NO_DIRECT_MAP: offered on the shim kernel (src/virt/0035). */
		if (err < 0)
			err = gmem_has_flags(vm, rules[i].flags & ~GUEST_MEMFD_HUGE_MASK) ? 0 : EINVAL;
		fd = gmem_create(vm, rules[i].size, rules[i].flags);
		if (fd >= 0)
			close(fd);
		if ((fd >= 0) != !err || (fd < 0 && errno != err)) {
			snprintf(why, whylen, "%s (flags %#llx, size %ld): %s, expected %s",
				 rules[i].what, (unsigned long long)rules[i].flags, rules[i].size,
				 fd >= 0 ? "created" : strerror(errno),
				 err ? strerror(err) : "success");
			r = KSFT_FAIL;
		}
	}
	fd = r == KSFT_PASS ? gmem_create(vm, 4 << 20, FLAGS) : -1;
	if (fd >= 0) {
		slot.guest_memfd = fd;
		if (!ioctl(vm, KVM_SET_USER_MEMORY_REGION2, &slot) || errno != EINVAL) {
			snprintf(why, whylen, "a binding at offset 1 MiB: %s, expected EINVAL",
				 strerror(errno));
			r = KSFT_FAIL;
		}
		close(fd);
	}
	close(vm);
	close(kvm);
	return r;
}

static int host_maps_pmd(char *why, size_t whylen)
{
	size_t len = 8 << 20;
	long folios, pmd;
	int kvm, vm, fd, r;
	uint8_t *p;

	r = open_vm(&kvm, &vm, 0, why, whylen);
	if (r != KSFT_PASS)
		return r;
	folios = gmem_counter(HUGE_FOLIOS);
	p = huge_map(vm, len, &fd, why, whylen);
	if (!p) {
		r = KSFT_FAIL;
		goto out_vm;
	}
	if ((uintptr_t)p % SZ_2M) {
		snprintf(why, whylen, "mmap() placed the mapping at %p, not 2 MiB aligned", p);
		r = KSFT_FAIL;
	} else if (gmem_check_zero(p, 0, len) >= 0) {
		snprintf(why, whylen, "a new file reads non-zero at %ld",
			 gmem_check_zero(p, 0, len));
		r = KSFT_FAIL;
	}
	gmem_fill(p, 0, len, 0x31);
	pmd = smaps_kb(p, "FilePmdMapped");
	if (r == KSFT_PASS && pmd != (long)(len >> 10)) {
		snprintf(why, whylen, "FilePmdMapped: %ld kB of the %zu kB mapping, expected all",
			 pmd, len >> 10);
		r = KSFT_FAIL;
	}
	for (size_t off = 0; r == KSFT_PASS && off < len; off += SZ_2M) {
		if (in_huge_folio(p + off + 5 * page) != 1) {
			snprintf(why, whylen, "the page at %zu is not in a 2 MiB folio (kpageflags)",
				 off + 5 * page);
			r = KSFT_FAIL;
		}
	}
	if (r == KSFT_PASS && gmem_counter(HUGE_FOLIOS) - folios != (long)(len / SZ_2M)) {
		snprintf(why, whylen, "gmem_huge_folios went from %ld to %ld, expected +%zu",
			 folios, gmem_counter(HUGE_FOLIOS), len / SZ_2M);
		r = KSFT_FAIL;
	}
	if (r == KSFT_PASS && gmem_check(p, 0, len, 0x31) >= 0) {
		snprintf(why, whylen, "the data differs at %ld", gmem_check(p, 0, len, 0x31));
		r = KSFT_FAIL;
	}
	munmap(p, len);
	close(fd);
out_vm:
	close(vm);
	close(kvm);
	return r;
}

/* The VM's per-VM debugfs stat @name (pf_taken, pages_2m), or -1. */
static long vm_stat(int vm, const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), GMEM_DEBUGFS "/kvm/%d-%d/%s", getpid(), vm, name);
	return gmem_counter(path);
}

/*
 * 32-bit flat protected mode, no paging: a byte (%al) in each of %ecx pages
 * from %esi, %edx apart, then OUT to port 0x10 (as --32, objdump -d):
 *   0: mov %al,(%esi)   2: add %edx,%esi   4: dec %ecx   5: jne 0
 *   7: out %al,$0x10    9: jmp 0
 */
static const uint8_t touch_code[] = {
	0x88, 0x06, 0x01, 0xd6, 0x49, 0x75, 0xf9, 0xe6, 0x10, 0xeb, 0xf5,
};

struct vcpu {
	int fd, size;
	struct kvm_run *run;
};

/* vCPU 0 of @vm in 32-bit flat protected mode; KSFT_PASS or KSFT_FAIL. */
static int vcpu_create(int kvm, int vm, struct vcpu *v, char *why, size_t whylen)
{
	v->fd = ioctl(vm, KVM_CREATE_VCPU, 0);
	v->size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	v->run = v->fd < 0 || v->size <= 0 ? MAP_FAILED :
		 mmap(NULL, v->size, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, 0);
	if (v->run == MAP_FAILED || vcpu_set_flat_mode(v->fd)) {
		snprintf(why, whylen, "vCPU set-up: %s", strerror(errno));
		return KSFT_FAIL;
	}
	return KSFT_PASS;
}

static void vcpu_destroy(struct vcpu *v)
{
	if (v->run != MAP_FAILED)
		munmap(v->run, v->size);
	if (v->fd >= 0)
		close(v->fd);
}

/*
 * The guest writes 0x5a into each of @n pages from page @first: 0 when it
 * did (its OUT), else -errno of the KVM_RUN that failed (v->run says why),
 * or -EINVAL with @why for anything else.
 */
static int vcpu_run_touch(struct vcpu *v, long first, long n, char *why, size_t whylen)
{
	struct kvm_regs regs = {
		.rip = CODE_GPA, .rflags = 2, .rax = 0x5a, .rsi = first * page,
		.rcx = n, .rdx = page,
	};

	if (ioctl(v->fd, KVM_SET_REGS, &regs)) {
		snprintf(why, whylen, "KVM_SET_REGS: %s", strerror(errno));
		return -EINVAL;
	}
	for (int i = 0; i < MAX_EXITS; i++) {
		if (ioctl(v->fd, KVM_RUN, 0)) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (v->run->exit_reason == KVM_EXIT_IO && v->run->io.port == 0x10)
			return 0;
		if (v->run->exit_reason != KVM_EXIT_INTR)
			break;
	}
	snprintf(why, whylen, "the guest did not finish: exit reason %u", v->run->exit_reason);
	return -EINVAL;
}

/* vcpu_run_touch() that must succeed: KSFT_PASS or KSFT_FAIL. */
static int vcpu_touch(struct vcpu *v, long first, long n, char *why, size_t whylen)
{
	int e = vcpu_run_touch(v, first, n, why, whylen);

	if (e && !why[0])
		snprintf(why, whylen, "KVM_RUN: %s", strerror(-e));
	return e ? KSFT_FAIL : KSFT_PASS;
}

/* Does the host read 0x5a in each of @n pages from page @first of @p? */
static bool host_sees_touch(uint8_t *p, long first, long n, char *why, size_t whylen)
{
	for (long i = first; i < first + n; i++) {
		if (p[i * page] != 0x5a) {
			snprintf(why, whylen, "the host reads %#x in page %ld, where the guest wrote 0x5a",
				 p[i * page], i);
			return false;
		}
	}
	return true;
}

/* A default VM whose vCPU runs touch_code from a huge file bound at GPA 0. */
struct huge_vm {
	int kvm, vm, fd;
	uint8_t *p;
	size_t len;
	struct vcpu v;
};

/*
 * @h: a VM of @type, a huge file of @len bytes (FLAGS and @more_flags) mapped
 * and bound as a gmem-only memslot with @slot_flags (and @bitmap,
 * KVM_MEM_USERFAULT's), the code in place and vCPU 0 ready. A KSFT_* code;
 * on a failure huge_vm_close() still undoes what was done.
 */
static int huge_vm_open_type(struct huge_vm *h, unsigned long type, size_t len,
			     uint64_t more_flags, uint32_t slot_flags, void *bitmap, char *why,
			     size_t whylen)
{
	struct kvm_userspace_memory_region2 slot = {
		.flags = KVM_MEM_GUEST_MEMFD | slot_flags, .memory_size = len,
		.userfault_bitmap = (uintptr_t)bitmap,
	};
	int r;

	*h = (struct huge_vm){ .kvm = -1, .vm = -1, .fd = -1, .len = len,
			       .v = { .fd = -1, .run = MAP_FAILED } };
	r = open_vm(&h->kvm, &h->vm, type, why, whylen);
	if (r != KSFT_PASS)
		return r;
	h->p = huge_map_flags(h->vm, len, FLAGS | more_flags, &h->fd, why, whylen);
	if (!h->p)
		return KSFT_FAIL;
	slot.guest_memfd = h->fd;
	slot.userspace_addr = (uintptr_t)h->p;
	if (ioctl(h->vm, KVM_SET_USER_MEMORY_REGION2, &slot)) {
		snprintf(why, whylen, "KVM_SET_USER_MEMORY_REGION2(flags %#x): %s", slot.flags,
			 strerror(errno));
		return KSFT_FAIL;
	}
	memcpy(h->p + CODE_GPA, touch_code, sizeof(touch_code));
	return vcpu_create(h->kvm, h->vm, &h->v, why, whylen);
}

/* huge_vm_open_type() of a default VM. */
static int huge_vm_open(struct huge_vm *h, size_t len, uint64_t more_flags, uint32_t slot_flags,
			void *bitmap, char *why, size_t whylen)
{
	return huge_vm_open_type(h, 0, len, more_flags, slot_flags, bitmap, why, whylen);
}

/* The guest touches @n pages from page @first; *@pf: the VM's faults meanwhile. */
static int huge_vm_touch(struct huge_vm *h, long first, long n, long *pf, char *why,
			 size_t whylen)
{
	long before = vm_stat(h->vm, "pf_taken");
	int r = vcpu_touch(&h->v, first, n, why, whylen);

	*pf = before < 0 ? -1 : vm_stat(h->vm, "pf_taken") - before;
	return r;
}

static void huge_vm_close(struct huge_vm *h)
{
	vcpu_destroy(&h->v);
	if (h->p)
		munmap(h->p, h->len);
	if (h->fd >= 0)
		close(h->fd);
	if (h->vm >= 0)
		close(h->vm);
	if (h->kvm >= 0)
		close(h->kvm);
}

static int vcpu_maps_2m(char *why, size_t whylen)
{
	size_t len = 16 << 20;
	long first = SZ_2M / page, n = len / page - first, pf, huge, hole = 2 * SZ_2M / page + 1;
	struct huge_vm h;
	int r;

	r = huge_vm_open(&h, len, 0, 0, NULL, why, whylen);
	if (r == KSFT_PASS)
		r = huge_vm_touch(&h, first, n, &pf, why, whylen);
	if (r != KSFT_PASS)
		goto out;
	huge = vm_stat(h.vm, "pages_2m");
	ksft_print_msg("vcpu_maps_2m: %ld pages touched: %ld vCPU faults, %ld 2 MiB mappings\n",
		       n, pf, huge);
	if (pf < 0 || pf > 16 || huge < (long)(len / SZ_2M - 1)) {
		snprintf(why, whylen, "touching %ld pages took %ld vCPU faults (at most 16 expected) and left %ld 2 MiB mappings (at least %zu expected)",
			 n, pf, huge, len / SZ_2M - 1);
		r = KSFT_FAIL;
	} else if (!host_sees_touch(h.p, first, n, why, whylen)) {
		r = KSFT_FAIL;
	}
	if (r != KSFT_PASS)
		goto out;

	/* A punched page: the vCPU maps its 2 MiB range with 4 KiB pages from then on. */
	if (fallocate(h.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, hole * page, page)) {
		snprintf(why, whylen, "punching page %ld: %s", hole, strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	r = huge_vm_touch(&h, hole - 1, SZ_2M / page - 1, &pf, why, whylen);
	if (r != KSFT_PASS)
		goto out;
	if (vm_stat(h.vm, "pages_2m") != huge - 1 || pf < (long)(SZ_2M / page) - 1) {
		snprintf(why, whylen, "after a punch in a 2 MiB range the vCPU took %ld faults there and has %ld 2 MiB mappings, expected a fault per page and %ld",
			 pf, vm_stat(h.vm, "pages_2m"), huge - 1);
		r = KSFT_FAIL;
	} else if (!host_sees_touch(h.p, hole - 1, SZ_2M / page - 1, why, whylen)) {
		r = KSFT_FAIL;
	}
out:
	huge_vm_close(&h);
	return r;
}

/* The first byte of @p's @len outside the page at @hole that is not gmem_pat(@seed), or -1. */
static long bad_around_hole(const uint8_t *p, long hole, size_t len, uint8_t seed)
{
	long bad = gmem_check(p, 0, hole, seed);

	return bad >= 0 ? bad : gmem_check(p, hole + page, len, seed);
}

static int punch_splits_one_folio(char *why, size_t whylen)
{
	size_t len = 4 << 20;
	long hole = SZ_2M + page, cached, folios;
	int kvm, vm, fd, r;
	uint8_t *p;

	r = open_vm(&kvm, &vm, 0, why, whylen);
	if (r != KSFT_PASS)
		return r;
	p = huge_map(vm, len, &fd, why, whylen);
	if (!p) {
		r = KSFT_FAIL;
		goto out_vm;
	}
	gmem_fill(p, 0, len, 0x47);
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, hole, page)) {
		snprintf(why, whylen, "punching page %ld: %s", hole / page, strerror(errno));
		r = KSFT_FAIL;
		goto out_file;
	}
	cached = gmem_cached_pages(fd, 0, len);
	if (cached != (long)(len / page) - 1) {
		snprintf(why, whylen, "%ld pages cached after punching one of %zu, expected %zu",
			 cached, len / page, len / page - 1);
		r = KSFT_FAIL;
	} else if (bad_around_hole(p, hole, len, 0x47) >= 0) {
		snprintf(why, whylen, "the data around the hole changed");
		r = KSFT_FAIL;
	} else if (gmem_check_zero(p, hole, hole + page) >= 0) {
		snprintf(why, whylen, "the punched page does not read zero");
		r = KSFT_FAIL;
	} else if (in_huge_folio(p + hole) != 0 || in_huge_folio(p + hole + page) != 0) {
		snprintf(why, whylen, "the punched range is still (or again) a 2 MiB folio");
		r = KSFT_FAIL;
	} else if (in_huge_folio(p) != 1 || smaps_kb(p, "FilePmdMapped") != 2048) {
		snprintf(why, whylen, "the first 2 MiB is no longer one PMD-mapped folio (FilePmdMapped %ld kB)",
			 smaps_kb(p, "FilePmdMapped"));
		r = KSFT_FAIL;
	}
	if (r != KSFT_PASS)
		goto out_file;

	folios = gmem_counter(HUGE_FOLIOS);
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, SZ_2M, SZ_2M)) {
		snprintf(why, whylen, "punching the second 2 MiB: %s", strerror(errno));
		r = KSFT_FAIL;
	} else if (in_huge_folio(p + hole) != 1 ||
		   gmem_counter(HUGE_FOLIOS) != folios + 1) {
		snprintf(why, whylen, "all of a split range punched and touched again is not one 2 MiB folio (gmem_huge_folios %ld -> %ld)",
			 folios, gmem_counter(HUGE_FOLIOS));
		r = KSFT_FAIL;
	}
out_file:
	munmap(p, len);
	close(fd);
out_vm:
	close(vm);
	close(kvm);
	return r;
}

static long sys_mbind(void *addr, unsigned long len, int mode, unsigned long mask)
{
	/* mbind() uses maxnode - 1 bits of the mask. */
	return syscall(__NR_mbind, addr, len, mode, &mask, 65, 0);
}

/* The node of the page at @p (touched first), or -1. */
static int node_of(volatile uint8_t *p)
{
	void *pages[1] = { (void *)p };
	int node = -1;

	(void)gmem_read_byte(p);
	if (syscall(__NR_move_pages, 0, 1, pages, NULL, &node, 0))
		return -1;
	return node;
}

/*
 * A default VM, this thread on a CPU of node 0 (its affinity saved in
 * @all_cpus), for a case that binds memory to node 1: nothing lands there
 * by luck. A KSFT_* code other than PASS where that cannot be had.
 */
static int open_vm_on_node0(int *kvm, int *vm, cpu_set_t *all_cpus, char *why, size_t whylen)
{
	int cpu, r;

	if (read_online_nodes() < 2) {
		snprintf(why, whylen, "one memory node: boot the guest with NUMA=2");
		return KSFT_SKIP;
	}
	cpu = first_cpu_of(0);
	if (cpu < 0) {
		snprintf(why, whylen, "node 0 has no CPU");
		return KSFT_FAIL;
	}
	r = open_vm(kvm, vm, 0, why, whylen);
	if (r != KSFT_PASS)
		return r;
	sched_getaffinity(0, sizeof(*all_cpus), all_cpus);
	pin_cpu(cpu);
	return KSFT_PASS;
}

static int numa_policy_per_folio(char *why, size_t whylen)
{
	size_t len = 8 << 20;
	int kvm, vm, fd, r, want, node;
	cpu_set_t all_cpus;
	uint8_t *p;

	r = open_vm_on_node0(&kvm, &vm, &all_cpus, why, whylen);
	if (r != KSFT_PASS)
		return r;
	p = huge_map(vm, len, &fd, why, whylen);
	if (!p) {
		r = KSFT_FAIL;
		goto out_vm;
	}
	/* The first 4 MiB bound to node 1 (not this CPU's), the rest interleaved. */
	if (sys_mbind(p, len / 2, MPOL_BIND, 2) ||
	    sys_mbind(p + len / 2, len / 2, MPOL_INTERLEAVE, 3)) {
		snprintf(why, whylen, "mbind: %s", strerror(errno));
		r = KSFT_FAIL;
		goto out_file;
	}
	for (size_t off = 0; r == KSFT_PASS && off < len; off += SZ_2M / 2) {
		/* Interleaving counts folios from the start of the file. */
		want = off < len / 2 ? 1 : (int)(off / SZ_2M) % 2;
		node = node_of(p + off + 3 * page);
		if (node != want || in_huge_folio(p + off) != 1) {
			snprintf(why, whylen, "the page at %zu (%s) is on node %d in a %s folio, expected node %d in a 2 MiB one",
				 off + 3 * page, off < len / 2 ? "MPOL_BIND 1" : "MPOL_INTERLEAVE",
				 node, in_huge_folio(p + off) == 1 ? "2 MiB" : "small", want);
			r = KSFT_FAIL;
		}
	}
out_file:
	munmap(p, len);
	close(fd);
out_vm:
	sched_setaffinity(0, sizeof(all_cpus), &all_cpus);
	close(vm);
	close(kvm);
	return r;
}

/*
 * pwrite() of @n pages from page @index, gmem_pat(@seed) of their file
 * offsets, from a buffer that never touched the file's mapping; false (why
 * set) on a short or failed write.
 */
static bool write_pages(int fd, long index, long n, uint8_t seed, char *why, size_t whylen)
{
	size_t len = n * page, off = index * page;
	uint8_t *buf = malloc(len);
	ssize_t done;

	for (size_t i = 0; buf && i < len; i++)
		buf[i] = gmem_pat(off + i, seed);
	done = buf ? pwrite(fd, buf, len, off) : -1;
	free(buf);
	if (done != (ssize_t)len) {
		snprintf(why, whylen, "pwrite of pages %ld-%ld: %s", index, index + n - 1,
			 done < 0 ? strerror(errno) : "short");
		return false;
	}
	return true;
}

/* Do the @n pages from @index read what write_pages(@seed) put there? */
static bool reads_written(const uint8_t *p, long index, long n, uint8_t seed, char *why,
			  size_t whylen)
{
	long bad = gmem_check(p, index * page, (index + n) * page, seed);

	if (bad >= 0)
		snprintf(why, whylen, "byte %ld of page %ld reads 0x%02x, write() put 0x%02x there",
			 bad % page, bad / page, p[bad], gmem_pat(bad, seed));
	return bad < 0;
}

/*
 * A pipe holding the page at @p (vmsplice()): mm cannot split its folio
 * while the pipe lasts. @pipefd starts as -1, -1; unpin_pipe() closes it.
 */
static bool pin_in_pipe(uint8_t *p, int pipefd[2], char *why, size_t whylen)
{
	struct iovec iov = { .iov_base = p, .iov_len = page };

	if (!pipe(pipefd) && vmsplice(pipefd[1], &iov, 1, 0) == (ssize_t)page)
		return true;
	snprintf(why, whylen, "vmsplice of a page of the file into a pipe: %s", strerror(errno));
	return false;
}

/* Close the pipe of pin_in_pipe(), if it was made: its page is let go. */
static void unpin_pipe(int pipefd[2])
{
	if (pipefd[0] >= 0) {
		close(pipefd[0]);
		close(pipefd[1]);
	}
	pipefd[0] = pipefd[1] = -1;
}

/*
 * A punch of one page of a 2 MiB folio that something else holds (a page
 * of it in a pipe, vmsplice()), so that mm cannot split it: the punched
 * page must read zero and every other page keep its data, the folio whole
 * (nothing freed while the pin lasts), and the pipe's page what it held.
 * Once the pipe is gone, the same punch splits the folio and frees the
 * page. The folio is filled through the host's mapping (it is dirty then)
 * or, @by_write, by write() (it is not). 6.12's truncate, left to itself,
 * neither zeroes such a folio's punched part (guest_memfd's mapping is
 * AS_INACCESSIBLE) nor keeps one that is not dirty: it drops all 2 MiB.
 * KVM patch 0032 clears a punch's part of a folio and marks it dirty.
 */
static int punch_pinned(bool by_write, char *why, size_t whylen)
{
	size_t len = 4 << 20;
	long pinned = SZ_2M + 10 * page, hole = SZ_2M + 100 * page, cached, bad;
	int kvm, vm, fd, r, pipefd[2] = { -1, -1 };
	uint8_t *p, *buf = NULL;

	r = open_vm(&kvm, &vm, 0, why, whylen);
	if (r != KSFT_PASS)
		return r;
	p = huge_map_flags(vm, len, FLAGS | (by_write ? GUEST_MEMFD_FLAG_WRITE : 0), &fd, why,
			   whylen);
	if (!p) {
		r = KSFT_FAIL;
		goto out_vm;
	}
	r = KSFT_FAIL;
	if (!by_write)
		gmem_fill(p, 0, len, 0x47);
	else if (!write_pages(fd, 0, len / page, 0x47, why, whylen))
		goto out_file;
	if (!pin_in_pipe(p + pinned, pipefd, why, whylen))
		goto out_file;
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, hole, page)) {
		snprintf(why, whylen, "punching page %ld of a pinned 2 MiB folio: %s", hole / page,
			 strerror(errno));
		goto out_file;
	}
	cached = gmem_cached_pages(fd, SZ_2M, SZ_2M);
	bad = bad_around_hole(p, hole, len, 0x47);
	if (bad >= 0) {
		snprintf(why, whylen, "a punch of page %ld of a 2 MiB folio a pipe holds, filled by %s, lost page %ld's data (reads %#x); %ld of the folio's 512 pages in the file",
			 hole / page, by_write ? "write()" : "the mapping", bad / page, p[bad], cached);
		goto out_file;
	}
	bad = gmem_check_zero(p, hole, hole + page);
	if (bad >= 0) {
		snprintf(why, whylen, "the punched page %ld of a 2 MiB folio a pipe holds, filled by %s, reads %#x at byte %ld, not zero",
			 hole / page, by_write ? "write()" : "the mapping", p[bad], bad - hole);
		goto out_file;
	}
	if (cached != 512 || in_huge_folio(p + hole + page) != 1) {
		snprintf(why, whylen, "after the punch: %ld of the pinned folio's 512 pages in the file, in a 2 MiB folio %d (expected 512, 1: not split, nothing freed)",
			 cached, in_huge_folio(p + hole + page));
		goto out_file;
	}
	buf = malloc(page);
	if (!buf || read(pipefd[0], buf, page) != (ssize_t)page) {
		snprintf(why, whylen, "reading the pipe's page: %s", strerror(errno));
		goto out_file;
	}
	for (long b = 0; b < page; b++) {
		if (buf[b] != gmem_pat(pinned + b, 0x47)) {
			snprintf(why, whylen, "the pipe's page reads %#x at byte %ld, not what the file held",
				 buf[b], b);
			goto out_file;
		}
	}
	unpin_pipe(pipefd);

	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, hole, page)) {
		snprintf(why, whylen, "punching page %ld again: %s", hole / page, strerror(errno));
		goto out_file;
	}
	cached = gmem_cached_pages(fd, SZ_2M, SZ_2M);
	if (cached != 511 || in_huge_folio(p + hole + page) != 0) {
		snprintf(why, whylen, "the pin gone, a punch of the page: %ld of 512 pages in the file, in a 2 MiB folio %d (expected 511, 0: split, the page freed)",
			 cached, in_huge_folio(p + hole + page));
		goto out_file;
	}
	if (bad_around_hole(p, hole, len, 0x47) >= 0 || gmem_check_zero(p, hole, hole + page) >= 0) {
		snprintf(why, whylen, "the pin gone, after the punch: the data around the hole changed, or the hole is not zero");
		goto out_file;
	}
	r = KSFT_PASS;
out_file:
	free(buf);
	unpin_pipe(pipefd);
	munmap(p, len);
	close(fd);
out_vm:
	close(vm);
	close(kvm);
	return r;
}

/* Both fillings, each run whatever the other did: a failure names both. */
static int punch_pinned_folio(char *why, size_t whylen)
{
	char by_write[256] = "";
	int r = punch_pinned(false, why, whylen);
	int w = punch_pinned(true, by_write, sizeof(by_write));
	size_t n = strlen(why);

	if (w != KSFT_PASS)
		snprintf(why + n, whylen - n, "%s%s", n ? "; " : "", by_write);
	return r != KSFT_PASS ? r : w;
}

/*
 * The 2 MiB folios a task in a new memory cgroup brings into the file, by
 * touching its mapping or (@write) by pwrite(), are that cgroup's file_thp;
 * with room for 1 MiB more, the next hole it brings takes a 4 KiB folio,
 * counted in gmem_huge_fallbacks, and the page is there.
 */
static int charged_to_the_task(bool write, char *why, size_t whylen)
{
	size_t len = 8 << 20;
	long thp = -1, current = -1, fallbacks, hole = 2 * SZ_2M / page + 9;
	const char *how = write ? "pwrite()" : "touch";
	char max[32], path[128];
	int kvm, vm, fd, r;
	uint8_t *p;

	r = open_vm(&kvm, &vm, 0, why, whylen);
	if (r != KSFT_PASS)
		return r;
	if (!gmem_cgroup_enter_new(TEST_CGROUP)) {
		snprintf(why, whylen, "cannot set up a memory cgroup at %s: %s", TEST_CGROUP,
			 strerror(errno));
		r = KSFT_FAIL;
		goto out_vm;
	}
	p = huge_map_flags(vm, len, FLAGS | (write ? GUEST_MEMFD_FLAG_WRITE : 0), &fd, why,
			   whylen);
	if (!p) {
		r = KSFT_FAIL;
		goto out_cg;
	}
	r = KSFT_FAIL;
	/* Two 2 MiB: all of them touched, or a page of each written. */
	if (!write)
		gmem_fill(p, 0, 2 * SZ_2M, 0x19);
	else if (!write_pages(fd, 3, 1, 1, why, whylen) ||
		 !write_pages(fd, SZ_2M / page + 5, 1, 1, why, whylen))
		goto out_file;
	/* memory.stat is flushed every 2 s, or past a threshold of updates. */
	for (int i = 0; i < 10 && thp < 2 * (long)SZ_2M; i++) {
		thp = gmem_cgroup_stat(TEST_CGROUP, "file_thp");
		if (thp < 2 * (long)SZ_2M)
			sleep(1);
	}
	if (thp < 2 * (long)SZ_2M) {
		snprintf(why, whylen, "%ld bytes of file_thp charged to the cgroup that %s %lu",
			 thp, write ? "wrote a page into two 2 MiB holes of" : "touched",
			 2 * SZ_2M);
		goto out_file;
	}

	/* Room for 1 MiB more: the next 2 MiB range must take 4 KiB folios. */
	snprintf(path, sizeof(path), "%s/memory.current", TEST_CGROUP);
	current = gmem_counter(path);
	snprintf(max, sizeof(max), "%ld", current + (1 << 20));
	snprintf(path, sizeof(path), "%s/memory.max", TEST_CGROUP);
	fallbacks = gmem_counter(HUGE_FALLBACKS);
	if (current < 0 || !gmem_write_file(path, max)) {
		snprintf(why, whylen, "cannot limit the cgroup to %s bytes: %s", max,
			 strerror(errno));
		goto out_file;
	}
	if (write ? !write_pages(fd, hole, 1, 2, why, whylen) :
		    gmem_sigbus(p + hole * page, true)) {
		if (!why[0])
			snprintf(why, whylen, "at the cgroup's limit a touch of a hole: SIGBUS");
	} else if (in_huge_folio(p + hole * page) != 0 ||
		   gmem_counter(HUGE_FALLBACKS) != fallbacks + 1 ||
		   gmem_cached_pages(fd, 2 * SZ_2M, SZ_2M) != 1) {
		snprintf(why, whylen, "at the cgroup's limit a %s of a hole took %s folio, gmem_huge_fallbacks %ld -> %ld, %ld pages cached in its 2 MiB",
			 how, in_huge_folio(p + hole * page) ? "a 2 MiB" : "a 4 KiB", fallbacks,
			 gmem_counter(HUGE_FALLBACKS), gmem_cached_pages(fd, 2 * SZ_2M, SZ_2M));
	} else if (!write || (reads_written(p, hole, 1, 2, why, whylen) &&
			      reads_written(p, 3, 1, 1, why, whylen))) {
		r = KSFT_PASS;
	}
	gmem_write_file(path, "max");
out_file:
	munmap(p, len);
	close(fd);
out_cg:
	gmem_cgroup_leave(TEST_CGROUP);
out_vm:
	close(vm);
	close(kvm);
	return r;
}

static int memcg_charge_and_fallback(char *why, size_t whylen)
{
	return charged_to_the_task(false, why, whylen);
}

/* write() allocates as a fault does: the same, the folios brought by pwrite(). */
static int write_charges_writer(char *why, size_t whylen)
{
	return charged_to_the_task(true, why, whylen);
}

/* Set the sysctl @path to @v, keeping what it was in @old (-1: none). */
static bool sysctl_set(const char *path, long v, long *old)
{
	char buf[32];

	*old = gmem_counter(path);
	snprintf(buf, sizeof(buf), "%ld", v);
	return *old >= 0 && gmem_write_file(path, buf);
}

static void sysctl_restore(const char *path, long old)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%ld", old);
	if (old >= 0)
		gmem_write_file(path, buf);
}

/* Free blocks of 2 MiB or more on @node (/proc/buddyinfo), or -1. */
static long free_huge_blocks(int node)
{
	char line[512], prefix[32];
	long n = -1, c[11];
	FILE *f = fopen("/proc/buddyinfo", "r");

	if (!f)
		return -1;
	snprintf(prefix, sizeof(prefix), "Node %d,", node);
	while (fgets(line, sizeof(line), f)) {
		char *q = strstr(line, "zone");

		if (strncmp(line, prefix, strlen(prefix)) || !q)
			continue;
		q += 4;
		while (*q == ' ')
			q++;
		q = strchr(q, ' ');	/* past the zone's name */
		if (!q || sscanf(q, "%ld %ld %ld %ld %ld %ld %ld %ld %ld %ld %ld", &c[0], &c[1],
				 &c[2], &c[3], &c[4], &c[5], &c[6], &c[7], &c[8], &c[9],
				 &c[10]) != 11)
			continue;
		n = (n < 0 ? 0 : n) + c[9] + 2 * c[10];
	}
	fclose(f);
	return n;
}

/* @node's free memory in KiB (its sysfs meminfo), or -1. */
static long node_free_kb(int node)
{
	char path[64], line[128];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo", node);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Node %*d MemFree: %ld kB", &kb) == 1)
			break;
	}
	if (f)
		fclose(f);
	return kb;
}

/*
 * The first round stops filling with this much of node 1 still free: a
 * fill that runs the node down to its watermark ends in a 4 KiB fallback
 * there, which the OOM killer answers (make check of cfce71e: the test
 * killed at node 1's min watermark). After the first round's punch the
 * node has 511 free pages of each 2 MiB it filled, and a 2 MiB page fails
 * only for want of a free block.
 */
#define FILL_HEADROOM_KB	(64L << 10)

#define EXTFRAG		"/proc/sys/vm/extfrag_threshold"
#define PROACTIVE	"/proc/sys/vm/compaction_proactiveness"
#define PCP_FRACTION	"/proc/sys/vm/percpu_pagelist_high_fraction"
/* A fraction so small a share that each per-CPU list gets its floor, 4 batches. */
#define PCP_FLOOR	(1 << 20)

/*
 * A node with no free 2 MiB block: a hole's first touch takes 4 KiB folios
 * on that node, counted in gmem_huge_fallbacks, and the node's next free
 * 2 MiB block makes 2 MiB folios again. The node is fragmented with
 * guest_memfd's own memory, which compaction cannot move: 2 MiB folios
 * bound to it until the first fallback, then each punched down to its
 * first page but one, kept whole: punched at the end, it is the node's
 * one free 2 MiB block. (Not the filler freed: then the node's blocks
 * come back only as fast as whatever took single pages of them while the
 * node was fragmented, slab and the per-CPU lists, gives them back.) The
 * per-CPU lists are held to their floor (percpu_pagelist_high_fraction)
 * for that punch: a 2 MiB page freed onto one is over that at once and
 * goes on to the buddy lists, where an allocation sees it; by default the
 * list would keep it, out of the watermark check's sight, until vmstat's
 * work. Compaction is off meanwhile (vm.extfrag_threshold 1000: no
 * request's fragmentation is bad enough; proactive compaction 0), so that
 * neither direct compaction nor kcompactd makes a free block out of the
 * node's movable memory behind the test's back.
 */
static int fragmented_node_falls_back(char *why, size_t whylen)
{
	size_t fill_len = 4UL << 30, len = 8 << 20, filled = 0, off, whole = SIZE_MAX;
	long extfrag = -1, proactive = -1, pcp_fraction = -1, base, fallbacks;
	int kvm, vm, fill_fd = -1, fd = -1, r, node, rounds = 0;
	uint8_t *fill = MAP_FAILED, *p = NULL;
	time_t t0 = time(NULL);
	cpu_set_t all_cpus;

	r = open_vm_on_node0(&kvm, &vm, &all_cpus, why, whylen);
	if (r != KSFT_PASS)
		return r;
	/* Should node 1 run out after all, the OOM killer takes this test. */
	gmem_write_file("/proc/self/oom_score_adj", "1000");
	if (!sysctl_set(EXTFRAG, 1000, &extfrag) || !sysctl_set(PROACTIVE, 0, &proactive)) {
		snprintf(why, whylen, "cannot turn compaction off (%s, %s): %s", EXTFRAG,
			 PROACTIVE, strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}

	fill_fd = gmem_create(vm, fill_len, FLAGS);
	if (fill_fd >= 0)
		fill = mmap(NULL, fill_len, PROT_READ | PROT_WRITE, MAP_SHARED, fill_fd, 0);
	if (fill == MAP_FAILED || sys_mbind(fill, fill_len, MPOL_BIND, 2)) {
		snprintf(why, whylen, "a %zu GiB HUGEPAGE file bound to node 1: %s",
			 fill_len >> 30, strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	if (free_huge_blocks(1) < 0) {
		snprintf(why, whylen, "node 1 is not in /proc/buddyinfo");
		r = KSFT_FAIL;
		goto out;
	}
	/*
	 * Fill until a 2 MiB allocation fails, then punch what was filled
	 * down to one page per 2 MiB; again while node 1 still has a free
	 * 2 MiB block (the watermarks keep some back while the node is full).
	 */
	for (rounds = 0; free_huge_blocks(1) != 0; rounds++) {
		size_t from = filled;

		long folios = gmem_counter(HUGE_FOLIOS), now;

		base = gmem_counter(HUGE_FALLBACKS);
		if (base < 0 || rounds == 8) {
			snprintf(why, whylen, "node 1 still has %ld free 2 MiB blocks after %d rounds, %zu MiB filled (gmem_huge_fallbacks %ld)",
				 free_huge_blocks(1), rounds, filled >> 20, base);
			r = KSFT_FAIL;
			goto out;
		}
		for (off = from; off < fill_len; off += SZ_2M) {
			long free_kb = node_free_kb(1);

			if (!rounds && free_kb >= 0 && free_kb < FILL_HEADROOM_KB)
				break;
			/*
			 * Its first page: that takes its 2 MiB where one is
			 * free, one 4 KiB page where none is (not 512 on a
			 * node at its watermark, which would be an OOM).
			 */
			if (fallocate(fill_fd, FALLOC_FL_KEEP_SIZE, off, page)) {
				snprintf(why, whylen, "filling node 1: fallocate at %zu MiB: %s",
					 off >> 20, strerror(errno));
				r = KSFT_FAIL;
				goto out;
			}
			if (gmem_counter(HUGE_FALLBACKS) != base) {
				off += SZ_2M;	/* its one page is in the file */
				break;
			}
			/* Not on and on into an OOM where no folio is 2 MiB. */
			now = gmem_counter(HUGE_FOLIOS);
			if (now != folios + 1) {
				snprintf(why, whylen, "fallocate of the 2 MiB at %zu MiB made neither a 2 MiB folio nor a counted fallback (gmem_huge_folios %ld -> %ld)",
					 off >> 20, folios, now);
				r = KSFT_FAIL;
				goto out;
			}
			folios = now;
			if (whole == SIZE_MAX)
				whole = off;
		}
		filled = off;
		for (off = from; off < filled; off += SZ_2M) {
			if (off == whole)
				continue;
			if (fallocate(fill_fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE,
				      off + page, SZ_2M - page)) {
				snprintf(why, whylen, "punching the filler at %zu MiB: %s",
					 off >> 20, strerror(errno));
				r = KSFT_FAIL;
				goto out;
			}
		}
	}

	if (whole == SIZE_MAX) {
		snprintf(why, whylen, "node 1 had no free 2 MiB block to begin with");
		r = KSFT_FAIL;
		goto out;
	}
	p = huge_map(vm, len, &fd, why, whylen);
	if (!p || sys_mbind(p, len, MPOL_BIND, 2)) {
		if (p)
			snprintf(why, whylen, "mbind: %s", strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	fallbacks = gmem_counter(HUGE_FALLBACKS);
	gmem_fill(p, 0, SZ_2M, 0x2b);
	node = node_of(p + 3 * page);
	if (in_huge_folio(p) != 0 || gmem_counter(HUGE_FALLBACKS) != fallbacks + 1 ||
	    gmem_cached_pages(fd, 0, SZ_2M) != (long)(SZ_2M / page) || node != 1 ||
	    gmem_check(p, 0, SZ_2M, 0x2b) != -1) {
		snprintf(why, whylen, "node 1 fragmented (%zu MiB filled, one page kept per 2 MiB): the touch took %s folio on node %d, gmem_huge_fallbacks %ld -> %ld, %ld of 512 pages cached",
			 filled >> 20, in_huge_folio(p) == 1 ? "a 2 MiB" : "4 KiB", node,
			 fallbacks, gmem_counter(HUGE_FALLBACKS), gmem_cached_pages(fd, 0, SZ_2M));
		r = KSFT_FAIL;
		goto out;
	}
	ksft_print_msg("node 1 fragmented: %zu MiB of 2 MiB folios bound there in %d rounds, one page of each kept (%lld s); a touch took 4 KiB folios\n",
		       filled >> 20, rounds, (long long)(time(NULL) - t0));
	/*
	 * The folio kept whole, punched, goes back in one piece, through
	 * the floored per-CPU list to the buddy lists: node 1's one free
	 * block, and the next touch of a hole must take it. (Floored only
	 * now: while the node fills, the default lists keep some of its free
	 * pages, and the 4 KiB fallback where a 2 MiB page fails takes one
	 * of them; with floored lists the node fills to its watermark first,
	 * and the fallback can meet the OOM killer.)
	 */
	if (!sysctl_set(PCP_FRACTION, PCP_FLOOR, &pcp_fraction)) {
		snprintf(why, whylen, "cannot floor the per-CPU lists (%s): %s", PCP_FRACTION,
			 strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	if (fallocate(fill_fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, whole, SZ_2M)) {
		snprintf(why, whylen, "punching the filler's whole folio at %zu MiB: %s",
			 whole >> 20, strerror(errno));
		r = KSFT_FAIL;
		goto out;
	}
	fallbacks = gmem_counter(HUGE_FALLBACKS);
	node = node_of(p + SZ_2M + 3 * page);
	if (in_huge_folio(p + SZ_2M) != 1 || node != 1 ||
	    gmem_counter(HUGE_FALLBACKS) != fallbacks) {
		snprintf(why, whylen, "with one 2 MiB folio of the filler punched (node 1's one free block), a touch took %s folio on node %d, gmem_huge_fallbacks %ld -> %ld; expected a 2 MiB one on node 1",
			 in_huge_folio(p + SZ_2M) == 1 ? "a 2 MiB" : "a 4 KiB", node,
			 fallbacks, gmem_counter(HUGE_FALLBACKS));
		r = KSFT_FAIL;
	}
out:
	if (p)
		munmap(p, len);
	if (fd >= 0)
		close(fd);
	if (fill != MAP_FAILED)
		munmap(fill, fill_len);
	if (fill_fd >= 0)
		close(fill_fd);
	sysctl_restore(PROACTIVE, proactive);
	sysctl_restore(EXTFRAG, extfrag);
	sysctl_restore(PCP_FRACTION, pcp_fraction);
	gmem_write_file("/proc/self/oom_score_adj", "0");
	sched_setaffinity(0, sizeof(all_cpus), &all_cpus);
	close(vm);
	close(kvm);
	return r;
}

static int crossings_refused(char *why, size_t whylen)
{
	int kvm, vm, fd, plain = -1, uffd = -1, r, e;
	bool has_uffd = gmem_kernel_exports("handle_userfault") == 1;
	uint8_t *p, *q = MAP_FAILED;

	r = open_vm(&kvm, &vm, 0, why, whylen);
	if (r != KSFT_PASS)
		return r;
	p = huge_map(vm, SZ_2M, &fd, why, whylen);
	if (!p) {
		r = KSFT_FAIL;
		goto out_vm;
	}
	uffd = uffd_open(why, whylen);
	e = uffd < 0 ? 0 : uffd_register(uffd, p, SZ_2M, UFFDIO_REGISTER_MODE_MISSING, NULL);
	if (uffd < 0 || e != -EINVAL) {
		if (uffd >= 0)
			snprintf(why, whylen, "UFFDIO_REGISTER of a 2 MiB-folio mapping: %s, expected EINVAL",
				 e ? strerror(-e) : "registered");
		r = KSFT_FAIL;
		goto out_file;
	}
	/* The control: the same without the flag registers, where it can. */
	if (has_uffd) {
		plain = gmem_create(vm, SZ_2M, GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED);
		q = plain < 0 ? MAP_FAILED :
		    mmap(NULL, SZ_2M, PROT_READ | PROT_WRITE, MAP_SHARED, plain, 0);
		e = q == MAP_FAILED ? -errno :
		    uffd_register(uffd, q, SZ_2M, UFFDIO_REGISTER_MODE_MISSING, NULL);
		if (e) {
			snprintf(why, whylen, "the control, a plain file's mapping, does not register: %s",
				 strerror(-e));
			r = KSFT_FAIL;
			goto out_file;
		}
	}
out_file:
	if (q != MAP_FAILED)
		munmap(q, SZ_2M);
	if (plain >= 0)
		close(plain);
	if (uffd >= 0)
		close(uffd);
	munmap(p, SZ_2M);
	close(fd);
out_vm:
	close(vm);
	close(kvm);
	return r;
}

/* gmem_set_attrs() of pages [@first, @first + @n) that must succeed. */
static bool convert(int fd, long first, long n, bool private, char *why, size_t whylen)
{
	uint64_t err = 0;
	int e = gmem_set_attrs(fd, first * page, n * page,
			       private ? KVM_MEMORY_ATTRIBUTE_PRIVATE : 0, &err);

	if (e)
		snprintf(why, whylen, "converting pages %ld-%ld to %s: %s (error_offset %#llx)",
			 first, first + n - 1, private ? "private" : "shared", strerror(-e),
			 (unsigned long long)err);
	return !e;
}

/*
 * Does the guest, touching the 2 MiB from page @first, take about a fault a
 * page (@per_page) or at most 4, and leave the VM @maps_2m 2 MiB mappings?
 */
static bool touch_maps(struct huge_vm *h, long first, bool per_page, long maps_2m,
		       const char *when, char *why, size_t whylen)
{
	long n = SZ_2M / page, pf;

	if (huge_vm_touch(h, first, n, &pf, why, whylen) != KSFT_PASS)
		return false;
	ksft_print_msg("convert_inside_folio: %s: %ld vCPU faults over the 2 MiB, %ld 2 MiB mappings\n",
		       when, pf, vm_stat(h->vm, "pages_2m"));
	if (per_page ? pf >= n - 1 : pf >= 0 && pf <= 4) {
		if (vm_stat(h->vm, "pages_2m") == maps_2m)
			return true;
	}
	snprintf(why, whylen, "%s: the guest's pass over the 2 MiB took %ld faults and left %ld 2 MiB mappings, expected %s and %ld",
		 when, pf, vm_stat(h->vm, "pages_2m"), per_page ? "one a page" : "at most 4",
		 maps_2m);
	return false;
}

/*
 * In-place conversion inside a 2 MiB folio (src/virt/0034): a VM that
 * converts in place is offered the flag; one page of a 2 MiB folio made
 * private SIGBUSes in the host while the other 511 keep their data, the
 * folio stays whole, and it is mapped page by page: by the host (its own
 * mapping, and a new mapping, whose fault finds no page table) and by the
 * vCPU (no 2 MiB mapping, a fault a page). Shared again, the page has the
 * guest's data, and the vCPU maps the 2 MiB whole again. A pipe holding
 * another page of the folio fails the conversion with EAGAIN at the first
 * page of the range: references are the folio's. All of the 2 MiB private:
 * one 2 MiB mapping again, private.
 */
static int convert_inside_folio(char *why, size_t whylen)
{
	long first = SZ_2M / page, priv = first + 5, pinned = first + 188, maps_2m, pf;
	int pipefd[2] = { -1, -1 }, r = KSFT_FAIL, e;
	uint8_t *q = MAP_FAILED;
	struct huge_vm h;
	long bad;
	uint64_t err = 0;

	if (!gmem_write_file(GMEM_IN_PLACE_PARAM, "1")) {
		snprintf(why, whylen, "cannot set %s", GMEM_IN_PLACE_PARAM);
		return KSFT_FAIL;
	}
	e = huge_vm_open_type(&h, KVM_X86_SW_PROTECTED_VM, 2 * SZ_2M, 0, 0, NULL, why, whylen);
	gmem_write_file(GMEM_IN_PLACE_PARAM, "0");
	if (e != KSFT_PASS) {
		if (h.vm >= 0 && !gmem_has_flags(h.vm, FLAGS))
			snprintf(why, whylen, "a VM converting in place does not offer MMAP | INIT_SHARED | HUGEPAGE");
		r = e == KSFT_SKIP ? e : KSFT_FAIL;
		goto out;
	}
	/* The guest maps the second 2 MiB whole; the host fills it, one PMD. */
	if (huge_vm_touch(&h, first, SZ_2M / page, &pf, why, whylen) != KSFT_PASS)
		goto out;
	maps_2m = vm_stat(h.vm, "pages_2m");
	if (pf < 0 || pf > 4 || maps_2m < 1) {
		snprintf(why, whylen, "all shared: the guest's pass over the 2 MiB took %ld faults and left %ld 2 MiB mappings, expected at most 4 and at least 1",
			 pf, maps_2m);
		goto out;
	}
	gmem_fill(h.p, SZ_2M, 2 * SZ_2M, 0x31);
	if (smaps_kb(h.p, "FilePmdMapped") != 4096) {
		snprintf(why, whylen, "before any conversion FilePmdMapped is %ld kB, expected 4096",
			 smaps_kb(h.p, "FilePmdMapped"));
		goto out;
	}

	if (!convert(h.fd, priv, 1, true, why, whylen))
		goto out;
	/* The other pages first: the conversion unmapped all of the 2 MiB. */
	bad = gmem_check(h.p, SZ_2M, priv * page, 0x31);
	if (bad < 0)
		bad = gmem_check(h.p, (priv + 1) * page, 2 * SZ_2M, 0x31);
	if (!gmem_sigbus(h.p + priv * page, false)) {
		snprintf(why, whylen, "page %ld is private, but the host reads it (FilePmdMapped %ld kB)",
			 priv, smaps_kb(h.p, "FilePmdMapped"));
		goto out;
	}
	if (bad >= 0 || smaps_kb(h.p, "FilePmdMapped") != 2048 || in_huge_folio(h.p + SZ_2M) != 1 ||
	    gmem_cached_pages(h.fd, SZ_2M, SZ_2M) != (long)(SZ_2M / page)) {
		snprintf(why, whylen, "page %ld private: the folio's other pages read %s, FilePmdMapped %ld kB (expected 2048), the folio %s, %ld of its pages in the file",
			 priv, bad >= 0 ? "other data" : "theirs", smaps_kb(h.p, "FilePmdMapped"),
			 in_huge_folio(h.p + SZ_2M) == 1 ? "2 MiB" : "not 2 MiB",
			 gmem_cached_pages(h.fd, SZ_2M, SZ_2M));
		goto out;
	}
	/* A new mapping: its first fault there finds no page table. */
	q = mmap(NULL, 2 * SZ_2M, PROT_READ | PROT_WRITE, MAP_SHARED, h.fd, 0);
	if (q == MAP_FAILED || (uintptr_t)q % SZ_2M) {
		snprintf(why, whylen, "a second mapping: %s", q == MAP_FAILED ? strerror(errno) :
			 "not 2 MiB aligned");
		goto out;
	}
	if (gmem_read_byte(q + SZ_2M) != gmem_pat(SZ_2M, 0x31) || smaps_kb(q, "FilePmdMapped") != 0 ||
	    !gmem_sigbus(q + priv * page, false)) {
		snprintf(why, whylen, "a new mapping of the 2 MiB folio with private page %ld: FilePmdMapped %ld kB (expected 0), the private page %s",
			 priv, smaps_kb(q, "FilePmdMapped"),
			 gmem_sigbus(q + priv * page, false) ? "SIGBUS" : "readable");
		goto out;
	}
	/* The vCPU: no 2 MiB mapping of a folio with both kinds. */
	if (!touch_maps(&h, first, true, maps_2m - 1, "one page private", why, whylen))
		goto out;

	if (!convert(h.fd, priv, 1, false, why, whylen))
		goto out;
	if (h.p[priv * page] != 0x5a || gmem_check(h.p, priv * page + 1, (priv + 1) * page, 0x31) >= 0) {
		snprintf(why, whylen, "page %ld shared again reads %#x at byte 0 (the guest wrote 0x5a) and %s after it",
			 priv, h.p[priv * page],
			 gmem_check(h.p, priv * page + 1, (priv + 1) * page, 0x31) >= 0 ?
			 "not the host's data" : "the host's data");
		goto out;
	}
	if (!touch_maps(&h, first, false, maps_2m, "all shared again", why, whylen))
		goto out;

	/* A pin of another page of the folio: references are the folio's. */
	if (!pin_in_pipe(h.p + pinned * page, pipefd, why, whylen))
		goto out;
	e = gmem_set_attrs(h.fd, priv * page, page, KVM_MEMORY_ATTRIBUTE_PRIVATE, &err);
	if (e != -EAGAIN || err != (uint64_t)priv * page) {
		snprintf(why, whylen, "page %ld to private while a pipe holds page %ld of its folio: %s, error_offset %#llx; expected EAGAIN at %#lx",
			 priv, pinned, e ? strerror(-e) : "converted", (unsigned long long)err,
			 priv * page);
		goto out;
	}
	unpin_pipe(pipefd);

	/* All of the 2 MiB private: one 2 MiB mapping again, a private one. */
	if (!convert(h.fd, first, SZ_2M / page, true, why, whylen))
		goto out;
	if (!gmem_sigbus(h.p + pinned * page, false)) {
		snprintf(why, whylen, "page %ld is private, but the host reads it", pinned);
		goto out;
	}
	if (touch_maps(&h, first, false, maps_2m, "all private", why, whylen))
		r = KSFT_PASS;
out:
	unpin_pipe(pipefd);
	if (q != MAP_FAILED)
		munmap(q, 2 * SZ_2M);
	huge_vm_close(&h);
	return r;
}

/* Are the 2 MiB ranges [@first, @end) (2 MiB units) all in the file, or all holes? */
static bool ranges_cached(int fd, int first, int end, bool cached, char *why, size_t whylen)
{
	for (int k = first; k < end; k++) {
		long n = gmem_cached_pages(fd, k * SZ_2M, SZ_2M);

		if (n != (cached ? (long)(SZ_2M / page) : 0)) {
			snprintf(why, whylen, "cachestat: %ld pages of the 2 MiB at %d MiB in the file, expected %s",
				 n, 2 * k, cached ? "all 512" : "none");
			return false;
		}
	}
	return true;
}

static int write_fills_folios(char *why, size_t whylen)
{
	size_t len = 8 << 20;
	long one = (SZ_2M + 3 * page) / page, across = (2 * SZ_2M - 2 * page) / page;
	long whole = 3 * SZ_2M / page, n = SZ_2M / page, folios, pf, huge;
	cpu_set_t all_cpus;
	struct huge_vm h;
	long bad;
	int r;

	sched_getaffinity(0, sizeof(all_cpus), &all_cpus);
	r = huge_vm_open(&h, len, GUEST_MEMFD_FLAG_WRITE, 0, NULL, why, whylen);
	if (r != KSFT_PASS)
		goto out;
	r = KSFT_FAIL;
	pin_cpu(sched_getcpu());
	/*
	 * A 2 MiB folio written all over and punched: the next 2 MiB this CPU
	 * allocates is likely that page again, with what was written there,
	 * where the allocator does not clear pages itself (the shim kernel;
	 * Debian's has init_on_alloc): write() must clear what it does not fill.
	 */
	gmem_fill(h.p, 3 * SZ_2M, 4 * SZ_2M, 0xa5);
	if (fallocate(h.fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, 3 * SZ_2M, SZ_2M)) {
		snprintf(why, whylen, "punching the 2 MiB at 6 MiB: %s", strerror(errno));
		goto out;
	}
	/* The code's page took the first 2 MiB; the rest is a hole. */
	folios = gmem_counter(HUGE_FOLIOS);
	if (!ranges_cached(h.fd, 1, 4, false, why, whylen))
		goto out;

	/* One page into a hole: all of its 2 MiB, the rest zero. */
	if (!write_pages(h.fd, one, 1, 0, why, whylen) ||
	    !ranges_cached(h.fd, 1, 2, true, why, whylen) ||
	    !ranges_cached(h.fd, 2, 4, false, why, whylen))
		goto out;
	/* Four pages over the end of that folio: the next 2 MiB comes too. */
	if (!write_pages(h.fd, across, 4, 0, why, whylen) ||
	    !ranges_cached(h.fd, 2, 3, true, why, whylen))
		goto out;
	/* A whole 2 MiB, more pages than one batch of write() copies. */
	if (!write_pages(h.fd, whole, n, 7, why, whylen) ||
	    !ranges_cached(h.fd, 3, 4, true, why, whylen))
		goto out;
	if (gmem_counter(HUGE_FOLIOS) - folios != 3) {
		snprintf(why, whylen, "gmem_huge_folios went from %ld to %ld, expected +3",
			 folios, gmem_counter(HUGE_FOLIOS));
		goto out;
	}
	if (!reads_written(h.p, one, 1, 0, why, whylen) ||
	    !reads_written(h.p, across, 4, 0, why, whylen) ||
	    !reads_written(h.p, whole, n, 7, why, whylen))
		goto out;
	bad = gmem_check_zero(h.p, SZ_2M, one * page);
	if (bad < 0)
		bad = gmem_check_zero(h.p, (one + 1) * page, across * page);
	if (bad < 0)
		bad = gmem_check_zero(h.p, (across + 4) * page, whole * page);
	if (bad >= 0) {
		snprintf(why, whylen, "byte %ld of page %ld, which write() did not fill, reads 0x%02x, not 0",
			 bad % page, bad / page, h.p[bad]);
		goto out;
	}
	if (in_huge_folio(h.p + one * page) != 1 || in_huge_folio(h.p + whole * page) != 1) {
		snprintf(why, whylen, "a page write() filled is not in a 2 MiB folio (kpageflags)");
		goto out;
	}

	/* The vCPU maps what write() filled 2 MiB at a time. */
	huge = vm_stat(h.vm, "pages_2m");
	if (huge_vm_touch(&h, whole, n, &pf, why, whylen) != KSFT_PASS)
		goto out;
	if (pf < 0 || pf > 4 || vm_stat(h.vm, "pages_2m") <= huge) {
		snprintf(why, whylen, "touching the 2 MiB write() filled took %ld vCPU faults (at most 4 expected) and %ld new 2 MiB mappings (at least 1 expected)",
			 pf, vm_stat(h.vm, "pages_2m") - huge);
		goto out;
	}
	if (host_sees_touch(h.p, whole, n, why, whylen) &&
	    gmem_check(h.p, whole * page + 1, (whole + 1) * page, 7) < 0)
		r = KSFT_PASS;
	else if (!why[0])
		snprintf(why, whylen, "the bytes after the vCPU's in page %ld are not write()'s", whole);
out:
	sched_setaffinity(0, sizeof(all_cpus), &all_cpus);
	huge_vm_close(&h);
	return r;
}

/*
 * The 2 MiB at @first (pages) filled by write(), page @bad of it poisoned:
 * pwrite() of @bad EHWPOISON, of the pages on either side done, of three
 * pages over it short at it; every other page reads what write() put there.
 * @split: mm could split the folio (no other reference), so the pages around
 * are 4 KiB folios; else they are still in the 2 MiB one.
 */
static bool write_around_poison(int fd, uint8_t *p, long first, long bad, bool split,
				char *why, size_t whylen)
{
	uint8_t buf[3 * 4096], *q;
	bool sigbus;
	ssize_t done;
	int r;

	if (!write_pages(fd, first, SZ_2M / page, 4, why, whylen))
		return false;
	if (in_huge_folio(p + first * page) != 1) {
		snprintf(why, whylen, "the 2 MiB write() filled at page %ld is not one folio", first);
		return false;
	}
	r = gmem_poison_page(p + bad * page);
	if (r && r != -EBUSY && r != -EHWPOISON) {
		snprintf(why, whylen, "MADV_HWPOISON of page %ld: %s", bad, strerror(-r));
		return false;
	}
	if (in_huge_folio(p + (bad + 1) * page) != !split) {
		snprintf(why, whylen, "after page %ld was poisoned, page %ld is in %s folio, expected %s (%s)",
			 bad, bad + 1, split ? "a 2 MiB" : "a 4 KiB", split ? "4 KiB" : "2 MiB",
			 split ? "mm splits a folio nothing else holds" :
			 "a pipe holds a page of it: mm cannot split it");
		return false;
	}
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = gmem_pat((bad - 1) * page + i, 6);
	done = pwrite(fd, buf + page, page, bad * page);
	if (done != -1 || errno != EHWPOISON) {
		snprintf(why, whylen, "pwrite() of the poisoned page %ld in %s folio: %zd (%s), expected EHWPOISON",
			 bad, split ? "a 4 KiB" : "a 2 MiB", done,
			 done < 0 ? strerror(errno) : "written");
		return false;
	}
	done = pwrite(fd, buf, 3 * page, (bad - 1) * page);
	if (done != (ssize_t)page) {
		snprintf(why, whylen, "pwrite() of pages %ld-%ld over the poisoned %ld: %zd (%s), expected %ld (short at it)",
			 bad - 1, bad + 1, bad, done, done < 0 ? strerror(errno) : "written",
			 page);
		return false;
	}
	if (!write_pages(fd, bad + 1, 1, 5, why, whylen) ||
	    !reads_written(p, bad + 1, 1, 5, why, whylen))
		return false;
	if (gmem_check(p, (bad - 1) * page, bad * page, 6) >= 0) {
		snprintf(why, whylen, "page %ld does not read what the short write put there", bad - 1);
		return false;
	}
	if (!reads_written(p, first, bad - 1 - first, 4, why, whylen) ||
	    !reads_written(p, bad + 2, first + SZ_2M / page - bad - 2, 4, why, whylen))
		return false;
	/*
	 * Through a new mapping: where mm could not split the folio it leaves
	 * the old mappings be (a real machine raises a machine check on that
	 * access); a fault must refuse the poisoned page.
	 */
	q = mmap(NULL, SZ_2M, PROT_READ, MAP_SHARED, fd, first * page);
	if (q == MAP_FAILED) {
		snprintf(why, whylen, "mmap of the 2 MiB at page %ld: %s", first, strerror(errno));
		return false;
	}
	sigbus = gmem_sigbus(q + (bad - first) * page, false);
	if (!sigbus || gmem_sigbus_code != BUS_MCEERR_AR)
		snprintf(why, whylen, "a touch of the poisoned page %ld through a new mapping: %s",
			 bad, sigbus ? "SIGBUS, not BUS_MCEERR_AR" : "no SIGBUS");
	munmap(q, SZ_2M);
	return !why[0];
}

static int write_poisoned_folio(char *why, size_t whylen)
{
	size_t len = 8 << 20;
	long first = SZ_2M / page, second = 3 * SZ_2M / page;
	int kvm, vm, fd, r, pipefd[2] = { -1, -1 };
	uint8_t *p;

	if (geteuid()) {
		snprintf(why, whylen, "MADV_HWPOISON needs root");
		return KSFT_SKIP;
	}
	r = open_vm(&kvm, &vm, 0, why, whylen);
	if (r != KSFT_PASS)
		return r;
	p = huge_map_flags(vm, len, FLAGS | GUEST_MEMFD_FLAG_WRITE, &fd, why, whylen);
	if (!p) {
		r = KSFT_FAIL;
		goto out_vm;
	}
	r = KSFT_FAIL;
	if (!write_around_poison(fd, p, first, first + 100, true, why, whylen))
		goto out_file;
	/* A pipe holds a page of the next 2 MiB folio: no split. */
	if (!write_pages(fd, second, 1, 4, why, whylen))
		goto out_file;
	if (!pin_in_pipe(p + (second + 300) * page, pipefd, why, whylen))
		goto out_file;
	if (write_around_poison(fd, p, second, second + 100, false, why, whylen))
		r = KSFT_PASS;
out_file:
	unpin_pipe(pipefd);
	munmap(p, len);
	close(fd);
out_vm:
	close(vm);
	close(kvm);
	return r;
}

/*
 * The guest's write of page @pg must exit with KVM_RUN's @err and a memory
 * fault naming the page, @flags; @what says what the page is.
 */
static bool vcpu_touch_faults(struct huge_vm *h, long pg, int err, uint64_t flags,
			      const char *what, char *why, size_t whylen)
{
	struct kvm_run *run = h->v.run;
	int e = vcpu_run_touch(&h->v, pg, 1, why, whylen);

	if (e == -EINVAL && why[0])
		return false;
	if (e != -err) {
		snprintf(why, whylen, "the guest's write of page %ld (%s): KVM_RUN %s (exit reason %u), expected %s",
			 pg, what, e ? strerror(-e) : "done, the guest wrote it", run->exit_reason,
			 err == EHWPOISON ? "EHWPOISON" : err == EFAULT ? "EFAULT" : strerror(err));
		return false;
	}
	if (run->exit_reason != KVM_EXIT_MEMORY_FAULT ||
	    run->memory_fault.gpa != (unsigned long long)(pg * page) ||
	    run->memory_fault.size != (unsigned long long)page ||
	    run->memory_fault.flags != flags) {
		snprintf(why, whylen, "the guest's write of page %ld (%s): exit reason %u, gpa %#llx size %#llx flags %#llx, expected KVM_EXIT_MEMORY_FAULT, %#lx %#lx %#llx",
			 pg, what, run->exit_reason, (unsigned long long)run->memory_fault.gpa,
			 (unsigned long long)run->memory_fault.size,
			 (unsigned long long)run->memory_fault.flags, pg * page, page,
			 (unsigned long long)flags);
		return false;
	}
	return true;
}

/*
 * The 2 MiB at @first (pages) filled by the host, page @bad of it poisoned.
 * @split: mm could split the folio, so the pages are 4 KiB folios; else a
 * pipe holds one and it stays 2 MiB. @mapped: the guest wrote all of it
 * first, a 2 MiB mapping (pages_2m + 1) that the poison must take away.
 * The guest writes every other page of the 2 MiB and the host reads them;
 * no 2 MiB mapping (pages_2m); the guest's write of @bad fails.
 */
static bool vcpu_around_poison(struct huge_vm *h, long first, long bad, bool split,
			       bool mapped, char *why, size_t whylen)
{
	const char *what = !split ? "poisoned, in a 2 MiB folio mm could not split" :
			   mapped ? "poisoned, in a 4 KiB folio: mm split the 2 MiB one the vCPU mapped" :
			   "poisoned, in a 4 KiB folio: mm split its 2 MiB one";
	long huge = vm_stat(h->vm, "pages_2m"), pf, end = first + SZ_2M / page;
	int r;

	memset(h->p + first * page, 1, SZ_2M);
	if (in_huge_folio(h->p + first * page) != 1) {
		snprintf(why, whylen, "the 2 MiB the host filled at page %ld is not one folio", first);
		return false;
	}
	if (mapped && (huge_vm_touch(h, first, SZ_2M / page, &pf, why, whylen) != KSFT_PASS ||
		       vm_stat(h->vm, "pages_2m") != huge + 1)) {
		if (!why[0])
			snprintf(why, whylen, "the guest's write of the 2 MiB at page %ld: pages_2m %ld -> %ld, expected one more",
				 first, huge, vm_stat(h->vm, "pages_2m"));
		return false;
	}
	r = gmem_poison_page(h->p + bad * page);
	if (r && r != -EBUSY && r != -EHWPOISON) {
		snprintf(why, whylen, "MADV_HWPOISON of page %ld: %s", bad, strerror(-r));
		return false;
	}
	if (in_huge_folio(h->p + (bad + 1) * page) != !split) {
		snprintf(why, whylen, "after page %ld was poisoned, page %ld is in %s folio, expected %s",
			 bad, bad + 1, split ? "a 2 MiB" : "a 4 KiB", split ? "4 KiB" : "2 MiB");
		return false;
	}
	if (huge_vm_touch(h, first, bad - first, &pf, why, whylen) != KSFT_PASS ||
	    huge_vm_touch(h, bad + 1, end - bad - 1, &pf, why, whylen) != KSFT_PASS)
		return false;
	if (vm_stat(h->vm, "pages_2m") != huge) {
		snprintf(why, whylen, "the vCPU mapped the 2 MiB at page %ld, page %ld of it poisoned, as one: pages_2m %ld -> %ld",
			 first, bad, huge, vm_stat(h->vm, "pages_2m"));
		return false;
	}
	if (!vcpu_touch_faults(h, bad, EHWPOISON, 0, what, why, whylen))
		return false;
	return host_sees_touch(h->p, first, bad - first, why, whylen) &&
	       host_sees_touch(h->p, bad + 1, end - bad - 1, why, whylen);
}

static int vcpu_poisoned_folio(char *why, size_t whylen)
{
	long first = SZ_2M / page, third = 2 * SZ_2M / page, second = 3 * SZ_2M / page;
	int r, pipefd[2] = { -1, -1 };
	struct huge_vm h;
	long pf;

	if (geteuid()) {
		snprintf(why, whylen, "MADV_HWPOISON needs root");
		return KSFT_SKIP;
	}

	r = huge_vm_open(&h, 8 << 20, 0, 0, NULL, why, whylen);
	/* The code's 2 MiB is mapped first: pages_2m counts it from here on. */
	if (r == KSFT_PASS)
		r = huge_vm_touch(&h, 2, 1, &pf, why, whylen);
	if (r != KSFT_PASS)
		goto out;
	r = KSFT_FAIL;
	if (!vcpu_around_poison(&h, first, first + 100, true, false, why, whylen) ||
	    !vcpu_around_poison(&h, third, third + 100, true, true, why, whylen))
		goto out;
	/* A pipe holds a page of the next 2 MiB folio: no split. */
	h.p[second * page] = 1;
	if (!pin_in_pipe(h.p + (second + 300) * page, pipefd, why, whylen))
		goto out;
	if (vcpu_around_poison(&h, second, second + 100, false, false, why, whylen))
		r = KSFT_PASS;
out:
	unpin_pipe(pipefd);
	huge_vm_close(&h);
	return r;
}

static int userfault_memslot_maps_4k(char *why, size_t whylen)
{
	static uint64_t bitmap[(8 << 20) / 4096 / 64];	/* nothing armed */
	long first = SZ_2M / page, n = 2 * SZ_2M / page, pf;
	struct huge_vm h;
	int r;

	r = huge_vm_open(&h, 8 << 20, 0, KVM_MEM_USERFAULT, bitmap, why, whylen);
	if (r == KSFT_PASS)
		r = huge_vm_touch(&h, first, n, &pf, why, whylen);
	if (r != KSFT_PASS)
		goto out;
	if (vm_stat(h.vm, "pages_2m") != 0 || pf < n) {
		snprintf(why, whylen, "a KVM_MEM_USERFAULT memslot: %ld 2 MiB mappings and %ld faults for %ld pages, expected none and a fault per page",
			 vm_stat(h.vm, "pages_2m"), pf, n);
		r = KSFT_FAIL;
	} else if (!host_sees_touch(h.p, first, n, why, whylen)) {
		r = KSFT_FAIL;
	}
out:
	huge_vm_close(&h);
	return r;
}

/*
 * kvmclock x KVM Userfault x 2 MiB folios: kvmclock on a hole of a 2 MiB that
 * is all holes, another page of it armed. KVM writes the clock when the vCPU
 * enters, and its pfn cache's fault brings all of the 2 MiB, the armed page
 * too: in the file, zero, still armed. The guest's write of it must still
 * exit (KVM_MEMORY_EXIT_FLAG_USERFAULT), and what the restore writes is what
 * the guest then finds. (The exerciser met this once, at random: its model
 * now reads kvmclock's page back at each userfault exit.)
 */
static int kvmclock_brings_armed_page(char *why, size_t whylen)
{
	static uint64_t bitmap[(8 << 20) / 4096 / 64];
	long clock = SZ_2M / page + 8, armed = SZ_2M / page + 100;
	struct huge_vm h;
	struct vm vm;
	int r, e;

	memset(bitmap, 0, sizeof(bitmap));
	bitmap[armed / 64] = 1ULL << (armed % 64);
	r = huge_vm_open(&h, 8 << 20, GUEST_MEMFD_FLAG_WRITE, KVM_MEM_USERFAULT, bitmap, why,
			 whylen);
	if (r != KSFT_PASS)
		goto out;
	r = KSFT_FAIL;
	vm = (struct vm){ .vm = h.vm, .vcpu = h.v.fd };
	e = gmem_set_kvmclock(&vm, clock * page);
	if (e) {
		snprintf(why, whylen, "kvmclock at page %ld: %s", clock, strerror(-e));
		goto out;
	}
	if (!vcpu_touch_faults(&h, armed, EFAULT, KVM_MEMORY_EXIT_FLAG_USERFAULT,
			       "armed, in the 2 MiB of kvmclock's hole", why, whylen))
		goto out;
	if (gmem_cached_pages(h.fd, clock * page, page) != 1 ||
	    gmem_cached_pages(h.fd, armed * page, page) != 1 ||
	    gmem_cached_pages(h.fd, SZ_2M, SZ_2M) != (long)(SZ_2M / page)) {
		snprintf(why, whylen, "after kvmclock's update: its page %s the file, the armed page %s, %ld of their 2 MiB (expected all: one 2 MiB folio)",
			 gmem_cached_pages(h.fd, clock * page, page) == 1 ? "in" : "not in",
			 gmem_cached_pages(h.fd, armed * page, page) == 1 ? "in" : "not in",
			 gmem_cached_pages(h.fd, SZ_2M, SZ_2M));
		goto out;
	}
	if (gmem_check_zero(h.p, armed * page, (armed + 1) * page) >= 0) {
		snprintf(why, whylen, "the armed page %ld kvmclock's 2 MiB brought is not zero (byte %ld)",
			 armed, gmem_check_zero(h.p, armed * page, (armed + 1) * page) - armed * page);
		goto out;
	}
	/* The restore: the snapshot written, then the bit cleared. */
	if (!write_pages(h.fd, armed, 1, 7, why, whylen))
		goto out;
	__atomic_and_fetch(&bitmap[armed / 64], ~(1ULL << (armed % 64)), __ATOMIC_RELEASE);
	e = vcpu_run_touch(&h.v, armed, 1, why, whylen);
	if (e) {
		if (!why[0])
			snprintf(why, whylen, "the guest's write of the restored page %ld: KVM_RUN %s",
				 armed, strerror(-e));
		goto out;
	}
	if (h.p[armed * page] != 0x5a || gmem_check(h.p, armed * page + 1, (armed + 1) * page, 7) >= 0)
		snprintf(why, whylen, "the restored page %ld reads %#x at byte 0 (the guest wrote 0x5a) and %s after it",
			 armed, h.p[armed * page],
			 gmem_check(h.p, armed * page + 1, (armed + 1) * page, 7) >= 0 ?
			 "not the snapshot" : "the snapshot");
	else
		r = KSFT_PASS;
out:
	huge_vm_close(&h);
	return r;
}

int main(int argc, char **argv)
{
	static const struct gmem_case cases[] = {
		{ "flags_offered", flags_offered },
		{ "create_rules", create_rules },
		{ "host_maps_pmd", host_maps_pmd },
		{ "vcpu_maps_2m", vcpu_maps_2m },
		{ "punch_splits_one_folio", punch_splits_one_folio },
		{ "punch_pinned_folio", punch_pinned_folio },
		{ "numa_policy_per_folio", numa_policy_per_folio },
		{ "memcg_charge_and_fallback", memcg_charge_and_fallback },
		{ "crossings_refused", crossings_refused },
		{ "convert_inside_folio", convert_inside_folio },
		{ "userfault_memslot_maps_4k", userfault_memslot_maps_4k },
		{ "kvmclock_brings_armed_page", kvmclock_brings_armed_page },
		{ "write_fills_folios", write_fills_folios },
		{ "write_charges_writer", write_charges_writer },
		{ "write_poisoned_folio", write_poisoned_folio },
		{ "vcpu_poisoned_folio", vcpu_poisoned_folio },
		/*
		 * Last, and only when "-c" names it (make check runs it in a
		 * guest of its own): filling a node costs 3 s in a new guest,
		 * 10-80 s after other programs under TCG.
		 */
		{ "fragmented_node_falls_back", fragmented_node_falls_back },
	};
	size_t n = sizeof(cases) / sizeof(cases[0]);

	gmem_parse_case_args(argc, argv);
	page = sysconf(_SC_PAGESIZE);
	gmem_sigbus_setup();
	run_cases(cases, gmem_nr_case_args ? n : n - 1);
}
