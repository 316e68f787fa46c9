// SPDX-License-Identifier: GPL-2.0
/*
 * gmem_vcpu_test: a small VMM checking in-place sharing of guest_memfd
 * between the host and a running guest.
 *
 * A KVM_X86_SW_PROTECTED_VM gets one 64 KiB guest_memfd, mapped by the host
 * and bound at GPA 0 with KVM_SET_USER_MEMORY_REGION2 (KVM_MEM_GUEST_MEMFD,
 * userspace_addr = that same mapping). A tiny 16-bit real-mode guest, written
 * through the mapping, checks a page the host filled, writes its answer next
 * to its parameters and reports with an OUT to port 0x10. The host reads the
 * answer through the mapping: both sides must see the same pages.
 *
 * Cases:
 *   1. guest_reads_host_pattern: the guest sees what the host wrote, and
 *      notices (at the right offset) when one byte differs.
 *   2. punch_hole_seen_by_guest: after the host punches the page out, guest
 *      and host read zeroes; a new host pattern is what the guest sees next.
 *   3. default_vm_rejects_gmem_memslot: a default VM (type 0) cannot bind its
 *      (flags 0, not mappable) guest_memfd as a memslot: EINVAL, as on 6.12,
 *      where only VMs with private memory take KVM_MEM_GUEST_MEMFD. (Mainline
 *      6.18 lets a default VM bind a GUEST_MEMFD_FLAG_MMAP guest_memfd, a
 *      "gmem-only" memslot; never a non-mappable one.)
 *   4. default_vm_gmem_only_in_place: case 1 on mainline's ABI: a default VM,
 *      a GUEST_MEMFD_FLAG_MMAP | INIT_SHARED guest_memfd, a gmem-only memslot
 *      with userspace_addr 0.
 *   5. private_memory_hidden_from_host: a page the guest wrote in a private
 *      (MMAP-only) guest_memfd SIGBUSes through the host mapping.
 * Cases 1-2 SKIP without KVM_CAP_GMEM_SHARED_MEM or KVM_X86_SW_PROTECTED_VM,
 * 4-5 without the flags in KVM_CAP_GUEST_MEMFD_FLAGS, but only with modules
 * other than ours (the SKIP-or-FAIL rule, gmem_test.h): with ours, only the
 * v7 cases skip, and only while the mainline ABI is selected.
 *
 * Prints TAP. Each case has an alarm() and a bound on KVM_RUN exits, so a
 * guest that goes astray fails instead of hanging (nested SVM under TCG is
 * slow, not that slow).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include <linux/falloc.h>

#include "gmem_vcpu.h"
#include "gmem_x86_guest.h"

/*
 * A VM with its guest_memfd mapped and bound at GPA 0, the guest code in place
 * and one vCPU at CODE_GPA in real mode. Returns a KSFT_* code; @why says what
 * failed or why it skips. By default the v7 way: a SW_PROTECTED VM, its
 * guest_memfd (flags 0) shared in place, userspace_addr = the mapping.
 * default_vm: mainline's way instead, a default VM whose guest_memfd has
 * GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED, bound as a gmem-only
 * memslot with userspace_addr 0.
 * decoy: userspace_addr points at other memory (vm->other), filled with 0xa5
 * and without the guest code: a vCPU that faults from the hva instead of
 * guest_memfd runs garbage and cannot pass a round.
 */
