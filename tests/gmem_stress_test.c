// SPDX-License-Identifier: GPL-2.0
/*
 * gmem_stress_test: bounded stress of guest_memfd host mappings.
 *
 * Two VMs, each with one shared guest_memfd that all threads map and hammer
 * at once, plus one private file per thread that it keeps closing and
 * re-creating. Each page of a shared file belongs to one thread (page %
 * NTHREADS), so its owner always knows what the page must hold: the pattern
 * it last wrote, or zeroes after it punched the page out. Operations are
 * picked at random: write a page, verify a page, punch a page, map a fresh
 * view of the file and verify through it, re-create the private file.
 *
 * Stops after DURATION seconds (argv[1], default 30) or MAX_OPS operations per
 * thread, whichever comes first. Prints one TAP line per thread.
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
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <linux/falloc.h>
#include <linux/kvm.h>

#include "kselftest.h"

#define NTHREADS	4
#define NVMS		2
#define NPAGES		64		/* per shared file */
#define PRIV_PAGES	8		/* per private file */
#define MAX_OPS		200000
#define FLAGS		(GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED)

static long page;
static int vm_fd[NVMS], shared_fd[NVMS];
static time_t deadline;

struct worker {
	pthread_t thread;
	int id;
	unsigned int seed;
	uint64_t expect[NVMS][NPAGES];	/* 0: zeroes, else the pattern */
	uint64_t seq;
	long ops, writes, verifies, punches, remaps, recreates;
	char failure[160];
};

static struct worker workers[NTHREADS];

static int create_gmem(int vm, long npages)
{
	struct kvm_create_guest_memfd args = { .size = npages * page, .flags = FLAGS };

	return ioctl(vm, KVM_CREATE_GUEST_MEMFD, &args);
}

static void fill(char *p, uint64_t v)
{
	for (long i = 0; i < page; i += sizeof(v))
		memcpy(p + i, &v, sizeof(v));
}

/* Returns the offending word's value, or @want when the page is all @want. */
static uint64_t check(const char *p, uint64_t want)
{
	uint64_t v;

	for (long i = 0; i < page; i += sizeof(v)) {
		memcpy(&v, p + i, sizeof(v));
		if (v != want)
			return v;
	}
	return want;
}

/* A page of the shared files that @w owns. */
static int my_page(struct worker *w)
{
	return (rand_r(&w->seed) % (NPAGES / NTHREADS)) * NTHREADS + w->id;
}

static bool fail(struct worker *w, const char *what, int vm, int pg, uint64_t want, uint64_t got)
{
	snprintf(w->failure, sizeof(w->failure),
		 "%s: vm %d page %d holds %#llx, want %#llx", what, vm, pg,
		 (unsigned long long)got, (unsigned long long)want);
	return false;
}

