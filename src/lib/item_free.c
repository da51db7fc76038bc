// SPDX-License-Identifier: MIT
/* The blocks items own, freed with them (item_free.h). */
#include "config.h"

#include <stdlib.h>

#include "btree.h"
#include "cluster.h"
#include "fs.h"
#include "inode.h"
#include "item_free.h"
#include "pack.h"
#include "util.h"
#include "xattr.h"

void czfs_cluster_free_blocks(struct czfs_fs *fs,
			      const struct czfs_cluster_info *old,
			      const struct czfs_cluster_info *keep,
			      struct czfs_stored *freed)
{
	uint64_t kept = keep ? czfs_blockmap_kept(keep) : 0;

	if (old->kind != CZFS_CLUSTER_BLOCKMAP &&
	    (!kept || old->kind != CZFS_CLUSTER_RAW)) {	/* one run */
		if (old->nblocks && czfs_cluster_has_extent(old->kind)) {
			czfs_smap_free(&fs->smap, old->blkaddr, old->nblocks);
			freed->blocks += old->nblocks;
		}
		return;
	}
	for (unsigned i = 0; i < 64; i++) {
		uint64_t a;
		uint32_t crc;
		bool known;

		if (!czfs_blockmap_keeps(old, i, &a, &crc, &known))
			break;
		if (!a || (kept & (1ull << i)))
			continue;
		czfs_smap_free(&fs->smap, a, 1);
		freed->blocks++;
	}
}

/* Blocks an item owns: a cluster extent, external xattr values. */
int czfs_item_free_blocks(struct czfs_fs *fs, const struct czfs_key *key,
			  const void *val, unsigned size,
			  struct czfs_stored *freed)
{
	struct czfs_cluster_info ci;
	struct czfs_xattr x;
	unsigned pos = 0;
	int ret;

	if (key->type == CZFS_ITEM_CLUSTER) {
		ret = czfs_cluster_item_decode(val, size, CZFS_MAX_CLUSTER_SIZE,
					       fs->cp.max_blocks, &ci);
		if (ret)
			return ret;
		/* a pack's or run's blocks are its PACK item's: czfs_pack_unref */
		if (!czfs_cluster_is_shared(ci.kind))
			czfs_cluster_free_blocks(fs, &ci, NULL, freed);
		freed->inline_bytes += czfs_cluster_shared_bytes(&ci);
		czfs_smap_prealloc_add(&fs->smap, -(int64_t)ci.prealloc);
		freed->prealloc += ci.prealloc;
		return 0;
	}
	if (key->type != CZFS_ITEM_XATTR)
		return 0;
	while ((ret = czfs_xattr_next(val, size, &pos, &x)) > 0) {
		uint64_t n = DIV_ROUND_UP(x.value_len, CZFS_BLOCK_SIZE);

		if (x.blkaddr && n) {
			czfs_smap_free(&fs->smap, x.blkaddr, n);
			freed->blocks += (int64_t)n;
		}
	}
	return ret;
}

#define DESTROY_BATCH	256

struct collect_keys {
	struct czfs_fs *fs;
	struct czfs_key keys[DESTROY_BATCH];
	uint64_t packs[DESTROY_BATCH];	/* of PACKED or SLICE clusters, or 0 */
	uint32_t bytes[DESTROY_BATCH];	/* a slice's payload bytes */
	unsigned n;
	struct czfs_stored freed;
	int err;
};

static int collect_key(void *arg, const struct czfs_key *key, const void *val,
		       unsigned size)
{
	struct collect_keys *c = arg;

	c->err = czfs_item_free_blocks(c->fs, key, val, size, &c->freed);
	if (c->err)
		return c->err;
	c->packs[c->n] = key->type == CZFS_ITEM_CLUSTER ?
			 czfs_cluster_item_pack(val, size, &c->bytes[c->n]) : 0;
	c->keys[c->n++] = *key;
	return c->n == DESTROY_BATCH;
}

int czfs_items_delete(struct czfs_fs *fs, const struct czfs_key *first,
		      const struct czfs_key *last, struct czfs_stored *freed)
{
	struct collect_keys *c = malloc(sizeof(*c));
	uint64_t unused = 0;	/* pack blocks count in no inode */
	int ret;

	if (!c)
		return -ENOMEM;
	c->fs = fs;
	c->freed = (struct czfs_stored){ 0 };
	do {
		c->n = 0;
		c->err = 0;
		ret = czfs_btree_iterate(&fs->tree, first, last, collect_key, c);
		for (unsigned i = 0; ret >= 0 && i < c->n; i++)
			ret = czfs_btree_delete(&fs->tree, &c->keys[i]);
		/* not while iterating: a pack's item is in the same tree */
		for (unsigned i = 0; ret >= 0 && i < c->n; i++)
			if (c->packs[i])	/* an underused run: as it is */
				ret = MIN(czfs_pack_unref(fs, c->packs[i],
							  c->bytes[i], &unused), 0);
	} while (ret >= 0 && c->n == DESTROY_BATCH);
	freed->blocks += c->freed.blocks;
	freed->inline_bytes += c->freed.inline_bytes;
	freed->prealloc += c->freed.prealloc;
	free(c);
	return ret < 0 ? ret : 0;
}
