/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by our guest_memfd tests (example_vmm.c stays
 * self-contained on purpose): capabilities and flag fallbacks, guest_memfd
 * creation and mapping, a SIGBUS probe, page patterns, CPU pinning, module
 * unload/load, the mm-shim hook and the debugfs counters that go with it.
 *
 * The SKIP-or-FAIL rule: a test may only SKIP what the kernel or the modules
 * under test cannot have. Where a feature is missing, the test asks
 * gmem_skip_or_fail(): with our modules loaded (gmem_ours(): only they have
 * the kvm.gmem_mainline_abi parameter) every guest_memfd feature they
 * provide must be there, so its absence is a FAIL; with other modules
 * (Debian's) it is a SKIP. A feature our modules leave out on purpose in
 * the running configuration (the v7 capability while the mainline ABI is
 * on) is a SKIP, named with its reason in each tier's expected results
 * (tests/expect/), which also turn any other SKIP into a failure. A kernel
 * feature the running kernel visibly has (the mm-shim hook,
 * gmem_has_mm_hook()) but our modules do not use is a FAIL too.
 */
#ifndef GMEM_TEST_H
#define GMEM_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <linux/kvm.h>

#include "kselftest.h"

/*
 * Fallbacks for headers that predate them: the v7 series' capability,
 * mainline's (6.18) creation-flags capability and flags (the capability is
 * 0 where it does not exist), and MADV_COLLAPSE.
 */
#ifndef KVM_CAP_GMEM_SHARED_MEM
#define KVM_CAP_GMEM_SHARED_MEM 239
#endif
#ifndef KVM_CAP_GUEST_MEMFD_FLAGS
#define KVM_CAP_GUEST_MEMFD_FLAGS 244
#endif
#ifndef GUEST_MEMFD_FLAG_MMAP
#define GUEST_MEMFD_FLAG_MMAP		(1ULL << 0)
#endif
#ifndef GUEST_MEMFD_FLAG_INIT_SHARED
#define GUEST_MEMFD_FLAG_INIT_SHARED	(1ULL << 1)
#endif
/* Provisional (the proposed write() series): src/virt/0021, docs/abi.md. */
#ifndef GUEST_MEMFD_FLAG_WRITE
#define GUEST_MEMFD_FLAG_WRITE		(1ULL << 3)
#endif
/* Provisional (the proposed direct map removal series): src/virt/0024, docs/abi.md. */
#ifndef GUEST_MEMFD_FLAG_NO_DIRECT_MAP
#define GUEST_MEMFD_FLAG_NO_DIRECT_MAP	(1ULL << 2)
#endif
/* Provisional (this series' own, the page size as the hugetlb series): src/virt/0032, docs/abi.md. */
#ifndef GUEST_MEMFD_FLAG_HUGEPAGE
#define GUEST_MEMFD_FLAG_HUGEPAGE	(1ULL << 4)
#define GUEST_MEMFD_HUGE_SHIFT		58
#define GUEST_MEMFD_HUGE_MASK		(0x3fULL << GUEST_MEMFD_HUGE_SHIFT)
#define GUEST_MEMFD_HUGE_2MB		(21ULL << GUEST_MEMFD_HUGE_SHIFT)
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

#define GMEM_DEBUGFS		"/sys/kernel/debug"
/* kvm.ko's counters of guestmem-typed folios (with the mm-shim hook) */
#define GMEM_TYPED		GMEM_DEBUGFS "/kvm/gmem_guestmem_folios"
#define GMEM_FREED		GMEM_DEBUGFS "/kvm/gmem_guestmem_frees"
/* mm's count of guestmem folios freed with no handler (mm-shim 0004) */
#define GMEM_UNHANDLED		GMEM_DEBUGFS "/guestmem_unhandled_frees"

/* KVM_CHECK_EXTENSION, 0 when the ioctl fails. */
static inline int kvm_cap(int fd, long cap)
{
	int r = ioctl(fd, KVM_CHECK_EXTENSION, cap);

	return r < 0 ? 0 : r;
}

/* kvm.ko's ABI switch: only our modules have it. */
#define GMEM_ABI_PARAM		"/sys/module/kvm/parameters/gmem_mainline_abi"

/* Are our modules (kvm.ko with guest_memfd mmap) the ones loaded? */
static inline bool gmem_ours(void)
{
	return !access(GMEM_ABI_PARAM, F_OK);
}

/* Our modules with the v7 ABI selected (kvm.gmem_mainline_abi=0)? */
static inline bool gmem_ours_v7(void)
{
	char c = 0;
	int fd = open(GMEM_ABI_PARAM, O_RDONLY);

	if (fd < 0)
		return false;
	if (read(fd, &c, 1) != 1)
		c = 0;
	close(fd);
	return c == 'N' || c == '0';
}

/*
 * What a test reports for a missing guest_memfd feature that our modules
 * provide: KSFT_FAIL with our modules loaded, KSFT_SKIP with any others.
 */
static inline int gmem_skip_or_fail(void)
{
	return gmem_ours() ? KSFT_FAIL : KSFT_SKIP;
}

/* Does @fd (/dev/kvm or a VM) take every guest_memfd flag in @flags? */
static inline bool gmem_has_flags(int fd, unsigned long long flags)
{
	return ((unsigned long long)kvm_cap(fd, KVM_CAP_GUEST_MEMFD_FLAGS) & flags) == flags;
}

/*
 * A test's start: exit unless /dev/kvm (@kvm) takes every guest_memfd flag
 * in @flags (@what names them): SKIP with other modules, FAIL with ours.
 */
static inline void gmem_require_flags(int kvm, unsigned long long flags, const char *what)
{
	if (gmem_has_flags(kvm, flags))
		return;
	if (gmem_skip_or_fail() == KSFT_SKIP)
		ksft_exit_skip("no %s in KVM_CAP_GUEST_MEMFD_FLAGS (not our modules)\n", what);
	ksft_exit_fail_msg("our modules must offer %s\n", what);
}

/* KVM_CREATE_GUEST_MEMFD on @vm: the new fd, or -errno. */
static inline int gmem_create(int vm, long long size, unsigned long long flags)
{
	struct kvm_create_guest_memfd args = { .size = size, .flags = flags };
	int fd = ioctl(vm, KVM_CREATE_GUEST_MEMFD, &args);

	return fd < 0 ? -errno : fd;
}

/* A shared mapping of @len bytes of @fd from @off: as mmap(), MAP_FAILED on error. */
static inline void *gmem_map_at(int fd, off_t off, size_t len, int prot)
{
	return mmap(NULL, len, prot, MAP_SHARED, fd, off);
}

/* A read-write mapping of the first @len bytes of guest_memfd @fd. */
static inline void *gmem_map(int fd, size_t len)
{
	return gmem_map_at(fd, 0, len, PROT_READ | PROT_WRITE);
}

/* kvm.ko's in-place conversion switch (src/virt/0022): only our modules have it. */
#define GMEM_IN_PLACE_PARAM	"/sys/module/kvm/parameters/gmem_in_place_conversion"

/* Write @s to the sysfs file @path: false if it cannot be opened or written. */
static inline bool gmem_write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	bool ok;

	if (fd < 0)
		return false;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok;
}

