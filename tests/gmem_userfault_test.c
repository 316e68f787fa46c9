// SPDX-License-Identifier: GPL-2.0
/*
 * gmem_userfault_test: KVM_MEM_USERFAULT (the KVM Userfault proposal; our
 * src/virt/0027): a vCPU's fault on a page whose bit is set in the memslot's
 * userfault bitmap exits to the VMM with KVM_EXIT_MEMORY_FAULT and
 * KVM_MEMORY_EXIT_FLAG_USERFAULT before KVM allocates anything; the VMM
 * restores the page, clears the bit and the guest reads the snapshot's
 * bytes. This is how a snapshot restore reaches the VMM on a vCPU access
 * (with userfaultfd for the host's own accesses: gmem_uffd_test).
 *
 * It needs nothing from mm: every tier with our modules must pass it.
 * Debian's modules have no KVM_CAP_USERFAULT: the whole program SKIPs there.
 */
#include <pthread.h>

#include "gmem_test.h"
#include "gmem_userfault.h"

#define FLAGS		(GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED | \
			 GUEST_MEMFD_FLAG_WRITE)
#define NPAGES		(MEM_SIZE / 0x1000)
#define FIRST_ARMED	4		/* pages 4..15 are the snapshot's */
static long page;
static int kvm_fd;

/*
 * Is page @p of the guest_memfd in its page cache (allocated), up to date or
 * not? If that cannot be told, yes: the caller's check fails.
 */
static bool resident(struct vm *vm, int p)
{
	return gmem_cached_pages(vm->gmem, p * page, page) != 0;
}

static int set_slot(struct vm *vm, __u32 flags, uint64_t gpa, void *hva,
		    unsigned long *bitmap)
{
	struct kvm_userspace_memory_region2 region = {
		.slot = 0,
		.flags = flags,
		.guest_phys_addr = gpa,
		.memory_size = MEM_SIZE,
		.userspace_addr = (uintptr_t)hva,
		.guest_memfd = vm->gmem,
		.userfault_bitmap = (uintptr_t)bitmap,
	};

	return ioctl(vm->vm, KVM_SET_USER_MEMORY_REGION2, &region) ? -errno : 0;
}

static void shuffle(int *order, int n, unsigned int seed)
{
	for (int i = n - 1; i > 0; i--) {
		int j = rand_r(&seed) % (i + 1), k = order[i];

		order[i] = order[j];
		order[j] = k;
	}
}

static int need_userfault(char *why, size_t whylen)
{
	if (kvm_cap(kvm_fd, KVM_CAP_USERFAULT) == 1)
		return KSFT_PASS;
	snprintf(why, whylen, "KVM_CAP_USERFAULT is %d", kvm_cap(kvm_fd, KVM_CAP_USERFAULT));
	return gmem_skip_or_fail();
}

/*
 * A lazy restore by exits on a guest_memfd memslot: KVM_MEM_USERFAULT set by
 * a flags-only change (the memslot keeps its guest_memfd binding), every
 * armed page in random order exits once with its gpa, before anything is
 * allocated, and after write() + clearing its bit the guest reads the
 * snapshot's page; a page whose bit is clear never exits (a hole reads
 * zeroes); with the flag cleared again the memslot still works.
 */
