// Harness self-test: /dev/kvm answers KVM_GET_API_VERSION with 12 and
// KVM_CREATE_VM works. Prints TAP; exits 4 (kselftest skip) without /dev/kvm.
// Build: cc -static -O2 -o kvm-smoke tests/guest/kvm-smoke.c
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int main(void)
{
	int failed = 0;
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);

	printf("TAP version 13\n1..2\n");
	if (kvm < 0) {
		printf("ok 1 # SKIP open /dev/kvm: %s\nok 2 # SKIP no /dev/kvm\n", strerror(errno));
		return 4;
	}

	int api = ioctl(kvm, KVM_GET_API_VERSION, 0);
	failed |= api != KVM_API_VERSION;
	printf("%s 1 - KVM_GET_API_VERSION = %d (want %d)\n",
	       api == KVM_API_VERSION ? "ok" : "not ok", api, KVM_API_VERSION);

	int vm = ioctl(kvm, KVM_CREATE_VM, 0);
	failed |= vm < 0;
	printf("%s 2 - KVM_CREATE_VM%s%s\n", vm >= 0 ? "ok" : "not ok",
	       vm >= 0 ? "" : ": ", vm >= 0 ? "" : strerror(errno));
	return failed;
}
