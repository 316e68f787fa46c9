// SPDX-License-Identifier: GPL-2.0
/*
 * gmem_vcpu_test (arm64): a small VMM checking that an arm64 guest runs on
 * guest_memfd memory that the host maps, in place (src/arm64 series).
 *
 * A default VM gets one 64 KiB guest_memfd, mapped by the host and bound at
 * GPA 0 with KVM_SET_USER_MEMORY_REGION2 (KVM_MEM_GUEST_MEMFD). A tiny guest,
 * written through the mapping, checks a page the host filled, writes its
 * answer next to its parameters and reports with an MMIO write outside the
 * memslot. The host reads the answer through the mapping.
 *
 * Cases:
 *   1. guest_reads_host_pattern: the guest sees what the host wrote, and
 *      notices (at the right offset) when one byte differs.
 *   2. punch_hole_seen_by_guest: after the host punches the page out, guest
 *      and host read zeroes; a new host pattern is what the guest sees next.
 *   3. memory_comes_from_gmem: the memslot's userspace_addr points at an
 *      anonymous mapping holding other bytes; the guest must see the
 *      guest_memfd's bytes, not those (faults go to guest_memfd).
 *   4. mainline_flags: as 1, with a guest_memfd created with
 *      GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED: mainline's way,
 *      the only one with kvm.gmem_mainline_abi=1.
 *   5. private_memory_hidden_from_host: with kvm.gmem_mainline_abi=1,
 *      GUEST_MEMFD_FLAG_MMAP alone makes private memory: a host touch SIGBUSes
 *      (with the v7 ABI every guest_memfd of an arm64 VM is shared: SKIP).
 *   7. memory_fault_exit: the guest_memfd of a gmem-only memslot is closed
 *      before the vCPU runs: KVM_RUN fails with EFAULT and
 *      KVM_EXIT_MEMORY_FAULT names the page.
 *   8. mte_refuses_gmem: MTE and guest_memfd memslots exclude each other,
 *      with EINVAL at KVM_SET_USER_MEMORY_REGION2 or KVM_ENABLE_CAP time.
 *   9. hwpoison_fault_exit: the data page is poisoned before the vCPU runs:
 *      KVM_RUN fails with guest_memfd's own error, EHWPOISON, and
 *      KVM_EXIT_MEMORY_FAULT names the page, as mainline's arm64 does.
 *  10. huge_block_mapping: a GUEST_MEMFD_FLAG_HUGEPAGE file's 2 MiB folio is
 *      one stage-2 block: the guest's writes to its 512 pages cost a few
 *      exits (512 with a plain file); after a punch of one page, 4 KiB pages.
 * Cases 1-3 SKIP without KVM_CAP_GMEM_SHARED_MEM (the v7 ABI), 4-5, 7 and 9
 * without the flags in KVM_CAP_GUEST_MEMFD_FLAGS; 6 checks the capabilities
 * a mainline VMM probes.
 *
 * The guest runs with its MMU off, so its accesses are Device/Non-cacheable:
 * fine under TCG, and with FEAT_S2FWB on hardware.
 *
 * Prints TAP. Each case has an alarm() and a bound on KVM_RUN exits, so a
 * guest that goes astray fails instead of hanging. -c TEXT runs only the
 * cases whose names contain TEXT (a must-fail run's).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include <linux/falloc.h>

#include "gmem_vcpu.h"

#define MMIO_GPA	0x20000		/* outside the memslot: an MMIO exit */

/*
 * The guest, loaded at CODE_GPA. Each round it checks DATA_LEN bytes against
 * seed + i * step, reports, writes its status to MMIO_GPA (the exit) and
 * starts over. Checked against "aarch64-linux-gnu-as" + "objdump -d".
 */
static const uint32_t guest_code[] = {
	0xd2840000,	/* top:    mov  x0, #0x2000        data     */
	0xd2860001,	/*         mov  x1, #0x3000        params   */
	0x39400022,	/*         ldrb w2, [x1]           seed     */
	0x39400423,	/*         ldrb w3, [x1, #1]       step     */
	0x79400424,	/*         ldrh w4, [x1, #2]       len      */
	0x39400005,	/* check:  ldrb w5, [x0]                    */
	0x6b0200bf,	/*         cmp  w5, w2                      */
	0x54000101,	/*         b.ne bad                         */
	0x91000400,	/*         add  x0, x0, #1                  */
	0x0b030042,	/*         add  w2, w2, w3                  */
	0x12001c42,	/*         and  w2, w2, #0xff               */
	0x71000484,	/*         subs w4, w4, #1                  */
	0x54ffff21,	/*         b.ne check                       */
	0x52800025,	/*         mov  w5, #1             match    */
	0x14000002,	/*         b    report                      */
	0x52800045,	/* bad:    mov  w5, #2             mismatch */
	0x39001025,	/* report: strb w5, [x1, #4]       status   */
	0x79000c20,	/*         strh w0, [x1, #6]       stop     */
	0x79401026,	/*         ldrh w6, [x1, #8]                */
	0x110004c6,	/*         add  w6, w6, #1                  */
	0x79001026,	/*         strh w6, [x1, #8]       rounds   */
	0xd2a00047,	/*         mov  x7, #0x20000                */
	0xb90000e5,	/*         str  w5, [x7]           MMIO     */
	0x17ffffe9,	/*         b    top                         */
};

