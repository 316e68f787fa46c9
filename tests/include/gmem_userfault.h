/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The rounds of the KVM_MEM_USERFAULT tests (gmem_userfault_test,
 * gmem_uffd_test's vCPU case): gmem_x86_guest.h's guest checks one page of
 * the memslot against that page's own pattern, and a round either reports
 * or ends in the userfault exit for the page. Layout: gmem_vcpu.h.
 */
#ifndef GMEM_USERFAULT_H
#define GMEM_USERFAULT_H

#include "gmem_x86_guest.h"

#define GMEM_UF_PAGE	0x1000		/* the guest's page: the bitmap's unit */

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

/*
 * Run the guest over page @p with @seed/@step: the status it reported, or
 * ROUND_USERFAULT with *@gpa the page it exited for, or -1 with @why.
 */
static inline int page_round(struct vm *vm, int p, uint8_t seed, uint8_t step, uint64_t *gpa,
			     char *why, size_t whylen)
{
	return guest_round_at(vm, p * GMEM_UF_PAGE, GMEM_UF_PAGE, seed, step, gpa, why, whylen);
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

/* A round on page @p that must end in the userfault exit for that page. */
static inline bool round_exits(struct vm *vm, int p, uint8_t seed, uint8_t step,
			       char *why, size_t whylen)
{
	uint64_t gpa = 0;
	int r = page_round(vm, p, seed, step, &gpa, why, whylen);

	if (r == ROUND_USERFAULT && gpa == (uint64_t)p * GMEM_UF_PAGE)
		return true;
	if (r != -1)
		snprintf(why, whylen, "page %d: round %d, exit gpa %#llx; want the userfault exit for it",
			 p, r, (unsigned long long)gpa);
	return false;
}

#endif /* GMEM_USERFAULT_H */