static int restore_by_exits(char *why, size_t whylen)
{
	unsigned long bitmap = 0;
	int order[NPAGES], exits[NPAGES] = { 0 }, n = 0;
	uint8_t *buf = malloc(page);
	struct vm vm = { .kvm = -1, .vm = -1, .vcpu = -1, .gmem = -1 };
	int r = need_userfault(why, whylen);

	if (r != KSFT_PASS || !buf)
		goto out;
	r = vm_with_written_code(&vm, FLAGS, guest_code, sizeof(guest_code), why, whylen);
	if (r != KSFT_PASS)
		goto out;
	r = KSFT_FAIL;
	for (int p = FIRST_ARMED; p < NPAGES; p++) {
		bitmap |= 1UL << p;
		order[n++] = p;
	}
	if (set_slot(&vm, KVM_MEM_GUEST_MEMFD | KVM_MEM_USERFAULT, 0, (void *)vm.mem, &bitmap)) {
		snprintf(why, whylen, "setting KVM_MEM_USERFAULT on the guest_memfd memslot: %s",
			 strerror(errno));
		goto out;
	}
	/* DATA_GPA's bit is clear: a hole there reads zeroes, no exit. */
	if (!round_is(&vm, DATA_GPA / page, 0, 0, STATUS_MATCH, why, whylen))
		goto out;

	shuffle(order, n, 7);
	for (int i = 0; i < n; i++) {
		int p = order[i];

		if (!round_exits(&vm, p, page_seed(p), page_step(p), why, whylen))
			goto out;
		exits[p]++;
		if (resident(&vm, p)) {
			snprintf(why, whylen, "page %d allocated before it was restored", p);
			goto out;
		}
		snapshot_page(buf, p);
		if (pwrite(vm.gmem, buf, page, p * page) != page) {
			snprintf(why, whylen, "restoring page %d with write(): %s", p, strerror(errno));
			goto out;
		}
		__atomic_and_fetch(&bitmap, ~(1UL << p), __ATOMIC_RELEASE);
		if (!round_is(&vm, p, page_seed(p), page_step(p), STATUS_MATCH, why, whylen))
			goto out;
	}
	for (int p = FIRST_ARMED; p < NPAGES; p++) {
		if (exits[p] != 1) {
			snprintf(why, whylen, "page %d exited %d times, want once", p, exits[p]);
			goto out;
		}
	}

	/* Off again: a punched page reads zeroes without an exit. */
	if (set_slot(&vm, KVM_MEM_GUEST_MEMFD, 0, (void *)vm.mem, NULL)) {
		snprintf(why, whylen, "clearing KVM_MEM_USERFAULT: %s", strerror(errno));
		goto out;
	}
	bitmap = ~0UL;	/* ignored now */
	if (fallocate(vm.gmem, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      FIRST_ARMED * page, page)) {
		snprintf(why, whylen, "punch hole: %s", strerror(errno));
		goto out;
	}
	if (!round_is(&vm, FIRST_ARMED, 0, 0, STATUS_MATCH, why, whylen) ||
	    !round_is(&vm, NPAGES - 1, page_seed(NPAGES - 1), page_step(NPAGES - 1),
		      STATUS_MATCH, why, whylen))
		goto out;
	snprintf(why, whylen, "%d pages, one exit each", n);
	r = KSFT_PASS;
out:
	vm_teardown(&vm);
	free(buf);
	return r;
}

/*
 * Setting the flag zaps what the vCPU mapped: a page the guest read before
 * exits once its bit is set again, and shows what the VMM restored then.
 */
static int rearm_zaps(char *why, size_t whylen)
{
	unsigned long bitmap = 0;
	uint8_t *buf = malloc(page);
	struct vm vm = { .kvm = -1, .vm = -1, .vcpu = -1, .gmem = -1 };
	const int p = FIRST_ARMED;
	int r = need_userfault(why, whylen);

	if (r != KSFT_PASS || !buf)
		goto out;
	r = vm_with_written_code(&vm, FLAGS, guest_code, sizeof(guest_code), why, whylen);
	if (r != KSFT_PASS)
		goto out;
	r = KSFT_FAIL;
	memset(buf, 0x11, page);
	if (pwrite(vm.gmem, buf, page, p * page) != page ||
	    !round_is(&vm, p, 0x11, 0, STATUS_MATCH, why, whylen))
		goto out;
	bitmap = 1UL << p;
	if (set_slot(&vm, KVM_MEM_GUEST_MEMFD | KVM_MEM_USERFAULT, 0, (void *)vm.mem, &bitmap)) {
		snprintf(why, whylen, "setting KVM_MEM_USERFAULT: %s", strerror(errno));
		goto out;
	}
	/* The round resumes after the exit: it checks what the VMM restores. */
	if (!round_exits(&vm, p, 0x22, 0, why, whylen))
		goto out;
	memset(buf, 0x22, page);
	if (pwrite(vm.gmem, buf, page, p * page) != page)
		goto out;
	bitmap = 0;
	if (!round_is(&vm, p, 0x22, 0, STATUS_MATCH, why, whylen))
		goto out;
	r = KSFT_PASS;
out:
	vm_teardown(&vm);
	free(buf);
	return r;
}

/*
 * The same on a memslot of anonymous memory (KVM's GUP path): the exit,
 * a copy into the memory, the bit cleared; toggling the flag on such a
 * memslot is a plain flags-only change.
 */
