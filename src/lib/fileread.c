// SPDX-License-Identifier: MIT
/* File data: find a cluster, read its blocks, decode it. */
#include "config.h"

#include <stddef.h>
#include <stdlib.h>

#include "bdev.h"
#include "cluster.h"
#include "fs.h"
#include "inode.h"
#include "log.h"
#include "util.h"

static int bad_item(const struct czfs_inode_info *ii, uint64_t idx)
{
	czfs_err("inode %llu: bad cluster item %llu",
		 (unsigned long long)ii->ino, (unsigned long long)idx);
	return -EFSCORRUPTED;
}

/* The item of cluster idx (val, len bytes) into *ci, its inline payload
 * copied to inl: 0 or -EFSCORRUPTED, named in the log. */
static int item_take(const struct czfs_fs *fs, const struct czfs_inode_info *ii,
		     uint64_t idx, const void *val, unsigned len,
		     struct czfs_cluster_info *ci, void *inl)
{
	if (czfs_cluster_item_decode(val, len, czfs_inode_cluster_bytes(ii),
				     fs->cp.max_blocks, ci))
		return bad_item(ii, idx);
	if (ci->kind == CZFS_CLUSTER_RESERVED)
		ci->kind = CZFS_CLUSTER_HOLE;	/* reads as one; prealloc says */
	if (ci->inline_len) {
		memcpy(inl, ci->inline_data, ci->inline_len);
		ci->inline_data = inl;
	}
	return 0;
}

struct range {
	struct czfs_fs *fs;
	const struct czfs_inode_info *ii;
	uint64_t first;
	struct czfs_cluster_info *ci;
	uint8_t *inl;
};

static int range_item(void *arg, const struct czfs_key *key, const void *val,
		      unsigned size)
{
	struct range *r = arg;
	unsigned i = (unsigned)(key->offset - r->first);

	return item_take(r->fs, r->ii, key->offset, val, size, &r->ci[i],
			 r->inl + (size_t)i * CZFS_INLINE_MAX);
}

struct scan {
	unsigned kind, left;
	struct czfs_key *next;
	int (*fn)(void *ctx, uint64_t ino, uint64_t idx);
	void *ctx;
};

static int scan_item(void *arg, const struct czfs_key *key, const void *val,
		     unsigned size)
{
	struct scan *s = arg;

	if (!s->left) {			/* go on from here next time */
		*s->next = *key;
		return 1;
	}
	s->left--;
	/* (item data is unaligned: the kind byte read as a byte) */
	if (key->type == CZFS_ITEM_CLUSTER && size >= sizeof(struct czfs_cluster) &&
	    ((const uint8_t *)val)[offsetof(struct czfs_cluster, kind)] == s->kind)
		return s->fn(s->ctx, key->objectid, key->offset);
	return 0;
}

int czfs_cluster_scan(struct czfs_fs *fs, unsigned kind,
		      struct czfs_key *next, unsigned max,
		      int (*fn)(void *ctx, uint64_t ino, uint64_t idx),
		      void *ctx)
{
	static const struct czfs_key last = { UINT64_MAX, UINT8_MAX, CZFS_KEY_OFFSET_MASK };
	struct scan s = { kind, max, next, fn, ctx };
	int ret = czfs_btree_iterate(&fs->tree, next, &last, scan_item, &s);

	if (ret < 0)
		return ret;
	return ret == 0;		/* 0: the end; 1: stopped at max */
}

int czfs_cluster_lookup(struct czfs_fs *fs, const struct czfs_inode_info *ii,
			uint64_t first, unsigned n, struct czfs_cluster_info *ci,
			void *inl)
{
	struct czfs_key lo = { ii->ino, CZFS_ITEM_CLUSTER, first };
	struct czfs_key hi = { ii->ino, CZFS_ITEM_CLUSTER, first + n - 1 };
	uint8_t val[sizeof(struct czfs_cluster) + CZFS_INLINE_MAX];
	struct range r = { fs, ii, first, ci, inl };
	int len;

	memset(ci, 0, sizeof(*ci) * n);		/* CZFS_CLUSTER_HOLE */
	if (n > 1) {		/* one walk of the tree for the range */
		len = czfs_btree_iterate(&fs->tree, &lo, &hi, range_item, &r);
		return len < 0 ? len : 0;
	}
	len = czfs_btree_lookup(&fs->tree, &lo, val, sizeof(val));
	if (len == -ENOENT)
		return 0;
	if (len < 0)
		return len;
	if ((unsigned)len > sizeof(val))	/* more than val could hold */
		return bad_item(ii, first);
	return item_take(fs, ii, first, val, (unsigned)len, ci, inl);
}

