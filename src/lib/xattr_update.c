// SPDX-License-Identifier: MIT
/* Extended attributes: set and remove (in a transaction). */
#include "config.h"

#include <stdlib.h>
#include <sys/xattr.h>

#include "bdev.h"
#include "btree.h"
#include "crc32c.h"
#include "fs.h"
#include "hash.h"
#include "inode.h"
#include "util.h"
#include "xattr.h"

/* Remove name's record from val (size *n); sets *found, frees its blocks. */
static int drop_record(struct czfs_fs *fs, const struct czfs_key *key,
		       uint8_t *val, unsigned *n, const char *name, size_t len,
		       bool *found, uint64_t *freed)
{
	unsigned at, end;
	struct czfs_xattr x;
	uint64_t blocks;
	int ret = czfs_rec_find(&czfs_xattr_recs, val, *n, name, len, &x, &at,
				&end);

	*found = ret > 0;
	if (ret <= 0)
		return ret;
	blocks = DIV_ROUND_UP(x.value_len, CZFS_BLOCK_SIZE);
	if (x.blkaddr && blocks) {
		czfs_smap_free(&fs->smap, x.blkaddr, blocks);
		*freed += blocks;
	}
	memmove(val + at, val + end, *n - end);
	*n -= end - at;
	return 0;
}

/* Store a large value in its own blocks: 0 with *blkaddr and *crc. */
static int write_value(struct czfs_fs *fs, const void *value, size_t size,
		       uint64_t *blkaddr, uint32_t *crc)
{
	size_t blocks = DIV_ROUND_UP(size, CZFS_BLOCK_SIZE);
	void *buf;
	int err;

	if (posix_memalign(&buf, CZFS_BLOCK_SIZE, blocks * CZFS_BLOCK_SIZE))
		return -ENOMEM;
	memset(buf, 0, blocks * CZFS_BLOCK_SIZE);
	memcpy(buf, value, size);
	*crc = czfs_crc32c(0, value, size);
	err = czfs_smap_alloc(&fs->smap, blocks, blkaddr);
	if (err)
		goto out;
	err = czfs_bdev_write(fs->bdev, buf, blocks * CZFS_BLOCK_SIZE,
			      *blkaddr * CZFS_BLOCK_SIZE);
	if (err)
		czfs_smap_free(&fs->smap, *blkaddr, blocks);
out:
	free(buf);
	return err;
}

int czfs_xattr_set(struct czfs_fs *fs, uint64_t ino, const char *name,
		   const void *value, size_t size, int flags, int64_t *blocks_delta)
{
	uint8_t val[CZFS_MAX_ITEM_SIZE];
	size_t len = strlen(name);
	struct czfs_key key = { ino, CZFS_ITEM_XATTR, 0 };
	uint64_t freed = 0, blkaddr = 0;
	uint32_t crc = 0;
	bool found;
	int n, err;

	if (!czfs_xattr_name_ok(name, len))
		return len > CZFS_XATTR_NAME_MAX ? -ERANGE : -EOPNOTSUPP;
	if (size > CZFS_XATTR_SIZE_MAX)
		return -E2BIG;
	key.offset = czfs_name_hash(fs->sb.hash_seed, name, len);
	n = czfs_btree_lookup(&fs->tree, &key, val, sizeof(val));
	if (n == -ENOENT)
		n = 0;
	if (n < 0 || n > (int)sizeof(val))
		return n < 0 ? n : -EFSCORRUPTED;
	err = drop_record(fs, &key, val, (unsigned *)&n, name, len, &found, &freed);
	if (err)
		return err;
	if ((flags & XATTR_CREATE) && found)
		return -EEXIST;
	if ((flags & XATTR_REPLACE) && !found)
		return -ENODATA;
	if (n + sizeof(struct czfs_xattr_entry) + len +
	    MIN(size, (size_t)CZFS_XATTR_INLINE_MAX) > CZFS_MAX_ITEM_SIZE)
		return -ENOSPC;
	if (size > CZFS_XATTR_INLINE_MAX) {
		err = write_value(fs, value, size, &blkaddr, &crc);
		if (err)
			return err;
		*blocks_delta += (int64_t)DIV_ROUND_UP(size, CZFS_BLOCK_SIZE);
	}
	*blocks_delta -= (int64_t)freed;
	n += (int)czfs_xattr_encode(val + n, name, (unsigned)len, value,
				    (uint32_t)size, blkaddr, crc);
	return czfs_btree_put(&fs->tree, &key, val, (unsigned)n);
}

int czfs_xattr_remove(struct czfs_fs *fs, uint64_t ino, const char *name,
		      int64_t *blocks_delta)
{
	uint8_t val[CZFS_MAX_ITEM_SIZE];
	size_t len = strlen(name);
	struct czfs_key key = { ino, CZFS_ITEM_XATTR, 0 };
	uint64_t freed = 0;
	bool found;
	int n, err;

	if (len > CZFS_XATTR_NAME_MAX)
		return -ERANGE;
	key.offset = czfs_name_hash(fs->sb.hash_seed, name, len);
	n = czfs_btree_lookup(&fs->tree, &key, val, sizeof(val));
	if (n < 0)
		return n == -ENOENT ? -ENODATA : n;
	if (n > (int)sizeof(val))
		return -EFSCORRUPTED;
	err = drop_record(fs, &key, val, (unsigned *)&n, name, len, &found, &freed);
	if (err)
		return err;
	if (!found)
		return -ENODATA;
	*blocks_delta -= (int64_t)freed;
	if (!n)
		return czfs_btree_delete(&fs->tree, &key);
	return czfs_btree_put(&fs->tree, &key, val, (unsigned)n);
}
