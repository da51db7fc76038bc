// SPDX-License-Identifier: MIT
/*
 * Changes to a clean image, after the check: --trim punches every free
 * range out of the image file (for images written before discard, or
 * mounted with nodiscard, or left by a crash between a checkpoint and its
 * punch); --grow raises the size limit in place.  Both need the check to
 * have found nothing: a damaged map could call a used block free.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "discard.h"
#include "fsck.h"
#include "util.h"

/* Nothing found, nothing left: the map is exactly what is in use. */
static bool check_was_clean(const struct fsck_ctx *c, const char *what)
{
	if (!c->errors && c->fixable == c->fixed && c->smap == &c->fs->smap &&
	    !c->walk_incomplete && !c->refs_incomplete && !c->refs_shared)
		return true;
	fprintf(stderr, "fsck.czfs: %s: not %s: the check found problems\n",
		c->o.image, what);
	return false;
}

int fsck_trim(struct fsck_ctx *c)
{
	struct czfs_discard_stats st = { 0 };
	int err;

	if (!check_was_clean(c, "trimmed"))
		return -EFSCORRUPTED;
	err = czfs_smap_discard_all(c->smap, c->fs->bdev, &st);
	if (err) {
		fprintf(stderr, "fsck.czfs: %s: trim: %s\n", c->o.image,
			err == -EOPNOTSUPP ?
			"the file system holding the image cannot punch holes" :
			strerror(-err));
		return err;
	}
	if (!c->o.quiet)
		printf("fsck.czfs: %s: trimmed %" PRIu64 " free blocks (%" PRIu64
		       " MiB) in %" PRIu64 " ranges\n", c->o.image, st.blocks,
		       st.blocks >> 8, st.ranges);
	return 0;
}

int fsck_grow(struct czfs_fs *fs, struct fsck_ctx *c)
{
	uint64_t old = fs->cp.max_blocks, want = c->o.grow_blocks;
	int err;

	if (!check_was_clean(c, "grown"))
		return -EFSCORRUPTED;
	if (want < old) {
		fprintf(stderr, "fsck.czfs: %s: --grow: %" PRIu64 " blocks is below the current limit of %" PRIu64 " (shrinking is not supported)\n",
			c->o.image, want, old);
		return -EINVAL;
	}
	err = czfs_fs_grow(fs, want);
	if (err) {
		fprintf(stderr, "fsck.czfs: %s: --grow: %s\n", c->o.image,
			err == -EFBIG ? "too large for the checkpoint's space map index" :
			strerror(-err));
		return err;
	}
	c->max_blocks = want;
	if (!c->o.quiet)
		printf("fsck.czfs: %s: size limit %" PRIu64 " -> %" PRIu64
		       " blocks (%" PRIu64 " MiB)\n", c->o.image, old, want,
		       want >> 8);
	return 0;
}
