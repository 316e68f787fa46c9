// SPDX-License-Identifier: GPL-2.0
/*
 * gmem_linux_boot_test: a small VMM that boots an unmodified Linux kernel
 * with all of its RAM on guest_memfd, through our modules.
 *
 * The guest: a bzImage (by default Debian's, staged next to this program as
 * boot-vmlinuz) entered through the x86 64-bit boot protocol (boot_params
 * with an e820 map and a command line, an initramfs the VMM packs from
 * boot-init, tests/boot/init.c), one vCPU with KVM_GET_SUPPORTED_CPUID, the
 * in-kernel irqchip and PIT, a 16450 UART on 0x3f8 whose output is copied
 * here, and two ports of ours: 0x501 ends the run with the guest's verdict,
 * 0x502 brackets a "sleep 2" that the VMM times.
 *
 * Memory (-M): gmem (default: a default VM, an MMAP | INIT_SHARED
 * guest_memfd bound as a gmem-only memslot, userspace_addr the VMM's own
 * mapping), ndm (the same with NO_DIRECT_MAP), huge (the same with 2 MiB
 * folios, GUEST_MEMFD_FLAG_HUGEPAGE), v7 (a SW_PROTECTED VM and a
 * flag-less guest_memfd with kvm.gmem_mainline_abi=0), anon (anonymous
 * memory, 4 KiB pages: the control) or thp (anonymous memory with THP: the
 * control of huge). -w loads the kernel and initramfs with pwrite() on
 * the guest_memfd (GUEST_MEMFD_FLAG_WRITE) instead of memcpy. -b other
 * binds the mapping to the node the VMM does not run on (mbind before the
 * first byte is written) and checks where every page the guest touched is.
 *
 * Cases (TAP): it boots to init; MemTotal matches the memory given; a
 * 64 MiB fill reads back; the guest's marker is found through the VMM's
 * mapping at the guest-physical address the guest reports (one copy of the
 * memory); the clocksource is kvm-clock; "sleep 2" takes about 2 s of host
 * time; with -b, every resident page is on the bound node (move_pages());
 * huge: all of the file is 2 MiB folios and the vCPU maps 2 MiB.
 * Times: "# time: boot to init: S s" and the whole run.
 *
 *   gmem_linux_boot_test[.anon|.v7|.ndm|.huge|.write|.numa] [-M gmem|ndm|huge|v7|anon|thp]
 *       [-w] [-b other] [-m MiB] [-k bzImage] [-i init] [-a "extra args"] [-t s]
 * The name's suffix selects the variant a list runs; the options override
 * it (-a "loglevel=8" shows the guest's whole boot log). BOOT_NO_PV_EOI=1 in
 * the environment hides KVM's PV EOI from the guest: an experiment on the
 * interrupts that nested TCG delivers with interrupts disabled (docs/linux-guest.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <asm/bootparam.h>
#include <linux/kvm.h>

#include "kselftest.h"
#include "gmem_test.h"

#define MPOL_BIND	2	/* <linux/mempolicy.h>, without libnuma */

/* Guest-physical layout below 1 MiB, page by page. */
#define GDT_GPA		0x1000
#define PML4_GPA	0x2000
#define PDPT_GPA	0x3000
#define PD_GPA		0x4000		/* four pages: the first 4 GiB, 2 MiB pages */
#define ZERO_PAGE_GPA	0x8000		/* struct boot_params */
#define CMDLINE_GPA	0x9000
#define CMDLINE_MAX	4096
#define KERNEL_GPA	0x100000
#define EBDA_START	0x9fc00

#define SERIAL_BASE	0x3f8
#define EXIT_PORT	0x501
#define TIME_PORT	0x502

static const char *mode = "gmem";
static bool use_write, bind_other;
static size_t mem_size = 256UL << 20;
static int timeout_s = 180;	/* with a second boot, under the lists' 300 s */
static char kernel_path[PATH_MAX], init_path[PATH_MAX], extra_args[1024];

static int kvm_fd, vm_fd, vcpu_fd, gmem_fd = -1;
static uint8_t *mem;
static struct kvm_run *run;
static volatile sig_atomic_t timed_out;
/*
 * Init comes 9-16 s after the start, 30 s under load. A boot that has not
 * got there in 90 s hung (see main()) and gets one more VM.
 */
#define INIT_TIMEOUT_S	90
static bool hung_before_init;
/* RIP and the kernel-text words on the stack of the last hang, by name. */
static char hang_trace[2048];

/* --- what the guest reported ----------------------------------------- */
static struct {
	bool init, marker_seen, done;
	double init_host_s, uptime_s, fill_ms;
	long memtotal_kib, fill_mib, fill_errors, guest_errors;
	long mem_avail_kib, mem_total_kib, klog_errors;	/* "Memory: A/T available" */
	char clocksource[64], marker[80];
	unsigned long long marker_gpa;
	double t_sleep[3];		/* host time at the 0x502 writes 1 and 2 */
	int exit_code;			/* the value written to 0x501, -1: none */
} g = { .exit_code = -1, .fill_errors = -1, .guest_errors = -1, .klog_errors = -1 };

static double t0;

/* --- guest memory ------------------------------------------------------- */

/*
 * With write(), the guest's image is built in @shadow (anonymous memory,
 * never the guest_memfd mapping, which a read would fill by a host fault)
 * and only its pages in @written go to the file, by pwrite(): every other
 * page stays a hole.
 */
static uint8_t *shadow;
static bool *written;

/* Put @len bytes at @gpa: memcpy into the mapping, or into the shadow. */
static void guest_put(uint64_t gpa, const void *src, size_t len)
{
	size_t page = getpagesize();

	if (!use_write) {
		memcpy(mem + gpa, src, len);
		return;
	}
	if (!shadow) {
		shadow = mmap(NULL, mem_size, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		written = calloc(mem_size / page, sizeof(*written));
		if (shadow == MAP_FAILED || !written)
			ksft_exit_fail_msg("the write() shadow: %s\n", strerror(errno));
	}
	memcpy(shadow + gpa, src, len);
	for (size_t p = gpa / page; p < (gpa + len + page - 1) / page; p++)
		written[p] = true;
}

/* The shadow's written pages into the file, run by run: how many pages. */
static long write_shadow(void)
{
	size_t page = getpagesize(), n = mem_size / page, i = 0, j;
	long pages = 0;

	while (i < n) {
		if (!written[i]) {
			i++;
			continue;
		}
		for (j = i; j < n && written[j]; j++)
			;
		if (pwrite(gmem_fd, shadow + i * page, (j - i) * page, i * page) !=
		    (ssize_t)((j - i) * page))
			ksft_exit_fail_msg("pwrite() of pages %zu-%zu: %s\n", i, j - 1,
					   strerror(errno));
		pages += j - i;
		i = j;
	}
	munmap(shadow, mem_size);
	free(written);
	shadow = NULL;
	written = NULL;
	return pages;
}

static void *read_file(const char *path, size_t *len)
{
	struct stat st;
	void *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st))
		ksft_exit_fail_msg("%s: %s\n", path, strerror(errno));
	buf = malloc(st.st_size + 1);
	if (!buf || read(fd, buf, st.st_size) != st.st_size)
		ksft_exit_fail_msg("reading %s: %s\n", path, strerror(errno));
	close(fd);
	*len = st.st_size;
	return buf;
}

/* --- initramfs: a newc cpio of /init, /dev/console, /dev/kmsg ------------- */

