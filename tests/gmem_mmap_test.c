// SPDX-License-Identifier: GPL-2.0
/*
 * gmem_mmap_test: host mmap() of guest_memfd, as our modules implement it
 * (Fuad Tabba's v7 series on Debian 6.12 KVM, plus a SIGBUS past EOF).
 *
 * Every case makes its own VM and guest_memfd. The "gmem" fixture follows
 * the ABI the modules run: mainline's by default (a default VM, a
 * guest_memfd with GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED), or
 * with kvm.gmem_mainline_abi=0 the v7 one (a KVM_X86_SW_PROTECTED_VM and a
 * flag-less guest_memfd, when KVM_CAP_GMEM_SHARED_MEM says so). Its cases
 * SKIP when neither is there (Debian's stock modules). Where the series
 * leaves a behaviour open, the case says what we chose to expect and why, in
 * the comment above it.
 *
 * Build: make -C tests (static; our uapi headers; kselftest_harness.h).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <sys/wait.h>

#include <linux/falloc.h>
#include <linux/kvm.h>

#include "kselftest_harness.h"
#include "gmem_test.h"

#define GMEM_PAGES	4
#define SZ_2M		(2UL << 20)

static size_t page_size;

/* --- helpers ------------------------------------------------------------ */

/*
 * The SKIP-or-FAIL rule (gmem_test.h): a guest_memfd feature our modules
 * provide may be missing only with other modules (SKIP); with ours it FAILs.
 */
