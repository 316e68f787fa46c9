/* SPDX-License-Identifier: GPL-2.0 */
/*
 * userfaultfd on a guest_memfd mapping (the shim kernel: mm-shim 0008/0009,
 * KVM patch 0026): the calls gmem_uffd_test and gmem_fsx make. Each returns
 * 0 or -errno, as the kernel said it.
 */
#ifndef GMEM_UFFD_H
#define GMEM_UFFD_H

#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include "gmem_test.h"

/* A non-blocking userfaultfd past UFFDIO_API with @features, or -1 with @why. */
static inline int uffd_open_features(__u64 features, char *why, size_t whylen)
{
	struct uffdio_api api = { .api = UFFD_API, .features = features };
	int fd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (fd < 0) {
		snprintf(why, whylen, "userfaultfd(): %s", strerror(errno));
		return -1;
	}
	if (ioctl(fd, UFFDIO_API, &api)) {
		snprintf(why, whylen, "UFFDIO_API: %s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static inline int uffd_open(char *why, size_t whylen)
{
	return uffd_open_features(0, why, whylen);
}

/* UFFDIO_REGISTER of [@p, @p + @len) in @mode; *@ioctls, what it takes. */
static inline int uffd_register(int uffd, volatile void *p, size_t len, __u64 mode,
				__u64 *ioctls)
{
	struct uffdio_register reg = {
		.range = { .start = (unsigned long)p, .len = len },
		.mode = mode,
	};

	if (ioctl(uffd, UFFDIO_REGISTER, &reg))
		return -errno;
	if (ioctls)
		*ioctls = reg.ioctls;
	return 0;
}

static inline int uffd_unregister(int uffd, volatile void *p, size_t len)
{
	struct uffdio_range range = { .start = (unsigned long)p, .len = len };

	return ioctl(uffd, UFFDIO_UNREGISTER, &range) ? -errno : 0;
}

static inline int uffd_copy(int uffd, volatile void *dst, const void *src, size_t len)
{
	struct uffdio_copy c = {
		.dst = (unsigned long)dst, .src = (unsigned long)src, .len = len,
	};

	return ioctl(uffd, UFFDIO_COPY, &c) ? -errno : 0;
}

static inline int uffd_zeropage(int uffd, volatile void *dst, size_t len)
{
	struct uffdio_zeropage z = { .range = { .start = (unsigned long)dst, .len = len } };

	return ioctl(uffd, UFFDIO_ZEROPAGE, &z) ? -errno : 0;
}

static inline int uffd_continue(int uffd, volatile void *dst, size_t len)
{
	struct uffdio_continue c = { .range = { .start = (unsigned long)dst, .len = len } };

	return ioctl(uffd, UFFDIO_CONTINUE, &c) ? -errno : 0;
}

static inline int uffd_wake(int uffd, volatile void *dst, size_t len)
{
	struct uffdio_range w = { .start = (unsigned long)dst, .len = len };

	return ioctl(uffd, UFFDIO_WAKE, &w) ? -errno : 0;
}

#endif