static size_t cpio_add(uint8_t *out, size_t pos, const char *name, unsigned int mode_bits,
		       unsigned int rmaj, unsigned int rmin, const void *data, size_t len)
{
	static unsigned int ino = 1;
	size_t namesize = strlen(name) + 1;

	pos += sprintf((char *)out + pos,
		       "070701%08X%08X%08X%08X%08X%08X%08zX%08X%08X%08X%08X%08zX%08X",
		       ino++, mode_bits, 0, 0, 1, 0, len, 0, 0, rmaj, rmin, namesize, 0);
	memcpy(out + pos, name, namesize);
	pos = (pos + namesize + 3) & ~3UL;
	memcpy(out + pos, data, len);
	return (pos + len + 3) & ~3UL;
}

static uint8_t *make_initramfs(size_t *len)
{
	size_t init_len, pos = 0;
	void *init = read_file(init_path, &init_len);
	uint8_t *out = calloc(1, init_len + 4096);

	if (!out)
		ksft_exit_fail_msg("calloc\n");
	pos = cpio_add(out, pos, "dev", 040755, 0, 0, NULL, 0);
	pos = cpio_add(out, pos, "dev/console", 020600, 5, 1, NULL, 0);
	pos = cpio_add(out, pos, "dev/kmsg", 020600, 1, 11, NULL, 0);
	pos = cpio_add(out, pos, "proc", 040755, 0, 0, NULL, 0);
	pos = cpio_add(out, pos, "sys", 040755, 0, 0, NULL, 0);
	pos = cpio_add(out, pos, "init", 0100755, 0, 0, init, init_len);
	pos = cpio_add(out, pos, "TRAILER!!!", 0, 0, 0, NULL, 0);
	free(init);
	*len = pos;
	return out;
}

/* --- the VM ------------------------------------------------------------------- */

static void set_abi_param(bool mainline)
{
	if (!gmem_write_file(GMEM_ABI_PARAM, mainline ? "1" : "0"))
		ksft_exit_fail_msg("cannot write %s\n", GMEM_ABI_PARAM);
}

static void create_vm(void)
{
	unsigned long type = strcmp(mode, "v7") ? 0 : KVM_X86_SW_PROTECTED_VM;
	struct kvm_userspace_memory_region2 region = {
		.slot = 0,
		.guest_phys_addr = 0,
		.memory_size = mem_size,
	};
	struct kvm_create_guest_memfd args = { .size = mem_size };

	kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm_fd < 0)
		ksft_exit_skip("/dev/kvm: %s\n", strerror(errno));
	if (!strcmp(mode, "v7")) {
		if (!gmem_ours())
			ksft_exit_skip("the v7 ABI needs our modules (kvm.gmem_mainline_abi)\n");
		set_abi_param(false);
	}
	vm_fd = ioctl(kvm_fd, KVM_CREATE_VM, type);
	if (!strcmp(mode, "v7"))
		set_abi_param(true);	/* the VM keeps the ABI it was created with */
	if (vm_fd < 0)
		ksft_exit_fail_msg("KVM_CREATE_VM(%lu): %s\n", type, strerror(errno));

	if (!strcmp(mode, "anon")) {
		mem = mmap(NULL, mem_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			   -1, 0);
		/* 4 KiB pages, as guest_memfd has (order 0): like with like. */
		if (mem != MAP_FAILED && madvise(mem, mem_size, MADV_NOHUGEPAGE))
			ksft_exit_fail_msg("madvise(MADV_NOHUGEPAGE): %s\n", strerror(errno));
	} else if (!strcmp(mode, "thp")) {
		/* The control of huge: THP, 2 MiB aligned so that all of it can be. */
		mem = mmap(NULL, mem_size + (2UL << 20), PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (mem != MAP_FAILED) {
			mem = (void *)(((uintptr_t)mem + (2UL << 20) - 1) & ~((2UL << 20) - 1));
			if (madvise(mem, mem_size, MADV_HUGEPAGE))
				ksft_exit_fail_msg("madvise(MADV_HUGEPAGE): %s\n", strerror(errno));
		}
	} else {
		if (!strcmp(mode, "gmem") || !strcmp(mode, "ndm") || !strcmp(mode, "huge"))
			args.flags = GUEST_MEMFD_FLAG_MMAP | GUEST_MEMFD_FLAG_INIT_SHARED;
		if (!strcmp(mode, "huge"))
			args.flags |= GUEST_MEMFD_FLAG_HUGEPAGE;
		if (!strcmp(mode, "ndm"))
			args.flags |= GUEST_MEMFD_FLAG_NO_DIRECT_MAP;
		if (use_write)
			args.flags |= GUEST_MEMFD_FLAG_WRITE;
		/* NO_DIRECT_MAP needs mm-shim 0007's exports: the shim kernel's. */
		if (!strcmp(mode, "ndm") && gmem_kernel_exports("guestmem_no_direct_map_get") == 0)
			ksft_exit_skip("GUEST_MEMFD_FLAG_NO_DIRECT_MAP needs the mm-shim kernel\n");
		if (args.flags && !gmem_has_flags(vm_fd, args.flags)) {
			if (gmem_skip_or_fail() == KSFT_SKIP)
				ksft_exit_skip("guest_memfd flags %#llx not offered (not our modules)\n",
					       (unsigned long long)args.flags);
			ksft_exit_fail_msg("our modules must offer guest_memfd flags %#llx here\n",
					   (unsigned long long)args.flags);
		}
		gmem_fd = ioctl(vm_fd, KVM_CREATE_GUEST_MEMFD, &args);
		if (gmem_fd < 0)
			ksft_exit_fail_msg("KVM_CREATE_GUEST_MEMFD(%#llx): %s\n",
					   (unsigned long long)args.flags, strerror(errno));
		mem = mmap(NULL, mem_size, PROT_READ | PROT_WRITE, MAP_SHARED, gmem_fd, 0);
		region.flags = KVM_MEM_GUEST_MEMFD;
		region.guest_memfd = gmem_fd;
	}
	if (mem == MAP_FAILED)
		ksft_exit_fail_msg("mapping guest memory: %s\n", strerror(errno));
	region.userspace_addr = (uintptr_t)mem;
	if (bind_other) {
		int cpu, node, other;
		unsigned long mask;

		if (syscall(SYS_getcpu, &cpu, &node, NULL))
			ksft_exit_fail_msg("getcpu: %s\n", strerror(errno));
		pin_cpu(cpu);
		other = node ? 0 : 1;
		mask = 1UL << other;
		/* mbind() uses maxnode - 1 bits of the mask. */
		if (syscall(__NR_mbind, mem, mem_size, MPOL_BIND, &mask, 8 * sizeof(mask) + 1, 0))
			ksft_exit_fail_msg("mbind(node %d): %s\n", other, strerror(errno));
		ksft_print_msg("VMM on CPU %d, node %d; guest memory bound to node %d\n", cpu, node, other);
	}
	if (ioctl(vm_fd, KVM_SET_USER_MEMORY_REGION2, &region))
		ksft_exit_fail_msg("KVM_SET_USER_MEMORY_REGION2: %s\n", strerror(errno));
	if (ioctl(vm_fd, KVM_SET_TSS_ADDR, 0xfffbd000UL) ||
	    ioctl(vm_fd, KVM_CREATE_IRQCHIP, 0))
		ksft_exit_fail_msg("TSS / irqchip: %s\n", strerror(errno));
	{
		struct kvm_pit_config pit = { .flags = 0 };

		if (ioctl(vm_fd, KVM_CREATE_PIT2, &pit))
			ksft_exit_fail_msg("KVM_CREATE_PIT2: %s\n", strerror(errno));
	}
}

