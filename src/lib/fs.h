/* SPDX-License-Identifier: MIT */
/*
 * An open image: superblock, current checkpoint, the metadata tree and the
 * space map.  Shared by czfs-fuse, fsck.czfs and dump.czfs.
 */
#ifndef CZFS_FS_LIB_H
#define CZFS_FS_LIB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "btree.h"
#include "discard.h"
#include "spacemap.h"
#include "super.h"


struct czfs_bdev;
struct czfs_codec;
struct czfs_cluster_info;
struct czfs_inode_info;
struct czfs_stored;

#define CZFS_OPEN_RDONLY	0x01	/* no writes to the image */
#define CZFS_OPEN_DIRECT	0x02	/* O_DIRECT on the image */
#define CZFS_OPEN_NOSMAP	0x04	/* do not load the space map (ro only) */
#define CZFS_OPEN_EXCL		0x08	/* exclusive lock even when read-only
					 * (fsck: no mount may share it) */
#define CZFS_OPEN_DISCARD	0x10	/* punch blocks freed by each commit
					 * out of the image file (discard.h) */
#define CZFS_OPEN_DIRECT_DATA	0x20	/* large data reads with O_DIRECT
					 * (bdev.h: CZFS_BDEV_DIRECT_DATA) */

struct czfs_fs_opts {
	unsigned flags;			/* CZFS_OPEN_* */
	unsigned node_cache_nodes;	/* 0 = default (16384 nodes, 64 MiB) */
	const char *log_writes;		/* record every change to this log
					 * (czfs_bdev_log_create), NULL = no */
	int64_t fixed_time;		/* > 0: the time checkpoints record,
					 * not the clock's (the same image
					 * from the same changes) */
};

struct czfs_fs {
	struct czfs_bdev *bdev;
	struct czfs_sb_info sb;
	struct czfs_cp_info cp;		/* the last checkpoint: fs->lock */
	/* cp.image_blocks, for readers without fs->lock
	 * (czfs_fs_checkpointed_blocks) */
	_Atomic uint64_t cp_image_blocks;
	struct czfs_nodecache *nc;
	struct czfs_btree tree;
	struct czfs_smap smap;		/* loaded unless CZFS_OPEN_NOSMAP */
	bool rdonly;
	bool discard;			/* CZFS_OPEN_DISCARD, until the host refuses */
	/* Set by an owner that runs czfs_fs_discard_freed itself, after it
	 * lets go of fs->lock (the daemon); else commits run it. */
	bool defer_discard;
	/* Commits that bring at most this many blocks into use are made
	 * with one flush (COVERED, czfs_fs.h); 0: never.  Set by the daemon
	 * (czfs_fs_cover), whose fsyncs are small; mkfs and fsck make two. */
	uint64_t cover_blocks;
	bool super_unflushed;		/* the superblock, since the last commit */
	int64_t fixed_time;		/* czfs_fs_opts.fixed_time */
	pthread_mutex_t discard_lock;	/* one discard pass at a time */
	struct czfs_discard_stats discarded;	/* by discard passes, discard_lock */
	/* Metadata lock: shared for lookups, exclusive for changes. */
	pthread_rwlock_t lock;
};

/*
 * Open the image at path.  The image file is locked first (flock, without
 * waiting): shared for a read-only open, exclusive for a writable one or
 * with CZFS_OPEN_EXCL; -EBUSY when another open holds a conflicting lock.
 * Then checks, in order, each failure with a log line:
 * superblock (czfs_super_decode), image size (a file shorter than the
 * checkpoint's image_blocks is truncated: -EFSCORRUPTED), checkpoint,
 * root node, space map, root inode is a directory.  With CZFS_OPEN_DISCARD
 * the free ranges are then punched out of the image (discard.h).  Returns 0, the errors
 * of those checks, or the open(2) errno.  (A URL: czfs_image_open,
 * src/remote/image.h.)
 * With opts->log_writes, every change to the device from the open on is
 * recorded there (bdev.h, czfs_bdev_log_create; a log that cannot be
 * created fails the open with its errno).
 */
int czfs_fs_open(const char *path, const struct czfs_fs_opts *opts,
		 struct czfs_fs **out);

/*
 * Make commits that bring at most blocks blocks into use with one flush
 * (COVERED), and keep the crc of what is written from now on
 * (blockcrc.h) so that they need not read those blocks back.  Call it
 * before other threads write.  0, or -ENOMEM (commits then read back).
 */
int czfs_fs_cover(struct czfs_fs *fs, uint64_t blocks);

/* The bdev flags (CZFS_BDEV_*) that open flags (CZFS_OPEN_*) ask for. */
unsigned czfs_fs_bdev_flags(unsigned open_flags);

/* Same over an open device; takes ownership of bdev (even on failure). */
int czfs_fs_open_bdev(struct czfs_bdev *bdev, const struct czfs_fs_opts *opts,
		      struct czfs_fs **out);

/*
 * Close an image (accepts NULL): what is not committed is dropped, the
 * image keeps its last checkpoint.  No other thread may use fs then.
 */