#define SKIP_OR_FAIL(statement, fmt, ...) do {					\
	if (gmem_ours()) {							\
		TH_LOG(fmt " (with our modules loaded)", ##__VA_ARGS__);	\
		ASSERT_TRUE(false);						\
	}									\
	SKIP(statement, fmt, ##__VA_ARGS__);					\
} while (0)

/* Patterns, the SIGBUS probe and mapping: include/gmem_test.h. */

/* Value of @field ("FilePmdMapped", ...) in the smaps entry of @start. */
static long smaps_field(const void *start, const char *field)
{
	size_t flen = strlen(field);
	unsigned long lo, hi;
	bool in_vma = false;
	char line[512];
	long val = -1;
	FILE *f;

	f = fopen("/proc/self/smaps", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
			if (in_vma)
				break;
			in_vma = lo == (unsigned long)start;
			continue;
		}
		if (in_vma && !strncmp(line, field, flen) && line[flen] == ':') {
			val = strtol(line + flen + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return val;
}

/* --- fixture: a SW_PROTECTED VM and a 4-page guest_memfd ---------------- */

FIXTURE(gmem) {
	int kvm_fd;
	int vm_fd;
	int fd;
	size_t size;
	uint64_t flags;		/* of every guest_memfd the case makes */
};

FIXTURE_SETUP(gmem)
{
	int types;

	self->kvm_fd = self->vm_fd = self->fd = -1;
	page_size = getpagesize();
	self->size = GMEM_PAGES * page_size;

	self->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (self->kvm_fd < 0)
		SKIP(return, "cannot open /dev/kvm: %s", strerror(errno));
	if (kvm_cap(self->kvm_fd, KVM_CAP_GMEM_SHARED_MEM) > 0) {
		/* The v7 ABI (kvm.gmem_mainline_abi=0). */
		types = kvm_cap(self->kvm_fd, KVM_CAP_VM_TYPES);
		if (!(types & (1 << KVM_X86_SW_PROTECTED_VM)))
			SKIP_OR_FAIL(return, "KVM_X86_SW_PROTECTED_VM not in KVM_CAP_VM_TYPES (%#x)", types);
		self->vm_fd = ioctl(self->kvm_fd, KVM_CREATE_VM, KVM_X86_SW_PROTECTED_VM);
		ASSERT_LE(0, self->vm_fd) TH_LOG("KVM_CREATE_VM(SW_PROTECTED): %s", strerror(errno));
		self->flags = 0;
	} else {
		/* Mainline's ABI. */
		self->flags = GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED;
		if (!gmem_has_flags(self->kvm_fd, self->flags))
			SKIP_OR_FAIL(return, "neither KVM_CAP_GMEM_SHARED_MEM nor MMAP | INIT_SHARED in KVM_CAP_GUEST_MEMFD_FLAGS: this KVM cannot mmap() guest_memfd");
		self->vm_fd = ioctl(self->kvm_fd, KVM_CREATE_VM, 0);
		ASSERT_LE(0, self->vm_fd) TH_LOG("KVM_CREATE_VM(default): %s", strerror(errno));
	}
	self->fd = gmem_create(self->vm_fd, self->size, self->flags);
	ASSERT_LE(0, self->fd) TH_LOG("KVM_CREATE_GUEST_MEMFD: %s", strerror(-self->fd));
	gmem_sigbus_setup();
}

FIXTURE_TEARDOWN(gmem)
{
	if (self->fd >= 0)
		close(self->fd);
	if (self->vm_fd >= 0)
		close(self->vm_fd);
	if (self->kvm_fd >= 0)
		close(self->kvm_fd);
}

/* --- capabilities and the default VM --------------------------------- */

/* The cap is 1 on /dev/kvm and on a SW_PROTECTED VM, 0 on a default VM. */
TEST(cap_per_vm_type)
{
	int kvm, vm0, vm1;

	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		SKIP(return, "cannot open /dev/kvm: %s", strerror(errno));
	if (kvm_cap(kvm, KVM_CAP_GMEM_SHARED_MEM) <= 0) {
		if ((kvm_cap(kvm, KVM_CAP_GUEST_MEMFD_FLAGS) & GUEST_MEMFD_FLAG_MMAP) &&
		    !gmem_ours_v7())
			SKIP(return, "the v7 ABI is off (kvm.gmem_mainline_abi=1): KVM_CAP_GMEM_SHARED_MEM is 0");
		SKIP_OR_FAIL(return, "KVM_CAP_GMEM_SHARED_MEM is 0: this KVM cannot mmap() guest_memfd");
	}
	ASSERT_EQ(1, kvm_cap(kvm, KVM_CAP_GMEM_SHARED_MEM));
	if (!(kvm_cap(kvm, KVM_CAP_VM_TYPES) & (1 << KVM_X86_SW_PROTECTED_VM)))
		SKIP_OR_FAIL(return, "KVM_X86_SW_PROTECTED_VM not in KVM_CAP_VM_TYPES");

	vm1 = ioctl(kvm, KVM_CREATE_VM, KVM_X86_SW_PROTECTED_VM);
	ASSERT_LE(0, vm1);
	EXPECT_EQ(1, kvm_cap(vm1, KVM_CAP_GMEM_SHARED_MEM));
	EXPECT_EQ(1, kvm_cap(vm1, KVM_CAP_GUEST_MEMFD));

	vm0 = ioctl(kvm, KVM_CREATE_VM, 0);
	ASSERT_LE(0, vm0);
	EXPECT_EQ(0, kvm_cap(vm0, KVM_CAP_GMEM_SHARED_MEM));
	EXPECT_EQ(1, kvm_cap(vm0, KVM_CAP_GUEST_MEMFD));

	close(vm0);
	close(vm1);
	close(kvm);
}

/*
 * What a VMM written for mainline (6.18+) probes: KVM_CAP_GUEST_MEMFD is 1
 * on /dev/kvm and on every VM fd, default VMs too (mainline's answer; 6.12
 * said 0 for VMs without private memory, and VMMs then turn guest_memfd
 * off). With mainline's ABI (the default), capability 239 (the v7 series'
 * KVM_CAP_GMEM_SHARED_MEM, mainline's KVM_CAP_ARM_WRITABLE_IMP_ID_REGS) is
 * 0 everywhere and cannot be enabled on a VM.
 */
TEST(caps_every_vm)
{
	struct kvm_enable_cap cap = { .cap = KVM_CAP_GMEM_SHARED_MEM };
	int kvm, vm0, vm1 = -1;
	bool mainline;
	char abi = 0;
	FILE *f;

	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		SKIP(return, "cannot open /dev/kvm: %s", strerror(errno));
	if (!(kvm_cap(kvm, KVM_CAP_GUEST_MEMFD_FLAGS) & GUEST_MEMFD_FLAG_MMAP))
		SKIP_OR_FAIL(return, "no GUEST_MEMFD_FLAG_MMAP: this KVM cannot mmap() guest_memfd");
	f = fopen("/sys/module/kvm/parameters/gmem_mainline_abi", "r");
	ASSERT_NE(NULL, f) TH_LOG("no kvm.gmem_mainline_abi parameter");
	ASSERT_EQ(1, fscanf(f, " %c", &abi));
	fclose(f);
	mainline = abi == 'Y';
	TH_LOG("kvm.gmem_mainline_abi=%c", abi);

	EXPECT_EQ(1, kvm_cap(kvm, KVM_CAP_GUEST_MEMFD));
	vm0 = ioctl(kvm, KVM_CREATE_VM, 0);
	ASSERT_LE(0, vm0);
	EXPECT_EQ(1, kvm_cap(vm0, KVM_CAP_GUEST_MEMFD));
	if (kvm_cap(kvm, KVM_CAP_VM_TYPES) & (1 << KVM_X86_SW_PROTECTED_VM)) {
		vm1 = ioctl(kvm, KVM_CREATE_VM, KVM_X86_SW_PROTECTED_VM);
		ASSERT_LE(0, vm1);
		EXPECT_EQ(1, kvm_cap(vm1, KVM_CAP_GUEST_MEMFD));
	}
	if (mainline) {
		EXPECT_EQ(0, kvm_cap(kvm, KVM_CAP_GMEM_SHARED_MEM));
		EXPECT_EQ(0, kvm_cap(vm0, KVM_CAP_GMEM_SHARED_MEM));
		if (vm1 >= 0)
			EXPECT_EQ(0, kvm_cap(vm1, KVM_CAP_GMEM_SHARED_MEM));
		EXPECT_EQ(-1, ioctl(vm0, KVM_ENABLE_CAP, &cap));
		EXPECT_EQ(EINVAL, errno);
	}
	if (vm1 >= 0)
		close(vm1);
	close(vm0);
	close(kvm);
}

/*
 * A default VM's guest_memfd cannot be mapped at all: ENODEV for shared and
 * private mappings alike. Needs only KVM_CAP_GUEST_MEMFD, so it also runs
 * (and passes) on Debian's stock modules, which have no .mmap at all.
 */
TEST(mmap_denied_default_vm)
{
	size_t ps = getpagesize();
	int kvm, vm, fd;
	void *mem;

	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		SKIP(return, "cannot open /dev/kvm: %s", strerror(errno));
	if (!kvm_cap(kvm, KVM_CAP_GUEST_MEMFD))
		SKIP_OR_FAIL(return, "no KVM_CAP_GUEST_MEMFD");

	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	ASSERT_LE(0, vm);
	fd = gmem_create(vm, GMEM_PAGES * ps, 0);
	ASSERT_LE(0, fd) TH_LOG("KVM_CREATE_GUEST_MEMFD on a default VM: %s", strerror(-fd));

	mem = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	EXPECT_EQ(MAP_FAILED, mem);
	EXPECT_EQ(ENODEV, errno);
	mem = mmap(NULL, GMEM_PAGES * ps, PROT_READ, MAP_PRIVATE, fd, 0);
	EXPECT_EQ(MAP_FAILED, mem);
	EXPECT_EQ(ENODEV, errno);

	close(fd);
	close(vm);
	close(kvm);
}

/* --- the fixture's guest_memfd (mainline's or the v7 ABI) ---------------- */

/*
 * Sizes must be positive multiples of the page size. v7 defines no creation
 * flags, so every flag bit is EINVAL, except those a kernel advertises in
 * KVM_CAP_GUEST_MEMFD_FLAGS (mainline's ABI; 0 where it is unknown).
 */
TEST_F(gmem, create_invalid)
{
	uint64_t valid = kvm_cap(self->vm_fd, KVM_CAP_GUEST_MEMFD_FLAGS);
	int fd;

	for (size_t sz = 1; sz < page_size; sz++) {
		fd = gmem_create(self->vm_fd, sz, 0);
		ASSERT_EQ(-EINVAL, fd) TH_LOG("size %zu: %d", sz, fd);
	}
	EXPECT_EQ(-EINVAL, gmem_create(self->vm_fd, 0, 0));
	EXPECT_EQ(-EINVAL, gmem_create(self->vm_fd, page_size + 1, 0));
	EXPECT_EQ(-EINVAL, gmem_create(self->vm_fd, -(uint64_t)page_size, 0));

	TH_LOG("KVM_CAP_GUEST_MEMFD_FLAGS: %#" PRIx64, valid);
	for (int bit = 0; bit < 64; bit++) {
		fd = gmem_create(self->vm_fd, page_size, 1ULL << bit);
		if (valid & (1ULL << bit)) {
			ASSERT_LE(0, fd) TH_LOG("advertised flag bit %d refused", bit);
			close(fd);
			continue;
		}
		ASSERT_EQ(-EINVAL, fd) TH_LOG("flag bit %d: %d", bit, fd);
	}
}

TEST_F(gmem, map_private_einval)
{
	void *mem;

	mem = mmap(NULL, self->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, self->fd, 0);
	ASSERT_EQ(MAP_FAILED, mem);
	ASSERT_EQ(EINVAL, errno);
	mem = mmap(NULL, self->size, PROT_READ, MAP_PRIVATE, self->fd, 0);
	ASSERT_EQ(MAP_FAILED, mem);
	ASSERT_EQ(EINVAL, errno);
}

/*
 * First touch reads zero; what is written through one mapping is in the
 * file: a second mapping and a later mapping see it.
 */
TEST_F(gmem, write_read_back)
{
	uint8_t *mem, *mem2;
	struct stat st;

	ASSERT_EQ(0, fstat(self->fd, &st));
	EXPECT_EQ((off_t)self->size, st.st_size);
	EXPECT_EQ((blksize_t)page_size, st.st_blksize);

	mem = gmem_map(self->fd, self->size);
	ASSERT_NE(MAP_FAILED, mem);
	ASSERT_EQ(-1, gmem_check_zero(mem, 0, self->size));

	gmem_fill(mem, 0, self->size, 0x11);
	ASSERT_EQ(-1, gmem_check(mem, 0, self->size, 0x11));

	mem2 = gmem_map(self->fd, self->size);
	ASSERT_NE(MAP_FAILED, mem2);
	ASSERT_EQ(-1, gmem_check(mem2, 0, self->size, 0x11));
	gmem_fill(mem2, page_size, 2 * page_size, 0x22);
	ASSERT_EQ(-1, gmem_check(mem, page_size, 2 * page_size, 0x22));

	ASSERT_EQ(0, munmap(mem, self->size));
	ASSERT_EQ(0, munmap(mem2, self->size));
	mem = gmem_map(self->fd, self->size);
	ASSERT_NE(MAP_FAILED, mem);
	EXPECT_EQ(-1, gmem_check(mem, 0, page_size, 0x11));
	EXPECT_EQ(-1, gmem_check(mem, page_size, 2 * page_size, 0x22));
	EXPECT_EQ(-1, gmem_check(mem, 2 * page_size, self->size, 0x11));
	ASSERT_EQ(0, munmap(mem, self->size));
}

/* Two guest_memfd files of one VM are distinct inodes with distinct data. */
TEST_F(gmem, independent_files)
{
	struct stat st1, st2;
	uint8_t *m1, *m2;
	int fd2;

	fd2 = gmem_create(self->vm_fd, self->size, self->flags);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, fstat(self->fd, &st1));
	ASSERT_EQ(0, fstat(fd2, &st2));
	EXPECT_NE(st1.st_ino, st2.st_ino);

	m1 = gmem_map(self->fd, self->size);
	m2 = gmem_map(fd2, self->size);
	ASSERT_NE(MAP_FAILED, m1);
	ASSERT_NE(MAP_FAILED, m2);
	gmem_fill(m1, 0, self->size, 0x33);
	EXPECT_EQ(-1, gmem_check_zero(m2, 0, self->size));
	munmap(m1, self->size);
	munmap(m2, self->size);
	close(fd2);
}

/* Punching one page zeroes exactly that page, through the live mapping. */
TEST_F(gmem, punch_hole_zeroes_one_page)
{
	uint8_t *mem;

	mem = gmem_map(self->fd, self->size);
	ASSERT_NE(MAP_FAILED, mem);
	gmem_fill(mem, 0, self->size, 0x44);

	ASSERT_EQ(0, fallocate(self->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       page_size, page_size));
	EXPECT_EQ(-1, gmem_check(mem, 0, page_size, 0x44));
	EXPECT_EQ(-1, gmem_check_zero(mem, page_size, 2 * page_size));
	EXPECT_EQ(-1, gmem_check(mem, 2 * page_size, self->size, 0x44));

	/* The hole is usable again at once. */
	gmem_fill(mem, page_size, 2 * page_size, 0x55);
	EXPECT_EQ(-1, gmem_check(mem, page_size, 2 * page_size, 0x55));
	EXPECT_EQ(-1, gmem_check(mem, 0, page_size, 0x44));
	ASSERT_EQ(0, munmap(mem, self->size));
}

/* The kpageflags bits of the page mapped at @p, or -1 (errno set). */
static long long kpageflags_of(void *p)
{
	uint64_t entry = 0, flags = 0;
	int fd;

	fd = open("/proc/self/pagemap", O_RDONLY);
	if (fd < 0 || pread(fd, &entry, 8, (uintptr_t)p / page_size * 8) != 8) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	/* Present, with a PFN (root only). */
	if (!(entry >> 63) || !(entry & ((1ULL << 55) - 1))) {
		errno = ENOENT;
		return -1;
	}
	fd = open("/proc/kpageflags", O_RDONLY);
	if (fd < 0 || pread(fd, &flags, 8, (entry & ((1ULL << 55) - 1)) * 8) != 8) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return flags;
}

#define KPF_REFERENCED	2

/*
 * guest_memfd's folio lookups do not mark folios accessed (mainline 7.1,
 * "KVM: guest_memfd: Don't set FGP_ACCESSED when getting folios"): the
 * memory is never reclaimed, so the accessed state only costs. Allocated by
 * fallocate(), looked up again by a second fallocate() and by host faults,
 * no page is referenced (what folio_mark_accessed() sets first, with or
 * without MGLRU).
 */
TEST_F(gmem, lookups_do_not_mark_accessed)
{
	uint8_t *mem;

	mem = gmem_map(self->fd, self->size);
	ASSERT_NE(MAP_FAILED, mem);
	ASSERT_EQ(0, fallocate(self->fd, FALLOC_FL_KEEP_SIZE, 0, self->size));
	ASSERT_EQ(0, fallocate(self->fd, FALLOC_FL_KEEP_SIZE, 0, self->size));
	gmem_fill(mem, 0, self->size, 0x46);
	EXPECT_EQ(-1, gmem_check(mem, 0, self->size, 0x46));
	for (size_t off = 0; off < self->size; off += page_size) {
		long long flags = kpageflags_of(mem + off);

		ASSERT_LE(0, flags) TH_LOG("page %zu: pagemap/kpageflags: %s", off / page_size,
					   strerror(errno));
		EXPECT_EQ(0, flags & 1LL << KPF_REFERENCED)
			TH_LOG("page %zu is marked referenced: lookups must not mark guest_memfd folios accessed",
			       off / page_size);
	}
	ASSERT_EQ(0, munmap(mem, self->size));
}

/*
 * A mapping 4x the file: the file's pages work, every page past EOF raises
 * SIGBUS (BUS_ADRERR at the touched address) for reads and writes, and
 * allocates nothing: the file is unchanged afterwards.
 */
TEST_F(gmem, sigbus_past_eof)
{
	size_t len = 4 * self->size;
	struct stat st;
	uint8_t *mem;

	mem = gmem_map(self->fd, len);
	ASSERT_NE(MAP_FAILED, mem);
	gmem_fill(mem, 0, self->size, 0x66);

	for (size_t off = self->size; off < len; off += page_size) {
		ASSERT_TRUE(gmem_sigbus(mem + off, false)) TH_LOG("read at +%#zx", off);
		EXPECT_EQ((void *)(mem + off), gmem_sigbus_addr);
		EXPECT_EQ(BUS_ADRERR, gmem_sigbus_code);
		ASSERT_TRUE(gmem_sigbus(mem + off + 7, true)) TH_LOG("write at +%#zx", off);
		EXPECT_EQ((void *)(mem + off + 7), gmem_sigbus_addr);
	}
	EXPECT_EQ(-1, gmem_check(mem, 0, self->size, 0x66));
	ASSERT_EQ(0, fstat(self->fd, &st));
	EXPECT_EQ((off_t)self->size, st.st_size);
	ASSERT_EQ(0, munmap(mem, len));
}

/*
 * fallocate() as 6.12's kvm_gmem_fallocate(): KEEP_SIZE is required,
 * allocation must stay inside the file, punching past EOF is a no-op, other
 * modes are EOPNOTSUPP. Allocated-but-untouched pages read zero through the
 * mapping (no stale data), and allocation never changes existing data.
 */
TEST_F(gmem, fallocate_rules)
{
	const int keep = FALLOC_FL_KEEP_SIZE;
	const int punch = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
	size_t sz = self->size;
	struct stat st;
	uint8_t *mem;

	ASSERT_EQ(0, fallocate(self->fd, keep, 0, sz));
	mem = gmem_map(self->fd, sz);
	ASSERT_NE(MAP_FAILED, mem);
	ASSERT_EQ(-1, gmem_check_zero(mem, 0, sz));
	gmem_fill(mem, 0, sz, 0x77);
	EXPECT_EQ(0, fallocate(self->fd, keep, page_size, page_size));

	EXPECT_EQ(-1, fallocate(self->fd, 0, 0, page_size));
	EXPECT_EQ(EOPNOTSUPP, errno);
	EXPECT_EQ(-1, fallocate(self->fd, FALLOC_FL_ZERO_RANGE | keep, 0, page_size));
	EXPECT_EQ(EOPNOTSUPP, errno);
	EXPECT_EQ(-1, fallocate(self->fd, FALLOC_FL_COLLAPSE_RANGE, 0, page_size));
	EXPECT_EQ(EOPNOTSUPP, errno);

	EXPECT_EQ(-1, fallocate(self->fd, keep, sz, page_size));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, fallocate(self->fd, keep, sz + page_size, page_size));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, fallocate(self->fd, keep, sz - page_size, 2 * page_size));
	EXPECT_EQ(EINVAL, errno);

	EXPECT_EQ(0, fallocate(self->fd, punch, sz, page_size));
	EXPECT_EQ(0, fallocate(self->fd, punch, sz + page_size, page_size));

	EXPECT_EQ(-1, gmem_check(mem, 0, sz, 0x77));
	ASSERT_EQ(0, fstat(self->fd, &st));
	EXPECT_EQ((off_t)sz, st.st_size);
	ASSERT_EQ(0, munmap(mem, sz));
}