static void setup_cpuid(void)
{
	int n = 256;
	struct kvm_cpuid2 *c = calloc(1, sizeof(*c) + n * sizeof(c->entries[0]));

	c->nent = n;
	if (ioctl(kvm_fd, KVM_GET_SUPPORTED_CPUID, c))
		ksft_exit_fail_msg("KVM_GET_SUPPORTED_CPUID: %s\n", strerror(errno));
	for (uint32_t i = 0; i < c->nent; i++) {
		/*
		 * Leaf 1: the hypervisor bit, which a VMM sets (Linux looks
		 * for KVM's leaves, and so kvm-clock, only behind it), and the
		 * TSC deadline timer, which the in-kernel LAPIC emulates: the
		 * guest then needs no PIT to calibrate its clocks or timer.
		 */
		if (c->entries[i].function == 1)
			c->entries[i].ecx |= (1U << 31) | (1U << 24);
		/*
		 * APIC IDs: KVM reports the host CPU's where this thread runs;
		 * the guest's one vCPU has APIC ID 0, and a mismatch (say,
		 * the VMM pinned to CPU 1) leaves the guest without timer.
		 */
		if (c->entries[i].function == 1)
			c->entries[i].ebx &= 0x00ffffff;
		if (c->entries[i].function == 0xb || c->entries[i].function == 0x1f)
			c->entries[i].edx = 0;
		if (c->entries[i].function == 0x8000001e)
			c->entries[i].eax = 0;
		if (getenv("BOOT_NO_PV_EOI") && c->entries[i].function == 0x40000001)
			c->entries[i].eax &= ~(1U << 6);	/* KVM_FEATURE_PV_EOI */
	}
	if (ioctl(vcpu_fd, KVM_SET_CPUID2, c))
		ksft_exit_fail_msg("KVM_SET_CPUID2: %s\n", strerror(errno));
	/*
	 * XCR0 at every state component the guest may enable (leaf 0xd.0).
	 * Under QEMU's TCG, L1's KVM does not always see the guest's XSETBV
	 * (nested SVM), and then answers CPUID 0xd.0 EBX for the reset XCR0:
	 * Linux's "XSAVE consistency problem" WARN follows, and a deadlock on
	 * its console lock. Starting at the final XCR0 keeps the answer right
	 * either way; a guest that enables less is unaffected.
	 */
	for (uint32_t i = 0; i < c->nent; i++) {
		if (c->entries[i].function == 0xd && c->entries[i].index == 0) {
			struct kvm_xcrs xcrs = { .nr_xcrs = 1 };

			xcrs.xcrs[0].value = c->entries[i].eax | (uint64_t)c->entries[i].edx << 32;
			if (ioctl(vcpu_fd, KVM_SET_XCRS, &xcrs))
				ksft_exit_fail_msg("KVM_SET_XCRS(%#llx): %s\n",
						   (unsigned long long)xcrs.xcrs[0].value, strerror(errno));
		}
	}
	free(c);
}

/*
 * An Intel MultiProcessor Specification 1.4 table: one CPU, the in-kernel
 * IOAPIC with ISA IRQ n on its pin n (KVM's default routing), the LAPIC's
 * LINT0 as ExtINT and LINT1 as NMI. Without it (and without ACPI) Linux
 * runs its local APIC in virtual wire mode without configuration, where it
 * never sets up the LAPIC timer and ticks on the PIT; KVM's PIT under
 * nested TCG now and then loses a one-shot interrupt, and the guest sleeps
 * for good. With it the guest ticks on the TSC-deadline LAPIC timer and
 * needs no PIT at all. At the last KiB of base memory, which Linux scans.
 */
struct mp_floating_pointer {
	char signature[4];		/* "_MP_" */
	uint32_t config_table;
	uint8_t length;			/* in 16-byte units: 1 */
	uint8_t revision;		/* 4: MP spec 1.4 */
	uint8_t checksum;
	uint8_t features[5];		/* all 0: there is a config table */
} __attribute__((packed));

struct mp_config_table {
	char signature[4];		/* "PCMP" */
	uint16_t length;		/* with the entries */
	uint8_t revision;
	uint8_t checksum;
	char oem[8], product[12];
	uint32_t oem_table;
	uint16_t oem_table_size, entries;
	uint32_t lapic;
	uint16_t ext_length;
	uint8_t ext_checksum, reserved;
} __attribute__((packed));

struct mp_processor {
	uint8_t type, apic_id, apic_version, flags;	/* type 0; flags: enabled, boot CPU */
	uint32_t signature, features, reserved[2];
} __attribute__((packed));

struct mp_bus {
	uint8_t type, id;				/* type 1 */
	char name[6];
} __attribute__((packed));

struct mp_ioapic {
	uint8_t type, id, version, flags;		/* type 2 */
	uint32_t address;
} __attribute__((packed));

struct mp_irq {
	uint8_t type, irq_type;				/* type 3 (IOAPIC) or 4 (LAPIC) */
	uint16_t irq_flags;
	uint8_t src_bus, src_irq, dst_apic, dst_pin;
} __attribute__((packed));

#define MP_GPA		EBDA_START
#define MP_IOAPIC_ID	1

static uint8_t mp_checksum(const void *p, size_t len)
{
	uint8_t sum = 0;

	for (size_t i = 0; i < len; i++)
		sum += ((const uint8_t *)p)[i];
	return (uint8_t)-sum;
}

static void put_mp_table(void)
{
	uint8_t buf[1024] = { 0 };
	struct mp_floating_pointer *mpf = (void *)buf;
	struct mp_config_table *mpc = (void *)(buf + sizeof(*mpf));
	uint8_t *p = (uint8_t *)(mpc + 1);
	uint16_t n = 0;

	*(struct mp_processor *)p = (struct mp_processor){
		.type = 0, .apic_id = 0, .apic_version = 0x14, .flags = 3,
		.signature = 0x600, .features = 0x201 };	/* FPU, APIC */
	p += sizeof(struct mp_processor), n++;
	*(struct mp_bus *)p = (struct mp_bus){ .type = 1, .id = 0, .name = "ISA   " };
	p += sizeof(struct mp_bus), n++;
	*(struct mp_ioapic *)p = (struct mp_ioapic){
		.type = 2, .id = MP_IOAPIC_ID, .version = 0x11, .flags = 1, .address = 0xfec00000 };
	p += sizeof(struct mp_ioapic), n++;
	for (uint8_t irq = 0; irq < 16; irq++) {
		*(struct mp_irq *)p = (struct mp_irq){
			.type = 3, .irq_type = 0, .src_irq = irq, .dst_apic = MP_IOAPIC_ID, .dst_pin = irq };
		p += sizeof(struct mp_irq), n++;
	}
	*(struct mp_irq *)p = (struct mp_irq){ .type = 4, .irq_type = 3, .dst_apic = 0xff, .dst_pin = 0 };
	p += sizeof(struct mp_irq), n++;
	*(struct mp_irq *)p = (struct mp_irq){ .type = 4, .irq_type = 1, .dst_apic = 0xff, .dst_pin = 1 };
	p += sizeof(struct mp_irq), n++;

	memcpy(mpc->signature, "PCMP", 4);
	mpc->length = p - (uint8_t *)mpc;
	mpc->revision = 4;
	memcpy(mpc->oem, "KVMGMEM ", 8);
	memcpy(mpc->product, "BOOTTEST    ", 12);
	mpc->entries = n;
	mpc->lapic = 0xfee00000;
	mpc->checksum = mp_checksum(mpc, mpc->length);

	memcpy(mpf->signature, "_MP_", 4);
	mpf->config_table = MP_GPA + sizeof(*mpf);
	mpf->length = 1;
	mpf->revision = 4;
	mpf->checksum = mp_checksum(mpf, sizeof(*mpf));
	guest_put(MP_GPA, buf, p - buf);
}

