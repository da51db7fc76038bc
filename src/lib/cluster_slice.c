// SPDX-License-Identifier: MIT
/*
 * SLICE clusters (cluster.h, czfs(5) "Sliced clusters"): a compressed
 * payload at a byte offset of a run of blocks shared with other clusters.
 * Making one, the check of its item, and its decode.  The run's PACK item
 * and its counts are pack.c's.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "cluster.h"
#include "cluster_int.h"
#include "log.h"
#include "util.h"

#define ITEM_SIZE	((unsigned)sizeof(struct czfs_cluster))
#define SLICE_SIZE	(ITEM_SIZE + (unsigned)sizeof(struct czfs_cluster_slice))
#define HDR_SIZE	((unsigned)sizeof(struct czfs_cluster_header))

void czfs_cluster_slice_make(const struct czfs_cluster_info *c, uint64_t run,
			     uint64_t off, uint32_t clen,
			     struct czfs_cluster_info *ci)
{
	uint64_t first = run + (off >> CZFS_BLOCK_SHIFT);
	unsigned in = (unsigned)(off & (CZFS_BLOCK_SIZE - 1));

	*ci = (struct czfs_cluster_info){
		.kind = CZFS_CLUSTER_SLICE,
		.alg = c->alg,
		.nblocks = DIV_ROUND_UP(in + clen, CZFS_BLOCK_SIZE),
		.prealloc = c->prealloc,
		.checksum = c->checksum,
		.blkaddr = first,
		.ulen = c->ulen,
		.slice_off = in,
		.slice_len = clen,
		.run = run,
	};
}

/* Its payload saved a block and lies in the blocks it names, in its run. */
int czfs_slice_item_check(const void *val, unsigned len, uint64_t max_blocks,
			  struct czfs_cluster_info *ci)
{
	unsigned raw_blocks = DIV_ROUND_UP(ci->ulen, CZFS_BLOCK_SIZE);
	struct czfs_cluster_slice ext;

	if (len != SLICE_SIZE) {
		czfs_err("cluster item: sliced item has %u bytes, expected %u",
			 len, SLICE_SIZE);
		return -EFSCORRUPTED;
	}
	memcpy(&ext, (const char *)val + ITEM_SIZE, sizeof(ext));
	ci->slice_off = le32_to_cpu(ext.offset);
	ci->slice_len = le32_to_cpu(ext.clen);
	ci->run = le64_to_cpu(ext.run);
	if (ci->slice_off >= CZFS_BLOCK_SIZE || ci->slice_len < 1 ||
	    raw_blocks < 2 ||
	    ci->slice_len > (raw_blocks - 1) * CZFS_BLOCK_SIZE - HDR_SIZE) {
		czfs_err("cluster item: slice of %u bytes at %u for %u bytes of data",
			 ci->slice_len, ci->slice_off, ci->ulen);
		return -EFSCORRUPTED;
	}
	if (ci->nblocks != DIV_ROUND_UP(ci->slice_off + ci->slice_len,
					CZFS_BLOCK_SIZE)) {
		czfs_err("cluster item: slice of %u bytes at %u in %u blocks",
			 ci->slice_len, ci->slice_off, ci->nblocks);
		return -EFSCORRUPTED;
	}
	if (ci->run < CZFS_FIRST_DATA_BLKADDR || ci->blkaddr < ci->run ||
	    ci->blkaddr - ci->run + ci->nblocks > CZFS_RUN_MAX_BLOCKS ||
	    max_blocks < ci->nblocks || ci->blkaddr > max_blocks - ci->nblocks) {
		czfs_err("cluster item: slice at blocks %llu+%u of the run at %llu, outside it or the image (%llu blocks)",
			 (unsigned long long)ci->blkaddr, ci->nblocks,
			 (unsigned long long)ci->run,
			 (unsigned long long)max_blocks);
		return -EFSCORRUPTED;
	}
	return 0;
}

/* The payload at slice_off of the blocks it touches; no header. */
int czfs_slice_decode(struct czfs_codec *codec,
		      const struct czfs_cluster_info *ci, const void *stored,
		      void *dst)
{
	const unsigned char *s = stored;
	int err = czfs_cluster_check_nblocks(ci);

	if (!err && (ci->slice_off >= CZFS_BLOCK_SIZE || !ci->slice_len ||
		     ci->slice_off + ci->slice_len >
		     ci->nblocks * CZFS_BLOCK_SIZE)) {
		czfs_err("sliced cluster at block %llu (%u bytes): slice of %u bytes at %u outside its %u blocks",
			 (unsigned long long)ci->blkaddr, ci->ulen,
			 ci->slice_len, ci->slice_off, ci->nblocks);
		err = -EFSCORRUPTED;
	}
	if (!err)
		err = czfs_cluster_verify_crc(ci, s + ci->slice_off, ci->slice_len);
	if (!err)
		err = czfs_cluster_expand(codec, ci, s + ci->slice_off,
					  ci->slice_len, dst);
	return err;
}
