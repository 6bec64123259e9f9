// SPDX-License-Identifier: GPL-2.0
/*
 * A tight syscall loop for `make bench`: N system calls, then print the
 * average nanoseconds per call.
 *
 *   syscall_loop N          getppid(): the shallowest stack, traced at
 *                           __x64_sys_getppid
 *   syscall_loop N stat     fstatat("/"): a path walk, traced at
 *                           generic_fillattr, 8 frames deep
 *
 * Traced with func_stack_trace on a function each call reaches once, each
 * call records exactly one kernel stack.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	int stat_mode = argc > 2 && !strcmp(argv[2], "stat");
	struct timespec a, b;
	struct stat st;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++) {
		if (stat_mode)
			syscall(SYS_newfstatat, AT_FDCWD, "/", &st, 0);
		else
			syscall(SYS_getppid);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);

	printf("%.1f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
	return 0;
}
