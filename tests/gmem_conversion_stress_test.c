// SPDX-License-Identifier: GPL-2.0
/*
 * gmem_conversion_stress_test: in-place conversion (src/virt/0022) racing
 * host faults, hole punches and a running vCPU, for the shim tier (KASAN,
 * lockdep); runs in every x86 tier.
 *
 * One SW_PROTECTED VM created with kvm.gmem_in_place_conversion=1 (the test
 * sets it and puts it back), one MMAP | INIT_SHARED guest_memfd of NPAGES
 * pages, mapped twice (views A and B) and bound as a gmem-only memslot at
 * GPA 0 whose userspace_addr is decoy memory. Threads:
 *   - a converter: makes random ranges of pages private and shared again,
 *     the vCPU's code and data pages among them; EAGAIN (a fault in flight
 *     holds a reference) is retried; right after each conversion to private,
 *     every page of the range must SIGBUS through both views (a PTE that
 *     survived it, or a racing fault that mapped a page anyway, would not);
 *   - NOWNERS owners, each the only writer of its pages (>= FIRST_OWNED):
 *     fill a page through view A with a fresh word, read its first and last
 *     words back through view B: the word, or SIGBUS while the page is
 *     private, never anything else; now and then punch the page (it then
 *     reads 0). A fill cut short by a conversion leaves a mix of the new and
 *     the older words, which the owner remembers;
 *   - a vCPU running the guest loop over its data page (CODE_GPA, DATA_GPA,
 *     PARAM_GPA as in gmem_vcpu.h): every round must match the host's
 *     pattern, private or shared (conversion preserves contents, and KVM
 *     takes both from the file). KVM_EXIT_MEMORY_FAULT, a fault that raced a
 *     conversion, is re-entered.
 * At the end everything is made shared and every byte of every page is
 * checked through a fresh mapping against what its owner wrote.
 *
 * Runs for argv[1] seconds (default 5). TAP: one case per thread and the
 * sweep. Without kvm.gmem_in_place_conversion: SKIP, or FAIL with our
 * modules (gmem_test.h).
 */
#include <pthread.h>
#include <stdatomic.h>

#include "gmem_test.h"
#include "gmem_x86_guest.h"

#define NPAGES		64
#define FIRST_OWNED	16
#define NOWNERS		2
/*
 * Fills of one page that conversions may cut short in a row before the
 * page counts as stuck private. 32 was once exceeded by a page the
 * converter kept choosing (stock tier, session 8); a page that is really
 * stuck still fails within seconds.
 */
#define MAX_PENDING	256
#define TAG		0x3c00000000000000ULL
#define PRIVATE		KVM_MEMORY_ATTRIBUTE_PRIVATE

static long page;
static int gmem_fd;
static char *view_a, *view_b;
static atomic_bool stop;

static unsigned int rnd(unsigned int *seed)
{
	*seed = *seed * 1103515245 + 12345;
	return *seed >> 8;
}

static void param_off(void)
{
	gmem_write_file(GMEM_IN_PLACE_PARAM, "0");
}

static int set_attrs(long first, long n, uint64_t attrs)
{
	return gmem_set_attrs(gmem_fd, first * page, n * page, attrs, NULL);
}

struct owner {
	int id;
	long fills, cut, readbacks_private, punches;
	/* What each page may hold: its last whole fill and cut fills since. */
	uint64_t last[NPAGES], pending[NPAGES][MAX_PENDING];
	int npending[NPAGES];
	char failure[200];
};

/* Fill page @p through view A with @w: false if a SIGBUS cut it short. */
static bool fill_page(long p, uint64_t w)
{
	volatile uint64_t *q = (volatile uint64_t *)(view_a + p * page);
	volatile long i = 0;

	if (sigsetjmp(gmem_sigbus_jmp, 1))
		return false;
	gmem_sigbus_armed = 1;
	for (i = 0; i < page / 8; i++)
		q[i] = w;
	gmem_sigbus_armed = 0;
	return true;
}

/* Word @i of page @p through view B, or false on SIGBUS. */
static bool read_word(long p, long i, uint64_t *w)
{
	volatile uint64_t *q = (volatile uint64_t *)(view_b + p * page);

	if (sigsetjmp(gmem_sigbus_jmp, 1))
		return false;
	gmem_sigbus_armed = 1;
	*w = q[i];
	gmem_sigbus_armed = 0;
	return true;
}

