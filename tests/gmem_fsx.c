// SPDX-License-Identifier: GPL-2.0
/*
 * gmem_fsx: an fsx for guest_memfd (issue 41). Random operations on a
 * guest_memfd, each on a random page range; a shadow model says for every
 * page what it must hold, whether the file has it, whether it is private and
 * whether it is armed for KVM Userfault, and every read and every probe is
 * checked against it. A mismatch stops the run and prints the seed, the
 * operation number and the last 50 operations; `gmem_fsx -s SEED -n OPS
 * [-k KIND]` replays a run exactly (the kinds below).
 *
 * The file is bound, 12 pages of it at a time, to a gmem-only memslot of the
 * VM that created it (guest physical 0x4000), and a real-mode vCPU reads it
 * there. Operations: write and read through the mapping (each page faulted
 * in order), pwrite() (GUEST_MEMFD_FLAG_WRITE), fallocate() allocate and
 * punch hole, unmap and map again, MADV_RANDOM and MADV_NORMAL, a probe of
 * the whole file with cachestat(); a vCPU reading a page of the memslot
 * (the guest checks every byte); the memslot deleted and made again over
 * another part of the file; kvmclock placed on a page of the memslot (KVM
 * writes it through its pfn cache); KVM Userfault: pages punched and armed
 * in the memslot's bitmap as a lazy restore leaves them, each restored by
 * pwrite() and disarmed when the vCPU or kvmclock exits on it or before a
 * host operation touches it; and, in the in-place kind, conversion of a
 * range between shared and private (KVM_SET_MEMORY_ATTRIBUTES2) and a page
 * pinned by vmsplice() meanwhile, which a conversion to private must refuse
 * with EAGAIN naming that page.
 *
 * The model knows what allocates what: a plain file's fault its own page; a
 * NO_DIRECT_MAP file's host or vCPU fault on a hole the window of
 * src/virt/0024 and 0028 (only where the page before it is there, up to the
 * end of its 16-page block, within the mapping or the memslot, never into a
 * range punched since the file was created, not under MADV_RANDOM, none in a
 * KVM Userfault memslot or with gmem_ndm_batch=0), which the probe then
 * checks page by page; an armed page stays a hole until it is restored,
 * whoever touches it, but for the huge-write kind's 2 MiB folios: a touch
 * or write() of another page of a 2 MiB that is all a hole brings all of
 * it, the armed page too (zero, still armed: the vCPU and kvmclock still
 * exit on it, and its restore writes it). With NO_DIRECT_MAP the pages out of the direct map
 * (debugfs kvm/gmem_ndm_folios) must be the pages the file has. kvmclock's
 * page is the one the model cannot time: KVM allocates it when it updates
 * the clock, so its presence is read back after each operation and at each
 * userfault exit (never for an armed page; with 2 MiB folios it may bring
 * the armed pages of its 2 MiB, the page the vCPU exits on among them) and
 * its first 32 bytes are the clock's.
 *
 * File kinds: plain (a default VM's MMAP | INIT_SHARED | WRITE file), ndm
 * (the same with NO_DIRECT_MAP, the shim kernel), inplace (a SW_PROTECTED
 * VM created with kvm.gmem_in_place_conversion=1, MMAP | INIT_SHARED, no
 * write(), no KVM Userfault or kvmclock yet), ndm-failzap (an ndm file
 * whose runs also pwrite() a page while taking a page out of the direct map
 * fails once, injected through debugfs kvm/fail_gmem_ndm_zap: the write
 * fails with ENOMEM and its page stays in the file, cleared, in the direct
 * map, until a fault, a vCPU or a write takes it out; no kvmclock, which
 * would prepare such a page at a time of KVM's), swprot (a SW_PROTECTED
 * VM's private memory: a NO_DIRECT_MAP file nothing maps, the memslot's
 * shared memory anonymous; the VM's memory attributes say which one a vCPU
 * reads, and a vCPU fault's window holds pages of its own kind only), uffd
 * (an ndm file whose mapping is registered with userfaultfd for MISSING and
 * MINOR faults, the shim kernel: a handler thread fills a hole with
 * UFFDIO_COPY of the model's snapshot value, or UFFDIO_ZEROPAGE, and maps a
 * page the file has with UFFDIO_CONTINUE; every event is checked against
 * the model, which the fill then updates; operations register and
 * unregister the mapping, map it again or make a new file with or without
 * a registration, and a KVM Userfault exit is restored through the mapping;
 * once a mapping of a file was registered no fault allocates a window),
 * huge (a default VM's MMAP | INIT_SHARED | HUGEPAGE file of 4 MiB, two
 * 2 MiB folios: a touch of a hole whose 2 MiB is all a hole allocates all
 * of it, zeroed, where the policy of its first page says; a punch of part
 * of a folio splits it, and its 2 MiB keeps 4 KiB folios until all of it
 * is punched (a punch whose value has bit 0x40 set punches a whole 2 MiB);
 * no write(), so no KVM Userfault; the memslot at a 2 MiB offset; a 2 MiB
 * the allocator could not give, counted by gmem_huge_fallbacks, is read
 * back as 4 KiB folios), huge-write (the same with WRITE, src/virt/0033:
 * a pwrite() of a hole whose 2 MiB is all a hole allocates all of it, the
 * pages it does not write zero; KVM Userfault as in the plain kind, an
 * armed page in a 2 MiB that a touch of another page allocates whole in
 * the file, zero, until it is restored), huge-pin (huge-write whose runs
 * also pin a page with vmsplice() and close the pipe again: the pin holds
 * the page's 2 MiB folio, which truncate then cannot split; a punch or an
 * arm of part of it clears those pages and leaves them in the file, the
 * folio whole (src/virt/0032), until a punch of all of its 2 MiB takes it
 * out of the file; once the pipe is closed a punch splits as before),
 * huge-inplace (inplace with HUGEPAGE, src/virt/0034: a page converts
 * inside its 2 MiB folio, which stays whole; a pin of any page of a 2 MiB
 * folio refuses a conversion to private of any page of it, EAGAIN at the
 * range's first page in that folio).
 * Without arguments: TAP cases, fixed seeds and one random seed (printed)
 * per kind offered; -j THREADS, the concurrency mode (fsx_threads()).
 *
 * Modules without host mappings of guest_memfd: SKIP, or FAIL with ours.
 */
#include <linux/falloc.h>
#include <linux/mempolicy.h>
#include <poll.h>
#include <pthread.h>
#include <sys/wait.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <sys/random.h>
#include <time.h>

#include "gmem_test.h"
#include "gmem_uffd.h"
#include "gmem_x86_guest.h"

#define NPAGES		256	/* in one page table: a window never crosses one */
#define HUGE_NPAGES	1024	/* the huge kind: two 2 MiB folios */
#define MAX_PAGES	HUGE_NPAGES	/* the model's arrays */
#define HUGE_RANGE	512	/* pages of a 2 MiB folio */
#define HUGE_FALLBACKS	GMEM_DEBUGFS "/kvm/gmem_huge_fallbacks"
#define MAXRUN		16	/* pages an operation covers at most */
#define HISTORY		50
#define NDM_FOLIOS	GMEM_DEBUGFS "/kvm/gmem_ndm_folios"
#define NDM_BATCH_PARAM	"/sys/module/kvm/parameters/gmem_ndm_batch"
#define WAIT_PARAM	"/sys/module/kvm/parameters/gmem_conversion_wait_ms"
#define WINDOW		16	/* KVM_GMEM_NDM_FAULT_AROUND */
#define FLAGS		(GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED | GUEST_MEMFD_FLAG_WRITE)
#define INPLACE_FLAGS	(GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED)
#define CTL_SIZE	0x4000	/* guest code and parameters: anonymous memory */
#define SLOT_GPA	0x4000	/* the memslot over the file: what real mode reaches */
#define SLOT_PAGES	12
#define MAX_SERVES	8	/* userfault exits one vCPU read may take */
#define UFFD_LOG	(MAX_PAGES + 2 * MAXRUN)	/* events between two checks: a probe reads every page */

enum file_kind {
	FK_PLAIN, FK_NDM, FK_INPLACE, FK_NDM_FAILZAP, FK_SWPROT, FK_UFFD, FK_HUGE, FK_HUGE_WRITE,
	FK_HUGE_PIN, FK_HUGE_INPLACE, FK_HUGE_NDM, NR_FILE_KINDS
};
static const char *const file_kind_name[NR_FILE_KINDS] = {
	"plain", "ndm", "inplace", "ndm-failzap", "swprot", "uffd", "huge", "huge-write",
	"huge-pin", "huge-inplace", "huge-ndm",
};

enum op_kind {
	MAP_WRITE, MAP_READ, PWRITE, FALLOC, PUNCH, REMAP, RANDOM, NORMAL, PROBE,
	VCPU_READ, REBIND, CLOCK, ARM, CONVERT, PIN, UNPIN, MBIND, DISARM, RECREATE, FAILZAP,
	SETATTR, SHWRITE, UFFD_REG, NR_KINDS
};

static const char *const kind_name[NR_KINDS] = {
	"map-write", "map-read", "pwrite", "fallocate", "punch", "remap", "madv-random",
	"madv-normal", "probe", "vcpu-read", "rebind", "kvmclock", "arm", "convert", "pin",
	"unpin", "mbind", "disarm", "recreate", "pwrite-failzap", "set-attributes",
	"shared-write", "uffd-register",
};

/*
 * Out of 100 per file kind: what a run is made of. A new operation kind
 * comes with a new file kind (an existing kind's weights unchanged), so
 * that every seed of the existing kinds replays as it did.
 */
static const int kind_weight[NR_FILE_KINDS][NR_KINDS] = {
	/*         mw  mr  pw  fa  pu  re  ra  no  pr  vc  rb  cl  ar  cv  pi  un  mb  da  rc  fz  sa  sw  ur */
	[FK_PLAIN]   = { 15, 14, 9, 7, 10, 3, 2, 2, 8, 14, 3, 3, 5, 0, 0, 0, 2, 2, 1, 0 },
	[FK_NDM]     = { 15, 14, 9, 7, 10, 3, 2, 2, 8, 14, 3, 3, 5, 0, 0, 0, 2, 2, 1, 0 },
	[FK_INPLACE] = { 15, 14, 0, 8, 10, 3, 2, 2, 8, 14, 3, 0, 0, 12, 3, 3, 2, 0, 1, 0 },
	/* No kvmclock: its page may be one a failed zap left, prepared when KVM likes. */
	[FK_NDM_FAILZAP] = { 14, 14, 7, 7, 10, 3, 2, 2, 8, 14, 3, 0, 4, 0, 0, 0, 2, 2, 1, 7 },
	/*
	 * A SW_PROTECTED VM's private memory: nothing maps the file; only the
	 * vCPU, fallocate(), punch and the VM's memory attributes touch it.
	 * Few punches: a window never runs into a range punched since the
	 * file was created, so a new file now and then opens them again.
	 */
	[FK_SWPROT]  = { 0, 0, 0, 10, 3, 0, 0, 0, 10, 39, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 24, 12 },
	/* uffd-register: register (odd value) or unregister the mapping. */
	[FK_UFFD]    = { 14, 14, 8, 7, 10, 3, 2, 2, 8, 12, 3, 3, 5, 0, 0, 0, 2, 2, 2, 0, 0, 0, 3 },
	/*
	 * 2 MiB folios: no write() (not offered with them), so no KVM Userfault
	 * either (a restore is a write()); a punch whose value has bit 0x40
	 * set punches all of its 2 MiB, which makes the next touch allocate a
	 * 2 MiB folio again; rebind and recreate put the memslot at a 2 MiB
	 * offset, as the binding of such a file must be.
	 */
	[FK_HUGE]    = { 17, 16, 0, 10, 14, 3, 2, 2, 9, 15, 4, 3, 0, 0, 0, 0, 3, 0, 2, 0 },
	/*
	 * The same with write() (src/virt/0033): a pwrite() into a hole
	 * whose 2 MiB is all a hole allocates all of it, as a touch does.
	 * And so KVM Userfault (a restore is a write()): an armed page in a
	 * 2 MiB that a touch of another page allocates whole is in the file,
	 * zero, until it is restored; the vCPU still exits on it.
	 */
	[FK_HUGE_WRITE] = { 12, 12, 9, 9, 12, 3, 2, 2, 8, 14, 4, 3, 5, 0, 0, 0, 2, 1, 2, 0 },
	/*
	 * huge-write with a vmsplice() pin now and then: a pin of a page of
	 * a 2 MiB folio holds all of it, so truncate cannot split it. A punch
	 * of part of it (or an arm) clears the pages and leaves them in the
	 * file, the folio whole (src/virt/0032); a punch of all of its 2 MiB
	 * takes it out of the file, the pipe keeping it.
	 */
	[FK_HUGE_PIN] = { 10, 11, 9, 9, 12, 3, 2, 2, 8, 12, 4, 3, 5, 0, 3, 3, 1, 1, 2, 0 },
	/*
	 * inplace with 2 MiB folios (src/virt/0034): pages convert one by
	 * one inside a folio, which stays whole; a pin of any page of a 2 MiB
	 * folio fails a conversion to private of any page of it, with EAGAIN
	 * at the range's first page there.
	 */
	[FK_HUGE_INPLACE] = { 15, 14, 0, 8, 10, 3, 2, 2, 8, 14, 3, 0, 0, 12, 3, 3, 2, 0, 1, 0 },
	/*
	 * huge-write out of the direct map (src/virt/0035): a 2 MiB folio is
	 * never split, so a punch of part of it (or an arm) clears the pages
	 * and leaves them in the file, the folio whole and out; a punch of
	 * all of its 2 MiB frees it. No pins: GUP refuses the memory.
	 */
	[FK_HUGE_NDM] = { 12, 12, 9, 9, 12, 3, 2, 2, 8, 14, 4, 3, 5, 0, 0, 0, 2, 1, 2, 0 },
};

/* The state of an op's first page before it, for the coverage counts. */
enum page_state { PS_HOLE, PS_PRESENT, PS_PRIVATE, PS_ARMED, NR_PAGE_STATES };

/* Events a run counts, to say what it covered. */
enum event {
	EV_UF_EXIT, EV_CLOCK_EXIT, EV_RESTORE, EV_VCPU_HOLE, EV_VCPU_PRIVATE, EV_WINDOW,
	EV_PRIVATE_SIGBUS, EV_EAGAIN, EV_CONVERTED, EV_CLOCK_ALLOC, EV_REMOTE, EV_FAILED_ZAP,
	EV_STALE_USED, EV_VCPU_WRITE, EV_SECOND_MAP, EV_CHILD_READ, EV_UFFD_MISSING,
	EV_UFFD_ZERO, EV_UFFD_MINOR, EV_UFFD_RESTORE, EV_UFFD_CLOCK, EV_HUGE_FOLIO,
	EV_HUGE_SPLIT, EV_HUGE_FALLBACK, EV_HUGE_ARMED, EV_CLOCK_BROUGHT, EV_HUGE_PINNED_PUNCH,
	EV_HUGE_NDM_KEPT, NR_EVENTS
};

