/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The host side shared by gmem_vcpu_test.c (x86) and arm64/gmem_vcpu_test.c:
 * the guest memory layout both guests follow, the VM handle, per-case
 * timeouts, the data-page helpers, the checked guest round and the punch-hole
 * case built on it, vCPU creation, a SIGBUS-safe read and the TAP main loop.
 * Each test brings its own guest code, vCPU setup and exit handling
 * (guest_round()).
 */
#ifndef GMEM_VCPU_H
#define GMEM_VCPU_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/falloc.h>
#include <linux/kvm.h>

#include "kselftest.h"
#include "gmem_test.h"


#define MEM_SIZE	0x10000		/* guest_memfd and memslot size */
#define CODE_GPA	0x1000		/* guest code */
#define DATA_GPA	0x2000		/* the page the guest checks */
#define PARAM_GPA	0x3000		/* parameters in, answer out */
#define DATA_LEN	0x1000
#define MAX_EXITS	32		/* KVM_RUN exits allowed per round */
#define CASE_TIMEOUT	120		/* seconds per case */

/* Layout of the parameter/answer block at PARAM_GPA. */
#define P_SEED		0	/* u8: expected byte at offset 0 */
#define P_STEP		1	/* u8: added per byte */
#define P_LEN		2	/* u16: bytes to check */
#define A_STATUS	4	/* u8: STATUS_* */
#define A_STOP		6	/* u16: address where the check stopped */
#define A_ROUNDS	8	/* u16: rounds the guest has run */
#define P_START		10	/* u16: where the data to check starts (x86) */

#define STATUS_MATCH	1
#define STATUS_MISMATCH	2

struct vm {
	int kvm, vm, vcpu, gmem;
	struct kvm_run *run;
	size_t run_size;
	volatile uint8_t *mem;		/* host mapping of the guest_memfd */
	void *other;			/* other memory of the test's, as large */
	size_t mem_size;		/* of both, and of the memslot; 0: MEM_SIZE */
};

/* The guest_memfd's size (and its mapping's, and the memslot's). */
static inline size_t vm_mem_size(const struct vm *vm)
{
	return vm->mem_size ? vm->mem_size : MEM_SIZE;
}

static volatile sig_atomic_t timed_out;

static inline void on_alarm(int sig)
{
	(void)sig;
	timed_out = 1;
}

/* KVM_RUN returns EINTR once the case has run for CASE_TIMEOUT seconds. */
static inline void arm_timeout(void)
{
	struct sigaction sa = { .sa_handler = on_alarm };	/* no SA_RESTART */

	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	timed_out = 0;
	alarm(CASE_TIMEOUT);
}

static inline uint16_t get16(volatile uint8_t *p)
{
	return p[0] | p[1] << 8;
}

static inline void put16(volatile uint8_t *p, uint16_t v)
{
	p[0] = v;
	p[1] = v >> 8;
}

static inline void vm_teardown(struct vm *vm)
{
	if (vm->run)
		munmap(vm->run, vm->run_size);
	if (vm->mem)
		munmap((void *)vm->mem, vm_mem_size(vm));
	if (vm->other)
		munmap(vm->other, vm_mem_size(vm));
	if (vm->vcpu >= 0)
		close(vm->vcpu);
	if (vm->gmem >= 0)
		close(vm->gmem);
	if (vm->vm >= 0)
		close(vm->vm);
	if (vm->kvm >= 0)
		close(vm->kvm);
}

/*
 * Create a VM of @type and its guest_memfd of vm_mem_size() with @flags, and
 * map the guest_memfd into vm->mem. Returns a KSFT_* code; @why says what failed.
 */
static inline int vm_create_with_gmem(struct vm *vm, unsigned long type, uint64_t flags,
				      char *why, size_t whylen)
{
	void *mem;
	int fd;

	vm->vm = ioctl(vm->kvm, KVM_CREATE_VM, type);
	if (vm->vm < 0) {
		snprintf(why, whylen, "KVM_CREATE_VM(%lu): %s", type, strerror(errno));
		return KSFT_FAIL;
	}
	fd = gmem_create(vm->vm, vm_mem_size(vm), flags);
	if (fd < 0) {
		snprintf(why, whylen, "KVM_CREATE_GUEST_MEMFD: %s", strerror(-fd));
		return KSFT_FAIL;
	}
	vm->gmem = fd;
	mem = gmem_map(vm->gmem, vm_mem_size(vm));
	if (mem == MAP_FAILED) {
		snprintf(why, whylen, "mmap(guest_memfd): %s", strerror(errno));
		return KSFT_FAIL;
	}
	vm->mem = mem;
	return KSFT_PASS;
}

