// SPDX-License-Identifier: GPL-2.0
/*
 * The mm-shim hook: private guest_memfd folios carry the guestmem type and
 * kvm.ko sees the final folio_put() of each one. Reads the counters kvm.ko
 * keeps in debugfs (kvm/gmem_guestmem_folios, kvm/gmem_guestmem_frees):
 * allocating N private pages must type exactly N folios, and freeing them
 * must run the hook exactly N times, for each file on its own; the folios
 * of a shared (mappable) guest_memfd are never typed, and touching private
 * memory from the host allocates (types) nothing. Skips (exit 4) only on
 * kernels without the hook; on a kernel that has it (it exports
 * guestmem_register_free_ops), missing counters are a failure: kvm.ko was
 * built without the hook.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <linux/falloc.h>
#include <linux/kvm.h>

#include "kselftest.h"
#include "gmem_test.h"

#define TYPED	GMEM_TYPED
#define FREED	GMEM_FREED

static int checked_gmem(int vm, long size, unsigned long long flags)
{
	int fd = gmem_create(vm, size, flags);

	if (fd < 0)
		ksft_exit_fail_msg("KVM_CREATE_GUEST_MEMFD(flags %#llx): %s\n", flags, strerror(-fd));
	return fd;
}

int main(void)
{
	const long page = getpagesize(), npages = 16, nhole = 4, nother = 8, nctl = 4;
	long typed0, freed0, typed, freed;
	int kvm, vm, fd, fd2, ctl;
	long sigbuses;
	char *mem;

	/* One CPU: the LRU batch that holds new folios is drained by our frees. */
	pin_cpu(0);

	if (gmem_counter(TYPED) < 0) {
		if (gmem_has_mm_hook())
			ksft_exit_fail_msg("the kernel has the mm-shim hook, but kvm.ko keeps no %s: built without it?\n",
					   TYPED);
		ksft_exit_skip("no %s: kernel without the mm-shim guestmem hook\n", TYPED);
	}

	ksft_print_header();
	ksft_set_plan(7);

	kvm = open("/dev/kvm", O_RDWR);
	if (kvm < 0)
		ksft_exit_fail_msg("/dev/kvm: %s\n", strerror(errno));
	/* A default VM's guest_memfd is private: its folios get the type. */
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0)
		ksft_exit_fail_msg("KVM_CREATE_VM: %s\n", strerror(errno));
	fd = checked_gmem(vm, npages * page, 0);

	typed0 = gmem_counter(TYPED);
	freed0 = gmem_counter(FREED);
	if (fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, npages * page))
		ksft_exit_fail_msg("fallocate: %s\n", strerror(errno));
	typed = gmem_counter(TYPED) - typed0;
	ksft_test_result(typed == npages, "allocating %ld private pages typed %ld folios\n",
			 npages, typed);

	if (fallocate(fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, 0, nhole * page))
		ksft_exit_fail_msg("punch hole: %s\n", strerror(errno));
	freed = gmem_settle_counter(FREED, freed0 + nhole) - freed0;
	ksft_test_result(freed == nhole, "punching %ld pages ran the free hook %ld times\n",
			 nhole, freed);

	/* A second private file: each file's folios are counted on their own. */
	fd2 = checked_gmem(vm, nother * page, 0);
	typed0 = gmem_counter(TYPED);
	if (fallocate(fd2, FALLOC_FL_KEEP_SIZE, 0, nother * page))
		ksft_exit_fail_msg("fallocate: %s\n", strerror(errno));
	close(fd2);
	freed = gmem_settle_counter(FREED, freed0 + nhole + nother) - freed0 - nhole;
	typed = gmem_counter(TYPED) - typed0;
	ksft_test_result(typed == nother && freed == nother,
			 "a second file: %ld folios typed, %ld freed on close (want %ld, %ld)\n",
			 typed, freed, nother, nother);

	close(fd);
	/* Nothing else in the guest uses guest_memfd: the count is exact. */
	freed = gmem_settle_counter(FREED, freed0 + npages + nother) - freed0 - nother;
	ksft_test_result(freed == npages, "closing the first file ran the free hook %ld times in all (want %ld)\n",
			 freed, npages);

	/*
	 * Shared folios are never typed: mainline's MMAP | INIT_SHARED file,
	 * touched through its mapping, then freed. KVM_CAP_GUEST_MEMFD_FLAGS is
	 * ours (this test only runs with our modules' counters present).
	 */
	typed0 = gmem_counter(TYPED);
	freed0 = gmem_counter(FREED);
	fd = checked_gmem(vm, npages * page, GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED);
	mem = gmem_map(fd, npages * page);
	if (mem == MAP_FAILED)
		ksft_exit_fail_msg("mmap of a shared guest_memfd: %s\n", strerror(errno));
	for (long i = 0; i < npages; i++)
		mem[i * page] = 1;
	typed = gmem_counter(TYPED) - typed0;
	ksft_test_result(typed == 0, "faulting %ld shared pages typed %ld folios (want 0)\n",
			 npages, typed);
	/*
	 * A private control file, freed right after the shared one: once the
	 * hook has run for each of its folios, the shared folios freed before
	 * them are gone too, so "no hook call for the shared ones" is not
	 * just "not freed yet".
	 */
	ctl = checked_gmem(vm, nctl * page, 0);
	if (fallocate(ctl, FALLOC_FL_KEEP_SIZE, 0, nctl * page))
		ksft_exit_fail_msg("fallocate: %s\n", strerror(errno));
	munmap(mem, npages * page);
	close(fd);
	close(ctl);
	freed = gmem_settle_counter(FREED, freed0 + nctl) - freed0;
	ksft_print_msg("the shared file and a %ld-page private control file freed: hook ran %ld times\n",
		       nctl, freed);
	ksft_test_result(freed == nctl, "freeing %ld shared folios ran the free hook %ld times (want 0)\n",
			 npages, freed - nctl);

	/*
	 * Touching private memory from the host SIGBUSes and allocates
	 * nothing: no folio gets typed (mainline's MMAP-only file).
	 */
	typed0 = gmem_counter(TYPED);
	fd = checked_gmem(vm, npages * page, GUEST_MEMFD_FLAG_MMAP);
	mem = gmem_map(fd, npages * page);
	if (mem == MAP_FAILED)
		ksft_exit_fail_msg("mmap of a private guest_memfd: %s\n", strerror(errno));
	sigbuses = 0;
	for (long i = 0; i < npages; i++)
		sigbuses += gmem_sigbus(mem + i * page, true);
	typed = gmem_counter(TYPED) - typed0;
	ksft_test_result(sigbuses == npages && typed == 0,
			 "touching %ld private pages: %ld SIGBUS, %ld folios allocated (want %ld, 0)\n",
			 npages, sigbuses, typed, npages);
	munmap(mem, npages * page);
	close(fd);

	close(vm);
	close(kvm);
	ksft_finished();
}