/* Unaligned offset or length: EINVAL for punch and allocate, data kept. */
TEST_F(gmem, fallocate_unaligned_einval)
{
	const int modes[] = { FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      FALLOC_FL_KEEP_SIZE };
	const struct { off_t offset, len; } cases[] = {
		{ 0, 1 }, { 0, page_size - 1 }, { 0, page_size + 1 },
		{ 1, 1 }, { 1, page_size - 1 }, { 1, page_size }, { 1, page_size + 1 },
		{ page_size, 1 }, { page_size, page_size - 1 }, { page_size, page_size + 1 },
	};
	uint8_t *mem;

	mem = gmem_map(self->fd, self->size);
	ASSERT_NE(MAP_FAILED, mem);
	gmem_fill(mem, 0, self->size, 0x88);

	for (size_t m = 0; m < ARRAY_SIZE(modes); m++) {
		for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
			int r = fallocate(self->fd, modes[m], cases[i].offset, cases[i].len);

			EXPECT_EQ(-1, r) TH_LOG("mode %#x offset %jd len %jd", modes[m],
						(intmax_t)cases[i].offset, (intmax_t)cases[i].len);
			EXPECT_EQ(EINVAL, errno);
		}
	}
	EXPECT_EQ(-1, gmem_check(mem, 0, self->size, 0x88));
	ASSERT_EQ(0, munmap(mem, self->size));
}