static int vm_setup_decoy(struct vm *vm, bool default_vm, bool decoy, char *why, size_t whylen)
{
	uint64_t flags = 0;
	unsigned long type = default_vm ? 0 : KVM_X86_SW_PROTECTED_VM;
	struct kvm_userspace_memory_region2 region;
	int r;
	int types;

	*vm = (struct vm){ .kvm = -1, .vm = -1, .vcpu = -1, .gmem = -1 };

	vm->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (vm->kvm < 0) {
		snprintf(why, whylen, "cannot open /dev/kvm: %s", strerror(errno));
		return KSFT_SKIP;
	}
	if (default_vm) {
		flags = GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED;
		if (!gmem_has_flags(vm->kvm, flags)) {
			snprintf(why, whylen, "no GUEST_MEMFD_FLAG_MMAP | INIT_SHARED in KVM_CAP_GUEST_MEMFD_FLAGS");
			return gmem_skip_or_fail();
		}
	} else if (kvm_cap(vm->kvm, KVM_CAP_GMEM_SHARED_MEM) <= 0) {
		if (gmem_has_flags(vm->kvm, GUEST_MEMFD_FLAG_MMAP) && !gmem_ours_v7()) {
			snprintf(why, whylen, "the v7 ABI is off (kvm.gmem_mainline_abi=1): KVM_CAP_GMEM_SHARED_MEM is 0");
			return KSFT_SKIP;
		}
		snprintf(why, whylen, "KVM_CAP_GMEM_SHARED_MEM is 0: this KVM cannot mmap() guest_memfd");
		return gmem_skip_or_fail();
	}
	types = kvm_cap(vm->kvm, KVM_CAP_VM_TYPES);
	if (!(types & (1 << type))) {
		snprintf(why, whylen, "VM type %lu not in KVM_CAP_VM_TYPES (%#x)", type, types);
		return gmem_skip_or_fail();
	}
	if (!kvm_cap(vm->kvm, KVM_CAP_USER_MEMORY2)) {
		snprintf(why, whylen, "no KVM_CAP_USER_MEMORY2");
		return gmem_skip_or_fail();
	}

	r = vm_create_with_gmem(vm, type, flags, why, whylen);
	if (r != KSFT_PASS)
		return r;
	if (decoy && !vm_map_decoy(vm, why, whylen))
		return KSFT_FAIL;

	/*
	 * In-place: the memslot's userspace_addr is the guest_memfd mapping,
	 * or nothing at all for a gmem-only memslot.
	 */
	region = (struct kvm_userspace_memory_region2){
		.slot = 0,
		.flags = KVM_MEM_GUEST_MEMFD,
		.guest_phys_addr = 0,
		.memory_size = MEM_SIZE,
		.userspace_addr = decoy ? (uintptr_t)vm->other : default_vm ? 0 : (uintptr_t)vm->mem,
		.guest_memfd = vm->gmem,
		.guest_memfd_offset = 0,
	};
	if (ioctl(vm->vm, KVM_SET_USER_MEMORY_REGION2, &region)) {
		snprintf(why, whylen, "KVM_SET_USER_MEMORY_REGION2: %s", strerror(errno));
		return KSFT_FAIL;
	}

	memcpy((void *)(vm->mem + CODE_GPA), guest_code, sizeof(guest_code));

	r = vm_create_vcpu(vm, why, whylen);
	if (r != KSFT_PASS)
		return r;
	return vcpu_real_mode_at_code(vm->vcpu, why, whylen);
}

static int vm_setup_as(struct vm *vm, bool default_vm, char *why, size_t whylen)
{
	return vm_setup_decoy(vm, default_vm, false, why, whylen);
}

static int vm_setup(struct vm *vm, char *why, size_t whylen)
{
	return vm_setup_as(vm, false, why, whylen);
}

static int reads_host_pattern(bool default_vm, char *why, size_t whylen)
{
	volatile uint8_t *again;
	struct vm vm;
	int ret;

	ret = vm_setup_as(&vm, default_vm, why, whylen);
	if (ret != KSFT_PASS)
		goto out;
	ret = KSFT_FAIL;

	host_fill(&vm, 0x11, 1);
	if (!expect_round(&vm, 0x11, 1, STATUS_MATCH, DATA_GPA + DATA_LEN, 1, why, whylen))
		goto out;

	/* Control: one changed byte is seen, at its address. */
	vm.mem[DATA_GPA + 0x123] ^= 0xff;
	if (!expect_round(&vm, 0x11, 1, STATUS_MISMATCH, DATA_GPA + 0x123, 2, why, whylen))
		goto out;

	/* The answer is in the file: a fresh mapping sees it too. */
	again = gmem_map_at(vm.gmem, 0, MEM_SIZE, PROT_READ);
	if (again == MAP_FAILED) {
		snprintf(why, whylen, "second mmap: %s", strerror(errno));
		goto out;
	}
	if (again[PARAM_GPA + A_STATUS] != STATUS_MISMATCH ||
	    get16(again + PARAM_GPA + A_ROUNDS) != 2) {
		snprintf(why, whylen, "second mapping: status %u rounds %u",
			 again[PARAM_GPA + A_STATUS], get16(again + PARAM_GPA + A_ROUNDS));
		munmap((void *)again, MEM_SIZE);
		goto out;
	}
	munmap((void *)again, MEM_SIZE);
	ret = KSFT_PASS;
out:
	vm_teardown(&vm);
	return ret;
}

static int guest_reads_host_pattern(char *why, size_t whylen)
{
	return reads_host_pattern(false, why, whylen);
}

/*
 * Mainline's ABI: a default VM runs on a gmem-only memslot (userspace_addr 0)
 * of a GUEST_MEMFD_FLAG_MMAP | INIT_SHARED guest_memfd. The vCPU reads what
 * the host wrote through the mapping and writes back what the host reads.
 */
static int default_vm_gmem_only_in_place(char *why, size_t whylen)
{
	return reads_host_pattern(true, why, whylen);
}

/*
 * In place means from guest_memfd: with the memslot's userspace_addr on
 * other memory (0xa5, no guest code), the vCPU still runs the code and reads
 * the pattern the host wrote through the guest_memfd mapping, and the other
 * memory stays untouched.
 */
