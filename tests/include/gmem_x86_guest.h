/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The x86 guest of our vCPU tests (gmem_vcpu_test, gmem_stress_test): a
 * 16-bit real-mode loop that checks the data page against the host's
 * pattern and reports through the parameter page and an OUT, the vCPU set
 * up to run it, and one checked round of it (guest_round(), as
 * gmem_vcpu.h expects). Layout and helpers: gmem_vcpu.h.
 */
#ifndef GMEM_X86_GUEST_H
#define GMEM_X86_GUEST_H

#include "gmem_vcpu.h"

#define IO_PORT		0x10		/* the guest's OUT: one round done */

/*
 * The guest, loaded at CODE_GPA, runs in real mode with all segment bases 0.
 * Each round it checks P_LEN bytes from P_START (DATA_GPA, but for the
 * userfault tests' pages) against seed + i * step and reports; KVM resumes
 * it after the OUT, and it starts the next round from the top.
 * (Hand-assembled; checked against "as" + "objdump -mi8086".)
 */
static const uint8_t guest_code[] __attribute__((unused)) = {
	0xbf, 0x00, 0x30,	/* top:    mov  $0x3000, %di   params   */
	0x8b, 0x75, 0x0a,	/*         mov  10(%di), %si   start    */
	0x8a, 0x1d,		/*         mov  (%di), %bl     seed     */
	0x8a, 0x7d, 0x01,	/*         mov  1(%di), %bh    step     */
	0x8b, 0x4d, 0x02,	/*         mov  2(%di), %cx    len      */
	0x8a, 0x04,		/* check:  mov  (%si), %al              */
	0x38, 0xd8,		/*         cmp  %bl, %al                */
	0x75, 0x09,		/*         jne  bad                     */
	0x46,			/*         inc  %si                     */
	0x00, 0xfb,		/*         add  %bh, %bl                */
	0xe2, 0xf5,		/*         loop check                   */
	0xb0, 0x01,		/*         mov  $1, %al        match    */
	0xeb, 0x02,		/*         jmp  report                  */
	0xb0, 0x02,		/* bad:    mov  $2, %al        mismatch */
	0x88, 0x45, 0x04,	/* report: mov  %al, 4(%di)    status   */
	0x89, 0x75, 0x06,	/*         mov  %si, 6(%di)    stop     */
	0xff, 0x45, 0x08,	/*         incw 8(%di)         rounds   */
	0xba, 0x10, 0x00,	/*         mov  $0x10, %dx              */
	0xee,			/*         out  %al, (%dx)              */
	0xeb, 0xd2,		/*         jmp  top                     */
};

/* Real mode, every segment at base 0 (linear address == GPA), rip at CODE_GPA. */
static inline int vcpu_real_mode_at_code(int vcpu, char *why, size_t whylen)
{
	struct kvm_sregs sregs;
	struct kvm_regs regs;

	if (ioctl(vcpu, KVM_GET_SREGS, &sregs)) {
		snprintf(why, whylen, "KVM_GET_SREGS: %s", strerror(errno));
		return KSFT_FAIL;
	}
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	sregs.ds.base = sregs.es.base = sregs.ss.base = 0;
	sregs.ds.selector = sregs.es.selector = sregs.ss.selector = 0;
	if (ioctl(vcpu, KVM_SET_SREGS, &sregs)) {
		snprintf(why, whylen, "KVM_SET_SREGS: %s", strerror(errno));
		return KSFT_FAIL;
	}
	memset(&regs, 0, sizeof(regs));
	regs.rip = CODE_GPA;
	regs.rflags = 0x2;
	regs.rsp = 0xf000;
	if (ioctl(vcpu, KVM_SET_REGS, &regs)) {
		snprintf(why, whylen, "KVM_SET_REGS: %s", strerror(errno));
		return KSFT_FAIL;
	}
	return KSFT_PASS;
}

/*
 * A default VM whose gmem-only memslot is a guest_memfd with @flags (which
 * must include GUEST_MEMFD_FLAG_WRITE), @len bytes of @code at CODE_GPA,
 * put there with pwrite() only, and vCPU 0 in real mode at it. The
 * memslot's userspace_addr is vm->mem, the file's mapping, or with @decoy
 * vm->other (vm_map_decoy()), which KVM must then never use for it. Returns
 * a KSFT_* code; vm_teardown() after, whatever it returned.
 */