/*
 * Ranges that are negative, empty or wrap loff_t. We expect what 6.12's
 * vfs_fallocate() does before guest_memfd even sees the call: EINVAL for
 * a negative offset or a length <= 0, and EFBIG (not EINVAL) when
 * offset + len overflows loff_t, for punch and allocate alike. A huge but
 * non-wrapping punch is legal and zeroes everything from its start.
 */
TEST_F(gmem, fallocate_bad_ranges)
{
	const int punch = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
	const off_t big = LLONG_MAX & ~((off_t)page_size - 1);
	const int modes[] = { punch, FALLOC_FL_KEEP_SIZE };
	uint8_t *mem;

	mem = gmem_map(self->fd, self->size);
	ASSERT_NE(MAP_FAILED, mem);
	gmem_fill(mem, 0, self->size, 0x99);

	for (size_t m = 0; m < ARRAY_SIZE(modes); m++) {
		int mode = modes[m];

		EXPECT_EQ(-1, fallocate(self->fd, mode, -(off_t)page_size, page_size));
		EXPECT_EQ(EINVAL, errno);
		EXPECT_EQ(-1, fallocate(self->fd, mode, 0, 0));
		EXPECT_EQ(EINVAL, errno);
		EXPECT_EQ(-1, fallocate(self->fd, mode, 0, -(off_t)page_size));
		EXPECT_EQ(EINVAL, errno);

		EXPECT_EQ(-1, fallocate(self->fd, mode, big, page_size));
		EXPECT_EQ(EFBIG, errno);
		EXPECT_EQ(-1, fallocate(self->fd, mode, page_size, big));
		EXPECT_EQ(EFBIG, errno);
		EXPECT_EQ(-1, fallocate(self->fd, mode, LLONG_MAX, 1));
		EXPECT_EQ(EFBIG, errno);
		EXPECT_EQ(-1, fallocate(self->fd, mode, 1, LLONG_MAX));
		EXPECT_EQ(EFBIG, errno);
	}
	EXPECT_EQ(-1, gmem_check(mem, 0, self->size, 0x99));

	/* Allocation past EOF is refused; a punch that far is not. */
	EXPECT_EQ(-1, fallocate(self->fd, FALLOC_FL_KEEP_SIZE, page_size, big - page_size));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, fallocate(self->fd, punch, page_size, big - page_size));
	EXPECT_EQ(-1, gmem_check(mem, 0, page_size, 0x99));
	EXPECT_EQ(-1, gmem_check_zero(mem, page_size, self->size));
	ASSERT_EQ(0, munmap(mem, self->size));
}

