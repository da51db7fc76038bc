// SPDX-License-Identifier: MIT
/*
 * Blocks in use, twice: a bit for every block something references
 * (blocks 0-2, tree nodes, space-map blocks, cluster extents, xattr
 * values), built by the walk, against the space map's own bits.  A block
 * used in the map that nothing references is leaked; a referenced block
 * free in the map could be handed out again; a block referenced twice
 * belongs to two owners.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "bdev.h"
#include "fsck.h"
#include "util.h"

/* Ranges listed one by one before only the totals are given. */
#define SPACE_SHOWN_RANGES	10

static bool ref_test(const uint64_t *map, uint64_t b)
{
	return map[b / 64] >> (b % 64) & 1;
}

bool fsck_ref(struct fsck_ctx *c, uint64_t start, uint64_t n,
	      const char *what, uint64_t ino)
{
	char owner[48] = "";

	if (ino)
		snprintf(owner, sizeof(owner), " of inode %" PRIu64, ino);
	if (start >= c->image_blocks || n > c->image_blocks - start) {
		fsck_error(c, "%s%s: blocks %" PRIu64 "+%" PRIu64
			   " past the end of the image (%" PRIu64 " blocks)",
			   what, owner, start, n, c->image_blocks);
		return false;
	}
	for (uint64_t b = start; b < start + n; b++) {
		if (ref_test(c->ref, b)) {
			fsck_error(c, "%s%s: block %" PRIu64 " is already in use by another owner",
				   what, owner, b);
			c->refs_shared = true;
			return false;
		}
	}
	for (uint64_t b = start; b < start + n; b++)
		c->ref[b / 64] |= 1ull << (b % 64);
	return true;
}

int fsck_space_init(struct fsck_ctx *c)
{
	const struct czfs_smap *sm = c->smap;

	c->ref = calloc(DIV_ROUND_UP(c->max_blocks, 64), sizeof(uint64_t));
	if (!c->ref)
		return -ENOMEM;
	fsck_ref(c, 0, CZFS_FIRST_DATA_BLKADDR, "superblock and checkpoints", 0);
	if (!sm)
		return 0;
	for (uint64_t j = 0; j < sm->nr_index; j++)
		if (sm->index_addr[j])
			fsck_ref(c, sm->index_addr[j], 1, "space map index", 0);
	for (uint64_t k = 0; k < sm->nr_bitmaps; k++)
		if (sm->bitmap_addr[k])
			fsck_ref(c, sm->bitmap_addr[k], 1, "space map bitmap", 0);
	return 0;
}

/* Runs of blocks set in a and clear in b, as ranges. */
static int diff_ranges(const uint64_t *a, const uint64_t *b, uint64_t nbits,
		       struct fsck_vec *out, uint64_t *total)
{
	struct fsck_range r = { 0, 0 };

	*total = 0;
	for (uint64_t blk = 0; blk < nbits; blk++) {
		bool in;

		/* whole words without a difference are skipped */
		if (!(blk % 64) && !(a[blk / 64] & ~b[blk / 64]) &&
		    blk + 64 <= nbits) {
			blk += 63;
			continue;
		}
		in = ref_test(a, blk) && !ref_test(b, blk);
		if (in && r.n && r.start + r.n == blk) {
			r.n++;
		} else if (in) {
			if (r.n && !fsck_vec_push(out, &r))
				return -ENOMEM;
			r = (struct fsck_range){ blk, 1 };
		}
		if (in)
			(*total)++;
	}
	if (r.n && !fsck_vec_push(out, &r))
		return -ENOMEM;
	return 0;
}

static void report_ranges(struct fsck_ctx *c, const struct fsck_vec *v,
			  uint64_t total, const char *what)
{
	size_t n = MIN(v->n, (size_t)SPACE_SHOWN_RANGES);

	for (size_t i = 0; i < n; i++) {
		const struct fsck_range *r = fsck_vec_at(v, struct fsck_range, i);

		if (r->n == 1)
			fsck_fixable(c, "space map: block %" PRIu64 " %s",
				     r->start, what);
		else
			fsck_fixable(c, "space map: blocks %" PRIu64 "-%" PRIu64
				     " %s", r->start, r->start + r->n - 1, what);
	}
	if (v->n > n) {
		c->fixable += v->n - n;
		fsck_note(c, "space map: %zu more ranges %s", v->n - n, what);
	}
	if (v->n > 1)
		fsck_note(c, "space map: %" PRIu64 " blocks %s in all", total, what);
}

/* A COVERED checkpoint's blocks are in use: a free one could be written
 * again before the next checkpoint, and a crash then would refuse this
 * one for the one before it. */
static void check_covered(struct fsck_ctx *c)
{
	const struct czfs_cp_info *cp = &c->fs->cp;

	for (unsigned i = 0; i < cp->nr_covered; i++) {
		uint64_t a = CZFS_CP_EXTENT_ADDR(cp->covered[i]);
		uint64_t n = CZFS_CP_EXTENT_LEN(cp->covered[i]);

		for (uint64_t b = a; b < a + n; b++)
			if (!ref_test(c->ref, b)) {
				fsck_error(c, "checkpoint: covered block %" PRIu64
					   " is not in use", b);
				return;
			}
	}
}

void fsck_check_space(struct fsck_ctx *c)
{
	uint64_t leaked, unmarked;

	if (!c->walk_incomplete && !c->refs_incomplete)
		check_covered(c);

	if (!c->smap) {
		fsck_note(c, "space map not loaded: blocks in use not compared");
		return;
	}
	if (c->walk_incomplete || c->refs_incomplete) {
		/* Blocks of what could not be read would look leaked. */
		fsck_note(c, "%s: leaked blocks not looked for",
			  c->walk_incomplete ? "tree incomplete" :
			  "an item could not be read");
	} else if (diff_ranges(c->smap->cur, c->ref, c->max_blocks,
			       &c->leaked, &leaked) == 0) {
		report_ranges(c, &c->leaked, leaked,
			      "marked used but not referenced (leaked)");
	}
	if (!diff_ranges(c->ref, c->smap->cur, c->max_blocks, &c->unmarked,
			 &unmarked))
		report_ranges(c, &c->unmarked, unmarked,
			      "referenced but marked free");
}
