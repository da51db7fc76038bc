/* SPDX-License-Identifier: MIT */
/*
 * Runs of slices (INCOMPAT_SLICED): the payloads of compressed clusters,
 * of any files, are laid back to back in a buffer of up to
 * CZFS_RUN_MAX_BLOCKS blocks (or fewer, as asked), so that a cluster is not rounded up to
 * whole blocks of its own.  A slice's CLUSTER item is added to the
 * builder as soon as its payload is placed, with addresses relative to
 * the run; when the run is full (or closed) its blocks are allocated and
 * written, and the pending items are patched with the run's address.
 * Layout stays in inode order but for the run itself, written at its
 * close; a file's clusters stay in their order.
 *
 * One thread uses it (the image's).
 */
#ifndef MKFS_RUNS_H
#define MKFS_RUNS_H

#include <stdint.h>

#include "pack.h"

struct czfs_cluster_info;
struct mk_writer;

struct mk_runs;

struct mk_run_stats {
	uint64_t runs, blocks;		/* runs written */
	uint64_t slices, slice_bytes;	/* clusters in them, their payload */
	uint64_t alone_blocks;		/* what the slices took on their own */
};

/*
 * Runs of at most max_blocks (<= CZFS_RUN_MAX_BLOCKS, and at least what
 * the largest payload placed takes); with cut, a full run closes at the
 * slice that wastes least of its last block (the slices after it, their
 * items made again, start the next); without, where the next payload
 * does not fit, nothing moved (the runs of sliced packs, whose PACKED
 * items come later).  0 or -ENOMEM.
 */
int mk_runs_new(unsigned max_blocks, bool cut, struct mk_runs **out);
void mk_runs_free(struct mk_runs *rs);

/*
 * Place the payload (clen bytes at payload) of the COMPRESSED cluster c
 * of inode ino (c->nblocks: its blocks on its own) in the open run,
 * closing a full one first (its PACK item through *closed, see
 * mk_runs_close).  *slice is the SLICE cluster to add, its addresses
 * relative to the run: the caller adds its item and hands the builder's
 * copy to mk_runs_pending.  Returns 0 or -errno of the writer.
 */
int mk_runs_place(struct mk_runs *rs, struct mk_writer *w, uint64_t ino,
		  const struct czfs_cluster_info *c, const void *payload,
		  uint32_t clen, struct czfs_cluster_info *slice,
		  struct czfs_pack_info *closed);

/* The builder's copy of the last placed slice's item, patched at close
 * (NULL: a sliced pack's payload, whose PACKED items come later). */
void mk_runs_pending(struct mk_runs *rs, void *item);

/* The number of the open run (0 for the first), which mk_runs_base
 * resolves once it is closed. */
uint64_t mk_runs_open_number(const struct mk_runs *rs);

/* Whether run number has been written, and then at *base. */
bool mk_runs_base(const struct mk_runs *rs, uint64_t number, uint64_t *base);

/*
 * A builder's copy of an item whose blkaddr is relative to the open run
 * (a PACKED item of a pack in it), patched when it closes; only for runs
 * without cut.  0 or -ENOMEM.
 */
int mk_runs_patch_later(struct mk_runs *rs, void *item);

/* Whether the open run holds a slice of inode ino. */
bool mk_runs_holds(const struct mk_runs *rs, uint64_t ino);

/*
 * Write the open run, if any: allocate and queue its blocks, patch its
 * slices' items; *closed is its PACK item (refs = its slices; nblocks 0
 * when there was no open run).  Returns 0 or -errno of the writer.
 */
int mk_runs_close(struct mk_runs *rs, struct mk_writer *w,
		  struct czfs_pack_info *closed);

void mk_runs_stats(const struct mk_runs *rs, struct mk_run_stats *st);

#endif /* MKFS_RUNS_H */