static int set_core_reg(int vcpu, uint64_t offset, uint64_t value)
{
	struct kvm_one_reg reg = {
		.id = KVM_REG_ARM64 | KVM_REG_SIZE_U64 | KVM_REG_ARM_CORE |
		      (offset / sizeof(uint32_t)),
		.addr = (uintptr_t)&value,
	};

	return ioctl(vcpu, KVM_SET_ONE_REG, &reg);
}

/* How the guest_memfd is made and bound. */
enum setup {
	SETUP_V7,	/* flags 0 (v7 ABI), userspace_addr = the mapping */
	SETUP_DECOY,	/* flags 0, userspace_addr = other memory */
	SETUP_MAINLINE,	/* MMAP | INIT_SHARED, userspace_addr = the mapping */
	SETUP_PRIVATE,	/* MMAP alone: private, userspace_addr = the mapping */
};

/*
 * A VM with its guest_memfd mapped and bound at GPA 0, the guest code in place
 * and one vCPU at CODE_GPA. Returns a KSFT_* code; @why says what failed or
 * why it skips.
 */
static int vm_setup(struct vm *vm, enum setup how, char *why, size_t whylen)
{
	struct kvm_create_guest_memfd gm = { .size = MEM_SIZE };
	struct kvm_userspace_memory_region2 region;
	struct kvm_vcpu_init init;
	int r;

	*vm = (struct vm){ .kvm = -1, .vm = -1, .vcpu = -1, .gmem = -1 };

	vm->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (vm->kvm < 0) {
		snprintf(why, whylen, "cannot open /dev/kvm: %s", strerror(errno));
		return KSFT_SKIP;
	}
	if (how == SETUP_MAINLINE || how == SETUP_PRIVATE) {
		gm.flags = GUEST_MEMFD_FLAG_MMAP;
		if (how == SETUP_MAINLINE)
			gm.flags |= GUEST_MEMFD_FLAG_INIT_SHARED;
		if (!gmem_has_flags(vm->kvm, gm.flags)) {
			snprintf(why, whylen, "flags %#llx not all in KVM_CAP_GUEST_MEMFD_FLAGS",
				 (unsigned long long)gm.flags);
			return gmem_skip_or_fail();
		}
	} else if (kvm_cap(vm->kvm, KVM_CAP_GMEM_SHARED_MEM) <= 0) {
		snprintf(why, whylen, "KVM_CAP_GMEM_SHARED_MEM is 0: guest_memfd needs GUEST_MEMFD_FLAG_MMAP to be mapped");
		return gmem_ours_v7() ? KSFT_FAIL : KSFT_SKIP;
	}
	if (!kvm_cap(vm->kvm, KVM_CAP_USER_MEMORY2)) {
		snprintf(why, whylen, "no KVM_CAP_USER_MEMORY2");
		return gmem_skip_or_fail();
	}

	r = vm_create_with_gmem(vm, 0, gm.flags, why, whylen);
	if (r != KSFT_PASS)
		return r;

	if (how == SETUP_DECOY && !vm_map_decoy(vm, why, whylen))
		return KSFT_FAIL;

	region = (struct kvm_userspace_memory_region2){
		.slot = 0,
		.flags = KVM_MEM_GUEST_MEMFD,
		.guest_phys_addr = 0,
		.memory_size = MEM_SIZE,
		.userspace_addr = (uintptr_t)(vm->other ? vm->other : (void *)vm->mem),
		.guest_memfd = vm->gmem,
		.guest_memfd_offset = 0,
	};
	if (ioctl(vm->vm, KVM_SET_USER_MEMORY_REGION2, &region)) {
		snprintf(why, whylen, "KVM_SET_USER_MEMORY_REGION2: %s", strerror(errno));
		return KSFT_FAIL;
	}

	/* Private memory cannot be written by the host: the caller loads nothing. */
	if (how != SETUP_PRIVATE)
		memcpy((void *)(vm->mem + CODE_GPA), guest_code, sizeof(guest_code));

	r = vm_create_vcpu(vm, why, whylen);
	if (r != KSFT_PASS)
		return r;
	if (ioctl(vm->vm, KVM_ARM_PREFERRED_TARGET, &init) ||
	    ioctl(vm->vcpu, KVM_ARM_VCPU_INIT, &init)) {
		snprintf(why, whylen, "KVM_ARM_VCPU_INIT: %s", strerror(errno));
		return KSFT_FAIL;
	}
	/* KVM_ARM_VCPU_INIT leaves the vCPU at EL1h, MMU off, interrupts masked. */
	if (set_core_reg(vm->vcpu, offsetof(struct kvm_regs, regs.pc), CODE_GPA)) {
		snprintf(why, whylen, "KVM_SET_ONE_REG(pc): %s", strerror(errno));
		return KSFT_FAIL;
	}
	return KSFT_PASS;
}

