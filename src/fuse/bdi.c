// SPDX-License-Identifier: MIT
/*
 * Kernel readahead of the mount.  The kernel sizes a FUSE mount's readahead
 * from its default (128 KiB), so reads arrive as 128 KiB requests even
 * though the connection allows 1 MiB (max_pages).  A root mount can raise
 * it through the mount's backing_dev_info in sysfs; found by the device
 * number /proc/self/mountinfo gives for the mount point, so that nothing
 * blocks on the mount.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bdi.h"
#include "daemon.h"
#include "log.h"

static int mount_devnum(const char *mountpoint, unsigned *major, unsigned *minor)
{
	char line[4096], mnt[4096];
	FILE *f = fopen("/proc/self/mountinfo", "r");
	int found = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned ma, mi;

		/* id parent major:minor root mountpoint ... */
		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &ma, &mi, mnt) == 3 &&
		    !strcmp(mnt, mountpoint) && strstr(line, " fuse.czfs ")) {
			*major = ma;
			*minor = mi;
			found = 1;	/* the last one is the newest */
		}
	}
	fclose(f);
	return found ? 0 : -1;
}

void czfs_bdi_set_readahead(struct czfs_daemon *dm)
{
	uint64_t bytes = dm->opts.kernel_readahead;
	unsigned major, minor;
	char path[128];
	FILE *f;

	if (!bytes || !dm->mountpoint || atomic_exchange(&dm->ra_set, true))
		return;
	if (mount_devnum(dm->mountpoint, &major, &minor)) {
		czfs_warn("%s: cannot find the mount to set its readahead",
			  dm->mountpoint);
		return;
	}
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", major, minor);
	f = fopen(path, "w");
	if (!f || fprintf(f, "%llu\n", (unsigned long long)(bytes >> 10)) < 0 ||
	    fclose(f))
		czfs_info("kernel readahead left at its default (%s: %s)", path,
			  strerror(errno));
}