void czfs_fs_close(struct czfs_fs *fs);

/* ---- transactions (commit.c) ------------------------------------------- */

/*
 * Changes to an open image are grouped into transactions.  czfs_fs_begin()
 * starts building generation cp.generation + 1 (a no-op if one is open):
 * tree changes then copy nodes to blocks from the space map.  Data blocks
 * are written out of place by the caller before it links them in.
 * czfs_fs_commit() makes the transaction durable, in this order:
 *   1. every dirty B-tree node is written
 *   2. the changed space-map blocks are written (copy-on-write)
 *   3. flush: everything the new checkpoint names is on disk
 *   4. the checkpoint goes to the older slot, then flush
 *   5. blocks freed by this transaction become reusable; with discard,
 *      once they are punched out of the image file (discard.h), which
 *      with fs->defer_discard is the caller's next step, after fs->lock
 * A crash at any point before 4 completes leaves the previous checkpoint
 * and everything it names intact.  Both need a writable fs with its space
 * map; the caller holds fs->lock exclusively.  Returns 0, -EROFS, -ENOSPC
 * or an I/O error (after an error in commit the fs must be closed: the
 * image still holds the last committed state).
 */
int czfs_fs_begin(struct czfs_fs *fs);
int czfs_fs_commit(struct czfs_fs *fs);

/* Is a transaction open (begun and not committed)?  Without one, a
 * checkpoint would make nothing new durable.  Caller holds fs->lock. */
bool czfs_fs_changed(const struct czfs_fs *fs);

/*
 * Commits that mark the checkpoint, with czfs_fs_commit's returns and
 * lock.  czfs_fs_commit_mount: the first commit of a writable mount: one
 * more mount counted, and the image no longer marked cleanly unmounted.
 * czfs_fs_commit_unmount: the last one, marked a clean unmount (the mark
 * is for that checkpoint only: fs->cp keeps it clear).
 */
int czfs_fs_commit_mount(struct czfs_fs *fs);
int czfs_fs_commit_unmount(struct czfs_fs *fs);

/*
 * Announce incompat feature bits in the superblock (rewritten in place,
 * block 0) before a commit names what needs them: the commit's first flush
 * orders it.  A no-op when the bits are there.  Writable fs, fs->lock held
 * exclusive.  0 or an I/O error (fs->sb unchanged then).
 */
int czfs_fs_add_features(struct czfs_fs *fs, uint32_t incompat);

/*
 * Announce ro_compat bits the image now meets (rewritten in place and
 * flushed; after the commit that makes them true).  A no-op when set.
 * Writable fs, fs->lock held exclusive or no other user.  0 or -errno.
 */
int czfs_fs_add_ro_compat(struct czfs_fs *fs, uint32_t ro_compat);

/*
 * The image's end in blocks as the last checkpoint knows it, read without
 * fs->lock (a reader's request may not reach past it).
 */
static inline uint64_t czfs_fs_checkpointed_blocks(struct czfs_fs *fs)
{
	return atomic_load_explicit(&fs->cp_image_blocks, memory_order_acquire);
}

/* Rewrite the superblock in place (block 0) as sb; fs->sb = *sb on success. */
int czfs_fs_write_super(struct czfs_fs *fs, const struct czfs_sb_info *sb);

/*
 * Raise the size limit to max_blocks (never lowers it) in place: the space
 * map grows, a commit records the limit in the checkpoint, then the
 * superblock's copy is rewritten; a file image is extended (sparse) to the
 * new limit first.  For an offline tool: a writable fs nobody else uses,
 * closed afterwards (the node cache keeps the old limit for its checks).
 * Returns 0, -EROFS, -EINVAL (smaller than now), -EFBIG (more index blocks
 * than a checkpoint holds), -ENOSPC (a block device too small), or the
 * commit's errors.
 */
int czfs_fs_grow(struct czfs_fs *fs, uint64_t max_blocks);

/* ---- file data (fileread.c) -------------------------------------------- */

/*
 * Find clusters [first, first + n) of inode ii (n >= 1), with one walk of
 * the tree.  Returns 0 with ci[0..n) (kind HOLE where there is no item,
 * and for a RESERVED item, which reads as one: its ci.prealloc is set);
 * inline payloads are copied into inl, CZFS_INLINE_MAX bytes per cluster
 * (n * CZFS_INLINE_MAX in all), and ci[i].inline_data points there.
 * -EFSCORRUPTED (a bad item, named in the log), -EIO.  Both the daemon
 * and czfs_file_pread find clusters through it.
 * Caller holds fs->lock shared.
 */
int czfs_cluster_lookup(struct czfs_fs *fs, const struct czfs_inode_info *ii,
			uint64_t first, unsigned n, struct czfs_cluster_info *ci,
			void *inl);

