/* SPDX-License-Identifier: MIT */
/*
 * When writeback runs, and checkpoints.  A checkpoint writes back
 * everything, stores changed inodes, and commits the transaction
 * (czfs_fs_commit): that is what makes data durable.  The flusher thread
 * checkpoints every `commit` seconds when something changed, and writes
 * back when a writer asks (a kick: flushreq.h); fsync asks for a checkpoint at once;
 * unmount ends with one.  A writer past its share of the pool throttles
 * itself here.
 */
#ifndef CZFS_FUSE_FLUSHER_H
#define CZFS_FUSE_FLUSHER_H

#include <stdbool.h>

struct czfs_daemon;

/* Start the flusher thread (periodic checkpoints): 0 or -errno. */
int czfs_flusher_start(struct czfs_daemon *dm);
/* Stop the flusher after a last checkpoint, marked a clean unmount. */
void czfs_flusher_stop(struct czfs_daemon *dm);
/* Write back everything and commit a checkpoint.  0 or -errno. */
int czfs_flusher_checkpoint(struct czfs_daemon *dm);
/* The same, marked a clean unmount (fsck trusts it): for remount ro. */
int czfs_flusher_checkpoint_clean(struct czfs_daemon *dm);

/*
 * A writer throttles itself, as balance_dirty_pages does: past 3/8 of the
 * page pool in dirty clusters, it writes back a batch of each dirty inode
 * at a time until under it again, so that many small dirty files cannot
 * fill the pool (no lock held).
 */
void czfs_flusher_balance(struct czfs_daemon *dm);

/* Whether a writer would now throttle itself (czfs_flusher_balance): the
 * session loop then lets another thread read on (loop.h). */
bool czfs_flusher_throttling(struct czfs_daemon *dm);

#endif /* CZFS_FUSE_FLUSHER_H */
