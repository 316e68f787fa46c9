// SPDX-License-Identifier: GPL-2.0
/*
 * gmem_fault_punch_race_test: host faults on a shared guest_memfd while hole
 * punches and truncation attempts run, for the fault path that takes no
 * filemap_invalidate_lock (src/virt/0019). Meant for the shim tier (lockdep,
 * KASAN), runs in every x86 tier.
 *
 * One default VM, one GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED
 * file (both ABIs have it), mapped twice (view A, view B). Threads:
 *   - NOWNERS owners: page p belongs to owner p % NOWNERS, the only thread
 *     that writes it. An owner writes a fresh tagged word through view A and
 *     reads it back through view B: B must show that word or 0 (a punch came
 *     in between); if B shows 0, A must show 0 too: a PTE that still maps a
 *     folio the punch took out of the file (an orphan) would show the old
 *     word. Now and then it zaps its view A page (MADV_DONTNEED) so the next
 *     access faults again.
 *   - a puncher: FALLOC_FL_PUNCH_HOLE of random ranges, now and then the
 *     whole file, so faults keep allocating folios that punches remove.
 *   - a truncater: ftruncate() to 0 and to a page must fail (EINVAL, the size
 *     of a guest_memfd never changes), and fallocate() of the whole file
 *     (which takes the invalidate lock shared) runs between them.
 * At the end every owned page is checked through a fresh mapping: exactly
 * the last word its owner saw, or 0.
 *
 * Runs for argv[1] seconds (default 5). TAP: one case per owner, the puncher,
 * the truncater and the sweep.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/falloc.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "kselftest.h"
#include "gmem_test.h"

#define NPAGES		64
#define NOWNERS		2
#define TAG		0x5a00000000000000ULL

static long page;
static int gmem_fd;
static char *view_a, *view_b;
static atomic_bool stop;

struct owner {
	int id;
	long rounds, zero_seen, zaps;
	uint64_t last[NPAGES];	/* what the owner last saw in its pages */
	char failure[160];
};

static volatile uint64_t *word(char *view, long p)
{
	return (volatile uint64_t *)(view + p * page);
}

static unsigned int rnd(unsigned int *seed)
{
	*seed = *seed * 1103515245 + 12345;
	return *seed >> 8;
}

static void *owner_thread(void *arg)
{
	struct owner *o = arg;
	unsigned int seed = 7 + o->id;
	uint64_t gen = 0;

	while (!atomic_load(&stop) && !o->failure[0]) {
		long p = (long)(rnd(&seed) % (NPAGES / NOWNERS)) * NOWNERS + o->id;
		uint64_t w = TAG | ((uint64_t)o->id << 48) | ++gen, a, b;

		*word(view_a, p) = w;
		b = *word(view_b, p);
		if (b == w) {
			o->last[p] = w;
		} else if (b == 0) {
			a = *word(view_a, p);
			if (a != 0) {
				snprintf(o->failure, sizeof(o->failure),
					 "page %ld: view B reads 0 after a punch, view A still %#llx (orphaned folio)",
					 p, (unsigned long long)a);
				break;
			}
			o->last[p] = 0;
			o->zero_seen++;
		} else {
			snprintf(o->failure, sizeof(o->failure),
				 "page %ld: wrote %#llx through A, B reads %#llx", p,
				 (unsigned long long)w, (unsigned long long)b);
			break;
		}
		if (rnd(&seed) % 8 == 0) {
			if (madvise(view_a + p * page, page, MADV_DONTNEED)) {
				snprintf(o->failure, sizeof(o->failure), "MADV_DONTNEED: %s",
					 strerror(errno));
				break;
			}
			o->zaps++;
		}
		o->rounds++;
	}
	return NULL;
}

struct helper {
	long ops, errors;
	char failure[160];
};

static void *puncher_thread(void *arg)
{
	struct helper *h = arg;
	unsigned int seed = 99;

	while (!atomic_load(&stop)) {
		long start = rnd(&seed) % NPAGES, len = 1 + rnd(&seed) % 4;
		int r;

		if (rnd(&seed) % 16 == 0)
			start = 0, len = NPAGES;
		if (start + len > NPAGES)
			len = NPAGES - start;
		r = fallocate(gmem_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      start * page, len * page);
		if (r && !h->failure[0])
			snprintf(h->failure, sizeof(h->failure), "punch: %s", strerror(errno));
		h->errors += !!r;
		h->ops++;
	}
	return NULL;
}

