// SPDX-License-Identifier: MIT
/* One inode: its fields, its xattrs, its cluster map, its entries. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bdev.h"
#include "cluster.h"
#include "compress.h"
#include "dir.h"
#include "dump.h"
#include "inode.h"
#include "util.h"
#include "xattr.h"

static void show_fields(struct dump_ctx *d, const struct czfs_inode_info *ii)
{
	struct dout *o = &d->out;

	dout_u64(o, "ino", ii->ino);
	dout_str(o, "type", czfs_inode_type_name(ii->mode));
	dout_oct(o, "mode", ii->mode);
	dout_u64(o, "nlink", ii->nlink);
	dout_u64(o, "uid", ii->uid);
	dout_u64(o, "gid", ii->gid);
	dout_u64(o, "size", ii->size);
	dout_u64(o, "blocks", ii->blocks);
	dout_u64(o, "inline_bytes", ii->inline_bytes);
	dout_u64(o, "prealloc", ii->prealloc);
	dout_time(o, "atime", ii->atime.tv_sec, (uint32_t)ii->atime.tv_nsec);
	dout_time(o, "mtime", ii->mtime.tv_sec, (uint32_t)ii->mtime.tv_nsec);
	dout_time(o, "ctime", ii->ctime.tv_sec, (uint32_t)ii->ctime.tv_nsec);
	dout_time(o, "btime", ii->btime.tv_sec, (uint32_t)ii->btime.tv_nsec);
	if (S_ISCHR(ii->mode) || S_ISBLK(ii->mode)) {
		dout_u64(o, "rdev_major", ii->rdev_major);
		dout_u64(o, "rdev_minor", ii->rdev_minor);
	}
	if (S_ISDIR(ii->mode)) {
		dout_u64(o, "parent", ii->parent);
		dout_u64(o, "nentries", ii->nentries);
	}
	dout_u64(o, "generation", ii->generation);
	dout_hex(o, "flags", ii->flags);
	dout_str(o, "alg", czfs_alg_name((int)ii->alg));
	dout_i64(o, "level", ii->level);
	dout_u64(o, "cluster_size", czfs_inode_cluster_bytes(ii));
}

/* ---- xattrs ------------------------------------------------------------ */

static int show_xattr_item(void *arg, const struct czfs_key *key,
			   const void *val, unsigned size)
{
	struct dump_ctx *d = arg;
	struct czfs_xattr x;
	unsigned pos = 0;
	int ret;

	while ((ret = czfs_xattr_next(val, size, &pos, &x)) > 0) {
		dout_row(&d->out);
		dout_strn(&d->out, "name", x.name, x.name_len);
		dout_u64(&d->out, "size", x.value_len);
		dout_str(&d->out, "stored", x.value ? "inline" : "external");
		if (!x.value) {
			dout_u64(&d->out, "blkaddr", x.blkaddr);
			dout_u64(&d->out, "blocks",
				 DIV_ROUND_UP(x.value_len, CZFS_BLOCK_SIZE));
			dout_hex(&d->out, "checksum", x.checksum);
		}
		dout_row_end(&d->out);
	}
	if (ret < 0)
		d->damage++;
	return 0;
}

static int show_xattrs(struct dump_ctx *d, uint64_t ino)
{
	struct czfs_key first = { ino, CZFS_ITEM_XATTR, 0 };
	struct czfs_key last = { ino, CZFS_ITEM_XATTR, CZFS_KEY_OFFSET_MASK };
	int err;

	dout_arr(&d->out, "xattrs");
	err = czfs_btree_iterate(&d->fs->tree, &first, &last, show_xattr_item, d);
	dout_arr_end(&d->out);
	return err;
}

/* ---- clusters ---------------------------------------------------------- */

struct cluster_walk {
	struct dump_ctx *d;
	const struct czfs_inode_info *ii;
	uint64_t count[CZFS_CLUSTER_SLICE + 1];
	uint64_t damaged;
	void *blk;
};

/* Bytes a cluster occupies where it is stored; 0 if unknown. */
static uint64_t stored_bytes(struct cluster_walk *w,
			     const struct czfs_cluster_info *ci)
{
	struct czfs_cluster_header_info h;

	if (ci->kind == CZFS_CLUSTER_RAW || ci->kind == CZFS_CLUSTER_BLOCKMAP)
		return (uint64_t)ci->nblocks * CZFS_BLOCK_SIZE;
	if (ci->kind == CZFS_CLUSTER_PACKED)	/* its share of the pack */
		return ci->pack_ulen ? (uint64_t)ci->nblocks * CZFS_BLOCK_SIZE *
				       ci->ulen / ci->pack_ulen : 0;
	if (ci->kind == CZFS_CLUSTER_SLICE)	/* its payload in the run */
		return ci->slice_len;
	if (ci->kind != CZFS_CLUSTER_COMPRESSED)
		return ci->inline_len;
	if (czfs_bdev_read(w->d->fs->bdev, w->blk, CZFS_BLOCK_SIZE,
			   ci->blkaddr * CZFS_BLOCK_SIZE))
		return 0;
	czfs_cluster_header_decode(w->blk, &h);
	return h.magic == CZFS_CLUSTER_MAGIC ? h.clen : 0;
}