/* Load the kernel, initramfs, command line, boot_params, GDT, page tables. */
static void load_guest(void)
{
	size_t klen, ilen, setup_len, hdr_end, page = getpagesize();
	uint8_t *image = read_file(kernel_path, &klen), *initrd = make_initramfs(&ilen);
	struct boot_params bp;
	uint64_t gdt[4] = { 0, 0, 0x00af9b000000ffffULL, 0x00cf93000000ffffULL };
	uint64_t pml4 = PDPT_GPA | 3, pdpt[4], *pd;
	uint64_t initrd_gpa;
	char cmdline[CMDLINE_MAX];
	struct boot_e820_entry *e;

	if (klen < 0x1000 || memcmp(image + 0x202, "HdrS", 4))
		ksft_exit_fail_msg("%s is no bzImage\n", kernel_path);
	memset(&bp, 0, sizeof(bp));
	/* The setup header runs from 0x1f1 to 0x202 + the byte at 0x201. */
	hdr_end = 0x202 + image[0x201];
	memcpy((uint8_t *)&bp + 0x1f1, image + 0x1f1, hdr_end - 0x1f1);
	if (bp.hdr.version < 0x20c || !(bp.hdr.xloadflags & XLF_KERNEL_64))
		ksft_exit_fail_msg("%s: boot protocol %#x without a 64-bit entry\n", kernel_path,
				   bp.hdr.version);
	setup_len = ((bp.hdr.setup_sects ?: 4) + 1) * 512;

	guest_put(KERNEL_GPA, image + setup_len, klen - setup_len);
	/* The initramfs at the top of memory, below 1 GiB, page aligned. */
	initrd_gpa = ((mem_size < (1UL << 30) ? mem_size : (1UL << 30)) - ilen) & ~(page - 1);
	if (initrd_gpa > bp.hdr.initrd_addr_max)
		initrd_gpa = (bp.hdr.initrd_addr_max - ilen) & ~(page - 1);
	guest_put(initrd_gpa, initrd, ilen);

	/*
	 * watchdog_thresh=60: the guest's soft-lockup report after 120 s of its
	 * clock without a schedule, not 20. Nested under TCG with two guests
	 * on two host cores, a vCPU of this guest can go 26 s unscheduled
	 * (make check, 2026-12-06: "soft lockup - CPU#0 stuck for 26s" during
	 * the fill); a real lockup still reports, and the tier's timeout
	 * catches a hang. RCU's stall report waits as long, for the same
	 * reason: "rcu_preempt kthread starved for 5252 jiffies! ... All QSes
	 * seen" (make check, 2026-12-07, the .ndm boot before init, every
	 * first touch a NO_DIRECT_MAP fault of L1 under TCG while the series
	 * check compiled): 21 s of the guest's clock in which its one vCPU
	 * did not run the woken kthread.
	 */
	snprintf(cmdline, sizeof(cmdline),
		 "console=ttyS0 quiet printk.devkmsg=on rdinit=/init panic=-1 reboot=t pci=off acpi=off nokaslr watchdog_thresh=60 rcupdate.rcu_cpu_stall_timeout=120 %s",
		 extra_args);
	guest_put(CMDLINE_GPA, cmdline, strlen(cmdline) + 1);

	bp.hdr.type_of_loader = 0xff;
	bp.hdr.loadflags |= LOADED_HIGH | CAN_USE_HEAP;
	bp.hdr.heap_end_ptr = 0xfe00;
	bp.hdr.cmd_line_ptr = CMDLINE_GPA;
	bp.hdr.ramdisk_image = initrd_gpa;
	bp.hdr.ramdisk_size = ilen;
	e = bp.e820_table;
	e[0] = (struct boot_e820_entry){ 0, EBDA_START, 1 };
	e[1] = (struct boot_e820_entry){ EBDA_START, 0x100000 - EBDA_START, 2 };
	e[2] = (struct boot_e820_entry){ 0x100000, mem_size - 0x100000, 1 };
	bp.e820_entries = 3;
	guest_put(ZERO_PAGE_GPA, &bp, sizeof(bp));
	put_mp_table();

	guest_put(GDT_GPA, gdt, sizeof(gdt));
	/* Identity map of the first 4 GiB with 2 MiB pages. */
	pd = calloc(4 * 512, sizeof(*pd));
	for (int i = 0; i < 4 * 512; i++)
		pd[i] = ((uint64_t)i << 21) | 0x83;	/* present, writable, 2 MiB */
	for (int i = 0; i < 4; i++)
		pdpt[i] = (PD_GPA + i * 0x1000) | 3;
	guest_put(PML4_GPA, &pml4, sizeof(pml4));
	guest_put(PDPT_GPA, pdpt, sizeof(pdpt));
	guest_put(PD_GPA, pd, 4 * 512 * sizeof(*pd));
	free(pd);
	free(image);
	free(initrd);
}

