// SPDX-License-Identifier: GPL-2.0
/*
 * gmem_lifetime_test: kvm-amd and kvm cannot be unloaded while a guest_memfd
 * or a mapping of it is alive, and can be once both are gone. On kernels with
 * the mm-shim hook, private folios whose last reference drops after kvm.ko
 * is gone are freed by mm without it: mm's own count of such frees
 * (debugfs guestmem_unhandled_frees, which outlives kvm.ko) must grow by
 * exactly their number, read after the unload (and the guest's dmesg must
 * stay clean). On a kernel with the hook, missing counters fail the test.
 *
 * Unloads and reloads the modules: run it last. Our modules are reloaded from
 * /share/modules/ (the guest harness puts them there), Debian's by modprobe.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/falloc.h>
#include <linux/kvm.h>

#include "kselftest.h"
#include "gmem_test.h"

#define TYPED		GMEM_TYPED
#define FREED		GMEM_FREED
#define UNHANDLED	GMEM_UNHANDLED

static long page;

/* kvm, then kvm_amd: ours from /share/modules, else Debian's. */
static bool reload(void)
{
	return !gmem_load_module("kvm", "kvm.ko") && !gmem_load_module("kvm_amd", "kvm-amd.ko");
}

struct vm {
	int kvm, vm, gmem;
};

/* A VM with one guest_memfd of @npages; @flags as for KVM_CREATE_GUEST_MEMFD. */
static bool vm_open(struct vm *v, unsigned long type, unsigned long long flags, long npages)
{
	v->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (v->kvm < 0)
		return false;
	v->vm = ioctl(v->kvm, KVM_CREATE_VM, type);
	v->gmem = v->vm < 0 ? -1 : gmem_create(v->vm, npages * page, flags);
	if (v->gmem < 0 && v->vm >= 0)
		errno = -v->gmem;
	return v->gmem >= 0;
}

/* Close everything but the guest_memfd. */
static void vm_close_all_but_gmem(struct vm *v)
{
	close(v->vm);
	close(v->kvm);
}

static void test_gmem_fd_pins_modules(void)
{
	struct vm v;
	int busy_amd, busy_kvm, r_amd, r_kvm;

	if (!vm_open(&v, 0, 0, 4))
		ksft_exit_fail_msg("VM with guest_memfd: %s\n", strerror(errno));
	vm_close_all_but_gmem(&v);
	busy_amd = gmem_unload_module("kvm_amd");
	busy_kvm = gmem_unload_module("kvm");
	ksft_test_result(busy_amd == -EBUSY && busy_kvm == -EBUSY,
			 "an open guest_memfd keeps kvm_amd and kvm loaded (%s, %s)\n",
			 strerror(-busy_amd), strerror(-busy_kvm));
	close(v.gmem);
	r_amd = gmem_unload_module("kvm_amd");
	r_kvm = gmem_unload_module("kvm");
	ksft_test_result(!r_amd && !r_kvm, "unload succeeds once the guest_memfd is closed (%s, %s)\n",
			 strerror(-r_amd), strerror(-r_kvm));
	ksft_test_result(reload(), "modules reload\n");
}

