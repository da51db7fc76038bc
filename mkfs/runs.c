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

/*
 * A full run may end at any slice whose end lies in its last CUT_WINDOW
 * bytes: the one that leaves the least of its last block unused, the
 * slices after it starting the next run.  Cut where the next payload
 * did not fit, a run wastes half a block on average (0.86 MiB over the
 * 414 runs of a 1000 MiB file); the best of the cuts a window offers,
 * a fraction of that.
 */
#define CUT_WINDOW	(256u << 10)

/* A slice of the open run: where, and what to make its item again. */
struct run_slice {
	void *item;			/* the builder's copy of its value */
	struct czfs_cluster_info c;	/* the COMPRESSED cluster it stores */
	uint32_t off, clen;
};

struct mk_runs {
	bool cut;			/* close full runs at their best cut */
	uint32_t max;			/* bytes of a run, at most */
	uint8_t *buf;			/* max */
	uint8_t *moved;			/* max: slices kept for the next */
	uint32_t used;			/* bytes placed */
	struct run_slice *sl;		/* the pending slices */
	unsigned n, cap;
	uint64_t last_ino;		/* of the last slice placed */
	void **later;			/* more items to patch at close */
	unsigned nlater, later_cap;
	uint64_t *bases;		/* of the runs closed, by number */
	uint64_t bases_cap;
	struct mk_run_stats st;
};