static int memory_comes_from_gmem(bool default_vm, char *why, size_t whylen)
{
	struct vm vm;
	int ret = vm_setup_decoy(&vm, default_vm, true, why, whylen);

	if (ret != KSFT_PASS)
		goto out;
	ret = decoy_round(&vm, 0x5a, 3, why, whylen) ? KSFT_PASS : KSFT_FAIL;
out:
	vm_teardown(&vm);
	return ret;
}

static int sw_protected_memory_comes_from_gmem(char *why, size_t whylen)
{
	return memory_comes_from_gmem(false, why, whylen);
}

static int default_vm_memory_comes_from_gmem(char *why, size_t whylen)
{
	return memory_comes_from_gmem(true, why, whylen);
}

static int punch_hole_seen_by_guest(char *why, size_t whylen)
{
	struct vm vm;
	int ret = vm_setup(&vm, why, whylen);

	if (ret == KSFT_PASS)
		ret = check_punch_hole(&vm, why, whylen);
	vm_teardown(&vm);
	return ret;
}

/*
 * On 6.12 (and with our v7 modules), KVM_MEM_GUEST_MEMFD is a valid memslot
 * flag only for VMs with private memory, so a default VM gets EINVAL even
 * though it may create a guest_memfd. Where default VMs may bind mappable
 * guest_memfds (mainline's gmem-only memslots), a flags-0 one is still
 * refused with EINVAL. The same memslot without the flag is accepted, so
 * the EINVAL is about guest_memfd. Needs no shared-memory cap, so it runs
 * on Debian's stock modules too.
 */
static int default_vm_rejects_gmem_memslot(char *why, size_t whylen)
{
	struct kvm_userspace_memory_region2 region;
	int kvm, vm = -1, gmem = -1, ret = KSFT_FAIL;
	void *anon = MAP_FAILED;

	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0) {
		snprintf(why, whylen, "cannot open /dev/kvm: %s", strerror(errno));
		return KSFT_SKIP;
	}
	if (!kvm_cap(kvm, KVM_CAP_GUEST_MEMFD) || !kvm_cap(kvm, KVM_CAP_USER_MEMORY2)) {
		snprintf(why, whylen, "no KVM_CAP_GUEST_MEMFD or KVM_CAP_USER_MEMORY2");
		ret = gmem_skip_or_fail();
		goto out;
	}
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0) {
		snprintf(why, whylen, "KVM_CREATE_VM(0): %s", strerror(errno));
		goto out;
	}
	gmem = gmem_create(vm, MEM_SIZE, 0);
	if (gmem < 0) {
		snprintf(why, whylen, "KVM_CREATE_GUEST_MEMFD on a default VM: %s", strerror(-gmem));
		goto out;
	}
	anon = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (anon == MAP_FAILED) {
		snprintf(why, whylen, "mmap: %s", strerror(errno));
		goto out;
	}

	region = (struct kvm_userspace_memory_region2){
		.slot = 0,
		.flags = KVM_MEM_GUEST_MEMFD,
		.memory_size = MEM_SIZE,
		.userspace_addr = (uintptr_t)anon,
		.guest_memfd = gmem,
	};
	if (!ioctl(vm, KVM_SET_USER_MEMORY_REGION2, &region)) {
		snprintf(why, whylen, "a default VM bound a guest_memfd memslot");
		goto out;
	}
	if (errno != EINVAL) {
		snprintf(why, whylen, "KVM_MEM_GUEST_MEMFD on a default VM: %s, want EINVAL",
			 strerror(errno));
		goto out;
	}

	region.flags = 0;
	if (ioctl(vm, KVM_SET_USER_MEMORY_REGION2, &region)) {
		snprintf(why, whylen, "the same memslot without KVM_MEM_GUEST_MEMFD: %s",
			 strerror(errno));
		goto out;
	}
	ret = KSFT_PASS;
out:
	if (anon != MAP_FAILED)
		munmap(anon, MEM_SIZE);
	if (gmem >= 0)
		close(gmem);
	if (vm >= 0)
		close(vm);
	close(kvm);
	return ret;
}

/*
 * What the guest writes to its private memory, the host never sees. A default
 * VM with code in ordinary memory (GPA 0-0x1fff) and a private, mappable
 * guest_memfd (GUEST_MEMFD_FLAG_MMAP only) as a gmem-only memslot at 0x2000.
 * The guest writes 0x5a there; the host's mapping of that guest_memfd must
 * SIGBUS on the written page (now populated and up to date, which is what a
 * careless fault-around would map) and on an untouched one.
 */
