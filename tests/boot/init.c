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
 *   GMEMBOOT memory available_kib=A total_kib=T   the kernel's "Memory:"
 *                                            line: what it saw of the e820
 *   GMEMBOOT klog-error LINE                 each WARNING, BUG, Oops, panic,
 *                                            KASAN... line of its kernel log
 *   GMEMBOOT klog errors=N                   how many (each is an error)
 *   GMEMBOOT done errors=N
 * Exit: outb(errors ? 1 : 0, 0x501).
 * The VMM boots with printk.devkmsg=on: /dev/kmsg's default rate limit (10
 * lines in 5 s) would drop reports silently.
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
#include <sys/klog.h>
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

/* Lines of a kernel log that mean something went wrong in the kernel. */
static const char *const bad_klog[] = {
	"WARNING:", "BUG:", "Oops", "Kernel panic", "KASAN", "UBSAN",
	"general protection fault", "possible circular locking",
	"possible recursive locking", "INFO: task", "rcu_sched detected stall",
	"rcu: INFO:", "soft lockup", "hard LOCKUP", "Call Trace:",
};

/*
 * Read the whole kernel log (klogctl: everything, whatever "quiet" kept
 * off the console): report the "Memory:" line's counts, and each bad line
 * as an error of its own.
 */
static void scan_klog(void)
{
	int size = klogctl(10, NULL, 0), n, bad = 0;	/* SYSLOG_ACTION_SIZE_BUFFER */
	char *buf, *line, *save, *p;
	long avail = -1, total = -1;

	buf = size > 0 ? malloc(size + 1) : NULL;
	n = buf ? klogctl(3, buf, size) : -1;		/* SYSLOG_ACTION_READ_ALL */
	if (n < 0) {
		report("klog read failed: %s\n", strerror(errno));
		errors++;
		free(buf);
		return;
	}
	buf[n] = 0;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		/* Our own reports are in the log too. */
		if (strstr(line, "GMEMBOOT"))
			continue;
		p = strstr(line, "Memory: ");
		if (p && strstr(p, " available"))
			sscanf(p, "Memory: %ldK/%ldK", &avail, &total);
		for (size_t i = 0; i < sizeof(bad_klog) / sizeof(bad_klog[0]); i++) {
			if (strstr(line, bad_klog[i])) {
				report("klog-error %s\n", line);
				bad++;
				break;
			}
		}
	}
	report("memory available_kib=%ld total_kib=%ld\n", avail, total);
	report("klog errors=%d\n", bad);
	errors += bad;
	free(buf);
}

int main(void)
{
	size_t fill = (size_t)FILL_MIB << 20, bad = 0;
	struct timespec two = { .tv_sec = 2 }, t0, t1;
	char buf[128], cmdline[1024], *marker;
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
	/* The scan's positive control: a WARNING line on request. */
	first_line("/proc/cmdline", cmdline, sizeof(cmdline));
	report("cmdline %s\n", cmdline);
	if (strstr(cmdline, "gmemboot.fake_warning")) {
		static const char fake[] = "<4>WARNING: CPU: 0 PID: 1 at init.c: gmemboot.fake_warning\n";

		if (kmsg < 0 || write(kmsg, fake, sizeof(fake) - 1) < 0)
			errors++;
	}
	scan_klog();
	report("done errors=%d\n", errors);
	outb(errors ? 1 : 0, EXIT_PORT);
	/* The VMM ends the run at the exit port; in case it does not: */
	reboot(RB_POWER_OFF);
	return 0;
}
