/* SPDX-License-Identifier: MIT */
/*
 * Room for data in the image.  A cluster takes its worst case (stored
 * raw) when it first becomes dirty, and gives it back at writeback: so
 * that what a write accepted can always be written.  A margin stays for
 * metadata, unlink and checkpoints.  Writeback finds its blocks here.
 *
 * Threads: any; the reservations are one atomic counter (dm->reserved_blocks).
 */
#ifndef CZFS_FUSE_ROOM_H
#define CZFS_FUSE_ROOM_H

#include <stdbool.h>
#include <stdint.h>

struct czfs_daemon;
struct czfs_inode_info;

/* Blocks free for new data, reservations and the margin deducted. */
uint64_t czfs_room_free(struct czfs_daemon *dm);

/* Take room for blocks of dirty data: 0, or -ENOSPC when the image cannot
 * hold them beside the margin; give it back. */
int czfs_room_reserve(struct czfs_daemon *dm, uint64_t blocks);
void czfs_room_unreserve(struct czfs_daemon *dm, uint64_t blocks);

/*
 * Whether cluster idx of ii is promised room (fallocate set it aside: a
 * RESERVED cluster or a partial tail): a tree lookup, only when ii has
 * such clusters.  Takes fs->lock shared: call it without mi->lock.
 */
bool czfs_room_promised(struct czfs_daemon *dm,
			const struct czfs_inode_info *ii, uint64_t idx);

/*
 * Find n contiguous blocks for writeback (fs->lock not held): *blk, 0 or
 * -errno.  When only blocks freed since the last checkpoint are left, it
 * commits one first: they become usable once it is durable.
 */
int czfs_room_alloc(struct czfs_daemon *dm, unsigned n, uint64_t *blk);

#endif /* CZFS_FUSE_ROOM_H */