static int anonymous_memslot(char *why, size_t whylen)
{
	struct vm vm = { .kvm = -1, .vm = -1, .vcpu = -1, .gmem = -1 };
	unsigned long bitmap = 1UL << FIRST_ARMED;
	uint8_t *mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct kvm_userspace_memory_region2 region = {
		.memory_size = MEM_SIZE,
		.userspace_addr = (uintptr_t)mem,
	};
	int r = need_userfault(why, whylen);

	if (r != KSFT_PASS || mem == MAP_FAILED)
		goto out;
	r = KSFT_FAIL;
	vm.kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	vm.vm = ioctl(vm.kvm, KVM_CREATE_VM, 0);
	if (vm.vm < 0 || ioctl(vm.vm, KVM_SET_USER_MEMORY_REGION2, &region)) {
		snprintf(why, whylen, "VM with an anonymous memslot: %s", strerror(errno));
		goto out;
	}
	vm.mem = mem;	/* page_round() writes the parameters through it */
	memcpy(mem + CODE_GPA, guest_code, sizeof(guest_code));
	if (vm_create_vcpu(&vm, why, whylen) != KSFT_PASS ||
	    vcpu_real_mode_at_code(vm.vcpu, why, whylen) != KSFT_PASS)
		goto out;
	region.flags = KVM_MEM_USERFAULT;
	region.userfault_bitmap = (uintptr_t)&bitmap;
	if (ioctl(vm.vm, KVM_SET_USER_MEMORY_REGION2, &region)) {
		snprintf(why, whylen, "setting KVM_MEM_USERFAULT: %s", strerror(errno));
		goto out;
	}
	if (!round_exits(&vm, FIRST_ARMED, page_seed(FIRST_ARMED), page_step(FIRST_ARMED),
			 why, whylen))
		goto out;
	snapshot_page(mem + FIRST_ARMED * page, FIRST_ARMED);
	bitmap = 0;
	if (!round_is(&vm, FIRST_ARMED, page_seed(FIRST_ARMED), page_step(FIRST_ARMED),
		      STATUS_MATCH, why, whylen))
		goto out;
	region.flags = 0;
	region.userfault_bitmap = 0;
	if (ioctl(vm.vm, KVM_SET_USER_MEMORY_REGION2, &region)) {
		snprintf(why, whylen, "clearing KVM_MEM_USERFAULT: %s", strerror(errno));
		goto out;
	}
	if (!round_is(&vm, FIRST_ARMED, page_seed(FIRST_ARMED), page_step(FIRST_ARMED),
		      STATUS_MATCH, why, whylen))
		goto out;
	r = KSFT_PASS;
out:
	vm.mem = NULL;
	if (mem != MAP_FAILED)
		munmap(mem, MEM_SIZE);
	vm_teardown(&vm);
	return r;
}

/*
 * Bad input gets a clean errno: a kernel address as the bitmap, the flag
 * through the old ioctl (no bitmap field), moving a guest_memfd memslot with
 * the flag; pre-faulting an armed page is EFAULT and allocates nothing; an
 * unreadable bitmap makes KVM_RUN fail with EFAULT.
 */
