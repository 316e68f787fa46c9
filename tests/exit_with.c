// SPDX-License-Identifier: GPL-2.0
/* exit_with N: prints a line and exits with status N; for the qemu-run check. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int status = argc > 1 ? atoi(argv[1]) : 0;

	printf("exit_with: exiting with %d\n", status);
	return status;
}
