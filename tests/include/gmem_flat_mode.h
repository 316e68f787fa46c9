/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A vCPU in 32-bit flat protected mode without paging (every segment at base
 * 0, limit 4 GiB): the guests of gmem_bench and gmem_huge_test reach every
 * byte of a memslot by its guest-physical address.
 */
#ifndef GMEM_FLAT_MODE_H
#define GMEM_FLAT_MODE_H

#include <sys/ioctl.h>
#include <linux/kvm.h>

/* 0, or -1 with errno as the failing ioctl left it. */
static inline int vcpu_set_flat_mode(int vcpu)
{
	struct kvm_segment seg = {
		.limit = 0xffffffff, .present = 1, .db = 1, .s = 1, .g = 1,
	};
	struct kvm_sregs sregs;

	if (ioctl(vcpu, KVM_GET_SREGS, &sregs))
		return -1;
	seg.type = 11;		/* code: execute/read, accessed */
	seg.selector = 8;
	sregs.cs = seg;
	seg.type = 3;		/* data: read/write, accessed */
	seg.selector = 16;
	sregs.ds = sregs.es = sregs.ss = sregs.fs = sregs.gs = seg;
	sregs.cr0 |= 1;		/* PE, no paging */
	return ioctl(vcpu, KVM_SET_SREGS, &sregs);
}

#endif /* GMEM_FLAT_MODE_H */
