// SPDX-License-Identifier: MIT
/*
 * czfs-stat: print the live counters of a mounted czfs (window mappings,
 * page pool and reserve, allocation latency, backing requests, caches,
 * decompression), read from the user.czfs.stats xattr of the mount root.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#define STATS_XATTR	"user.czfs.stats"

static void usage(FILE *f)
{
	fputs("usage: czfs-stat MOUNTPOINT\n"
	      "Print the live counters of a mounted czfs, one \"name value\" per line.\n"
	      "  -h, --help     this text\n"
	      "  -V, --version  the version\n",
	      f);
}

int main(int argc, char **argv)
{
	char buf[65536];
	ssize_t n;

	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (argc == 2 && (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version"))) {
		printf("czfs-stat (czfs) %s\n", CZFS_VERSION);
		return 0;
	}
	if (argc != 2) {
		usage(stderr);
		return 2;
	}
	n = getxattr(argv[1], STATS_XATTR, buf, sizeof(buf));
	if (n < 0) {
		fprintf(stderr, "czfs-stat: %s: %s\n", argv[1],
			errno == ENODATA || errno == ENOTSUP ?
			"not the root of a czfs mount" : strerror(errno));
		return 1;
	}
	fwrite(buf, 1, (size_t)n, stdout);
	return 0;
}
