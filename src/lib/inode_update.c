// SPDX-License-Identifier: MIT
/* Inodes: store, create, destroy, orphans (in a transaction). */
#include "config.h"

#include <stdlib.h>

#include "btree.h"
#include "cluster.h"
#include "fs.h"
#include "inode.h"
#include "item_free.h"
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