/* vCPU 0 of the VM and its kvm_run mapping. Returns a KSFT_* code. */
static inline int vm_create_vcpu(struct vm *vm, char *why, size_t whylen)
{
	void *run;

	vm->vcpu = ioctl(vm->vm, KVM_CREATE_VCPU, 0);
	if (vm->vcpu < 0) {
		snprintf(why, whylen, "KVM_CREATE_VCPU: %s", strerror(errno));
		return KSFT_FAIL;
	}
	vm->run_size = ioctl(vm->kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	run = mmap(NULL, vm->run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vm->vcpu, 0);
	if (run == MAP_FAILED) {
		snprintf(why, whylen, "mmap(kvm_run): %s", strerror(errno));
		return KSFT_FAIL;
	}
	vm->run = run;
	return KSFT_PASS;
}

/*
 * Decoy memory for a memslot's userspace_addr (vm->other): vm_mem_size()
 * bytes of 0xa5 and no guest code, so a vCPU that faults from the hva instead of
 * guest_memfd runs garbage and cannot pass a round.
 */
static inline bool vm_map_decoy(struct vm *vm, char *why, size_t whylen)
{
	vm->other = mmap(NULL, vm_mem_size(vm), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (vm->other == MAP_FAILED) {
		vm->other = NULL;
		snprintf(why, whylen, "mmap(anonymous): %s", strerror(errno));
		return false;
	}
	memset(vm->other, 0xa5, vm_mem_size(vm));
	return true;
}

/* Host side: fill the data page with seed + i * step through the mapping. */
static inline void host_fill(struct vm *vm, uint8_t seed, uint8_t step)
{
	for (unsigned int i = 0; i < DATA_LEN; i++)
		vm->mem[DATA_GPA + i] = (uint8_t)(seed + i * step);
}

static inline bool host_data_is_zero(struct vm *vm)
{
	for (unsigned int i = 0; i < DATA_LEN; i++)
		if (vm->mem[DATA_GPA + i])
			return false;
	return true;
}

/*
 * One guest round, defined by each test for its guest: set the parameters,
 * run until the guest reports, return its status (STATUS_*) or -1 with @why.
 */
static int guest_round(struct vm *vm, uint8_t seed, uint8_t step, char *why, size_t whylen);

/*
 * Run a round and check what the guest reported through the mapping:
 * @want status, the address it stopped at and its round counter.
 */
static inline bool expect_round(struct vm *vm, uint8_t seed, uint8_t step, int want,
			 uint16_t want_stop, uint16_t want_rounds, char *why, size_t whylen)
{
	volatile uint8_t *p = vm->mem + PARAM_GPA;
	int status;

	status = guest_round(vm, seed, step, why, whylen);
	if (status < 0)
		return false;
	if (status != want || p[A_STATUS] != want) {
		snprintf(why, whylen, "round %u (seed %#x step %u): guest reported %d (in memory %d), want %d, stopped at %#x",
			 want_rounds, seed, step, status, p[A_STATUS], want, get16(p + A_STOP));
		return false;
	}
	if (get16(p + A_STOP) != want_stop || get16(p + A_ROUNDS) != want_rounds) {
		snprintf(why, whylen, "round %u: guest stopped at %#x (want %#x), rounds %u (want %u)",
			 want_rounds, get16(p + A_STOP), want_stop, get16(p + A_ROUNDS), want_rounds);
		return false;
	}
	return true;
}

/*
 * The decoy case, once set up: with userspace_addr on the decoy, a round on
 * the host's pattern @seed, @step must still pass (the vCPU ran from
 * guest_memfd), and the decoy must be untouched, every byte 0xa5.
 */
static inline bool decoy_round(struct vm *vm, uint8_t seed, uint8_t step, char *why, size_t whylen)
{
	host_fill(vm, seed, step);
	if (!expect_round(vm, seed, step, STATUS_MATCH, DATA_GPA + DATA_LEN, 1, why, whylen))
		return false;
	for (size_t i = 0; i < vm_mem_size(vm); i++) {
		if (((uint8_t *)vm->other)[i] != 0xa5) {
			snprintf(why, whylen, "the memory behind userspace_addr changed at %#zx", i);
			return false;
		}
	}
	return true;
}

/*
 * On a fresh VM: the guest maps the data page with the host's pattern; after
 * a punch hole the host and then the guest read zeroes; a new host pattern is
 * what the guest sees next, not the old one.
 */
static inline int check_punch_hole(struct vm *vm, char *why, size_t whylen)
{
	host_fill(vm, 0x11, 1);
	if (!expect_round(vm, 0x11, 1, STATUS_MATCH, DATA_GPA + DATA_LEN, 1, why, whylen))
		return KSFT_FAIL;

	if (fallocate(vm->gmem, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, DATA_GPA, DATA_LEN)) {
		snprintf(why, whylen, "punch hole: %s", strerror(errno));
		return KSFT_FAIL;
	}
	if (!host_data_is_zero(vm)) {
		snprintf(why, whylen, "host does not read zeroes after the punch");
		return KSFT_FAIL;
	}
	if (!expect_round(vm, 0, 0, STATUS_MATCH, DATA_GPA + DATA_LEN, 2, why, whylen))
		return KSFT_FAIL;
	if (!host_data_is_zero(vm)) {
		snprintf(why, whylen, "host does not read zeroes after the guest did");
		return KSFT_FAIL;
	}

	host_fill(vm, 0x5a, 3);
	if (!expect_round(vm, 0x5a, 3, STATUS_MATCH, DATA_GPA + DATA_LEN, 3, why, whylen))
		return KSFT_FAIL;
	if (!expect_round(vm, 0x11, 1, STATUS_MISMATCH, DATA_GPA, 4, why, whylen))
		return KSFT_FAIL;
	return KSFT_PASS;
}

/* Read one byte of a mapping: the byte, or -1 when the read raised SIGBUS. */
static inline int host_read(volatile uint8_t *p)
{
	return gmem_read_byte(p);
}

/* One TAP case: returns a KSFT_* code; @why says what failed or why it skips. */
struct gmem_case {
	const char *name;
	int (*fn)(char *why, size_t whylen);
};

/*
 * A check around every case: before() returns a value that after() gets
 * back once the case passed; after() may turn that PASS into a FAIL,
 * saying why.
 */
struct gmem_case_check {
	long (*before)(void);
	int (*after)(const struct gmem_case *c, long before, char *why, size_t whylen);
};

/*
 * The cases to run: all of them, or with "-c TEXT" arguments those whose
 * names contain one of the TEXTs (make check's must-fail runs, ONLY_ARGS:
 * a mutant needs only the cases it must fail, not the program's whole run
 * on a TCG guest). A TEXT that names no case fails the run.
 */
#define GMEM_MAX_CASE_ARGS 16
static const char *gmem_case_args[GMEM_MAX_CASE_ARGS];
static int gmem_nr_case_args;

static inline void gmem_parse_case_args(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-c") || i + 1 == argc ||
		    gmem_nr_case_args == GMEM_MAX_CASE_ARGS)
			ksft_exit_fail_msg("usage: %s [-c TEXT]... (at most %d)\n",
					   argv[0], GMEM_MAX_CASE_ARGS);
		gmem_case_args[gmem_nr_case_args++] = argv[++i];
	}
}