static const char *const event_name[NR_EVENTS] = {
	"userfault exits of the vCPU", "of kvmclock", "restores", "vCPU faults on holes",
	"vCPU reads of private pages", "NO_DIRECT_MAP windows", "host SIGBUS on private pages",
	"EAGAIN on a pin", "conversions", "kvmclock pages allocated by KVM",
	"pages checked on the other node", "failed zaps",
	"pages a failed zap left, then taken out by a use", "vCPU writes",
	"reads through a second mapping", "reads in a forked child",
	"userfaultfd MISSING events", "of them filled by UFFDIO_ZEROPAGE", "MINOR events",
	"KVM Userfault restores through userfaultfd", "MISSING events of kvmclock",
	"2 MiB folios", "split by a punch", "2 MiB wanted, 4 KiB taken (allocator)",
	"armed pages brought in with their 2 MiB",
	"of them by kvmclock on the entry before a vCPU's userfault exit",
	"pages punched in a pinned 2 MiB folio (cleared, kept)",
	"pages punched in a 2 MiB folio out of the direct map (cleared, kept)",
};

struct op {
	long nr;
	enum op_kind kind;
	int first, n;
	uint8_t val;
};

/* What the file must be: per page, its bytes (all one value) and its state. */
struct model {
	uint8_t val[MAX_PAGES];
	bool present[MAX_PAGES];
	bool punched[MAX_PAGES];	/* ever, since the file was created */
	bool private[MAX_PAGES];	/* inplace: converted to private */
	bool armed[MAX_PAGES];	/* KVM Userfault: a hole until restored */
	bool clock[MAX_PAGES];	/* the first PVCLOCK_SIZE bytes may be kvmclock's */
	/*
	 * ndm-failzap: write() failed to take it out of the direct map. The
	 * file has it (present), cleared, not up to date, in the direct map:
	 * nothing maps it until a fault or a vCPU takes it out first.
	 */
	bool stale[MAX_PAGES];
	bool unstaled[MAX_PAGES];	/* stale pages taken out since the last probe */
	int8_t policy[MAX_PAGES];	/* the node mbind() bound it to, or -1 */
	int8_t vma_policy[MAX_PAGES];	/* what this mapping's mbind() set, or -1 */
	int8_t node[MAX_PAGES];	/* where the page the file has must be, or -1 */
	/*
	 * huge: per 2 MiB of the file, one 2 MiB folio now (huge), or 4 KiB
	 * folios until all of it is a hole again, since a punch split it or
	 * the allocator had no 2 MiB page (split).
	 */
	bool huge[MAX_PAGES / HUGE_RANGE], split[MAX_PAGES / HUGE_RANGE];
	bool random;		/* MADV_RANDOM on the mapping */
};

struct run {
	uint64_t seed, rng;
	int gen;		/* the operation set's generation (OP_GEN) */
	long ops;
	enum file_kind fk;
	bool ndm, userfault;
	int batch;		/* gmem_ndm_batch */
	int fd;
	struct vm vm;		/* vm.mem: the guest's code and parameters */
	uint8_t *map;
	uint8_t *buf;
	long ndm_base;
	int slot_off;		/* the file page at SLOT_GPA */
	bool slot_uf;		/* the memslot has KVM_MEM_USERFAULT */
	unsigned long bitmap;	/* its userfault bitmap, a bit per memslot page */
	int clock_slot;		/* kvmclock's page in the memslot, or -1 */
	int pin_fd, pin_page;	/* a vmsplice() pin and the file page it holds */
	struct model m;
	/* swprot: the memslot's shared memory (anonymous), a value per page. */
	uint8_t *shared;
	uint8_t shared_val[SLOT_PAGES];
	/*
	 * uffd: the userfaultfd and its handler thread; whether the mapping
	 * is registered now and whether one of the file's ever was (the
	 * file's userfault_seen: no windows); what a MISSING event fills each
	 * page with (0: UFFDIO_ZEROPAGE), which only the main thread changes,
	 * between operations. The handler logs each event before it serves
	 * it, and counts it served after; the main thread reads the log once
	 * all are served (uffd_quiesce()).
	 */
	int uffd, uffd_stop[2];
	pthread_t uffd_thread;
	bool uffd_thread_up, registered, uffd_seen;
	uint8_t snap[MAX_PAGES];
	/*
	 * kvmclock's page (set before KVM is told): KVM's update and a vCPU's
	 * fault race to fill it, the one with UFFDIO_ZEROPAGE, the other with a
	 * zeroed page, so that either order leaves what the model says.
	 */
	int clock_fill;
	bool vcpu_filled[MAX_PAGES];	/* by a vCPU's fault since the last check */
	uint8_t *uffd_src;
	struct uffd_event {
		int page;	/* -1: outside the mapping */
		bool minor;
		int err;	/* of UFFDIO_COPY, ZEROPAGE or CONTINUE */
	} log[UFFD_LOG];
	int log_len, log_served, log_seen;
	struct op history[HISTORY];
	/* What the run covered: per operation kind, and the events below. */
	long count[NR_KINDS], ev[NR_EVENTS];
	long state[NR_KINDS][NR_PAGE_STATES];	/* of each op's first page, before it */
	long done;
	char *why;
	size_t whylen;
};

/*
 * Generations of the operation set, so that a seed found under an older one
 * replays exactly (found_seeds[], -g): 0, the first; 1, a vcpu-read whose
 * value has its top bit set is a vCPU write of the page instead; 2, a
 * map-read whose value has its top bit set reads through a second mapping
 * or in a forked child (other_read()).
 */
#define OP_GEN		2
static int op_gen = OP_GEN;	/* -g */

/*
 * The vCPU's writer (vcpu-write), at WRITER_GPA: P_LEN bytes from P_START
 * set to the seed byte, then the reader's report and OUT. The host points
 * rip at it for a round, and back at the reader after.
 * (Hand-assembled; checked against "as" + "objdump -mi8086".)
 */
#define WRITER_GPA	(CODE_GPA + 0x100)
static const uint8_t writer_code[] = {
	0xbf, 0x00, 0x30,	/*         mov  $0x3000, %di   params   */
	0x8b, 0x75, 0x0a,	/*         mov  10(%di), %si   start    */
	0x8a, 0x05,		/*         mov  (%di), %al     seed     */
	0x8b, 0x4d, 0x02,	/*         mov  2(%di), %cx    len      */
	0x88, 0x04,		/* write:  mov  %al, (%si)              */
	0x46,			/*         inc  %si                     */
	0xe2, 0xfb,		/*         loop write                   */
	0xb0, 0x01,		/*         mov  $1, %al        done     */
	0x88, 0x45, 0x04,	/*         mov  %al, 4(%di)    status   */
	0x89, 0x75, 0x06,	/*         mov  %si, 6(%di)    stop     */
	0xff, 0x45, 0x08,	/*         incw 8(%di)         rounds   */
	0xba, 0x10, 0x00,	/*         mov  $0x10, %dx              */
	0xee,			/*         out  %al, (%dx)              */
	0xf4,			/*         hlt (rip is the host's)      */
};

static long page;
static int npages = NPAGES;	/* of this run's file: NPAGES, HUGE_NPAGES for the huge kind */
static long soak_seconds;	/* -t: random seeds until this many seconds passed */
static bool verbose;		/* -v: print every operation as it runs */
static bool probe_each;		/* -p: probe after every operation (replays) */
static int nnodes, local_node;	/* the test runs on CPU 0, of local_node */

static uint64_t rnd(struct run *r)
{
	/* xorshift64*: the same sequence for the same seed, everywhere. */
	r->rng ^= r->rng >> 12;
	r->rng ^= r->rng << 25;
	r->rng ^= r->rng >> 27;
	return r->rng * 2685821657736338717ULL;
}

static int rnd_below(struct run *r, int n)
{
	return (int)(rnd(r) % (uint64_t)n);
}

static void print_history(struct run *r)
{
	long from = r->done > HISTORY ? r->done - HISTORY : 0;

	ksft_print_msg("seed %llu: the last %ld operations (replay: gmem_fsx -s %llu -n %ld -k %s)\n",
		       (unsigned long long)r->seed, r->done - from, (unsigned long long)r->seed,
		       r->done, file_kind_name[r->fk]);
	for (long i = from; i < r->done; i++) {
		const struct op *o = &r->history[i % HISTORY];

		ksft_print_msg("  #%ld %s pages %d-%d value %#x\n", o->nr, kind_name[o->kind],
			       o->first, o->first + o->n - 1, o->val);
	}
}