int mk_runs_new(unsigned max_blocks, bool cut, struct mk_runs **out)
{
	struct mk_runs *rs = calloc(1, sizeof(*rs));

	if (rs) {
		rs->cut = cut;
		rs->max = MIN(max_blocks, CZFS_RUN_MAX_BLOCKS) * CZFS_BLOCK_SIZE;
		rs->buf = malloc(rs->max);
		rs->moved = malloc(rs->max);
	}
	if (!rs || !rs->buf || !rs->moved) {
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
	free(rs->moved);
	free(rs->sl);
	free(rs->later);
	free(rs->bases);
	free(rs);
}

bool mk_runs_holds(const struct mk_runs *rs, uint64_t ino)
{
	return rs->used && rs->last_ino == ino;
}

/*
 * Add base to the item's blkaddr and, a SLICE's, set its run
 * (little-endian); a PACKED item of a sliced pack names its run by
 * distance, which stays.
 */
static void patch(void *item, uint64_t base)
{
	struct czfs_cluster raw;
	struct czfs_cluster_slice ext;

	memcpy(&raw, item, sizeof(raw));
	raw.blkaddr = cpu_to_le64(le64_to_cpu(raw.blkaddr) + base);
	memcpy(item, &raw, sizeof(raw));
	if (raw.kind != CZFS_CLUSTER_SLICE)
		return;
	memcpy(&ext, (uint8_t *)item + sizeof(raw), sizeof(ext));
	ext.run = cpu_to_le64(base);
	memcpy((uint8_t *)item + sizeof(raw), &ext, sizeof(ext));
}

/* Note the base of the run closed now (number st.runs). */
static int note_base(struct mk_runs *rs, uint64_t base)
{
	if (CZFS_GROW(rs->bases, rs->st.runs, rs->bases_cap, 64))
		return -ENOMEM;
	rs->bases[rs->st.runs] = base;
	return 0;
}

/*
 * Write the first k slices of the open run (bytes of it) as a run; the
 * slices after them start the next one, their items made again.
 */
static int close_first(struct mk_runs *rs, struct mk_writer *w, unsigned k,
		       uint32_t bytes, struct czfs_pack_info *closed)
{
	unsigned nblocks = DIV_ROUND_UP(bytes, CZFS_BLOCK_SIZE);
	uint32_t rest = rs->used - bytes;
	uint64_t base;
	int err;

	memcpy(rs->moved, rs->buf + bytes, rest);
	memset(rs->buf + bytes, 0, nblocks * CZFS_BLOCK_SIZE - bytes);
	err = mk_writer_alloc(w, nblocks, &base);
	if (!err)
		err = mk_writer_add(w, base, rs->buf,
				    (size_t)nblocks * CZFS_BLOCK_SIZE);
	if (!err)
		err = note_base(rs, base);
	if (err)
		return err;
	for (unsigned i = 0; i < k; i++)
		if (rs->sl[i].item)
			patch(rs->sl[i].item, base);
	for (unsigned i = 0; i < rs->nlater; i++)	/* (no cut: all of it) */
		patch(rs->later[i], base);
	rs->nlater = 0;
	*closed = (struct czfs_pack_info){
		.blkaddr = base, .refs = k, .nblocks = nblocks,
		.ulen = bytes, .run = true, .live = bytes,
	};
	rs->st.runs++;
	rs->st.blocks += nblocks;
	memcpy(rs->buf, rs->moved, rest);
	for (unsigned i = k; i < rs->n; i++) {
		struct run_slice *m = &rs->sl[i - k];
		struct czfs_cluster_info slice;

		*m = rs->sl[i];
		m->off -= bytes;
		czfs_cluster_slice_make(&m->c, 0, m->off, m->clen, &slice);
		czfs_cluster_item_encode(&slice, m->item);
	}
	rs->n -= k;
	rs->used = rest;
	return 0;
}

int mk_runs_close(struct mk_runs *rs, struct mk_writer *w,
		  struct czfs_pack_info *closed)
{
	*closed = (struct czfs_pack_info){ 0 };
	return rs->used ? close_first(rs, w, rs->n, rs->used, closed) : 0;
}

/* The full run closed at its best cut (CUT_WINDOW). */
static int close_full(struct mk_runs *rs, struct mk_writer *w,
		      struct czfs_pack_info *closed)
{
	unsigned best = rs->n, least = CZFS_BLOCK_SIZE;

	for (unsigned i = rs->cut ? rs->n : 0; i-- > 0;) {
		uint32_t end = rs->sl[i].off + rs->sl[i].clen;
		unsigned waste = (unsigned)(-end & (CZFS_BLOCK_SIZE - 1));

		if (end + CUT_WINDOW < rs->used)	/* the rest must fit the next */
			break;
		if (waste < least) {
			least = waste;
			best = i + 1;
		}
	}
	if (best == rs->n)
		return mk_runs_close(rs, w, closed);
	return close_first(rs, w, best,
			   rs->sl[best - 1].off + rs->sl[best - 1].clen, closed);
}

int mk_runs_place(struct mk_runs *rs, struct mk_writer *w, uint64_t ino,
		  const struct czfs_cluster_info *c, const void *payload,
		  uint32_t clen, struct czfs_cluster_info *slice,
		  struct czfs_pack_info *closed)
{
	int err;

	*closed = (struct czfs_pack_info){ 0 };
	if (clen > rs->max - rs->used) {
		err = close_full(rs, w, closed);
		if (err)
			return err;
	}
	if (CZFS_GROW(rs->sl, rs->n, rs->cap, 64))
		return -ENOMEM;
	memcpy(rs->buf + rs->used, payload, clen);
	czfs_cluster_slice_make(c, 0, rs->used, clen, slice);
	rs->sl[rs->n] = (struct run_slice){
		.c = *c, .off = rs->used, .clen = clen,	/* item: mk_runs_pending */
	};
	rs->used += clen;
	rs->last_ino = ino;
	rs->st.slices++;
	rs->st.slice_bytes += clen;
	rs->st.alone_blocks += c->nblocks;
	return 0;
}

void mk_runs_pending(struct mk_runs *rs, void *item)
{
	rs->sl[rs->n++].item = item;
}

uint64_t mk_runs_open_number(const struct mk_runs *rs)
{
	return rs->st.runs;
}

bool mk_runs_base(const struct mk_runs *rs, uint64_t number, uint64_t *base)
{
	if (number >= rs->st.runs)
		return false;
	*base = rs->bases[number];
	return true;
}

int mk_runs_patch_later(struct mk_runs *rs, void *item)
{
	if (CZFS_GROW(rs->later, rs->nlater, rs->later_cap, 64))
		return -ENOMEM;
	rs->later[rs->nlater++] = item;
	return 0;
}

void mk_runs_stats(const struct mk_runs *rs, struct mk_run_stats *st)
{
	*st = rs->st;
}