/*
 * Walk the cluster items of kind from key *next on (all zero: the
 * start), in key order, looking at up to max items of the tree:
 * fn(ctx, ino, idx) for each found, which returns 0 to go on or -errno
 * to stop.  Returns 1 when the walk reached the end of the tree, 0 when
 * it stopped after max items (*next then is the key to go on from), or
 * -errno.  Only the item's kind is read: decode what it found with
 * czfs_cluster_lookup.  Caller holds fs->lock shared; a walk in pieces
 * sees each item that stays, and may miss or repeat those that change
 * between pieces.
 */
int czfs_cluster_scan(struct czfs_fs *fs, unsigned kind,
		      struct czfs_key *next, unsigned max,
		      int (*fn)(void *ctx, uint64_t ino, uint64_t idx),
		      void *ctx);

/*
 * Read and decode a cluster found by czfs_cluster_lookup into dst
 * (dst_len = the cluster's logical length, zero-filled past ci->ulen).
 * scratch holds the stored blocks: CZFS_MAX_CLUSTER_SIZE bytes, 4 KiB
 * aligned.  Returns 0, -EFSCORRUPTED or -EIO (with a log line naming the
 * block).  Needs no lock.
 */
int czfs_cluster_read(struct czfs_fs *fs, struct czfs_codec *codec,
		      const struct czfs_cluster_info *ci, void *scratch,
		      void *dst, unsigned dst_len);

/*
 * Changes to a file's clusters, inside a transaction (fs->lock held
 * exclusive).  czfs_cluster_set: cluster idx of ino becomes ci (a hole
 * deletes the item); the blocks of the old extent are freed, those of the
 * new one were allocated and written by the caller; *delta gets the
 * change of the inode's block count and inline bytes; a compressed cluster of an algorithm
 * the superblock does not announce first sets its feature bit (superblock
 * rewritten in place); an item it replaces gives its promise back, ci's
 * own (ci->prealloc) is taken (delta->prealloc).  czfs_cluster_write: the
 * same for data written back, but a hole (all-zero data) over an item that
 * promises room leaves a RESERVED item of that promise, so that the range
 * keeps fallocate's promise.  czfs_clusters_delete: delete the
 * clusters of [from, to) (a punched hole; one walk over the items there),
 * freeing their blocks and promises; czfs_clusters_drop: those idx >= from
 * (truncate).  A PACKED item replaced or deleted drops its reference of
 * its pack (czfs_pack_unref: the last frees the pack); a PACKED ci set
 * brings its reference along (the caller counted it in the PACK item) and
 * counts no blocks.  A BLOCKMAP ci keeps the blocks of the item it
 * replaces that its entries not fresh name: each must be that item's
 * block i (a RAW cluster's, a BLOCKMAP's entry, same checksum), else
 * -ESTALE and nothing changes.  0 or -errno.
 */
int czfs_cluster_set(struct czfs_fs *fs, uint64_t ino, uint64_t idx,
		     const struct czfs_cluster_info *ci, struct czfs_stored *delta);
int czfs_cluster_write(struct czfs_fs *fs, uint64_t ino, uint64_t idx,
		       const struct czfs_cluster_info *ci,
		       struct czfs_stored *delta);
int czfs_clusters_delete(struct czfs_fs *fs, uint64_t ino, uint64_t from,
			 uint64_t to, struct czfs_stored *delta);

int czfs_clusters_drop(struct czfs_fs *fs, uint64_t ino, uint64_t from,
		       struct czfs_stored *delta);

/*
 * fallocate's promise, inside a transaction (fs->lock held exclusive),
 * for a file of clusters of per blocks (1..64).  czfs_clusters_gaps:
 * *n = the clusters of [first, end) of ino that need one: holes, and data
 * clusters that do not fill their cluster (a file's tail) and promise
 * nothing yet.  czfs_clusters_reserve: each of them gets one of per blocks
 * (the cluster stored raw): a hole becomes a RESERVED cluster, a tail
 * carries it in its item; it is added to the space map's promise
 * (czfs_smap_prealloc_add) and to delta->prealloc; the superblock
 * announces INCOMPAT_PREALLOC first.  The caller has checked that the
 * image has room for n * per blocks.  0 or -errno (-ENOSPC for metadata,
 * -EINVAL for per, -EFSCORRUPTED for a bad item; after a failure the
 * promises made so far stay, counted in delta).
 */
int czfs_clusters_gaps(struct czfs_fs *fs, uint64_t ino, uint64_t first,
		       uint64_t end, unsigned per, uint64_t *n);
int czfs_clusters_reserve(struct czfs_fs *fs, uint64_t ino, uint64_t first,
			  uint64_t end, unsigned per, struct czfs_stored *delta);

/*
 * Simple uncached read of len bytes at off from a file (or symlink target):
 * for fsck --extract, readlink and tests.  Returns bytes read (short at
 * EOF), or -errno.  Takes fs->lock shared itself.
 */
long czfs_file_pread(struct czfs_fs *fs, struct czfs_codec *codec,
		     const struct czfs_inode_info *ii, void *buf, size_t len,
		     uint64_t off);

#endif /* CZFS_FS_LIB_H */
