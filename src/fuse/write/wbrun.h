/* SPDX-License-Identifier: MIT */
/*
 * Runs of slices at writeback: the compressed clusters of one writeback
 * batch are laid back to back in runs (INCOMPAT_SLICED), as mkfs lays
 * them, so that a cluster written through the mount is not rounded up to
 * whole blocks of its own either.  writeback.c places each payload as it
 * encodes it (a full run is written then and the next one begun), writes
 * the last run once the batch is encoded, and links the slices with the
 * runs' PACK items in the batch's transaction.  A batch with only one
 * compressed cluster stores it as a COMPRESSED extent, as before: a run
 * of one saves nothing worth an item.
 */
#ifndef CZFS_WBRUN_H
#define CZFS_WBRUN_H

#include <stdint.h>

#include "cluster.h"
#include "pack.h"

struct czfs_daemon;

struct czfs_wbrun {
	uint8_t *buf;			/* the open run: CZFS_RUN_MAX_BLOCKS, the
					 * calling thread's (thread.h) */
	uint32_t used;			/* payload bytes placed in it */
	unsigned n;			/* slices placed in it */
	struct czfs_pack_info *runs;	/* written: their PACK items */
	unsigned nruns, cap;
};

/*
 * Place the payload (clen bytes) of a compressed cluster: *run is the
 * number of the run it goes to (nruns when it is the open one), *off
 * where in it.  A full open run is written first (czfs_room_alloc).
 * 0 or -errno (-ENOMEM; the write's).
 */
int czfs_wbrun_place(struct czfs_daemon *dm, struct czfs_wbrun *r,
		     const void *payload, uint32_t clen, unsigned *run,
		     uint32_t *off);

/*
 * The batch is encoded: write the open run, unless it holds the batch's
 * only slice (*alone then: store it with czfs_wbrun_write_alone).
 * 0 or -errno.
 */
int czfs_wbrun_finish(struct czfs_daemon *dm, struct czfs_wbrun *r,
		      bool *alone);

/*
 * Store the payload placed at off of the open run (clen bytes) as the
 * COMPRESSED cluster ci says (header and payload in ci->nblocks new
 * blocks): ci->blkaddr set.  0 or -errno.
 */
int czfs_wbrun_write_alone(struct czfs_daemon *dm, const struct czfs_wbrun *r,
			   uint32_t off, uint32_t clen,
			   struct czfs_cluster_info *ci);

/* Free the written runs' blocks (none was linked); forget the batch (the
 * buffer stays the thread's). */
void czfs_wbrun_unwrite(struct czfs_daemon *dm, struct czfs_wbrun *r);
void czfs_wbrun_free(struct czfs_wbrun *r);

#endif /* CZFS_WBRUN_H */
