// SPDX-License-Identifier: MIT
/*
 * Test helper: renameat2(2) with its flags, which neither mv nor python's
 * os.rename can pass.
 *
 *   renameat2 [--noreplace | --exchange] OLD NEW
 *
 * Exit 0 on success; on failure print the errno name (EEXIST, ...) on
 * stdout and exit 1; 2 on bad usage.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

int main(int argc, char **argv)
{
	unsigned flags = 0;
	int i;
	const char *name;

	if (argc == 4 && !strcmp(argv[1], "--noreplace"))
		flags = RENAME_NOREPLACE;
	else if (argc == 4 && !strcmp(argv[1], "--exchange"))
		flags = RENAME_EXCHANGE;
	else if (argc != 3) {
		fprintf(stderr, "usage: renameat2 [--noreplace | --exchange] "
			"OLD NEW\n");
		return 2;
	}
	i = argc - 2;
	/* the raw system call: no libc wrapper needed */
	if (syscall(SYS_renameat2, AT_FDCWD, argv[i], AT_FDCWD, argv[i + 1],
		    flags) == 0)
		return 0;
	name = strerrorname_np(errno);
	printf("%s\n", name ? name : "unknown");
	return 1;
}