static int private_memory_hidden_from_host(char *why, size_t whylen)
{
	static const uint8_t code[] = {
		0xbf, 0x00, 0x20,	/* mov  $0x2000, %di              */
		0xb0, 0x5a,		/* mov  $0x5a, %al                */
		0x88, 0x05,		/* mov  %al, (%di)   private page */
		0xba, 0x10, 0x00,	/* mov  $0x10, %dx                */
		0xee,			/* out  %al, (%dx)                */
		0xf4,			/* hlt                            */
	};
	struct vm vm = { .kvm = -1, .vm = -1, .vcpu = -1, .gmem = -1 };
	struct kvm_userspace_memory_region2 region;
	volatile uint8_t *priv = MAP_FAILED;
	uint8_t *low = MAP_FAILED;
	int ret = KSFT_FAIL, r0, r1;

	vm.kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (vm.kvm < 0 || !gmem_has_flags(vm.kvm, GUEST_MEMFD_FLAG_MMAP)) {
		snprintf(why, whylen, "no GUEST_MEMFD_FLAG_MMAP in KVM_CAP_GUEST_MEMFD_FLAGS");
		ret = gmem_skip_or_fail();
		goto out;
	}
	vm.vm = ioctl(vm.kvm, KVM_CREATE_VM, 0);
	r0 = vm.vm < 0 ? -errno : gmem_create(vm.vm, 0x2000, GUEST_MEMFD_FLAG_MMAP);
	if (r0 < 0) {
		snprintf(why, whylen, "default VM with a private guest_memfd: %s", strerror(-r0));
		goto out;
	}
	vm.gmem = r0;
	low = mmap(NULL, 0x2000, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (low == MAP_FAILED) {
		snprintf(why, whylen, "mmap: %s", strerror(errno));
		goto out;
	}
	memcpy(low + CODE_GPA, code, sizeof(code));
	region = (struct kvm_userspace_memory_region2){
		.slot = 0, .memory_size = 0x2000, .userspace_addr = (uintptr_t)low,
	};
	if (ioctl(vm.vm, KVM_SET_USER_MEMORY_REGION2, &region)) {
		snprintf(why, whylen, "code memslot: %s", strerror(errno));
		goto out;
	}
	region = (struct kvm_userspace_memory_region2){
		.slot = 1, .flags = KVM_MEM_GUEST_MEMFD, .guest_phys_addr = 0x2000,
		.memory_size = 0x2000, .guest_memfd = vm.gmem,
	};
	if (ioctl(vm.vm, KVM_SET_USER_MEMORY_REGION2, &region)) {
		snprintf(why, whylen, "private gmem-only memslot: %s", strerror(errno));
		goto out;
	}
	if (vm_create_vcpu(&vm, why, whylen) != KSFT_PASS)
		goto out;
	if (vcpu_real_mode_at_code(vm.vcpu, why, whylen) != KSFT_PASS)
		goto out;
	while (ioctl(vm.vcpu, KVM_RUN, 0) && errno == EINTR && !timed_out)
		;
	if (vm.run->exit_reason != KVM_EXIT_IO ||
	    *((uint8_t *)vm.run + vm.run->io.data_offset) != 0x5a) {
		snprintf(why, whylen, "guest did not report its private write (exit %u, %s)",
			 vm.run->exit_reason, exit_name(vm.run->exit_reason));
		goto out;
	}

	priv = gmem_map_at(vm.gmem, 0, 0x2000, PROT_READ);
	if (priv == MAP_FAILED) {
		snprintf(why, whylen, "mmap of the private guest_memfd: %s", strerror(errno));
		goto out;
	}
	r0 = host_read(priv);
	r1 = host_read(priv + 0x1000);
	if (r0 != -1 || r1 != -1) {
		snprintf(why, whylen, "host read private memory: page the guest wrote -> %d, untouched page -> %d (want SIGBUS, -1)",
			 r0, r1);
		goto out;
	}
	ret = KSFT_PASS;
out:
	if (priv != MAP_FAILED)
		munmap((void *)priv, 0x2000);
	if (low != MAP_FAILED)
		munmap(low, 0x2000);
	vm_teardown(&vm);
	return ret;
}

static const struct gmem_case cases[] = {
	{ "guest_reads_host_pattern", guest_reads_host_pattern },
	{ "punch_hole_seen_by_guest", punch_hole_seen_by_guest },
	{ "default_vm_rejects_gmem_memslot", default_vm_rejects_gmem_memslot },
	{ "default_vm_gmem_only_in_place", default_vm_gmem_only_in_place },
	{ "private_memory_hidden_from_host", private_memory_hidden_from_host },
	{ "sw_protected_memory_comes_from_gmem", sw_protected_memory_comes_from_gmem },
	{ "default_vm_memory_comes_from_gmem", default_vm_memory_comes_from_gmem },
};

int main(void)
{
	run_cases(cases, ARRAY_SIZE(cases));
}
