// SPDX-License-Identifier: GPL-2.0
/*
 * gmem_abi_test: the guest_memfd mmap() ABI table, in both settings of the
 * kvm.gmem_mainline_abi module parameter: the test writes the parameter
 * itself (v7 round, then mainline round) and restores it, so one run covers
 * both. docs/abi.md's ABI table is made from the names of its cases
 * (scripts/abi-table.sh --update); in short:
 *
 *                          mainline (=1, default)    v7 (=0)
 *  /dev/kvm FLAGS cap      MMAP|INIT_SHARED|WRITE    same
 *  /dev/kvm 239 cap        0                         1
 *  any VM GUEST_MEMFD cap  1                         1
 *  any VM ENABLE_CAP(239)  EINVAL                    EINVAL
 *  default VM FLAGS cap    MMAP|INIT_SHARED|WRITE    same
 *  default VM 239 cap      0                         0
 *  default VM, 0           mmap ENODEV, no memslot   same
 *  default VM, MMAP        mmap ok, touch SIGBUS(*)  same
 *  default VM, MMAP|INIT   shared, gmem-only memslot same
 *  default VM, INIT        mmap ENODEV               same
 *  SW_PROT FLAGS cap       MMAP                      MMAP
 *  SW_PROT 239 cap         0                         1
 *  SW_PROT, 0              mmap ENODEV               mmap ok, shared
 *  SW_PROT, MMAP           mmap ok, touch SIGBUS(*)  mmap ok, shared
 *  SW_PROT, INIT_SHARED    EINVAL                    EINVAL
 *  any VM, other flag bit  EINVAL                    EINVAL
 *
 * (*) on every page, allocating nothing: cachestat() counts no page of the
 * file (where the kernel has it), st_blocks and (mm-shim kernel) debugfs
 * kvm/gmem_guestmem_folios are unchanged; one of the two probes must exist.
 * Everywhere: MAP_PRIVATE EINVAL, SIGBUS past EOF, zero-fill on first touch,
 * MADV_COLLAPSE refused. A VM and its guest_memfds keep the ABI the VM was
 * created under: flipping the parameter changes neither an existing
 * guest_memfd nor a VM's cap 239 nor the guest_memfds that VM creates later.
 * Skips (exit 4) with modules that lack KVM_CAP_GUEST_MEMFD_FLAGS.
 *
 * Where the kernel exports what GUEST_MEMFD_FLAG_NO_DIRECT_MAP needs (the
 * mm-shim kernel; /proc/kallsyms shows it), every FLAGS cap above has that bit
 * too, but a SW_PROTECTED VM's under v7 (gmem_ndm_test checks the flag).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/kvm.h>
#include <linux/mman.h>

#include "kselftest.h"
#include "gmem_test.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

#define PARAM	"/sys/module/kvm/parameters/gmem_mainline_abi"
#define MMAP	GUEST_MEMFD_FLAG_MMAP
#define INIT	GUEST_MEMFD_FLAG_INIT_SHARED
#define WRITE	GUEST_MEMFD_FLAG_WRITE
#define HUGE	GUEST_MEMFD_FLAG_HUGEPAGE
#define NPAGES	4
/* Cases per ABI setting: /dev/kvm has 2. */
#define DEFAULT_VM_CASES	12
#define SWPROT_CASES		10

static int kvm_fd;
static long page;
/* GUEST_MEMFD_FLAG_NO_DIRECT_MAP where kvm.ko has it, else 0. */
static unsigned long long ndm;
static sigjmp_buf sigbus_jmp;

static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(sigbus_jmp, 1);
}

/* Touch (read) one byte; returns -1 on SIGBUS, else the byte. */
static int touch(volatile char *p)
{
	if (sigsetjmp(sigbus_jmp, 1))
		return -1;
	return *p;
}

/*
 * How many pages @fd has in its page cache, up to date or not: cachestat()
 * (Linux 6.5; both test kernels have it), -1 without
 * it. mincore() would not do: it only counts pages that are up to date, and
 * a folio allocated by a refused fault never is. guest_memfd keeps no
 * i_blocks, so st_blocks (checked anyway) is always 0.
 */
static long cached_pages(int fd)
{
	return gmem_cached_pages(fd, 0, NPAGES * page);
}

