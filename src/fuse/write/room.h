/* SPDX-License-Identifier: MIT */
/*
 * Room for data in the image.  A cluster takes its worst case (stored
 * raw) when it first becomes dirty, and gives it back at writeback: so
 * that what a write accepted can always be written.  A margin stays for
 * metadata, unlink and checkpoints.  Writeback finds its blocks here.
 *
 * Threads: any; the reservations are one atomic counter (dm->reserved_blocks);
 * dm->take_lock orders writeback's blocks against commits.
 */
#ifndef CZFS_FUSE_ROOM_H
#define CZFS_FUSE_ROOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct czfs_daemon;
struct czfs_inode_info;

/* Blocks free for new data, reservations and the margin deducted. */
uint64_t czfs_room_free(struct czfs_daemon *dm);

/* The size limit and the blocks taken now, reservations counted (statfs). */
void czfs_room_usage(struct czfs_daemon *dm, uint64_t *max, uint64_t *used);

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
 * Writeback's blocks.  A writeback allocates and writes its blocks before
 * it links them (fs->lock taken only for the link); a checkpoint that
 * committed in between would make them used in the space map with
 * nothing pointing at them, leaked after a crash.  So a writeback holds
 * the room shared from its first allocation until its items are linked
 * or its blocks given back (czfs_room_take_begin/_end), and a commit
 * holds it exclusive (czfs_room_commit_begin/_end, before fs->lock).
 * Nothing that holds it shared waits for a checkpoint.
 */
void czfs_room_take_begin(struct czfs_daemon *dm);
void czfs_room_take_end(struct czfs_daemon *dm);
void czfs_room_commit_begin(struct czfs_daemon *dm);
void czfs_room_commit_end(struct czfs_daemon *dm);

/* Find n contiguous blocks for writeback (between take_begin and
 * take_end, or in a transaction under fs->lock): *blk, 0 or -errno
 * (-ENOSPC). */
int czfs_room_alloc(struct czfs_daemon *dm, unsigned n, uint64_t *blk);
/* czfs_room_alloc, then len bytes of buf written at *blk; the blocks given
 * back when the write fails.  0 or -errno. */
int czfs_room_write(struct czfs_daemon *dm, const void *buf, size_t len,
		    unsigned n, uint64_t *blk);
/* Give back n blocks at blk that czfs_room_alloc found and nothing links. */
void czfs_room_give_back(struct czfs_daemon *dm, uint64_t blk, uint64_t n);

/*
 * An image made without a fixed limit (CZFS_FEATURE_COMPAT_GROW) that
 * has less than need blocks of room: raise its limit, in steps of a
 * quarter (at least 64 MiB), as far as the free space of the filesystem
 * holding the image allows, with a commit.  Called holding no lock of
 * the daemon's (a writer that found no room, a new name, the mount).
 * 0 when the room is there now, else -ENOSPC.
 */
int czfs_room_grow(struct czfs_daemon *dm, uint64_t need);
/* The blocks such an image could still take past its limit (the host's
 * free space less the room inside the limit), for statfs; else 0. */
uint64_t czfs_room_beyond(struct czfs_daemon *dm);

/*
 * A writeback that found no room, and holds none: when blocks freed
 * since the last checkpoint wait, commit one so that they become usable,
 * or when a discard pass holds some for its punch, wait for it (0: try
 * again); else -ENOSPC.
 */
int czfs_room_reclaim(struct czfs_daemon *dm);

#endif /* CZFS_FUSE_ROOM_H */
