// SPDX-License-Identifier: MIT
/* Writeback of a hot cluster block by block (wbblocks.h). */
#include "config.h"

#include <string.h>

#include "bdev.h"
#include "crc32c.h"
#include "util.h"
#include "wbblocks.h"

static const char *block_at(const void *data, unsigned i)
{
	return (const char *)data + (size_t)i * CZFS_BLOCK_SIZE;
}

void czfs_wbblocks_plan(const struct czfs_cluster_info *old, uint64_t dirty,
			const void *data, uint32_t len, bool zero_detect,
			struct czfs_wbblocks *p)
{
	/* a block old holds only in part is not kept: its bytes past old's
	 * end are not zeros on disk, and the cluster may hold more now */
	unsigned full = old->ulen / CZFS_BLOCK_SIZE;

	*p = (struct czfs_wbblocks){ .n = DIV_ROUND_UP(len, CZFS_BLOCK_SIZE),
				     .len = len };
	for (unsigned i = 0; i < p->n; i++) {
		const char *b = block_at(data, i);
		uint64_t a = 0;
		uint32_t crc = 0;
		bool known;

		if (!(dirty & (1ull << i)) && i < full &&
		    czfs_blockmap_keeps(old, i, &a, &crc, &known) && known) {
			czfs_blockmap_set(p->map, i, a, crc);
			p->nkept += a != 0;
			continue;
		}
		if (!(dirty & (1ull << i)))
			p->unwritten |= 1ull << i;	/* from the pages */
		if (zero_detect && czfs_is_zero(b, CZFS_BLOCK_SIZE)) {
			czfs_blockmap_set(p->map, i, 0, 0);
			continue;
		}
		p->fresh |= 1ull << i;
		p->nfresh++;
	}
}

int czfs_wbblocks_write(struct czfs_bdev *bdev, struct czfs_wbblocks *p,
			const void *data, void *out, uint64_t blk,
			struct czfs_cluster_info *ci)
{
	uint32_t crcs[CZFS_MAX_CLUSTER_BLOCKS];
	unsigned k = 0;
	int err;

	for (unsigned i = 0; i < p->n; i++) {
		char *o = (char *)out + (size_t)k * CZFS_BLOCK_SIZE;

		if (!(p->fresh & (1ull << i)))
			continue;
		memcpy(o, block_at(data, i), CZFS_BLOCK_SIZE);
		crcs[k] = czfs_crc32c(0, o, CZFS_BLOCK_SIZE);
		czfs_blockmap_set(p->map, i, blk + k, crcs[k]);
		k++;
	}
	if (k) {	/* their crcs, for the checkpoint that names them */
		err = czfs_bdev_write_blocks(bdev, out, k, blk, crcs);
		if (err)
			return err;
	}
	memset(ci, 0, sizeof(*ci));
	ci->ulen = p->len;
	if (!p->nfresh && !p->nkept)
		return 0;		/* all zeros: a hole */
	ci->kind = CZFS_CLUSTER_BLOCKMAP;
	ci->nblocks = p->nfresh + p->nkept;
	ci->inline_data = p->map;
	ci->inline_len = p->n * (unsigned)sizeof(struct czfs_cluster_block);
	ci->fresh = p->fresh;
	return 0;
}
