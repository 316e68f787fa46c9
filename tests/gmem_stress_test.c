// SPDX-License-Identifier: GPL-2.0
/*
 * gmem_stress_test: bounded stress of guest_memfd host mappings, with every
 * byte accounted for.
 *
 * Two default VMs, each with one shared guest_memfd (mainline's
 * GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED). Its first MEM_SIZE
 * bytes are the memory of a vCPU, bound as a gmem-only memslot; the pages
 * after them are hammered by NTHREADS host threads at once:
 *   - owned pages: page % NTHREADS says which thread owns it, so its owner
 *     always knows what the page must hold (its last pattern, or zeroes
 *     after it punched the page out);
 *   - common pages (the last NCOMMON of the file): any thread may take one,
 *     under a protocol: it claims the page by a compare-and-swap of the
 *     page's owner word (0 -> thread + 1), checks the page holds what the
 *     previous owner recorded, writes or punches it, records that, and
 *     releases the claim. So the same pages go from thread to thread, and
 *     each hand-over is checked.
 * Operations are picked at random: write, verify, punch, map a fresh view of
 * the file and verify through it, claim a common page, and run a private
 * file (GUEST_MEMFD_FLAG_MMAP alone: private, so every host touch must
 * SIGBUS) through allocate, touch, close.
 * Meanwhile one thread per VM runs its vCPU: each round the host writes a new
 * pattern through the mapping, the guest checks it and writes its verdict and
 * round counter back through the gmem-only memslot, and the host checks those;
 * every few rounds the data page is punched and the guest must read zeroes.
 *
 * At the end, with every thread joined, a sweep reads every page of both
 * files through a fresh mapping: each owned and common page must hold
 * exactly what was last recorded for it. Every thread must also have verified
 * at least MIN_VERIFIES pages (vCPU threads: MIN_ROUNDS rounds).
 *
 * Stops after DURATION seconds (argv[1], default 30) or MAX_OPS operations per
 * thread, whichever comes first. TAP: one line per thread, then the sweep
 * and the amount of work done.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gmem_x86_guest.h"

#define NTHREADS	4
#define NVMS		2
#define NPAGES		64		/* hammered pages per shared file */
#define NCOMMON		8		/* of which the last NCOMMON are common */
#define NOWNED		(NPAGES - NCOMMON)
#define PRIV_PAGES	8		/* per private file */
#define MAX_OPS		200000
#define MIN_VERIFIES	50
#define MIN_ROUNDS	10
#define FLAGS		(GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED)

static long page;
static int kvm_fd, vm_fd[NVMS], shared_fd[NVMS];
static time_t deadline;

/* The common pages: who holds each, and what it last recorded there. */
static int common_owner[NVMS][NCOMMON];
static uint64_t common_value[NVMS][NCOMMON];

struct worker {
	pthread_t thread;
	int id;
	unsigned int seed;
	uint64_t expect[NVMS][NOWNED];	/* 0: zeroes, else the pattern */
	uint64_t seq;
	long ops, writes, verifies, punches, remaps, common, privates;
	char failure[200];
};

struct vcpu_thread {
	pthread_t thread;
	struct vm vm;
	int rounds, punches;
	char failure[512];
};

static struct worker workers[NTHREADS];
static struct vcpu_thread vcpus[NVMS];

/* Byte offset in a shared file of hammered page @pg. */
static off_t page_off(int pg)
{
	return MEM_SIZE + (off_t)pg * page;
}

static bool fail(struct worker *w, const char *what, int vm, int pg, uint64_t want, uint64_t got)
{
	if (!w->failure[0])
		snprintf(w->failure, sizeof(w->failure),
			 "%s: vm %d page %d holds %#llx, want %#llx", what, vm, pg,
			 (unsigned long long)got, (unsigned long long)want);
	return false;
}

/*
 * A private file: allocated, mapped, every page touched: each touch must
 * SIGBUS; then closed.
 */
