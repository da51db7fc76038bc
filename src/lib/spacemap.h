/* SPDX-License-Identifier: MIT */
/*
 * Space map: one bit per block, in memory for the whole image, persisted
 * copy-on-write at each checkpoint.
 *
 * Two bitmaps: cur (what is in use now) and committed (what the last
 * durable checkpoint uses, and what was allocated since).  A block may be
 * allocated only if it is free in both, so blocks freed since the last
 * checkpoint are not reused until the next checkpoint is durable: the
 * on-disk checkpoint never sees its blocks overwritten.  A block allocated
 * and freed between two checkpoints waits for the next one as well: it may
 * have been written, and discard punches it once that checkpoint is
 * durable (committed & ~cur is exactly what to punch).
 *
 * Threads: every function takes the map's own mutex; callers need no lock.
 */
#ifndef CZFS_SPACEMAP_H
#define CZFS_SPACEMAP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "alloc.h"

struct czfs_bdev;
struct czfs_cp_info;

struct czfs_smap {
	struct czfs_allocator alloc;	/* czfs_smap_alloc/free as an allocator */
	pthread_mutex_t lock;
	uint64_t max_blocks;		/* bits tracked */
	uint64_t image_blocks;		/* 1 + highest block ever used */
	uint64_t used;			/* bits set in cur */
	uint64_t prealloc;		/* blocks fallocate promised clusters (not
					 * in the bitmap; kept in the checkpoint) */
	uint64_t *cur;
	uint64_t *committed;
	uint64_t *unpunched;		/* freed by a durable checkpoint, still
					 * backed on the host: allocatable (a
					 * reuse clears the bit, and saves the
					 * host both the punch and a new
					 * allocation); czfs_smap_note_freed */
	uint64_t unpunched_blocks;	/* bits set in unpunched */
	uint64_t *held;			/* taken by a discard pass from
					 * unpunched, being punched: free, but
					 * not allocatable */
	uint64_t held_blocks;		/* bits set in held */
	uint64_t *fresh;		/* marked used since the last commit
					 * (czfs_smap_fresh) */
	uint64_t cursor;		/* next-fit search start */
	uint64_t searched_words;	/* bitmap words the allocator looked
					 * at, ever: its work, for tests */
	uint64_t low_freed;		/* lowest block freed since the last
					 * commit, 0 = none */
	uint64_t freed_pending;		/* blocks freed since the last commit */
	/* per bitmap block (32768 blocks each) */
	uint64_t nr_bitmaps;
	uint64_t *bitmap_addr;		/* on disk, 0 = never written */
	uint32_t *bitmap_crc;
	uint8_t *bitmap_dirty;		/* changed since the last write */
	/* per index block */
	uint64_t nr_index;
	uint64_t *index_addr;
	uint8_t *write_buf;		/* czfs_smap_write's, made at its first
					 * (a fresh mapping at every
					 * checkpoint cost two system calls
					 * and faulted its pages in) */
};

/* A fresh map: all free but blocks [0, CZFS_FIRST_DATA_BLKADDR). */
int czfs_smap_init(struct czfs_smap *sm, uint64_t max_blocks);

/*
 * Load the map named by cp (index blocks, then bitmap blocks), checking
 * each crc, magic, blkaddr, and that the loaded used count equals
 * cp->used_blocks; the promise of RESERVED clusters is cp->prealloc_blocks.  Returns 0, -EFSCORRUPTED (with a log line), -ENOMEM or
 * an I/O error.
 */
int czfs_smap_load(struct czfs_smap *sm, struct czfs_bdev *bdev,
		   const struct czfs_cp_info *cp);

/* Free the map's memory (accepts a zeroed map); nothing is written. */
void czfs_smap_destroy(struct czfs_smap *sm);

/*
 * As czfs_smap_load, every check but one: the used count is the map's own,
 * returned in *used, not held against cp->used_blocks (fsck's diagnosis of
 * a checkpoint whose count is wrong).
 */
int czfs_smap_load_recount(struct czfs_smap *sm, struct czfs_bdev *bdev,
			   const struct czfs_cp_info *cp, uint64_t *used);