static void *owner_thread(void *arg)
{
	struct owner *o = arg;
	unsigned int seed = 11 + o->id;
	uint64_t gen = 0;

	gmem_sigbus_setup();
	while (!atomic_load(&stop) && !o->failure[0]) {
		long p = FIRST_OWNED + o->id +
			 (long)(rnd(&seed) % ((NPAGES - FIRST_OWNED) / NOWNERS)) * NOWNERS;
		uint64_t w = TAG | ((uint64_t)o->id << 48) | ++gen, first, last;

		if (rnd(&seed) % 16 == 0) {
			if (fallocate(gmem_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				      p * page, page)) {
				snprintf(o->failure, sizeof(o->failure), "punch: %s", strerror(errno));
				break;
			}
			o->last[p] = 0;
			o->npending[p] = 0;
			o->punches++;
			continue;
		}
		if (!fill_page(p, w)) {
			if (o->npending[p] == MAX_PENDING) {
				snprintf(o->failure, sizeof(o->failure),
					 "page %ld: %d fills in a row cut short by conversions", p,
					 MAX_PENDING);
				break;
			}
			o->pending[p][o->npending[p]++] = w;
			o->cut++;
			continue;
		}
		o->last[p] = w;
		o->npending[p] = 0;
		o->fills++;
		if (!read_word(p, 0, &first) || !read_word(p, page / 8 - 1, &last)) {
			o->readbacks_private++;
			continue;
		}
		if (first != w || last != w) {
			snprintf(o->failure, sizeof(o->failure),
				 "page %ld: filled with %#llx through A, B reads %#llx ... %#llx", p,
				 (unsigned long long)w, (unsigned long long)first,
				 (unsigned long long)last);
			break;
		}
	}
	return NULL;
}

struct converter {
	long to_private, to_shared, eagain, vcpu_pages;
	char failure[200];
};

static void *converter_thread(void *arg)
{
	struct converter *c = arg;
	unsigned int seed = 5;

	while (!atomic_load(&stop) && !c->failure[0]) {
		long first, n;
		int r;

		if (rnd(&seed) % 4 == 0) {
			/* The vCPU's code or data page, never its parameters. */
			first = rnd(&seed) % 2 ? CODE_GPA / page : DATA_GPA / page;
			n = 1;
			c->vcpu_pages++;
		} else {
			first = FIRST_OWNED + rnd(&seed) % (NPAGES - FIRST_OWNED);
			n = 1 + rnd(&seed) % 8;
			if (first + n > NPAGES)
				n = NPAGES - first;
		}
		do {
			r = set_attrs(first, n, PRIVATE);
			if (r == -EAGAIN)
				c->eagain++;
		} while (r == -EAGAIN && !atomic_load(&stop));
		if (r == -EAGAIN)
			break;
		if (r) {
			snprintf(c->failure, sizeof(c->failure), "pages %ld-%ld to private: %s",
				 first, first + n - 1, strerror(-r));
			break;
		}
		c->to_private++;
		/* No host mapping may have survived, or come back. */
		for (long i = first; i < first + n; i++) {
			if (!gmem_sigbus(view_a + i * page, false) ||
			    !gmem_sigbus(view_b + i * page + page - 1, false)) {
				snprintf(c->failure, sizeof(c->failure),
					 "page %ld is private, but a host view still reads it", i);
				break;
			}
		}
		if (c->failure[0])
			break;
		usleep(rnd(&seed) % 2000);
		r = set_attrs(first, n, 0);
		if (r) {
			snprintf(c->failure, sizeof(c->failure), "pages %ld-%ld to shared: %s",
				 first, first + n - 1, strerror(-r));
			break;
		}
		c->to_shared++;
	}
	return NULL;
}

struct vcpu_stats {
	struct vm *vm;
	long rounds, memory_faults;
	char failure[200];
};

/* Memory-fault exits tolerated between two guest rounds. */
#define MAX_FAULTS_IN_A_ROW	1000

/*
 * Rounds of the guest loop until told to stop. Each must match the pattern
 * the host put in the data page at the start.
 */