static inline bool gmem_case_chosen(const char *name)
{
	if (!gmem_nr_case_args)
		return true;
	for (int i = 0; i < gmem_nr_case_args; i++)
		if (strstr(name, gmem_case_args[i]))
			return true;
	return false;
}

/* Run @n cases, each under its own timeout, as TAP; @check may be NULL. */
static inline void run_cases_checked(const struct gmem_case *cases, size_t n,
				     const struct gmem_case_check *check)
{
	size_t chosen = 0;
	char why[512];

	for (int a = 0; a < gmem_nr_case_args; a++) {
		size_t hits = 0;

		for (size_t i = 0; i < n; i++)
			hits += !!strstr(cases[i].name, gmem_case_args[a]);
		if (!hits)
			ksft_exit_fail_msg("-c %s: no such case\n", gmem_case_args[a]);
	}
	for (size_t i = 0; i < n; i++)
		chosen += gmem_case_chosen(cases[i].name);
	ksft_print_header();
	ksft_set_plan(chosen);
	for (size_t i = 0; i < n; i++) {
		long before;
		int ret;

		if (!gmem_case_chosen(cases[i].name))
			continue;
		before = check ? check->before() : 0;
		why[0] = 0;
		arm_timeout();
		ret = cases[i].fn(why, sizeof(why));
		alarm(0);
		if (ret == KSFT_PASS && check)
			ret = check->after(&cases[i], before, why, sizeof(why));
		ksft_test_result_code(ret, cases[i].name, why[0] ? "%s" : NULL, why);
	}
	ksft_finished();
}

static inline void run_cases(const struct gmem_case *cases, size_t n)
{
	run_cases_checked(cases, n, NULL);
}

#endif /* GMEM_VCPU_H */
