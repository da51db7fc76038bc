/* SPDX-License-Identifier: MIT */
/*
 * One cluster of a writeback batch (writeback.c), encoded and stored:
 * compressed, then placed in the batch's run (wbrun.h) or written to new
 * blocks, inline, or a hole; a hot one written block by block
 * (wbblocks.h).  Whole clusters are compressed ahead, on every core at
 * once (wbpool.h); each is then stored in the batch's order, on the
 * batch's thread, so blocks are taken and linked as with one thread.
 *
 * Threads: the batch's thread, holding its inode's wb_lock; ahead, the
 * pool's workers too.
 */
#ifndef CZFS_FUSE_WBENCODE_H
#define CZFS_FUSE_WBENCODE_H

#include <stdbool.h>
#include <stdint.h>

#include "ccache.h"
#include "cluster.h"
#include "temp.h"
#include "wbblocks.h"

struct czfs_daemon;
struct czfs_inode_info;
struct czfs_wbrun;

/* What writeback made of one dirty cluster of a batch. */
struct czfs_wb_item {
	struct czfs_centry *e;
	uint32_t seq;			/* its write count when taken */
	uint64_t wmask;			/* and its written blocks */
	bool recompress;		/* marked by the recompression */
	struct czfs_cluster_info ci;
	uint64_t blk;			/* blocks written for it, to free if */
	unsigned nblk;			/* it is not linked */
	bool in_run;			/* its payload placed in a run */
	unsigned run_no;		/* which (wbrun.h) */
	uint32_t run_off, run_clen;	/* where in it, how long */
	bool done;
	bool ahead;			/* encoded ahead: ci, out_len and,
					 * to store, its payload in tp */
	unsigned out_len;
	/* from here, written before they are read (zeroing 4 KiB an item
	 * at every fsync showed): */
	uint8_t inl[CZFS_INLINE_MAX];	/* inline payload, copied */
	struct czfs_wbblocks hot;	/* a BLOCKMAP's plan and entries */
	struct czfs_temp tp;		/* an ahead item's encoded pages */
};

/*
 * Compress whole clusters of ws[0..n) ahead of their turn, on the pool's
 * workers and the caller at once (no pool: nothing done); what is not
 * (hot, partial, no page free now) is encoded by czfs_wbenc_one.  Takes
 * no blocks: call before the room is held (room.h).
 */
void czfs_wbenc_ahead(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		      bool fsynced, struct czfs_wb_item *ws, unsigned n);

/*
 * Encode w (unless done ahead) and store it: 0 or -errno (its blocks,
 * w->blk and w->nblk, and the run's, are the caller's to give back).
 * Called in the batch's order, the room held.
 */
int czfs_wbenc_one(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		   bool fsynced, struct czfs_wbrun *run, struct czfs_wb_item *w);

/* Give back the pages of what was encoded ahead and not stored. */
void czfs_wbenc_drop(struct czfs_daemon *dm, struct czfs_wb_item *ws,
		     unsigned n);

#endif /* CZFS_FUSE_WBENCODE_H */