/*
 * One guest round: set the parameters, run until the guest's MMIO write,
 * return the status it reported (STATUS_*) or -1 with @why filled.
 */
static int guest_round(struct vm *vm, uint8_t seed, uint8_t step, char *why, size_t whylen)
{
	volatile uint8_t *p = vm->mem + PARAM_GPA;
	uint16_t rounds = get16(p + A_ROUNDS);
	uint32_t reported;

	p[P_SEED] = seed;
	p[P_STEP] = step;
	put16(p + P_LEN, DATA_LEN);
	p[A_STATUS] = 0;

	for (int exits = 0; exits < MAX_EXITS; exits++) {
		if (ioctl(vm->vcpu, KVM_RUN, 0)) {
			if (errno == EINTR && timed_out) {
				snprintf(why, whylen, "guest still running after %d s", CASE_TIMEOUT);
				return -1;
			}
			if (errno == EINTR)
				continue;
			snprintf(why, whylen, "KVM_RUN: %s (exit reason %u)",
				 strerror(errno), vm->run->exit_reason);
			return -1;
		}
		if (vm->run->exit_reason != KVM_EXIT_MMIO) {
			snprintf(why, whylen, "unexpected exit reason %u", vm->run->exit_reason);
			return -1;
		}
		if (vm->run->mmio.phys_addr != MMIO_GPA || !vm->run->mmio.is_write ||
		    vm->run->mmio.len != 4) {
			snprintf(why, whylen, "unexpected MMIO: %s of %u bytes at %#llx",
				 vm->run->mmio.is_write ? "write" : "read", vm->run->mmio.len,
				 (unsigned long long)vm->run->mmio.phys_addr);
			return -1;
		}
		memcpy(&reported, vm->run->mmio.data, sizeof(reported));
		/* What the guest wrote to memory must be what it sent out. */
		if (p[A_STATUS] != reported || get16(p + A_ROUNDS) != (uint16_t)(rounds + 1)) {
			snprintf(why, whylen,
				 "the host mapping shows status %u, round %u; the guest reported %u, round %u",
				 p[A_STATUS], get16(p + A_ROUNDS), reported, rounds + 1);
			return -1;
		}
		return reported;
	}
	snprintf(why, whylen, "no report after %d exits", MAX_EXITS);
	return -1;
}

/* Guest sees the pattern, then notices one flipped byte at its offset. */
static int check_pattern_and_flip(struct vm *vm, char *why, size_t whylen)
{
	host_fill(vm, 0x11, 3);
	if (!expect_round(vm, 0x11, 3, STATUS_MATCH, DATA_GPA + DATA_LEN, 1, why, whylen))
		return KSFT_FAIL;

	vm->mem[DATA_GPA + 0x123] ^= 0xff;
	if (!expect_round(vm, 0x11, 3, STATUS_MISMATCH, DATA_GPA + 0x123, 2, why, whylen))
		return KSFT_FAIL;
	return KSFT_PASS;
}

/* A VM set up @how, whose guest sees the host's pattern and a flipped byte. */
static int pattern_case(enum setup how, char *why, size_t whylen)
{
	struct vm vm;
	int r = vm_setup(&vm, how, why, whylen);

	if (r == KSFT_PASS)
		r = check_pattern_and_flip(&vm, why, whylen);
	vm_teardown(&vm);
	return r;
}

static int case_guest_reads_host_pattern(char *why, size_t whylen)
{
	return pattern_case(SETUP_V7, why, whylen);
}

static int case_punch_hole_seen_by_guest(char *why, size_t whylen)
{
	struct vm vm;
	int r = vm_setup(&vm, SETUP_V7, why, whylen);

	if (r == KSFT_PASS)
		r = check_punch_hole(&vm, why, whylen);
	vm_teardown(&vm);
	return r;
}

static int case_memory_comes_from_gmem(char *why, size_t whylen)
{
	struct vm vm;
	int r = vm_setup(&vm, SETUP_DECOY, why, whylen);

	if (r != KSFT_PASS)
		goto out;
	r = decoy_round(&vm, 0x5a, 0, why, whylen) ? KSFT_PASS : KSFT_FAIL;
out:
	vm_teardown(&vm);
	return r;
}

