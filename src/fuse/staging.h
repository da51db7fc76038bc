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
 * with references to the staged pages, outside it.
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

/* A staging with no cursor yet: NULL when out of memory. */
struct czfs_staging *czfs_staging_new(void);
/* Free everything (no reference may be left). */
void czfs_staging_free(struct czfs_daemon *dm, struct czfs_staging *stg);

/*
 * The pool pages holding stored blocks [blk, blk + n): staged already, or
 * read now if blk is at or a little ahead of the cursor (or, with restart,
 * far ahead: the cursor jumps there; or the cursor is not set yet).
 * run_end: image byte offset where the run of blocks needed now ends (the
 * unaligned mode's cut).  Returns 0 with pages[] and references in *ref,
 * -ENOENT when the blocks are behind the cursor and no longer staged (or
 * far ahead without restart): read them apart, or -errno.
 */
int czfs_staging_get(struct czfs_daemon *dm, struct czfs_staging *stg,
		     uint64_t blk, unsigned n, uint64_t run_end, bool restart,
		     uint32_t *pages, struct czfs_stage_ref *ref);
void czfs_staging_put(struct czfs_daemon *dm, struct czfs_staging *stg,
		      struct czfs_stage_ref *ref);

/* Drop the staged pages nobody references (memory is short, or idle). */
void czfs_staging_trim(struct czfs_daemon *dm, struct czfs_staging *stg);

#endif /* CZFS_STAGING_H */