/* A BLOCKMAP cluster's stored blocks, block i at i * 4 KiB of scratch. */
static int read_blockmap(struct czfs_fs *fs, const struct czfs_cluster_info *ci,
			 void *scratch)
{
	for (unsigned i = 0; i < czfs_blockmap_entries(ci); i++) {
		uint64_t a;
		uint32_t crc;
		int err;

		czfs_blockmap_get(ci, i, &a, &crc);
		if (!a)
			continue;
		err = czfs_bdev_read(fs->bdev, (char *)scratch + (size_t)i * CZFS_BLOCK_SIZE,
				     CZFS_BLOCK_SIZE, a * CZFS_BLOCK_SIZE);
		if (err) {
			czfs_err("read error at block %llu: %s",
				 (unsigned long long)a, strerror(-err));
			return -EIO;
		}
	}
	return 0;
}

int czfs_cluster_read(struct czfs_fs *fs, struct czfs_codec *codec,
		      const struct czfs_cluster_info *ci, void *scratch,
		      void *dst, unsigned dst_len)
{
	int err;

	switch (ci->kind) {
	case CZFS_CLUSTER_HOLE:
		memset(dst, 0, dst_len);
		return 0;
	case CZFS_CLUSTER_RAW:
	case CZFS_CLUSTER_COMPRESSED:
	case CZFS_CLUSTER_PACKED:
	case CZFS_CLUSTER_SLICE:
		err = czfs_bdev_read(fs->bdev, scratch,
				     (size_t)ci->nblocks * CZFS_BLOCK_SIZE,
				     ci->blkaddr * CZFS_BLOCK_SIZE);
		if (err) {
			czfs_err("read error at block %llu: %s",
				 (unsigned long long)ci->blkaddr, strerror(-err));
			return -EIO;
		}
		break;
	case CZFS_CLUSTER_BLOCKMAP:
		err = read_blockmap(fs, ci, scratch);
		if (err)
			return err;
		break;
	default:
		break;
	}
	err = czfs_cluster_decode(codec, ci, scratch, dst, dst_len);
	if (err == -EFSCORRUPTED)
		czfs_err("cluster at block %llu is damaged",
			 (unsigned long long)ci->blkaddr);
	return err;
}

long czfs_file_pread(struct czfs_fs *fs, struct czfs_codec *codec,
		     const struct czfs_inode_info *ii, void *buf, size_t len,
		     uint64_t off)
{
	uint32_t cbytes = czfs_inode_cluster_bytes(ii);
	uint8_t inl[CZFS_INLINE_MAX];
	struct czfs_cluster_info ci;
	void *scratch = NULL, *data = NULL;
	size_t done = 0;
	long ret = 0;

	if (off >= ii->size)
		return 0;
	len = MIN(len, ii->size - off);
	if (posix_memalign(&scratch, CZFS_BLOCK_SIZE, CZFS_MAX_CLUSTER_SIZE) ||
	    posix_memalign(&data, CZFS_BLOCK_SIZE, CZFS_MAX_CLUSTER_SIZE)) {
		ret = -ENOMEM;
		goto out;
	}
	while (done < len) {
		uint64_t pos = off + done, idx = pos / cbytes;
		uint64_t start = idx * cbytes;
		unsigned clen = (unsigned)MIN((uint64_t)cbytes, ii->size - start);
		size_t n = MIN(len - done, start + clen - pos);

		pthread_rwlock_rdlock(&fs->lock);
		ret = czfs_cluster_lookup(fs, ii, idx, 1, &ci, inl);
		pthread_rwlock_unlock(&fs->lock);
		if (!ret)
			ret = czfs_cluster_read(fs, codec, &ci, scratch, data, clen);
		if (ret)
			goto out;
		memcpy((char *)buf + done, (char *)data + (pos - start), n);
		done += n;
	}
	ret = (long)done;
out:
	free(scratch);
	free(data);
	return ret;
}