static long long file_blocks(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? -1 : (long long)st.st_blocks;
}

/* kvm.ko's count of guestmem-typed folios, -1 without the mm-shim hook. */
static long typed_folios(void)
{
	return gmem_has_mm_hook() ? gmem_counter(GMEM_TYPED) : -1;
}

static void set_mainline(bool on)
{
	int fd = open(PARAM, O_WRONLY);

	if (fd < 0 || write(fd, on ? "1" : "0", 1) != 1)
		ksft_exit_fail_msg("cannot write %s: %s\n", PARAM, strerror(errno));
	close(fd);
}

static int create_vm(unsigned long type)
{
	int vm = ioctl(kvm_fd, KVM_CREATE_VM, type);

	if (vm < 0)
		ksft_exit_fail_msg("KVM_CREATE_VM(%lu): %s\n", type, strerror(errno));
	return vm;
}

/* Returns the fd, or -errno. */
static int create_gmem(int vm, unsigned long long flags)
{
	struct kvm_create_guest_memfd args = { .size = NPAGES * page, .flags = flags };
	int fd = ioctl(vm, KVM_CREATE_GUEST_MEMFD, &args);

	return fd < 0 ? -errno : fd;
}

/* mmap() the whole file plus one page past EOF; returns MAP_FAILED + errno. */
static char *map(int fd, int how)
{
	return mmap(NULL, (NPAGES + 1) * page, PROT_READ | PROT_WRITE, how, fd, 0);
}

static int bind_slot(int vm, int gmem, void *hva)
{
	struct kvm_userspace_memory_region2 region = {
		.slot = 0,
		.flags = KVM_MEM_GUEST_MEMFD,
		.guest_phys_addr = 0,
		.memory_size = NPAGES * page,
		.userspace_addr = (unsigned long)hva,
		.guest_memfd = gmem,
		.guest_memfd_offset = 0,
	};

	return ioctl(vm, KVM_SET_USER_MEMORY_REGION2, &region) ? -errno : 0;
}

/* How the case names (docs/abi.md's ABI table) spell flags and errnos. */
static const char *flag_names(unsigned long long flags)
{
	switch (flags) {
	case 0:			return "0";
	case MMAP:		return "MMAP";
	case INIT:		return "INIT_SHARED";
	case MMAP | INIT:	return "MMAP | INIT_SHARED";
	case MMAP | INIT | HUGE: return "MMAP | INIT_SHARED | HUGEPAGE";
	default:		return "?";
	}
}

static const char *errno_name(int e)
{
	switch (e) {
	case 0:		return "ok";
	case EINVAL:	return "EINVAL";
	case ENODEV:	return "ENODEV";
	case EEXIST:	return "EEXIST";
	case EFAULT:	return "EFAULT";
	default:	return strerror(e);
	}
}

/* What a shared, mappable guest_memfd must do. */
static bool check_shared_mapping(int fd, const char **why)
{
	char *mem = map(fd, MAP_SHARED), *priv;
	bool probe = cached_pages(fd) >= 0;
	bool ok = true;

	if (mem == MAP_FAILED) {
		*why = "mmap failed";
		return false;
	}
	if (probe && cached_pages(fd) != 0)
		ok = false, *why = "pages allocated before any touch";
	if (ok && touch(mem) != 0)
		ok = false, *why = "first touch not zero";
	memset(mem, 0x5a, NPAGES * page);
	/* The positive control of the allocation probe of private memory. */
	if (ok && probe && cached_pages(fd) != NPAGES)
		ok = false, *why = "cachestat() does not count the touched pages";
	if (ok && touch(mem + NPAGES * page - 1) != 0x5a)
		ok = false, *why = "no read-back";
	if (ok && touch(mem + NPAGES * page) != -1)
		ok = false, *why = "no SIGBUS past EOF";
	if (ok && madvise(mem, NPAGES * page, MADV_COLLAPSE) == 0)
		ok = false, *why = "MADV_COLLAPSE allowed";
	munmap(mem, (NPAGES + 1) * page);
	priv = map(fd, MAP_PRIVATE);
	if (ok && (priv != MAP_FAILED || errno != EINVAL))
		ok = false, *why = "MAP_PRIVATE not EINVAL";
	if (priv != MAP_FAILED)
		munmap(priv, (NPAGES + 1) * page);
	return ok;
}

