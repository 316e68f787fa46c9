// SPDX-License-Identifier: GPL-2.0
/*
 * gmem_bind_test: the rules for binding guest_memfd ranges to memslots
 * (KVM_SET_USER_MEMORY_REGION2 with KVM_MEM_GUEST_MEMFD) as mainline 7.2
 * has them:
 *  - a binding whose file range overlaps another binding of the same
 *    guest_memfd is EEXIST, even where the GPAs do not overlap ("KVM:
 *    guest_memfd: Return -EEXIST for overlapping bindings"); ranges that
 *    only touch bind;
 *  - overlapping GPAs are EEXIST too;
 *  - offset + size is unsigned: an offset just below 2^63, whose sum with
 *    the size a signed type would wrap, is EINVAL, not a binding past the
 *    end of the file ("KVM: guest_memfd: Treat memslot binding offset+size
 *    as unsigned values").
 * On a SW_PROTECTED VM with a flag-less (private) guest_memfd, which both
 * our modules and Debian's bind, so the debian tier compares them.
 */
#include "gmem_test.h"
#include "gmem_x86_guest.h"

#define R		(2 * 4096UL)	/* each binding: two pages */
#define FILE_SIZE	(5 * R)
#define GPA_A		0x100000UL
#define GPA_B		0x200000UL

static int kvm_fd;

/* Slot @slot at @gpa: @size bytes of @gmem from @offset. 0 or -errno. */
static int bind(int vm, int slot, uint64_t gpa, int gmem, uint64_t offset, uint64_t size)
{
	struct kvm_userspace_memory_region2 region = {
		.slot = slot,
		.flags = KVM_MEM_GUEST_MEMFD,
		.guest_phys_addr = gpa,
		.memory_size = size,
		.guest_memfd = gmem,
		.guest_memfd_offset = offset,
	};

	return ioctl(vm, KVM_SET_USER_MEMORY_REGION2, &region) ? -errno : 0;
}

/* A SW_PROTECTED VM and its flag-less guest_memfd of FILE_SIZE. */
static int vm_and_file(int *vm, int *gmem, char *why, size_t whylen)
{
	*gmem = -1;
	*vm = ioctl(kvm_fd, KVM_CREATE_VM, KVM_X86_SW_PROTECTED_VM);
	if (*vm < 0) {
		snprintf(why, whylen, "KVM_CREATE_VM(SW_PROTECTED): %s", strerror(errno));
		return KSFT_FAIL;
	}
	*gmem = gmem_create(*vm, FILE_SIZE, 0);
	if (*gmem < 0) {
		snprintf(why, whylen, "KVM_CREATE_GUEST_MEMFD: %s", strerror(-*gmem));
		return KSFT_FAIL;
	}
	return KSFT_PASS;
}

static void close_both(int vm, int gmem)
{
	if (gmem >= 0)
		close(gmem);
	if (vm >= 0)
		close(vm);
}

static int expect(int got, int want, const char *what, char *why, size_t whylen)
{
	if (got == want)
		return KSFT_PASS;
	snprintf(why, whylen, "%s: %s, want %s", what, got ? strerror(-got) : "bound",
		 want ? strerror(-want) : "bound");
	return KSFT_FAIL;
}

/*
 * Slot 0 binds file [0, 2R) at GPA_A and slot 1 [2R, 4R) at GPA_B; slot 0,
 * deleted and re-created at GPA_A, may not take [R, 3R) or [3R, 5R), which
 * overlap slot 1's range though no GPA does; [4R, 5R) only touches it.
 */
static int file_range_overlap(char *why, size_t whylen)
{
	int vm, gmem, r;

	r = vm_and_file(&vm, &gmem, why, whylen);
	if (r == KSFT_PASS)
		r = expect(bind(vm, 0, GPA_A, gmem, 0, 2 * R), 0, "slot 0, file [0, 2R)", why, whylen);
	if (r == KSFT_PASS)
		r = expect(bind(vm, 1, GPA_B, gmem, 2 * R, 2 * R), 0, "slot 1, file [2R, 4R)", why, whylen);
	if (r == KSFT_PASS)
		r = expect(bind(vm, 0, GPA_A, gmem, 0, 0), 0, "deleting slot 0", why, whylen);
	if (r == KSFT_PASS)
		r = expect(bind(vm, 0, GPA_A, gmem, R, 2 * R), -EEXIST,
			   "slot 0 again, file [R, 3R) over slot 1's [2R, 4R)", why, whylen);
	if (r == KSFT_PASS)
		r = expect(bind(vm, 0, GPA_A, gmem, 3 * R, 2 * R), -EEXIST,
			   "slot 0 again, file [3R, 5R) over slot 1's [2R, 4R)", why, whylen);
	if (r == KSFT_PASS)
		r = expect(bind(vm, 0, GPA_A, gmem, 4 * R, R), 0,
			   "slot 0 again, file [4R, 5R), touching slot 1's", why, whylen);
	close_both(vm, gmem);
	return r;
}

/* A second slot over the first one's GPAs, from another part of the file. */
static int gpa_overlap(char *why, size_t whylen)
{
	int vm, gmem, r;

	r = vm_and_file(&vm, &gmem, why, whylen);
	if (r == KSFT_PASS)
		r = expect(bind(vm, 0, GPA_A, gmem, 0, 2 * R), 0, "slot 0 at GPA_A", why, whylen);
	if (r == KSFT_PASS)
		r = expect(bind(vm, 1, GPA_A + R, gmem, 2 * R, 2 * R), -EEXIST,
			   "slot 1 at GPA_A + R, over slot 0's GPAs", why, whylen);
	close_both(vm, gmem);
	return r;
}

/*
 * An offset just below 2^63 (page aligned) and four pages: as unsigned
 * numbers far past the end of the file, EINVAL; a signed sum would wrap
 * below zero and pass the end-of-file check.
 */
static int offset_sign_overflow(char *why, size_t whylen)
{
	uint64_t offset = (uint64_t)INT64_MAX & ~(uint64_t)(4096 - 1);
	int vm, gmem, r;

	r = vm_and_file(&vm, &gmem, why, whylen);
	if (r == KSFT_PASS)
		r = expect(bind(vm, 0, GPA_A, gmem, offset, 4 * 4096), -EINVAL,
			   "offset 2^63 - 4096, size 4 pages", why, whylen);
	if (r == KSFT_PASS)
		r = expect(bind(vm, 0, GPA_A, gmem, FILE_SIZE - R, 2 * R), -EINVAL,
			   "a range past the end of the file", why, whylen);
	close_both(vm, gmem);
	return r;
}

static const struct gmem_case cases[] = {
	{ "file range overlapping another binding: EEXIST, touching binds", file_range_overlap },
	{ "GPA range overlapping another slot: EEXIST", gpa_overlap },
	{ "offset + size past 2^63: EINVAL, not a wrapped sum", offset_sign_overflow },
};

int main(void)
{
	int types;

	kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm_fd < 0)
		ksft_exit_skip("/dev/kvm: %s\n", strerror(errno));
	types = kvm_cap(kvm_fd, KVM_CAP_VM_TYPES);
	if (!(types & (1 << KVM_X86_SW_PROTECTED_VM)))
		ksft_exit_skip("KVM_X86_SW_PROTECTED_VM not in KVM_CAP_VM_TYPES (%#x)\n", types);
	run_cases(cases, sizeof(cases) / sizeof(cases[0]));
	return 0;
}
