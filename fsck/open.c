// SPDX-License-Identifier: MIT
/*
 * Opening the image for a check.  The library refuses an image whose
 * space map does not load; fsck then opens it without the map, so the
 * tree is still checked, and looks at why: a map whose only fault is a
 * used count that differs from the checkpoint's is loaded with the right
 * count (and, when repairing, a checkpoint with that count is written
 * first, so the map loads for the other repairs).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "bdev.h"
#include "fsck.h"
#include "image.h"
#include "super.h"
#include "util.h"

static int open_fs(struct fsck_ctx *c, unsigned flags)
{
	struct czfs_fs_opts fo = { .flags = CZFS_OPEN_EXCL | flags };

	return czfs_image_open(c->o.image, &fo, NULL, &c->fs);
}

/* The map loads once its used count is the one it really holds? */
static int load_recounted(struct fsck_ctx *c, uint64_t *used)
{
	int err;

	fsck_log_mute(true);
	err = czfs_smap_load_recount(&c->own_smap, c->fs->bdev, &c->fs->cp,
				     used);
	if (!err && *used == c->fs->cp.used_blocks) {
		czfs_smap_destroy(&c->own_smap);
		err = -EFSCORRUPTED;	/* the count is not what is wrong */
	}
	fsck_log_mute(false);
	return err;
}

static int diagnose_smap(struct fsck_ctx *c)
{
	uint64_t want = c->fs->cp.used_blocks, used;
	int err = load_recounted(c, &used);

	if (err == -ENOMEM)
		return err;
	if (err) {
		fsck_error(c, "space map damaged: blocks in use not compared, no repairs possible");
		return 0;
	}
	fsck_fixable(c, "checkpoint: used_blocks %" PRIu64 ", the space map marks %"
		     PRIu64, want, used);
	if (!c->o.repair) {
		c->smap = &c->own_smap;
		return 0;
	}
	/* Repaired first: every other repair needs the map loaded. */
	czfs_smap_destroy(&c->own_smap);
	czfs_fs_close(c->fs);
	c->fs = NULL;
	err = fsck_rewrite_used(c->o.image, used);
	if (!err)
		err = open_fs(c, 0);
	if (err)
		return err;
	c->fixed++;
	c->used_count_fixed = true;
	c->smap = &c->fs->smap;
	return 0;
}

int fsck_open(struct fsck_ctx *c)
{
	bool rw = c->o.repair || c->o.trim || c->o.grow_blocks;
	int err = open_fs(c, rw ? 0 : CZFS_OPEN_RDONLY);

	if (!err) {
		c->smap = &c->fs->smap;
	} else if (err == -EFSCORRUPTED) {
		/* The map, or what comes before it: retry without the map. */
		err = open_fs(c, CZFS_OPEN_RDONLY | CZFS_OPEN_NOSMAP);
		if (!err)
			err = diagnose_smap(c);
	}
	if (err)
		return err;
	c->max_blocks = c->fs->cp.max_blocks;
	c->image_blocks = c->fs->cp.image_blocks;
	return 0;
}

void fsck_close(struct fsck_ctx *c)
{
	if (c->smap == &c->own_smap)
		czfs_smap_destroy(&c->own_smap);
	c->smap = NULL;
	czfs_fs_close(c->fs);
	c->fs = NULL;
}

/* ---- checkpoint slots ---------------------------------------------------- */

void fsck_check_slots(struct fsck_ctx *c)
{
	const struct czfs_cp_info *cur = &c->fs->cp;
	uint64_t cur_slot = c->fs->sb.cp_blkaddr[cur->generation & 1];
	struct czfs_cp_info other;
	void *blk = aligned_alloc(CZFS_BLOCK_SIZE, CZFS_BLOCK_SIZE);

	for (unsigned i = 0; blk && i < 2; i++) {
		uint64_t slot = c->fs->sb.cp_blkaddr[i];
		int err;

		if (slot == cur_slot)
			continue;
		err = czfs_bdev_read(c->fs->bdev, blk, CZFS_BLOCK_SIZE,
				     slot * CZFS_BLOCK_SIZE);
		if (!err && czfs_is_zero(blk, CZFS_BLOCK_SIZE))
			continue;	/* never written: a new image */
		fsck_log_mute(true);
		if (!err)
			err = czfs_cp_decode(blk, slot, &other);
		fsck_log_mute(false);
		if (err)
			fsck_warn(c, "checkpoint in block %" PRIu64 " is damaged; "
				  "the image uses generation %" PRIu64 " in block %" PRIu64,
				  slot, cur->generation, cur_slot);
		else if (other.generation > cur->generation)
			/* refused at open: a one-flush commit a crash cut */
			fsck_note(c, "checkpoint in block %" PRIu64 " (generation %"
				  PRIu64 ") lacks blocks it names: its flush did not "
				  "complete; the image uses generation %" PRIu64
				  ", the one before", slot, other.generation,
				  cur->generation);
	}
	free(blk);
}
