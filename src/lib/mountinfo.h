/* SPDX-License-Identifier: MIT */
/*
 * The czfs mounts the kernel shows in /proc/self/mountinfo: the image lock
 * tells a mounted image from one whose daemon is finishing, the daemon
 * follows its mount's read-only state across remounts.
 */
#ifndef CZFS_MOUNTINFO_H
#define CZFS_MOUNTINFO_H

#include <limits.h>
#include <stdbool.h>

struct czfs_mount_entry {
	char mountpoint[PATH_MAX];	/* unescaped */
	char source[PATH_MAX];		/* the image (fsname), unescaped */
	bool ro;			/* the superblock is read-only */
};

/*
 * Call fn for every fuse.czfs mount, in mountinfo order (a mount stacked
 * on another comes after it), until fn returns nonzero.  Returns fn's
 * nonzero value, 0 at the end, or -errno if mountinfo cannot be read.
 */
int czfs_mountinfo_each(int (*fn)(const struct czfs_mount_entry *me, void *arg),
			void *arg);

#endif /* CZFS_MOUNTINFO_H */