static void setup_vcpu(void)
{
	struct kvm_segment code = {
		.base = 0, .limit = 0xffffffff, .selector = 0x10, .type = 11, .present = 1,
		.dpl = 0, .db = 0, .s = 1, .l = 1, .g = 1,
	}, data = code;
	struct kvm_sregs sregs;
	struct kvm_regs regs = { .rflags = 2, .rip = KERNEL_GPA + 0x200, .rsi = ZERO_PAGE_GPA };
	int run_size;

	vcpu_fd = ioctl(vm_fd, KVM_CREATE_VCPU, 0);
	if (vcpu_fd < 0)
		ksft_exit_fail_msg("KVM_CREATE_VCPU: %s\n", strerror(errno));
	run_size = ioctl(kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	run = mmap(NULL, run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu_fd, 0);
	if (run == MAP_FAILED)
		ksft_exit_fail_msg("mapping kvm_run: %s\n", strerror(errno));
	setup_cpuid();

	if (ioctl(vcpu_fd, KVM_GET_SREGS, &sregs))
		ksft_exit_fail_msg("KVM_GET_SREGS: %s\n", strerror(errno));
	data.type = 3;
	data.l = 0;
	data.db = 1;
	data.selector = 0x18;
	sregs.cs = code;
	sregs.ds = sregs.es = sregs.fs = sregs.gs = sregs.ss = data;
	sregs.gdt.base = GDT_GPA;
	sregs.gdt.limit = 4 * 8 - 1;
	sregs.cr3 = PML4_GPA;
	sregs.cr4 = 1 << 5;				/* PAE */
	sregs.cr0 = 0x80000001 | (1 << 4);		/* PG, PE, ET */
	sregs.efer = (1 << 8) | (1 << 10);		/* LME, LMA */
	if (ioctl(vcpu_fd, KVM_SET_SREGS, &sregs) || ioctl(vcpu_fd, KVM_SET_REGS, &regs))
		ksft_exit_fail_msg("KVM_SET_SREGS/REGS: %s\n", strerror(errno));
}

/* --- devices ------------------------------------------------------------ */

/* A 16450 UART, enough for the 8250 driver's probe and a polled console. */
static struct {
	uint8_t ier, lcr, mcr, scr, dll, dlm;
	char line[512];
	size_t len;
} uart;

static void guest_line(const char *l)
{
	const char *p = strstr(l, "GMEMBOOT ");
	char *end;

	printf("# guest: %s\n", l);
	if (!p)
		return;
	p += strlen("GMEMBOOT ");
	if (!strncmp(p, "init uptime=", 12)) {
		g.init = true;
		g.init_host_s = gmem_now() - t0;
		g.uptime_s = strtod(p + 12, NULL);
	} else if (!strncmp(p, "memtotal_kib=", 13)) {
		g.memtotal_kib = strtol(p + 13, NULL, 10);
	} else if (!strncmp(p, "clocksource=", 12)) {
		snprintf(g.clocksource, sizeof(g.clocksource), "%s", p + 12);
	} else if (!strncmp(p, "fill mib=", 9)) {
		g.fill_mib = strtol(p + 9, &end, 10);
		if (!strncmp(end, " errors=", 8))
			g.fill_errors = strtol(end + 8, &end, 10);
		if (!strncmp(end, " ms=", 4))
			g.fill_ms = strtod(end + 4, NULL);
	} else if (!strncmp(p, "marker gpa=", 11)) {
		g.marker_gpa = strtoull(p + 11, &end, 16);
		if (!strncmp(end, " text=", 6)) {
			snprintf(g.marker, sizeof(g.marker), "%s", end + 6);
			g.marker_seen = true;
		}
	} else if (!strncmp(p, "memory available_kib=", 21)) {
		g.mem_avail_kib = strtol(p + 21, &end, 10);
		if (!strncmp(end, " total_kib=", 11))
			g.mem_total_kib = strtol(end + 11, NULL, 10);
	} else if (!strncmp(p, "klog errors=", 12)) {
		g.klog_errors = strtol(p + 12, NULL, 10);
	} else if (!strncmp(p, "done errors=", 12)) {
		g.done = true;
		g.guest_errors = strtol(p + 12, NULL, 10);
	}
}

static void uart_out(uint16_t port, uint8_t v)
{
	switch (port - SERIAL_BASE) {
	case 0:
		if (uart.lcr & 0x80) {
			uart.dll = v;
		} else if (v == '\n' || uart.len == sizeof(uart.line) - 1) {
			uart.line[uart.len] = 0;
			guest_line(uart.line);
			uart.len = 0;
		} else if (v != '\r') {
			uart.line[uart.len++] = v;
		}
		break;
	case 1:
		if (uart.lcr & 0x80)
			uart.dlm = v;
		else
			uart.ier = v & 0x0f;
		break;
	case 3:
		uart.lcr = v;
		break;
	case 4:
		uart.mcr = v & 0x1f;
		break;
	case 7:
		uart.scr = v;
		break;
	}
}

static uint8_t uart_in(uint16_t port)
{
	switch (port - SERIAL_BASE) {
	case 0:
		return uart.lcr & 0x80 ? uart.dll : 0;
	case 1:
		return uart.lcr & 0x80 ? uart.dlm : uart.ier;
	case 2:
		return 0x01;			/* no interrupt pending, no FIFO */
	case 3:
		return uart.lcr;
	case 4:
		return uart.mcr;
	case 5:
		return 0x60;			/* transmitter empty */
	case 6:
		if (uart.mcr & 0x10)		/* loopback: modem outputs back in */
			return ((uart.mcr & 0x02) << 3) | ((uart.mcr & 0x01) << 5) |
			       ((uart.mcr & 0x04) << 4) | ((uart.mcr & 0x08) << 4);
		return 0xb0;			/* DCD, DSR, CTS */
	default:
		return uart.scr;
	}
}

static void on_alarm(int sig)
{
	(void)sig;
	timed_out = 1;
}

/* Run the vCPU until the guest writes its verdict, fails, or time is up. */
static const char *run_guest(void)
{
	static char why[256];
	bool whole_run = false;

	/* First until init, then until the whole run's timeout. */
	timed_out = 0;
	alarm(INIT_TIMEOUT_S);
	for (;;) {
		if (ioctl(vcpu_fd, KVM_RUN, 0)) {
			if (errno == EINTR && timed_out && !g.init) {
				snprintf(why, sizeof(why), "no init after %d s", INIT_TIMEOUT_S);
				hung_before_init = true;
				return why;
			}
			if (errno == EINTR && timed_out && !whole_run) {
				whole_run = true;
				timed_out = 0;
				alarm(timeout_s - INIT_TIMEOUT_S);
				continue;
			}
			if (errno == EINTR && timed_out) {
				snprintf(why, sizeof(why), "timed out after %d s", timeout_s);
				return why;
			}
			if (errno == EINTR || errno == EAGAIN)
				continue;
			snprintf(why, sizeof(why), "KVM_RUN: %s (exit %u)", strerror(errno), run->exit_reason);
			return why;
		}
		switch (run->exit_reason) {
		case KVM_EXIT_IO: {
			uint8_t *d = (uint8_t *)run + run->io.data_offset;

			for (uint32_t i = 0; i < run->io.count; i++, d += run->io.size) {
				uint16_t port = run->io.port;

				if (run->io.direction == KVM_EXIT_IO_OUT) {
					if (port >= SERIAL_BASE && port < SERIAL_BASE + 8) {
						uart_out(port, *d);
					} else if (port == EXIT_PORT) {
						g.exit_code = *d;
						return NULL;
					} else if (port == TIME_PORT && *d >= 1 && *d <= 2) {
						g.t_sleep[*d] = gmem_now();
					}
				} else {
					if (port >= SERIAL_BASE && port < SERIAL_BASE + 8)
						*d = uart_in(port);
					else
						memset(d, 0xff, run->io.size);
				}
			}
			break;
		}
		case KVM_EXIT_MMIO:
			if (!run->mmio.is_write)
				memset(run->mmio.data, 0xff, run->mmio.len);
			break;
		case KVM_EXIT_INTR:
			break;
		case KVM_EXIT_SHUTDOWN:
			return "the guest shut down (triple fault or reset) before its verdict";
		case KVM_EXIT_SYSTEM_EVENT:
			return "the guest powered off or reset before its verdict";
		default:
			snprintf(why, sizeof(why), "unexpected exit %u", run->exit_reason);
			return why;
		}
	}
}

/*
 * Symbols of a guest running this same kernel with nokaslr (the stock tier
 * boots Debian's kernel both here and in the guest): this kernel's
 * /proc/kallsyms, shifted by its KASLR offset. For hangs only.
 */
#define GUEST_TEXT	0xffffffff81000000ULL

static const char *guest_symbol(unsigned long long addr, unsigned long long *off)
{
	static char best_name[128];
	unsigned long long a, text = 0, best = 0;
	char line[256], name[128];
	FILE *f = fopen("/proc/kallsyms", "r");

	snprintf(best_name, sizeof(best_name), "?");
	*off = 0;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %*s %127s", &a, name) == 2 && !strcmp(name, "_text"))
			text = a;
	if (!f || !text)
		goto out;
	rewind(f);
	addr += text - GUEST_TEXT;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %*s %127s", &a, name) == 2 && a <= addr && a > best) {
			best = a;
			snprintf(best_name, sizeof(best_name), "%s", name);
		}
	*off = addr - best;
out:
	if (f)
		fclose(f);
	return best_name;
}

/*
 * Guest virtual to guest physical through the guest's own page tables
 * (4- or 5-level, 1 GiB and 2 MiB pages); ~0 if unmapped.
 */