static bool private_file_cycle(struct worker *w)
{
	int fd = create_gmem(vm_fd[w->id % NVMS], PRIV_PAGES);
	char *mem;
	bool ok = true;

	if (fd < 0) {
		snprintf(w->failure, sizeof(w->failure), "create: %s", strerror(errno));
		return false;
	}
	mem = mmap(NULL, PRIV_PAGES * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (mem == MAP_FAILED) {
		snprintf(w->failure, sizeof(w->failure), "mmap private file: %s", strerror(errno));
		close(fd);
		return false;
	}
	for (int i = 0; i < PRIV_PAGES && ok; i++) {
		if (check(mem + i * page, 0) != 0)
			ok = fail(w, "new file not zero", -1, i, 0, check(mem + i * page, 0));
		fill(mem + i * page, ++w->seq);
	}
	/* Close before munmap half of the time: the mapping keeps the file. */
	if (rand_r(&w->seed) & 1) {
		close(fd);
		fd = -1;
	}
	for (int i = 0; i < PRIV_PAGES && ok; i++) {
		uint64_t want = w->seq - PRIV_PAGES + 1 + i, got = check(mem + i * page, want);

		if (got != want)
			ok = fail(w, "private file lost a write", -1, i, want, got);
	}
	munmap(mem, PRIV_PAGES * page);
	if (fd >= 0)
		close(fd);
	w->recreates++;
	return ok;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	char *map[NVMS];

	for (int v = 0; v < NVMS; v++) {
		map[v] = mmap(NULL, NPAGES * page, PROT_READ | PROT_WRITE, MAP_SHARED,
			      shared_fd[v], 0);
		if (map[v] == MAP_FAILED) {
			snprintf(w->failure, sizeof(w->failure), "mmap: %s", strerror(errno));
			return NULL;
		}
	}

	while (w->ops < MAX_OPS && time(NULL) < deadline && !w->failure[0]) {
		int v = rand_r(&w->seed) % NVMS, pg = my_page(w), op = rand_r(&w->seed) % 100;
		char *p = map[v] + pg * page;
		uint64_t got;

		w->ops++;
		if (op < 40) {
			w->expect[v][pg] = ((uint64_t)w->id << 56) | ++w->seq;
			fill(p, w->expect[v][pg]);
			w->writes++;
		} else if (op < 75) {
			got = check(p, w->expect[v][pg]);
			if (got != w->expect[v][pg])
				fail(w, "verify", v, pg, w->expect[v][pg], got);
			w->verifies++;
		} else if (op < 90) {
			if (fallocate(shared_fd[v], FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				      (off_t)pg * page, page))
				snprintf(w->failure, sizeof(w->failure), "punch: %s", strerror(errno));
			w->expect[v][pg] = 0;
			w->punches++;
		} else if (op < 98) {
			/* A fresh view of the file must show the same contents. */
			char *view = mmap(NULL, NPAGES * page, PROT_READ, MAP_SHARED, shared_fd[v], 0);

			if (view == MAP_FAILED) {
				snprintf(w->failure, sizeof(w->failure), "remap: %s", strerror(errno));
				break;
			}
			got = check(view + pg * page, w->expect[v][pg]);
			if (got != w->expect[v][pg])
				fail(w, "verify through a new mapping", v, pg, w->expect[v][pg], got);
			munmap(view, NPAGES * page);
			w->remaps++;
		} else {
			private_file_cycle(w);
		}
	}
	for (int v = 0; v < NVMS; v++)
		munmap(map[v], NPAGES * page);
	return NULL;
}

int main(int argc, char **argv)
{
	int duration = argc > 1 ? atoi(argv[1]) : 30;
	struct timespec t0, t1;
	long total = 0;
	int kvm;

	page = getpagesize();
	kvm = open("/dev/kvm", O_RDWR);
	if (kvm < 0)
		ksft_exit_skip("/dev/kvm: %s\n", strerror(errno));
	if (!(ioctl(kvm, KVM_CHECK_EXTENSION, KVM_CAP_GUEST_MEMFD_FLAGS) & GUEST_MEMFD_FLAG_MMAP))
		ksft_exit_skip("no mappable guest_memfd (KVM_CAP_GUEST_MEMFD_FLAGS)\n");
	for (int v = 0; v < NVMS; v++) {
		vm_fd[v] = ioctl(kvm, KVM_CREATE_VM, 0);
		shared_fd[v] = vm_fd[v] < 0 ? -1 : create_gmem(vm_fd[v], NPAGES);
		if (shared_fd[v] < 0)
			ksft_exit_fail_msg("VM %d guest_memfd: %s\n", v, strerror(errno));
	}

	ksft_print_header();
	ksft_set_plan(NTHREADS + 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	deadline = time(NULL) + duration;
	for (int i = 0; i < NTHREADS; i++) {
		workers[i].id = i;
		workers[i].seed = 0x5eed + i;
		pthread_create(&workers[i].thread, NULL, work, &workers[i]);
	}
	for (int i = 0; i < NTHREADS; i++) {
		struct worker *w = &workers[i];

		pthread_join(w->thread, NULL);
		total += w->ops;
		if (w->failure[0])
			ksft_test_result_fail("thread %d: %s (after %ld ops)\n", i, w->failure, w->ops);
		else
			ksft_test_result_pass("thread %d: %ld ops: %ld writes, %ld verifies, %ld punches, %ld remaps, %ld file re-creations\n",
					      i, w->ops, w->writes, w->verifies, w->punches,
					      w->remaps, w->recreates);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* The run must have done real work, or it proves nothing. */
	ksft_test_result(total >= 1000, "%ld operations in %.1f s\n", total,
			 (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	ksft_finished();
}
