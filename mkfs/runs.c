// SPDX-License-Identifier: MIT
/* Runs of slices: compressed clusters back to back (runs.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "runs.h"
#include "util.h"
#include "writer.h"

#define RUN_BYTES	(CZFS_RUN_MAX_BLOCKS * CZFS_BLOCK_SIZE)

struct mk_runs {
	uint8_t *buf;			/* RUN_BYTES */
	uint32_t used;			/* bytes placed */
	void **items;			/* the pending slices' item values */
	unsigned n, cap;
	uint64_t last_ino;		/* of the last slice placed */
	struct mk_run_stats st;
};

int mk_runs_new(struct mk_runs **out)
{
	struct mk_runs *rs = calloc(1, sizeof(*rs));

	if (rs)
		rs->buf = malloc(RUN_BYTES);
	if (!rs || !rs->buf) {
		mk_runs_free(rs);
		return -ENOMEM;
	}
	*out = rs;
	return 0;
}

void mk_runs_free(struct mk_runs *rs)
{
	if (!rs)
		return;
	free(rs->buf);
	free(rs->items);
	free(rs);
}

bool mk_runs_holds(const struct mk_runs *rs, uint64_t ino)
{
	return rs->used && rs->last_ino == ino;
}

/* Add base to the item's blkaddr and set its run (little-endian). */
static void patch(void *item, uint64_t base)
{
	struct czfs_cluster raw;
	struct czfs_cluster_slice ext;

	memcpy(&raw, item, sizeof(raw));
	memcpy(&ext, (uint8_t *)item + sizeof(raw), sizeof(ext));
	raw.blkaddr = cpu_to_le64(le64_to_cpu(raw.blkaddr) + base);
	ext.run = cpu_to_le64(base);
	memcpy(item, &raw, sizeof(raw));
	memcpy((uint8_t *)item + sizeof(raw), &ext, sizeof(ext));
}

int mk_runs_close(struct mk_runs *rs, struct mk_writer *w,
		  struct czfs_pack_info *closed)
{
	unsigned nblocks = DIV_ROUND_UP(rs->used, CZFS_BLOCK_SIZE);
	uint64_t base;
	int err;

	*closed = (struct czfs_pack_info){ 0 };
	if (!rs->used)
		return 0;
	memset(rs->buf + rs->used, 0, nblocks * CZFS_BLOCK_SIZE - rs->used);
	err = mk_writer_alloc(w, nblocks, &base);
	if (!err)
		err = mk_writer_add(w, base, rs->buf,
				    (size_t)nblocks * CZFS_BLOCK_SIZE);
	if (err)
		return err;
	for (unsigned i = 0; i < rs->n; i++)
		patch(rs->items[i], base);
	*closed = (struct czfs_pack_info){
		.blkaddr = base, .refs = rs->n, .nblocks = nblocks,
		.ulen = rs->used, .run = true, .live = rs->used,
	};
	rs->st.runs++;
	rs->st.blocks += nblocks;
	rs->used = 0;
	rs->n = 0;
	return 0;
}

int mk_runs_place(struct mk_runs *rs, struct mk_writer *w, uint64_t ino,
		  const struct czfs_cluster_info *c, const void *payload,
		  uint32_t clen, struct czfs_cluster_info *slice,
		  struct czfs_pack_info *closed)
{
	int err;

	*closed = (struct czfs_pack_info){ 0 };
	if (clen > RUN_BYTES - rs->used) {
		err = mk_runs_close(rs, w, closed);
		if (err)
			return err;
	}
	if (rs->n == rs->cap) {
		unsigned cap = rs->cap ? 2 * rs->cap : 64;
		void **v = realloc(rs->items, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		rs->items = v;
		rs->cap = cap;
	}
	memcpy(rs->buf + rs->used, payload, clen);
	czfs_cluster_slice_make(c, 0, rs->used, clen, slice);
	rs->used += clen;
	rs->items[rs->n] = NULL;	/* until mk_runs_pending */
	rs->last_ino = ino;
	rs->st.slices++;
	rs->st.slice_bytes += clen;
	rs->st.alone_blocks += c->nblocks;
	return 0;
}

void mk_runs_pending(struct mk_runs *rs, void *item)
{
	rs->items[rs->n++] = item;
}

void mk_runs_stats(const struct mk_runs *rs, struct mk_run_stats *st)
{
	*st = rs->st;
}