static inline int vm_with_written_code_at(struct vm *vm, unsigned long long flags,
					  const uint8_t *code, size_t len, bool decoy,
					  char *why, size_t whylen)
{
	struct kvm_userspace_memory_region2 region;
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *buf = calloc(1, page);
	int r;

	vm->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (vm->kvm < 0 || !buf) {
		snprintf(why, whylen, "/dev/kvm: %s", strerror(errno));
		free(buf);
		return KSFT_FAIL;
	}
	r = vm_create_with_gmem(vm, 0, flags, why, whylen);
	if (r == KSFT_PASS && decoy && !vm_map_decoy(vm, why, whylen))
		r = KSFT_FAIL;
	if (r == KSFT_PASS) {
		region = (struct kvm_userspace_memory_region2){
			.slot = 0,
			.flags = KVM_MEM_GUEST_MEMFD,
			.memory_size = vm_mem_size(vm),
			.userspace_addr = (uintptr_t)(decoy ? vm->other : vm->mem),
			.guest_memfd = vm->gmem,
		};
		memcpy(buf, code, len);
		if (ioctl(vm->vm, KVM_SET_USER_MEMORY_REGION2, &region) ||
		    pwrite(vm->gmem, buf, page, CODE_GPA) != page) {
			snprintf(why, whylen, "memslot or pwrite of the code: %s", strerror(errno));
			r = KSFT_FAIL;
		}
	}
	if (r == KSFT_PASS)
		r = vm_create_vcpu(vm, why, whylen);
	if (r == KSFT_PASS)
		r = vcpu_real_mode_at_code(vm->vcpu, why, whylen);
	free(buf);
	return r;
}

static inline int vm_with_written_code(struct vm *vm, unsigned long long flags,
				       const uint8_t *code, size_t len, char *why, size_t whylen)
{
	return vm_with_written_code_at(vm, flags, code, len, false, why, whylen);
}

static inline const char *exit_name(unsigned int reason)
{
	switch (reason) {
	case KVM_EXIT_IO:		return "IO";
	case KVM_EXIT_HLT:		return "HLT";
	case KVM_EXIT_MMIO:		return "MMIO";
	case KVM_EXIT_SHUTDOWN:		return "SHUTDOWN";
	case KVM_EXIT_FAIL_ENTRY:	return "FAIL_ENTRY";
	case KVM_EXIT_INTERNAL_ERROR:	return "INTERNAL_ERROR";
	case KVM_EXIT_MEMORY_FAULT:	return "MEMORY_FAULT";
	default:			return "?";
	}
}

#define ROUND_USERFAULT	(-2)	/* the round exited for a KVM_MEM_USERFAULT page */

/* kvmclock (MSR_KVM_SYSTEM_TIME_NEW): KVM writes it through a pfn cache. */
#define MSR_KVM_SYSTEM_TIME_NEW	0x4b564d01
#define PVCLOCK_SIZE		32	/* struct pvclock_vcpu_time_info */

/* Place the vCPU's kvmclock at @gpa (enabled): 0, or -errno. */
static inline int gmem_set_kvmclock(struct vm *vm, uint64_t gpa)
{
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry entry;
	} msr = { .hdr.nmsrs = 1,
		  .entry = { .index = MSR_KVM_SYSTEM_TIME_NEW, .data = gpa | 1 } };

	return ioctl(vm->vcpu, KVM_SET_MSRS, &msr) == 1 ? 0 : -errno;
}

/*
 * The page @pg holds a kvmclock that KVM wrote (a stable, even version and a
 * multiplier) over @snapshot, which the rest of the page still is: true, or
 * false with @why.
 */
static inline bool gmem_kvmclock_over(const volatile uint8_t *pg, const uint8_t *snapshot,
				      long len, char *why, size_t whylen)
{
	uint32_t version, mul;

	memcpy(&version, (const void *)pg, 4);
	memcpy(&mul, (const void *)(pg + 24), 4);
	if (!version || (version & 1) || !mul) {
		snprintf(why, whylen, "kvmclock not written (version %u, mul %u)", version, mul);
		return false;
	}
	for (long i = PVCLOCK_SIZE; i < len; i++) {
		if (pg[i] != snapshot[i]) {
			snprintf(why, whylen, "byte %ld of kvmclock's page is %#x, the snapshot's %#x",
				 i, pg[i], snapshot[i]);
			return false;
		}
	}
	snprintf(why, whylen, "kvmclock version %u over the snapshot", version);
	return true;
}