static void *truncater_thread(void *arg)
{
	struct helper *h = arg;
	struct stat st;

	while (!atomic_load(&stop)) {
		off_t to = (h->ops & 1) ? page : 0;

		errno = 0;
		if (ftruncate(gmem_fd, to) == 0 || errno != EINVAL) {
			h->errors++;
			if (!h->failure[0])
				snprintf(h->failure, sizeof(h->failure), "ftruncate(%lld): %s",
					 (long long)to, errno ? strerror(errno) : "succeeded");
		}
		if (fallocate(gmem_fd, FALLOC_FL_KEEP_SIZE, 0, NPAGES * page)) {
			h->errors++;
			if (!h->failure[0])
				snprintf(h->failure, sizeof(h->failure), "fallocate: %s",
					 strerror(errno));
		}
		if (fstat(gmem_fd, &st) || st.st_size != NPAGES * page) {
			h->errors++;
			if (!h->failure[0])
				snprintf(h->failure, sizeof(h->failure), "the size changed: %lld",
					 (long long)st.st_size);
		}
		h->ops++;
		usleep(1000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int seconds = argc > 1 ? atoi(argv[1]) : 5;
	struct owner owners[NOWNERS] = {};
	struct helper puncher = {}, truncater = {};
	pthread_t tid[NOWNERS + 2];
	int kvm_fd, vm, bad = 0;
	long raced = 0;
	char *sweep;

	page = getpagesize();
	kvm_fd = open("/dev/kvm", O_RDWR);
	if (kvm_fd < 0)
		ksft_exit_skip("/dev/kvm: %s\n", strerror(errno));
	if ((kvm_cap(kvm_fd, KVM_CAP_GUEST_MEMFD_FLAGS) & (GUEST_MEMFD_FLAG_MMAP |
	     GUEST_MEMFD_FLAG_INIT_SHARED)) != (GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED))
		ksft_exit_skip("no GUEST_MEMFD_FLAG_MMAP | INIT_SHARED (not our modules)\n");
	vm = ioctl(kvm_fd, KVM_CREATE_VM, 0);
	if (vm < 0)
		ksft_exit_fail_msg("KVM_CREATE_VM: %s\n", strerror(errno));
	gmem_fd = gmem_create(vm, NPAGES * page,
			      GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED);
	if (gmem_fd < 0)
		ksft_exit_fail_msg("KVM_CREATE_GUEST_MEMFD: %s\n", strerror(-gmem_fd));
	view_a = mmap(NULL, NPAGES * page, PROT_READ | PROT_WRITE, MAP_SHARED, gmem_fd, 0);
	view_b = mmap(NULL, NPAGES * page, PROT_READ | PROT_WRITE, MAP_SHARED, gmem_fd, 0);
	if (view_a == MAP_FAILED || view_b == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));

	ksft_print_header();
	ksft_set_plan(NOWNERS + 3);

	for (int i = 0; i < NOWNERS; i++) {
		owners[i].id = i;
		pthread_create(&tid[i], NULL, owner_thread, &owners[i]);
	}
	pthread_create(&tid[NOWNERS], NULL, puncher_thread, &puncher);
	pthread_create(&tid[NOWNERS + 1], NULL, truncater_thread, &truncater);
	sleep(seconds);
	atomic_store(&stop, true);
	for (int i = 0; i < NOWNERS + 2; i++)
		pthread_join(tid[i], NULL);

	for (int i = 0; i < NOWNERS; i++) {
		struct owner *o = &owners[i];

		ksft_test_result(!o->failure[0] && o->rounds > 0,
				 "owner %d: %ld write/read-back rounds, %ld after a punch, %ld zaps%s%s\n",
				 i, o->rounds, o->zero_seen, o->zaps, o->failure[0] ? ": " : "",
				 o->failure);
		raced += o->zero_seen;
	}
	/* At least one punch must have landed between an owner's write and read. */
	ksft_test_result(!puncher.errors && puncher.ops > 0 && raced > 0,
			 "puncher: %ld punches, %ld of them between an owner's write and read-back%s%s\n",
			 puncher.ops, raced, puncher.errors ? ": " : "", puncher.failure);
	ksft_test_result(!truncater.errors && truncater.ops > 0,
			 "truncater: %ld rounds of ftruncate EINVAL, fallocate, same size%s%s\n",
			 truncater.ops, truncater.errors ? ": " : "", truncater.failure);

	sweep = mmap(NULL, NPAGES * page, PROT_READ, MAP_SHARED, gmem_fd, 0);
	if (sweep == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	for (long p = 0; p < NPAGES; p++) {
		uint64_t want = owners[p % NOWNERS].last[p], got = *word(sweep, p);

		/* A punch may have come after the owner's last look. */
		if (got != want && got != 0) {
			if (!bad)
				ksft_print_msg("page %ld: %#llx, its owner last saw %#llx\n", p,
					       (unsigned long long)got, (unsigned long long)want);
			bad++;
		}
	}
	ksft_test_result(!bad, "sweep: every page holds its owner's last word or 0 (%d do not)\n",
			 bad);
	munmap(sweep, NPAGES * page);
	munmap(view_a, NPAGES * page);
	munmap(view_b, NPAGES * page);
	close(gmem_fd);
	close(vm);
	ksft_finished();
}