/*
 * KVM_SET_MEMORY_ATTRIBUTES2 on guest_memfd @fd (provisional, src/virt/0022):
 * 0 or -errno; *@err_off, if given, gets error_offset.
 */
static inline int gmem_set_attrs(int fd, uint64_t off, uint64_t size, uint64_t attrs,
				 uint64_t *err_off)
{
	struct kvm_memory_attributes2 a = { .offset = off, .size = size, .attributes = attrs };
	int r = ioctl(fd, KVM_SET_MEMORY_ATTRIBUTES2, &a);

	if (err_off)
		*err_off = a.error_offset;
	return r ? -errno : 0;
}

/* A VM and one guest_memfd of it, mapped read-write if it has the MMAP flag. */
struct gfile {
	int vm, fd;
	volatile uint8_t *map;
	size_t size;
};

/*
 * A VM of @type (from /dev/kvm @kvm) and its guest_memfd of @size bytes with
 * @flags. Returns a KSFT_* code; @why says what failed. gfile_close() after,
 * whatever it returned.
 */
static inline int gfile_open(struct gfile *g, int kvm, unsigned long type,
			     unsigned long long flags, size_t size, char *why, size_t whylen)
{
	void *map;

	*g = (struct gfile){ .vm = -1, .fd = -1, .size = size };
	g->vm = ioctl(kvm, KVM_CREATE_VM, type);
	if (g->vm < 0) {
		snprintf(why, whylen, "KVM_CREATE_VM(%lu): %s", type, strerror(errno));
		return KSFT_FAIL;
	}
	g->fd = gmem_create(g->vm, size, flags);
	if (g->fd < 0) {
		snprintf(why, whylen, "KVM_CREATE_GUEST_MEMFD(%#llx): %s", flags, strerror(-g->fd));
		return KSFT_FAIL;
	}
	if (flags & GUEST_MEMFD_FLAG_MMAP) {
		map = gmem_map(g->fd, size);
		if (map == MAP_FAILED) {
			snprintf(why, whylen, "mmap: %s", strerror(errno));
			return KSFT_FAIL;
		}
		g->map = map;
	}
	return KSFT_PASS;
}