static int case_mainline_flags(char *why, size_t whylen)
{
	return pattern_case(SETUP_MAINLINE, why, whylen);
}

static int case_private_memory_hidden_from_host(char *why, size_t whylen)
{
	struct vm vm;
	int r = vm_setup(&vm, SETUP_PRIVATE, why, whylen);

	if (r != KSFT_PASS)
		goto out;
	if (kvm_cap(vm.kvm, KVM_CAP_GMEM_SHARED_MEM) > 0) {
		snprintf(why, whylen, "v7 ABI: every guest_memfd of an arm64 VM is shared");
		r = KSFT_SKIP;
		goto out;
	}
	if (host_read(vm.mem + DATA_GPA) != -1) {
		snprintf(why, whylen, "the host read private guest_memfd memory without SIGBUS");
		r = KSFT_FAIL;
	}
out:
	vm_teardown(&vm);
	return r;
}

/*
 * What an arm64 VMM written for mainline probes: KVM_CAP_GUEST_MEMFD is 1 on
 * a VM fd; with mainline's ABI (the default) capability 239 (the v7 series'
 * KVM_CAP_GMEM_SHARED_MEM, mainline's KVM_CAP_ARM_WRITABLE_IMP_ID_REGS) is 0
 * on /dev/kvm and on the VM, and enabling it fails with EINVAL; with the v7
 * ABI it is 1 (the collision docs/abi.md warns about). With either
 * ABI KVM_CAP_MEMORY_FAULT_INFO is 0, as on mainline's arm64, which fills in
 * KVM_EXIT_MEMORY_FAULT for guest_memfd faults but only x86 advertises it.
 */
static int case_caps_every_vm(char *why, size_t whylen)
{
	struct kvm_enable_cap cap = { .cap = KVM_CAP_GMEM_SHARED_MEM };
	int kvm, vm = -1, r = KSFT_FAIL, c239;
	char abi = 0;
	FILE *f;

	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0) {
		snprintf(why, whylen, "/dev/kvm: %s", strerror(errno));
		return KSFT_FAIL;
	}
	f = fopen("/sys/module/kvm/parameters/gmem_mainline_abi", "r");
	if (!f || fscanf(f, " %c", &abi) != 1) {
		snprintf(why, whylen, "no kvm.gmem_mainline_abi parameter");
		goto out;
	}
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0) {
		snprintf(why, whylen, "KVM_CREATE_VM: %s", strerror(errno));
		goto out;
	}
	c239 = kvm_cap(vm, KVM_CAP_GMEM_SHARED_MEM);
	if (kvm_cap(vm, KVM_CAP_GUEST_MEMFD) != 1)
		snprintf(why, whylen, "KVM_CAP_GUEST_MEMFD on a VM fd is %d, want 1",
			 kvm_cap(vm, KVM_CAP_GUEST_MEMFD));
	else if (abi == 'Y' && (kvm_cap(kvm, KVM_CAP_GMEM_SHARED_MEM) || c239))
		snprintf(why, whylen, "capability 239 is %d (/dev/kvm), %d (VM) with mainline's ABI, want 0",
			 kvm_cap(kvm, KVM_CAP_GMEM_SHARED_MEM), c239);
	else if (abi == 'Y' && (!ioctl(vm, KVM_ENABLE_CAP, &cap) || errno != EINVAL))
		snprintf(why, whylen, "KVM_ENABLE_CAP(239) did not fail with EINVAL");
	else if (abi != 'Y' && kvm_cap(kvm, KVM_CAP_GMEM_SHARED_MEM) != 1)
		snprintf(why, whylen, "capability 239 is not 1 on /dev/kvm with the v7 ABI");
	else if (kvm_cap(kvm, KVM_CAP_MEMORY_FAULT_INFO) || kvm_cap(vm, KVM_CAP_MEMORY_FAULT_INFO))
		snprintf(why, whylen, "KVM_CAP_MEMORY_FAULT_INFO is %d (/dev/kvm), %d (VM), want 0 as on mainline's arm64",
			 kvm_cap(kvm, KVM_CAP_MEMORY_FAULT_INFO), kvm_cap(vm, KVM_CAP_MEMORY_FAULT_INFO));
	else
		r = KSFT_PASS;
out:
	if (f)
		fclose(f);
	if (vm >= 0)
		close(vm);
	close(kvm);
	return r;
}

/*
 * guest_memfd cannot provide the page: the guest_memfd of a gmem-only
 * memslot is closed (and unmapped) before the vCPU's first fetch. KVM_RUN
 * must fail with EFAULT and say where: KVM_EXIT_MEMORY_FAULT with the gpa
 * and size of the code page (src/arm64 0005; before it, EFAULT alone).
 */