static void *vcpu_thread(void *arg)
{
	struct vcpu_stats *v = arg;
	struct kvm_run *run = v->vm->run;
	volatile uint8_t *params = (volatile uint8_t *)view_b + PARAM_GPA;
	int in_a_row = 0;

	params[P_SEED] = 0x21;
	params[P_STEP] = 5;
	put16(params + P_LEN, DATA_LEN);
	put16(params + P_START, DATA_GPA);
	while (!atomic_load(&stop)) {
		if (ioctl(v->vm->vcpu, KVM_RUN, 0)) {
			if (errno == EINTR)
				continue;
			/*
			 * A fault that raced a conversion: re-enter, but a run
			 * of them without a guest round in between means the
			 * vCPU can never make progress.
			 */
			if (errno == EFAULT && run->exit_reason == KVM_EXIT_MEMORY_FAULT &&
			    ++in_a_row <= MAX_FAULTS_IN_A_ROW) {
				v->memory_faults++;
				continue;
			}
			if (in_a_row > MAX_FAULTS_IN_A_ROW) {
				snprintf(v->failure, sizeof(v->failure),
					 "%d memory-fault exits in a row (gpa %#llx, flags %#llx) without a guest round",
					 in_a_row, (unsigned long long)run->memory_fault.gpa,
					 (unsigned long long)run->memory_fault.flags);
				break;
			}
			snprintf(v->failure, sizeof(v->failure), "KVM_RUN: %s (exit %u, %s)",
				 strerror(errno), run->exit_reason, exit_name(run->exit_reason));
			break;
		}
		if (run->exit_reason == KVM_EXIT_INTR)
			continue;
		if (run->exit_reason != KVM_EXIT_IO || run->io.port != IO_PORT) {
			snprintf(v->failure, sizeof(v->failure), "exit %u (%s)", run->exit_reason,
				 exit_name(run->exit_reason));
			break;
		}
		if (*((uint8_t *)run + run->io.data_offset) != STATUS_MATCH) {
			snprintf(v->failure, sizeof(v->failure),
				 "round %ld: the guest saw its data page differ at %#x", v->rounds + 1,
				 get16(params + A_STOP));
			break;
		}
		v->rounds++;
		in_a_row = 0;
	}
	return NULL;
}

/* Is @w something page @p may hold: its owner's last fill or a cut one? */
static bool allowed(struct owner *o, long p, uint64_t w)
{
	if (w == o->last[p])
		return true;
	for (int i = 0; i < o->npending[p]; i++)
		if (w == o->pending[p][i])
			return true;
	return false;
}

