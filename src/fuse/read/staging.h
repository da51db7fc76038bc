/* SPDX-License-Identifier: MIT */
/*
 * Staging: one read cursor per file stream over the backing image.  Every
 * cluster a sequential stream needs (whoever decodes it: a prefetch worker
 * or a FUSE thread) comes through it, so the image is read in one ordered
 * series of requests: whole, aligned max_request requests (the block
 * layer's bio_export_pages), the part past the clusters needed now kept
 * (staged) for the next ones.  Unaligned mode cuts each run of needed
 * clusters every max_request from its start instead: the "before".
 *
 * A staged request serves no block once any cluster item has changed
 * since it was read (dm->items_version): copy-on-write reallocates freed
 * blocks, lowest first, and discard zeroes them meanwhile, so what it
 * holds of them may be older than the item that names them now.  On a
 * read-only mount nothing changes and staging keeps all its use.
 *
 * Threads: a mutex per staging; the I/O is done under it, the decoding
 * with references to the staged pages, outside it.  The daemon's list of
 * stagings (dm->stg_lock) is taken before a staging's lock, which reclaim
 * only tries.
 */
#ifndef CZFS_STAGING_H
#define CZFS_STAGING_H

#include <stdbool.h>
#include <stdint.h>

#include "czfs_fs.h"

struct czfs_daemon;
struct czfs_staging;
struct czfs_staged;

/* References to the staged requests holding one cluster's stored blocks. */
struct czfs_stage_ref {
	unsigned n;
	struct czfs_staged *st[CZFS_MAX_CLUSTER_BLOCKS];
};

/* A staging with no cursor yet, known to dm's reclaim: NULL when out of
 * memory. */
struct czfs_staging *czfs_staging_new(struct czfs_daemon *dm);
/* Free everything (no reference may be left). */
void czfs_staging_free(struct czfs_daemon *dm, struct czfs_staging *stg);

#define CZFS_STAGE_RESTART	0x01	/* far ahead: the cursor jumps there */
#define CZFS_STAGE_NOWAIT	0x02	/* no pages now: fail, do not wait */

/*
 * The pool pages holding stored blocks [blk, blk + n): staged already, or
 * read now if blk is at or a little ahead of the cursor (or, with
 * CZFS_STAGE_RESTART, far ahead: the cursor jumps there; or the cursor is
 * not set yet).  run_end: image byte offset where the run of blocks needed
 * now ends (the unaligned mode's cut).  Returns 0 with pages[] and
 * references in *ref, -ENOENT when the blocks are behind the cursor and no
 * longer staged (or far ahead without restart): read them apart, or
 * -errno (-ENOMEM at once with CZFS_STAGE_NOWAIT and the pool empty).
 */
int czfs_staging_get(struct czfs_daemon *dm, struct czfs_staging *stg,
		     uint64_t blk, unsigned n, uint64_t run_end, unsigned flags,
		     uint32_t *pages, struct czfs_stage_ref *ref);
void czfs_staging_put(struct czfs_daemon *dm, struct czfs_staging *stg,
		      struct czfs_stage_ref *ref);

/* Drop the staged pages nobody references (memory is short, or idle). */
void czfs_staging_trim(struct czfs_daemon *dm, struct czfs_staging *stg);

/*
 * The pool is empty: drop the staged requests nobody references, of every
 * staging whose lock is free now (the cluster cache's shrinker).  Their
 * blocks, when needed after all, are read apart.  Returns the pages freed.
 */
unsigned czfs_staging_reclaim(void *dm);

#endif /* CZFS_STAGING_H */
