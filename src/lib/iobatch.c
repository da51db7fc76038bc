// SPDX-License-Identifier: MIT
/* Batched, request-aligned reads of the backing image (see iobatch.h). */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "bdev.h"
#include "czfs_fs.h"
#include "iobatch.h"
#include "util.h"

#define MAX_IOV	(CZFS_MAX_REQUEST_LIMIT / CZFS_BLOCK_SIZE)

struct request {
	struct iovec iov[MAX_IOV];
	int cnt;
	uint64_t start;			/* image byte offset */
	uint64_t len;
};

static int flush_request(struct czfs_bdev *b, struct request *rq,
			 const struct czfs_iobatch_opts *o)
{
	int err = 0;

	if (rq->cnt && o->st) {
		atomic_fetch_add(&o->st->requests, 1);
		atomic_fetch_add(&o->st->bytes, rq->len);
		if (rq->len == o->max_request)
			atomic_fetch_add(&o->st->whole, 1);
	}
	if (rq->cnt)
		err = czfs_bdev_readv(b, rq->iov, rq->cnt, rq->start);
	rq->cnt = 0;
	rq->len = 0;
	return err;
}

static void add_block(struct request *rq, void *page)
{
	struct iovec *last = rq->cnt ? &rq->iov[rq->cnt - 1] : NULL;

	if (last && (char *)last->iov_base + last->iov_len == (char *)page)
		last->iov_len += CZFS_BLOCK_SIZE;
	else
		rq->iov[rq->cnt++] = (struct iovec){ page, CZFS_BLOCK_SIZE };
	rq->len += CZFS_BLOCK_SIZE;
}

/* Where the request starting at start must end (exclusive). */
static uint64_t request_end(uint64_t start, const struct czfs_iobatch_opts *o)
{
	if (o->aligned)
		return (start / o->max_request + 1) * o->max_request;
	return start + o->max_request;
}

/* The page an earlier segment reads block blk into, or NULL. */
static void *read_into(const struct czfs_io_seg *segs, unsigned s, uint64_t blk)
{
	while (s--)
		if (blk >= segs[s].blkaddr &&
		    blk < segs[s].blkaddr + segs[s].nblocks)
			return segs[s].pages[blk - segs[s].blkaddr];
	return NULL;
}

/* A block two segments share (the boundary of two slices of a run). */
struct dup {
	void *dst;
	const void *src;
};

int czfs_io_read(struct czfs_bdev *b, const struct czfs_io_seg *segs,
		 unsigned n, const struct czfs_iobatch_opts *o)
{
	struct request *rq = malloc(sizeof(*rq));
	uint64_t next = UINT64_MAX, end = 0;	/* run continues at next */
	struct dup *dups = NULL;
	unsigned ndups = 0, cap = 0;
	int err = 0;

	if (!rq)
		return -ENOMEM;
	rq->cnt = 0;
	rq->len = 0;
	for (unsigned s = 0; s < n && !err; s++) {
		for (unsigned i = 0; i < segs[s].nblocks && !err; i++) {
			uint64_t pos = (segs[s].blkaddr + i) * CZFS_BLOCK_SIZE;

			if (next != UINT64_MAX && pos < next) {	/* read already */
				void *src = read_into(segs, s, segs[s].blkaddr + i);

				err = CZFS_GROW(dups, ndups, cap, 16);
				if (err)
					break;
				if (!src) {
					err = -EINVAL;
					break;
				}
				dups[ndups++] = (struct dup){ segs[s].pages[i], src };
				continue;
			}
			if (pos != next || pos == end)
				err = flush_request(b, rq, o);
			if (!rq->cnt) {
				rq->start = pos;
				end = request_end(pos, o);
			}
			add_block(rq, segs[s].pages[i]);
			next = pos + CZFS_BLOCK_SIZE;
		}
	}
	if (!err)
		err = flush_request(b, rq, o);
	for (unsigned i = 0; !err && i < ndups; i++)
		memcpy(dups[i].dst, dups[i].src, CZFS_BLOCK_SIZE);
	free(dups);
	free(rq);
	return err;
}

int czfs_io_check_max_request(uint64_t bytes)
{
	if (bytes < CZFS_BLOCK_SIZE || bytes > CZFS_MAX_REQUEST_LIMIT ||
	    bytes % CZFS_BLOCK_SIZE)
		return -EINVAL;
	return 0;
}