/*
 * One guest round over @len bytes from @start: set the parameters, run
 * until the guest's OUT, return the status it reported (STATUS_*) or -1
 * with @why filled. With @uf_gpa, a userfault exit (KVM_MEM_USERFAULT) ends
 * the round too: ROUND_USERFAULT, and *@uf_gpa the page's address.
 */
static inline int guest_round_at(struct vm *vm, uint16_t start, uint16_t len, uint8_t seed,
				 uint8_t step, uint64_t *uf_gpa, char *why, size_t whylen)
{
	volatile uint8_t *p = vm->mem + PARAM_GPA;
	struct kvm_run *run = vm->run;
	struct kvm_regs regs;

	p[P_SEED] = seed;
	p[P_STEP] = step;
	put16(p + P_LEN, len);
	put16(p + P_START, start);
	p[A_STATUS] = 0;

	for (int i = 0; i < MAX_EXITS; i++) {
		if (timed_out) {
			snprintf(why, whylen, "timed out after %d s", CASE_TIMEOUT);
			return -1;
		}
		if (ioctl(vm->vcpu, KVM_RUN, 0)) {
			if (errno == EINTR)
				continue;
			if (uf_gpa && errno == EFAULT && run->exit_reason == KVM_EXIT_MEMORY_FAULT &&
			    run->memory_fault.flags == KVM_MEMORY_EXIT_FLAG_USERFAULT &&
			    run->memory_fault.size == 0x1000) {
				*uf_gpa = run->memory_fault.gpa;
				return ROUND_USERFAULT;
			}
			snprintf(why, whylen, "KVM_RUN: %s (exit %u, %s)", strerror(errno),
				 run->exit_reason, exit_name(run->exit_reason));
			return -1;
		}
		switch (run->exit_reason) {
		case KVM_EXIT_INTR:
			continue;
		case KVM_EXIT_IO:
			if (run->io.direction != KVM_EXIT_IO_OUT || run->io.port != IO_PORT ||
			    run->io.size != 1 || run->io.count != 1) {
				snprintf(why, whylen, "unexpected I/O: dir %u port %#x size %u count %u",
					 run->io.direction, run->io.port, run->io.size, run->io.count);
				return -1;
			}
			return *((uint8_t *)run + run->io.data_offset);
		case KVM_EXIT_MEMORY_FAULT:
			snprintf(why, whylen, "KVM_EXIT_MEMORY_FAULT gpa %#llx size %#llx flags %#llx",
				 (unsigned long long)run->memory_fault.gpa,
				 (unsigned long long)run->memory_fault.size,
				 (unsigned long long)run->memory_fault.flags);
			return -1;
		case KVM_EXIT_INTERNAL_ERROR:
			snprintf(why, whylen, "KVM_EXIT_INTERNAL_ERROR suberror %u",
				 run->internal.suberror);
			return -1;
		case KVM_EXIT_FAIL_ENTRY:
			snprintf(why, whylen, "KVM_EXIT_FAIL_ENTRY reason %#llx",
				 (unsigned long long)run->fail_entry.hardware_entry_failure_reason);
			return -1;
		default:
			memset(&regs, 0, sizeof(regs));
			ioctl(vm->vcpu, KVM_GET_REGS, &regs);
			snprintf(why, whylen, "unexpected exit %u (%s) at rip %#llx",
				 run->exit_reason, exit_name(run->exit_reason),
				 (unsigned long long)regs.rip);
			return -1;
		}
	}
	snprintf(why, whylen, "no result after %d KVM_RUN exits", MAX_EXITS);
	return -1;
}

/* A round over the data page (DATA_GPA). */
static inline int guest_round(struct vm *vm, uint8_t seed, uint8_t step, char *why, size_t whylen)
{
	return guest_round_at(vm, DATA_GPA, DATA_LEN, seed, step, NULL, why, whylen);
}

#endif /* GMEM_X86_GUEST_H */
