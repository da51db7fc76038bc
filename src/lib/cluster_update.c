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
#include "item_free.h"
#include "pack.h"
#include "super.h"
#include "util.h"

/* Old readers must refuse an image once it holds a new algorithm's clusters. */
static int announce_alg(struct czfs_fs *fs, const struct czfs_cluster_info *ci)
{
	if (ci->kind == CZFS_CLUSTER_BLOCKMAP)
		return czfs_fs_add_features(fs, CZFS_FEATURE_INCOMPAT_BLOCKMAP);
	if (ci->kind == CZFS_CLUSTER_PACKED)
		return czfs_fs_add_features(fs, CZFS_FEATURE_INCOMPAT_PACKED |
					    (ci->slice_len ?
					     CZFS_FEATURE_INCOMPAT_SLICED |
					     CZFS_FEATURE_INCOMPAT_SLICED_PACKS : 0) |
					    czfs_alg_feature(ci->alg));
	if (ci->kind == CZFS_CLUSTER_SLICE)
		return czfs_fs_add_features(fs, CZFS_FEATURE_INCOMPAT_SLICED |
					    czfs_alg_feature(ci->alg));
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

/* Every block ci keeps is the one old has at that index. */
static int check_kept(const struct czfs_cluster_info *old,
		      const struct czfs_cluster_info *ci)
{
	uint64_t kept = czfs_blockmap_kept(ci);

	for (unsigned i = 0; kept; i++, kept >>= 1) {
		uint64_t a, b;
		uint32_t crc, ocrc;
		bool known;

		if (!(kept & 1))
			continue;
		czfs_blockmap_get(ci, i, &a, &crc);
		if (!czfs_blockmap_keeps(old, i, &b, &ocrc, &known) || a != b ||
		    (known && crc != ocrc))
			return -ESTALE;
	}
	return 0;
}

/*
 * The blocks of the item old (n bytes) that ci replaces are freed, but
 * those a BLOCKMAP ci keeps; its promise is given back.  freed->blocks
 * gets all of old's blocks, the inode's count of them.
 */
static int free_replaced(struct czfs_fs *fs, const struct czfs_key *key,
			 const uint8_t *old, unsigned n,
			 const struct czfs_cluster_info *ci,
			 struct czfs_stored *freed)
{
	struct czfs_cluster_info oci;
	int err;

	if (!czfs_blockmap_kept(ci))
		return czfs_item_free_blocks(fs, key, old, n, freed);
	err = czfs_cluster_item_decode(old, n, CZFS_MAX_CLUSTER_SIZE,
				       fs->cp.max_blocks, &oci);
	if (!err)
		err = check_kept(&oci, ci);
	if (err)
		return err;
	czfs_cluster_free_blocks(fs, &oci, ci, freed);
	/* the kept ones leave the old item's count and come back in ci's */
	freed->blocks += __builtin_popcountll(czfs_blockmap_kept(ci));
	czfs_smap_prealloc_add(&fs->smap, -(int64_t)oci.prealloc);
	freed->prealloc += oci.prealloc;
	return 0;
}

/*
 * czfs_cluster_set; keep: all-zero data written over a promise keeps it,
 * a RESERVED item as it is, a promising data cluster becomes one.
 */
static int cluster_set(struct czfs_fs *fs, uint64_t ino, uint64_t idx,
		       const struct czfs_cluster_info *ci, bool keep,
		       struct czfs_stored *delta)
{
	uint8_t old[sizeof(struct czfs_cluster) + CZFS_INLINE_MAX];
	uint8_t val[sizeof(struct czfs_cluster) + CZFS_INLINE_MAX];
	struct czfs_key key = { ino, CZFS_ITEM_CLUSTER, idx };
	struct czfs_stored freed = { 0 };
	struct czfs_cluster_info zeros;
	int n, err;

	err = announce_alg(fs, ci);
	if (err)
		return err;
	n = czfs_btree_lookup(&fs->tree, &key, old, sizeof(old));
	if (n > (int)sizeof(old))
		return -EFSCORRUPTED;
	if (keep && ci->kind == CZFS_CLUSTER_HOLE && item_is_reserved(old, n))
		return 0;		/* zeros written: the promise stays */
	if (n < 0 && n != -ENOENT)
		return n;
	if (n == -ENOENT && czfs_blockmap_kept(ci))
		return -ESTALE;		/* nothing there to keep */
	if (n >= 0) {
		uint32_t bytes;
		uint64_t pack = czfs_cluster_item_pack(old, (unsigned)n, &bytes);
		uint64_t unused = 0;

		err = free_replaced(fs, &key, old, (unsigned)n, ci, &freed);
		if (!err && pack)	/* its range of a pack or run moves out */
			err = czfs_pack_unref(fs, pack, bytes, &unused);
		if (err > 0) {
			delta->underused++;
			err = 0;
		}
		if (err)
			return err;
		delta->blocks -= freed.blocks;
		delta->inline_bytes -= freed.inline_bytes;
		delta->prealloc -= freed.prealloc;
	} else if (n != -ENOENT) {
		return n;
	}
	if (keep && ci->kind == CZFS_CLUSTER_HOLE && freed.prealloc) {
		zeros = (struct czfs_cluster_info){
			.kind = CZFS_CLUSTER_RESERVED,
			.prealloc = (unsigned)freed.prealloc,
		};
		ci = &zeros;
	}
	if (ci->kind == CZFS_CLUSTER_HOLE)
		return n >= 0 ? czfs_btree_delete(&fs->tree, &key) : 0;
	if (!czfs_cluster_is_shared(ci->kind))	/* the pack's, not the file's */
		delta->blocks += ci->nblocks;
	delta->inline_bytes += czfs_cluster_shared_bytes(ci);
	if (ci->prealloc) {
		czfs_smap_prealloc_add(&fs->smap, ci->prealloc);
		delta->prealloc += ci->prealloc;
	}
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

/* What fallocate finds in a run of clusters. */
struct scan {
	uint64_t first;
	unsigned cbytes;
	uint64_t max_blocks;
	uint64_t items, partial;	/* counts */
	uint64_t present[GAP_CHUNK / 64];	/* has an item (chunks only) */
	uint64_t tail[GAP_CHUNK / 64];	/* a partial data cluster, no promise */
};

/* A data cluster that does not fill its cluster and promises nothing. */
static bool needs_promise(const struct czfs_cluster_info *ci, unsigned cbytes)
{
	return ci->kind != CZFS_CLUSTER_RESERVED && !ci->prealloc &&
	       ci->ulen < cbytes;
}

static int scan_item(void *arg, const struct czfs_key *key, const void *val,
		     unsigned size)
{
	struct scan *s = arg;
	struct czfs_cluster_info ci;
	uint64_t i = key->offset - s->first;
	bool tail;

	if (czfs_cluster_item_decode(val, size, s->cbytes, s->max_blocks, &ci))
		return -EFSCORRUPTED;
	tail = needs_promise(&ci, s->cbytes);
	s->items++;
	s->partial += tail;
	if (i < GAP_CHUNK) {
		s->present[i / 64] |= 1ull << (i % 64);
		if (tail)
			s->tail[i / 64] |= 1ull << (i % 64);
	}
	return 0;
}

static int scan(struct czfs_fs *fs, uint64_t ino, uint64_t first,
		uint64_t end, unsigned per, struct scan *s)
{
	struct czfs_key lo = { ino, CZFS_ITEM_CLUSTER, first };
	struct czfs_key hi = { ino, CZFS_ITEM_CLUSTER, end - 1 };
	int err;

	memset(s, 0, sizeof(*s));
	s->first = first;
	s->cbytes = per << CZFS_BLOCK_SHIFT;
	s->max_blocks = fs->cp.max_blocks;
	err = czfs_btree_iterate(&fs->tree, &lo, &hi, scan_item, s);
	return err < 0 ? err : 0;
}

typedef int (*store_fn)(struct czfs_btree *t, const struct czfs_key *key,
			const void *data, unsigned size);

/* Store ci, now promising per blocks, at key through op; count it. */
static int store_promise(struct czfs_fs *fs, const struct czfs_key *key,
			 struct czfs_cluster_info *ci, unsigned per,
			 store_fn op, struct czfs_stored *delta)
{
	uint8_t val[sizeof(struct czfs_cluster) + CZFS_INLINE_MAX];
	int err;

	ci->prealloc = per;
	err = op(&fs->tree, key, val, czfs_cluster_item_encode(ci, val));
	if (err)
		return err;
	czfs_smap_prealloc_add(&fs->smap, per);
	delta->prealloc += per;
	return 0;
}

static int put_reserved(struct czfs_fs *fs, uint64_t ino, uint64_t idx,
			unsigned per, struct czfs_stored *delta)
{
	struct czfs_cluster_info ci = { .kind = CZFS_CLUSTER_RESERVED };
	struct czfs_key key = { ino, CZFS_ITEM_CLUSTER, idx };

	return store_promise(fs, &key, &ci, per, czfs_btree_insert, delta);
}

/* A file's partial tail cluster promises room for the rest of it. */
static int promise_tail(struct czfs_fs *fs, uint64_t ino, uint64_t idx,
			unsigned per, struct czfs_stored *delta)
{
	uint8_t val[sizeof(struct czfs_cluster) + CZFS_INLINE_MAX];
	struct czfs_key key = { ino, CZFS_ITEM_CLUSTER, idx };
	struct czfs_cluster_info ci;
	int n = czfs_btree_lookup(&fs->tree, &key, val, sizeof(val));

	if (n > (int)sizeof(val))
		return -EFSCORRUPTED;
	if (n < 0)
		return n;
	if (czfs_cluster_item_decode(val, (unsigned)n, per << CZFS_BLOCK_SHIFT,
				     fs->cp.max_blocks, &ci))
		return -EFSCORRUPTED;
	return store_promise(fs, &key, &ci, per, czfs_btree_update, delta);
}

/* Each cluster of [first, end) that needs a promise gets one. */
static int fill_gaps(struct czfs_fs *fs, uint64_t ino, uint64_t first,
		     uint64_t end, unsigned per, struct czfs_stored *delta)
{
	struct scan s;
	int err = 0;

	for (uint64_t at = first; !err && at < end; at += GAP_CHUNK) {
		uint64_t len = MIN(end - at, (uint64_t)GAP_CHUNK);

		err = scan(fs, ino, at, at + len, per, &s);
		for (uint64_t i = 0; !err && i < len; i++) {
			uint64_t bit = 1ull << (i % 64);

			if (!(s.present[i / 64] & bit))
				err = put_reserved(fs, ino, at + i, per, delta);
			else if (s.tail[i / 64] & bit)
				err = promise_tail(fs, ino, at + i, per, delta);
		}
	}
	return err;
}

/* Counted from the items there: a huge range costs no more than its
 * data, so a fallocate far past the room fails at once. */
int czfs_clusters_gaps(struct czfs_fs *fs, uint64_t ino, uint64_t first,
		       uint64_t end, unsigned per, uint64_t *n)
{
	struct scan s;
	int err;

	*n = 0;
	end = MIN(end, CZFS_KEY_OFFSET_MASK + 1);
	if (per < 1 || per > CZFS_MAX_CLUSTER_BLOCKS)
		return -EINVAL;
	if (first >= end)
		return 0;
	err = scan(fs, ino, first, end, per, &s);
	if (!err)
		*n = end - first - s.items + s.partial;
	return err;
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