static uint64_t guest_phys(uint64_t cr3, bool la57, uint64_t va)
{
	uint64_t table = cr3 & 0x000ffffffffff000ULL, e;

	for (int level = la57 ? 5 : 4; level >= 1; level--) {
		int shift = 12 + 9 * (level - 1);
		uint64_t at = table + 8 * ((va >> shift) & 511);

		if (at + 8 > mem_size)
			return ~0ULL;
		memcpy(&e, mem + at, 8);
		if (!(e & 1))
			return ~0ULL;
		if (level == 1 || (level <= 3 && (e & 0x80)))
			return (e & 0x000ffffffffff000ULL & ~((1ULL << shift) - 1)) |
			       (va & ((1ULL << shift) - 1));
		table = e & 0x000ffffffffff000ULL;
	}
	return ~0ULL;
}

/*
 * Where a hung guest is: RIP, then every word on its stack that points into
 * the kernel's text, read through our mapping of guest memory.
 */
static void print_guest_backtrace(const struct kvm_regs *regs, const struct kvm_sregs *sregs)
{
	bool la57 = sregs->cr4 & (1UL << 12);
	unsigned long long off, word;
	const char *sym = guest_symbol(regs->rip, &off);
	int shown = 0;

	ksft_print_msg("vCPU at %s+%#llx (if the guest runs this kernel)\n", sym, off);
	snprintf(hang_trace, sizeof(hang_trace), "%s", sym);
	for (int i = 0; i < 512 && shown < 24; i++) {
		uint64_t phys = guest_phys(sregs->cr3, la57, regs->rsp + 8 * i);

		if (phys == ~0ULL || phys + 8 > mem_size)
			break;
		memcpy(&word, mem + phys, sizeof(word));
		if (word < GUEST_TEXT || word >= GUEST_TEXT + (64ULL << 20))
			continue;
		sym = guest_symbol(word, &off);
		ksft_print_msg("  stack +%#x: %#llx %s+%#llx\n", 8 * i, word, sym, off);
		snprintf(hang_trace + strlen(hang_trace), sizeof(hang_trace) - strlen(hang_trace),
			 " %s", sym);
		shown++;
	}
}

/*
 * The guest's timer when it hangs: its LAPIC timer mode and counts, and the
 * TSC deadline against the TSC now, in the guest's TSC cycles.
 */
static void print_guest_timer(void)
{
	struct {
		struct kvm_msrs hdr;
		struct kvm_msr_entry e[2];
	} msrs = { .hdr.nmsrs = 2, .e = { { .index = 0x10 }, { .index = 0x6e0 } } };
	struct kvm_lapic_state lapic;
	uint32_t lvtt, tmict, tmcct, tdcr;

	if (ioctl(vcpu_fd, KVM_GET_MSRS, &msrs) == 2)
		ksft_print_msg("TSC %llu, TSC deadline %llu (%+lld cycles from now)\n",
			       (unsigned long long)msrs.e[0].data, (unsigned long long)msrs.e[1].data,
			       (long long)(msrs.e[1].data - msrs.e[0].data));
	if (ioctl(vcpu_fd, KVM_GET_LAPIC, &lapic))
		return;
	memcpy(&lvtt, lapic.regs + 0x320, 4);
	memcpy(&tmict, lapic.regs + 0x380, 4);
	memcpy(&tmcct, lapic.regs + 0x390, 4);
	memcpy(&tdcr, lapic.regs + 0x3e0, 4);
	ksft_print_msg("LAPIC timer: LVTT %#x (mode %u, %s), TMICT %u, TMCCT %u, TDCR %#x, IRR 0xe0-0xff %#x, ISR %#x\n",
		       lvtt, (lvtt >> 17) & 3, lvtt & (1U << 16) ? "masked" : "unmasked", tmict, tmcct,
		       tdcr, *(uint32_t *)(lapic.regs + 0x270), *(uint32_t *)(lapic.regs + 0x170));
}

/* Why the run ended, and where the guest was. */
static void report_hang(const char *why)
{
	struct kvm_regs regs;
	struct kvm_sregs sregs;

	ksft_print_msg("%s\n", why);
	if (ioctl(vcpu_fd, KVM_GET_REGS, &regs) || ioctl(vcpu_fd, KVM_GET_SREGS, &sregs))
		return;
	ksft_print_msg("vCPU: rip %#llx rsp %#llx rflags %#llx cr3 %#llx, interrupt bitmap %#llx\n",
		       regs.rip, regs.rsp, regs.rflags, sregs.cr3,
		       (unsigned long long)sregs.interrupt_bitmap[0]);
	print_guest_backtrace(&regs, &sregs);
	print_guest_timer();
}

/* Undo create_vm() and setup_vcpu(), and forget what the guest reported. */
static void destroy_vm(void)
{
	munmap(run, ioctl(kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0));
	close(vcpu_fd);
	munmap(mem, mem_size);
	if (gmem_fd >= 0)
		close(gmem_fd);
	gmem_fd = -1;
	close(vm_fd);
	close(kvm_fd);
	memset(&g, 0, sizeof(g));
	g.exit_code = -1;
	g.fill_errors = -1;
	g.guest_errors = -1;
	g.klog_errors = -1;
	memset(&uart, 0, sizeof(uart));
}

/* Where are the resident pages of guest memory? Count those off @node. */
static long pages_off_node(int node, long *resident)
{
	size_t page = getpagesize(), n = mem_size / page;
	unsigned char *vec = malloc(n);
	void **pages = malloc(n * sizeof(void *));
	int *status = malloc(n * sizeof(int));
	long off = 0, count = 0;
	volatile uint8_t sink;

	if (!vec || !pages || !status || mincore(mem, mem_size, vec))
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (!(vec[i] & 1))
			continue;
		/* Map it here (it exists: no allocation) so move_pages() sees it. */
		sink = mem[i * page];
		(void)sink;
		pages[count++] = mem + i * page;
	}
	if (syscall(SYS_move_pages, 0, count, pages, NULL, status, 0))
		return -1;
	for (long i = 0; i < count; i++)
		off += status[i] != node;
	*resident = count;
	free(vec);
	free(pages);
	free(status);
	return off;
}

/* NO_DIRECT_MAP's work so far: kvm.ko's counters and the kernel's splits. */
struct ndm_cost {
	long folios, flushes, splits_2m, splits_1g;
	long directmap_2m_kib, directmap_1g_kib;	/* /proc/meminfo */
};

static struct ndm_cost ndm_before;

/*
 * Direct map splits since @b: the vmstat counters where the kernel has them
 * (CONFIG_VM_EVENT_COUNTERS), else what left the 2 MiB and 1 GiB mappings
 * (/proc/meminfo's DirectMap2M/1G: x86 never merges them back); -1 if
 * neither can be read.
 */
static long direct_map_splits(const struct ndm_cost *b, const struct ndm_cost *a)
{
	if (b->splits_2m >= 0 && a->splits_2m >= 0 && b->splits_1g >= 0 && a->splits_1g >= 0)
		return a->splits_2m - b->splits_2m + a->splits_1g - b->splits_1g;
	if (b->directmap_2m_kib < 0 || a->directmap_2m_kib < 0)
		return -1;
	return (b->directmap_2m_kib - a->directmap_2m_kib) / 2048 +
	       (b->directmap_1g_kib > a->directmap_1g_kib ?
		(b->directmap_1g_kib - a->directmap_1g_kib) / (1024 * 1024) : 0);
}

/*
 * What the host's page allocator did meanwhile (compaction, migration,
 * THP faults): printed after the run, to tell where a slow fill went.
 */