/*
 * A mappable guest_memfd whose memory is private: every fault SIGBUSes and
 * allocates nothing: no page in the page cache (cachestat), st_blocks and,
 * with the mm-shim hook, kvm.ko's count of typed folios unchanged.
 */
static bool check_private_mapping(int fd, const char **why)
{
	long long blocks = file_blocks(fd);
	long typed = typed_folios();
	char *mem = map(fd, MAP_SHARED);
	bool ok = true;

	if (mem == MAP_FAILED) {
		*why = "mmap failed";
		return false;
	}
	for (int i = 0; ok && i < NPAGES; i++) {
		if (touch(mem + i * page) != -1)
			ok = false, *why = "touching private memory did not SIGBUS";
	}
	if (ok && cached_pages(fd) > 0)
		ok = false, *why = "touching private memory allocated it (cachestat)";
	if (ok && file_blocks(fd) != blocks)
		ok = false, *why = "touching private memory changed st_blocks";
	if (ok && typed_folios() != typed)
		ok = false, *why = "touching private memory typed folios";
	munmap(mem, (NPAGES + 1) * page);
	return ok;
}

static bool check_not_mappable(int fd, const char **why)
{
	char *mem = map(fd, MAP_SHARED);

	if (mem != MAP_FAILED || errno != ENODEV) {
		*why = "mmap not ENODEV";
		if (mem != MAP_FAILED)
			munmap(mem, (NPAGES + 1) * page);
		return false;
	}
	return true;
}

static void check_flags_cap(int fd, const char *who, unsigned long long want)
{
	int r = ioctl(fd, KVM_CHECK_EXTENSION, KVM_CAP_GUEST_MEMFD_FLAGS);

	ksft_test_result(r == (int)want, "%s: KVM_CAP_GUEST_MEMFD_FLAGS = %d (want %llu)\n",
			 who, r, want);
}

static void check_gmem_cap(int fd, const char *who)
{
	int r = ioctl(fd, KVM_CHECK_EXTENSION, KVM_CAP_GUEST_MEMFD);

	ksft_test_result(r == 1, "%s: KVM_CAP_GUEST_MEMFD = %d (want 1)\n", who, r);
}

static void check_v7_cap(int fd, const char *who, int want)
{
	int r = ioctl(fd, KVM_CHECK_EXTENSION, KVM_CAP_GMEM_SHARED_MEM);

	ksft_test_result(r == want, "%s: KVM_CAP_GMEM_SHARED_MEM = %d (want %d)\n", who, r, want);
}

/*
 * Capability 239 is mainline's KVM_CAP_ARM_WRITABLE_IMP_ID_REGS: nothing of
 * ours can be enabled under that number, in either ABI.
 */
static void check_v7_cap_not_enabled(int vm, const char *who)
{
	struct kvm_enable_cap cap = { .cap = KVM_CAP_GMEM_SHARED_MEM };
	int r = ioctl(vm, KVM_ENABLE_CAP, &cap) ? errno : 0;

	ksft_test_result(r == EINVAL, "%s: KVM_ENABLE_CAP(239) = %s (want EINVAL)\n", who,
			 errno_name(r));
}

/* Every bit that is not advertised must be refused. */
static void check_bad_flags(int vm, const char *who, unsigned long long allowed)
{
	int bad = -1;

	for (int bit = 0; bit < 64; bit++) {
		unsigned long long f = 1ULL << bit;
		int fd;

		if (f & allowed)
			continue;
		fd = create_gmem(vm, f);
		if (fd != -EINVAL) {
			bad = bit;
			if (fd >= 0)
				close(fd);
			break;
		}
	}
	ksft_test_result(bad < 0, "%s: any flag bit the flags cap does not advertise = %s\n", who,
			 bad < 0 ? "EINVAL" : "accepted (one is not EINVAL)");
}

/*
 * What a guest_memfd of some flags must do, and how docs/abi.md's ABI table says
 * it: the case names are the table's cells (scripts/abi-table.sh).
 */
struct behaviour {
	bool (*check)(int fd, const char **why);
	const char *says;
};

