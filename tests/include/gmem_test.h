/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by our guest_memfd tests (example_vmm.c stays
 * self-contained on purpose): capabilities, guest_memfd creation, CPU
 * pinning, the mm-shim hook and the debugfs counters that go with it.
 *
 * The SKIP-or-FAIL rule: a test may only SKIP what the kernel or the modules
 * under test cannot have. A missing capability of our modules is a SKIP,
 * which every tier's expected results (tests/expect/) turn into a failure
 * unless they name it; a feature the running kernel visibly has (e.g. the
 * mm-shim hook, gmem_has_mm_hook()) but our modules do not use is a FAIL.
 */
#ifndef GMEM_TEST_H
#define GMEM_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/kvm.h>

/* The v7 series' capability, in case the headers predate it. */
#ifndef KVM_CAP_GMEM_SHARED_MEM
#define KVM_CAP_GMEM_SHARED_MEM 239
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

/* KVM_CREATE_GUEST_MEMFD on @vm: the new fd, or -errno. */
static inline int gmem_create(int vm, long long size, unsigned long long flags)
{
	struct kvm_create_guest_memfd args = { .size = size, .flags = flags };
	int fd = ioctl(vm, KVM_CREATE_GUEST_MEMFD, &args);

	return fd < 0 ? -errno : fd;
}

static inline void pin_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* Does the running kernel have the mm-shim hook? (/proc/kallsyms, as root) */
static inline bool gmem_has_mm_hook(void)
{
	char line[256];
	FILE *f = fopen("/proc/kallsyms", "r");
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, " guestmem_register_free_ops") != NULL;
	fclose(f);
	return found;
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
		snprintf(cmd, sizeof(cmd), "modprobe %s 2>/dev/null", name);
		return system(cmd) ? -EIO : 0;
	}
	r = syscall(SYS_finit_module, fd, "", 0) ? -errno : 0;
	close(fd);
	return r;
}

#endif /* GMEM_TEST_H */
