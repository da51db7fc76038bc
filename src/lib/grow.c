// SPDX-License-Identifier: MIT
/*
 * Raising an image's size limit in place.  The limit lives in the
 * checkpoint (max_blocks, with as many space-map index blocks as it
 * needs); the space map grows in memory, with the new range free (no
 * bitmap or index block for it: address 0 means all free), and a commit
 * makes the new limit durable.  The superblock's copy follows.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "bdev.h"
#include "fs.h"
#include "log.h"
#include "super.h"
#include "util.h"

/* The superblock's max_blocks, rewritten in place and flushed. */
static int write_super_limit(struct czfs_fs *fs, uint64_t max_blocks)
{
	struct czfs_sb_info sb = fs->sb;
	int err;

	sb.max_blocks = max_blocks;
	err = czfs_fs_write_super(fs, &sb);
	return err ?: czfs_bdev_flush(fs->bdev);
}

int czfs_fs_grow(struct czfs_fs *fs, uint64_t max_blocks)
{
	uint64_t bytes = max_blocks * CZFS_BLOCK_SIZE;
	int err;

	if (fs->rdonly || !fs->smap.max_blocks)
		return -EROFS;
	if (max_blocks < fs->cp.max_blocks ||
	    max_blocks > UINT64_MAX / CZFS_BLOCK_SIZE)
		return -EINVAL;
	if (max_blocks == fs->cp.max_blocks)
		return 0;
	if (czfs_smap_index_count(max_blocks) >
	    ARRAY_SIZE(((struct czfs_cp_info *)0)->smap_index))
		return -EFBIG;
	/* a file image is sparse up to its limit, as mkfs.czfs makes it */
	if (fs->bdev->size < bytes) {
		err = fs->bdev->ops->resize(fs->bdev, bytes);
		if (err) {
			czfs_err("grow: cannot extend the image to %llu bytes: %s",
				 (unsigned long long)bytes, strerror(-err));
			return err == -EOPNOTSUPP ? -ENOSPC : err;
		}
	}
	err = czfs_smap_grow(&fs->smap, max_blocks);
	if (!err) {	/* an open image's nodes may lie past the old limit */
		czfs_nodecache_set_limit(fs->nc, max_blocks);
		err = czfs_fs_begin(fs);
	}
	if (!err) {
		fs->tree.max_blocks = max_blocks;
		err = czfs_fs_commit(fs);
	}
	if (!err)
		err = write_super_limit(fs, max_blocks);
	return err;
}
