/* SPDX-License-Identifier: MIT */
/*
 * Writeback.  Written data sits in dirty clusters of the cluster cache;
 * writeback compresses them batch by batch (wbencode.h: on every core,
 * through the window cache, as f2fs_compress_pages does), or writes a
 * hot one block by block (wbblocks.h), out of place to new blocks
 * (room.h), and points the file's cluster items at them; small files go
 * together in packs (wbpack.h).  When it runs, and the checkpoints that
 * make it durable: flusher.h.
 */
#ifndef CZFS_WRITEBACK_H
#define CZFS_WRITEBACK_H

#include <stdbool.h>
#include <stdint.h>

struct czfs_daemon;
struct czfs_minode;
struct czfs_centry;
struct czfs_inode_info;

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
 * Mark a referenced cache entry of mi dirty after a write (mi->lock held):
 * the first time, the reference moves to mi's dirty list and space is
 * reserved (-ENOSPC; never for a promised cluster, czfs_room_promised,
 * whose room fallocate set aside); later writes only bump its write count
 * and drop the caller's reference.
 */
int czfs_writeback_mark_dirty(struct czfs_daemon *dm, struct czfs_minode *mi,
			      struct czfs_centry *e, bool promised);

/* Bytes [from, to) of e's cluster were written (mi->lock held): their
 * blocks' bits in its wmask; a write since the recompression took it. */
void czfs_writeback_written(struct czfs_centry *e, uint64_t from, uint64_t to);

/*
 * Everything: packs of small files, then every inode's dirty clusters and
 * attributes.  Returns an error of the walk itself; *first, the first
 * inode's failure (its data stays dirty).
 */
int czfs_writeback_all(struct czfs_daemon *dm, int *first);
/* The same without the attributes, failures only logged: a kick. */
void czfs_writeback_dirty(struct czfs_daemon *dm);
/* Packs of the dirty small files alone: before a writer's throttle. */
void czfs_writeback_packs(struct czfs_daemon *dm);

/* Make the kernel drop the attributes it keeps of ino: they changed
 * without a reply that told it (a writeback's block count, chattr's
 * ctime).  Takes no lock. */
void czfs_writeback_notify_attrs(struct czfs_daemon *dm, uint64_t ino);

#endif /* CZFS_WRITEBACK_H */
