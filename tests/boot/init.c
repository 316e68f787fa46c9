// SPDX-License-Identifier: GPL-2.0
/*
 * boot/init: PID 1 of the Linux guest that gmem_linux_boot_test boots on
 * guest_memfd memory. It reports through the kernel log (/dev/kmsg, which
 * the console prints synchronously, so the VMM needs no UART interrupts),
 * one "GMEMBOOT key=value..." line per fact, and ends the run with its
 * verdict on the VMM's debug-exit port:
 *   GMEMBOOT init uptime=S                   it runs
 *   GMEMBOOT memtotal_kib=N                  /proc/meminfo
 *   GMEMBOOT clocksource=NAME                the current clocksource
 *   GMEMBOOT clockevent=NAME broadcast=NAME  the timer, the broadcast one
 *   GMEMBOOT fill mib=N errors=N ms=N        a buffer filled and checked,
 *                                            and how long that took
 *   GMEMBOOT marker gpa=0x... text=...       a page only this guest wrote,
 *                                            at the guest-physical address
 *                                            /proc/self/pagemap gives
 *   (port 0x502: 1, then "sleep 2", then 2: the VMM times it)
 * Exit: outb(errors ? 1 : 0, 0x501).
 * Static, no libc beyond what -static links; run as root (ioperm, pagemap).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/io.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/reboot.h>

#define EXIT_PORT	0x501
#define TIME_PORT	0x502
#define FILL_MIB	64

static int kmsg = -1;
static int errors;

static void report(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	/* Level 2 (crit): printed even with "quiet" on the command line. */
	n = snprintf(line, sizeof(line), "<2>GMEMBOOT ");
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	if (kmsg >= 0 && write(kmsg, line, n) < 0)
		errors++;
}

static long meminfo(const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = strtol(line + strlen(key), NULL, 10);
	if (f)
		fclose(f);
	return v;
}

static void first_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	buf[0] = 0;
	if (f && fgets(buf, len, f))
		buf[strcspn(buf, "\n")] = 0;
	if (f)
		fclose(f);
}

/* The guest-physical address of @p: its pfn from /proc/self/pagemap. */
static uint64_t gpa_of(void *p)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t entry = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (fd < 0 || pread(fd, &entry, sizeof(entry), (uintptr_t)p / page * sizeof(entry)) != sizeof(entry))
		entry = 0;
	if (fd >= 0)
		close(fd);
	if (!(entry >> 63))
		return 0;
	return (entry & ((1ULL << 55) - 1)) * page + (uintptr_t)p % page;
}

int main(void)
{
	size_t fill = (size_t)FILL_MIB << 20, bad = 0;
	struct timespec two = { .tv_sec = 2 }, t0, t1;
	char buf[128], *marker;
	uint64_t *mem;
	double uptime;

	mount("proc", "/proc", "proc", 0, NULL);
	mount("sysfs", "/sys", "sysfs", 0, NULL);
	kmsg = open("/dev/kmsg", O_WRONLY);
	first_line("/proc/uptime", buf, sizeof(buf));
	uptime = strtod(buf, NULL);
	report("init uptime=%.2f\n", uptime);
	report("memtotal_kib=%ld\n", meminfo("MemTotal:"));
	first_line("/sys/devices/system/clocksource/clocksource0/current_clocksource", buf, sizeof(buf));
	report("clocksource=%s\n", buf[0] ? buf : "none");
	first_line("/sys/devices/system/clockevents/clockevent0/current_device", buf, sizeof(buf));
	report("clockevent=%s\n", buf[0] ? buf : "none");
	first_line("/sys/devices/system/clockevents/broadcast/current_device", buf, sizeof(buf));
	report("broadcast=%s\n", buf[0] ? buf : "none");

	clock_gettime(CLOCK_MONOTONIC, &t0);
	mem = malloc(fill);
	if (!mem) {
		errors++;
	} else {
		for (size_t i = 0; i < fill / 8; i++)
			mem[i] = i * 0x9e3779b97f4a7c15ULL;
		for (size_t i = 0; i < fill / 8; i++)
			bad += mem[i] != i * 0x9e3779b97f4a7c15ULL;
	}
	errors += bad != 0;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	report("fill mib=%d errors=%zu ms=%.0f\n", mem ? FILL_MIB : 0, bad,
	       (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);

	marker = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED, -1, 0);
	if (marker == MAP_FAILED) {
		errors++;
	} else {
		snprintf(marker, 64, "GMEMBOOT-MARKER-%08lx", (unsigned long)time(NULL) ^ 0x5eed1234UL);
		report("marker gpa=%#llx text=%s\n", (unsigned long long)gpa_of(marker), marker);
	}

	if (ioperm(EXIT_PORT, 2, 1)) {
		report("ioperm: %s\n", strerror(errno));
		reboot(RB_POWER_OFF);
	}
	outb(1, TIME_PORT);
	nanosleep(&two, NULL);
	outb(2, TIME_PORT);
	report("done errors=%d\n", errors);
	outb(errors ? 1 : 0, EXIT_PORT);
	/* The VMM ends the run at the exit port; in case it does not: */
	reboot(RB_POWER_OFF);
	return 0;
}
