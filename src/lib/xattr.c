// SPDX-License-Identifier: MIT
/* Extended attributes: record codec, getxattr and listxattr. */
#include "config.h"

#include <stdlib.h>

#include "bdev.h"
#include "btree.h"
#include "crc32c.h"
#include "fs.h"
#include "hash.h"
#include "log.h"
#include "util.h"
#include "xattr.h"

static int xattr_bad(unsigned pos, unsigned len)
{
	czfs_err("malformed xattr record at byte %u of %u", pos, len);
	return -EFSCORRUPTED;
}

int czfs_xattr_next(const void *val, unsigned len, unsigned *pos,
		    struct czfs_xattr *x)
{
	const char *p = (const char *)val + *pos;
	struct czfs_xattr_entry e;
	struct czfs_xattr_extent ext;
	unsigned left = len - *pos, need;

	if (*pos == len)
		return 0;
	if (left < sizeof(e))
		return xattr_bad(*pos, len);
	memcpy(&e, p, sizeof(e));
	x->name_len = e.name_len;
	x->value_len = le32_to_cpu(e.value_len);
	x->name = p + sizeof(e);
	if (e.flags & ~CZFS_XATTR_EXTERNAL || !x->name_len ||
	    x->value_len > CZFS_XATTR_SIZE_MAX)
		return xattr_bad(*pos, len);
	if (e.flags & CZFS_XATTR_EXTERNAL) {
		need = sizeof(e) + x->name_len + sizeof(ext);
		if (left < need)
			return xattr_bad(*pos, len);
		memcpy(&ext, x->name + x->name_len, sizeof(ext));
		x->value = NULL;
		x->blkaddr = le64_to_cpu(ext.blkaddr);
		x->checksum = le32_to_cpu(ext.checksum);
		if (x->blkaddr < CZFS_FIRST_DATA_BLKADDR)
			return xattr_bad(*pos, len);
	} else {
		need = sizeof(e) + x->name_len + x->value_len;
		if (left < need || x->value_len > CZFS_XATTR_INLINE_MAX)
			return xattr_bad(*pos, len);
		x->value = x->name + x->name_len;
		x->blkaddr = 0;
		x->checksum = 0;
	}
	*pos += need;
	return 1;
}

static int xattr_rec_next(const void *val, unsigned size, unsigned *pos,
			  void *rec)
{
	return czfs_xattr_next(val, size, pos, rec);
}

static void xattr_rec_name(const void *rec, const char **name, unsigned *len)
{
	const struct czfs_xattr *x = rec;

	*name = x->name;
	*len = x->name_len;
}

const struct czfs_rec_kind czfs_xattr_recs = {
	xattr_rec_next, xattr_rec_name
};

unsigned czfs_xattr_encode(void *dst, const char *name, unsigned name_len,
			   const void *value, uint32_t value_len,
			   uint64_t blkaddr, uint32_t checksum)
{
	struct czfs_xattr_entry e = {
		.name_len = (uint8_t)name_len,
		.value_len = cpu_to_le32(value_len),
	};
	char *p = dst;

	if (blkaddr || value_len > CZFS_XATTR_INLINE_MAX)
		e.flags = CZFS_XATTR_EXTERNAL;
	memcpy(p, &e, sizeof(e));
	memcpy(p + sizeof(e), name, name_len);
	p += sizeof(e) + name_len;
	if (e.flags & CZFS_XATTR_EXTERNAL) {
		struct czfs_xattr_extent ext = {
			.blkaddr = cpu_to_le64(blkaddr),
			.checksum = cpu_to_le32(checksum),
		};

		memcpy(p, &ext, sizeof(ext));
		p += sizeof(ext);
	} else {
		memcpy(p, value, value_len);
		p += value_len;
	}
	return (unsigned)(p - (char *)dst);
}

int czfs_xattr_name_ok(const char *name, size_t len)
{
	static const char *const prefixes[] = {
		"user.", "trusted.", "security.", "system.",
	};

	if (len > CZFS_XATTR_NAME_MAX)
		return 0;
	for (unsigned i = 0; i < ARRAY_SIZE(prefixes); i++) {
		size_t pl = strlen(prefixes[i]);

		if (len > pl && !strncmp(name, prefixes[i], pl))
			return 1;
	}
	return 0;
}

