// SPDX-License-Identifier: MIT
/* The image lock, and telling a mounted image from one that is finishing. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "imagelock.h"
#include "log.h"
#include "mountinfo.h"

struct find_image {
	const struct stat *st;
	char *where;
	size_t cap;
};

static int is_image(const struct czfs_mount_entry *me, void *arg)
{
	struct find_image *fi = arg;
	struct stat s;

	if (stat(me->source, &s) || s.st_dev != fi->st->st_dev ||
	    s.st_ino != fi->st->st_ino)
		return 0;
	snprintf(fi->where, fi->cap, "%s", me->mountpoint);
	return 1;
}

/* The mount point of a czfs mount of the file st names, into `where`. */
static bool mounted_on(const struct stat *st, char *where, size_t cap)
{
	struct find_image fi = { st, where, cap };

	return czfs_mountinfo_each(is_image, &fi) == 1;
}

/*
 * A live process other than a czfs-fuse daemon holding the lock of the
 * file st names (fsck, dump, a user's flock): its pid and name; 0 when
 * the holders are daemons or are gone (a daemon forked into the background
 * after it took the lock shows its parent's pid).  /proc/locks lines:
 * "N: FLOCK ADVISORY WRITE PID MAJ:MIN:INO START END".
 */
static long other_holder(const struct stat *st, char *name, size_t cap)
{
	FILE *f = fopen("/proc/locks", "re");
	char path[64], comm[64], *line = NULL;
	unsigned long long ino;
	long pid, found = 0;
	unsigned maj, min;
	size_t len = 0;
	FILE *c;

	if (!f)
		return 0;
	while (!found && getline(&line, &len, f) > 0) {
		/* waiters ("N: -> FLOCK ...") and other lock kinds do not match */
		if (sscanf(line, "%*d: FLOCK %*s %*s %ld %x:%x:%llu",
			   &pid, &maj, &min, &ino) != 4 ||
		    ino != st->st_ino || makedev(maj, min) != st->st_dev || pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
		c = fopen(path, "re");
		if (!c)
			continue;
		if (fgets(comm, sizeof(comm), c)) {
			comm[strcspn(comm, "\n")] = 0;
			if (strcmp(comm, "czfs-fuse")) {
				snprintf(name, cap, "%s", comm);
				found = pid;
			}
		}
		fclose(c);
	}
	free(line);
	fclose(f);
	return found;
}

int czfs_image_lock(int fd, bool shared, unsigned wait_seconds)
{
	int op = (shared ? LOCK_SH : LOCK_EX) | LOCK_NB;
	struct timespec nap = { 0, 20 * 1000 * 1000 };
	char where[4096];
	struct stat st;
	unsigned naps;
	long holder;

	if (!flock(fd, op))
		return 0;
	if (errno != EWOULDBLOCK || fstat(fd, &st))
		goto busy;
	if (mounted_on(&st, where, sizeof(where))) {
		czfs_err("image is in use: mounted on %s", where);
		return -EBUSY;
	}
	holder = other_holder(&st, where, sizeof(where));
	if (holder) {
		czfs_err("image is in use by %s (pid %ld)", where, holder);
		return -EBUSY;
	}
	czfs_info("image is busy: a czfs-fuse daemon is finishing its unmount; "
		  "waiting up to %u s", wait_seconds);
	for (naps = 0; naps < wait_seconds * 50u; naps++) {
		nanosleep(&nap, NULL);
		if (!flock(fd, op))
			return 0;
		if (errno != EWOULDBLOCK)
			break;
		if (mounted_on(&st, where, sizeof(where))) {
			czfs_err("image is in use: mounted on %s", where);
			return -EBUSY;
		}
	}
busy:
	czfs_err("image is in use (mounted or being checked)");
	return -EBUSY;
}
