/* SPDX-License-Identifier: MIT */
/*
 * Remounting: `mount -o remount,ro|rw MNT` changes the kernel's view of
 * the mount (the mount helper does it), then sends SIGUSR1 to the daemon,
 * which reads its mount's state from /proc/self/mountinfo and follows it.
 * Going read-only writes everything back and commits a clean checkpoint,
 * so that the image is final while the mount is read-only (a backup may
 * copy it); going back to read-write starts changing it again.  Only a
 * daemon started read-write can go back to read-write: one started with
 * -o ro has the image open read-only (the helper refuses with a message).
 * The state is shown in the user.czfs.stats lines daemon.readonly and
 * daemon.writable, which the helper waits on.
 */
#ifndef CZFS_REMOUNT_H
#define CZFS_REMOUNT_H

#include <stdbool.h>

struct czfs_daemon;

/*
 * Block SIGUSR1 in the calling thread (threads created after inherit it)
 * and start the thread that waits for it.  Call before other threads
 * start.  0 or -errno.
 */
int czfs_remount_start(struct czfs_daemon *dm);
/* Stop that thread (before the flusher stops). */
void czfs_remount_stop(struct czfs_daemon *dm);
/* True while the kernel mount is read-only: no access-time updates. */
bool czfs_remount_is_ro(const struct czfs_daemon *dm);

#endif /* CZFS_REMOUNT_H */
