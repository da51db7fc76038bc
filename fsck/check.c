// SPDX-License-Identifier: MIT
/* The passes of a check, in order, and the life of their state. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "compress.h"
#include "fsck.h"
#include "pack.h"
#include "util.h"

int fsck_ctx_init(struct fsck_ctx *c)
{
	c->inodes = FSCK_VEC(struct fsck_inode);
	c->edges = FSCK_VEC(struct fsck_edge);
	c->orphans = FSCK_VEC(uint64_t);
	c->fixes = FSCK_VEC(struct fsck_fix);
	c->leaked = FSCK_VEC(struct fsck_range);
	c->unmarked = FSCK_VEC(struct fsck_range);
	c->pack_fixes = (struct fsck_vec){ .size = fsck_pack_fix_size() };
	c->codec = czfs_codec_new();
	c->scratch = aligned_alloc(CZFS_BLOCK_SIZE, CZFS_MAX_CLUSTER_SIZE);
	c->data = aligned_alloc(CZFS_BLOCK_SIZE, CZFS_MAX_CLUSTER_SIZE);
	clock_gettime(CLOCK_MONOTONIC, &c->pr_last);
	return c->codec && c->scratch && c->data ? 0 : -ENOMEM;
}

void fsck_ctx_free(struct fsck_ctx *c)
{
	czfs_codec_free(c->codec);
	free(c->scratch);
	free(c->data);
	free(c->ref);
	fsck_vec_free(&c->inodes);
	fsck_vec_free(&c->edges);
	fsck_vec_free(&c->orphans);
	fsck_vec_free(&c->fixes);
	fsck_vec_free(&c->leaked);
	fsck_vec_free(&c->unmarked);
	fsck_vec_free(&c->pack_fixes);
	free(c->packs);
}

/* Clusters and inodes need features the superblock must announce to old
 * readers. */
static void check_features(struct fsck_ctx *c)
{
	uint32_t missing = c->incompat_used & ~c->fs->sb.feature_incompat;

	if (missing & CZFS_FEATURE_INCOMPAT_LZ4)
		fsck_fixable(c, "superblock: lz4 clusters, but no lz4 feature bit");
	if (missing & CZFS_FEATURE_INCOMPAT_ZSTD)
		fsck_fixable(c, "superblock: zstd clusters, but no zstd feature bit");
	if (missing & CZFS_FEATURE_INCOMPAT_ATTR_FLAGS)
		fsck_fixable(c, "superblock: inodes with chattr flags, but no "
			     "attr_flags feature bit");
	if (missing & CZFS_FEATURE_INCOMPAT_PREALLOC)
		fsck_fixable(c, "superblock: reserved clusters, but no "
			     "prealloc feature bit");
	if (missing & CZFS_FEATURE_INCOMPAT_PACKED)
		fsck_fixable(c, "superblock: packed clusters, but no "
			     "packed feature bit");
}

int fsck_check(struct fsck_ctx *c)
{
	int err;

	c->max_blocks = c->fs->cp.max_blocks;
	c->image_blocks = c->fs->cp.image_blocks;
	err = fsck_space_init(c);
	if (!err)
		err = fsck_walk(c);
	fsck_progress_end(c);
	if (err)
		return err;
	err = fsck_packs_finish(c);
	if (err)
		return err;
	check_features(c);
	err = fsck_check_links(c);
	if (!err)
		fsck_check_space(c);
	return err;
}