static inline void gfile_close(struct gfile *g)
{
	if (g->map)
		munmap((void *)g->map, g->size);
	if (g->fd >= 0)
		close(g->fd);
	if (g->vm >= 0)
		close(g->vm);
}

/*
 * The SIGBUS probe: gmem_sigbus() touches one byte with the handler armed
 * and says whether that raised SIGBUS; gmem_read_byte() returns the byte or
 * -1. The handler records where and why (si_addr, si_code) in this thread's
 * gmem_sigbus_addr and gmem_sigbus_code. Per thread, so threads may probe
 * at once. A SIGBUS while not armed is not expected: the handler restores the
 * default action and returns, so the access is retried and the process dies
 * of it, which fails the test. Code with its own jump (a SIGBUS inside a
 * syscall) may set gmem_sigbus_armed itself after sigsetjmp(gmem_sigbus_jmp).
 */
static __thread sigjmp_buf gmem_sigbus_jmp;
static __thread volatile sig_atomic_t gmem_sigbus_armed __attribute__((unused));
static __thread void *volatile gmem_sigbus_addr __attribute__((unused));
static __thread volatile int gmem_sigbus_code __attribute__((unused));

static inline void gmem_on_sigbus(int sig, siginfo_t *info, void *ctx)
{
	(void)sig;
	(void)ctx;
	gmem_sigbus_addr = info->si_addr;
	gmem_sigbus_code = info->si_code;
	if (gmem_sigbus_armed) {
		gmem_sigbus_armed = 0;
		siglongjmp(gmem_sigbus_jmp, 1);
	}
	signal(SIGBUS, SIG_DFL);
}

/* Install the probe's handler (each probe does; for code with its own jump). */
static inline void gmem_sigbus_setup(void)
{
	struct sigaction sa = { .sa_sigaction = gmem_on_sigbus, .sa_flags = SA_SIGINFO };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}

/* Read one byte at @p, or write 0x5a there if @write: true if that SIGBUSed. */
static inline bool gmem_sigbus(volatile void *p, bool write)
{
	volatile uint8_t *b = p;

	gmem_sigbus_setup();
	gmem_sigbus_addr = NULL;
	gmem_sigbus_code = 0;
	if (sigsetjmp(gmem_sigbus_jmp, 1))
		return true;
	gmem_sigbus_armed = 1;
	if (write)
		*b = 0x5a;
	else
		(void)*b;
	gmem_sigbus_armed = 0;
	return false;
}

/*
 * MADV_HWPOISON on the page at @p (root only): 0 when it got poisoned
 * (memory_failure() may tell the caller, which maps the page, with SIGBUS
 * BUS_MCEERR_AR or _AO), else -errno (EBUSY or EHWPOISON where mm could not
 * split or isolate its folio), or -EFAULT for another SIGBUS.
 */
