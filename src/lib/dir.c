// SPDX-License-Identifier: MIT
/* Directory entries: record codec, hashed lookup, readdir in hash order. */
#include "config.h"

#include "btree.h"
#include "czfs_fs.h"
#include "dir.h"
#include "fs.h"
#include "hash.h"
#include "log.h"
#include "util.h"

int czfs_dentry_next(const void *val, unsigned len, unsigned *pos,
		     struct czfs_dirent *de)
{
	struct czfs_dentry d;

	if (*pos == len)
		return 0;
	if (len - *pos < sizeof(d))
		goto bad;
	memcpy(&d, (const char *)val + *pos, sizeof(d));
	de->ino = le64_to_cpu(d.ino);
	de->name_len = le16_to_cpu(d.name_len);
	de->type = d.type;
	de->name = (const char *)val + *pos + sizeof(d);
	if (de->name_len < 1 || de->name_len > CZFS_NAME_MAX ||
	    de->name_len > len - *pos - sizeof(d) ||
	    de->ino < CZFS_ROOT_INO || de->ino > CZFS_MAX_INO || de->type > 15 ||
	    memchr(de->name, '/', de->name_len) || memchr(de->name, 0, de->name_len))
		goto bad;
	*pos += sizeof(d) + de->name_len;
	return 1;
bad:
	czfs_err("malformed directory entry at byte %u of %u", *pos, len);
	return -EFSCORRUPTED;
}

static int dentry_rec_next(const void *val, unsigned size, unsigned *pos,
			   void *rec)
{
	return czfs_dentry_next(val, size, pos, rec);
}

static void dentry_rec_name(const void *rec, const char **name, unsigned *len)
{
	const struct czfs_dirent *de = rec;

	*name = de->name;
	*len = de->name_len;
}

const struct czfs_rec_kind czfs_dentry_recs = {
	dentry_rec_next, dentry_rec_name
};

unsigned czfs_dentry_encode(void *dst, uint64_t ino, unsigned type,
			    const char *name, unsigned name_len)
{
	struct czfs_dentry d = {
		.ino = cpu_to_le64(ino),
		.name_len = cpu_to_le16((uint16_t)name_len),
		.type = (uint8_t)type,
	};

	memcpy(dst, &d, sizeof(d));
	memcpy((char *)dst + sizeof(d), name, name_len);
	return (unsigned)sizeof(d) + name_len;
}

struct lookup_ctx {
	const char *name;
	size_t name_len;
	uint64_t ino;
	unsigned type;
};

static int lookup_item(void *arg, const struct czfs_key *key, const void *val,
		       unsigned size)
{
	struct lookup_ctx *lc = arg;
	struct czfs_dirent de;
	unsigned at, end;
	int ret = czfs_rec_find(&czfs_dentry_recs, val, size, lc->name,
				lc->name_len, &de, &at, &end);

	if (ret > 0) {
		lc->ino = de.ino;
		lc->type = de.type;
	}
	return ret;
}

int czfs_dir_lookup(struct czfs_fs *fs, uint64_t dir, const char *name,
		    size_t name_len, uint64_t *ino, unsigned *type)
{
	struct lookup_ctx lc = { .name = name, .name_len = name_len };
	struct czfs_key key = { dir, CZFS_ITEM_DENTRY, 0 };
	int ret;

	if (name_len > CZFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (!name_len)
		return -ENOENT;
	key.offset = czfs_name_hash(fs->sb.hash_seed, name, name_len);
	ret = czfs_btree_iterate(&fs->tree, &key, &key, lookup_item, &lc);
	if (ret < 0)
		return ret;
	if (!ret)
		return -ENOENT;
	*ino = lc.ino;
	*type = lc.type;
	return 0;
}

/* Cookie of the position of record idx in the item for hash. */
static uint64_t dir_cookie(uint64_t hash, unsigned idx)
{
	return ((hash + 1) << 8) | idx;
}

struct iter_ctx {
	uint64_t start_hash;
	unsigned start_idx;
	czfs_filldir_fn fn;
	void *ctx;
};

static int iterate_item(void *arg, const struct czfs_key *key, const void *val,
			unsigned size)
{
	struct iter_ctx *ic = arg;
	struct czfs_dirent de;
	unsigned pos = 0, idx = 0;
	int ret;

	while ((ret = czfs_dentry_next(val, size, &pos, &de)) > 0) {
		if (key->offset == ic->start_hash && idx < ic->start_idx) {
			idx++;
			continue;
		}
		if (idx >= 255)
			return -EFSCORRUPTED;	/* cookie cannot encode it */
		if (ic->fn(ic->ctx, &de, dir_cookie(key->offset, idx + 1)))
			return 1;
		idx++;
	}
	return ret;
}

int czfs_dir_iterate(struct czfs_fs *fs, uint64_t dir, uint64_t cookie,
		     czfs_filldir_fn fn, void *ctx)
{
	struct iter_ctx ic = { .fn = fn, .ctx = ctx };
	struct czfs_key first = { dir, CZFS_ITEM_DENTRY, 0 };
	struct czfs_key last = { dir, CZFS_ITEM_DENTRY, CZFS_KEY_OFFSET_MASK };
	int ret;

	if (cookie >= CZFS_DIR_COOKIE_FIRST) {
		if ((cookie >> 8) == 0 || (cookie >> 8) - 1 > CZFS_KEY_OFFSET_MASK)
			return -EINVAL;
		ic.start_hash = (cookie >> 8) - 1;
		ic.start_idx = cookie & 0xff;
		first.offset = ic.start_hash;
	}
	ret = czfs_btree_iterate(&fs->tree, &first, &last, iterate_item, &ic);
	return ret < 0 ? ret : 0;
}
