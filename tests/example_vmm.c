// SPDX-License-Identifier: GPL-2.0
/*
 * example_vmm: the smallest VMM that runs a guest out of host-mapped
 * guest_memfd, written against mainline's ABI (Linux 6.18+), which our
 * modules follow by default. Copy it to start your own test.
 *
 *   1. open /dev/kvm, check that KVM_CAP_GUEST_MEMFD_FLAGS offers
 *      GUEST_MEMFD_FLAG_MMAP and GUEST_MEMFD_FLAG_INIT_SHARED
 *   2. create a default VM and a guest_memfd for it with those two flags:
 *      mappable, and all its memory shared with the host
 *   3. mmap() the guest_memfd and bind it as a memslot at GPA 0, with the
 *      mapping as userspace_addr (mainline's selftests do so; KVM faults
 *      the guest's memory from the guest_memfd): host and guest then share
 *      the pages
 *   4. write a real-mode program through the mapping, run one vCPU
 *   5. the guest adds 1 to a number the host left for it and exits with an
 *      OUT; the host reads the result through the same mapping
 *
 * Exit status: 0 success, 4 (kselftest skip) when the kernel lacks support,
 * 1 on failure. Prints a one-line TAP result.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <linux/kvm.h>

#define MEM_SIZE	0x10000		/* 64 KiB of guest memory at GPA 0 */
#define CODE_GPA	0x1000
#define DATA_GPA	0x3000		/* in: u16 at +0, out: u16 at +2 */
#define EXIT_PORT	0x10

/* 16-bit real mode; assembled by hand, checked with objdump -mi8086. */
static const uint8_t guest_code[] = {
	0xa1, 0x00, 0x30,	/* mov 0x3000, %ax   the host's number */
	0x40,			/* inc %ax                             */
	0xa3, 0x02, 0x30,	/* mov %ax, 0x3002   our answer        */
	0xe6, 0x10,		/* out %al, $0x10    tell the host     */
	0xeb, 0xfe,		/* jmp .             (never resumed)   */
};

static int skip(const char *why)
{
	printf("1..1\nok 1 example_vmm # SKIP %s\n", why);
	return 4;
}

static int fail(const char *what)
{
	printf("1..1\nnot ok 1 example_vmm # %s: %s\n", what, strerror(errno));
	return 1;
}

int main(void)
{
	struct kvm_create_guest_memfd gmem_args = {
		.size = MEM_SIZE,
		.flags = GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED,
	};
	struct kvm_userspace_memory_region2 region;
	int kvm, vm, gmem, vcpu, run_size;
	struct kvm_sregs sregs;
	struct kvm_regs regs;
	struct kvm_run *run;
	uint8_t *mem;
	uint16_t answer;

	printf("TAP version 13\n");

	/* 1. Is it supported? The flags are 0 on a stock kernel. */
	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		return skip("no /dev/kvm");
	if ((ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_GUEST_MEMFD_FLAGS) & gmem_args.flags) !=
	    gmem_args.flags)
		return skip("no GUEST_MEMFD_FLAG_MMAP | INIT_SHARED in KVM_CAP_GUEST_MEMFD_FLAGS");

	/* 2. A default VM (KVM_CREATE_VM's argument is its type) and its guest_memfd. */
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0)
		return fail("KVM_CREATE_VM");
	gmem = ioctl(vm, KVM_CREATE_GUEST_MEMFD, &gmem_args);
	if (gmem < 0)
		return fail("KVM_CREATE_GUEST_MEMFD");

	/* 3. Map it (MAP_SHARED only) and hand the same memory to the guest. */
	mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, gmem, 0);
	if (mem == MAP_FAILED)
		return fail("mmap guest_memfd");
	region = (struct kvm_userspace_memory_region2){
		.slot = 0,
		.flags = KVM_MEM_GUEST_MEMFD,
		.guest_phys_addr = 0,
		.memory_size = MEM_SIZE,
		.userspace_addr = (uintptr_t)mem,	/* the guest_memfd mapping */
		.guest_memfd = gmem,
		.guest_memfd_offset = 0,
	};
	if (ioctl(vm, KVM_SET_USER_MEMORY_REGION2, &region))
		return fail("KVM_SET_USER_MEMORY_REGION2");

	/* 4. Code and input go in through the mapping: no copy, no ioctl. */
	memcpy(mem + CODE_GPA, guest_code, sizeof(guest_code));
	mem[DATA_GPA] = 0x34;
	mem[DATA_GPA + 1] = 0x12;			/* 0x1234 */

	vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
	if (vcpu < 0)
		return fail("KVM_CREATE_VCPU");
	run_size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	run = mmap(NULL, run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
	if (run == MAP_FAILED)
		return fail("mmap kvm_run");

	/* Real mode with CS base 0, so RIP is the GPA of the code. */
	if (ioctl(vcpu, KVM_GET_SREGS, &sregs))
		return fail("KVM_GET_SREGS");
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	if (ioctl(vcpu, KVM_SET_SREGS, &sregs))
		return fail("KVM_SET_SREGS");
	memset(&regs, 0, sizeof(regs));
	regs.rip = CODE_GPA;
	regs.rflags = 0x2;			/* bit 1 is always set */
	if (ioctl(vcpu, KVM_SET_REGS, &regs))
		return fail("KVM_SET_REGS");

	/* Guard against a guest that never exits. */
	alarm(60);
	if (ioctl(vcpu, KVM_RUN, 0))
		return fail("KVM_RUN");
	if (run->exit_reason != KVM_EXIT_IO || run->io.port != EXIT_PORT) {
		printf("1..1\nnot ok 1 example_vmm # exit reason %u, port %#x\n",
		       run->exit_reason, run->exit_reason == KVM_EXIT_IO ? run->io.port : 0);
		return 1;
	}

	/* 5. The guest's answer, read straight from the shared pages. */
	answer = mem[DATA_GPA + 2] | mem[DATA_GPA + 3] << 8;
	if (answer != 0x1235) {
		printf("1..1\nnot ok 1 example_vmm # guest wrote %#x, want 0x1235\n", answer);
		return 1;
	}
	printf("1..1\nok 1 example_vmm # guest answered %#x through guest_memfd\n", answer);

	/* Closing the fds (or exiting) tears everything down. */
	munmap(run, run_size);
	munmap(mem, MEM_SIZE);
	close(vcpu);
	close(gmem);
	close(vm);
	close(kvm);
	return 0;
}
