// SPDX-License-Identifier: GPL-2.0
/*
 * kvm_init_error_test: a vendor module whose kvm_init() fails must leave
 * nothing of kvm.ko behind in debugfs (src/virt/0019).
 *
 * With EFER.SVME set on the CPUs (through the msr driver, as if another
 * hypervisor owned SVM), kvm_amd's kvm_init() fails when it enables
 * virtualization. Afterwards /sys/kernel/debug/kvm must be gone, kvm.ko
 * must unload and leave no directory either (its files would point into the
 * freed module: this test never opens them), and both modules must load
 * again once EFER is back.
 *
 * Unloads and reloads the modules: run it at the end, before
 * gmem_lifetime_test. Our modules are reloaded from /share/modules/ (the
 * guest harness puts them there), Debian's by modprobe.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/syscall.h>

#include "kselftest.h"
#include "gmem_test.h"

#define KVM_DEBUGFS	"/sys/kernel/debug/kvm"
#define MSR_EFER	0xc0000080
#define EFER_SVME	(1ULL << 12)

/* Set or clear EFER.SVME on every CPU; false if an MSR access failed. */
static bool set_svme(long ncpus, bool on)
{
	for (long cpu = 0; cpu < ncpus; cpu++) {
		char dev[64];
		uint64_t efer;
		int fd;
		bool ok;

		snprintf(dev, sizeof(dev), "/dev/cpu/%ld/msr", cpu);
		fd = open(dev, O_RDWR);
		if (fd < 0)
			return false;
		ok = pread(fd, &efer, sizeof(efer), MSR_EFER) == sizeof(efer);
		efer = on ? efer | EFER_SVME : efer & ~EFER_SVME;
		ok = ok && pwrite(fd, &efer, sizeof(efer), MSR_EFER) == sizeof(efer);
		close(fd);
		if (!ok)
			return false;
	}
	return true;
}

int main(void)
{
	long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	int r_amd, r_kvm, r;

	if (geteuid())
		ksft_exit_skip("needs root to load modules\n");
	if (access("/sys/module/kvm_amd", F_OK))
		ksft_exit_skip("kvm_amd is not loaded (not an SVM guest)\n");
	if (access(KVM_DEBUGFS, F_OK))
		mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	/* allow_writes=on: EFER is no MSR the driver knows; no warning. */
	if (system("modprobe msr allow_writes=on 2>/dev/null") || access("/dev/cpu/0/msr", F_OK))
		ksft_exit_skip("no msr driver in this kernel (CONFIG_X86_MSR)\n");

	ksft_print_header();
	ksft_set_plan(5);

	r_amd = gmem_unload_module("kvm_amd");
	r_kvm = gmem_unload_module("kvm");
	if (r_amd || r_kvm)
		ksft_exit_fail_msg("unload: %s, %s\n", strerror(-r_amd), strerror(-r_kvm));
	r = gmem_load_module("kvm", "kvm.ko");
	if (r)
		ksft_exit_fail_msg("load kvm: %s\n", strerror(-r));

	if (!set_svme(ncpus, true))
		ksft_exit_fail_msg("setting EFER.SVME: %s\n", strerror(errno));
	r = gmem_load_module("kvm_amd", "kvm-amd.ko");
	if (!set_svme(ncpus, false))
		ksft_exit_fail_msg("clearing EFER.SVME: %s\n", strerror(errno));
	ksft_test_result(r != 0, "kvm_amd does not load while EFER.SVME is set (%s)\n",
			 r ? strerror(-r) : "it loaded");

	ksft_test_result(access(KVM_DEBUGFS, F_OK) && errno == ENOENT,
			 "no %s after the failed kvm_init()\n", KVM_DEBUGFS);
	r = gmem_unload_module("kvm");
	ksft_test_result(!r, "kvm unloads after it (%s)\n", strerror(-r));
	ksft_test_result(access(KVM_DEBUGFS, F_OK) && errno == ENOENT,
			 "no %s after rmmod kvm\n", KVM_DEBUGFS);

	r = gmem_load_module("kvm", "kvm.ko");
	r = r ?: gmem_load_module("kvm_amd", "kvm-amd.ko");
	ksft_test_result(!r && !access(KVM_DEBUGFS, F_OK) && !access("/dev/kvm", F_OK),
			 "kvm and kvm_amd load again, with %s and /dev/kvm\n", KVM_DEBUGFS);
	ksft_finished();
}