/* Read an external value into buf (value_len bytes) and verify it. */
static int xattr_read_external(struct czfs_fs *fs, const struct czfs_xattr *x,
			       void *buf)
{
	size_t blocks = DIV_ROUND_UP(x->value_len, CZFS_BLOCK_SIZE);
	void *tmp;
	int err;

	if (!x->value_len)
		return 0;
	if (x->blkaddr + blocks > fs->cp.max_blocks)
		return -EFSCORRUPTED;
	if (posix_memalign(&tmp, CZFS_BLOCK_SIZE, blocks * CZFS_BLOCK_SIZE))
		return -ENOMEM;
	err = czfs_bdev_read(fs->bdev, tmp, blocks * CZFS_BLOCK_SIZE,
			     x->blkaddr * CZFS_BLOCK_SIZE);
	if (!err && czfs_crc32c(0, tmp, x->value_len) != x->checksum) {
		czfs_err("xattr value at block %llu: checksum mismatch",
			 (unsigned long long)x->blkaddr);
		err = -EFSCORRUPTED;
	}
	if (!err)
		memcpy(buf, tmp, x->value_len);
	free(tmp);
	return err;
}

struct get_ctx {
	struct czfs_fs *fs;
	const char *name;
	size_t name_len;
	void *buf;
	size_t size;
	int ret;
};

static int get_item(void *arg, const struct czfs_key *key, const void *val,
		    unsigned size)
{
	struct get_ctx *gc = arg;
	struct czfs_xattr x;
	unsigned at, end;
	int ret = czfs_rec_find(&czfs_xattr_recs, val, size, gc->name,
				gc->name_len, &x, &at, &end);

	if (ret <= 0)
		return ret;
	if (!gc->size)
		gc->ret = (int)x.value_len;
	else if (gc->size < x.value_len)
		gc->ret = -ERANGE;
	else if (x.value)
		gc->ret = (memcpy(gc->buf, x.value, x.value_len),
			   (int)x.value_len);
	else
		gc->ret = xattr_read_external(gc->fs, &x, gc->buf) ?:
			  (int)x.value_len;
	return 1;
}

int czfs_xattr_get(struct czfs_fs *fs, uint64_t ino, const char *name,
		   void *buf, size_t size)
{
	struct get_ctx gc = { fs, name, strlen(name), buf, size, -ENODATA };
	struct czfs_key key = { ino, CZFS_ITEM_XATTR, 0 };
	int ret;

	if (gc.name_len > CZFS_XATTR_NAME_MAX)
		return -ERANGE;
	key.offset = czfs_name_hash(fs->sb.hash_seed, name, gc.name_len);
	ret = czfs_btree_iterate(&fs->tree, &key, &key, get_item, &gc);
	return ret < 0 ? ret : gc.ret;
}

struct list_ctx {
	char *buf;
	size_t size;
	size_t len;
};

static int list_item(void *arg, const struct czfs_key *key, const void *val,
		     unsigned size)
{
	struct list_ctx *lc = arg;
	struct czfs_xattr x;
	unsigned pos = 0;
	int ret;

	while ((ret = czfs_xattr_next(val, size, &pos, &x)) > 0) {
		if (lc->size && lc->len + x.name_len + 1 > lc->size)
			return -ERANGE;
		if (lc->size) {
			memcpy(lc->buf + lc->len, x.name, x.name_len);
			lc->buf[lc->len + x.name_len] = '\0';
		}
		lc->len += x.name_len + 1;
	}
	return ret;
}

int czfs_xattr_list(struct czfs_fs *fs, uint64_t ino, char *buf, size_t size)
{
	struct list_ctx lc = { buf, size, 0 };
	struct czfs_key first = { ino, CZFS_ITEM_XATTR, 0 };
	struct czfs_key last = { ino, CZFS_ITEM_XATTR, CZFS_KEY_OFFSET_MASK };
	int ret;

	ret = czfs_btree_iterate(&fs->tree, &first, &last, list_item, &lc);
	if (ret < 0)
		return ret;
	return lc.len > INT32_MAX ? -E2BIG : (int)lc.len;
}