static int case_memory_fault_exit(char *why, size_t whylen)
{
	struct vm vm;
	int r = vm_setup(&vm, SETUP_MAINLINE, why, whylen);
	long page = getpagesize();

	if (r != KSFT_PASS)
		goto out;
	munmap((void *)vm.mem, MEM_SIZE);
	vm.mem = NULL;
	close(vm.gmem);
	vm.gmem = -1;
	r = KSFT_FAIL;
	errno = 0;
	if (ioctl(vm.vcpu, KVM_RUN, 0) != -1 || errno != EFAULT)
		snprintf(why, whylen, "KVM_RUN with the guest_memfd closed: %s, want EFAULT",
			 errno ? strerror(errno) : "success");
	else if (vm.run->exit_reason != KVM_EXIT_MEMORY_FAULT)
		snprintf(why, whylen, "exit reason %u, want KVM_EXIT_MEMORY_FAULT (%u)",
			 vm.run->exit_reason, KVM_EXIT_MEMORY_FAULT);
	else if (vm.run->memory_fault.gpa != (CODE_GPA & ~(page - 1)) ||
		 vm.run->memory_fault.size != (unsigned long long)page ||
		 vm.run->memory_fault.flags)
		snprintf(why, whylen, "memory fault gpa %#llx size %#llx flags %#llx, want %#lx %#lx 0",
			 (unsigned long long)vm.run->memory_fault.gpa,
			 (unsigned long long)vm.run->memory_fault.size,
			 (unsigned long long)vm.run->memory_fault.flags,
			 (unsigned long)(CODE_GPA & ~(page - 1)), page);
	else
		r = KSFT_PASS;
out:
	vm_teardown(&vm);
	return r;
}

/*
 * guest_memfd's own error, passed on as it is: the data page is poisoned
 * with MADV_HWPOISON through the host mapping (root; the arm64 kernel has
 * CONFIG_MEMORY_FAILURE) before the vCPU first runs. The guest's read of it
 * must fail KVM_RUN with EHWPOISON (not EFAULT, and no SIGBUS for the
 * memslot's userspace_addr) and KVM_EXIT_MEMORY_FAULT must name the data
 * page, flags 0: what mainline's gmem_abort() and x86 do (src/arm64 0005).
 * As in gmem_mmap_test's madv_hwpoison, the injection may return 0, EBUSY
 * (6.12 counts guest_memfd's MF_DELAYED as a failure) or EHWPOISON, or
 * SIGBUS this task if the page was dirty. The poisoned page stays in the
 * guest_memfd until its close, and is lost to this throwaway guest kernel.
 */
static int case_hwpoison_fault_exit(char *why, size_t whylen)
{
	volatile int madv = 0, err = 0;
	long page = getpagesize();
	struct vm vm;
	int r = vm_setup(&vm, SETUP_MAINLINE, why, whylen);

	if (r != KSFT_PASS)
		goto out;
	if (page != 0x1000) {
		snprintf(why, whylen, "%ld-byte pages: code and data share a page", page);
		r = KSFT_SKIP;
		goto out;
	}
	r = KSFT_FAIL;
	gmem_sigbus_setup();
	if (sigsetjmp(gmem_sigbus_jmp, 1) == 0) {
		gmem_sigbus_armed = 1;
		madv = madvise((void *)(vm.mem + DATA_GPA), page, MADV_HWPOISON);
		err = errno;
		gmem_sigbus_armed = 0;
	}
	if (madv && err != EBUSY && err != EHWPOISON) {
		snprintf(why, whylen, "MADV_HWPOISON on the data page: %s", strerror(err));
		goto out;
	}

	errno = 0;
	if (ioctl(vm.vcpu, KVM_RUN, 0) != -1 || errno != EHWPOISON)
		snprintf(why, whylen, "KVM_RUN on a poisoned guest_memfd page: %s (exit reason %u), want EHWPOISON",
			 errno ? strerror(errno) : "success", vm.run->exit_reason);
	else if (vm.run->exit_reason != KVM_EXIT_MEMORY_FAULT)
		snprintf(why, whylen, "exit reason %u, want KVM_EXIT_MEMORY_FAULT (%u)",
			 vm.run->exit_reason, KVM_EXIT_MEMORY_FAULT);
	else if (vm.run->memory_fault.gpa != DATA_GPA ||
		 vm.run->memory_fault.size != (unsigned long long)page ||
		 vm.run->memory_fault.flags)
		snprintf(why, whylen, "memory fault gpa %#llx size %#llx flags %#llx, want %#x %#lx 0",
			 (unsigned long long)vm.run->memory_fault.gpa,
			 (unsigned long long)vm.run->memory_fault.size,
			 (unsigned long long)vm.run->memory_fault.flags, DATA_GPA, page);
	else
		r = KSFT_PASS;
out:
	vm_teardown(&vm);
	return r;
}