static void show_cluster(struct cluster_walk *w, uint64_t idx,
			 const struct czfs_cluster_info *ci)
{
	struct dout *o = &w->d->out;
	uint64_t stored = stored_bytes(w, ci);

	w->count[ci->kind]++;
	dout_row(o);
	dout_u64(o, "index", idx);
	dout_str(o, "kind", czfs_cluster_kind_name(ci->kind));
	dout_str(o, "alg", czfs_alg_name((int)ci->alg));
	dout_u64(o, "blkaddr", ci->blkaddr);
	dout_u64(o, "blocks", ci->kind == CZFS_CLUSTER_RESERVED ?
		 ci->prealloc : ci->nblocks);		/* reserved: promised */
	dout_u64(o, "stored", stored);
	if (ci->kind == CZFS_CLUSTER_SLICE) {
		dout_u64(o, "run", ci->run);
		dout_u64(o, "offset", (ci->blkaddr - ci->run) * CZFS_BLOCK_SIZE +
			 ci->slice_off);
	}
	dout_u64(o, "ulen", ci->ulen);
	dout_ratio(o, "ratio", stored ? (double)ci->ulen / (double)stored : NAN);
	dout_row_end(o);
}

static int show_cluster_item(void *arg, const struct czfs_key *key,
			     const void *val, unsigned size)
{
	struct cluster_walk *w = arg;
	struct czfs_cluster_info ci;

	if (czfs_cluster_item_decode(val, size, czfs_inode_cluster_bytes(w->ii),
				     w->d->fs->cp.max_blocks, &ci)) {
		w->damaged++;
		w->d->damage++;
		dout_row(&w->d->out);
		dout_u64(&w->d->out, "index", key->offset);
		dout_str(&w->d->out, "kind", "damaged");
		dout_row_end(&w->d->out);
		return 0;
	}
	show_cluster(w, key->offset, &ci);
	return 0;
}

static int show_clusters(struct dump_ctx *d, const struct czfs_inode_info *ii)
{
	struct cluster_walk w = { .d = d, .ii = ii };
	struct czfs_key first = { ii->ino, CZFS_ITEM_CLUSTER, 0 };
	struct czfs_key last = { ii->ino, CZFS_ITEM_CLUSTER, CZFS_KEY_OFFSET_MASK };
	uint64_t span = DIV_ROUND_UP(ii->size, czfs_inode_cluster_bytes(ii));
	uint64_t total = 0;
	int err;

	w.blk = aligned_alloc(CZFS_BLOCK_SIZE, CZFS_BLOCK_SIZE);
	if (!w.blk)
		return -ENOMEM;
	dout_arr(&d->out, "clusters");
	err = czfs_btree_iterate(&d->fs->tree, &first, &last, show_cluster_item, &w);
	dout_arr_end(&d->out);
	free(w.blk);
	dout_obj(&d->out, "cluster_counts");
	for (unsigned k = CZFS_CLUSTER_RAW; k < ARRAY_SIZE(w.count); k++) {
		if (!strcmp(czfs_cluster_kind_name(k), "unknown"))
			continue;
		dout_u64(&d->out, czfs_cluster_kind_name(k), w.count[k]);
		total += w.count[k];
	}
	total += w.damaged;
	dout_u64(&d->out, "damaged", w.damaged);
	dout_u64(&d->out, "total", total);
	dout_u64(&d->out, "holes", span > total ? span - total : 0);
	dout_obj_end(&d->out);
	return err;
}

/* ---- entries ----------------------------------------------------------- */

static int show_entry(void *arg, const struct czfs_dirent *de, uint64_t next)
{
	struct dump_ctx *d = arg;

	dout_row(&d->out);
	dout_u64(&d->out, "ino", de->ino);
	dout_u64(&d->out, "type", de->type);
	dout_strn(&d->out, "name", de->name, de->name_len);
	dout_row_end(&d->out);
	return 0;
}

static int show_entries(struct dump_ctx *d, uint64_t ino)
{
	int err;

	dout_arr(&d->out, "entries");
	err = czfs_dir_iterate(d->fs, ino, 0, show_entry, d);
	dout_arr_end(&d->out);
	return err;
}

int dump_inode(struct dump_ctx *d, uint64_t ino)
{
	struct czfs_inode_info ii;
	int err = czfs_inode_read(&d->fs->tree, ino, &ii);

	if (err)
		return err;
	dout_obj(&d->out, "inode");
	show_fields(d, &ii);
	dout_obj_end(&d->out);
	err = show_xattrs(d, ino);
	if (!err && (S_ISREG(ii.mode) || S_ISLNK(ii.mode)))
		err = show_clusters(d, &ii);
	if (!err && S_ISDIR(ii.mode))
		err = show_entries(d, ino);
	return err;
}