static inline int gmem_poison_page(volatile uint8_t *p)
{
	int r;

	gmem_sigbus_setup();
	if (sigsetjmp(gmem_sigbus_jmp, 1))
		return gmem_sigbus_code == BUS_MCEERR_AR || gmem_sigbus_code == BUS_MCEERR_AO ?
		       0 : -EFAULT;
	gmem_sigbus_armed = 1;
	r = madvise((void *)p, getpagesize(), MADV_HWPOISON) ? -errno : 0;
	gmem_sigbus_armed = 0;
	return r;
}

/* The byte at @p, or -1 if reading it raised SIGBUS. */
static inline int gmem_read_byte(volatile void *p)
{
	volatile uint8_t *b = p;
	volatile int v = -1;

	gmem_sigbus_setup();
	gmem_sigbus_addr = NULL;
	gmem_sigbus_code = 0;
	if (sigsetjmp(gmem_sigbus_jmp, 1))
		return -1;
	gmem_sigbus_armed = 1;
	v = *b;
	gmem_sigbus_armed = 0;
	return v;
}

/*
 * Byte patterns over file offsets: gmem_pat(off, seed) differs per byte and
 * per page, so a page mapped at the wrong offset shows. gmem_fill() writes
 * offsets [from, to) of a mapping of the file at @mem; gmem_check() and
 * gmem_check_zero() return the first offset in [from, to) that differs, or -1.
 */
static inline uint8_t gmem_pat(size_t off, uint8_t seed)
{
	return (uint8_t)(seed + off + (off / 4096) * 13);
}

static inline void gmem_fill(volatile uint8_t *mem, size_t from, size_t to, uint8_t seed)
{
	for (size_t off = from; off < to; off++)
		mem[off] = gmem_pat(off, seed);
}

static inline long gmem_check(const volatile uint8_t *mem, size_t from, size_t to, uint8_t seed)
{
	for (size_t off = from; off < to; off++)
		if (mem[off] != gmem_pat(off, seed))
			return (long)off;
	return -1;
}

static inline long gmem_check_zero(const volatile uint8_t *mem, size_t from, size_t to)
{
	for (size_t off = from; off < to; off++)
		if (mem[off])
			return (long)off;
	return -1;
}

/*
 * Word patterns: @len bytes at @p all hold the 64-bit @v (a page stamped
 * with who wrote it and when). gmem_check64() returns the first word that
 * differs from @want, or @want.
 */
static inline void gmem_fill64(volatile void *p, size_t len, uint64_t v)
{
	for (size_t i = 0; i < len / sizeof(v); i++)
		((volatile uint64_t *)p)[i] = v;
}

static inline uint64_t gmem_check64(const volatile void *p, size_t len, uint64_t want)
{
	for (size_t i = 0; i < len / sizeof(want); i++) {
		uint64_t v = ((const volatile uint64_t *)p)[i];

		if (v != want)
			return v;
	}
	return want;
}

/* debugfs kvm/fail_gmem_ndm_zap: taking a page out of the direct map fails. */
#define GMEM_FAIL_NDM_ZAP	GMEM_DEBUGFS "/kvm/fail_gmem_ndm_zap"

/*
 * Arm the fault-injection attribute @attr (a debugfs directory) to make the
 * next call fail, once. Write "0" to @attr/probability after the call.
 */
static inline bool gmem_fail_next_once(const char *attr)
{
	static const char *const settings[][2] = {
		{ "verbose", "0" }, { "interval", "1" }, { "probability", "100" }, { "times", "1" },
	};
	char path[256];

	for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", attr, settings[i][0]);
		if (!gmem_write_file(path, settings[i][1]))
			return false;
	}
	return true;
}

/* The number of memory nodes (a guest booted with NUMA=2 has two). */
static inline int read_online_nodes(void)
{
	char buf[64] = "";
	int fd = open("/sys/devices/system/node/online", O_RDONLY), a, b;

	if (fd < 0)
		return 1;
	if (read(fd, buf, sizeof(buf) - 1) < 0)
		buf[0] = 0;
	close(fd);
	/* "0" or "0-N": our guests' nodes are numbered from 0 without gaps. */
	if (sscanf(buf, "%d-%d", &a, &b) == 2 && a == 0)
		return b + 1;
	return 1;
}