static const char *const alloc_events[] = {
	"compact_stall", "compact_fail", "compact_success", "pgmigrate_success",
	"thp_fault_alloc", "thp_fault_fallback",
};
#define NR_ALLOC_EVENTS (sizeof(alloc_events) / sizeof(alloc_events[0]))
static long alloc_before[NR_ALLOC_EVENTS];

static void alloc_events_read(long *v)
{
	for (size_t i = 0; i < NR_ALLOC_EVENTS; i++)
		v[i] = gmem_vmstat(alloc_events[i]);
}

static void alloc_events_print(const long *before)
{
	long after[NR_ALLOC_EVENTS];
	char line[256];
	int len = 0;

	alloc_events_read(after);
	for (size_t i = 0; i < NR_ALLOC_EVENTS && len < (int)sizeof(line); i++)
		len += snprintf(line + len, sizeof(line) - len, " %s %+ld", alloc_events[i],
				after[i] - before[i]);
	ksft_print_msg("host allocator during the run:%s\n", line);
}

static struct ndm_cost ndm_costs(void)
{
	return (struct ndm_cost){
		.folios = gmem_counter(GMEM_DEBUGFS "/kvm/gmem_ndm_folios"),
		.flushes = gmem_counter(GMEM_DEBUGFS "/kvm/gmem_ndm_flushes"),
		.splits_2m = gmem_vmstat("direct_map_level2_splits"),
		.splits_1g = gmem_vmstat("direct_map_level3_splits"),
		.directmap_2m_kib = gmem_meminfo_kib("DirectMap2M"),
		.directmap_1g_kib = gmem_meminfo_kib("DirectMap1G"),
	};
}

/*
 * A hang that is QEMU's TCG delivering KVM's injected timer interrupt a
 * second time (docs/linux-guest.md): the timer interrupt
 * nested in itself, by name on the hung guest's stack.
 */
static bool tcg_double_injection(const char *trace)
{
	char copy[sizeof(hang_trace)], *tok, *save;
	int hrtimer = 0, sysvec = 0;

	snprintf(copy, sizeof(copy), "%s", trace);
	for (tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		hrtimer += !strcmp(tok, "hrtimer_interrupt");
		sysvec += !strcmp(tok, "asm_sysvec_apic_timer_interrupt");
	}
	return hrtimer >= 2 || sysvec >= 2;
}

/* Pages of guest_memfd in its page cache: cachestat(), -1 if it fails. */
static long gmem_file_pages(void)
{
	return gmem_fd < 0 ? -1 : gmem_cached_pages(gmem_fd, 0, mem_size);
}

#define HUGE_FOLIOS	GMEM_DEBUGFS "/kvm/gmem_huge_folios"