static int bad_input(char *why, size_t whylen)
{
	struct vm vm = { .kvm = -1, .vm = -1, .vcpu = -1, .gmem = -1 };
	unsigned long bitmap = 1UL << FIRST_ARMED;
	struct kvm_pre_fault_memory pre = { .gpa = FIRST_ARMED * page, .size = page };
	struct kvm_userspace_memory_region v1 = {
		.flags = KVM_MEM_USERFAULT, .memory_size = MEM_SIZE,
	};
	unsigned long *gone;
	uint64_t gpa = 0;
	int r = need_userfault(why, whylen), e, s;

	if (r != KSFT_PASS)
		goto out;
	r = vm_with_written_code(&vm, FLAGS, guest_code, sizeof(guest_code), why, whylen);
	if (r != KSFT_PASS)
		goto out;
	r = KSFT_FAIL;
	e = set_slot(&vm, KVM_MEM_GUEST_MEMFD | KVM_MEM_USERFAULT, 0, (void *)vm.mem,
		     (unsigned long *)0xffff888000000000UL);
	if (e != -EINVAL) {
		snprintf(why, whylen, "a kernel address as the bitmap: %s, want EINVAL", strerror(-e));
		goto out;
	}
	v1.slot = 1;
	v1.guest_phys_addr = 0x100000;
	v1.userspace_addr = (uintptr_t)vm.mem;
	if (!ioctl(vm.vm, KVM_SET_USER_MEMORY_REGION, &v1) || errno != EINVAL) {
		snprintf(why, whylen, "KVM_MEM_USERFAULT by KVM_SET_USER_MEMORY_REGION: %s, want EINVAL",
			 strerror(errno));
		goto out;
	}
	e = set_slot(&vm, KVM_MEM_GUEST_MEMFD | KVM_MEM_USERFAULT, 0x100000, (void *)vm.mem, &bitmap);
	if (e != -EINVAL) {
		snprintf(why, whylen, "moving a guest_memfd memslot: %s, want EINVAL", strerror(-e));
		goto out;
	}
	{
		struct kvm_userspace_memory_region2 other = {
			.flags = KVM_MEM_GUEST_MEMFD | KVM_MEM_USERFAULT,
			.memory_size = MEM_SIZE,
			.userspace_addr = (uintptr_t)vm.mem,
			.guest_memfd = vm.gmem,
			.guest_memfd_offset = page,
			.userfault_bitmap = (uintptr_t)&bitmap,
		};

		e = ioctl(vm.vm, KVM_SET_USER_MEMORY_REGION2, &other) ? errno : 0;
		if (e != EINVAL) {
			snprintf(why, whylen, "a flags-only change naming another guest_memfd offset: %s, want EINVAL",
				 e ? strerror(e) : "taken");
			goto out;
		}
	}
	if (set_slot(&vm, KVM_MEM_GUEST_MEMFD | KVM_MEM_USERFAULT, 0, (void *)vm.mem, &bitmap)) {
		snprintf(why, whylen, "setting KVM_MEM_USERFAULT: %s", strerror(errno));
		goto out;
	}
	/* Our modules have it: its absence is a failure, not a skip. */
	if (kvm_cap(vm.vm, KVM_CAP_PRE_FAULT_MEMORY) != 1) {
		snprintf(why, whylen, "no KVM_CAP_PRE_FAULT_MEMORY with our modules");
		goto out;
	}
	{
		e = ioctl(vm.vcpu, KVM_PRE_FAULT_MEMORY, &pre) ? errno : 0;
		if (e != EFAULT) {
			snprintf(why, whylen, "KVM_PRE_FAULT_MEMORY of an armed page: %s, want EFAULT",
				 e ? strerror(e) : "mapped it");
			goto out;
		}
		if (resident(&vm, FIRST_ARMED)) {
			snprintf(why, whylen, "KVM_PRE_FAULT_MEMORY allocated an armed page");
			goto out;
		}
	}

	/*
	 * A new bitmap takes effect without clearing the flag; one that goes
	 * away makes KVM_RUN fail with EFAULT, without an exit.
	 */
	gone = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (gone == MAP_FAILED)
		goto out;
	*gone = 1UL << FIRST_ARMED;
	if (set_slot(&vm, KVM_MEM_GUEST_MEMFD | KVM_MEM_USERFAULT, 0, (void *)vm.mem, gone)) {
		snprintf(why, whylen, "a new bitmap: %s", strerror(errno));
		goto out;
	}
	munmap(gone, page);
	vm.run->exit_reason = KVM_EXIT_UNKNOWN;
	s = page_round(&vm, FIRST_ARMED + 1, 0, 0, &gpa, why, whylen);
	if (s != -1 || vm.run->exit_reason == KVM_EXIT_MEMORY_FAULT || !strstr(why, "Bad address")) {
		snprintf(why, whylen, "an unmapped bitmap: round %d exit %u, want KVM_RUN to fail with EFAULT",
			 s, vm.run->exit_reason);
		goto out;
	}
	why[0] = 0;
	r = KSFT_PASS;
out:
	vm_teardown(&vm);
	return r;
}

/*
 * No bitmap (NULL) is taken, as the proposal takes any user address and
 * Firecracker's stack (its set_memory_region_test) expects: it is a bitmap
 * that cannot be read, so KVM_RUN fails with EFAULT and nothing is
 * allocated.
 */
