/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The interface of tests/kmod/gmem_dmap_probe.ko, a test-only module loaded
 * in the shim guest: is a page in the kernel's direct map? Shared by the
 * module and gmem_ndm_test.
 */
#ifndef GMEM_DMAP_PROBE_H
#define GMEM_DMAP_PROBE_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define GMEM_DMAP_PROBE_FILE	"/sys/kernel/debug/gmem_dmap_probe"

struct gmem_dmap_probe {
	__s32 fd;		/* in: a guest_memfd of the caller, or -1: use @pfn */
	__u32 nr_cpus;		/* out: CPUs online */
	__u64 offset;		/* in: byte offset of the page in @fd */
	__u64 pfn;		/* in (fd < 0) or out: the page */
	__u32 present;		/* out: its direct map entry is present */
	__u32 readable_cpus;	/* out: CPUs on which a read through it worked */
	__u64 cookie;		/* in: a 64-bit value to look for */
	__u32 cookie_words;	/* out: words of the page equal to @cookie, read
				 * through its direct map entry if present */
	__u32 level;		/* out: the size its direct map entry maps,
				 * present or not: 1 4 KiB, 2 2 MiB, 3 1 GiB
				 * (x86's enum pg_level); 0 without one */
};

/* ENOENT: @fd has no page at @offset. */
#define GMEM_DMAP_PROBE		_IOWR('g', 0x70, struct gmem_dmap_probe)

#endif /* GMEM_DMAP_PROBE_H */