/* The VM's debugfs stat @name (kvm/<pid>-<vm fd>/): pf_taken, pages_2m; or -1. */
static long vm_stat(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), GMEM_DEBUGFS "/kvm/%d-%d/%s", getpid(), vm_fd, name);
	return gmem_counter(path);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_alarm };	/* no SA_RESTART: KVM_RUN returns EINTR */
	char self[PATH_MAX], *dir;
	const char *why, *variant;
	char retry_trace[sizeof(hang_trace)] = "";
	long file_before = -1, file_after = -1, pages_written = 0, huge_before = -1;
	size_t usable_kib = (EBDA_START + mem_size - 0x100000) >> 10;
	bool ndm = false, huge = false;
	int opt, retries = 0;
	double run_s;

	/*
	 * The variant is in the program's name, as the tiers' lists run it
	 * (NAME.VARIANT is a copy of NAME): .anon, .v7, .ndm, .write (gmem
	 * loaded with write()), .numa (gmem bound to the other node).
	 */
	variant = strrchr(argv[0], '.');
	if (variant && strchr(variant, '/'))
		variant = NULL;
	if (variant && (!strcmp(variant, ".anon") || !strcmp(variant, ".v7") ||
			!strcmp(variant, ".ndm") || !strcmp(variant, ".huge")))
		mode = variant + 1;
	else if (variant && !strcmp(variant, ".write"))
		use_write = true;
	else if (variant && !strcmp(variant, ".numa"))
		bind_other = true;
	else if (variant)
		ksft_exit_fail_msg("unknown variant %s\n", variant);
	/* Defaults: next to this program, where the tier stages them. */
	snprintf(self, sizeof(self), "%s", argv[0]);
	dir = dirname(self);
	snprintf(kernel_path, sizeof(kernel_path), "%s/boot-vmlinuz", dir);
	snprintf(init_path, sizeof(init_path), "%s/boot-init", dir);
	while ((opt = getopt(argc, argv, "M:wb:m:k:i:a:t:")) != -1) {
		switch (opt) {
		case 'M': mode = optarg; break;
		case 'w': use_write = true; break;
		case 'b': bind_other = !strcmp(optarg, "other"); break;
		case 'm': mem_size = strtoul(optarg, NULL, 0) << 20; break;
		case 'k': snprintf(kernel_path, sizeof(kernel_path), "%s", optarg); break;
		case 'i': snprintf(init_path, sizeof(init_path), "%s", optarg); break;
		case 'a': snprintf(extra_args, sizeof(extra_args), "%s", optarg); break;
		case 't': timeout_s = atoi(optarg); break;
		default:
			ksft_exit_fail_msg("usage: %s [-M gmem|ndm|huge|v7|anon|thp] [-w] [-b other] [-m MiB] [-k bzImage] [-i init] [-a args] [-t s]\n",
					   argv[0]);
		}
	}
	if (strcmp(mode, "gmem") && strcmp(mode, "ndm") && strcmp(mode, "huge") &&
	    strcmp(mode, "v7") && strcmp(mode, "anon") && strcmp(mode, "thp"))
		ksft_exit_fail_msg("unknown memory mode %s\n", mode);
	if (use_write && strcmp(mode, "gmem") && strcmp(mode, "ndm"))
		ksft_exit_fail_msg("-w needs -M gmem or -M ndm\n");
	if (access(kernel_path, R_OK) || access(init_path, R_OK))
		ksft_exit_fail_msg("no kernel (%s) or init (%s)\n", kernel_path, init_path);

	ksft_print_header();
	sigaction(SIGALRM, &sa, NULL);
	for (int attempt = 1; ; attempt++) {
		/* A variant this KVM does not offer SKIPs here, as a whole. */
		create_vm();
		ndm = !strcmp(mode, "ndm");
		huge = !strcmp(mode, "huge");
		if (attempt == 1)
			ksft_set_plan(8 + bind_other + ndm + huge + use_write);
		if (huge)
			huge_before = gmem_counter(HUGE_FOLIOS);
		if (use_write)
			file_before = gmem_file_pages();
		load_guest();
		if (use_write) {
			pages_written = write_shadow();
			file_after = gmem_file_pages();
		}
		setup_vcpu();
		ksft_print_msg("booting %s: %zu MiB of %s memory%s\n", kernel_path, mem_size >> 20,
			       mode, use_write ? ", loaded with write()" : "");
		hung_before_init = false;
		ndm_before = ndm_costs();
		alloc_events_read(alloc_before);
		t0 = gmem_now();
		why = run_guest();
		alarm(0);
		run_s = gmem_now() - t0;
		ksft_print_msg("the VM took %ld page faults and has %ld 2 MiB mappings\n",
			       vm_stat("pf_taken"), vm_stat("pages_2m"));
		alloc_events_print(alloc_before);
		if (why)
			report_hang(why);
		/*
		 * QEMU's TCG can deliver an interrupt that KVM injected a
		 * second time, whatever this guest's IF (docs/linux-guest.md: its VMRUN
		 * leaves the vector pending as an exception until the next
		 * exit request, which round-robin TCG makes every 100 ms and
		 * MTTCG, which the boot tiers use, rarely). The report above
		 * then shows a timer interrupt spinning on a lock or seqcount
		 * that the code it interrupted holds. It happens with Debian's
		 * modules and anonymous memory alike. A boot that never
		 * reaches init gets one new VM, once. Every check is on the
		 * boot that ran.
		 */
		if (!hung_before_init || attempt == 2)
			break;
		ksft_print_msg("boot attempt %d hung before init: booting a new VM once more\n", attempt);
		retries++;
		snprintf(retry_trace, sizeof(retry_trace), "%s", hang_trace);
		destroy_vm();
	}

	ksft_test_result(g.init, "the guest boots to its init\n");
	if (g.init)
		printf("# time: boot to init (%s): %.1f s\n", mode, g.init_host_s);
	printf("# time: whole run (%s): %.1f s\n", mode, run_s);
	if (!strcmp(mode, "ndm")) {
		struct ndm_cost after = ndm_costs();

		/* What NO_DIRECT_MAP cost this boot (docs/benchmarks.md, A Linux guest boot). */
		printf("# no direct map: %ld pages taken out, %ld kernel TLB flushes, %ld direct map splits\n",
		       after.folios - ndm_before.folios, after.flushes - ndm_before.flushes,
		       direct_map_splits(&ndm_before, &after));
	}
	/*
	 * The kernel saw the RAM of the e820 map (its "Memory: A/T available"
	 * line: T within a MiB of what the map gives, the first page and
	 * rounding), and MemTotal is what it kept after boot: at least A (the
	 * init sections freed since), at most T.
	 */
	ksft_test_result(g.mem_total_kib <= (long)usable_kib &&
			 g.mem_total_kib >= (long)usable_kib - 1024 &&
			 g.memtotal_kib >= g.mem_avail_kib && g.memtotal_kib <= g.mem_total_kib,
			 "MemTotal %ld KiB of the %zu KiB given\n", g.memtotal_kib, mem_size >> 10);
	ksft_print_msg("e820 usable %zu KiB; the kernel: %ld KiB available of %ld KiB\n",
		       usable_kib, g.mem_avail_kib, g.mem_total_kib);
	ksft_test_result(g.fill_mib == 64 && g.fill_errors == 0, "a %ld MiB fill reads back\n",
			 g.fill_mib);
	if (g.fill_mib > 0)
		printf("# time: guest fill and check of %ld MiB (%s): %.0f ms\n", g.fill_mib, mode,
		       g.fill_ms);
	ksft_test_result(g.marker_seen && g.marker_gpa && g.marker_gpa + 64 < mem_size &&
			 !memcmp(mem + g.marker_gpa, g.marker, strlen(g.marker)),
			 "the guest's marker is in the VMM's mapping at the GPA the guest reports\n");
	ksft_test_result(!strcmp(g.clocksource, "kvm-clock"), "clocksource kvm-clock (%s)\n",
			 g.clocksource[0] ? g.clocksource : "not reported");
	ksft_test_result(g.t_sleep[1] && g.t_sleep[2] && g.t_sleep[2] - g.t_sleep[1] > 1.8 &&
			 g.t_sleep[2] - g.t_sleep[1] < 4.0,
			 "sleep 2 in the guest took %.2f s of host time\n",
			 g.t_sleep[1] && g.t_sleep[2] ? g.t_sleep[2] - g.t_sleep[1] : -1.0);
	if (bind_other) {
		int cpu, node;
		long resident = 0, off;

		syscall(SYS_getcpu, &cpu, &node, NULL);
		off = pages_off_node(node ? 0 : 1, &resident);
		ksft_test_result(off == 0 && resident > 0,
				 "every page of guest memory is on node %d (%ld of %ld resident pages are not)\n",
				 node ? 0 : 1, off, resident);
	}
	/*
	 * The guest's own verdict: it reached its exit port (no panic, reset or
	 * hang), wrote 0 there, and counted no error, among them no
	 * WARNING/BUG/Oops/panic/KASAN line in its kernel log.
	 */
	ksft_test_result_code(!why && g.exit_code == 0 && g.done && g.guest_errors == 0 &&
			      g.klog_errors == 0 ? KSFT_PASS : KSFT_FAIL,
			      "the guest's verdict: a clean shutdown, exit 0, no errors",
			      "%s, exit %d, errors %ld, kernel log errors %ld\n",
			      why ? why : "shut down at its exit port", g.exit_code,
			      g.guest_errors, g.klog_errors);
	/*
	 * A boot that hung before init and was retried: a failure, unless its
	 * backtrace is the known TCG double injection (an allowed skip).
	 */
	if (!retries)
		ksft_test_result_code(KSFT_PASS, "no boot was retried", NULL);
	else
		ksft_test_result_code(tcg_double_injection(retry_trace) ? KSFT_SKIP : KSFT_FAIL,
				      "no boot was retried", "%s: %d boot retried (%s)\n",
				      tcg_double_injection(retry_trace) ?
				      "TCG delivered the timer interrupt twice" : "an unknown hang",
				      retries, retry_trace);
	if (ndm) {
		struct ndm_cost after = ndm_costs();
		long out = after.folios - ndm_before.folios, flushes = after.flushes - ndm_before.flushes;
		long splits = direct_map_splits(&ndm_before, &after);

		/*
		 * The guest touched at least its 64 MiB fill; the 16-page windows
		 * flush once per window at most, and a Linux boot's first touches
		 * fill a window 6.7 pages deep on average (32,699 pages, 4,870
		 * flushes, 2026-12-06): a lost window (a flush per page) is 4
		 * times over the bound. Each 2 MiB region of the direct map that
		 * holds a page taken out is split: at least pages / 512 splits
		 * (63 for 32,715 pages), at most twice that here.
		 */
		ksft_test_result(after.folios >= 0 && after.flushes >= 0 && splits >= 0 &&
				 out >= 16384 && flushes <= out / 4 && splits <= out / 256 + 8,
				 "NO_DIRECT_MAP: %ld pages out of the direct map (>= 16384), %ld flushes (<= pages / 4), %ld direct map splits (<= pages / 256 + 8)\n",
				 out, flushes, splits);
	}
	if (huge) {
		long pages = gmem_file_pages(), pages_2m = vm_stat("pages_2m");
		long folios = huge_before < 0 ? -1 : gmem_counter(HUGE_FOLIOS) - huge_before;

		/*
		 * Every 2 MiB of the file is whole (its size is a multiple): all
		 * it took must be 2 MiB folios. The 64 MiB fill alone spans 32
		 * 2 MiB of guest memory, but the count of 2 MiB mappings moves
		 * from boot to boot: 25 to 72 in 29 boots of make bench
		 * (2026-12-07; what keeps some ranges at 4 KiB is not pinned
		 * down), so at least half the fill's. 4 KiB folios give none.
		 */
		ksft_test_result(folios > 0 && folios * 512 == pages && pages_2m >= 16,
				 "2 MiB folios: %ld pages in the file, %ld 2 MiB folios (all of it), %ld 2 MiB vCPU mappings (>= 16)\n",
				 pages, folios, pages_2m);
	}
	if (use_write)
		ksft_test_result(file_before == 0 && pages_written > 0 && file_after == pages_written,
				 "write() filled holes: %ld pages in the file before loading, %ld after, %ld written\n",
				 file_before, file_after, pages_written);
	ksft_finished();
}