static int no_bitmap(char *why, size_t whylen)
{
	struct vm vm = { .kvm = -1, .vm = -1, .vcpu = -1, .gmem = -1 };
	uint64_t gpa = 0;
	int r = need_userfault(why, whylen), e, s;

	if (r != KSFT_PASS)
		goto out;
	r = vm_with_written_code(&vm, FLAGS, guest_code, sizeof(guest_code), why, whylen);
	if (r != KSFT_PASS)
		goto out;
	r = KSFT_FAIL;
	e = set_slot(&vm, KVM_MEM_GUEST_MEMFD | KVM_MEM_USERFAULT, 0, (void *)vm.mem, NULL);
	if (e) {
		snprintf(why, whylen, "KVM_MEM_USERFAULT without a bitmap: %s, want it taken", strerror(-e));
		goto out;
	}
	vm.run->exit_reason = KVM_EXIT_UNKNOWN;
	s = page_round(&vm, FIRST_ARMED + 1, 0, 0, &gpa, why, whylen);
	if (s != -1 || vm.run->exit_reason == KVM_EXIT_MEMORY_FAULT || !strstr(why, "Bad address") ||
	    resident(&vm, FIRST_ARMED + 1)) {
		snprintf(why, whylen, "no bitmap: round %d exit %u, page %s, want KVM_RUN to fail with EFAULT, nothing allocated",
			 s, vm.run->exit_reason, resident(&vm, FIRST_ARMED + 1) ? "allocated" : "a hole");
		goto out;
	}
	why[0] = 0;
	r = KSFT_PASS;
out:
	vm_teardown(&vm);
	return r;
}

#define CLOCK_PAGE		9	/* armed, not a page the guest checks */

/*
 * KVM's own mapping of a page not restored yet (issue 39, 1): kvmclock
 * placed on an armed page of a gmem-only memslot. Setting the MSR allocates
 * nothing; the clock update exits to the VMM with the page's gpa, as a
 * vCPU's fault there would; after the restore the clock is written over the
 * snapshot's page and the rest of the page is the snapshot's. Before the fix
 * the pfn cache took the page from guest_memfd, which zeroed a hole: the
 * page was allocated at KVM_SET_MSRS and the snapshot lost.
 */
static int kvmclock_not_restored(char *why, size_t whylen)
{
	struct vm vm = { .kvm = -1, .vm = -1, .vcpu = -1, .gmem = -1 };
	unsigned long bitmap = 1UL << CLOCK_PAGE;
	uint8_t *want = malloc(page);
	uint64_t gpa = 0;
	int r = need_userfault(why, whylen), s, e;

	if (r != KSFT_PASS || !want)
		goto out;
	r = vm_with_written_code(&vm, FLAGS, guest_code, sizeof(guest_code), why, whylen);
	if (r != KSFT_PASS)
		goto out;
	r = KSFT_FAIL;
	if (set_slot(&vm, KVM_MEM_GUEST_MEMFD | KVM_MEM_USERFAULT, 0, (void *)vm.mem, &bitmap)) {
		snprintf(why, whylen, "setting KVM_MEM_USERFAULT: %s", strerror(errno));
		goto out;
	}
	e = gmem_set_kvmclock(&vm, CLOCK_PAGE * page);
	if (e) {
		snprintf(why, whylen, "KVM_SET_MSRS(MSR_KVM_SYSTEM_TIME_NEW): %s", strerror(-e));
		goto out;
	}
	if (resident(&vm, CLOCK_PAGE)) {
		snprintf(why, whylen, "kvmclock's page %d was allocated before it was restored",
			 CLOCK_PAGE);
		goto out;
	}
	/* Any round: the clock update comes first and exits. */
	s = page_round(&vm, DATA_GPA / page, 0, 0, &gpa, why, whylen);
	if (s != ROUND_USERFAULT || gpa != (uint64_t)CLOCK_PAGE * page) {
		if (s != -1)
			snprintf(why, whylen, "first KVM_RUN: round %d, exit gpa %#llx; want the userfault exit for kvmclock's page %#lx",
				 s, (unsigned long long)gpa, CLOCK_PAGE * page);
		goto out;
	}
	if (resident(&vm, CLOCK_PAGE)) {
		snprintf(why, whylen, "kvmclock's page allocated by the exit");
		goto out;
	}
	snapshot_page(want, CLOCK_PAGE);
	if (pwrite(vm.gmem, want, page, CLOCK_PAGE * page) != page) {
		snprintf(why, whylen, "restoring kvmclock's page: %s", strerror(errno));
		goto out;
	}
	__atomic_and_fetch(&bitmap, ~(1UL << CLOCK_PAGE), __ATOMIC_RELEASE);
	if (!round_is(&vm, DATA_GPA / page, 0, 0, STATUS_MATCH, why, whylen))
		goto out;
	/* guest_memfd has no read(): through the VMM's mapping. */
	if (!gmem_kvmclock_over(vm.mem + CLOCK_PAGE * page, want, page, why, whylen))
		goto out;
	r = KSFT_PASS;
out:
	vm_teardown(&vm);
	free(want);
	return r;
}