static bool private_file_cycle(struct worker *w)
{
	int fd = gmem_create(vm_fd[w->id % NVMS], PRIV_PAGES * page, GUEST_MEMFD_FLAG_MMAP);
	char *mem;
	bool ok = true;

	w->privates++;
	if (fd < 0) {
		snprintf(w->failure, sizeof(w->failure), "create private file: %s", strerror(-fd));
		return false;
	}
	if (fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, PRIV_PAGES * page)) {
		snprintf(w->failure, sizeof(w->failure), "fallocate private file: %s", strerror(errno));
		close(fd);
		return false;
	}
	mem = gmem_map(fd, PRIV_PAGES * page);
	if (mem == MAP_FAILED) {
		snprintf(w->failure, sizeof(w->failure), "mmap private file: %s", strerror(errno));
		close(fd);
		return false;
	}
	for (int i = 0; i < PRIV_PAGES && ok; i++) {
		if (!gmem_sigbus(mem + i * page, true)) {
			snprintf(w->failure, sizeof(w->failure),
				 "the host wrote page %d of a private file without SIGBUS", i);
			ok = false;
		}
	}
	munmap(mem, PRIV_PAGES * page);
	close(fd);
	return ok;
}

/* Take a common page, check the hand-over, change it, give it back. */
static void common_page_op(struct worker *w, int v, char *map)
{
	int c = rand_r(&w->seed) % NCOMMON, pg = NOWNED + c, free_ = 0;
	char *p = map + pg * page;
	uint64_t want, got;

	if (!__atomic_compare_exchange_n(&common_owner[v][c], &free_, w->id + 1, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;		/* another thread has it: try another op */
	want = common_value[v][c];
	got = gmem_check64(p, page, want);
	if (got != want)
		fail(w, "common page at hand-over", v, pg, want, got);
	w->verifies++;
	if (rand_r(&w->seed) % 4) {
		want = ((uint64_t)(w->id + 1) << 56) | (1ULL << 55) | ++w->seq;
		gmem_fill64(p, page, want);
	} else {
		if (fallocate(shared_fd[v], FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      page_off(pg), page))
			snprintf(w->failure, sizeof(w->failure), "punch common page: %s", strerror(errno));
		want = 0;
	}
	common_value[v][c] = want;
	w->common++;
	__atomic_store_n(&common_owner[v][c], 0, __ATOMIC_RELEASE);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	char *map[NVMS];

	for (int v = 0; v < NVMS; v++) {
		map[v] = gmem_map_at(shared_fd[v], page_off(0), NPAGES * page,
				     PROT_READ | PROT_WRITE);
		if (map[v] == MAP_FAILED) {
			snprintf(w->failure, sizeof(w->failure), "mmap: %s", strerror(errno));
			return NULL;
		}
	}

	while (w->ops < MAX_OPS && time(NULL) < deadline && !w->failure[0]) {
		int v = rand_r(&w->seed) % NVMS, op = rand_r(&w->seed) % 100;
		int pg = (rand_r(&w->seed) % (NOWNED / NTHREADS)) * NTHREADS + w->id;
		char *p = map[v] + pg * page;
		uint64_t got;

		w->ops++;
		if (op < 35) {
			w->expect[v][pg] = ((uint64_t)(w->id + 1) << 56) | ++w->seq;
			gmem_fill64(p, page, w->expect[v][pg]);
			w->writes++;
		} else if (op < 65) {
			got = gmem_check64(p, page, w->expect[v][pg]);
			if (got != w->expect[v][pg])
				fail(w, "verify", v, pg, w->expect[v][pg], got);
			w->verifies++;
		} else if (op < 78) {
			if (fallocate(shared_fd[v], FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				      page_off(pg), page))
				snprintf(w->failure, sizeof(w->failure), "punch: %s", strerror(errno));
			w->expect[v][pg] = 0;
			w->punches++;
		} else if (op < 86) {
			/* A fresh view of the file must show the same contents. */
			char *view = gmem_map_at(shared_fd[v], page_off(0), NPAGES * page,
						 PROT_READ);

			if (view == MAP_FAILED) {
				snprintf(w->failure, sizeof(w->failure), "remap: %s", strerror(errno));
				break;
			}
			got = gmem_check64(view + pg * page, page, w->expect[v][pg]);
			if (got != w->expect[v][pg])
				fail(w, "verify through a new mapping", v, pg, w->expect[v][pg], got);
			munmap(view, NPAGES * page);
			w->remaps++;
			w->verifies++;
		} else if (op < 98) {
			common_page_op(w, v, map[v]);
		} else {
			private_file_cycle(w);
		}
	}
	for (int v = 0; v < NVMS; v++)
		munmap(map[v], NPAGES * page);
	return NULL;
}

/*
 * The vCPU of VM @v runs out of the first MEM_SIZE bytes of the shared file,
 * bound as a gmem-only memslot (userspace_addr 0): round after round it checks
 * a new host pattern and writes its verdict back; every fifth round the data
 * page is punched first and the guest must find zeroes.
 */
static void *run_vcpu(void *arg)
{
	struct vcpu_thread *t = arg;
	struct vm *vm = &t->vm;
	struct kvm_userspace_memory_region2 region = {
		.slot = 0,
		.flags = KVM_MEM_GUEST_MEMFD,
		.memory_size = MEM_SIZE,
		.guest_memfd = vm->gmem,
	};
	char *why = t->failure;
	size_t whylen = sizeof(t->failure);
	void *mem;

	mem = gmem_map(vm->gmem, MEM_SIZE);
	if (mem == MAP_FAILED) {
		snprintf(why, whylen, "mmap: %s", strerror(errno));
		return NULL;
	}
	vm->mem = mem;
	if (ioctl(vm->vm, KVM_SET_USER_MEMORY_REGION2, &region)) {
		snprintf(why, whylen, "KVM_SET_USER_MEMORY_REGION2 (gmem-only): %s", strerror(errno));
		return NULL;
	}
	memcpy((void *)(vm->mem + CODE_GPA), guest_code, sizeof(guest_code));
	if (vm_create_vcpu(vm, why, whylen) != KSFT_PASS ||
	    vcpu_real_mode_at_code(vm->vcpu, why, whylen) != KSFT_PASS)
		return NULL;

	while (time(NULL) < deadline) {
		uint8_t seed = 0, step = 0;

		if (t->rounds % 5 == 4) {
			if (fallocate(vm->gmem, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				      DATA_GPA, DATA_LEN)) {
				snprintf(why, whylen, "punch the data page: %s", strerror(errno));
				return NULL;
			}
			t->punches++;
		} else {
			seed = (uint8_t)(0x21 + t->rounds);
			step = (uint8_t)(1 + t->rounds % 7);
			host_fill(vm, seed, step);
		}
		if (!expect_round(vm, seed, step, STATUS_MATCH, DATA_GPA + DATA_LEN,
				  (uint16_t)(t->rounds + 1), why, whylen))
			return NULL;
		t->rounds++;
	}
	return NULL;
}

/* With every thread joined: every hammered page holds what was recorded. */
static long final_sweep(char *why, size_t whylen)
{
	long checked = 0;

	for (int v = 0; v < NVMS; v++) {
		char *view = gmem_map_at(shared_fd[v], page_off(0), NPAGES * page, PROT_READ);

		if (view == MAP_FAILED) {
			snprintf(why, whylen, "mmap: %s", strerror(errno));
			return -1;
		}
		for (int pg = 0; pg < NPAGES; pg++) {
			uint64_t want = pg < NOWNED ? workers[pg % NTHREADS].expect[v][pg] :
					common_value[v][pg - NOWNED];
			uint64_t got = gmem_check64(view + pg * page, page, want);

			if (got != want) {
				snprintf(why, whylen, "vm %d page %d holds %#llx, want %#llx (%s)",
					 v, pg, (unsigned long long)got, (unsigned long long)want,
					 pg < NOWNED ? "owned" : "common");
				munmap(view, NPAGES * page);
				return -1;
			}
			checked++;
		}
		munmap(view, NPAGES * page);
	}
	return checked;
}

int main(int argc, char **argv)
{
	int duration = argc > 1 ? atoi(argv[1]) : 30;
	struct timespec t0, t1;
	long total = 0, swept;
	char why[256] = "";

	page = getpagesize();
	kvm_fd = open("/dev/kvm", O_RDWR);
	if (kvm_fd < 0)
		ksft_exit_skip("/dev/kvm: %s\n", strerror(errno));
	if (!gmem_has_flags(kvm_fd, FLAGS)) {
		if (gmem_ours())
			ksft_exit_fail_msg("no mappable guest_memfd (KVM_CAP_GUEST_MEMFD_FLAGS) with our modules loaded\n");
		ksft_exit_skip("no mappable guest_memfd (KVM_CAP_GUEST_MEMFD_FLAGS)\n");
	}
	for (int v = 0; v < NVMS; v++) {
		vm_fd[v] = ioctl(kvm_fd, KVM_CREATE_VM, 0);
		shared_fd[v] = vm_fd[v] < 0 ? -1 : gmem_create(vm_fd[v], page_off(NPAGES), FLAGS);
		if (shared_fd[v] < 0)
			ksft_exit_fail_msg("VM %d guest_memfd: %s\n", v, strerror(vm_fd[v] < 0 ? errno : -shared_fd[v]));
		vcpus[v].vm = (struct vm){ .kvm = kvm_fd, .vm = vm_fd[v], .vcpu = -1,
					   .gmem = shared_fd[v] };
	}

	ksft_print_header();
	ksft_set_plan(NTHREADS + NVMS + 2);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	deadline = time(NULL) + duration;
	for (int v = 0; v < NVMS; v++)
		pthread_create(&vcpus[v].thread, NULL, run_vcpu, &vcpus[v]);
	for (int i = 0; i < NTHREADS; i++) {
		workers[i].id = i;
		workers[i].seed = 0x5eed + i;
		pthread_create(&workers[i].thread, NULL, work, &workers[i]);
	}
	for (int i = 0; i < NTHREADS; i++) {
		struct worker *w = &workers[i];

		pthread_join(w->thread, NULL);
		total += w->ops;
		ksft_print_msg("worker %d: %ld ops: %ld writes, %ld verifies, %ld punches, %ld remaps, %ld common-page hand-overs, %ld private files\n",
			       i, w->ops, w->writes, w->verifies, w->punches, w->remaps,
			       w->common, w->privates);
		if (!w->failure[0] && w->verifies < MIN_VERIFIES)
			snprintf(w->failure, sizeof(w->failure), "only %ld pages verified, want >= %d",
				 w->verifies, MIN_VERIFIES);
		if (!w->failure[0] && (!w->common || !w->privates))
			snprintf(w->failure, sizeof(w->failure), "no common-page hand-over or no private file");
		ksft_test_result(!w->failure[0], "worker %d%s%s\n", i, w->failure[0] ? ": " : "",
				 w->failure);
	}
	for (int v = 0; v < NVMS; v++) {
		struct vcpu_thread *t = &vcpus[v];

		pthread_join(t->thread, NULL);
		ksft_print_msg("vcpu of vm %d: %d rounds, %d of them after a punch\n", v,
			       t->rounds, t->punches);
		if (!t->failure[0] && t->rounds < MIN_ROUNDS)
			snprintf(t->failure, sizeof(t->failure), "only %d rounds, want >= %d",
				 t->rounds, MIN_ROUNDS);
		ksft_test_result(!t->failure[0], "vcpu of vm %d on a gmem-only memslot%s%s\n", v,
				 t->failure[0] ? ": " : "", t->failure);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);

	swept = final_sweep(why, sizeof(why));
	ksft_test_result(swept == (long)NVMS * NPAGES, "final sweep: every hammered page holds what was recorded%s%s\n",
			 why[0] ? ": " : "", why);
	/* The run must have done real work, or it proves nothing. */
	ksft_print_msg("%ld host operations in %.1f s\n", total,
		       (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	ksft_test_result(total >= 1000, "at least 1000 host operations\n");
	ksft_finished();
}
