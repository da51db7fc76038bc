/* SPDX-License-Identifier: MIT */
/*
 * Writeback of a hot cluster block by block (a BLOCKMAP cluster, see
 * czfs_cluster_hot): the blocks written since it was loaded go to new
 * blocks (copy-on-write), the others keep their place in the item it
 * replaces, and blocks of zeros take none.  A 4 KiB rewrite of a 64 KiB
 * cluster writes one block, not a cluster decompressed, compressed and
 * written whole.  writeback.c allocates the fresh blocks between the plan
 * and the write, and links the item.
 */
#ifndef CZFS_WBBLOCKS_H
#define CZFS_WBBLOCKS_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"

struct czfs_bdev;

/* One cluster's plan: its entries (kept and zero ones set by the plan,
 * fresh ones by the write) and the blocks to write. */
struct czfs_wbblocks {
	uint8_t map[CZFS_MAX_CLUSTER_BLOCKS * sizeof(struct czfs_cluster_block)];
	uint64_t fresh;			/* entries written now */
	uint64_t unwritten;		/* not dirty, yet not kept: taken from
					 * the pages (a partial entry must be
					 * completed first) */
	unsigned nfresh, nkept;
	unsigned n;			/* entries: blocks of len bytes */
	uint32_t len;
};

/*
 * Plan the BLOCKMAP cluster of the len bytes at data (the cluster's pages,
 * mapped) replacing old, dirty its written blocks: a block not written
 * that old, a BLOCKMAP, holds in full is kept with its checksum (a RAW
 * cluster's blocks are not: their checksums would have to come from
 * pages a writer may be changing); with
 * zero_detect a block of zeros takes none; the rest are fresh.
 */
void czfs_wbblocks_plan(const struct czfs_cluster_info *old, uint64_t dirty,
			const void *data, uint32_t len, bool zero_detect,
			struct czfs_wbblocks *p);

/*
 * Write p's fresh blocks to blk.. blk + p->nfresh - 1, in entry order, and
 * describe the cluster in ci (its entries at p->map): a BLOCKMAP, or a
 * hole when every block is zeros.  Each block is copied from data into
 * out (p->nfresh blocks) and checksummed there, so that a writer changing
 * the pages meanwhile cannot make the checksum lie.  Returns 0 or the
 * write's -errno.
 */
int czfs_wbblocks_write(struct czfs_bdev *bdev, struct czfs_wbblocks *p,
			const void *data, void *out, uint64_t blk,
			struct czfs_cluster_info *ci);

#endif /* CZFS_WBBLOCKS_H */
