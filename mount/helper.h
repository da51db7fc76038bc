/* SPDX-License-Identifier: MIT */
/*
 * What the mount helpers (mount.czfs, umount.fuse.czfs) share: the state
 * a running daemon shows in the user.czfs.stats xattr of its mount root,
 * running util-linux's mount and umount without helpers (-i), and waiting
 * for a daemon to exit.
 */
#ifndef CZFS_MOUNT_HELPER_H
#define CZFS_MOUNT_HELPER_H

#include <stdbool.h>
#include <sys/types.h>

struct czfs_daemon_state {
	pid_t pid;
	bool writable;		/* started read-write: can go back to rw */
	bool readonly;		/* read-only now (started so, or remounted) */
};

/*
 * The state of the daemon serving the mount at `mnt`: 0, -ENODATA when
 * mnt is not the root of a czfs mount (or the daemon predates the state
 * lines), or -errno of getxattr.
 */
int czfs_daemon_state(const char *mnt, struct czfs_daemon_state *ds);

/* Run argv (searched in PATH), wait for it: its exit status, or 127. */
int czfs_run(const char *const argv[], bool verbose);

/*
 * Wait until the process behind pidfd exits, up to `seconds`; after one
 * second a line on stderr says what is waited for (`what`).  0 when it
 * exited, -ETIMEDOUT, or -errno.
 */
int czfs_wait_exit(int pidfd, pid_t pid, const char *what, unsigned seconds);

/*
 * The options both helpers take alike: -N NS (enter that mount namespace),
 * -h/--help, -V/--version, and an unknown one.  Returns -1 when c was
 * handled and parsing goes on, else the exit status to return.
 */
int czfs_helper_common_opt(int c, const char *arg, const char *name,
			   const char *usage);

#endif /* CZFS_MOUNT_HELPER_H */