/* A VM and a guest_memfd memslot (or not) over @hva; -errno of the memslot. */
static int gmem_memslot(int vm, int slot, bool gmem, void *hva)
{
	struct kvm_userspace_memory_region2 region = {
		.slot = slot,
		.flags = gmem ? KVM_MEM_GUEST_MEMFD : 0,
		.guest_phys_addr = (uint64_t)slot * MEM_SIZE,
		.memory_size = MEM_SIZE,
		.userspace_addr = (uintptr_t)hva,
	};
	int fd = -1, r;

	if (gmem) {
		fd = gmem_create(vm, MEM_SIZE, GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED);
		if (fd < 0)
			return fd;
		region.guest_memfd = fd;
	}
	r = ioctl(vm, KVM_SET_USER_MEMORY_REGION2, &region) ? -errno : 0;
	if (fd >= 0)
		close(fd);
	return r;
}

/*
 * MTE cannot tag guest_memfd memory: a VM with MTE refuses a guest_memfd
 * memslot, and a VM with one refuses MTE, both with EINVAL when the memslot
 * or the capability is set (src/arm64 0004), not at the first fault. The
 * memslot's userspace_addr is anonymous memory, which MTE allows, so only
 * the guest_memfd can be the reason; the same memory without guest_memfd
 * is the positive control. The arm64 tier boots with mte=on: no MTE is a
 * failure.
 */
static int case_mte_refuses_gmem(char *why, size_t whylen)
{
	struct kvm_enable_cap mte = { .cap = KVM_CAP_ARM_MTE };
	int kvm, vm1 = -1, vm2 = -1, r = KSFT_FAIL, e;
	void *anon;

	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0) {
		snprintf(why, whylen, "/dev/kvm: %s", strerror(errno));
		return KSFT_FAIL;
	}
	anon = mmap(NULL, 2 * MEM_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (anon == MAP_FAILED) {
		snprintf(why, whylen, "mmap: %s", strerror(errno));
		goto out;
	}
	if (kvm_cap(kvm, KVM_CAP_ARM_MTE) <= 0) {
		snprintf(why, whylen, "no KVM_CAP_ARM_MTE (the arm64 tier boots QEMU with mte=on)");
		goto out;
	}
	vm1 = ioctl(kvm, KVM_CREATE_VM, 0);
	vm2 = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm1 < 0 || vm2 < 0) {
		snprintf(why, whylen, "KVM_CREATE_VM: %s", strerror(errno));
		goto out;
	}
	if (ioctl(vm1, KVM_ENABLE_CAP, &mte)) {
		snprintf(why, whylen, "KVM_ENABLE_CAP(MTE): %s", strerror(errno));
		goto out;
	}
	e = gmem_memslot(vm1, 0, true, anon);
	if (e != -EINVAL) {
		snprintf(why, whylen, "MTE VM: guest_memfd memslot: %s, want EINVAL",
			 e ? strerror(-e) : "accepted");
		goto out;
	}
	e = gmem_memslot(vm1, 1, false, (char *)anon + MEM_SIZE);
	if (e) {
		snprintf(why, whylen, "MTE VM: anonymous memslot: %s", strerror(-e));
		goto out;
	}
	e = gmem_memslot(vm2, 0, true, anon);
	if (e) {
		snprintf(why, whylen, "guest_memfd memslot without MTE: %s", strerror(-e));
		goto out;
	}
	errno = 0;
	if (!ioctl(vm2, KVM_ENABLE_CAP, &mte) || errno != EINVAL) {
		snprintf(why, whylen, "KVM_ENABLE_CAP(MTE) with a guest_memfd memslot: %s, want EINVAL",
			 errno ? strerror(errno) : "success");
		goto out;
	}
	r = KSFT_PASS;
out:
	if (vm1 >= 0)
		close(vm1);
	if (vm2 >= 0)
		close(vm2);
	if (anon != MAP_FAILED)
		munmap(anon, 2 * MEM_SIZE);
	close(kvm);
	return r;
}

/*
 * The guest of huge_block_mapping, at CODE_GPA: a byte in each of the 512
 * pages from HUGE_GPA (the page's number counted down from 512, low byte),
 * then the MMIO write, and again (aarch64-linux-gnu-as + objdump -d).
 */
#define HUGE_GPA	0x400000	/* 2 MiB aligned, past slot 0 */
#define HUGE_SIZE	0x400000	/* the file: two 2 MiB folios */
#define HUGE_PAGES	512		/* the guest writes the first 2 MiB */