/* The vCPU thread of flag_toggles: rounds on a page that keeps being punched. */
struct toggler {
	struct vm *vm;
	volatile int stop;
	int rounds;
	char why[256];
};

#define PUNCHED_PAGE	8

static void *zero_rounds(void *arg)
{
	struct toggler *t = arg;

	while (!t->stop) {
		if (!round_is(t->vm, PUNCHED_PAGE, 0, 0, STATUS_MATCH, t->why, sizeof(t->why)))
			break;
		t->rounds++;
	}
	t->stop = 1;
	return NULL;
}

/*
 * Toggling KVM_MEM_USERFAULT on a running VM (issue 39, 4): a flags-only
 * change publishes a copy of the memslot before the guest_memfd binding
 * moves to it; a vCPU faulting in between (the page is punched again and
 * again) must be served, not fail KVM_RUN with EIO after a WARN. The bitmap
 * is all clear: no round may exit.
 */
static int flag_toggles(char *why, size_t whylen)
{
	struct vm vm = { .kvm = -1, .vm = -1, .vcpu = -1, .gmem = -1 };
	struct toggler t = { .vm = &vm };
	unsigned long bitmap = 0;
	const int toggles = 400;
	pthread_t vcpu;
	int r = need_userfault(why, whylen), i;

	if (r != KSFT_PASS)
		goto out;
	r = vm_with_written_code(&vm, FLAGS, guest_code, sizeof(guest_code), why, whylen);
	if (r != KSFT_PASS)
		goto out;
	r = KSFT_FAIL;
	pthread_create(&vcpu, NULL, zero_rounds, &t);
	for (i = 0; i < toggles && !t.stop; i++) {
		if (set_slot(&vm, KVM_MEM_GUEST_MEMFD | (i & 1 ? 0 : KVM_MEM_USERFAULT), 0,
			     (void *)vm.mem, i & 1 ? NULL : &bitmap)) {
			snprintf(why, whylen, "toggle %d: %s", i, strerror(errno));
			break;
		}
		fallocate(vm.gmem, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			  PUNCHED_PAGE * page, page);
	}
	t.stop = 1;
	pthread_join(vcpu, NULL);
	if (t.why[0]) {
		snprintf(why, whylen, "after %d toggles, round %d: %s", i, t.rounds, t.why);
		goto out;
	}
	if (i < toggles || t.rounds < 10) {
		if (i == toggles)
			snprintf(why, whylen, "only %d rounds ran during %d toggles", t.rounds, i);
		goto out;
	}
	snprintf(why, whylen, "%d toggles, %d rounds", i, t.rounds);
	r = KSFT_PASS;
out:
	vm_teardown(&vm);
	return r;
}

static const struct gmem_case cases[] = {
	{ "restore by exits", restore_by_exits },
	{ "setting the flag zaps", rearm_zaps },
	{ "anonymous memslot", anonymous_memslot },
	{ "bad input", bad_input },
	{ "no bitmap: taken, and KVM_RUN fails with EFAULT", no_bitmap },
	{ "kvmclock on a page not restored yet", kvmclock_not_restored },
	{ "toggling the flag under a running vCPU", flag_toggles },
};

int main(int argc, char **argv)
{
	gmem_parse_case_args(argc, argv);
	page = getpagesize();
	kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm_fd < 0)
		ksft_exit_skip("/dev/kvm: %s\n", strerror(errno));
	gmem_require_flags(kvm_fd, FLAGS, "GUEST_MEMFD_FLAG_MMAP | INIT_SHARED | WRITE");
	run_cases(cases, sizeof(cases) / sizeof(cases[0]));
	return 0;
}
