/* SPDX-License-Identifier: MIT */
/*
 * Writeback and checkpoints.  Written data sits in dirty clusters of the
 * cluster cache; writeback compresses them (through the window cache, as
 * f2fs_compress_pages does), writes them out of place to new blocks, and
 * points the file's cluster items at them.  A checkpoint writes back
 * everything, stores changed inodes, and commits the transaction
 * (czfs_fs_commit): that is what makes data durable.  A flusher thread
 * checkpoints every `commit` seconds when something changed; fsync asks
 * for one at once; unmount ends with one.
 */
#ifndef CZFS_WRITEBACK_H
#define CZFS_WRITEBACK_H

#include <stdbool.h>
#include <stdint.h>

struct czfs_daemon;
struct czfs_minode;
struct czfs_centry;
struct czfs_inode_info;

/* Start the flusher thread (periodic checkpoints): 0 or -errno. */
int czfs_flusher_start(struct czfs_daemon *dm);
/* Stop the flusher after a last checkpoint (clean: mark it a clean unmount). */
void czfs_flusher_stop(struct czfs_daemon *dm);
/* Something changed: the next periodic checkpoint has work. */
void czfs_flusher_note_change(struct czfs_daemon *dm);
/* Ask the flusher thread to write back every dirty inode now. */
void czfs_flusher_kick(struct czfs_daemon *dm);

/*
 * Write back the dirty clusters of one inode (no lock held by the caller):
 * all that are dirty when it starts, a transaction per batch of them.
 * Returns 0 or -errno (-ENOSPC, -EIO); on error the clusters stay dirty.
 */
int czfs_writeback_inode(struct czfs_daemon *dm, struct czfs_minode *mi);
/* The same for one batch of the oldest dirty clusters: a writer's
 * throttle, bounded in time. */
int czfs_writeback_some(struct czfs_daemon *dm, struct czfs_minode *mi);

/*
 * Store mi's attributes in the tree now, in the running transaction (takes
 * fs->lock), and note the change for the next checkpoint: 0 or -errno.
 */
int czfs_writeback_attr(struct czfs_daemon *dm, struct czfs_minode *mi);

/*
 * A writer throttles itself, as balance_dirty_pages does: past 3/8 of the
 * page pool in dirty clusters, it writes back a batch of each dirty inode
 * at a time until under it again, so that many small dirty files cannot
 * fill the pool (no lock held).
 */
void czfs_writeback_balance(struct czfs_daemon *dm);

/* Write back everything and commit a checkpoint.  0 or -errno. */
int czfs_writeback_checkpoint(struct czfs_daemon *dm);
/* The same, marked a clean unmount (fsck trusts it): for remount ro. */
int czfs_writeback_checkpoint_clean(struct czfs_daemon *dm);

/*
 * Space for dirty data, taken when a cluster first becomes dirty (its
 * worst case: the cluster stored raw), given back at writeback: so that
 * what a write accepted can always be written.  -ENOSPC when the image
 * cannot hold it (a margin stays for metadata, unlink and checkpoints).
 */
int czfs_writeback_reserve(struct czfs_daemon *dm, uint64_t blocks);
void czfs_writeback_unreserve(struct czfs_daemon *dm, uint64_t blocks);
/* Blocks free for new data, reservations and the margin deducted. */
uint64_t czfs_writeback_room(struct czfs_daemon *dm);

/*
 * Whether cluster idx of ii is promised room (fallocate set it aside: a
 * RESERVED cluster or a partial tail):
 * a tree lookup, only when ii has such clusters.  Takes fs->lock shared:
 * call it without mi->lock.
 */
bool czfs_writeback_promised(struct czfs_daemon *dm,
			     const struct czfs_inode_info *ii, uint64_t idx);

/*
 * Mark a referenced cache entry of mi dirty after a write (mi->lock held):
 * the first time, the reference moves to mi's dirty list and space is
 * reserved (-ENOSPC; never for a promised cluster, czfs_writeback_promised,
 * whose room fallocate set aside); later writes only bump its write count
 * and drop the caller's reference.
 */
int czfs_writeback_mark_dirty(struct czfs_daemon *dm, struct czfs_minode *mi,
			      struct czfs_centry *e, bool promised);

#endif /* CZFS_WRITEBACK_H */