/*
 * A guest_memfd without GUEST_MEMFD_FLAG_WRITE has no read/write: read() is
 * EINVAL; write() and pwrite() are ENODEV with our modules (the write()
 * series' v7: src/virt/0021), EINVAL and ESPIPE with Debian's (6.12's
 * anonymous-inode file has no FMODE_PWRITE); pread() is refused too (EINVAL
 * or ESPIPE), mapped or not.
 */
TEST_F(gmem, file_read_write_fail)
{
	char buf[64] = { 0 };
	uint8_t *mem;

	mem = gmem_map(self->fd, self->size);
	ASSERT_NE(MAP_FAILED, mem);
	gmem_fill(mem, 0, self->size, 0xaa);

	EXPECT_EQ(-1, read(self->fd, buf, sizeof(buf)));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, write(self->fd, buf, sizeof(buf)));
	EXPECT_EQ(gmem_ours() ? ENODEV : EINVAL, errno);
	EXPECT_EQ(-1, pread(self->fd, buf, sizeof(buf), 0));
	EXPECT_TRUE(errno == ESPIPE || errno == EINVAL) TH_LOG("pread: %s", strerror(errno));
	EXPECT_EQ(-1, pwrite(self->fd, buf, sizeof(buf), 0));
	EXPECT_EQ(gmem_ours() ? ENODEV : ESPIPE, errno) TH_LOG("pwrite: %s", strerror(errno));

	EXPECT_EQ(-1, gmem_check(mem, 0, self->size, 0xaa));
	ASSERT_EQ(0, munmap(mem, self->size));
}

/*
 * We chose: mremap() may grow (and move) a mapping past EOF; the data moves
 * with it and the grown part SIGBUSes on touch, like a mapping made that
 * large. Why: mremap is a plain VMA operation, and the fault handler's EOF
 * check is what must keep it from allocating past the file.
 */
TEST_F(gmem, mremap_grow_sigbus)
{
	uint8_t *mem, *grown;

	mem = gmem_map(self->fd, self->size);
	ASSERT_NE(MAP_FAILED, mem);
	gmem_fill(mem, 0, self->size, 0xbb);

	grown = mremap(mem, self->size, 3 * self->size, MREMAP_MAYMOVE);
	ASSERT_NE(MAP_FAILED, grown) TH_LOG("mremap: %s", strerror(errno));
	EXPECT_EQ(-1, gmem_check(grown, 0, self->size, 0xbb));
	for (size_t off = self->size; off < 3 * self->size; off += page_size) {
		EXPECT_TRUE(gmem_sigbus(grown + off, false)) TH_LOG("read at +%#zx", off);
		EXPECT_TRUE(gmem_sigbus(grown + off, true)) TH_LOG("write at +%#zx", off);
	}

	/* Shrinking back is fine and keeps the data. */
	mem = mremap(grown, 3 * self->size, self->size, 0);
	ASSERT_EQ(grown, mem);
	EXPECT_EQ(-1, gmem_check(mem, 0, self->size, 0xbb));
	ASSERT_EQ(0, munmap(mem, self->size));
}

/*
 * We chose: PROT_EXEC is allowed, as for any shared file mapping on an
 * exec-allowed mount: the memory is plain host-shared memory, and 6.12's
 * anon-inode mount is not noexec. Code written through the mapping runs.
 * Later kernels mark the anon-inode mount SB_I_NOEXEC, which refuses
 * PROT_EXEC (mmap EPERM, mprotect EACCES); that is accepted too, never a
 * half-working state.
 */
TEST_F(gmem, mprotect_exec)
{
	uint8_t *mem, *xmem;
	int r;

	mem = gmem_map(self->fd, self->size);
	ASSERT_NE(MAP_FAILED, mem);
	gmem_fill(mem, 0, self->size, 0xcc);
	mem[0] = 0xc3;				/* ret */

	r = mprotect(mem, page_size, PROT_READ | PROT_EXEC);
	if (r) {
		ASSERT_EQ(EACCES, errno);
		xmem = mmap(NULL, page_size, PROT_READ | PROT_EXEC, MAP_SHARED, self->fd, 0);
		ASSERT_EQ(MAP_FAILED, xmem);
		ASSERT_EQ(EPERM, errno);
		TH_LOG("PROT_EXEC refused (noexec anon-inode mount)");
	} else {
		TH_LOG("PROT_EXEC allowed: running code from the mapping");
		((void (*)(void))mem)();
		ASSERT_EQ(0, mprotect(mem, page_size, PROT_READ | PROT_WRITE));
		EXPECT_EQ(0xc3, mem[0]);
		EXPECT_EQ(-1, gmem_check(mem, 1, self->size, 0xcc));

		xmem = mmap(NULL, page_size, PROT_READ | PROT_EXEC, MAP_SHARED, self->fd, 0);
		ASSERT_NE(MAP_FAILED, xmem);
		((void (*)(void))xmem)();
		munmap(xmem, page_size);
	}
	ASSERT_EQ(0, munmap(mem, self->size));
}

