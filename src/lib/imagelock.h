/* SPDX-License-Identifier: MIT */
/*
 * The image lock: one writer or many readers per image, across processes
 * (the daemon, fsck, dump).  flock(2) on the image file, so the kernel
 * drops it when the holder exits, crash or not.
 */
#ifndef CZFS_IMAGELOCK_H
#define CZFS_IMAGELOCK_H

#include <stdbool.h>

/* How long a lock held by a process that is finishing (see below) is
 * waited for before the open fails. */
#define CZFS_LOCK_WAIT_SECONDS	60

/*
 * Lock the image open on fd, shared or exclusive.  An image that is still
 * mounted (a fuse.czfs mount whose source is this file), or locked by a
 * live process that is not a czfs-fuse daemon (fsck, dump), is refused at
 * once; one locked by a daemon but no longer mounted belongs to a daemon
 * writing its last checkpoint after an unmount: that is waited for, up to
 * `wait_seconds`, with a log line saying so.  Returns 0, or -EBUSY with the
 * reason logged.
 */
int czfs_image_lock(int fd, bool shared, unsigned wait_seconds);

#endif /* CZFS_IMAGELOCK_H */