/* The first CPU of @node, -1 if it has none. */
static inline int first_cpu_of(int node)
{
	char path[64], buf[64] = "";
	int fd, cpu;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", node);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	if (read(fd, buf, sizeof(buf) - 1) < 0)
		buf[0] = 0;
	close(fd);
	return sscanf(buf, "%d", &cpu) == 1 ? cpu : -1;
}

/*
 * Run the calling thread on @cpu only. A test that pins does so because
 * where it runs is what it checks (a NUMA node, the CPU whose per-CPU state
 * it needs): unpinned it could pass by luck, so failing to pin ends it.
 */
static inline void pin_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		ksft_exit_fail_msg("pinning to CPU %d: %s\n", cpu, strerror(errno));
}

/*
 * Does the running kernel export @sym to modules? Its __ksymtab_ entry in
 * /proc/kallsyms (as root) says so; -1 if kallsyms cannot be read.
 */
static inline int gmem_kernel_exports(const char *sym)
{
	char line[256], want[128];
	int found = 0;
	FILE *f;

	snprintf(want, sizeof(want), " __ksymtab_%s\n", sym);
	f = fopen("/proc/kallsyms", "r");
	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, want) != NULL;
	fclose(f);
	return found;
}

/*
 * Does the running kernel have the mm-shim hook? It exports
 * guestmem_register_free_ops (/proc/kallsyms, as root); the shim kernel is
 * also named for it (CONFIG_LOCALVERSION="-kvm-gmem-shim"), so a kernel
 * built without kallsyms cannot hide it.
 */
static inline bool gmem_has_mm_hook(void)
{
	char line[256];
	struct utsname u;
	bool found = false;
	FILE *f;

	if (!uname(&u) && strstr(u.release, "-kvm-gmem-shim"))
		return true;
	f = fopen("/proc/kallsyms", "r");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, " guestmem_register_free_ops") != NULL;
	fclose(f);
	return found;
}

#define GMEM_CGROUP	"/sys/fs/cgroup"

/* The @key line of memory cgroup @cg's memory.stat, in bytes, or -1. */
static inline long gmem_cgroup_stat(const char *cg, const char *key)
{
	char path[128], line[128], name[64];
	long v = -1, val;
	FILE *f;

	snprintf(path, sizeof(path), "%s/memory.stat", cg);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (v < 0 && fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %ld", name, &val) == 2 && !strcmp(name, key))
			v = val;
	fclose(f);
	return v;
}

/* Move this process to cgroup @cg. */
static inline bool gmem_cgroup_enter(const char *cg)
{
	char path[128], pid[16];

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	snprintf(pid, sizeof(pid), "%d", getpid());
	return gmem_write_file(path, pid);
}

/*
 * Make @cg, a memory cgroup under the root (cgroup2 mounted if it is not),
 * and move this process into it; false (errno set) if that cannot be done.
 */
static inline bool gmem_cgroup_enter_new(const char *cg)
{
	if (access(GMEM_CGROUP "/cgroup.controllers", F_OK))
		mount("cgroup2", GMEM_CGROUP, "cgroup2", 0, NULL);
	return gmem_write_file(GMEM_CGROUP "/cgroup.subtree_control", "+memory") &&
	       (!mkdir(cg, 0755) || errno == EEXIST) && gmem_cgroup_enter(cg);
}

/* Back to the root cgroup, and @cg removed (once nothing is charged to it). */
static inline void gmem_cgroup_leave(const char *cg)
{
	gmem_cgroup_enter(GMEM_CGROUP);
	rmdir(cg);
}

/* Seconds on CLOCK_MONOTONIC. */
static inline double gmem_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A /proc/vmstat counter's value, or -1 if the kernel has no such line. */
static inline long gmem_vmstat(const char *name)
{
	size_t n = strlen(name);
	FILE *f = fopen("/proc/vmstat", "r");
	char line[128];
	long v = -1;

	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, name, n) && line[n] == ' ') {
			v = atol(line + n + 1);
			break;
		}
	}
	if (f)
		fclose(f);
	return v;
}