static bool fail(struct run *r, const struct op *o, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static bool fail(struct run *r, const struct op *o, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(r->why, r->whylen, "%s file, seed %llu, op #%ld (%s pages %d-%d): %s",
		 file_kind_name[r->fk], (unsigned long long)r->seed, o->nr, kind_name[o->kind],
		 o->first, o->first + o->n - 1, what);
	print_history(r);
	return false;
}

static bool in_slot(const struct run *r, int i)
{
	return i >= r->slot_off && i < r->slot_off + SLOT_PAGES;
}

/*
 * May the first PVCLOCK_SIZE bytes of page @i be kvmclock's? Those of its
 * page now (KVM writes them whenever it updates the clock, whatever was
 * written, punched or restored there since), and those of a page it was on.
 */
static bool is_clock_page(const struct run *r, int i)
{
	return r->clock_slot >= 0 && i == r->slot_off + r->clock_slot;
}

static bool clock_bytes(const struct run *r, int i)
{
	return r->m.clock[i] || is_clock_page(r, i);
}

/* Files of 2 MiB folios: the huge kinds. */
static bool huge_kind(enum file_kind fk)
{
	return fk == FK_HUGE || fk == FK_HUGE_WRITE || fk == FK_HUGE_PIN || fk == FK_HUGE_INPLACE ||
	       fk == FK_HUGE_NDM;
}

/*
 * The end of a NO_DIRECT_MAP fault's window at the hole @i, within @limit
 * (kvm_gmem_ndm_window_end()): only where the page before it is there.
 */
static int model_window_end(struct run *r, int i, int limit)
{
	struct model *m = &r->m;
	int end = i + 1;

	if (!r->ndm || huge_kind(r->fk) || !r->batch || r->uffd_seen || i == 0 ||
	    !m->present[i - 1])
		return end;
	end = (i + WINDOW) / WINDOW * WINDOW;
	if (end > limit)
		end = limit;
	if (end > npages)
		end = npages;
	for (int j = i + 1; j < end; j++) {
		/* A vCPU's window holds pages of its fault's kind only. */
		if (m->punched[j] || m->present[j] || m->private[j] != m->private[i])
			return j;
	}
	return end;
}

/* Files of a VM that converts in place. */
static bool inplace_kind(enum file_kind fk)
{
	return fk == FK_INPLACE || fk == FK_HUGE_INPLACE;
}

/* The first page of the 2 MiB of the file around page @i. */
static int huge_start(int i)
{
	return i / HUGE_RANGE * HUGE_RANGE;
}

/* Is all of the 2 MiB around page @i a hole? */
static bool huge_range_empty(const struct run *r, int i)
{
	for (int j = huge_start(i); j < huge_start(i) + HUGE_RANGE; j++)
		if (r->m.present[j])
			return false;
	return true;
}

/*
 * A new page @i of the file: where its policy, or the local node, puts it.
 * The huge kind: where all of its 2 MiB is a hole and not split, the page
 * comes with all of it, one folio where the policy of its first page puts
 * it (zeroed: the caller writes page @i's value).
 */
static void model_new_page(struct run *r, int i)
{
	int start = huge_start(i);

	if (huge_kind(r->fk) && !r->m.split[start / HUGE_RANGE] && huge_range_empty(r, i)) {
		for (int j = start; j < start + HUGE_RANGE; j++) {
			r->m.present[j] = true;
			/* An armed page's value is the snapshot its restore writes. */
			if (!r->m.armed[j])
				r->m.val[j] = 0;
			r->ev[EV_HUGE_ARMED] += r->m.armed[j];
			r->m.node[j] = r->m.policy[start] >= 0 ? r->m.policy[start] : local_node;
		}
		r->m.huge[start / HUGE_RANGE] = true;
		r->ev[EV_HUGE_FOLIO]++;
		return;
	}
	/* A page of a 2 MiB folio is there with the folio. */
	if (huge_kind(r->fk) && r->m.present[i])
		return;
	r->m.present[i] = true;
	r->m.node[i] = r->m.policy[i] >= 0 ? r->m.policy[i] : local_node;
}

/*
 * The allocator had no 2 MiB page for a range this operation allocated
 * (gmem_huge_fallbacks rose): what the file has of each 2 MiB the model
 * made a folio of during the operation is what cachestat() says, and the
 * range is 4 KiB folios from then on. A range the file has all of was one
 * folio after all.
 */
static void model_huge_fallback(struct run *r, const bool *was_huge)
{
	for (int k = 0; k < npages / HUGE_RANGE; k++) {
		int start = k * HUGE_RANGE;

		if (!r->m.huge[k] || was_huge[k] ||
		    gmem_cached_pages(r->fd, (long)start * page, HUGE_RANGE * page) == HUGE_RANGE)
			continue;
		for (int j = start; j < start + HUGE_RANGE; j++) {
			r->m.present[j] = gmem_cached_pages(r->fd, (long)j * page, page) == 1;
			if (!r->m.present[j] && !r->m.armed[j])
				r->m.val[j] = 0;
		}
		r->m.huge[k] = false;
		r->m.split[k] = true;
		r->ev[EV_HUGE_FALLBACK]++;
	}
}

/*
 * Does the pin hold the file's 2 MiB folio around page @i? It holds the
 * folio of its page, and a range that is one folio stays one while the
 * pin holds it (truncate cannot split it); a punch of all of it takes the
 * folio out of the file (pin_page -1: the pin holds nothing of the file).
 */
static bool pinned_folio(const struct run *r, int i)
{
	return r->pin_page >= 0 && huge_kind(r->fk) && huge_start(r->pin_page) == huge_start(i) &&
	       r->m.huge[i / HUGE_RANGE];
}

/*
 * Does a punch of [@first, @end) leave page @i in the file, its 2 MiB folio
 * whole? One the pin holds, and in the huge-ndm kind one the punch covers
 * only part of: a folio out of the direct map is never split.
 */
static bool kept_whole(const struct run *r, int i, int first, int end)
{
	int start = huge_start(i);

	if (pinned_folio(r, i))
		return true;
	return r->fk == FK_HUGE_NDM && r->m.huge[start / HUGE_RANGE] &&
	       (first > start || end < start + HUGE_RANGE);
}

/*
 * Page @i was punched by a punch of [@first, @end): a hole, or, in a 2 MiB
 * folio that stays whole (kept_whole()), a page of the file that reads
 * zero. @val: what the model keeps as the page's value (an armed page keeps
 * its snapshot).
 */
static void model_punch_page(struct run *r, int i, uint8_t val, int first, int end)
{
	r->m.present[i] = kept_whole(r, i, first, end);
	r->ev[r->fk == FK_HUGE_NDM ? EV_HUGE_NDM_KEPT : EV_HUGE_PINNED_PUNCH] += r->m.present[i];
	r->m.stale[i] = false;
	r->m.punched[i] = true;
	r->m.val[i] = val;
	r->m.clock[i] = false;
}

/*
 * Pages [@first, @end) were punched: a 2 MiB folio partly punched is split,
 * and its 2 MiB keeps 4 KiB folios until all of it is a hole again; one
 * kept_whole() stays whole.
 */
static void model_punched(struct run *r, int first, int end)
{
	for (int k = huge_start(first) / HUGE_RANGE; k * HUGE_RANGE < end; k++) {
		bool empty = huge_range_empty(r, k * HUGE_RANGE);

		if (kept_whole(r, k * HUGE_RANGE, first, end))
			continue;
		if (r->m.huge[k] && !empty)
			r->ev[EV_HUGE_SPLIT]++;
		r->m.split[k] = !empty && (r->m.split[k] || r->m.huge[k]);
		r->m.huge[k] = false;
	}
}

static void model_allocate(struct run *r, int from, int end)
{
	for (int j = from; j < end; j++) {
		model_new_page(r, j);
		r->m.val[j] = 0;
	}
}

/*
 * The end of the VMA that maps page @i: mbind() splits the mapping where the
 * policy changes and merges neighbours of the same policy again.
 */
static int model_vma_end(struct run *r, int i)
{
	int end = i + 1;

	while (end < npages && r->m.vma_policy[end] == r->m.vma_policy[i])
		end++;
	return end;
}

/*
 * A hole at @i is faulted in through a mapping of the file whose VMA around
 * @i ends at @vma_end, under MADV_RANDOM or not: what the file then has.
 */
static void model_fault_in(struct run *r, int i, bool random, int vma_end)
{
	if (r->m.stale[i]) {
		/* A fault takes it out (it reads zero) and maps no window. */
		r->m.stale[i] = false;
		r->m.unstaled[i] = true;
		r->ev[EV_STALE_USED]++;
	}
	if (r->m.present[i])
		return;
	/* The mapping is in one page table; a fault maps within its own VMA. */
	int end = random ? i + 1 : model_window_end(r, i, vma_end);

	r->ev[EV_WINDOW] += end > i + 1;
	model_allocate(r, i, end);
}

/* ... through the VMM's mapping (a forked child's is a copy of it). */
static void model_fault(struct run *r, int i)
{
	model_fault_in(r, i, r->m.random, model_vma_end(r, i));
}

/* A vCPU's fault on the hole @i (kvm_gmem_vcpu_fault_end()). */
static void model_vcpu_fault(struct run *r, int i)
{
	if (r->m.stale[i]) {
		r->m.stale[i] = false;
		r->m.unstaled[i] = true;
		r->ev[EV_STALE_USED]++;
	}
	if (r->m.present[i])
		return;
	int end = r->slot_uf ? i + 1 : model_window_end(r, i, r->slot_off + SLOT_PAGES);

	r->vcpu_filled[i] = true;
	r->ev[EV_VCPU_HOLE]++;
	r->ev[EV_WINDOW] += end > i + 1;
	model_allocate(r, i, end);
}

/* A 2 MiB-aligned address for the file, so that it sits in one page table. */
static uint8_t *aligned_area(void)
{
	uint8_t *area, *at;

	area = mmap(NULL, npages * page + (2UL << 20), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED)
		return NULL;
	at = (uint8_t *)(((uintptr_t)area + (2UL << 20) - 1) & ~((2UL << 20) - 1));
	if (at != area)
		munmap(area, at - area);
	munmap(at + npages * page, area + npages * page + (2UL << 20) - (at + npages * page));
	return at;
}

static bool map_file(struct run *r, uint8_t *at)
{
	if (!at)
		at = aligned_area();
	if (!at)
		return false;
	/* Again at the same address: the memslot's userspace_addr points there. */
	r->map = at;
	return mmap(at, npages * page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		    r->fd, 0) != MAP_FAILED;
}

/* What a MISSING event on page @i is filled with. */
static uint8_t uffd_fill_value(const struct run *r, int i)
{
	return i == r->clock_fill ? 0 : r->snap[i];
}

/*
 * uffd: the handler thread. Each event is logged first, then served: a
 * MINOR one by UFFDIO_CONTINUE, a MISSING one by UFFDIO_COPY of a page of
 * the snapshot value (UFFDIO_ZEROPAGE for 0); a failed fill wakes the
 * faulting thread, which faults again. The main thread checks the log.
 */
static void *uffd_handler(void *arg)
{
	struct run *r = arg;
	struct pollfd pfd[2] = {
		{ .fd = r->uffd, .events = POLLIN }, { .fd = r->uffd_stop[0], .events = POLLIN },
	};
	struct uffd_msg msg;

	for (;;) {
		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents)
			break;
		if (!(pfd[0].revents & POLLIN) || read(r->uffd, &msg, sizeof(msg)) != sizeof(msg) ||
		    msg.event != UFFD_EVENT_PAGEFAULT)
			continue;

		uint8_t *at = (uint8_t *)(uintptr_t)(msg.arg.pagefault.address & ~(page - 1));
		long i = (at - r->map) / page;
		int n = __atomic_load_n(&r->log_len, __ATOMIC_RELAXED), e;
		uint8_t val;
		struct uffd_event ev = {
			.page = at >= r->map && i < npages ? (int)i : -1,
			.minor = msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_MINOR,
		};

		/* Logged before the fill wakes the faulting thread. */
		if (n < UFFD_LOG)
			r->log[n] = ev;
		__atomic_store_n(&r->log_len, n + 1, __ATOMIC_RELEASE);
		if (ev.page < 0)
			e = -EFAULT;
		else if (ev.minor)
			e = uffd_continue(r->uffd, at, page);
		else if (!(val = uffd_fill_value(r, i)))
			e = uffd_zeropage(r->uffd, at, page);
		else {
			memset(r->uffd_src, val, page);
			e = uffd_copy(r->uffd, at, r->uffd_src, page);
		}
		if (e)
			uffd_wake(r->uffd, at, page);
		if (n < UFFD_LOG)
			r->log[n].err = e;
		__atomic_store_n(&r->log_served, n + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/*
 * Every event logged is served. The faulting thread, woken by the fill,
 * may return before the handler logged the fill's result: wait for it.
 */
static bool uffd_quiesce(struct run *r, const struct op *o)
{
	for (int waits = 0; waits < 5000; waits++) {
		if (__atomic_load_n(&r->log_served, __ATOMIC_ACQUIRE) ==
		    __atomic_load_n(&r->log_len, __ATOMIC_ACQUIRE))
			return r->log_len <= UFFD_LOG ? true :
			       fail(r, o, "more than %d userfaultfd events in one operation", UFFD_LOG);
		usleep(1000);
	}
	return fail(r, o, "the userfaultfd handler did not serve an event in 5 s");
}

static const char *uffd_event_str(const struct uffd_event *ev, char *buf, size_t len)
{
	snprintf(buf, len, "%s on page %d%s%s", ev->minor ? "MINOR" : "MISSING", ev->page,
		 ev->err ? ", served with " : "", ev->err ? strerror(-ev->err) : "");
	return buf;
}

/* A MISSING fill of page @i, as the model has it: the snapshot value. */
static void model_uffd_fill(struct run *r, int i)
{
	model_new_page(r, i);
	r->m.val[i] = uffd_fill_value(r, i);
	r->ev[EV_UFFD_MISSING]++;
	r->ev[EV_UFFD_ZERO] += !r->m.val[i];
}

/*
 * The main thread touched page @i through the registered mapping: a hole
 * must have raised exactly one MISSING event for it, filled (the model
 * learns the value), a page the file has at most one MINOR event.
 */
static bool uffd_expect(struct run *r, const struct op *o, int i, bool hole)
{
	char buf[96];
	int n;

	if (!uffd_quiesce(r, o))
		return false;
	n = r->log_len - r->log_seen;
	for (int k = r->log_seen; k < r->log_len; k++) {
		const struct uffd_event *ev = &r->log[k];

		if (ev->page != i || ev->minor == hole || ev->err || n > 1)
			return fail(r, o, "touching page %d (%s) raised %d userfaultfd events, one %s",
				    i, hole ? "a hole: one MISSING event" : "the file has it: no event or MINOR",
				    n, uffd_event_str(ev, buf, sizeof(buf)));
		if (hole)
			model_uffd_fill(r, i);
		else
			r->ev[EV_UFFD_MINOR]++;
	}
	if (hole && !n)
		return fail(r, o, "touching page %d, a hole the model says, raised no MISSING event", i);
	r->log_seen = r->log_len;
	return true;
}

/*
 * After each operation: the events nobody expected. KVM's update of
 * kvmclock faults its page in through the memslot's userspace_addr when it
 * likes: a MISSING event on kvmclock's page if it is a hole, or if the
 * model has a vCPU's fault allocating it in this operation (KVM_RUN
 * updates the clock first; both fill it with zeroes); a MINOR event on a
 * page the file has is any read through the mapping (the probe's).
 * Anything else is a page allocated behind the model's back.
 */
static bool uffd_settle(struct run *r, const struct op *o)
{
	char buf[96];

	if (!r->uffd_thread_up)
		return true;
	if (!uffd_quiesce(r, o))
		return false;
	for (int k = r->log_seen; k < r->log_len; k++) {
		const struct uffd_event *ev = &r->log[k];
		int i = ev->page;

		if (ev->err || i < 0)
			return fail(r, o, "userfaultfd event: %s", uffd_event_str(ev, buf, sizeof(buf)));
		if (ev->minor && r->m.present[i]) {
			r->ev[EV_UFFD_MINOR]++;
			continue;
		}
		if (ev->minor || i != r->clock_fill || r->m.armed[i] ||
		    (r->m.present[i] && !r->vcpu_filled[i]))
			return fail(r, o, "userfaultfd event %s, which no operation asked for (the model: %s)",
				    uffd_event_str(ev, buf, sizeof(buf)),
				    r->m.armed[i] ? "armed" : r->m.present[i] ? "the file has it" : "a hole");
		if (!r->m.present[i]) {
			model_uffd_fill(r, i);
		} else {
			/* Zeroes, as the vCPU's fault would have left before its write. */
			r->ev[EV_UFFD_MISSING]++;
			r->ev[EV_UFFD_ZERO]++;
		}
		r->m.clock[i] = true;
		r->ev[EV_UFFD_CLOCK]++;
	}
	r->log_len = r->log_served = r->log_seen = 0;
	memset(r->vcpu_filled, 0, sizeof(r->vcpu_filled));
	return true;
}

/* The whole mapping registered for MISSING and MINOR faults: 0 or -errno. */
static int uffd_register_map(struct run *r)
{
	return uffd_register(r->uffd, r->map, npages * page,
			     UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_MINOR, NULL);
}

/* Register the mapping with userfaultfd, MISSING and MINOR, or unregister it. */
static bool uffd_set(struct run *r, const struct op *o, bool on)
{
	int e = on ? uffd_register_map(r) : uffd_unregister(r->uffd, r->map, npages * page);

	if (e)
		return fail(r, o, "UFFDIO_%sREGISTER: %s", on ? "" : "UN", strerror(-e));
	r->registered = on;
	/* The file's userfault_seen: a registration is never forgotten. */
	r->uffd_seen |= on;
	return true;
}

/* uffd: the mapping just made, registered unless the op says not (0x40). */
static bool uffd_mapped(struct run *r, const struct op *o)
{
	r->registered = false;
	if (r->fk != FK_UFFD || (o && (o->val & 0x40)))
		return true;
	return uffd_set(r, o, true);
}

/* A new page of snapshot values: 0 (UFFDIO_ZEROPAGE) one in eight. */
static void uffd_new_snapshot(struct run *r)
{
	for (int i = 0; i < npages; i++)
		r->snap[i] = rnd_below(r, 8) ? (uint8_t)(1 + rnd_below(r, 255)) : 0;
}

static bool uffd_start(struct run *r, char *why, size_t whylen)
{
	r->uffd_src = malloc(page);
	r->uffd = uffd_open(why, whylen);
	if (!r->uffd_src || r->uffd < 0 || pipe(r->uffd_stop))
		return false;
	if (pthread_create(&r->uffd_thread, NULL, uffd_handler, r)) {
		snprintf(why, whylen, "pthread_create: %s", strerror(errno));
		return false;
	}
	r->uffd_thread_up = true;
	uffd_new_snapshot(r);
	return true;
}

static void uffd_stop(struct run *r)
{
	if (r->uffd_thread_up) {
		if (write(r->uffd_stop[1], "", 1) == 1)
			pthread_join(r->uffd_thread, NULL);
		r->uffd_thread_up = false;
	}
	for (int k = 0; k < 2; k++)
		if (r->uffd_stop[k] >= 0)
			close(r->uffd_stop[k]);
	if (r->uffd >= 0)
		close(r->uffd);
	r->uffd = r->uffd_stop[0] = r->uffd_stop[1] = -1;
	free(r->uffd_src);
	r->uffd_src = NULL;
}

/* Every byte of page @i through the mapping is the model's (kvmclock's aside). */
static bool check_page(struct run *r, const struct op *o, int i)
{
	uint8_t *p = r->map + (long)i * page;

	if (r->m.private[i]) {
		if (!gmem_sigbus(p, false))
			return fail(r, o, "page %d is private, but the host can read it", i);
		return true;
	}
	for (long b = clock_bytes(r, i) ? PVCLOCK_SIZE : 0; b < page; b++) {
		if (p[b] != r->m.val[i])
			return fail(r, o, "page %d byte %ld reads %#x, want %#x", i, b, p[b],
				    r->m.val[i]);
	}
	return true;
}

/* Every shared page the file has is on the node the model says (move_pages(2)). */
static bool check_nodes(struct run *r, const struct op *o)
{
	void *addr[MAX_PAGES];
	int idx[MAX_PAGES], status[MAX_PAGES], n = 0;

	if (nnodes < 2 || !r->map)
		return true;
	for (int i = 0; i < npages; i++) {
		if (!r->m.present[i] || r->m.private[i] || r->m.node[i] < 0)
			continue;
		/* Mapped for move_pages(): a read of a page the file has allocates nothing. */
		(void)*(volatile uint8_t *)(r->map + (long)i * page);
		model_fault(r, i);
		addr[n] = r->map + (long)i * page;
		idx[n++] = i;
	}
	if (n && syscall(__NR_move_pages, 0, n, addr, NULL, status, 0))
		return fail(r, o, "move_pages: %s", strerror(errno));
	for (int j = 0; j < n; j++) {
		if (status[j] != r->m.node[idx[j]])
			return fail(r, o, "page %d is on node %d, want node %d (%s)", idx[j], status[j],
				    r->m.node[idx[j]], r->m.policy[idx[j]] >= 0 ? "its policy" : "local");
		r->ev[EV_REMOTE] += status[j] != local_node;
	}
	return true;
}

/* The folios the model's file has: a 2 MiB folio is one. */
static long model_folios(const struct run *r)
{
	long n = 0;

	for (int i = 0; i < npages; i++) {
		if (r->m.present[i] &&
		    (!huge_kind(r->fk) || !r->m.huge[i / HUGE_RANGE] || i == huge_start(i)))
			n++;
	}
	return n;
}

/* The file has exactly the pages the model says, and NO_DIRECT_MAP counts them. */
static bool probe(struct run *r, const struct op *o)
{
	long want = 0, stale = 0, got, out, folios;

	for (int i = 0; i < npages; i++) {
		if (gmem_cached_pages(r->fd, (long)i * page, page) != r->m.present[i])
			return fail(r, o, "page %d is %s the file, the model says %s", i,
				    r->m.present[i] ? "not in" : "in",
				    r->m.present[i] ? "there" :
				    r->m.armed[i] ? "a hole (armed, not restored yet)" : "a hole");
		want += r->m.present[i];
		stale += r->m.stale[i];
	}
	got = gmem_cached_pages(r->fd, 0, npages * page);
	if (got != want)
		return fail(r, o, "cachestat counts %ld pages, the model %ld", got, want);
	if (r->ndm) {
		out = gmem_counter(NDM_FOLIOS) - r->ndm_base;
		folios = model_folios(r);
		if (out != folios - stale) {
			char pages[128] = "";
			int n = 0;

			/* The suspects: pages a failed zap left that were used since. */
			for (int i = 0; i < npages && n < (int)sizeof(pages) - 8; i++)
				if (r->m.unstaled[i])
					n += snprintf(pages + n, sizeof(pages) - n, " %d", i);
			return fail(r, o, "%ld folios out of the direct map, the file has %ld (%ld left in by a failed zap%s%s)",
				    out, folios, stale, n ? "; taken out since the last probe:" : "", pages);
		}
		memset(r->m.unstaled, 0, sizeof(r->m.unstaled));
	}
	return check_nodes(r, o);
}

/* The memslot over [slot_off, slot_off + SLOT_PAGES) of the file, or none. */
static int set_slot(struct run *r, bool present, bool uf)
{
	struct kvm_userspace_memory_region2 region = {
		.slot = 1,
		.flags = KVM_MEM_GUEST_MEMFD | (uf ? KVM_MEM_USERFAULT : 0),
		.guest_phys_addr = SLOT_GPA,
		.memory_size = present ? SLOT_PAGES * page : 0,
		.userspace_addr = r->shared ? (uintptr_t)r->shared :
				  (uintptr_t)(r->map + (long)r->slot_off * page),
		.guest_memfd = r->fd,
		.guest_memfd_offset = (uint64_t)r->slot_off * page,
		.userfault_bitmap = uf ? (uintptr_t)&r->bitmap : 0,
	};

	if (ioctl(r->vm.vm, KVM_SET_USER_MEMORY_REGION2, &region))
		return -errno;
	r->slot_uf = uf && present;
	return 0;
}

/* Restore the armed page @i as a lazy restore does: write() it, then disarm it. */
static bool serve(struct run *r, const struct op *o, int i)
{
	uint8_t snap = r->m.val[i];

	if (!r->m.armed[i])
		return true;
	/* huge-write: it came with its 2 MiB, which a touch of another page brought. */
	if (r->m.present[i] && !huge_kind(r->fk))
		return fail(r, o, "armed page %d was allocated before it was restored", i);
	if (gmem_cached_pages(r->fd, (long)i * page, page) != r->m.present[i])
		return fail(r, o, "armed page %d is %s the file before it was restored%s", i,
			    r->m.present[i] ? "not in" : "in",
			    r->m.present[i] ? " (its 2 MiB was allocated)" : "");
	if (r->registered && i != r->clock_fill) {
		/* uffd: a touch through the mapping, which the handler fills. */
		r->snap[i] = r->m.val[i];
		if (!uffd_settle(r, o))
			return false;
		(void)*(volatile uint8_t *)(r->map + (long)i * page);
		if (!uffd_expect(r, o, i, true))
			return false;
		r->ev[EV_UFFD_RESTORE]++;
	} else {
		memset(r->buf, r->m.val[i], page);
		if (pwrite(r->fd, r->buf, page, (off_t)i * page) != page)
			return fail(r, o, "restoring armed page %d: %s", i, strerror(errno));
		model_new_page(r, i);
		r->m.val[i] = snap;
	}
	__atomic_and_fetch(&r->bitmap, ~(1UL << (i - r->slot_off)), __ATOMIC_RELEASE);
	r->m.armed[i] = false;
	r->ev[EV_RESTORE]++;
	/* A restore writes the whole page: kvmclock writes it again when it updates. */
	r->m.clock[i] = false;
	return true;
}

static bool serve_range(struct run *r, const struct op *o)
{
	for (int i = o->first; i < o->first + o->n; i++) {
		if (!serve(r, o, i))
			return false;
	}
	return true;
}

/* Everything armed in the memslot, restored. */
static bool serve_slot(struct run *r, const struct op *o)
{
	for (int i = r->slot_off; i < r->slot_off + SLOT_PAGES; i++) {
		if (!serve(r, o, i))
			return false;
	}
	return true;
}

/*
 * kvmclock's page: KVM allocates it whenever it updates the clock, which the
 * model cannot time. Read back whether it is there, unless it is armed: then
 * it must stay a hole, which the probe checks.
 */
static void sync_clock(struct run *r)
{
	int i;

	if (r->clock_slot < 0)
		return;
	i = r->slot_off + r->clock_slot;
	if (r->m.armed[i] || r->m.present[i])
		return;
	if (gmem_cached_pages(r->fd, (long)i * page, page) == 1) {
		model_new_page(r, i);
		r->m.val[i] = 0;
		r->m.clock[i] = true;
		r->ev[EV_CLOCK_ALLOC]++;
	}
}

/*
 * A userfault exit at @gpa: it must be an armed page of the memslot, the
 * one the guest read or kvmclock's. Restore it.
 */
static bool serve_exit(struct run *r, const struct op *o, uint64_t gpa, int read)
{
	long k = ((long)gpa - SLOT_GPA) / page;
	int i = r->slot_off + (int)k;
	bool was_present;

	if (gpa < SLOT_GPA || k >= SLOT_PAGES || (gpa & (page - 1)))
		return fail(r, o, "userfault exit at gpa %#llx, outside the memslot",
			    (unsigned long long)gpa);
	if (!r->m.armed[i])
		return fail(r, o, "userfault exit at gpa %#llx (page %d), which is not armed",
			    (unsigned long long)gpa, i);
	if (i != read && k != r->clock_slot)
		return fail(r, o, "userfault exit for page %d, neither the page read (%d) nor kvmclock's",
			    i, read);
	r->ev[i == read ? EV_UF_EXIT : EV_CLOCK_EXIT]++;
	/*
	 * KVM updates kvmclock when it enters the guest, before the vCPU's
	 * fault: its page may be in the file now, and with 2 MiB folios the
	 * armed pages of its 2 MiB with it (the page read among them).
	 */
	was_present = r->m.present[i];
	sync_clock(r);
	r->ev[EV_CLOCK_BROUGHT] += r->m.present[i] && !was_present;
	/*
	 * The model takes the vCPU's fault on the page it reads when the read
	 * is done. KVM updates kvmclock when it enters the guest, which may be
	 * before that fault or, after a reschedule, after it: where the file
	 * has the page already, the fault came first. (With 2 MiB folios it
	 * may have brought kvmclock's page with its 2 MiB.)
	 */
	if (i != read && !r->m.armed[read] && !r->m.present[read] &&
	    !(r->shared && !r->m.private[read]) &&
	    gmem_cached_pages(r->fd, (long)read * page, page) == 1)
		model_vcpu_fault(r, read);
	return serve(r, o, i);
}

/* The vCPU reads page @i of the memslot: every byte must be the model's. */
static bool vcpu_read(struct run *r, const struct op *o, int i)
{
	int k = i - r->slot_off, skip = 0, s = -1;
	/* swprot: a shared page is the memslot's anonymous memory, not the file's. */
	bool anon = r->shared && !r->m.private[i];
	uint64_t gpa = 0;
	char why[256] = "";
	uint8_t want = 0;

	for (int serves = 0; serves <= MAX_SERVES; serves++) {
		/* A restore may have made it kvmclock's page again. */
		skip = clock_bytes(r, i) ? PVCLOCK_SIZE : 0;
		want = anon ? r->shared_val[k] : r->m.val[i];
		s = guest_round_at(&r->vm, SLOT_GPA + k * page + skip, page - skip, want, 0,
				   &gpa, why, sizeof(why));
		if (s != ROUND_USERFAULT) {
			if (!r->m.armed[i] && !anon)
				model_vcpu_fault(r, i);
			break;
		}
		if (!serve_exit(r, o, gpa, i))
			return false;
	}
	if (s == ROUND_USERFAULT)
		return fail(r, o, "page %d: still userfault exits after %d restores", i, MAX_SERVES);
	if (s < 0)
		return fail(r, o, "vCPU reading page %d: %s", i, why);
	if (r->m.armed[i])
		return fail(r, o, "the vCPU read armed page %d without a userfault exit", i);
	r->ev[EV_VCPU_PRIVATE] += r->m.private[i];
	if (s != STATUS_MATCH)
		return fail(r, o, "the vCPU reads page %d differently at byte %ld, want %#x everywhere%s",
			    i, (long)get16(r->vm.mem + PARAM_GPA + A_STOP) - (SLOT_GPA + k * page),
			    want, r->m.private[i] ? " (private)" : anon ? " (shared: anonymous memory)" : "");
	return true;
}

static bool set_rip(struct run *r, const struct op *o, uint64_t rip)
{
	struct kvm_regs regs;

	if (ioctl(r->vm.vcpu, KVM_GET_REGS, &regs))
		return fail(r, o, "KVM_GET_REGS: %s", strerror(errno));
	regs.rip = rip;
	if (ioctl(r->vm.vcpu, KVM_SET_REGS, &regs))
		return fail(r, o, "KVM_SET_REGS: %s", strerror(errno));
	return true;
}

/*
 * The vCPU writes page @i of the memslot (all of it, but kvmclock's bytes):
 * a hole faults in as for a read, an armed page exits to be restored first,
 * a private page is written where the guest sees it (the host cannot).
 */
static bool vcpu_write(struct run *r, const struct op *o, int i)
{
	int k = i - r->slot_off, skip, s = -1;
	bool anon = r->shared && !r->m.private[i];
	uint64_t gpa = 0;
	char why[256] = "";

	if (!set_rip(r, o, WRITER_GPA))
		return false;
	for (int serves = 0; serves <= MAX_SERVES; serves++) {
		skip = is_clock_page(r, i) ? PVCLOCK_SIZE : 0;
		s = guest_round_at(&r->vm, SLOT_GPA + k * page + skip, page - skip, o->val, 0,
				   &gpa, why, sizeof(why));
		if (s != ROUND_USERFAULT) {
			if (!r->m.armed[i] && !anon)
				model_vcpu_fault(r, i);
			break;
		}
		if (!serve_exit(r, o, gpa, i))
			return false;
	}
	if (!set_rip(r, o, CODE_GPA))
		return false;
	if (s == ROUND_USERFAULT)
		return fail(r, o, "page %d: still userfault exits after %d restores", i, MAX_SERVES);
	if (s != STATUS_MATCH)
		return fail(r, o, "the vCPU writing page %d: %s", i, s < 0 ? why : "no report");
	if (r->m.armed[i])
		return fail(r, o, "the vCPU wrote armed page %d without a userfault exit", i);
	if (anon) {
		r->shared_val[k] = o->val;
	} else {
		r->m.val[i] = o->val;
		r->m.clock[i] = false;	/* clock_bytes() covers kvmclock's page now */
	}
	r->ev[EV_VCPU_WRITE]++;
	return true;
}

/*
 * Generation 2: a map-read whose value has its top bit set reads through a
 * second mapping of the file (made for it, one VMA, no advice, no policy
 * of its own: the file's applies), or with 0x70 set too, in a forked child
 * through the mapping it inherited. Either checks every byte of each page,
 * a private page SIGBUSes, and what a fault allocates is as the model says.
 */
static bool other_read_check(struct run *r, const uint8_t *map, int first, int n,
			     const uint8_t *want, const bool *private, char *msg, size_t len)
{
	for (int i = first; i < first + n; i++) {
		const uint8_t *p = map + (long)i * page;

		if (private[i - first]) {
			if (!gmem_sigbus((volatile void *)p, false)) {
				snprintf(msg, len, "page %d is private, but the host can read it", i);
				return false;
			}
			continue;
		}
		for (long b = clock_bytes(r, i) ? PVCLOCK_SIZE : 0; b < page; b++) {
			if (p[b] != want[i - first]) {
				snprintf(msg, len, "page %d byte %ld reads %#x, want %#x", i, b, p[b],
					 want[i - first]);
				return false;
			}
		}
	}
	return true;
}

static bool other_read(struct run *r, const struct op *o)
{
	/* A fork costs ~35 ms under TCG: one other read in eight. */
	bool child = (o->val & 0x70) == 0x70, private[MAXRUN];
	uint8_t want[MAXRUN], *map2 = NULL;
	char msg[256] = "";
	int fds[2];
	pid_t pid;

	/* The model first: each page faults in, in order, as the reader's will. */
	for (int i = o->first; i < o->first + o->n; i++) {
		private[i - o->first] = r->m.private[i];
		if (r->m.private[i])
			continue;
		if (child)
			model_fault(r, i);
		else
			model_fault_in(r, i, false, npages);
		want[i - o->first] = r->m.val[i];
	}
	r->ev[child ? EV_CHILD_READ : EV_SECOND_MAP]++;
	if (!child) {
		map2 = aligned_area();
		if (map2)
			map2 = mmap(map2, npages * page, PROT_READ, MAP_SHARED | MAP_FIXED, r->fd, 0);
		if (!map2 || map2 == MAP_FAILED)
			return fail(r, o, "a second mapping: %s", strerror(errno));
		bool ok = other_read_check(r, map2, o->first, o->n, want, private, msg, sizeof(msg));

		munmap(map2, npages * page);
		return ok ? true : fail(r, o, "through a second mapping: %s", msg);
	}
	if (pipe(fds))
		return fail(r, o, "pipe: %s", strerror(errno));
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return fail(r, o, "fork: %s", strerror(errno));
	if (!pid) {
		close(fds[0]);
		if (!other_read_check(r, r->map, o->first, o->n, want, private, msg, sizeof(msg)) &&
		    write(fds[1], msg, strlen(msg)) < 0)
			_exit(2);
		_exit(0);
	}
	close(fds[1]);
	ssize_t got = read(fds[0], msg, sizeof(msg) - 1);
	int status = 0;

	close(fds[0]);
	msg[got > 0 ? got : 0] = 0;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return fail(r, o, "the forked child: status %#x", status);
	return msg[0] ? fail(r, o, "in a forked child: %s", msg) : true;
}

/* Pages [first, first + n) through the mapping: a private one SIGBUSes, and stays. */
static bool map_access(struct run *r, const struct op *o, bool write)
{
	struct model *m = &r->m;

	for (int i = o->first; i < o->first + o->n; i++) {
		uint8_t *p = r->map + (long)i * page;

		if (m->private[i]) {
			if (!gmem_sigbus(p, write))
				return fail(r, o, "page %d is private, but the host can %s it", i,
					    write ? "write" : "read");
			r->ev[EV_PRIVATE_SIGBUS]++;
			if (m->present[i] != (gmem_cached_pages(r->fd, (long)i * page, page) == 1))
				return fail(r, o, "the host's touch of private page %d %s it", i,
					    m->present[i] ? "freed" : "allocated");
			continue;
		}
		/* uffd: a registered mapping's fault is the handler's to fill. */
		bool hole = !m->present[i];

		if (r->registered && !uffd_settle(r, o))
			return false;
		if (!r->registered)
			model_fault(r, i);
		if (write) {
			memset(p, o->val, page);
			if (r->registered && !uffd_expect(r, o, i, hole))
				return false;
			m->val[i] = o->val;
			m->clock[i] = false;	/* clock_bytes() covers kvmclock's page now */
		} else {
			/* The first touch of each page faults it in. */
			volatile uint8_t first = p[0];

			(void)first;
			if (r->registered && !uffd_expect(r, o, i, hole))
				return false;
			if (!check_page(r, o, i))
				return false;
		}
	}
	return true;
}

static bool convert(struct run *r, const struct op *o)
{
	struct model *m = &r->m;
	bool to = o->val & 1, same = true;
	uint64_t err = 0;
	int e, want_err = -1;

	for (int i = o->first; i < o->first + o->n; i++) {
		same &= m->private[i] == to;
		/* A pinned 2 MiB folio: its first page in the range. */
		if (to && (i == r->pin_page || pinned_folio(r, i)) && want_err < 0)
			want_err = i;
	}
	if (same)
		want_err = -1;
	e = gmem_set_attrs(r->fd, (uint64_t)o->first * page, (uint64_t)o->n * page,
			   to ? KVM_MEMORY_ATTRIBUTE_PRIVATE : 0, &err);
	if (want_err >= 0) {
		if (e != -EAGAIN || err != (uint64_t)want_err * page)
			return fail(r, o, "to private over pinned page %d%s: %s, error_offset %#llx; want EAGAIN at %#lx",
				    want_err, want_err == r->pin_page ? "" : " (the pin's 2 MiB folio)", e ? strerror(-e) : "converted", (unsigned long long)err,
				    want_err * page);
		r->ev[EV_EAGAIN]++;
		return true;
	}
	if (e)
		return fail(r, o, "to %s: %s, error_offset %#llx", to ? "private" : "shared",
			    strerror(-e), (unsigned long long)err);
	for (int i = o->first; i < o->first + o->n; i++)
		m->private[i] = to;
	r->ev[EV_CONVERTED] += !same;
	return true;
}

static bool pin(struct run *r, const struct op *o)
{
	struct iovec iov = { .iov_len = page };
	int fds[2], i;

	if (r->pin_fd >= 0)
		return true;
	for (i = o->first; i < o->first + o->n && r->m.private[i]; i++)
		;
	if (i == o->first + o->n)
		return true;
	if (pipe(fds))
		return fail(r, o, "pipe: %s", strerror(errno));
	/* vmsplice() takes the page through the mapping: a host fault on a hole. */
	model_fault(r, i);
	iov.iov_base = r->map + (long)i * page;
	if (vmsplice(fds[1], &iov, 1, 0) != page) {
		close(fds[0]);
		close(fds[1]);
		return fail(r, o, "vmsplice of page %d: %s", i, strerror(errno));
	}
	close(fds[1]);
	r->pin_fd = fds[0];
	r->pin_page = i;
	return true;
}

static void unpin(struct run *r)
{
	if (r->pin_fd >= 0)
		close(r->pin_fd);
	r->pin_fd = -1;
	r->pin_page = -1;
}

/* Arm the memslot pages in the op's range as a lazy restore leaves them: punched. */
static bool arm(struct run *r, const struct op *o)
{
	struct model *m = &r->m;
	int e;

	for (int i = o->first; i < o->first + o->n; i++) {
		if (!in_slot(r, i) || m->armed[i])
			continue;
		if (fallocate(r->fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE,
			      (off_t)i * page, page))
			return fail(r, o, "punch hole of page %d: %s", i, strerror(errno));
		/* val[i] stays: the snapshot the restore writes back. */
		model_punch_page(r, i, m->val[i], i, i + 1);
		m->armed[i] = true;
		__atomic_or_fetch(&r->bitmap, 1UL << (i - r->slot_off), __ATOMIC_RELEASE);
		model_punched(r, i, i + 1);
	}
	if (!r->slot_uf && r->bitmap) {
		e = set_slot(r, true, true);
		if (e)
			return fail(r, o, "setting KVM_MEM_USERFAULT: %s", strerror(-e));
	}
	return true;
}

/*
 * One guest round over a byte of its code: KVM updates a kvmclock it was
 * asked to (a new MSR value, a memslot change) at the next KVM_RUN, so that
 * the page is allocated by this operation, not a later one's fault.
 */
static bool tick(struct run *r, const struct op *o)
{
	char why[256] = "";
	uint64_t gpa = 0;
	int s;

	for (int serves = 0; serves <= MAX_SERVES; serves++) {
		s = guest_round_at(&r->vm, CODE_GPA, 1, guest_code[0], 0, &gpa, why, sizeof(why));
		if (s == STATUS_MATCH)
			return true;
		if (s != ROUND_USERFAULT)
			return fail(r, o, "a vCPU round after the kvmclock change: %s",
				    s < 0 ? why : "the guest misread its own code");
		if (!serve_exit(r, o, gpa, -1))
			return false;
	}
	return fail(r, o, "still userfault exits after %d restores", MAX_SERVES);
}

/* kvmclock leaves its page: what KVM wrote there stays. */
static void clock_leaves(struct run *r)
{
	if (r->clock_slot >= 0)
		r->m.clock[r->slot_off + r->clock_slot] = true;
}

/* kvmclock at page @k of the memslot, written by KVM before this returns. */
static bool set_clock(struct run *r, const struct op *o, int k)
{
	int e;

	r->clock_fill = r->slot_off + k;
	e = gmem_set_kvmclock(&r->vm, SLOT_GPA + (uint64_t)k * page);

	clock_leaves(r);

	if (e)
		return fail(r, o, "KVM_SET_MSRS(kvmclock at memslot page %d): %s", k, strerror(-e));
	r->clock_slot = k;
	if (!r->m.armed[r->slot_off + k])
		r->m.clock[r->slot_off + k] = true;
	return tick(r, o);
}

static bool place_clock(struct run *r, const struct op *o)
{
	return set_clock(r, o, o->first - r->slot_off);
}

static bool rebind(struct run *r, const struct op *o)
{
	int e;

	/* Everything armed is restored first: the bitmap is the memslot's. */
	if (!serve_slot(r, o))
		return false;
	e = set_slot(r, false, false);
	if (e)
		return fail(r, o, "deleting the memslot: %s", strerror(-e));
	clock_leaves(r);
	r->slot_off = o->first;
	e = set_slot(r, true, false);
	if (e)
		return fail(r, o, "making the memslot at page %d: %s", r->slot_off, strerror(-e));
	/*
	 * kvmclock stays at its gpa, over another page of the file now: set
	 * again, so that KVM writes it there now, not at a time of its own.
	 */
	return r->clock_slot < 0 || set_clock(r, o, r->clock_slot);
}

/*
 * mbind() over the op's pages: bound to node val % (nodes + 1), or back to
 * the default policy. The policy is the file's: every later allocation of
 * those pages follows it, whoever makes it; pages already there stay.
 */
static bool bind_pages(struct run *r, const struct op *o)
{
	int node = o->val % (nnodes + 1);
	unsigned long mask = node < nnodes ? 1UL << node : 0;
	int mode = node < nnodes ? MPOL_BIND : MPOL_DEFAULT;

	if (syscall(__NR_mbind, r->map + (long)o->first * page, (unsigned long)o->n * page, mode,
		    mode == MPOL_DEFAULT ? NULL : &mask, mode == MPOL_DEFAULT ? 0 : 65, 0))
		return fail(r, o, "mbind(%s): %s", mode == MPOL_DEFAULT ? "MPOL_DEFAULT" : "MPOL_BIND",
			    strerror(errno));
	int want = node < nnodes ? node : -1, from, to;
	bool changed = false;

	/*
	 * As for shmem, mm skips a VMA whose own policy already is the new one
	 * (a mapping that never set one cannot clear the file's), merges a VMA
	 * it changes with its neighbours of the same policy and hands the
	 * merged VMA to ->set_policy(): MPOL_DEFAULT clears the file's policy
	 * over the whole run of default-policy VMAs around the range, pages
	 * bound through a mapping since unmapped included. (A bind merges
	 * only with VMAs bound the same way, whose pages are already.)
	 */
	for (int i = o->first; i < o->first + o->n; i++) {
		if (r->m.vma_policy[i] == want)
			continue;
		changed = true;
		r->m.policy[i] = want;
		r->m.vma_policy[i] = want;
	}
	if (!changed || want >= 0)
		return true;
	for (from = o->first; from > 0 && r->m.vma_policy[from - 1] < 0; from--)
		;
	for (to = o->first + o->n; to < npages && r->m.vma_policy[to] < 0; to++)
		;
	for (int i = from; i < to; i++)
		r->m.policy[i] = -1;
	return true;
}

/* Restore what is armed and clear KVM_MEM_USERFAULT (a flags-only change). */
static bool disarm(struct run *r, const struct op *o)
{
	int e;

	if (!serve_slot(r, o))
		return false;
	if (!r->slot_uf)
		return true;
	e = set_slot(r, true, false);
	return e ? fail(r, o, "clearing KVM_MEM_USERFAULT: %s", strerror(-e)) : true;
}

static unsigned long long file_flags(const struct run *r)
{
	/* swprot: private memory only, not mappable. */
	if (r->fk == FK_SWPROT)
		return GUEST_MEMFD_FLAG_NO_DIRECT_MAP;
	if (r->fk == FK_HUGE)
		return INPLACE_FLAGS | GUEST_MEMFD_FLAG_HUGEPAGE;
	if (r->fk == FK_HUGE_WRITE || r->fk == FK_HUGE_PIN)
		return INPLACE_FLAGS | GUEST_MEMFD_FLAG_HUGEPAGE | GUEST_MEMFD_FLAG_WRITE;
	if (r->fk == FK_HUGE_INPLACE)
		return INPLACE_FLAGS | GUEST_MEMFD_FLAG_HUGEPAGE;
	if (r->fk == FK_HUGE_NDM)
		return INPLACE_FLAGS | GUEST_MEMFD_FLAG_HUGEPAGE | GUEST_MEMFD_FLAG_WRITE |
		       GUEST_MEMFD_FLAG_NO_DIRECT_MAP;
	return r->fk == FK_INPLACE ? INPLACE_FLAGS :
	       FLAGS | (r->ndm ? GUEST_MEMFD_FLAG_NO_DIRECT_MAP : 0);
}

/*
 * The VMM starts over: the memslot deleted, the file unmapped and closed
 * (its pages freed, back in the direct map), a new file, mapped at a new
 * address, and the memslot over it at the op's first page; kvmclock stays at
 * its gpa. A new file has no punched ranges: NO_DIRECT_MAP windows again.
 */
static bool recreate(struct run *r, const struct op *o)
{
	int e;

	unpin(r);
	e = set_slot(r, false, false);
	if (e)
		return fail(r, o, "deleting the memslot: %s", strerror(-e));
	__atomic_store_n(&r->bitmap, 0, __ATOMIC_RELEASE);
	if (r->map)
		munmap(r->map, npages * page);
	close(r->fd);
	r->map = NULL;
	r->fd = -1;
	if (r->ndm && gmem_settle_counter(NDM_FOLIOS, r->ndm_base) != r->ndm_base)
		return fail(r, o, "after close, %ld pages are still out of the direct map",
			    gmem_counter(NDM_FOLIOS) - r->ndm_base);
	/* swprot: the attributes are the VM's, over the memslot's gfns: they stay. */
	bool private[MAX_PAGES];

	memcpy(private, r->m.private, sizeof(private));
	memset(&r->m, 0, sizeof(r->m));
	if (r->shared)
		memcpy(r->m.private, private, sizeof(private));
	memset(r->m.policy, -1, sizeof(r->m.policy));
	memset(r->m.vma_policy, -1, sizeof(r->m.vma_policy));
	memset(r->m.node, -1, sizeof(r->m.node));
	r->fd = gmem_create(r->vm.vm, npages * page, file_flags(r));
	if (r->fd < 0) {
		e = r->fd;
		r->fd = -1;
		return fail(r, o, "KVM_CREATE_GUEST_MEMFD: %s", strerror(-e));
	}
	if (!r->shared && !map_file(r, NULL))
		return fail(r, o, "mmap: %s", strerror(errno));
	/* A new file: no registration of it yet, windows again. */
	r->uffd_seen = false;
	if (!uffd_mapped(r, o))
		return false;
	/* swprot: at the same file offset, so that page i stays gfn i's. */
	r->slot_off = r->shared ? 0 : o->first;
	e = set_slot(r, true, false);
	if (e)
		return fail(r, o, "the memslot over the new file: %s", strerror(-e));
	return r->clock_slot < 0 || set_clock(r, o, r->clock_slot);
}

/*
 * pwrite() of one page while taking a page out of the direct map fails once
 * (debugfs kvm/fail_gmem_ndm_zap, src/virt/0024). Every write takes its page
 * out (a page out already is put back for the copy), so it always fails, with
 * ENOMEM, and the page stays in the file cleared, not up to date, in the
 * direct map: what it held is gone, never readable there.
 */
static bool pwrite_failzap(struct run *r, const struct op *o)
{
	struct model *m = &r->m;
	int i = o->first, e;
	ssize_t n;

	if (!gmem_fail_next_once(GMEM_FAIL_NDM_ZAP))
		return fail(r, o, "cannot arm %s", GMEM_FAIL_NDM_ZAP);
	memset(r->buf, o->val, page);
	n = pwrite(r->fd, r->buf, page, (off_t)i * page);
	e = errno;
	if (!gmem_write_file(GMEM_FAIL_NDM_ZAP "/probability", "0"))
		return fail(r, o, "cannot disarm %s", GMEM_FAIL_NDM_ZAP);
	if (n != -1 || e != ENOMEM)
		return fail(r, o, "pwrite() of page %d, which fails to leave the direct map: %s, want ENOMEM",
			    i, n < 0 ? strerror(e) : "written");
	if (!m->present[i])
		model_new_page(r, i);
	m->stale[i] = true;
	m->val[i] = 0;
	m->clock[i] = false;
	r->ev[EV_FAILED_ZAP]++;
	return true;
}

/*
 * swprot: KVM_SET_MEMORY_ATTRIBUTES over the op's pages of the memslot,
 * private or shared. The file keeps what its pages hold; a shared page is
 * read from the memslot's anonymous memory, a private one from the file.
 */
static bool set_attributes(struct run *r, const struct op *o)
{
	bool to = o->val & 1;
	struct kvm_memory_attributes attrs = {
		.address = SLOT_GPA + (uint64_t)(o->first - r->slot_off) * page,
		.size = (uint64_t)o->n * page,
		.attributes = to ? KVM_MEMORY_ATTRIBUTE_PRIVATE : 0,
	};

	if (ioctl(r->vm.vm, KVM_SET_MEMORY_ATTRIBUTES, &attrs))
		return fail(r, o, "KVM_SET_MEMORY_ATTRIBUTES(%s): %s", to ? "private" : "shared",
			    strerror(errno));
	for (int i = o->first; i < o->first + o->n; i++) {
		r->ev[EV_CONVERTED] += r->m.private[i] != to;
		r->m.private[i] = to;
	}
	return true;
}

/* swprot: the host writes the memslot's shared (anonymous) memory. */
static void shared_write(struct run *r, const struct op *o)
{
	for (int i = o->first; i < o->first + o->n; i++) {
		memset(r->shared + (long)(i - r->slot_off) * page, o->val, page);
		r->shared_val[i - r->slot_off] = o->val;
	}
}

static bool do_op(struct run *r, struct op *o)
{
	struct model *m = &r->m;
	off_t off = (off_t)o->first * page;
	size_t len = (size_t)o->n * page;

	/* huge: a punch with bit 0x40 is of all of the 2 MiB around its first page. */
	if (o->kind == PUNCH && huge_kind(r->fk) && (o->val & 0x40)) {
		o->first = huge_start(o->first);
		o->n = HUGE_RANGE;
		off = (off_t)o->first * page;
		len = (size_t)o->n * page;
	}
	/* A host operation on an armed page restores it first, as a VMM must. */
	switch (o->kind) {
	case MAP_WRITE: case MAP_READ: case PWRITE: case FALLOC: case PUNCH: case PIN: case CONVERT:
	case FAILZAP:
		if (!serve_range(r, o))
			return false;
		break;
	default:
		break;
	}
	switch (o->kind) {
	case MAP_WRITE:
		return map_access(r, o, true);
	case MAP_READ:
		if (r->gen >= 2 && (o->val & 0x80))
			return other_read(r, o);
		return map_access(r, o, false);
	case PWRITE:
		memset(r->buf, o->val, len);
		if (pwrite(r->fd, r->buf, len, off) != (ssize_t)len)
			return fail(r, o, "pwrite: %s", strerror(errno));
		for (int i = o->first; i < o->first + o->n; i++) {
			if (!m->present[i])
				model_new_page(r, i);
			m->val[i] = o->val;
			m->clock[i] = false;	/* clock_bytes() covers kvmclock's page now */
			/* write() fills it and takes it out, up to date. */
			r->ev[EV_STALE_USED] += m->stale[i];
			m->unstaled[i] |= m->stale[i];
			m->stale[i] = false;
		}
		return true;
	case FALLOC:
		if (fallocate(r->fd, FALLOC_FL_KEEP_SIZE, off, len))
			return fail(r, o, "fallocate: %s", strerror(errno));
		/* A page a failed zap left is the file's already: it stays as it is. */
		for (int i = o->first; i < o->first + o->n; i++) {
			if (!m->present[i]) {
				m->val[i] = 0;
				model_new_page(r, i);
			}
		}
		return true;
	case PUNCH:
		if (fallocate(r->fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, off, len))
			return fail(r, o, "punch hole: %s", strerror(errno));
		/* All of the 2 MiB folio the pin holds: out of the file, the pipe keeps it. */
		if (pinned_folio(r, o->first) && o->first == huge_start(o->first) && o->n == HUGE_RANGE)
			r->pin_page = -1;
		for (int i = o->first; i < o->first + o->n; i++) {
			model_punch_page(r, i, 0, o->first, o->first + o->n);
			/* The pipe keeps the old page; the file's next one is free. */
			if (i == r->pin_page && !m->present[i])
				r->pin_page = -1;
		}
		model_punched(r, o->first, o->first + o->n);
		return true;
	case REMAP:
		munmap(r->map, npages * page);
		m->random = false;
		memset(m->vma_policy, -1, sizeof(m->vma_policy));
		if (!map_file(r, r->map))
			return fail(r, o, "mmap: %s", strerror(errno));
		return uffd_mapped(r, o);
	case RANDOM:
	case NORMAL:
		if (madvise(r->map, npages * page, o->kind == RANDOM ? MADV_RANDOM : MADV_NORMAL))
			return fail(r, o, "madvise: %s", strerror(errno));
		m->random = o->kind == RANDOM;
		return true;
	case PROBE:
		return probe(r, o);
	case VCPU_READ:
		if (r->gen >= 1 && (o->val & 0x80))
			return vcpu_write(r, o, o->first);
		return vcpu_read(r, o, o->first);
	case REBIND:
		return rebind(r, o);
	case CLOCK:
		return place_clock(r, o);
	case ARM:
		return arm(r, o);
	case CONVERT:
		return convert(r, o);
	case PIN:
		return pin(r, o);
	case UNPIN:
		unpin(r);
		return true;
	case MBIND:
		return bind_pages(r, o);
	case DISARM:
		return disarm(r, o);
	case RECREATE:
		return recreate(r, o);
	case FAILZAP:
		return pwrite_failzap(r, o);
	case SETATTR:
		return set_attributes(r, o);
	case SHWRITE:
		shared_write(r, o);
		return true;
	case UFFD_REG:
		return uffd_set(r, o, !r->registered);
	default:
		return fail(r, o, "unknown operation");
	}
}

static enum op_kind pick_kind(struct run *r)
{
	int w = rnd_below(r, 100);

	for (int k = 0; k < NR_KINDS; k++) {
		if (w < kind_weight[r->fk][k])
			return k;
		w -= kind_weight[r->fk][k];
	}
	return PROBE;
}

/* Pick the op's pages: half of them over the memslot, where the features meet. */
static void pick_range(struct run *r, struct op *o)
{
	o->n = 1 + rnd_below(r, MAXRUN);
	if ((o->kind == REBIND || o->kind == RECREATE) && huge_kind(r->fk)) {
		/* A binding of a file of 2 MiB folios starts 2 MiB aligned. */
		o->n = SLOT_PAGES;
		o->first = rnd_below(r, npages / HUGE_RANGE) * HUGE_RANGE;
	} else if (o->kind == REBIND || o->kind == RECREATE) {
		o->n = SLOT_PAGES;
		o->first = rnd_below(r, npages - SLOT_PAGES + 1);
	} else if (rnd_below(r, 2) || o->kind == VCPU_READ || o->kind == ARM || o->kind == CLOCK ||
		   o->kind == SETATTR || o->kind == SHWRITE) {
		if (o->n > SLOT_PAGES)
			o->n = SLOT_PAGES;
		o->first = r->slot_off + rnd_below(r, SLOT_PAGES - o->n + 1);
	} else {
		o->first = rnd_below(r, npages - o->n + 1);
	}
	if (o->kind == FAILZAP)
		o->n = 1;
}

static char wait_saved[16];

/* Does a VM that converts in place offer guest_memfd @flags? */
static bool inplace_offers(int kvm, unsigned long long flags)
{
	bool offers = false;
	int vm;

	if (!gmem_write_file(GMEM_IN_PLACE_PARAM, "1"))
		return false;
	vm = ioctl(kvm, KVM_CREATE_VM, KVM_X86_SW_PROTECTED_VM);
	gmem_write_file(GMEM_IN_PLACE_PARAM, "0");
	if (vm >= 0) {
		offers = gmem_has_flags(vm, flags);
		close(vm);
	}
	return offers;
}

static void read_param(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, len - 1);

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = 0;
	buf[strcspn(buf, "\n")] = 0;
}

/* The VM, its vCPU in real mode, the file and the memslot over its first pages. */
static bool setup(struct run *r, char *why, size_t whylen)
{
	unsigned long long flags = file_flags(r);
	struct kvm_userspace_memory_region2 ctl = { .slot = 0, .memory_size = CTL_SIZE };
	void *mem;
	int e;

	r->vm.kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (inplace_kind(r->fk) && !gmem_write_file(GMEM_IN_PLACE_PARAM, "1")) {
		snprintf(why, whylen, "cannot set kvm.gmem_in_place_conversion");
		return false;
	}
	r->vm.vm = r->vm.kvm < 0 ? -1 :
		   ioctl(r->vm.kvm, KVM_CREATE_VM,
			 inplace_kind(r->fk) || r->fk == FK_SWPROT ? KVM_X86_SW_PROTECTED_VM : 0);
	e = errno;
	if (inplace_kind(r->fk))
		gmem_write_file(GMEM_IN_PLACE_PARAM, "0");
	if (r->vm.vm < 0) {
		snprintf(why, whylen, "/dev/kvm or KVM_CREATE_VM: %s", strerror(e));
		return false;
	}
	mem = mmap(NULL, CTL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		snprintf(why, whylen, "mmap(anonymous): %s", strerror(errno));
		return false;
	}
	r->vm.mem = mem;
	memcpy(mem + CODE_GPA, guest_code, sizeof(guest_code));
	memcpy(mem + WRITER_GPA, writer_code, sizeof(writer_code));
	ctl.userspace_addr = (uintptr_t)mem;
	if (ioctl(r->vm.vm, KVM_SET_USER_MEMORY_REGION2, &ctl)) {
		snprintf(why, whylen, "the code memslot: %s", strerror(errno));
		return false;
	}
	r->fd = gmem_create(r->vm.vm, npages * page, flags);
	if (r->fd < 0) {
		snprintf(why, whylen, "KVM_CREATE_GUEST_MEMFD(%#llx): %s", flags, strerror(-r->fd));
		r->fd = -1;
		return false;
	}
	if (r->fk == FK_SWPROT) {
		/* The memslot's shared memory; the file is not mappable. */
		r->shared = mmap(NULL, SLOT_PAGES * page, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (r->shared == MAP_FAILED) {
			r->shared = NULL;
			snprintf(why, whylen, "mmap(anonymous): %s", strerror(errno));
			return false;
		}
	} else if (!map_file(r, NULL)) {
		snprintf(why, whylen, "mmap: %s", strerror(errno));
		return false;
	}
	if (r->fk == FK_UFFD) {
		if (!uffd_start(r, why, whylen))
			return false;
		e = uffd_register_map(r);
		if (e) {
			snprintf(why, whylen, "UFFDIO_REGISTER(MISSING | MINOR) of the mapping: %s%s",
				 strerror(-e), e == -EINVAL ? " (kvm.ko without its uffd operations?)" : "");
			return false;
		}
		r->registered = r->uffd_seen = true;
	}
	e = set_slot(r, true, false);
	if (e) {
		snprintf(why, whylen, "the guest_memfd memslot: %s", strerror(-e));
		return false;
	}
	if (vm_create_vcpu(&r->vm, why, whylen) != KSFT_PASS ||
	    vcpu_real_mode_at_code(r->vm.vcpu, why, whylen) != KSFT_PASS)
		return false;
	return true;
}

/* The mappings, the file and the VM of a run, gone: what setup() made. */
static void teardown(struct run *r)
{
	uffd_stop(r);
	unpin(r);
	if (r->map)
		munmap(r->map, npages * page);
	r->map = NULL;
	if (r->shared)
		munmap(r->shared, SLOT_PAGES * page);
	r->shared = NULL;
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	if (r->vm.mem)
		munmap((void *)r->vm.mem, CTL_SIZE);
	r->vm.mem = NULL;
	vm_teardown(&r->vm);
}

/*
 * -p on a file without windows: each hole with a policy is allocated with
 * fallocate(), its node checked and punched again, to find the operation
 * after which a policy stopped holding.
 */
static bool probe_policies(struct run *r, const struct op *o)
{
	int status;
	void *addr;

	/* huge: a page allocated and punched again would split its 2 MiB. */
	if (r->ndm || nnodes < 2 || huge_kind(r->fk))
		return true;
	for (int i = 0; i < npages; i++) {
		if (r->m.present[i] || r->m.armed[i] || r->m.private[i] || r->m.policy[i] < 0)
			continue;
		if (fallocate(r->fd, FALLOC_FL_KEEP_SIZE, (off_t)i * page, page))
			return fail(r, o, "policy probe: fallocate: %s", strerror(errno));
		addr = r->map + (long)i * page;
		(void)*(volatile uint8_t *)addr;
		if (syscall(__NR_move_pages, 0, 1, &addr, NULL, &status, 0))
			return fail(r, o, "policy probe: move_pages: %s", strerror(errno));
		if (fallocate(r->fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, (off_t)i * page, page))
			return fail(r, o, "policy probe: punch: %s", strerror(errno));
		if (status != r->m.policy[i])
			return fail(r, o, "policy probe: hole %d allocates on node %d, its policy is node %d",
				    i, status, r->m.policy[i]);
	}
	return true;
}

/* What the passed runs of each file kind covered (the soak's summary). */
static const char *const page_state_name[NR_PAGE_STATES] = { "hole", "present", "private", "armed" };
static struct {
	long runs, ops;
	long count[NR_KINDS][NR_PAGE_STATES], ev[NR_EVENTS];
} totals[NR_FILE_KINDS];

/* One line per run: how often each operation ran and each event came. */
static void print_coverage(const struct run *r)
{
	char line[2048];
	int n = 0;

	for (int k = 0; k < NR_KINDS; k++) {
		if (r->count[k])
			n += snprintf(line + n, sizeof(line) - n, "%s%s %ld", n ? ", " : "",
				      kind_name[k], r->count[k]);
	}
	for (int e = 0; e < NR_EVENTS && n < (int)sizeof(line); e++)
		n += snprintf(line + n, sizeof(line) - n, "; %s %ld", event_name[e], r->ev[e]);
	ksft_print_msg("coverage, %s file, seed %llu: %s\n", file_kind_name[r->fk],
		       (unsigned long long)r->seed, line);
}

/* One run: @ops operations from @seed on a fresh file of kind @fk. */
static int fsx_run_gen(uint64_t seed, long ops, enum file_kind fk, int gen, char *why,
		       size_t whylen)
{
	struct run *r = calloc(1, sizeof(*r));
	char batch[16] = "0";
	int ret = KSFT_FAIL;

	if (!r) {
		snprintf(why, whylen, "out of memory");
		return KSFT_FAIL;
	}
	*r = (struct run){ .seed = seed, .rng = seed ? seed : 1, .ops = ops, .fk = fk, .gen = gen,
			   .ndm = fk == FK_NDM || fk == FK_NDM_FAILZAP || fk == FK_SWPROT || fk == FK_UFFD ||
				  fk == FK_HUGE_NDM,
			   .fd = -1, .clock_slot = -1, .pin_fd = -1, .pin_page = -1,
			   .uffd = -1, .uffd_stop = { -1, -1 }, .clock_fill = -1,
			   .why = why, .whylen = whylen,
			   .vm = { .kvm = -1, .vm = -1, .vcpu = -1, .gmem = -1 } };
	memset(r->m.policy, -1, sizeof(r->m.policy));
	memset(r->m.vma_policy, -1, sizeof(r->m.vma_policy));
	memset(r->m.node, -1, sizeof(r->m.node));
	r->buf = malloc(MAXRUN * page);
	if (!r->buf)
		goto out;
	if (r->ndm) {
		read_param(NDM_BATCH_PARAM, batch, sizeof(batch));
		r->batch = atoi(batch);
		r->ndm_base = gmem_counter(NDM_FOLIOS);
		if (r->ndm_base < 0) {
			snprintf(why, whylen, "no %s", NDM_FOLIOS);
			goto out;
		}
	}
	/*
	 * One CPU: a vCPU loaded on another asks for a kvmclock update, which
	 * would allocate its page at a time the model cannot know.
	 */
	pin_cpu(0);
	npages = huge_kind(fk) ? HUGE_NPAGES : NPAGES;
	if (!setup(r, why, whylen))
		goto out;
	for (long nr = 0; nr < ops; nr++) {
		struct op *o = &r->history[nr % HISTORY];
		bool was_huge[MAX_PAGES / HUGE_RANGE];
		long fallbacks = 0;

		if (timed_out) {
			snprintf(why, whylen, "%s file, seed %llu: timed out after %ld of %ld operations",
				 file_kind_name[fk], (unsigned long long)seed, nr, ops);
			goto out;
		}
		o->nr = nr;
		o->kind = pick_kind(r);
		pick_range(r, o);
		o->val = (uint8_t)(1 + rnd_below(r, 255));
		r->done = nr + 1;
		r->count[o->kind]++;
		r->state[o->kind][r->m.armed[o->first] ? PS_ARMED : r->m.private[o->first] ? PS_PRIVATE :
				  r->m.present[o->first] ? PS_PRESENT : PS_HOLE]++;
		if (verbose)
			ksft_print_msg("#%ld %s pages %d-%d value %#x\n", o->nr, kind_name[o->kind],
				       o->first, o->first + o->n - 1, o->val);
		if (huge_kind(fk)) {
			fallbacks = gmem_counter(HUGE_FALLBACKS);
			memcpy(was_huge, r->m.huge, sizeof(was_huge));
		}
		if (!do_op(r, o) || !uffd_settle(r, o))
			goto out;
		sync_clock(r);
		if (huge_kind(fk) && gmem_counter(HUGE_FALLBACKS) != fallbacks)
			model_huge_fallback(r, was_huge);
		if (probe_each && (!probe(r, o) || !probe_policies(r, o) || !uffd_settle(r, o)))
			goto out;
	}
	/* The end state, once more. */
	{
		struct op end = { .nr = ops, .kind = PROBE, .first = 0, .n = npages };

		if (!probe(r, &end))
			goto out;
		for (int i = 0; i < npages && r->map; i++)
			if (r->m.present[i] && !check_page(r, &end, i))
				goto out;
	}
	ret = KSFT_PASS;
	snprintf(why, whylen, "seed %llu: %ld operations, %s file", (unsigned long long)seed, ops,
		 file_kind_name[fk]);
	print_coverage(r);
	totals[fk].runs++;
	totals[fk].ops += ops;
	for (int k = 0; k < NR_KINDS; k++)
		for (int st = 0; st < NR_PAGE_STATES; st++)
			totals[fk].count[k][st] += r->state[k][st];
	for (int e = 0; e < NR_EVENTS; e++)
		totals[fk].ev[e] += r->ev[e];
out:
	teardown(r);
	/* Everything the file had is back in the direct map once it is closed. */
	if (ret == KSFT_PASS && r->ndm && gmem_settle_counter(NDM_FOLIOS, r->ndm_base) != r->ndm_base) {
		snprintf(why, whylen, "seed %llu: after close, %ld pages are still out of the direct map",
			 (unsigned long long)seed, gmem_counter(NDM_FOLIOS) - r->ndm_base);
		ret = KSFT_FAIL;
	}
	free(r->buf);
	free(r);
	return ret;
}

static int fsx_run(uint64_t seed, long ops, enum file_kind fk, char *why, size_t whylen)
{
	return fsx_run_gen(seed, ops, fk, op_gen, why, whylen);
}

/*
 * Operations per run: 5000, about 2 s each under TCG; 1000 under KASAN and
 * lockdep (the shim kernel), where an operation costs ten times as much.
 */
#define OPS		5000
#define OPS_DEBUG	1000
static long ops_per_run = OPS;
static const uint64_t fixed_seeds[] = { 1, 2, 3, 20261206 };

/* Seeds that once failed, replayed as they failed, and what each found. */
static const struct {
	uint64_t seed;
	long ops;
	enum file_kind fk;
	int gen;		/* the operation set it was found with */
} found_seeds[] = {
	/* The model let a host fault's window run past the VMA mbind() split off. */
	{ 139882960663927ULL, 838, FK_NDM, 0 },
	/*
	 * The first soak: a vCPU fault's window mapped the pages after the run
	 * it allocated too, and so prepared (took out of the direct map) a page
	 * a failed zap had left (KVM patch 0028, fixed there).
	 */
	{ 179186039080825ULL, 546, FK_NDM_FAILZAP, 0 },
};
static bool offered[NR_FILE_KINDS];
static const char *not_offered[NR_FILE_KINDS] = {
	[FK_NDM] = "GUEST_MEMFD_FLAG_NO_DIRECT_MAP not offered (the kernel lacks mm-shim 0007)",
	[FK_NDM_FAILZAP] = "GUEST_MEMFD_FLAG_NO_DIRECT_MAP not offered (the kernel lacks mm-shim 0007)",
	[FK_SWPROT] = "GUEST_MEMFD_FLAG_NO_DIRECT_MAP not offered (the kernel lacks mm-shim 0007)",
	[FK_UFFD] = "GUEST_MEMFD_FLAG_NO_DIRECT_MAP not offered (the kernel lacks mm-shim 0007)",
	[FK_HUGE] = "GUEST_MEMFD_FLAG_HUGEPAGE not offered",
	[FK_HUGE_WRITE] = "GUEST_MEMFD_FLAG_HUGEPAGE | WRITE not offered",
	[FK_HUGE_PIN] = "GUEST_MEMFD_FLAG_HUGEPAGE | WRITE not offered",
	[FK_HUGE_INPLACE] = "GUEST_MEMFD_FLAG_HUGEPAGE not offered to a VM that converts in place",
	[FK_HUGE_NDM] = "GUEST_MEMFD_FLAG_NO_DIRECT_MAP not offered with HUGEPAGE (the kernel lacks mm-shim 0007, 0010)",
};

static int fixed(enum file_kind fk, char *why, size_t whylen)
{
	int r = KSFT_PASS;

	if (!offered[fk]) {
		snprintf(why, whylen, "%s", not_offered[fk]);
		return KSFT_SKIP;
	}
	/* The shim kernel has it: without it, this kind would pass untried. */
	if (fk == FK_NDM_FAILZAP && access(GMEM_FAIL_NDM_ZAP, F_OK)) {
		snprintf(why, whylen, "no %s (CONFIG_FAULT_INJECTION_DEBUG_FS)", GMEM_FAIL_NDM_ZAP);
		return KSFT_FAIL;
	}
	int found = 0;
	/*
	 * The two kinds of 2 MiB folios, one with write() and one without,
	 * share the time of one kind: the first two seeds each.
	 */
	size_t nr_seeds = huge_kind(fk) ? 2 : sizeof(fixed_seeds) / sizeof(fixed_seeds[0]);

	for (size_t i = 0; r == KSFT_PASS && i < nr_seeds; i++)
		r = fsx_run(fixed_seeds[i], ops_per_run, fk, why, whylen);
	for (size_t i = 0; r == KSFT_PASS && i < sizeof(found_seeds) / sizeof(found_seeds[0]); i++) {
		if (found_seeds[i].fk != fk)
			continue;
		r = fsx_run_gen(found_seeds[i].seed, found_seeds[i].ops, fk, found_seeds[i].gen,
				why, whylen);
		found++;
	}
	if (r == KSFT_PASS)
		snprintf(why, whylen, "%zu seeds x %ld operations, %d seeds that once failed",
			 nr_seeds, ops_per_run, found);
	return r;
}

static int fixed_plain(char *why, size_t whylen)
{
	return fixed(FK_PLAIN, why, whylen);
}

static int fixed_ndm(char *why, size_t whylen)
{
	return fixed(FK_NDM, why, whylen);
}

static int fixed_inplace(char *why, size_t whylen)
{
	return fixed(FK_INPLACE, why, whylen);
}

static int fixed_ndm_failzap(char *why, size_t whylen)
{
	return fixed(FK_NDM_FAILZAP, why, whylen);
}

static int fixed_swprot(char *why, size_t whylen)
{
	return fixed(FK_SWPROT, why, whylen);
}

static int fixed_uffd(char *why, size_t whylen)
{
	return fixed(FK_UFFD, why, whylen);
}

static int fixed_huge(char *why, size_t whylen)
{
	return fixed(FK_HUGE, why, whylen);
}

static int fixed_huge_write(char *why, size_t whylen)
{
	return fixed(FK_HUGE_WRITE, why, whylen);
}

static int fixed_huge_pin(char *why, size_t whylen)
{
	return fixed(FK_HUGE_PIN, why, whylen);
}

static int fixed_huge_inplace(char *why, size_t whylen)
{
	return fixed(FK_HUGE_INPLACE, why, whylen);
}

static int fixed_huge_ndm(char *why, size_t whylen)
{
	return fixed(FK_HUGE_NDM, why, whylen);
}

/*
 * The concurrency mode (-j THREADS; a case per file kind offered, plain,
 * ndm and inplace): THREADS threads run random host operations on
 * overlapping ranges of one file (writes and reads through the mapping,
 * pwrite(), fallocate(), punch, MADV_RANDOM/NORMAL; in the inplace kind
 * the first thread converts ranges instead and the others' accesses may
 * SIGBUS) while the main thread's vCPU reads the memslot.
 * Values race, so no read is checked against a model; what must hold
 * whatever the interleaving is checked once the threads are done: every
 * syscall succeeded, every vCPU round finished, a page the conversions
 * left private SIGBUSes on the host's read and a shared one reads, every
 * page the file has is out of the direct map (NO_DIRECT_MAP), and with the file and the VM gone
 * the direct map count, kvm's vmap() aliases and MemAvailable are back
 * where they were (a splat fails the tier's run).
 */
#define THREAD_OPS	3000
#define THREAD_OPS_DEBUG 1500
#define MEMAVAIL_SLACK_KIB (16 * 1024)	/* KASAN's quarantine, per-CPU lists */

struct worker {
	struct run *r;
	uint64_t rng;
	long ops;
	uint8_t *buf;
	char why[256];
	bool failed;
	pthread_t tid;
	int nr;			/* inplace: worker 0 converts, the others touch */
	long converted, eagain, sigbus;
};

/*
 * inplace: what worker 0's conversions left, page by page (a conversion
 * that fails with EAGAIN changes nothing): once the threads are done, a
 * private page must SIGBUS on the host's read, a shared one read.
 */
static bool threads_private[MAX_PAGES];

/* The in-place kind's thread operations: each may SIGBUS on a private page. */
static const char *worker_inplace_op(struct worker *w, int kind, int first, int n)
{
	struct run *r = w->r;
	uint64_t err = 0;
	int e;

	if (w->nr == 0) {
		bool to = kind & 1;

		e = gmem_set_attrs(r->fd, (uint64_t)first * page, (uint64_t)n * page,
				   to ? KVM_MEMORY_ATTRIBUTE_PRIVATE : 0, &err);
		if (e == -EAGAIN) {
			w->eagain++;
			return NULL;
		}
		if (e) {
			errno = -e;
			return to ? "conversion to private" : "conversion to shared";
		}
		for (int i = first; i < first + n; i++)
			threads_private[i] = to;
		w->converted++;
		return NULL;
	}
	for (int i = first; i < first + n && kind < 60; i++)
		w->sigbus += gmem_sigbus(r->map + (long)i * page, kind < 30);
	return NULL;
}

static int workers_left;	/* the main thread's vCPU reads until it is 0 */

static uint64_t worker_rnd(struct worker *w)
{
	w->rng ^= w->rng >> 12;
	w->rng ^= w->rng << 25;
	w->rng ^= w->rng >> 27;
	return w->rng * 2685821657736338717ULL;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct run *r = w->r;

	for (long nr = 0; nr < w->ops && !timed_out; nr++) {
		int kind = (int)(worker_rnd(w) % 100), n = 1 + (int)(worker_rnd(w) % MAXRUN);
		int first = (int)(worker_rnd(w) % (npages - n + 1));
		uint8_t val = (uint8_t)(1 + worker_rnd(w) % 255), *p = r->map + (long)first * page;
		off_t off = (off_t)first * page;
		size_t len = (size_t)n * page;
		const char *what = NULL;

		if (r->fk == FK_INPLACE && (w->nr == 0 || kind < 60)) {
			what = worker_inplace_op(w, kind, first, n);
		} else if (kind < 30) {
			memset(p, val, len);
		} else if (kind < 60) {
			for (int i = 0; i < n; i++)
				(void)*(volatile uint8_t *)(p + (long)i * page);
		} else if (kind < 75 && r->fk != FK_INPLACE) {
			memset(w->buf, val, len);
			if (pwrite(r->fd, w->buf, len, off) != (ssize_t)len)
				what = "pwrite";
		} else if (kind < 85) {
			/* inplace: no write(), so fallocate() from 60 on. */
			if (fallocate(r->fd, FALLOC_FL_KEEP_SIZE, off, len))
				what = "fallocate";
		} else if (kind < 97) {
			if (fallocate(r->fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, off, len))
				what = "punch hole";
		} else if (madvise(r->map, npages * page, kind & 1 ? MADV_RANDOM : MADV_NORMAL)) {
			what = "madvise";
		}
		if (what) {
			snprintf(w->why, sizeof(w->why), "op #%ld, %s of pages %d-%d: %s", nr, what,
				 first, first + n - 1, strerror(errno));
			w->failed = true;
			break;
		}
	}
	__atomic_sub_fetch(&workers_left, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int fsx_threads(uint64_t seed, long ops, enum file_kind fk, int nthreads, char *why,
		       size_t whylen)
{
	struct run *r = calloc(1, sizeof(*r));
	struct worker *w = calloc(nthreads, sizeof(*w));
	long avail0 = gmem_meminfo_kib("MemAvailable"), aliases0 = gmem_kvm_vmap_aliases();
	long base = -1, rounds = 0, avail, aliases, got, out;
	int ret = KSFT_FAIL, started = 0;
	char vwhy[256] = "";

	npages = NPAGES;
	if (!r || !w) {
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	*r = (struct run){ .seed = seed, .rng = seed ? seed : 1, .fk = fk, .ndm = fk == FK_NDM,
			   .fd = -1, .clock_slot = -1, .pin_fd = -1, .pin_page = -1, .why = why,
			   .whylen = whylen,
			   .vm = { .kvm = -1, .vm = -1, .vcpu = -1, .gmem = -1 } };
	if (r->ndm) {
		base = gmem_counter(NDM_FOLIOS);
		if (base < 0) {
			snprintf(why, whylen, "no %s", NDM_FOLIOS);
			goto out;
		}
	}
	if (!setup(r, why, whylen))
		goto out;
	memset(threads_private, 0, sizeof(threads_private));
	__atomic_store_n(&workers_left, nthreads, __ATOMIC_RELEASE);
	for (int t = 0; t < nthreads; t++) {
		w[t] = (struct worker){ .r = r, .rng = (seed ^ (0x9e3779b97f4a7c15ULL * (t + 1))) | 1,
					.ops = ops, .buf = malloc(MAXRUN * page), .nr = t };
		if (!w[t].buf || pthread_create(&w[t].tid, NULL, worker_main, &w[t])) {
			snprintf(why, whylen, "starting thread %d", t);
			/* The ones that never started are not waited for. */
			__atomic_sub_fetch(&workers_left, nthreads - t, __ATOMIC_RELEASE);
			goto join;
		}
		started++;
	}
	/* The vCPU reads the memslot's pages meanwhile: each round must finish. */
	while (!timed_out && __atomic_load_n(&workers_left, __ATOMIC_ACQUIRE) > 0) {
		int k = (int)(rnd(r) % SLOT_PAGES);
		int s = guest_round_at(&r->vm, SLOT_GPA + k * page, page, 0, 0, NULL, vwhy, sizeof(vwhy));

		if (s < 0) {
			snprintf(why, whylen, "%s file, seed %llu: vCPU round %ld over memslot page %d: %s",
				 file_kind_name[fk], (unsigned long long)seed, rounds, k, vwhy);
			goto join;
		}
		rounds++;
	}
join:
	for (int t = 0; t < started; t++)
		pthread_join(w[t].tid, NULL);
	started = 0;
	if (why[0])
		goto out;
	if (timed_out) {
		snprintf(why, whylen, "%s file, seed %llu: timed out", file_kind_name[fk],
			 (unsigned long long)seed);
		goto out;
	}
	for (int t = 0; t < nthreads; t++) {
		if (w[t].failed) {
			snprintf(why, whylen, "%s file, seed %llu, thread %d: %s", file_kind_name[fk],
				 (unsigned long long)seed, t, w[t].why);
			goto out;
		}
	}
	/* Quiet now: a private page is the guest's alone. */
	for (int i = 0; i < npages && r->fk == FK_INPLACE; i++) {
		if (gmem_sigbus(r->map + (long)i * page, false) != threads_private[i]) {
			snprintf(why, whylen, "%s file, seed %llu: page %d is %s after the threads, but the host %s read it",
				 file_kind_name[fk], (unsigned long long)seed, i,
				 threads_private[i] ? "private" : "shared",
				 threads_private[i] ? "can" : "cannot");
			goto out;
		}
	}
	/* ... and every page the file has is out of the direct map. */
	got = gmem_cached_pages(r->fd, 0, npages * page);
	if (r->ndm) {
		out = gmem_counter(NDM_FOLIOS) - base;
		if (out != got) {
			snprintf(why, whylen, "%s file, seed %llu: the file has %ld pages, %ld are out of the direct map",
				 file_kind_name[fk], (unsigned long long)seed, got, out);
			goto out;
		}
	}
	ret = KSFT_PASS;
	snprintf(why, whylen, "seed %llu: %d threads x %ld operations, %ld vCPU rounds, %s file (%ld pages at the end)",
		 (unsigned long long)seed, nthreads, ops, rounds, file_kind_name[fk], got);
	if (r->fk == FK_INPLACE) {
		long sigbus = 0;

		for (int t = 1; t < nthreads; t++)
			sigbus += w[t].sigbus;
		snprintf(why + strlen(why), whylen - strlen(why),
			 "; %ld conversions, %ld EAGAIN, %ld host SIGBUS",
			 w[0].converted, w[0].eagain, sigbus);
	}
out:
	for (int t = 0; t < started; t++)
		pthread_join(w[t].tid, NULL);
	if (r)
		teardown(r);
	/* Everything back where it was once the file and the VM are gone. */
	if (ret == KSFT_PASS && base >= 0 && gmem_settle_counter(NDM_FOLIOS, base) != base) {
		snprintf(why, whylen, "seed %llu: after close, %ld pages are still out of the direct map",
			 (unsigned long long)seed, gmem_counter(NDM_FOLIOS) - base);
		ret = KSFT_FAIL;
	}
	aliases = gmem_kvm_vmap_aliases();
	if (ret == KSFT_PASS && aliases > aliases0) {
		snprintf(why, whylen, "seed %llu: %ld vmap() aliases of kvm.ko left (%ld before)",
			 (unsigned long long)seed, aliases, aliases0);
		ret = KSFT_FAIL;
	}
	avail = gmem_meminfo_kib("MemAvailable");
	if (ret == KSFT_PASS && avail0 > 0 && avail < avail0 - MEMAVAIL_SLACK_KIB) {
		snprintf(why, whylen, "seed %llu: MemAvailable %ld KiB after, %ld before (more than %d KiB gone)",
			 (unsigned long long)seed, avail, avail0, MEMAVAIL_SLACK_KIB);
		ret = KSFT_FAIL;
	}
	for (int t = 0; w && t < nthreads; t++)
		free(w[t].buf);
	free(w);
	free(r);
	return ret;
}

static long thread_ops = THREAD_OPS;
static int nthreads = 3;
static bool threads_replay;	/* -j: one concurrency run, then exit */

static int threads_case(enum file_kind fk, char *why, size_t whylen)
{
	uint64_t seed;

	if (!offered[fk]) {
		snprintf(why, whylen, "%s", not_offered[fk]);
		return KSFT_SKIP;
	}
	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = (uint64_t)time(NULL);
	seed &= 0xffffffffffffULL;
	ksft_print_msg("threads: %s file, seed %llu (gmem_fsx -j %d -s %llu -n %ld -k %s)\n",
		       file_kind_name[fk], (unsigned long long)seed, nthreads,
		       (unsigned long long)seed, thread_ops, file_kind_name[fk]);
	return fsx_threads(seed, thread_ops, fk, nthreads, why, whylen);
}

static int threads_plain(char *why, size_t whylen)
{
	return threads_case(FK_PLAIN, why, whylen);
}

static int threads_ndm(char *why, size_t whylen)
{
	return threads_case(FK_NDM, why, whylen);
}

static int threads_inplace(char *why, size_t whylen)
{
	return threads_case(FK_INPLACE, why, whylen);
}

/* A seed of this run's own: a failure names it, and it replays. */
static int random_seed(char *why, size_t whylen)
{
	uint64_t seed;
	int r = KSFT_PASS;

	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = (uint64_t)time(NULL);
	seed &= 0xffffffffffffULL;
	ksft_print_msg("random seed %llu\n", (unsigned long long)seed);
	for (int fk = 0; r == KSFT_PASS && fk < NR_FILE_KINDS; fk++) {
		if (!offered[fk] || (fk == FK_NDM_FAILZAP && access(GMEM_FAIL_NDM_ZAP, F_OK)))
			continue;
		/* A run of each kind: each has the time a case has (ten kinds would not). */
		arm_timeout();
		r = fsx_run(seed, ops_per_run, fk, why, whylen);
	}
	return r;
}

/*
 * make soak: random seeds, the file kinds in turn, until @soak_seconds have
 * passed; the first failure ends it (its line says how to replay it). Then
 * operations per second, and what was covered: each operation kind x file
 * kind x the state of the op's first page before it.
 */
static int soak(void)
{
	double t0 = gmem_now(), t;
	char why[512] = "";
	long ops = 0, runs = 0;
	int r = KSFT_PASS;

	ksft_print_header();
	ksft_set_plan(1);
	for (int fk = 0; r == KSFT_PASS && gmem_now() - t0 < soak_seconds; fk = (fk + 1) % NR_FILE_KINDS) {
		uint64_t seed;

		if (!offered[fk])
			continue;
		if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
			seed = (uint64_t)(gmem_now() * 1e6);
		seed &= 0xffffffffffffULL;
		r = fsx_run(seed, ops_per_run, fk, why, sizeof(why));
	}
	t = gmem_now() - t0;
	for (int fk = 0; fk < NR_FILE_KINDS; fk++) {
		ops += totals[fk].ops;
		runs += totals[fk].runs;
	}
	ksft_print_msg("soak: %ld runs passed, %ld operations in %.0f s: %.0f operations/s\n",
		       runs, ops, t, ops / t);
	for (int fk = 0; fk < NR_FILE_KINDS; fk++) {
		if (!totals[fk].runs)
			continue;
		ksft_print_msg("soak coverage, %s file (%ld runs): operation: %s / %s / %s / %s\n",
			       file_kind_name[fk], totals[fk].runs, page_state_name[0], page_state_name[1],
			       page_state_name[2], page_state_name[3]);
		for (int k = 0; k < NR_KINDS; k++) {
			const long *c = totals[fk].count[k];

			if (c[0] + c[1] + c[2] + c[3])
				ksft_print_msg("soak coverage, %s file: %-12s %ld / %ld / %ld / %ld\n",
					       file_kind_name[fk], kind_name[k], c[0], c[1], c[2], c[3]);
		}
		for (int e = 0; e < NR_EVENTS; e++)
			ksft_print_msg("soak coverage, %s file: event: %s %ld\n", file_kind_name[fk],
				       event_name[e], totals[fk].ev[e]);
	}
	ksft_test_result_code(r, "soak: random seeds on every file kind offered", "%s", why);
	ksft_finished();
	return 0;
}

static int (*const fixed_fn[NR_FILE_KINDS])(char *why, size_t whylen) = {
	fixed_plain, fixed_ndm, fixed_inplace, fixed_ndm_failzap, fixed_swprot, fixed_uffd,
	fixed_huge, fixed_huge_write, fixed_huge_pin, fixed_huge_inplace, fixed_huge_ndm,
};

static int (*const threads_fn[NR_FILE_KINDS])(char *why, size_t whylen) = {
	[FK_PLAIN] = threads_plain, [FK_NDM] = threads_ndm, [FK_INPLACE] = threads_inplace,
};

static const struct gmem_case cases[] = {
	{ "plain file: fixed seeds, every read and probe as the model says", fixed_plain },
	{ "NO_DIRECT_MAP file: fixed seeds, windows and direct map counted as the model says",
	  fixed_ndm },
	{ "in-place file: fixed seeds, conversions, pins and private pages as the model says",
	  fixed_inplace },
	{ "NO_DIRECT_MAP file with failing zaps: fixed seeds, pages left in the direct map as the model says",
	  fixed_ndm_failzap },
	{ "SW_PROTECTED VM, NO_DIRECT_MAP private memory: fixed seeds, vCPU windows of one kind as the model says",
	  fixed_swprot },
	{ "userfaultfd on a NO_DIRECT_MAP file: fixed seeds, every MISSING and MINOR event as the model says",
	  fixed_uffd },
	{ "2 MiB folios (HUGEPAGE): fixed seeds, a touch of a hole allocates its 2 MiB, a punch splits, as the model says",
	  fixed_huge },
	{ "2 MiB folios with write() (HUGEPAGE | WRITE): fixed seeds, a pwrite() of a hole allocates its 2 MiB, as the model says",
	  fixed_huge_write },
	{ "2 MiB folios pinned by a pipe: fixed seeds, a punch of part of a pinned folio clears it and keeps it whole, as the model says",
	  fixed_huge_pin },
	{ "2 MiB folios converting in place: fixed seeds, pages private inside whole folios, pins of a folio refuse its conversion, as the model says",
	  fixed_huge_inplace },
	{ "2 MiB folios out of the direct map: fixed seeds, a punch of part of a folio clears it and keeps it whole and out, as the model says",
	  fixed_huge_ndm },
	{ "a random seed on each file kind offered", random_seed },
	{ "threads: 3 threads and a vCPU on a plain file, memory back to its baseline", threads_plain },
	{ "threads: 3 threads and a vCPU on a NO_DIRECT_MAP file, every page out of the direct map, memory back to its baseline",
	  threads_ndm },
	{ "threads: 3 threads and a vCPU on an in-place file, one converting, private pages unreadable by the host, memory back to its baseline",
	  threads_inplace },
};

static void restore_params(void)
{
	if (wait_saved[0])
		gmem_write_file(WAIT_PARAM, wait_saved);
}

int main(int argc, char **argv)
{
	enum file_kind fk = FK_PLAIN;
	uint64_t seed = 0;
	long ops = OPS;
	bool replay = false, ops_given = false;
	const char *only_cases = NULL;	/* -c [threads-]KIND */
	bool only_threads = false;
	char why[512] = "";
	int kvm, opt;

	page = getpagesize();
	while ((opt = getopt(argc, argv, "s:n:k:vpt:j:g:c:")) != -1) {
		switch (opt) {
		case 's':
			seed = strtoull(optarg, NULL, 0);
			replay = true;
			break;
		case 'n':
			ops = strtol(optarg, NULL, 0);
			ops_given = true;
			break;
		case 'v':
			verbose = true;
			break;
		case 'p':
			probe_each = true;
			break;
		case 't':
			soak_seconds = strtol(optarg, NULL, 0);
			break;
		case 'g':
			op_gen = atoi(optarg);
			if (op_gen < 0 || op_gen > OP_GEN) {
				fprintf(stderr, "-g: 0 to %d\n", OP_GEN);
				return 2;
			}
			break;
		case 'j':
			nthreads = atoi(optarg);
			if (nthreads < 1 || nthreads > 16) {
				fprintf(stderr, "-j: 1 to 16 threads\n");
				return 2;
			}
			threads_replay = true;
			break;
		case 'c':
			only_cases = optarg;
			/* -c threads-KIND: that kind's threads case. */
			only_threads = !strncmp(optarg, "threads-", 8);
			optarg += only_threads ? 8 : 0;
			__attribute__((fallthrough));	/* -c names a file kind */
		case 'k':
			for (fk = 0; fk < NR_FILE_KINDS && strcmp(optarg, file_kind_name[fk]); fk++)
				;
			if (fk == NR_FILE_KINDS) {
				fprintf(stderr, "-k: plain, ndm, inplace, ndm-failzap, swprot, uffd, huge, huge-write, huge-pin or huge-inplace\n");
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: %s [-s SEED] [-n OPS] [-k plain|ndm|inplace|ndm-failzap|swprot|uffd|huge|huge-write|huge-pin|huge-inplace] [-g GEN] [-v] [-p] [-j THREADS] | -t SECONDS | -c [threads-]KIND\n", argv[0]);
			return 2;
		}
	}

	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		ksft_exit_skip("/dev/kvm: %s\n", strerror(errno));
	if (!gmem_has_flags(kvm, FLAGS)) {
		ksft_print_msg("no GUEST_MEMFD_FLAG_MMAP | INIT_SHARED | WRITE: nothing to exercise\n");
		if (gmem_skip_or_fail() == KSFT_SKIP)
			ksft_exit_skip("these modules cannot map or write guest_memfd\n");
		ksft_exit_fail_msg("our modules must map and write guest_memfd\n");
	}
	if (kvm_cap(kvm, KVM_CAP_USERFAULT) != 1)
		ksft_exit_fail_msg("our modules offer guest_memfd writes but not KVM_CAP_USERFAULT\n");
	offered[FK_PLAIN] = true;
	offered[FK_NDM] = gmem_has_flags(kvm, FLAGS | GUEST_MEMFD_FLAG_NO_DIRECT_MAP);
	offered[FK_INPLACE] = access(GMEM_IN_PLACE_PARAM, W_OK) == 0;
	offered[FK_NDM_FAILZAP] = offered[FK_NDM];
	offered[FK_SWPROT] = offered[FK_NDM];
	/* userfaultfd on guest_memfd needs mm's interface: the shim kernel's. */
	offered[FK_UFFD] = offered[FK_NDM] && gmem_kernel_exports("handle_userfault") == 1;
	offered[FK_HUGE] = gmem_has_flags(kvm, INPLACE_FLAGS | GUEST_MEMFD_FLAG_HUGEPAGE);
	offered[FK_HUGE_WRITE] = gmem_has_flags(kvm, FLAGS | GUEST_MEMFD_FLAG_HUGEPAGE);
	offered[FK_HUGE_PIN] = offered[FK_HUGE_WRITE];
	offered[FK_HUGE_NDM] = gmem_has_flags(kvm, FLAGS | GUEST_MEMFD_FLAG_HUGEPAGE |
					      GUEST_MEMFD_FLAG_NO_DIRECT_MAP);
	if (offered[FK_NDM] && !offered[FK_UFFD])
		not_offered[FK_UFFD] = "this kernel has no userfaultfd for guest_memfd (mm-shim 0008/0009)";
	if (!offered[FK_INPLACE])
		ksft_exit_fail_msg("our modules without kvm.gmem_in_place_conversion\n");
	offered[FK_HUGE_INPLACE] = inplace_offers(kvm, INPLACE_FLAGS | GUEST_MEMFD_FLAG_HUGEPAGE);
	/*
	 * Conversion fails at once on a pinned page instead of waiting for it
	 * (the wait is the mm-shim kernel's; Debian's kernel never waits).
	 */
	read_param(WAIT_PARAM, wait_saved, sizeof(wait_saved));
	if (wait_saved[0] && !gmem_write_file(WAIT_PARAM, "0"))
		ksft_exit_fail_msg("cannot set %s\n", WAIT_PARAM);
	atexit(restore_params);
	close(kvm);
	gmem_counter(NDM_FOLIOS);	/* mounts debugfs */
	nnodes = read_online_nodes();
	if (nnodes > 8)
		nnodes = 8;
	{
		unsigned int cpu, node;

		pin_cpu(0);
		local_node = syscall(__NR_getcpu, &cpu, &node, NULL) ? 0 : (int)node;
	}
	if (gmem_kernel_exports("__asan_load8") == 1)
		ops_per_run = OPS_DEBUG, thread_ops = THREAD_OPS_DEBUG;
	ksft_print_msg("%ld operations per run\n", ops_per_run);

	/* The threads' operation sequences replay; their interleaving does not. */
	if (threads_replay) {
		int r = !offered[fk] ? KSFT_SKIP :
			fsx_threads(seed, ops_given ? ops : thread_ops, fk, nthreads, why, sizeof(why));

		printf("%s: %s\n", r == KSFT_PASS ? "ok" : "FAIL", r == KSFT_SKIP ? not_offered[fk] : why);
		return r == KSFT_PASS ? 0 : 1;
	}

	if (replay) {
		int r = offered[fk] ? fsx_run(seed, ops, fk, why, sizeof(why)) : KSFT_SKIP;

		printf("%s: %s\n", r == KSFT_PASS ? "ok" : "FAIL", r == KSFT_SKIP ? not_offered[fk] : why);
		return r == KSFT_PASS ? 0 : 1;
	}
	if (soak_seconds > 0)
		return soak();
	/*
	 * -c KIND: that kind's fixed seeds alone, -c threads-KIND its threads
	 * case (a must-fail run's one case).
	 */
	if (only_cases) {
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			if (cases[i].fn == (only_threads ? threads_fn[fk] : fixed_fn[fk]))
				run_cases(&cases[i], 1);
		return 0;
	}
	run_cases(cases, sizeof(cases) / sizeof(cases[0]));
	return 0;
}
