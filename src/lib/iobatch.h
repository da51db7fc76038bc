/* SPDX-License-Identifier: MIT */
/*
 * Batched reads of the backing image, sized like the block layer's
 * bio_export_pages() patch: runs of adjacent stored blocks are merged and
 * cut into requests of at most max_request bytes.  Aligned (the default),
 * cuts fall on multiples of max_request in the image, so in a stream every
 * request but the first and last of a run is one whole, aligned
 * max_request: no "2048 + x" pattern leaving a small request mid-stream.
 * Unaligned (the "before" behaviour), each run is cut every max_request
 * bytes from its start, leaving a short tail request per run.
 */
#ifndef CZFS_IOBATCH_H
#define CZFS_IOBATCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct czfs_bdev;

#define CZFS_MAX_REQUEST_LIMIT	(4u << 20)	/* IOV_MAX 4 KiB pages */

struct czfs_iobatch_stats {
	atomic_ullong requests;
	atomic_ullong whole;		/* exactly max_request bytes */
	atomic_ullong bytes;
};

struct czfs_iobatch_opts {
	uint32_t max_request;		/* bytes: 4 KiB multiple, <= 4 MiB */
	bool aligned;
	struct czfs_iobatch_stats *st;	/* counted here when not NULL */
};

/* Stored blocks to read, and the 4 KiB destination of each block. */
struct czfs_io_seg {
	uint64_t blkaddr;
	unsigned nblocks;
	void *const *pages;		/* nblocks addresses, 4 KiB each */
};

/*
 * Read segs[0..n), sorted by blkaddr, one readv per request.  A block an
 * earlier segment also names (slices of a run share their boundary
 * blocks) is read once and copied.  Destination pages that follow each
 * other in memory share an iovec.  Returns 0 or the first error.
 */
int czfs_io_read(struct czfs_bdev *b, const struct czfs_io_seg *segs,
		 unsigned n, const struct czfs_iobatch_opts *o);

/* Validate a max_request value: 0 or -EINVAL. */
int czfs_io_check_max_request(uint64_t bytes);

#endif /* CZFS_IOBATCH_H */
