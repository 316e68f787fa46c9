/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The guest and the rounds of the KVM_MEM_USERFAULT tests (gmem_userfault_test,
 * gmem_uffd_test's vCPU case): a real-mode guest that checks any one page of
 * the memslot against a per-page pattern, and a round that either reports or
 * ends in the userfault exit for the page. Layout: gmem_vcpu.h.
 */
#ifndef GMEM_USERFAULT_H
#define GMEM_USERFAULT_H

#include "gmem_x86_guest.h"

#define GMEM_UF_PAGE	0x1000		/* the guest's page: the bitmap's unit */

#define P_START		10		/* u16 in the parameter block: data address */

/*
 * gmem_x86_guest.h's guest with the data address taken from the parameter
 * block (mov 10(%di), %si) instead of fixed at DATA_GPA: one round checks
 * P_LEN bytes from P_START against seed + i * step.
 */
static const uint8_t guest_any_page[] = {
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

/* Every snapshot page differs: a page restored to the wrong place fails. */
static inline uint8_t page_seed(int p)
{
	return 0x30 + p * 7;
}

static inline uint8_t page_step(int p)
{
	return 1 + p % 5;
}

static inline void snapshot_page(uint8_t *buf, int p)
{
	for (long i = 0; i < GMEM_UF_PAGE; i++)
		buf[i] = page_seed(p) + i * page_step(p);
}

#define ROUND_USERFAULT	(-2)	/* the round exited for a userfault page */

/*
 * Run the guest over page @p with @seed/@step: the status it reported, or
 * ROUND_USERFAULT with *@gpa the page it exited for, or -1 with @why.
 */
static inline int page_round(struct vm *vm, int p, uint8_t seed, uint8_t step, uint64_t *gpa,
		      char *why, size_t whylen)
{
	volatile uint8_t *params = vm->mem + PARAM_GPA;
	struct kvm_run *run = vm->run;

	params[P_SEED] = seed;
	params[P_STEP] = step;
	put16(params + P_LEN, GMEM_UF_PAGE);
	put16(params + P_START, p * GMEM_UF_PAGE);
	params[A_STATUS] = 0;
	for (int i = 0; i < MAX_EXITS; i++) {
		if (timed_out) {
			snprintf(why, whylen, "timed out after %d s", CASE_TIMEOUT);
			return -1;
		}
		if (ioctl(vm->vcpu, KVM_RUN, 0)) {
			if (errno == EINTR)
				continue;
			if (errno == EFAULT && run->exit_reason == KVM_EXIT_MEMORY_FAULT &&
			    (run->memory_fault.flags & KVM_MEMORY_EXIT_FLAG_USERFAULT)) {
				if (run->memory_fault.size != (uint64_t)GMEM_UF_PAGE ||
				    (run->memory_fault.flags & ~KVM_MEMORY_EXIT_FLAG_USERFAULT)) {
					snprintf(why, whylen, "userfault exit: size %#llx flags %#llx",
						 (unsigned long long)run->memory_fault.size,
						 (unsigned long long)run->memory_fault.flags);
					return -1;
				}
				*gpa = run->memory_fault.gpa;
				return ROUND_USERFAULT;
			}
			snprintf(why, whylen, "KVM_RUN: %s (exit %u, %s)", strerror(errno),
				 run->exit_reason, exit_name(run->exit_reason));
			return -1;
		}
		if (run->exit_reason == KVM_EXIT_INTR)
			continue;
		if (run->exit_reason != KVM_EXIT_IO || run->io.port != IO_PORT) {
			snprintf(why, whylen, "unexpected exit %u (%s)", run->exit_reason,
				 exit_name(run->exit_reason));
			return -1;
		}
		return *((uint8_t *)run + run->io.data_offset);
	}
	snprintf(why, whylen, "no result after %d KVM_RUN exits", MAX_EXITS);
	return -1;
}

/* A round that must report @want without a userfault exit. */
static inline bool round_is(struct vm *vm, int p, uint8_t seed, uint8_t step, int want,
		     char *why, size_t whylen)
{
	uint64_t gpa = 0;
	int r = page_round(vm, p, seed, step, &gpa, why, whylen);

	if (r == ROUND_USERFAULT)
		snprintf(why, whylen, "page %d: a userfault exit for %#llx, want none", p,
			 (unsigned long long)gpa);
	else if (r >= 0 && r != want)
		snprintf(why, whylen, "page %d: the guest reported %d for seed %#x step %u, want %d",
			 p, r, seed, step, want);
	return r == want;
}

#endif /* GMEM_USERFAULT_H */
