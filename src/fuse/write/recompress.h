/* SPDX-License-Identifier: MIT */
/*
 * Recompression.  A hot cluster is written back block by block (a
 * BLOCKMAP item: wbblocks.h), which keeps random writes cheap and gives
 * up its compression.  Once such a cluster has not been written for
 * opts.recompress seconds it is cold: a worker thread, at idle CPU and
 * I/O priority and at most a quarter of its time busy, reads it whole and
 * marks it written whole, and writeback compresses it again (copy-on-
 * write, made durable by the next checkpoint like any write).  The worker
 * learns the block-mapped clusters from writeback and, at mount, from a
 * scan of the tree (coldmap.h), so what an unmount interrupted goes on at
 * the next mount.
 *
 * On demand: czfs_recomp_file rewrites every cluster of a file now, in
 * the caller's thread, with the file's algorithm (setting
 * user.czfs.compress on a file that has data).
 */
#ifndef CZFS_FUSE_RECOMPRESS_H
#define CZFS_FUSE_RECOMPRESS_H

struct czfs_daemon;
struct czfs_minode;

/* Start the worker (when dm->cold is made: opts.recompress > 0 on a
 * read-write mount): 0 or -errno. */
int czfs_recomp_start(struct czfs_daemon *dm);
/* Stop it, before the last checkpoint (accepts a daemon without one). */
void czfs_recomp_stop(struct czfs_daemon *dm);

/*
 * Rewrite every data cluster of mi (but those in packs of small files)
 * and write them back, in batches: compressed again with mi's algorithm.
 * No lock held.  0, or -errno (-ENOSPC: the image has no room for a
 * batch; what was rewritten stays rewritten).
 */
int czfs_recomp_file(struct czfs_daemon *dm, struct czfs_minode *mi);

#endif /* CZFS_FUSE_RECOMPRESS_H */