static const uint32_t touch_code[] = {
	0xd2a00800,	/* top:  mov  x0, #0x400000          HUGE_GPA */
	0xd2804004,	/*       mov  x4, #512                        */
	0x39000004,	/* loop: strb w4, [x0]                        */
	0x91400400,	/*       add  x0, x0, #0x1000                 */
	0xf1000484,	/*       subs x4, x4, #1                      */
	0x54ffffa1,	/*       b.ne loop                            */
	0xd2a00047,	/*       mov  x7, #0x20000                    */
	0xb90000e4,	/*       str  w4, [x7]           MMIO         */
	0x17fffff8,	/*       b    top                             */
};

/* The VM's debugfs stat @name (the sum over its vCPUs), or -1. */
static long vm_stat(int vm, const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), GMEM_DEBUGFS "/kvm/%d-%d/%s", getpid(), vm, name);
	return gmem_counter(path);
}

/*
 * One pass of touch_code over the first 2 MiB of @huge (the host's mapping
 * of the file at HUGE_GPA): run to its MMIO write, check each page's byte
 * through the mapping, and say how many exits it took (*@exits, from the
 * VM's "exits" stat: each stage-2 fault is one, an exit KVM handles
 * itself). Returns false with @why filled.
 */
static bool touch_pass(struct vm *vm, volatile uint8_t *huge, long *exits, char *why,
		       size_t whylen)
{
	long before = vm_stat(vm->vm, "exits");

	if (before < 0) {
		snprintf(why, whylen, "no debugfs stat kvm/%d-%d/exits", getpid(), vm->vm);
		return false;
	}
	for (int n = 0;; n++) {
		if (n == MAX_EXITS) {
			snprintf(why, whylen, "no report after %d exits", MAX_EXITS);
			return false;
		}
		if (ioctl(vm->vcpu, KVM_RUN, 0)) {
			if (errno == EINTR && !timed_out)
				continue;
			snprintf(why, whylen, "KVM_RUN: %s (exit reason %u)", strerror(errno),
				 vm->run->exit_reason);
			return false;
		}
		if (vm->run->exit_reason == KVM_EXIT_MMIO && vm->run->mmio.phys_addr == MMIO_GPA &&
		    vm->run->mmio.is_write)
			break;
		snprintf(why, whylen, "unexpected exit reason %u", vm->run->exit_reason);
		return false;
	}
	*exits = vm_stat(vm->vm, "exits") - before;
	for (int i = 0; i < HUGE_PAGES; i++) {
		uint8_t want = (uint8_t)(HUGE_PAGES - i);

		if (huge[(long)i * 0x1000] != want) {
			snprintf(why, whylen, "page %d of the 2 MiB reads %#x through the host mapping, the guest wrote %#x",
				 i, huge[(long)i * 0x1000], want);
			return false;
		}
	}
	return true;
}

/*
 * A VM with touch_code and a second memslot at HUGE_GPA over a HUGE_SIZE
 * guest_memfd made with @flags, mapped by the host (*@huge, *@fd): the
 * caller unmaps and closes them.
 */
static int huge_vm(struct vm *vm, uint64_t flags, volatile uint8_t **huge, int *fd,
		   char *why, size_t whylen)
{
	struct kvm_userspace_memory_region2 region;
	void *map;
	int r = vm_setup(vm, SETUP_MAINLINE, why, whylen);

	*huge = NULL;
	*fd = -1;
	if (r != KSFT_PASS)
		return r;
	memcpy((void *)(vm->mem + CODE_GPA), touch_code, sizeof(touch_code));
	*fd = gmem_create(vm->vm, HUGE_SIZE, flags);
	if (*fd < 0) {
		snprintf(why, whylen, "KVM_CREATE_GUEST_MEMFD(%#llx, 4 MiB): %s",
			 (unsigned long long)flags, strerror(-*fd));
		return KSFT_FAIL;
	}
	map = gmem_map(*fd, HUGE_SIZE);
	if (map == MAP_FAILED) {
		snprintf(why, whylen, "mmap(guest_memfd, 4 MiB): %s", strerror(errno));
		return KSFT_FAIL;
	}
	*huge = map;
	region = (struct kvm_userspace_memory_region2){
		.slot = 1,
		.flags = KVM_MEM_GUEST_MEMFD,
		.guest_phys_addr = HUGE_GPA,
		.memory_size = HUGE_SIZE,
		.userspace_addr = (uintptr_t)map,
		.guest_memfd = *fd,
		.guest_memfd_offset = 0,
	};
	if (ioctl(vm->vm, KVM_SET_USER_MEMORY_REGION2, &region)) {
		snprintf(why, whylen, "KVM_SET_USER_MEMORY_REGION2 at %#x: %s", HUGE_GPA,
			 strerror(errno));
		return KSFT_FAIL;
	}
	return KSFT_PASS;
}

/* Undo huge_vm(), whatever it got to. */
static void huge_vm_teardown(struct vm *vm, volatile uint8_t *huge, int fd)
{
	if (huge)
		munmap((void *)huge, HUGE_SIZE);
	if (fd >= 0)
		close(fd);
	vm_teardown(vm);
}

