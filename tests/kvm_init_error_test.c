// SPDX-License-Identifier: GPL-2.0
/*
 * kvm_init_error_test: a vendor module whose kvm_init() fails must leave
 * nothing of kvm.ko behind in debugfs (src/virt/0018). Case 1 proves
 * kvm_init() failed where the others need it to: enabling virtualization.
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
#include <sys/klog.h>
#include <sys/mount.h>
#include <sys/syscall.h>

#include "kselftest.h"
#include "gmem_test.h"

#define KVM_DEBUGFS	"/sys/kernel/debug/kvm"
#define MSR_EFER	0xc0000080
#define EFER_SVME	(1ULL << 12)

/* What kvm_enable_virtualization_cpu() logs when the vendor refuses. */
#define ENABLE_FAILED	"kvm: enabling virtualization on CPU"

/* How many lines of the kernel log contain @what (klogctl: all it holds). */
static int kmsg_count(const char *what)
{
	int len = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0), n = 0;
	char *buf, *p;

	if (len <= 0 || !(buf = calloc(1, len + 1)))
		ksft_exit_fail_msg("kernel log: %s\n", strerror(errno));
	len = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, len);
	if (len < 0)
		ksft_exit_fail_msg("reading the kernel log: %s\n", strerror(errno));
	for (p = buf; (p = strstr(p, what)); p++)
		n++;
	free(buf);
	return n;
}

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
	int r_amd, r_kvm, r, enable_failed;

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

	enable_failed = kmsg_count(ENABLE_FAILED);
	if (!set_svme(ncpus, true))
		ksft_exit_fail_msg("setting EFER.SVME: %s\n", strerror(errno));
	r = gmem_load_module("kvm_amd", "kvm-amd.ko");
	if (!set_svme(ncpus, false))
		ksft_exit_fail_msg("clearing EFER.SVME: %s\n", strerror(errno));
	/*
	 * With SVME set, svm_enable_virtualization_cpu() refuses (EBUSY), and
	 * kvm_enable_virtualization_cpu() logs "enabling virtualization on
	 * CPU%d failed" and returns EIO: kvm_init() got as far as enabling
	 * virtualization, past creating the debugfs directory, and failed
	 * there. Any other error, or EIO without that line, would come from
	 * elsewhere and leave the path the next cases check untested.
	 */
	enable_failed = kmsg_count(ENABLE_FAILED) - enable_failed;
	ksft_test_result(r == -EIO && enable_failed > 0,
			 "kvm_amd fails to load in kvm_init(), enabling virtualization, while EFER.SVME is set\n");
	if (r != -EIO || enable_failed <= 0)
		ksft_print_msg("load: %s; \"%s\" logged %d times\n", r ? strerror(-r) : "it loaded",
			       ENABLE_FAILED, enable_failed);

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
