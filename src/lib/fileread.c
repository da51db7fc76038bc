// SPDX-License-Identifier: MIT
/* File data: find a cluster, read its blocks, decode it. */
#include "config.h"

#include <stdlib.h>

#include "bdev.h"
#include "cluster.h"
#include "fs.h"
#include "inode.h"
#include "log.h"
#include "util.h"

int czfs_cluster_lookup(struct czfs_fs *fs, const struct czfs_inode_info *ii,
			uint64_t idx, struct czfs_cluster_info *ci, void *inl)
{
	struct czfs_key key = { ii->ino, CZFS_ITEM_CLUSTER, idx };
	uint8_t val[sizeof(struct czfs_cluster) + CZFS_INLINE_MAX];
	int len, err;

	len = czfs_btree_lookup(&fs->tree, &key, val, sizeof(val));
	if (len == -ENOENT) {
		memset(ci, 0, sizeof(*ci));
		ci->kind = CZFS_CLUSTER_HOLE;
		return 0;
	}
	if (len < 0)
		return len;
	if ((unsigned)len > sizeof(val))
		goto bad;
	err = czfs_cluster_item_decode(val, (unsigned)len,
				       czfs_inode_cluster_bytes(ii),
				       fs->cp.max_blocks, ci);
	if (err)
		goto bad;
	if (ci->inline_len) {
		memcpy(inl, ci->inline_data, ci->inline_len);
		ci->inline_data = inl;
	}
	return 0;
bad:
	czfs_err("inode %llu: bad cluster item %llu",
		 (unsigned long long)ii->ino, (unsigned long long)idx);
	return -EFSCORRUPTED;
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
		err = czfs_bdev_read(fs->bdev, scratch,
				     (size_t)ci->nblocks * CZFS_BLOCK_SIZE,
				     ci->blkaddr * CZFS_BLOCK_SIZE);
		if (err) {
			czfs_err("read error at block %llu: %s",
				 (unsigned long long)ci->blkaddr, strerror(-err));
			return -EIO;
		}
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
		ret = czfs_cluster_lookup(fs, ii, idx, &ci, inl);
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