/*
 * arm64's stage 2 maps a 2 MiB guest_memfd folio with one block (src/arm64
 * 0006), as x86's NPT/EPT does: the guest writes a byte in each of the 512
 * pages of a GUEST_MEMFD_FLAG_HUGEPAGE file's first 2 MiB (a gmem-only
 * memslot at a 2 MiB aligned GPA) in at most 16 exits, where a plain
 * guest_memfd's 4 KiB folios take one stage-2 fault, an exit, per page (at
 * least 512: the control, in the same run). A punch of one page splits the
 * folio (mm's truncate) and zaps the block; the next pass faults each page
 * in again (at least 511 exits). The host reads the guest's bytes through
 * its mapping after each pass. 6.12 arm64 has no stat of stage-2 block
 * mappings; the VM's exits stat counts the faults.
 */
static int case_huge_block_mapping(char *why, size_t whylen)
{
	uint64_t huge_flags = GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED |
			      GUEST_MEMFD_FLAG_HUGEPAGE;
	volatile uint8_t *huge = NULL;
	int fd = -1, r, kvm;
	long plain, exits, huge_exits;
	struct vm vm;

	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0) {
		snprintf(why, whylen, "cannot open /dev/kvm: %s", strerror(errno));
		return KSFT_FAIL;
	}
	r = gmem_has_flags(kvm, huge_flags);
	close(kvm);
	if (!r) {
		snprintf(why, whylen, "GUEST_MEMFD_FLAG_HUGEPAGE not in KVM_CAP_GUEST_MEMFD_FLAGS");
		return gmem_skip_or_fail();
	}

	/* The control: a plain guest_memfd, 4 KiB folios, a fault per page. */
	r = huge_vm(&vm, GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED, &huge, &fd,
		    why, whylen);
	if (r == KSFT_PASS) {
		r = KSFT_FAIL;
		if (!touch_pass(&vm, huge, &plain, why, whylen))
			goto out;
		if (plain < HUGE_PAGES) {
			snprintf(why, whylen, "the control: 512 pages of a plain guest_memfd written in %ld exits, want >= 512 (a stage-2 fault each)",
				 plain);
			goto out;
		}
		r = KSFT_PASS;
	}
out:
	huge_vm_teardown(&vm, huge, fd);
	if (r != KSFT_PASS)
		return r;

	r = huge_vm(&vm, huge_flags, &huge, &fd, why, whylen);
	if (r != KSFT_PASS)
		goto out_huge;
	r = KSFT_FAIL;
	if (!touch_pass(&vm, huge, &exits, why, whylen))
		goto out_huge;
	if (exits > 16) {
		snprintf(why, whylen, "512 pages of a 2 MiB folio written in %ld exits, want <= 16 (one stage-2 block; a plain guest_memfd took %ld)",
			 exits, plain);
		goto out_huge;
	}
	huge_exits = exits;
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 100 * 0x1000, 0x1000)) {
		snprintf(why, whylen, "punching page 100: %s", strerror(errno));
		goto out_huge;
	}
	if (!touch_pass(&vm, huge, &exits, why, whylen))
		goto out_huge;
	if (exits < HUGE_PAGES - 1) {
		snprintf(why, whylen, "after a punch of page 100 split the folio: the 512 pages written again in %ld exits, want >= 511 (4 KiB, the block zapped)",
			 exits);
		goto out_huge;
	}
	snprintf(why, whylen, "512 pages written in %ld exits from a plain guest_memfd, %ld from a 2 MiB folio, %ld after a punch split it",
		 plain, huge_exits, exits);
	r = KSFT_PASS;
out_huge:
	huge_vm_teardown(&vm, huge, fd);
	return r;
}

static const struct gmem_case cases[] = {
	{ "guest_reads_host_pattern", case_guest_reads_host_pattern },
	{ "punch_hole_seen_by_guest", case_punch_hole_seen_by_guest },
	{ "memory_comes_from_gmem", case_memory_comes_from_gmem },
	{ "mainline_flags", case_mainline_flags },
	{ "private_memory_hidden_from_host", case_private_memory_hidden_from_host },
	{ "caps_every_vm", case_caps_every_vm },
	{ "memory_fault_exit", case_memory_fault_exit },
	{ "mte_refuses_gmem", case_mte_refuses_gmem },
	{ "hwpoison_fault_exit", case_hwpoison_fault_exit },
	{ "huge_block_mapping", case_huge_block_mapping },
};

int main(int argc, char **argv)
{
	gmem_parse_case_args(argc, argv);	/* -c TEXT: only the cases named so */
	run_cases(cases, ARRAY_SIZE(cases));
}
