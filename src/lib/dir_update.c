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
	unsigned end;
	int ret = czfs_rec_find(&czfs_dentry_recs, val, size, name, len, found,
				at, &end);

	if (ret > 0)
		*rec_len = end - *at;
	return ret > 0 ? 0 : ret < 0 ? ret : -ENOENT;
}

/* Where a name's record is: its item, the record's place in the value. */
struct dentry_at {
	struct czfs_key key;
	unsigned size;			/* of the item value (0: no item) */
	unsigned at, rec_len;		/* of name's record in it */
	struct czfs_dirent de;
};

/* name's DENTRY item into val and its record: 0, -ENOENT or -errno. */
static int name_record(struct czfs_fs *fs, uint64_t dir, const char *name,
		       size_t len, uint8_t *val, struct dentry_at *d)
{
	int n;

	if (len > CZFS_NAME_MAX)
		return -ENAMETOOLONG;
	n = dentry_item(fs, dir, name, len, &d->key, val);
	if (n == -ENOENT)
		n = 0;
	if (n < 0)
		return n;
	d->size = (unsigned)n;
	return find_record(val, d->size, name, len, &d->at, &d->rec_len, &d->de);
}

int czfs_dir_link(struct czfs_fs *fs, uint64_t dir, const char *name,
		  size_t len, uint64_t ino, unsigned type)
{
	uint8_t val[CZFS_MAX_ITEM_SIZE];
	struct dentry_at d;
	unsigned n;
	int err;

	if (len > CZFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (!len || memchr(name, '/', len) || memchr(name, 0, len))
		return -EINVAL;
	err = name_record(fs, dir, name, len, val, &d);
	if (!err)
		return -EEXIST;
	if (err != -ENOENT)
		return err;
	n = d.size;
	if (n + sizeof(struct czfs_dentry) + len > CZFS_MAX_ITEM_SIZE)
		return -ENOSPC;		/* names colliding by the hundred */
	n += czfs_dentry_encode(val + n, ino, type, name, (unsigned)len);
	return czfs_btree_put(&fs->tree, &d.key, val, n);
}

int czfs_dir_unlink(struct czfs_fs *fs, uint64_t dir, const char *name,
		    size_t len, uint64_t *ino, unsigned *type)
{
	uint8_t val[CZFS_MAX_ITEM_SIZE];
	struct dentry_at d;
	unsigned n;
	int err = name_record(fs, dir, name, len, val, &d);

	if (err)
		return err;
	*ino = d.de.ino;
	*type = d.de.type;
	memmove(val + d.at, val + d.at + d.rec_len, d.size - d.at - d.rec_len);
	n = d.size - d.rec_len;
	if (!n)
		return czfs_btree_delete(&fs->tree, &d.key);
	return czfs_btree_put(&fs->tree, &d.key, val, n);
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
