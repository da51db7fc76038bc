// SPDX-License-Identifier: MIT
/* Directory entries: add and remove names (in a transaction). */
#include "config.h"

#include "btree.h"
#include "dir.h"
#include "fs.h"
#include "hash.h"
#include "log.h"
#include "util.h"

/* The DENTRY item for name: its key and value (size, or -ENOENT). */
static int dentry_item(struct czfs_fs *fs, uint64_t dir, const char *name,
		       size_t len, struct czfs_key *key, uint8_t *val)
{
	int n;

	*key = (struct czfs_key){ dir, CZFS_ITEM_DENTRY,
				  czfs_name_hash(fs->sb.hash_seed, name, len) };
	n = czfs_btree_lookup(&fs->tree, key, val, CZFS_MAX_ITEM_SIZE);
	if (n > (int)CZFS_MAX_ITEM_SIZE)
		return -EFSCORRUPTED;
	return n;
}

/* Offset and size of name's record in val, or -ENOENT. */
static int find_record(const uint8_t *val, unsigned size, const char *name,
		       size_t len, unsigned *at, unsigned *rec_len,
		       struct czfs_dirent *found)
{
	unsigned pos = 0, start = 0;
	int ret;

	while ((ret = czfs_dentry_next(val, size, &pos, found)) > 0) {
		if (found->name_len == len && !memcmp(found->name, name, len)) {
			*at = start;
			*rec_len = pos - start;
			return 0;
		}
		start = pos;
	}
	return ret < 0 ? ret : -ENOENT;
}

int czfs_dir_link(struct czfs_fs *fs, uint64_t dir, const char *name,
		  size_t len, uint64_t ino, unsigned type)
{
	uint8_t val[CZFS_MAX_ITEM_SIZE];
	struct czfs_dirent de;
	struct czfs_key key;
	unsigned at, rl;
	int n, err;

	if (len > CZFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (!len || memchr(name, '/', len) || memchr(name, 0, len))
		return -EINVAL;
	n = dentry_item(fs, dir, name, len, &key, val);
	if (n == -ENOENT)
		n = 0;
	if (n < 0)
		return n;
	err = find_record(val, (unsigned)n, name, len, &at, &rl, &de);
	if (!err)
		return -EEXIST;
	if (err != -ENOENT)
		return err;
	if (n + sizeof(struct czfs_dentry) + len > CZFS_MAX_ITEM_SIZE)
		return -ENOSPC;		/* names colliding by the hundred */
	n += (int)czfs_dentry_encode(val + n, ino, type, name, (unsigned)len);
	return czfs_btree_put(&fs->tree, &key, val, (unsigned)n);
}

int czfs_dir_unlink(struct czfs_fs *fs, uint64_t dir, const char *name,
		    size_t len, uint64_t *ino, unsigned *type)
{
	uint8_t val[CZFS_MAX_ITEM_SIZE];
	struct czfs_dirent de;
	struct czfs_key key;
	unsigned at, rl;
	int n, err;

	if (len > CZFS_NAME_MAX)
		return -ENAMETOOLONG;
	n = dentry_item(fs, dir, name, len, &key, val);
	if (n < 0)
		return n;
	err = find_record(val, (unsigned)n, name, len, &at, &rl, &de);
	if (err)
		return err;
	*ino = de.ino;
	*type = de.type;
	memmove(val + at, val + at + rl, (size_t)n - at - rl);
	n -= (int)rl;
	if (!n)
		return czfs_btree_delete(&fs->tree, &key);
	return czfs_btree_put(&fs->tree, &key, val, (unsigned)n);
}

static int first_entry(void *arg, const struct czfs_key *key, const void *val,
		       unsigned size)
{
	return 1;
}

int czfs_dir_is_empty(struct czfs_fs *fs, uint64_t dir)
{
	struct czfs_key first = { dir, CZFS_ITEM_DENTRY, 0 };
	struct czfs_key last = { dir, CZFS_ITEM_DENTRY, CZFS_KEY_OFFSET_MASK };
	int ret = czfs_btree_iterate(&fs->tree, &first, &last, first_entry, NULL);

	return ret < 0 ? ret : !ret;
}