int main(int argc, char **argv)
{
	int seconds = argc > 1 ? atoi(argv[1]) : 5;
	static struct owner owners[NOWNERS];
	struct converter conv = {};
	struct vcpu_stats vstats = {};
	struct kvm_userspace_memory_region2 region;
	struct vm vm = { .kvm = -1, .vm = -1, .vcpu = -1, .gmem = -1 };
	pthread_t tid[NOWNERS + 2];
	char why[200] = "";
	long bad = 0, first_bad = -1;
	uint64_t *sweep;
	void *decoy;

	page = getpagesize();
	gmem_sigbus_setup();
	vm.kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (vm.kvm < 0)
		ksft_exit_skip("/dev/kvm: %s\n", strerror(errno));
	if (!gmem_write_file(GMEM_IN_PLACE_PARAM, "1")) {
		if (gmem_ours())
			ksft_exit_fail_msg("no kvm.gmem_in_place_conversion in our modules\n");
		ksft_exit_skip("no kvm.gmem_in_place_conversion (not our modules)\n");
	}
	atexit(param_off);

	vm.vm = ioctl(vm.kvm, KVM_CREATE_VM, KVM_X86_SW_PROTECTED_VM);
	if (vm.vm < 0)
		ksft_exit_fail_msg("KVM_CREATE_VM: %s\n", strerror(errno));
	gmem_fd = gmem_create(vm.vm, NPAGES * page,
			      GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED);
	if (gmem_fd < 0)
		ksft_exit_fail_msg("KVM_CREATE_GUEST_MEMFD: %s\n", strerror(-gmem_fd));
	vm.gmem = gmem_fd;
	view_a = gmem_map(gmem_fd, NPAGES * page);
	view_b = gmem_map(gmem_fd, NPAGES * page);
	decoy = mmap(NULL, NPAGES * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (view_a == MAP_FAILED || view_b == MAP_FAILED || decoy == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	memset(decoy, 0xa5, NPAGES * page);
	region = (struct kvm_userspace_memory_region2){
		.slot = 0,
		.flags = KVM_MEM_GUEST_MEMFD,
		.memory_size = NPAGES * page,
		.userspace_addr = (uintptr_t)decoy,
		.guest_memfd = gmem_fd,
	};
	if (ioctl(vm.vm, KVM_SET_USER_MEMORY_REGION2, &region))
		ksft_exit_fail_msg("KVM_SET_USER_MEMORY_REGION2: %s\n", strerror(errno));
	vm.mem = (volatile uint8_t *)view_b;
	memcpy(view_a + CODE_GPA, guest_code, sizeof(guest_code));
	for (unsigned int i = 0; i < DATA_LEN; i++)
		view_a[DATA_GPA + i] = (uint8_t)(0x21 + i * 5);
	if (vm_create_vcpu(&vm, why, sizeof(why)) != KSFT_PASS ||
	    vcpu_real_mode_at_code(vm.vcpu, why, sizeof(why)) != KSFT_PASS)
		ksft_exit_fail_msg("vCPU: %s\n", why);
	vstats.vm = &vm;

	ksft_print_header();
	ksft_set_plan(NOWNERS + 3);

	for (int i = 0; i < NOWNERS; i++) {
		owners[i].id = i;
		pthread_create(&tid[i], NULL, owner_thread, &owners[i]);
	}
	pthread_create(&tid[NOWNERS], NULL, converter_thread, &conv);
	pthread_create(&tid[NOWNERS + 1], NULL, vcpu_thread, &vstats);
	sleep(seconds);
	atomic_store(&stop, true);
	for (int i = 0; i < NOWNERS + 2; i++)
		pthread_join(tid[i], NULL);

	for (int i = 0; i < NOWNERS; i++) {
		struct owner *o = &owners[i];

		ksft_test_result(!o->failure[0] && o->fills > 0,
				 "owner %d: %ld whole fills read back, %ld cut short and %ld read-backs SIGBUSed by conversions, %ld punches%s%s\n",
				 i, o->fills, o->cut, o->readbacks_private, o->punches,
				 o->failure[0] ? ": " : "", o->failure);
	}
	/* The conversions must have hit the owners, or nothing raced. */
	ksft_test_result(!conv.failure[0] && conv.to_private > 0 &&
			 owners[0].cut + owners[0].readbacks_private +
			 owners[1].cut + owners[1].readbacks_private > 0,
			 "converter: %ld to private (%ld of the vCPU's pages), %ld back to shared, %ld EAGAIN retried%s%s\n",
			 conv.to_private, conv.vcpu_pages, conv.to_shared, conv.eagain,
			 conv.failure[0] ? ": " : "", conv.failure);
	ksft_test_result(!vstats.failure[0] && vstats.rounds > 0,
			 "vCPU: %ld guest rounds matched, %ld memory-fault exits re-entered%s%s\n",
			 vstats.rounds, vstats.memory_faults, vstats.failure[0] ? ": " : "",
			 vstats.failure);

	if (set_attrs(0, NPAGES, 0))
		ksft_exit_fail_msg("making the whole file shared: %s\n", strerror(errno));
	sweep = mmap(NULL, NPAGES * page, PROT_READ, MAP_SHARED, gmem_fd, 0);
	if (sweep == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	for (long p = FIRST_OWNED; p < NPAGES; p++) {
		struct owner *o = &owners[(p - FIRST_OWNED) % NOWNERS];

		for (long i = 0; i < page / 8; i++) {
			if (!allowed(o, p, sweep[p * page / 8 + i])) {
				if (first_bad < 0)
					ksft_print_msg("page %ld word %ld: %#llx, its owner wrote %#llx last\n",
						       p, i, (unsigned long long)sweep[p * page / 8 + i],
						       (unsigned long long)o->last[p]);
				first_bad = p;
				bad++;
			}
		}
	}
	for (unsigned int i = 0; i < DATA_LEN; i++) {
		if (((uint8_t *)sweep)[DATA_GPA + i] != (uint8_t)(0x21 + i * 5)) {
			ksft_print_msg("the vCPU's data page differs at byte %u\n", i);
			bad++;
			break;
		}
	}
	ksft_test_result(!bad, "sweep: every byte of %d pages is what its owner wrote (%ld words are not)\n",
			 NPAGES - FIRST_OWNED, bad);
	munmap(sweep, NPAGES * page);
	vm.mem = NULL;
	vm_teardown(&vm);
	munmap(view_a, NPAGES * page);
	munmap(view_b, NPAGES * page);
	munmap(decoy, NPAGES * page);
	ksft_finished();
}
