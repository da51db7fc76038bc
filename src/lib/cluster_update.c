// SPDX-License-Identifier: MIT
/*
 * Cluster items of a file: replace one, drop a tail, set clusters aside
 * for fallocate (in a transaction).
 */
#include "config.h"

#include <string.h>

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

static bool item_is_reserved(const uint8_t *val, int len)
{
	struct czfs_cluster raw;

	if (len < (int)sizeof(raw))
		return false;
	memcpy(&raw, val, sizeof(raw));
	return raw.kind == CZFS_CLUSTER_RESERVED;
}

/* czfs_cluster_set; keep: a hole leaves a RESERVED item as it is. */
static int cluster_set(struct czfs_fs *fs, uint64_t ino, uint64_t idx,
		       const struct czfs_cluster_info *ci, bool keep,
		       struct czfs_stored *delta)
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
	if (keep && ci->kind == CZFS_CLUSTER_HOLE && item_is_reserved(old, n))
		return 0;		/* zeros written: the promise stays */
	if (n >= 0) {
		err = czfs_item_free_blocks(fs, &key, old, (unsigned)n, &freed);
		if (err)
			return err;
		delta->blocks -= freed.blocks;
		delta->inline_bytes -= freed.inline_bytes;
		delta->prealloc -= freed.prealloc;
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

int czfs_cluster_set(struct czfs_fs *fs, uint64_t ino, uint64_t idx,
		     const struct czfs_cluster_info *ci, struct czfs_stored *delta)
{
	return cluster_set(fs, ino, idx, ci, false, delta);
}

int czfs_cluster_write(struct czfs_fs *fs, uint64_t ino, uint64_t idx,
		       const struct czfs_cluster_info *ci,
		       struct czfs_stored *delta)
{
	return cluster_set(fs, ino, idx, ci, true, delta);
}

int czfs_clusters_delete(struct czfs_fs *fs, uint64_t ino, uint64_t from,
			 uint64_t to, struct czfs_stored *delta)
{
	struct czfs_key first = { ino, CZFS_ITEM_CLUSTER, from };
	struct czfs_key last = { ino, CZFS_ITEM_CLUSTER,
				 MIN(to, CZFS_KEY_OFFSET_MASK + 1) - 1 };
	struct czfs_stored freed = { 0 };
	int err;

	if (from > CZFS_KEY_OFFSET_MASK || from >= to)
		return 0;
	err = czfs_items_delete(fs, &first, &last, &freed);
	delta->blocks -= freed.blocks;
	delta->inline_bytes -= freed.inline_bytes;
	delta->prealloc -= freed.prealloc;
	return err;
}

int czfs_clusters_drop(struct czfs_fs *fs, uint64_t ino, uint64_t from,
		       struct czfs_stored *delta)
{
	return czfs_clusters_delete(fs, ino, from, UINT64_MAX, delta);
}

/* ---- fallocate's promise ------------------------------------------------ */

#define GAP_CHUNK	4096u		/* clusters looked at per tree walk */

struct present {
	uint64_t first;
	uint64_t bits[GAP_CHUNK / 64];
};

static int mark_present(void *arg, const struct czfs_key *key, const void *val,
			unsigned size)
{
	struct present *p = arg;
	uint64_t i = key->offset - p->first;

	p->bits[i / 64] |= 1ull << (i % 64);
	return 0;
}

static int put_reserved(struct czfs_fs *fs, uint64_t ino, uint64_t idx,
			unsigned per, struct czfs_stored *delta)
{
	struct czfs_cluster_info ci = { .kind = CZFS_CLUSTER_RESERVED,
					.prealloc = per };
	struct czfs_key key = { ino, CZFS_ITEM_CLUSTER, idx };
	uint8_t val[sizeof(struct czfs_cluster) + CZFS_INLINE_MAX];
	int err = czfs_btree_insert(&fs->tree, &key, val,
				    czfs_cluster_item_encode(&ci, val));

	if (err)
		return err;
	czfs_smap_prealloc_add(&fs->smap, per);
	delta->prealloc += per;
	return 0;
}

/* Each cluster of [first, end) without an item becomes RESERVED. */
static int fill_gaps(struct czfs_fs *fs, uint64_t ino, uint64_t first,
		     uint64_t end, unsigned per, struct czfs_stored *delta)
{
	struct present p;
	int err = 0;

	for (uint64_t at = first; !err && at < end; at += GAP_CHUNK) {
		uint64_t len = MIN(end - at, (uint64_t)GAP_CHUNK);
		struct czfs_key lo = { ino, CZFS_ITEM_CLUSTER, at };
		struct czfs_key hi = { ino, CZFS_ITEM_CLUSTER, at + len - 1 };

		memset(&p, 0, sizeof(p));
		p.first = at;
		err = czfs_btree_iterate(&fs->tree, &lo, &hi, mark_present, &p);
		for (uint64_t i = 0; err >= 0 && i < len; i++) {
			if (!(p.bits[i / 64] & (1ull << (i % 64))))
				err = put_reserved(fs, ino, at + i, per, delta);
		}
	}
	return err < 0 ? err : 0;
}

static int count_item(void *arg, const struct czfs_key *key, const void *val,
		      unsigned size)
{
	(*(uint64_t *)arg)++;
	return 0;
}

/* The holes, from the items there: a huge range costs no more than its
 * data, so a fallocate far past the room fails at once. */
int czfs_clusters_gaps(struct czfs_fs *fs, uint64_t ino, uint64_t first,
		       uint64_t end, uint64_t *n)
{
	struct czfs_key lo = { ino, CZFS_ITEM_CLUSTER, first };
	struct czfs_key hi = { ino, CZFS_ITEM_CLUSTER, 0 };
	uint64_t items = 0;
	int err;

	*n = 0;
	end = MIN(end, CZFS_KEY_OFFSET_MASK + 1);
	if (first >= end)
		return 0;
	hi.offset = end - 1;
	err = czfs_btree_iterate(&fs->tree, &lo, &hi, count_item, &items);
	if (err < 0)
		return err;
	*n = end - first - items;
	return 0;
}

int czfs_clusters_reserve(struct czfs_fs *fs, uint64_t ino, uint64_t first,
			  uint64_t end, unsigned per, struct czfs_stored *delta)
{
	int err;

	if (per < 1 || per > CZFS_MAX_CLUSTER_BLOCKS)
		return -EINVAL;
	end = MIN(end, CZFS_KEY_OFFSET_MASK + 1);
	err = czfs_fs_add_features(fs, CZFS_FEATURE_INCOMPAT_PREALLOC);
	return err ?: fill_gaps(fs, ino, first, end, per, delta);
}