/*
 * We chose: MADV_HUGEPAGE is only a hint and may succeed (or be EINVAL), but
 * nothing may ever map guest_memfd with a huge page, and MADV_COLLAPSE must
 * fail with EINVAL, as in mainline: khugepaged/collapse must never replace
 * guest_memfd folios (syzbot found a WARN there). Debian's 6.12 has no
 * READ_ONLY_THP_FOR_FS, so the collapse path refuses the VMA.
 */
TEST_F(gmem, madv_hugepage_collapse)
{
	uint8_t *resv, *mem;
	long pmd_kb, eligible;
	uintptr_t aligned;
	int fd, r;

	fd = gmem_create(self->vm_fd, SZ_2M, self->flags);
	ASSERT_LE(0, fd);

	/* A 2M-aligned 2M mapping, so a PMD could map it if anything tried. */
	resv = mmap(NULL, 2 * SZ_2M, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, resv);
	aligned = ((uintptr_t)resv + SZ_2M - 1) & ~(SZ_2M - 1);
	mem = mmap((void *)aligned, SZ_2M, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_FIXED, fd, 0);
	ASSERT_EQ((void *)aligned, mem);

	r = madvise(mem, SZ_2M, MADV_HUGEPAGE);
	EXPECT_TRUE(r == 0 || errno == EINVAL) TH_LOG("MADV_HUGEPAGE: %s", strerror(errno));
	gmem_fill(mem, 0, SZ_2M, 0xdd);

	r = madvise(mem, SZ_2M, MADV_COLLAPSE);
	EXPECT_EQ(-1, r) TH_LOG("MADV_COLLAPSE succeeded on a guest_memfd mapping");
	EXPECT_EQ(EINVAL, errno);

	EXPECT_EQ(-1, gmem_check(mem, 0, SZ_2M, 0xdd));
	pmd_kb = smaps_field(mem, "FilePmdMapped");
	eligible = smaps_field(mem, "THPeligible");
	TH_LOG("smaps: FilePmdMapped %ld kB, THPeligible %ld", pmd_kb, eligible);
	EXPECT_EQ(0, pmd_kb);
	EXPECT_EQ(0, eligible);

	EXPECT_EQ(0, madvise(mem, SZ_2M, MADV_NOHUGEPAGE));
	munmap(resv, 2 * SZ_2M);
	close(fd);
}

/*
 * We chose: MADV_DONTNEED only drops our page table entries (the data stays
 * in the file and faults back in), while MADV_REMOVE punches the range out
 * of the file (it calls fallocate(PUNCH_HOLE)), zeroing exactly those pages.
 * Both as for any shared file mapping.
 */
TEST_F(gmem, madv_dontneed_remove)
{
	uint8_t *mem;

	mem = gmem_map(self->fd, self->size);
	ASSERT_NE(MAP_FAILED, mem);
	gmem_fill(mem, 0, self->size, 0x1d);

	ASSERT_EQ(0, madvise(mem, self->size, MADV_DONTNEED));
	EXPECT_EQ(-1, gmem_check(mem, 0, self->size, 0x1d));

	ASSERT_EQ(0, madvise(mem + 2 * page_size, page_size, MADV_REMOVE))
		TH_LOG("MADV_REMOVE: %s", strerror(errno));
	EXPECT_EQ(-1, gmem_check(mem, 0, 2 * page_size, 0x1d));
	EXPECT_EQ(-1, gmem_check_zero(mem, 2 * page_size, 3 * page_size));
	EXPECT_EQ(-1, gmem_check(mem, 3 * page_size, self->size, 0x1d));
	ASSERT_EQ(0, munmap(mem, self->size));
}

/*
 * We chose: fork() shares the mapping (it is MAP_SHARED; no COW copy):
 * what the child writes, also to pages the parent never touched, the
 * parent sees, and the other way round.
 */
TEST_F(gmem, fork_shared)
{
	uint8_t *mem;
	int status;
	pid_t pid;

	mem = gmem_map(self->fd, self->size);
	ASSERT_NE(MAP_FAILED, mem);
	gmem_fill(mem, 0, page_size, 0x12);

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (gmem_check(mem, 0, page_size, 0x12) != -1)
			_exit(1);
		gmem_fill(mem, 0, page_size, 0x34);
		gmem_fill(mem, 2 * page_size, 3 * page_size, 0x56);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) TH_LOG("child status %#x", status);
	EXPECT_EQ(-1, gmem_check(mem, 0, page_size, 0x34));
	EXPECT_EQ(-1, gmem_check(mem, 2 * page_size, 3 * page_size, 0x56));

	gmem_fill(mem, page_size, 2 * page_size, 0x78);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(gmem_check(mem, page_size, 2 * page_size, 0x78) == -1 ? 0 : 1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) TH_LOG("child status %#x", status);
	ASSERT_EQ(0, munmap(mem, self->size));
}

/*
 * We chose: process_vm_readv/writev work on another process's guest_memfd
 * mapping (they use GUP, which shared guest_memfd pages allow, like any
 * shared file page); writes land in the file. A range running past EOF
 * gives a short transfer, never a signal to either process.
 */
TEST_F(gmem, process_vm_rw)
{
	size_t len = 2 * self->size;
	int pipefd[2], status;
	uint8_t *mem, *buf;
	struct iovec local, remote;
	ssize_t n;
	pid_t pid;

	mem = gmem_map(self->fd, len);
	ASSERT_NE(MAP_FAILED, mem);
	gmem_fill(mem, 0, self->size, 0x9a);
	buf = calloc(1, len);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, pipe(pipefd));

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		char c;

		close(pipefd[1]);
		_exit(read(pipefd[0], &c, 1) < 0);
	}
	close(pipefd[0]);

	local = (struct iovec){ buf, self->size };
	remote = (struct iovec){ mem, self->size };
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	EXPECT_EQ((ssize_t)self->size, n) TH_LOG("process_vm_readv: %s", strerror(errno));
	EXPECT_EQ(-1, gmem_check(buf, 0, self->size, 0x9a));

	/* Write into the child's view of page 1; it is our page too. */
	gmem_fill(buf, page_size, 2 * page_size, 0xbc);
	local = (struct iovec){ buf + page_size, page_size };
	remote = (struct iovec){ mem + page_size, page_size };
	n = process_vm_writev(pid, &local, 1, &remote, 1, 0);
	EXPECT_EQ((ssize_t)page_size, n) TH_LOG("process_vm_writev: %s", strerror(errno));
	EXPECT_EQ(-1, gmem_check(mem, page_size, 2 * page_size, 0xbc));

	/* Last page of the file and the first one past EOF: short read. */
	local = (struct iovec){ buf, 2 * page_size };
	remote = (struct iovec){ mem + self->size - page_size, 2 * page_size };
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	EXPECT_EQ((ssize_t)page_size, n) TH_LOG("readv across EOF: %zd (%s)", n, strerror(errno));

	close(pipefd[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) TH_LOG("child status %#x", status);
	free(buf);
	ASSERT_EQ(0, munmap(mem, len));
}