/*
 * Allocate n (1..CZFS_MAX_CLUSTER_BLOCKS or more) contiguous blocks, next
 * fit from the cursor, marking them used.  Each commit moves the cursor
 * back to the lowest block it made reusable, so allocation fills the
 * image from its start and the front does not sweep the whole size limit
 * (an image file takes on the host about what it holds).  Returns 0 and
 * *blkaddr, or -ENOSPC.
 */
int czfs_smap_alloc(struct czfs_smap *sm, uint64_t n, uint64_t *blkaddr);

/* Mark [blkaddr, blkaddr + n) free in cur (reusable after the next commit). */
void czfs_smap_free(struct czfs_smap *sm, uint64_t blkaddr, uint64_t n);

/* Mark [blkaddr, blkaddr + n) used; -EEXIST if any was used already. */
int czfs_smap_set_used(struct czfs_smap *sm, uint64_t blkaddr, uint64_t n);

/*
 * The blocks the map tracks and those taken now, read together: in use
 * (cur) or promised to RESERVED clusters (prealloc).
 */
void czfs_smap_usage(struct czfs_smap *sm, uint64_t *max_blocks, uint64_t *used);

/*
 * Add n blocks (n < 0: give them back, never below 0) to the promise of
 * RESERVED clusters (fallocate).  The caller checked the room, and changes
 * the items in the same transaction (fs->lock exclusive), so that a
 * commit's count matches its tree.
 */
void czfs_smap_prealloc_add(struct czfs_smap *sm, int64_t n);

/* Blocks the persisted map itself occupies (index and bitmap blocks). */
uint64_t czfs_smap_disk_blocks(struct czfs_smap *sm);

/* Blocks freed since the last commit (reusable, and punched, after it). */
uint64_t czfs_smap_freed_pending(struct czfs_smap *sm);

/* True if blkaddr is used in cur. */
bool czfs_smap_test(struct czfs_smap *sm, uint64_t blkaddr);

/* Raise max_blocks (never lowers it).  Returns 0, -ENOMEM or -EFBIG. */
int czfs_smap_grow(struct czfs_smap *sm, uint64_t max_blocks);

/*
 * Write the bitmap and index blocks changed since the last write, each to a
 * newly allocated block (the old ones are freed), until nothing is left to
 * relocate, and fill cp's smap_index, nr_smap_index, used_blocks,
 * prealloc_blocks, image_blocks and max_blocks.  gen is the generation of the checkpoint
 * being written.  Returns 0, -ENOSPC, or an I/O error.
 */
int czfs_smap_write(struct czfs_smap *sm, struct czfs_bdev *bdev,
		    uint64_t gen, struct czfs_cp_info *cp);

/*
 * The checkpoint written after czfs_smap_write is durable: committed = cur,
 * and the cursor goes back to the lowest block freed meanwhile.
 */
void czfs_smap_committed(struct czfs_smap *sm);

/*
 * The blocks in use now that were not in use at the last commit (every
 * block a commit now would bring into use), as CZFS_CP_EXTENT()s into
 * ext[0..max): how many, or -E2BIG when they need more than max extents
 * or more than max_blocks blocks in all.  Walks only the chunks changed
 * since the last commit.
 */
int czfs_smap_fresh(struct czfs_smap *sm, uint64_t *ext, unsigned max,
		    uint64_t max_blocks);

/*
 * Just before czfs_smap_committed: the blocks freed since the last commit
 * become unpunched, allocatable at once; a discard pass
 * (czfs_smap_discard_freed) holds those still free, punches them after the
 * commit's locks are let go, and releases them.  Blocks a database or a
 * random writer frees and takes again between two passes never reach
 * the host: each punch would cost the next write a host allocation.
 */
void czfs_smap_note_freed(struct czfs_smap *sm);

/* How many blocks are unpunched (a discard pass punches them). */
uint64_t czfs_smap_unpunched(struct czfs_smap *sm);

/* How many blocks a discard pass holds (it gives them back). */
uint64_t czfs_smap_held(struct czfs_smap *sm);

#endif /* CZFS_SPACEMAP_H */
