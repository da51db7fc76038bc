/* SPDX-License-Identifier: MIT */
/*
 * Clusters encoded while a tar stream is still being read (mkfs.czfs
 * --tar).  The image lays files out in inode order, known only at the
 * stream's end, but a cluster's encoding depends on its bytes alone
 * (inline results aside, which only a file's last cluster may take): so
 * the full clusters of each member, but its last, are encoded by worker
 * threads as the member is spooled, and the pipeline later takes their
 * encoding instead of encoding them again.  The reader does not wait for
 * the workers (mk_preenc_buf without wait): what they cannot keep up with
 * is left to the pipeline, where it overlaps the image's writing.  The
 * results go to an unlinked file beside the spool; memory holds an index
 * (about 110 bytes a cluster, 64 MiB at most: the clusters past that are
 * the pipeline's) and a few clusters in flight, whatever the members'
 * size.
 *
 * One thread feeds it (mk_preenc_buf, mk_preenc_submit), then
 * mk_preenc_finish; after that, mk_preenc_get from any thread.
 */
#ifndef MKFS_PREENC_H
#define MKFS_PREENC_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"

struct mk_preenc;

struct mk_preenc_opts {
	unsigned jobs;			/* worker threads; 0: none, each
					 * cluster encoded as it is submitted,
					 * the same work every run (fuzzing) */
	unsigned cluster_shift;
	struct czfs_cluster_policy pol;	/* allow_inline is ignored */
};

/* Start the workers, their results going to fd (an empty file, closed by
 * mk_preenc_free, or here on failure).  Returns 0 or -errno. */
int mk_preenc_new(const struct mk_preenc_opts *o, int fd,
		  struct mk_preenc **out);

/*
 * The buffer to fill with the next cluster (cluster-size bytes), the same
 * until it is submitted; with wait false, NULL when every one is busy;
 * NULL once the index holds as many clusters as it may.
 * NULL after a failure (mk_preenc_finish returns it).
 */
uint8_t *mk_preenc_buf(struct mk_preenc *pe, bool wait);

/* Encode the buffer, the cluster at offset off of the spool; offsets
 * must grow from one submission to the next. */
void mk_preenc_submit(struct mk_preenc *pe, uint64_t off);

/* Wait for the encodings and stop the workers.  Returns 0 or the first
 * error (-ENOMEM, -EIO...). */
int mk_preenc_finish(struct mk_preenc *pe);

/*
 * The encoding of the cluster at spool offset off, as czfs_cluster_encode
 * gives it without inline results, into out (which holds
 * CZFS_MAX_CLUSTER_SIZE + CZFS_BLOCK_SIZE bytes).  Returns 1 and fills ci
 * and *out_len, 0 when that cluster was not encoded, or -errno.
 * Thread-safe after mk_preenc_finish.
 */
int mk_preenc_get(const struct mk_preenc *pe, uint64_t off, void *out,
		  struct czfs_cluster_info *ci, unsigned *out_len);

/* Whether mk_preenc_get would find the cluster at spool offset off (then
 * its bytes need not be read again).  Thread-safe after the finish. */
bool mk_preenc_has(const struct mk_preenc *pe, uint64_t off);

void mk_preenc_free(struct mk_preenc *pe);	/* accepts NULL */

#endif /* MKFS_PREENC_H */
