// SPDX-License-Identifier: MIT
/* Cluster items of a file: replace one, drop a tail (in a transaction). */
#include "config.h"

#include "btree.h"
#include "cluster.h"
#include "fs.h"
#include "inode.h"
#include "super.h"
#include "util.h"

/* Old readers must refuse an image once it holds a new algorithm's clusters. */
static int announce_alg(struct czfs_fs *fs, const struct czfs_cluster_info *ci)
{
	if (ci->kind != CZFS_CLUSTER_COMPRESSED &&
	    ci->kind != CZFS_CLUSTER_INLINE_COMPRESSED)
		return 0;
	return czfs_fs_add_features(fs, czfs_alg_feature(ci->alg));
}

int czfs_cluster_set(struct czfs_fs *fs, uint64_t ino, uint64_t idx,
		     const struct czfs_cluster_info *ci, struct czfs_stored *delta)
{
	uint8_t old[sizeof(struct czfs_cluster) + CZFS_INLINE_MAX];
	uint8_t val[sizeof(struct czfs_cluster) + CZFS_INLINE_MAX];
	struct czfs_key key = { ino, CZFS_ITEM_CLUSTER, idx };
	struct czfs_stored freed = { 0 };
	int n, err;

	err = announce_alg(fs, ci);
	if (err)
		return err;
	n = czfs_btree_lookup(&fs->tree, &key, old, sizeof(old));
	if (n > (int)sizeof(old))
		return -EFSCORRUPTED;
	if (n >= 0) {
		err = czfs_item_free_blocks(fs, &key, old, (unsigned)n, &freed);
		if (err)
			return err;
		delta->blocks -= freed.blocks;
		delta->inline_bytes -= freed.inline_bytes;
	} else if (n != -ENOENT) {
		return n;
	}
	if (ci->kind == CZFS_CLUSTER_HOLE)
		return n >= 0 ? czfs_btree_delete(&fs->tree, &key) : 0;
	if (ci->kind == CZFS_CLUSTER_RAW || ci->kind == CZFS_CLUSTER_COMPRESSED)
		delta->blocks += ci->nblocks;
	else
		delta->inline_bytes += ci->inline_len;
	return czfs_btree_put(&fs->tree, &key, val, czfs_cluster_item_encode(ci, val));
}

int czfs_clusters_drop(struct czfs_fs *fs, uint64_t ino, uint64_t from,
		       struct czfs_stored *delta)
{
	struct czfs_key first = { ino, CZFS_ITEM_CLUSTER, from };
	struct czfs_key last = { ino, CZFS_ITEM_CLUSTER, CZFS_KEY_OFFSET_MASK };
	struct czfs_stored freed = { 0 };
	int err;

	if (from > CZFS_KEY_OFFSET_MASK)
		return 0;
	err = czfs_items_delete(fs, &first, &last, &freed);
	delta->blocks -= freed.blocks;
	delta->inline_bytes -= freed.inline_bytes;
	return err;
}