/*
 * O_DIRECT I/O between a real file and the mapping. We chose: allowed both
 * ways. Direct I/O pins the user pages with GUP (FOLL_PIN, not longterm),
 * which is fine for shared guest_memfd pages as for any shared file page;
 * the data must land in, or come from, guest_memfd itself. A read whose
 * buffer runs past EOF of the guest_memfd is short or EFAULT, never SIGBUS.
 */
static void odirect_case(struct __test_metadata *_metadata,
			 FIXTURE_DATA(gmem) *self, const char *dir)
{
	size_t two = 2 * page_size;
	uint8_t *mem, *mem2, *buf;
	char path[PATH_MAX];
	struct statfs sfs;
	ssize_t n;
	int tfd;

	snprintf(path, sizeof(path), "%s/gmem-odirect-XXXXXX", dir);
	tfd = mkstemp(path);
	if (tfd < 0)
		SKIP(return, "cannot create a file in %s: %s", dir, strerror(errno));
	unlink(path);
	ASSERT_EQ(0, fstatfs(tfd, &sfs));
	TH_LOG("%s: filesystem magic %#lx", dir, (unsigned long)sfs.f_type);

	/* The file: two pages of pattern 0x21, written the ordinary way. */
	ASSERT_EQ(0, posix_memalign((void **)&buf, page_size, 2 * two));
	gmem_fill(buf, 0, two, 0x21);
	ASSERT_EQ((ssize_t)two, pwrite(tfd, buf, two, 0));
	ASSERT_EQ(0, fsync(tfd));
	if (fcntl(tfd, F_SETFL, O_DIRECT))
		SKIP(goto out, "%s does not do O_DIRECT: %s", dir, strerror(errno));

	mem = gmem_map(self->fd, self->size);
	ASSERT_NE(MAP_FAILED, mem);

	/* O_DIRECT read into the mapping. */
	n = pread(tfd, mem, two, 0);
	ASSERT_EQ((ssize_t)two, n) TH_LOG("O_DIRECT read: %s", strerror(errno));
	EXPECT_EQ(-1, gmem_check(mem, 0, two, 0x21));
	mem2 = gmem_map(self->fd, self->size);
	ASSERT_NE(MAP_FAILED, mem2);
	EXPECT_EQ(-1, gmem_check(mem2, 0, two, 0x21));

	/* O_DIRECT write from the mapping, read back the buffered way. */
	gmem_fill(mem, two, 2 * two, 0x43);
	n = pwrite(tfd, mem + two, two, two);
	ASSERT_EQ((ssize_t)two, n) TH_LOG("O_DIRECT write: %s", strerror(errno));
	ASSERT_EQ(0, fcntl(tfd, F_SETFL, 0));
	ASSERT_EQ((ssize_t)two, pread(tfd, buf + two, two, two));
	EXPECT_EQ(-1, gmem_check(buf, two, 2 * two, 0x43));
	munmap(mem2, self->size);
	munmap(mem, self->size);

	/* Into a buffer that crosses EOF of the guest_memfd. */
	ASSERT_EQ(0, fcntl(tfd, F_SETFL, O_DIRECT));
	mem = gmem_map(self->fd, 2 * self->size);
	ASSERT_NE(MAP_FAILED, mem);
	n = pread(tfd, mem + self->size - page_size, two, 0);
	EXPECT_TRUE((n == -1 && errno == EFAULT) || (n >= 0 && n <= (ssize_t)page_size))
		TH_LOG("read across EOF: %zd (%s)", n, strerror(errno));
	munmap(mem, 2 * self->size);
out:
	free(buf);
	close(tfd);
}

/* The guest's root filesystem is ext4; /var/tmp lives on it. */
TEST_F(gmem, odirect_rootfs)
{
	odirect_case(_metadata, self, "/var/tmp");
}

/* The guest mounts tmpfs on /tmp; tmpfs takes O_DIRECT since 6.6 (a plain copy). */
TEST_F(gmem, odirect_tmpfs)
{
	odirect_case(_metadata, self, "/tmp");
}

/*
 * We chose: closing the guest_memfd, the VM and /dev/kvm while mapped keeps
 * the mapping fully working (the VMA holds the file, the file holds the
 * VM): old data stays, new pages fault in zeroed, past-EOF still SIGBUSes;
 * munmap then frees everything.
 */
TEST_F(gmem, close_while_mapped)
{
	size_t len = 2 * self->size;
	uint8_t *mem;

	mem = gmem_map(self->fd, len);
	ASSERT_NE(MAP_FAILED, mem);
	gmem_fill(mem, 0, 2 * page_size, 0xde);

	close(self->fd);
	close(self->vm_fd);
	close(self->kvm_fd);
	self->fd = self->vm_fd = self->kvm_fd = -1;

	EXPECT_EQ(-1, gmem_check(mem, 0, 2 * page_size, 0xde));
	EXPECT_EQ(-1, gmem_check_zero(mem, 2 * page_size, self->size));
	gmem_fill(mem, 2 * page_size, self->size, 0xef);
	EXPECT_EQ(-1, gmem_check(mem, 2 * page_size, self->size, 0xef));
	EXPECT_TRUE(gmem_sigbus(mem + self->size, false));
	ASSERT_EQ(0, munmap(mem, len));
}

/*
 * Punch a hole again and again while another thread reads the page: each
 * 8-byte word it reads must be the word written there or zero, nothing else
 * (no stale or foreign page), and the untouched neighbour page never
 * changes. Bounded to about 2 seconds.
 */