static const struct behaviour shared = { check_shared_mapping, "shared" };
static const struct behaviour private = {
	check_private_mapping, "mmap ok, every touch SIGBUS (private), allocating nothing"
};
static const struct behaviour not_mappable = { check_not_mappable, "mmap ENODEV" };

static void check_file(int vm, const char *who, unsigned long long flags,
		       const struct behaviour *b)
{
	const char *why = "";
	int fd = create_gmem(vm, flags);
	bool ok;

	if (fd < 0) {
		ksft_test_result_fail("%s: flags %s: create failed: %s\n", who,
				      flag_names(flags), strerror(-fd));
		return;
	}
	ok = b->check(fd, &why);
	ksft_test_result(ok, "%s: flags %s: %s\n", who, flag_names(flags), ok ? b->says : why);
	close(fd);
}

static void check_bind(int vm, const char *who, unsigned long long flags, int want)
{
	int fd = create_gmem(vm, flags), r;

	r = fd < 0 ? fd : bind_slot(vm, fd, NULL);
	ksft_test_result(r == want, "%s: memslot on a flags %s guest_memfd, userspace_addr 0: %s\n",
			 who, flag_names(flags), r ? errno_name(-r) : "bound");
	if (fd >= 0)
		close(fd);
}

static void run_abi(bool mainline, bool have_swprot)
{
	const char *abi = mainline ? "mainline" : "v7";
	char who[64];
	int vm;

	set_mainline(mainline);

	snprintf(who, sizeof(who), "%s /dev/kvm", abi);
	check_flags_cap(kvm_fd, who, MMAP | INIT | WRITE | HUGE | ndm);
	check_v7_cap(kvm_fd, who, !mainline);

	snprintf(who, sizeof(who), "%s default VM", abi);
	vm = create_vm(0);
	check_flags_cap(vm, who, MMAP | INIT | WRITE | HUGE | ndm);
	check_gmem_cap(vm, who);
	check_v7_cap(vm, who, 0);
	check_v7_cap_not_enabled(vm, who);
	check_bad_flags(vm, who, MMAP | INIT | WRITE | HUGE | ndm);
	check_file(vm, who, 0, &not_mappable);
	check_file(vm, who, INIT, &not_mappable);
	check_file(vm, who, MMAP, &private);
	check_file(vm, who, MMAP | INIT, &shared);
	check_file(vm, who, MMAP | INIT | HUGE, &shared);
	check_bind(vm, who, 0, -EINVAL);
	close(vm);
	/* One memslot per VM at GPA 0: a fresh VM for the second bind. */
	vm = create_vm(0);
	check_bind(vm, who, MMAP | INIT, 0);
	close(vm);

	snprintf(who, sizeof(who), "%s SW_PROTECTED VM", abi);
	if (!have_swprot) {
		for (int i = 0; i < SWPROT_CASES; i++)
			ksft_test_result_skip("%s: KVM_X86_SW_PROTECTED_VM not supported\n", who);
		return;
	}
	vm = create_vm(KVM_X86_SW_PROTECTED_VM);
	check_flags_cap(vm, who, MMAP | (mainline ? ndm : 0));
	check_gmem_cap(vm, who);
	check_v7_cap(vm, who, !mainline);
	check_v7_cap_not_enabled(vm, who);
	check_bad_flags(vm, who, MMAP | (mainline ? ndm : 0));
	check_file(vm, who, 0, mainline ? &not_mappable : &shared);
	check_file(vm, who, MMAP, mainline ? &private : &shared);
	close(vm);
	vm = create_vm(KVM_X86_SW_PROTECTED_VM);
	check_bind(vm, who, 0, 0);
	close(vm);

	/* A guest_memfd keeps the ABI it was created under. */
	vm = create_vm(KVM_X86_SW_PROTECTED_VM);
	{
		int fd = create_gmem(vm, 0);
		const char *why = "";
		bool ok;

		set_mainline(!mainline);
		ok = fd >= 0 && (mainline ? check_not_mappable(fd, &why) :
					    check_shared_mapping(fd, &why));
		set_mainline(mainline);
		ksft_test_result(ok, "%s: a flags 0 guest_memfd, after the parameter flips: %s\n",
				 who, ok ? (mainline ? not_mappable.says : shared.says) : why);
		if (fd >= 0)
			close(fd);
	}
	close(vm);

	/*
	 * So does a VM: its capability 239 and the guest_memfds it creates
	 * after the parameter flipped follow the ABI it was created under.
	 */
	vm = create_vm(KVM_X86_SW_PROTECTED_VM);
	set_mainline(!mainline);
	{
		int c239 = kvm_cap(vm, KVM_CAP_GMEM_SHARED_MEM);
		int fd = create_gmem(vm, 0);
		const char *why = "";
		bool ok;

		ok = fd >= 0 && (mainline ? check_not_mappable(fd, &why) :
					    check_shared_mapping(fd, &why));
		if (c239 != !mainline)
			ok = false, why = "KVM_CAP_GMEM_SHARED_MEM follows the parameter";
		ksft_test_result(ok, "%s: after the parameter flips, the VM's 239 cap / a new flags 0 guest_memfd: %d / %s\n",
				 who, c239, ok ? (mainline ? not_mappable.says : shared.says) : why);
		if (fd >= 0)
			close(fd);
	}
	set_mainline(mainline);
	close(vm);
}

