// SPDX-License-Identifier: MIT
/* Runs of slices at writeback (wbrun.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bdev.h"
#include "daemon.h"
#include "fs.h"
#include "room.h"
#include "thread.h"
#include "util.h"
#include "wbrun.h"

#define RUN_BYTES	(CZFS_RUN_MAX_BLOCKS * CZFS_BLOCK_SIZE)
#define HDR_SIZE	((unsigned)sizeof(struct czfs_cluster_header))

/* Write len bytes of buf (zero-padded to nblocks) at new blocks. */
static int write_new(struct czfs_daemon *dm, uint8_t *buf, uint32_t len,
		     unsigned nblocks, uint64_t *blk)
{
	memset(buf + len, 0, (size_t)nblocks * CZFS_BLOCK_SIZE - len);
	return czfs_room_write(dm, buf, (size_t)nblocks * CZFS_BLOCK_SIZE,
			       nblocks, blk);
}

/* Write the open run; its PACK item joins the written ones. */
static int write_open(struct czfs_daemon *dm, struct czfs_wbrun *r)
{
	unsigned nblocks = DIV_ROUND_UP(r->used, CZFS_BLOCK_SIZE);
	uint64_t blk;
	int err;

	if (CZFS_GROW(r->runs, r->nruns, r->cap, 4))
		return -ENOMEM;
	err = write_new(dm, r->buf, r->used, nblocks, &blk);
	if (err)
		return err;
	r->runs[r->nruns++] = (struct czfs_pack_info){ .blkaddr = blk,
		.refs = r->n, .nblocks = nblocks, .ulen = r->used,
		.run = true, .live = r->used };
	r->used = 0;
	r->n = 0;
	return 0;
}

int czfs_wbrun_place(struct czfs_daemon *dm, struct czfs_wbrun *r,
		     const void *payload, uint32_t clen, unsigned *run,
		     uint32_t *off)
{
	int err;

	if (!r->buf) {		/* the thread's: a fresh 1 MiB costs faults */
		struct czfs_thread *t = czfs_fuse_thread();

		/* aligned: -o direct_io writes it with O_DIRECT */
		if (!t || (!t->run &&
			   !(t->run = aligned_alloc(CZFS_BLOCK_SIZE, RUN_BYTES))))
			return -ENOMEM;
		r->buf = t->run;
	}
	if (clen > RUN_BYTES - r->used) {
		err = write_open(dm, r);
		if (err)
			return err;
	}
	memcpy(r->buf + r->used, payload, clen);
	*run = r->nruns;
	*off = r->used;
	r->used += clen;
	r->n++;
	return 0;
}

int czfs_wbrun_finish(struct czfs_daemon *dm, struct czfs_wbrun *r,
		      bool *alone)
{
	*alone = r->n == 1 && !r->nruns;
	return r->n && !*alone ? write_open(dm, r) : 0;
}

int czfs_wbrun_write_alone(struct czfs_daemon *dm, const struct czfs_wbrun *r,
			   uint32_t off, uint32_t clen,
			   struct czfs_cluster_info *ci)
{
	struct czfs_cluster_header hdr = {
		.magic = cpu_to_le32(CZFS_CLUSTER_MAGIC),
		.clen = cpu_to_le32(clen),
		.ulen = cpu_to_le32(ci->ulen),
		.checksum = cpu_to_le32(ci->checksum),
	};
	uint8_t *buf = aligned_alloc(CZFS_BLOCK_SIZE,	/* O_DIRECT */
				     (size_t)ci->nblocks * CZFS_BLOCK_SIZE);
	int err;

	if (!buf)
		return -ENOMEM;
	memcpy(buf, &hdr, HDR_SIZE);
	memcpy(buf + HDR_SIZE, r->buf + off, clen);
	err = write_new(dm, buf, HDR_SIZE + clen, ci->nblocks, &ci->blkaddr);
	free(buf);
	return err;
}

void czfs_wbrun_unwrite(struct czfs_daemon *dm, struct czfs_wbrun *r)
{
	for (unsigned i = 0; i < r->nruns; i++)
		czfs_room_give_back(dm, r->runs[i].blkaddr, r->runs[i].nblocks);
	r->nruns = 0;
}

void czfs_wbrun_free(struct czfs_wbrun *r)
{
	free(r->runs);		/* the buffer is the thread's */
	memset(r, 0, sizeof(*r));
}