struct race {
	volatile uint64_t *page;	/* page 0: punched */
	volatile uint64_t *next;	/* page 1: left alone */
	size_t words;
	atomic_bool stop;
	unsigned long reads, seen_data, seen_zero, bad;
	uint64_t bad_val;
	size_t bad_idx;
};

static uint64_t word_pat(size_t i)
{
	return (0x9e3779b97f4a7c15ULL * (i + 1)) | 1;
}

static void *race_reader(void *arg)
{
	struct race *rc = arg;

	while (!atomic_load_explicit(&rc->stop, memory_order_relaxed)) {
		for (size_t i = 0; i < rc->words; i++) {
			uint64_t v = rc->page[i];

			if (v == word_pat(i)) {
				rc->seen_data++;
			} else if (!v) {
				rc->seen_zero++;
			} else {
				rc->bad++;
				rc->bad_val = v;
				rc->bad_idx = i;
			}
			if (rc->next[i] != ~word_pat(i)) {
				rc->bad++;
				rc->bad_val = rc->next[i];
				rc->bad_idx = rc->words + i;
			}
		}
		rc->reads++;
	}
	return NULL;
}

TEST_F_TIMEOUT(gmem, punch_hole_race, 60)
{
	struct race rc = { 0 };
	struct timespec t0, t;
	unsigned long rounds = 0;
	pthread_t thread;
	uint8_t *mem;

	mem = gmem_map(self->fd, self->size);
	ASSERT_NE(MAP_FAILED, mem);
	rc.page = (volatile uint64_t *)mem;
	rc.next = (volatile uint64_t *)(mem + page_size);
	rc.words = page_size / sizeof(uint64_t);
	for (size_t i = 0; i < rc.words; i++) {
		rc.page[i] = word_pat(i);
		rc.next[i] = ~word_pat(i);
	}

	ASSERT_EQ(0, pthread_create(&thread, NULL, race_reader, &rc));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (fallocate(self->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      0, page_size))
			break;
		for (size_t i = 0; i < rc.words; i++)
			rc.page[i] = word_pat(i);
		rounds++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) <
		 2000000000L);
	atomic_store(&rc.stop, true);
	pthread_join(thread, NULL);

	TH_LOG("%lu punches, %lu page reads, %lu data words, %lu zero words",
	       rounds, rc.reads, rc.seen_data, rc.seen_zero);
	ASSERT_LT(0UL, rounds) TH_LOG("punch hole failed: %s", strerror(errno));
	EXPECT_EQ(0UL, rc.bad) TH_LOG("last bad word %#" PRIx64 " at word %zu",
				    rc.bad_val, rc.bad_idx);
	EXPECT_LT(0UL, rc.reads);
	ASSERT_EQ(0, munmap(mem, self->size));
}

/*
 * MADV_HWPOISON on one page (root only; needs CONFIG_MEMORY_FAILURE, which
 * Debian has). We chose: the injection itself may report 0 or EBUSY (6.12's
 * truncate_error_folio() counts guest_memfd's MF_DELAYED as a failure) and
 * may already deliver SIGBUS (BUS_MCEERR_AR) if the page was dirty; after it,
 * touching the page must SIGBUS, the other pages are untouched, and a punch
 * hole plus a new mapping recover the offset as a fresh zero page. The
 * poisoned page itself is lost to this (throwaway) kernel for good.
 */
TEST_F(gmem, madv_hwpoison)
{
	volatile bool bus_in_madvise = false;
	volatile int r = 0, err = 0;
	uint8_t *mem;

	if (geteuid())
		SKIP(return, "MADV_HWPOISON needs root");

	mem = gmem_map(self->fd, self->size);
	ASSERT_NE(MAP_FAILED, mem);
	gmem_fill(mem, 0, self->size, 0x5c);

	if (sigsetjmp(gmem_sigbus_jmp, 1) == 0) {
		gmem_sigbus_armed = 1;
		r = madvise(mem + page_size, page_size, MADV_HWPOISON);
		err = errno;
		gmem_sigbus_armed = 0;
	} else {
		bus_in_madvise = true;
		TH_LOG("SIGBUS during MADV_HWPOISON (si_code %d)", gmem_sigbus_code);
	}
	if (!bus_in_madvise && r) {
		if (err == EPERM)
			SKIP(return, "MADV_HWPOISON: EPERM (no CAP_SYS_ADMIN)");
		if (err == EINVAL)
			SKIP(return, "MADV_HWPOISON: EINVAL (no CONFIG_MEMORY_FAILURE?)");
		ASSERT_TRUE(err == EBUSY || err == EHWPOISON) TH_LOG("MADV_HWPOISON: %s", strerror(err));
		TH_LOG("MADV_HWPOISON returned %s", strerror(err));
	}

	ASSERT_TRUE(gmem_sigbus(mem + page_size, false));
	TH_LOG("touch after poison: SIGBUS si_code %d", gmem_sigbus_code);
	EXPECT_EQ(BUS_MCEERR_AR, gmem_sigbus_code);
	EXPECT_TRUE(gmem_sigbus(mem + page_size + 100, true));

	EXPECT_EQ(-1, gmem_check(mem, 0, page_size, 0x5c));
	EXPECT_EQ(-1, gmem_check(mem, 2 * page_size, self->size, 0x5c));
	gmem_fill(mem, 2 * page_size, 3 * page_size, 0x6d);
	EXPECT_EQ(-1, gmem_check(mem, 2 * page_size, 3 * page_size, 0x6d));
	ASSERT_EQ(0, munmap(mem, self->size));

	/* Recovery: drop the poisoned folio, map again, get a zero page. */
	ASSERT_EQ(0, fallocate(self->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       page_size, page_size));
	mem = gmem_map(self->fd, self->size);
	ASSERT_NE(MAP_FAILED, mem);
	ASSERT_FALSE(gmem_sigbus(mem + page_size, false));
	EXPECT_EQ(-1, gmem_check_zero(mem, page_size, 2 * page_size));
	gmem_fill(mem, page_size, 2 * page_size, 0x7e);
	EXPECT_EQ(-1, gmem_check(mem, page_size, 2 * page_size, 0x7e));
	EXPECT_EQ(-1, gmem_check(mem, 0, page_size, 0x5c));
	ASSERT_EQ(0, munmap(mem, self->size));
}

TEST_HARNESS_MAIN