static void test_mapping_pins_modules(void)
{
	unsigned long long flags = GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED;
	int busy, r_amd, r_kvm;
	struct vm v;
	char *mem;

	if (!vm_open(&v, 0, flags, 4)) {
		if (gmem_ours())
			ksft_exit_fail_msg("no mappable guest_memfd with our modules loaded: %s\n",
					   strerror(errno));
		ksft_test_result_skip("a mapping keeps kvm_amd loaded: no mappable guest_memfd\n");
		ksft_test_result_skip("unload after munmap: no mappable guest_memfd\n");
		ksft_test_result_skip("modules reload: no mappable guest_memfd\n");
		return;
	}
	mem = gmem_map(v.gmem, 4 * page);
	if (mem == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	mem[0] = 1;
	vm_close_all_but_gmem(&v);
	close(v.gmem);
	busy = gmem_unload_module("kvm_amd");
	ksft_test_result(busy == -EBUSY && mem[0] == 1,
			 "a mapping alone keeps kvm_amd loaded and stays usable (%s)\n",
			 strerror(-busy));
	munmap(mem, 4 * page);
	r_amd = gmem_unload_module("kvm_amd");
	r_kvm = gmem_unload_module("kvm");
	ksft_test_result(!r_amd && !r_kvm, "unload succeeds after munmap (%s, %s)\n",
			 strerror(-r_amd), strerror(-r_kvm));
	ksft_test_result(reload(), "modules reload\n");
}

/*
 * New page-cache folios sit in a per-CPU LRU batch, which holds a reference,
 * until that CPU drains it. Allocate private folios on CPU 1, drop the file
 * and the modules on CPU 0, then make CPU 1 drain: the last references drop
 * with kvm.ko gone.
 */
static void test_final_put_after_unload(void)
{
	const long npages = 4;
	long typed0, freed0, typed, freed, unhandled0, unhandled = -1;
	bool late;
	struct vm v;
	int r;

	if (!gmem_has_mm_hook() || sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		ksft_test_result_skip("final put after unload: no mm-shim hook or one CPU\n");
		ksft_test_result_skip("final put after unload: no mm-shim hook or one CPU\n");
		ksft_test_result_skip("modules reload: no mm-shim hook or one CPU\n");
		return;
	}
	if (gmem_counter(TYPED) < 0 || gmem_counter(UNHANDLED) < 0)
		ksft_exit_fail_msg("the kernel has the mm-shim hook, but %s or %s is missing\n",
				   TYPED, UNHANDLED);
	unhandled0 = gmem_counter(UNHANDLED);
	typed0 = gmem_counter(TYPED);
	freed0 = gmem_counter(FREED);
	pin_cpu(1);
	if (!vm_open(&v, 0, 0, npages) ||
	    fallocate(v.gmem, FALLOC_FL_KEEP_SIZE, 0, npages * page))
		ksft_exit_fail_msg("private guest_memfd: %s\n", strerror(errno));
	pin_cpu(0);
	vm_close_all_but_gmem(&v);
	close(v.gmem);
	typed = gmem_counter(TYPED) - typed0;
	freed = gmem_counter(FREED) - freed0;
	late = typed == npages && freed < typed;
	r = gmem_unload_module("kvm_amd");
	r = r ?: gmem_unload_module("kvm");
	if (r)
		ksft_exit_fail_msg("unload: %s\n", strerror(-r));

	/* Fill CPU 1's LRU batch with anonymous pages so that it drains. */
	pin_cpu(1);
	{
		size_t len = 256 * page;
		char *anon = mmap(NULL, len, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		for (size_t off = 0; anon != MAP_FAILED && off < len; off += page)
			anon[off] = 1;
		if (anon != MAP_FAILED)
			munmap(anon, len);
	}
	pin_cpu(0);

	/* mm's count, read with kvm.ko gone: each late folio freed once. */
	for (int i = 0; i < 100; i++) {
		unhandled = gmem_counter(UNHANDLED) - unhandled0;
		if (unhandled >= typed - freed)
			break;
		usleep(10000);
	}
	ksft_test_result(late, "%ld of %ld private folios were still referenced when kvm.ko was unloaded\n",
			 typed - freed, typed);
	ksft_test_result(late && unhandled == typed - freed,
			 "mm freed %ld of them after the unload (want %ld)\n", unhandled, typed - freed);
	ksft_test_result(reload(), "modules reload\n");
}

int main(void)
{
	page = getpagesize();
	if (geteuid())
		ksft_exit_skip("needs root to unload modules\n");
	if (access("/sys/module/kvm_amd", F_OK))
		ksft_exit_skip("kvm_amd is not loaded\n");

	ksft_print_header();
	ksft_set_plan(9);
	test_gmem_fd_pins_modules();
	test_mapping_pins_modules();
	test_final_put_after_unload();
	ksft_finished();
}