int main(void)
{
	bool have_swprot, saved;
	char cur = '0';
	int fd;

	page = getpagesize();
	kvm_fd = open("/dev/kvm", O_RDWR);
	if (kvm_fd < 0)
		ksft_exit_skip("/dev/kvm: %s\n", strerror(errno));
	if (ioctl(kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_GUEST_MEMFD_FLAGS) <= 0)
		ksft_exit_skip("KVM_CAP_GUEST_MEMFD_FLAGS not supported (not our modules)\n");
	/*
	 * Whether the flag must be there is the kernel's to say, not kvm.ko's:
	 * it needs mm-shim 0007's and 0010's exports (what build-modules.sh
	 * looks for in Module.symvers), and a kvm.ko that leaves it out on
	 * such a kernel fails here.
	 */
	switch (gmem_kernel_exports("guestmem_no_direct_map_get") +
		gmem_kernel_exports("set_direct_map_invalid_noflush") +
		gmem_kernel_exports("set_direct_map_valid_noflush") +
		gmem_kernel_exports("flush_tlb_kernel_range")) {
	case 4:
		ndm = GUEST_MEMFD_FLAG_NO_DIRECT_MAP;
		break;
	case 0:
	case 1:
	case 2:
	case 3:
		break;
	default:
		ksft_exit_fail_msg("/proc/kallsyms: %s\n", strerror(errno));
	}
	fd = open(PARAM, O_RDONLY);
	if (fd < 0 || read(fd, &cur, 1) != 1)
		ksft_exit_skip("no %s\n", PARAM);
	close(fd);
	saved = cur == 'Y' || cur == '1';
	have_swprot = ioctl(kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_VM_TYPES) &
		      (1 << KVM_X86_SW_PROTECTED_VM);
	signal(SIGBUS, on_sigbus);

	ksft_print_header();
	if (gmem_has_mm_hook() && gmem_counter(GMEM_TYPED) < 0)
		ksft_exit_fail_msg("the kernel has the mm-shim hook but %s cannot be read\n",
				   GMEM_TYPED);
	{
		int pvm = create_vm(0), probe = create_gmem(pvm, MMAP);
		bool cachestat = probe >= 0 && cached_pages(probe) >= 0;

		if (probe >= 0)
			close(probe);
		close(pvm);

		/* Without either, "allocates nothing" would be checked by nothing. */
		if (!cachestat && !gmem_has_mm_hook())
			ksft_exit_fail_msg("neither cachestat() nor the mm-shim counter: cannot see allocations\n");
		ksft_print_msg("allocation probes: cachestat() %s, typed folio count %s\n",
			       cachestat ? "yes" : "no (CONFIG_CACHESTAT_SYSCALL off)",
			       gmem_has_mm_hook() ? "yes (mm-shim hook)" : "no (no mm-shim hook)");
	}
	ksft_set_plan(1 + 2 * (2 + DEFAULT_VM_CASES + SWPROT_CASES));
	/* The tiers load kvm.ko with its defaults: mainline's ABI. */
	ksft_test_result(saved, "kvm.gmem_mainline_abi is Y as loaded (the default)\n");
	run_abi(false, have_swprot);
	run_abi(true, have_swprot);
	set_mainline(saved);
	ksft_finished();
}
