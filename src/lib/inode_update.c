// SPDX-License-Identifier: MIT
/* Inodes: store, create, destroy, orphans (in a transaction). */
#include "config.h"

#include <stdlib.h>

#include "btree.h"
#include "cluster.h"
#include "fs.h"
#include "inode.h"
#include "log.h"
#include "pack.h"
#include "util.h"
#include "xattr.h"

/* Write ii as the INODE item of ii->ino through op (put or insert). */
static int inode_write(struct czfs_fs *fs, const struct czfs_inode_info *ii,
		       int (*op)(struct czfs_btree *t, const struct czfs_key *key,
				 const void *data, unsigned size))
{
	struct czfs_key key = { ii->ino, CZFS_ITEM_INODE, 0 };
	struct czfs_inode di;

	czfs_inode_encode(ii, &di);
	return op(&fs->tree, &key, &di, sizeof(di));
}

int czfs_inode_store(struct czfs_fs *fs, const struct czfs_inode_info *ii)
{
	return inode_write(fs, ii, czfs_btree_put);
}

int czfs_inode_insert(struct czfs_fs *fs, const struct czfs_inode_info *ii)
{
	return inode_write(fs, ii, czfs_btree_insert);
}

int czfs_inode_create(struct czfs_fs *fs, struct czfs_inode_info *ii)
{
	int err;

	if (fs->cp.next_ino > CZFS_MAX_INO)
		return -ENOSPC;
	ii->ino = fs->cp.next_ino;
	ii->generation = fs->cp.generation;
	err = czfs_inode_store(fs, ii);
	if (err)
		return err;
	fs->cp.next_ino++;
	fs->cp.inode_count++;
	return 0;
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

int czfs_inode_destroy(struct czfs_fs *fs, uint64_t ino)
{
	struct czfs_key first = { ino, 0, 0 };
	struct czfs_key last = { ino, 0xff, CZFS_KEY_OFFSET_MASK };
	struct czfs_stored freed = { 0 };
	int err;

	err = czfs_items_delete(fs, &first, &last, &freed);
	if (!err && fs->cp.inode_count)
		fs->cp.inode_count--;
	return err;
}

int czfs_orphan_add(struct czfs_fs *fs, uint64_t ino)
{
	struct czfs_key key = { CZFS_ORPHAN_OBJECTID, CZFS_ITEM_ORPHAN, ino };

	return czfs_btree_put(&fs->tree, &key, NULL, 0);
}

int czfs_orphan_del(struct czfs_fs *fs, uint64_t ino)
{
	struct czfs_key key = { CZFS_ORPHAN_OBJECTID, CZFS_ITEM_ORPHAN, ino };
	int err = czfs_btree_delete(&fs->tree, &key);

	return err == -ENOENT ? 0 : err;
}

#define REAP_BATCH	64

struct reap_ctx {
	uint64_t inos[REAP_BATCH];
	unsigned n;
};

static int collect_orphan(void *arg, const struct czfs_key *key,
			  const void *val, unsigned size)
{
	struct reap_ctx *rc = arg;

	rc->inos[rc->n++] = key->offset;
	return rc->n == REAP_BATCH;
}

int czfs_orphans_reap(struct czfs_fs *fs, unsigned *count)
{
	struct czfs_key first = { CZFS_ORPHAN_OBJECTID, CZFS_ITEM_ORPHAN, 0 };
	struct czfs_key last = { CZFS_ORPHAN_OBJECTID, CZFS_ITEM_ORPHAN,
				 CZFS_KEY_OFFSET_MASK };
	struct reap_ctx rc;
	int err;

	*count = 0;
	do {
		rc.n = 0;
		err = czfs_btree_iterate(&fs->tree, &first, &last, collect_orphan, &rc);
		for (unsigned i = 0; err >= 0 && i < rc.n; i++) {
			err = czfs_orphan_del(fs, rc.inos[i]);
			if (!err)
				err = czfs_inode_destroy(fs, rc.inos[i]);
			if (err == -ENOENT)	/* gone already */
				err = 0;
			(*count)++;
		}
	} while (err >= 0 && rc.n == REAP_BATCH);
	return err < 0 ? err : 0;
}