#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

/*
 * How many pages of [@off, @off + @len) of @fd are in its page cache, up to
 * date or not (cachestat(), Linux 6.5; both test kernels have it), or -1
 * if that cannot be told: a caller's "not allocated" check must then fail.
 * mincore() would not do: it only counts pages that are up to date, and a
 * folio left by a refused fault never is.
 */
static inline long gmem_cached_pages(int fd, long off, long len)
{
	struct {
		uint64_t off, len;
	} range = { off, len };
	struct {
		uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
	} cs;

	if (syscall(__NR_cachestat, fd, &range, &cs, 0))
		return -1;
	return cs.nr_cache;
}

/* A debugfs counter's value, or -1 if it cannot be read. Mounts debugfs. */
static inline long gmem_counter(const char *path)
{
	char buf[32] = "";
	ssize_t n = -1;
	int fd;

	if (access(GMEM_DEBUGFS "/kvm", F_OK))
		mount("debugfs", GMEM_DEBUGFS, "debugfs", 0, NULL);
	fd = open(path, O_RDONLY);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	return n > 0 ? strtol(buf, NULL, 10) : -1;
}

/*
 * How many vmap() areas kvm.ko holds now (/proc/vmallocinfo: the caller in
 * [kvm], "vmap"): KVM's kernel aliases of NO_DIRECT_MAP pages. -1 if the
 * file cannot be read.
 */
static inline long gmem_kvm_vmap_aliases(void)
{
	FILE *f = fopen("/proc/vmallocinfo", "r");
	char line[512];
	long n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "[kvm]") && strstr(line, " vmap");
	fclose(f);
	return n;
}

/* A /proc/meminfo value of this kernel in KiB, -1 if absent. */
static inline long gmem_meminfo_kib(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	size_t n = strlen(key);
	long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, n) && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

/*
 * The last reference may sit in a per-CPU LRU batch for a moment after the
 * file is gone: wait (bounded, 2 s) for @path to reach @target, then a little
 * longer, so that an overshoot shows too.
 */
static inline long gmem_settle_counter(const char *path, long target)
{
	for (int i = 0; i < 200 && gmem_counter(path) < target; i++)
		usleep(10000);
	usleep(100000);
	return gmem_counter(path);
}

/*
 * Unload module @name (delete_module), retrying a little: a VM's teardown
 * may finish just after its last fd is closed. 0 or -errno.
 */
static inline int gmem_unload_module(const char *name)
{
	for (int i = 0; i < 50; i++) {
		if (!syscall(SYS_delete_module, name, O_NONBLOCK))
			return 0;
		if (errno != EBUSY && errno != EAGAIN)
			return -errno;
		usleep(20000);
	}
	return -EBUSY;
}

/*
 * Load module @name: ours from /share/modules/@file when the guest harness
 * put it there, else Debian's by modprobe. 0 or -errno.
 */
static inline int gmem_load_module(const char *name, const char *file)
{
	char path[128], cmd[128];
	int fd, r;

	snprintf(path, sizeof(path), "/share/modules/%s", file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		/*
		 * Debian's modules, through modprobe: its message carries the
		 * init error ("could not insert 'kvm_amd': Device or resource
		 * busy"), which the caller may need.
		 */
		char out[512] = "";
		size_t n = 0;
		FILE *p;

		snprintf(cmd, sizeof(cmd), "modprobe %s 2>&1", name);
		p = popen(cmd, "r");
		if (!p)
			return -errno;
		while (n < sizeof(out) - 1 && fgets(out + n, sizeof(out) - n, p))
			n = strlen(out);
		if (!pclose(p))
			return 0;
		for (int e = 1; e < 134; e++)
			if (strstr(out, strerror(e)))
				return -e;
		return -EIO;
	}
	r = syscall(SYS_finit_module, fd, "", 0) ? -errno : 0;
	close(fd);
	return r;
}

#endif /* GMEM_TEST_H */
