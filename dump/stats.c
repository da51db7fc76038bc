// SPDX-License-Identifier: MIT
/*
 * Image-wide statistics, like btrfs's compsize: per algorithm the clusters,
 * the disk they take, the bytes they hold uncompressed and the file bytes
 * they stand for; the metadata blocks by kind; inodes by type.  Every node
 * is visited (a damaged one is counted and skipped).
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cluster.h"
#include "compress.h"
#include "dump.h"
#include "inode.h"
#include "pack.h"
#include "util.h"
#include "xattr.h"

struct alg_stats {
	uint64_t clusters, disk_blocks, stored_bytes, ulen, referenced;
	uint64_t slice_bytes;		/* of it in runs: their blocks shared */
};

struct stats {
	struct dump_ctx *d;
	struct alg_stats alg[CZFS_ALG_MAX + 1];
	uint64_t kinds[CZFS_CLUSTER_SLICE + 1];
	/* packs: their count and blocks; the packed clusters' bytes and the
	 * blocks they would take each stored raw on its own */
	uint64_t packs, pack_blocks, pack_ulen, packed_bytes, packed_alone;
	uint64_t sliced_packs, pack_slice_bytes; /* of which slices of runs,
					 * their payload */
	/* runs: their count, blocks and bytes used; the slices' payload and
	 * the blocks they would take each as a COMPRESSED cluster */
	uint64_t runs, run_blocks, run_bytes, run_live, slices, slice_bytes;
	uint64_t sliced_alone;
	uint64_t files, dirs, symlinks, special, inodes;
	uint64_t apparent;		/* sizes of files and symlinks */
	uint64_t nodes, leaves, bad_nodes, bad_items;
	uint64_t tree_blocks, leaf_packs, packed_leaves;
	uint64_t xattrs, xattr_blocks;
	uint64_t *seen;			/* nodes visited: a bit per block */
	/* the inode the items belong to */
	uint64_t cur;
	bool cur_ok;
	struct czfs_inode_info ii;
};

static void stat_inode(struct stats *s, uint64_t ino, const void *val,
		       unsigned len)
{
	s->cur = ino;
	s->cur_ok = !czfs_inode_decode(val, len, ino, &s->ii);
	s->inodes++;
	if (!s->cur_ok) {
		s->bad_items++;
		return;
	}
	if (S_ISREG(s->ii.mode))
		s->files++;
	else if (S_ISDIR(s->ii.mode))
		s->dirs++;
	else if (S_ISLNK(s->ii.mode))
		s->symlinks++;
	else
		s->special++;
	if (S_ISREG(s->ii.mode) || S_ISLNK(s->ii.mode))
		s->apparent += s->ii.size;
}

static void stat_xattr(struct stats *s, const void *val, unsigned len)
{
	struct czfs_xattr x;
	unsigned pos = 0;
	int ret;

	while ((ret = czfs_xattr_next(val, len, &pos, &x)) > 0) {
		s->xattrs++;
		if (!x.value)
			s->xattr_blocks += DIV_ROUND_UP(x.value_len, CZFS_BLOCK_SIZE);
	}
	if (ret < 0)
		s->bad_items++;
}

static void stat_cluster(struct stats *s, const struct czfs_key *key,
			 const void *val, unsigned len)
{
	uint32_t cbytes = s->cur_ok && s->cur == key->objectid ?
			  czfs_inode_cluster_bytes(&s->ii) : CZFS_MAX_CLUSTER_SIZE;
	struct czfs_cluster_info ci;
	struct alg_stats *a;
	uint64_t span = 0;

	if (czfs_cluster_item_decode(val, len, cbytes, s->d->fs->cp.max_blocks,
				     &ci)) {
		s->bad_items++;
		return;
	}
	if (s->cur_ok && s->cur == key->objectid &&
	    key->offset < DIV_ROUND_UP(s->ii.size, cbytes))
		span = MIN((uint64_t)cbytes, s->ii.size - key->offset * cbytes);
	s->kinds[ci.kind]++;
	if (ci.kind == CZFS_CLUSTER_RESERVED)
		return;		/* no data: only space promised */
	a = &s->alg[ci.alg];
	a->clusters++;
	if (ci.kind == CZFS_CLUSTER_PACKED) {	/* blocks: at its PACK item */
		s->packed_bytes += ci.ulen;
		s->packed_alone += DIV_ROUND_UP(ci.ulen, CZFS_BLOCK_SIZE);
		a->ulen += ci.ulen;
		a->referenced += span;
		return;
	}
	if (ci.kind == CZFS_CLUSTER_SLICE) {	/* blocks: at its run's item */
		s->slices++;
		s->slice_bytes += ci.slice_len;
		s->sliced_alone += DIV_ROUND_UP(ci.slice_len +
			sizeof(struct czfs_cluster_header), CZFS_BLOCK_SIZE);
		a->slice_bytes += ci.slice_len;
		a->stored_bytes += ci.slice_len;
		a->ulen += ci.ulen;
		a->referenced += span;
		return;
	}
	a->disk_blocks += ci.nblocks;
	a->stored_bytes += ci.nblocks || ci.kind == CZFS_CLUSTER_BLOCKMAP ?
			   (uint64_t)ci.nblocks * CZFS_BLOCK_SIZE : ci.inline_len;
	a->ulen += ci.ulen;
	a->referenced += span;
}

static void stat_pack(struct stats *s, const struct czfs_key *key,
		      const void *val, unsigned len)
{
	struct czfs_pack_info p;

	if (czfs_pack_item_decode(key->offset, val, len,
				  s->d->fs->cp.max_blocks, &p)) {
		s->bad_items++;
		return;
	}
	if (p.run) {	/* shared out among the algorithms by show_algs */
		s->runs++;
		s->run_blocks += p.nblocks;
		s->run_bytes += p.ulen;
		s->run_live += p.live;
		return;
	}
	s->packs++;
	s->pack_ulen += p.ulen;
	if (p.sliced) {	/* a slice of a run, whose blocks show_algs shares */
		s->sliced_packs++;
		s->pack_slice_bytes += p.clen;
		s->slices++;
		s->slice_bytes += p.clen;
		s->sliced_alone += DIV_ROUND_UP(p.clen +
			sizeof(struct czfs_cluster_header), CZFS_BLOCK_SIZE);
		s->alg[p.alg].slice_bytes += p.clen;
		s->alg[p.alg].stored_bytes += p.clen;
		return;
	}
	s->pack_blocks += p.nblocks;
	s->alg[p.alg].disk_blocks += p.nblocks;
	s->alg[p.alg].stored_bytes += (uint64_t)p.nblocks * CZFS_BLOCK_SIZE;
}

static void stat_item(struct stats *s, const struct czfs_key *key,
		      const void *val, unsigned len)
{
	switch (key->type) {
	case CZFS_ITEM_INODE:
		stat_inode(s, key->objectid, val, len);
		break;
	case CZFS_ITEM_XATTR:
		stat_xattr(s, val, len);
		break;
	case CZFS_ITEM_CLUSTER:
		stat_cluster(s, key, val, len);
		break;
	case CZFS_ITEM_PACK:
		stat_pack(s, key, val, len);
		break;
	default:
		break;
	}
}

/* A node named twice would be walked twice: once is enough. */
static bool seen_before(struct stats *s, uint64_t blkaddr)
{
	uint64_t bit = 1ull << (blkaddr % 64);

	if (blkaddr >= s->d->fs->cp.max_blocks)
		return false;		/* the node cache refuses it */
	if (s->seen[blkaddr / 64] & bit)
		return true;
	s->seen[blkaddr / 64] |= bit;
	return false;
}

static int walk(struct stats *s, uint64_t blkaddr, uint64_t gen, unsigned level)
{
	struct czfs_nodecache *nc = s->d->fs->nc;
	struct czfs_node *node;
	int err;

	if (!czfs_leafpack_is(blkaddr) || !czfs_leafpack_index(blkaddr)) {
		/* a node's block, or a leaf pack's at its first leaf */
		if (seen_before(s, czfs_leafpack_base(blkaddr))) {
			s->bad_nodes++;
			return 0;
		}
		s->leaf_packs += czfs_leafpack_is(blkaddr);
		s->tree_blocks += czfs_leafpack_is(blkaddr) ?
				  czfs_leafpack_nblocks(blkaddr) : 1;
	}
	s->packed_leaves += czfs_leafpack_is(blkaddr);
	err = czfs_node_get(nc, blkaddr, gen, (int)level, &node);
	if (err == -EFSCORRUPTED || err == -EIO) {
		s->bad_nodes++;		/* the log says which */
		return 0;
	}
	if (err)
		return err;
	s->nodes++;
	s->leaves += !level;
	for (unsigned i = 0; i < czfs_node_nritems(node->data) && !err; i++) {
		struct czfs_key key;
		const void *val;
		unsigned size;
		uint64_t child, cgen;

		if (level) {
			czfs_node_child(node->data, i, &child, &cgen);
			err = walk(s, child, cgen, level - 1);
			continue;
		}
		czfs_node_key(node->data, i, &key);
		val = czfs_leaf_data(node->data, i, &size);
		stat_item(s, &key, val, size);
	}
	czfs_node_put(nc, node);
	czfs_nodecache_forget(nc, blkaddr);
	return err;
}

/* ---- output ------------------------------------------------------------- */

static void alg_row(struct dout *o, const char *name, const struct alg_stats *a)
{
	dout_row(o);
	dout_str(o, "alg", name);
	dout_u64(o, "clusters", a->clusters);
	dout_u64(o, "disk_blocks", a->disk_blocks);
	dout_u64(o, "disk_bytes", a->stored_bytes);
	dout_u64(o, "uncompressed_bytes", a->ulen);
	dout_u64(o, "referenced_bytes", a->referenced);
	dout_ratio(o, "ratio", a->stored_bytes ?
		   (double)a->ulen / (double)a->stored_bytes : NAN);
	dout_row_end(o);
}

static void show_algs(struct stats *s)
{
	struct dout *o = &s->d->out;
	struct alg_stats total = { 0 };

	/* a run's blocks: each algorithm's share by the payload it has there */
	for (unsigned i = 0; i <= CZFS_ALG_MAX && s->slice_bytes; i++)
		s->alg[i].disk_blocks += (s->run_blocks * s->alg[i].slice_bytes +
					  s->slice_bytes / 2) / s->slice_bytes;
	for (unsigned i = 0; i <= CZFS_ALG_MAX; i++) {
		total.clusters += s->alg[i].clusters;
		total.disk_blocks += s->alg[i].disk_blocks;
		total.stored_bytes += s->alg[i].stored_bytes;
		total.ulen += s->alg[i].ulen;
		total.referenced += s->alg[i].referenced;
	}
	dout_arr(o, "algorithms");
	alg_row(o, "TOTAL", &total);
	for (unsigned i = 0; i <= CZFS_ALG_MAX; i++)
		if (s->alg[i].clusters)
			alg_row(o, czfs_alg_name((int)i), &s->alg[i]);
	dout_arr_end(o);
	dout_u64(o, "apparent_bytes", s->apparent);
	dout_u64(o, "hole_bytes", s->apparent - MIN(s->apparent, total.referenced));
}

static void show_counts(struct stats *s)
{
	struct dout *o = &s->d->out;
	uint64_t pack_blocks;

	dout_obj(o, "inodes");
	dout_u64(o, "total", s->inodes);
	dout_u64(o, "files", s->files);
	dout_u64(o, "directories", s->dirs);
	dout_u64(o, "symlinks", s->symlinks);
	dout_u64(o, "special", s->special);
	dout_u64(o, "xattrs", s->xattrs);
	dout_obj_end(o);
	dout_obj(o, "clusters");
	for (unsigned k = CZFS_CLUSTER_RAW; k < ARRAY_SIZE(s->kinds); k++)
		if (strcmp(czfs_cluster_kind_name(k), "unknown"))
			dout_u64(o, czfs_cluster_kind_name(k), s->kinds[k]);
	dout_obj_end(o);
	if (s->runs) {
		dout_obj(o, "runs");
		dout_u64(o, "count", s->runs);
		dout_u64(o, "blocks", s->run_blocks);
		dout_u64(o, "bytes", s->run_bytes);
		dout_u64(o, "live_bytes", s->run_live);
		dout_u64(o, "slices", s->slices);
		dout_u64(o, "slice_bytes", s->slice_bytes);
		dout_u64(o, "blocks_alone", s->sliced_alone);
		dout_u64(o, "blocks_saved",
			 s->sliced_alone - MIN(s->sliced_alone, s->run_blocks));
		dout_obj_end(o);
	}
	if (!s->packs)
		return;
	dout_obj(o, "packs");
	/* blocks: sliced packs count their payload, in blocks, not the
	 * blocks of their runs they touch */
	pack_blocks = s->pack_blocks + DIV_ROUND_UP(s->pack_slice_bytes,
						    CZFS_BLOCK_SIZE);
	dout_u64(o, "count", s->packs);
	dout_u64(o, "in_runs", s->sliced_packs);
	dout_u64(o, "blocks", pack_blocks);
	dout_u64(o, "bytes", s->pack_ulen);
	dout_u64(o, "packed_bytes", s->packed_bytes);	/* dedup: > bytes */
	dout_u64(o, "blocks_alone", s->packed_alone);
	dout_u64(o, "blocks_saved",
		 s->packed_alone - MIN(s->packed_alone, pack_blocks));
	dout_obj_end(o);
}

static void show_blocks(struct stats *s)
{
	const struct czfs_cp_info *cp = &s->d->fs->cp;
	struct dout *o = &s->d->out;
	uint64_t smap = s->d->smap_loaded ?
			czfs_smap_disk_blocks(&s->d->fs->smap) : 0;
	uint64_t meta = CZFS_FIRST_DATA_BLKADDR + s->tree_blocks + smap +
			s->xattr_blocks;

	dout_obj(o, "blocks");
	dout_u64(o, "used", cp->used_blocks);
	dout_u64(o, "prealloc", cp->prealloc_blocks);
	dout_u64(o, "image", cp->image_blocks);
	dout_u64(o, "max", cp->max_blocks);
	dout_u64(o, "fixed", CZFS_FIRST_DATA_BLKADDR);
	dout_u64(o, "tree_nodes", s->nodes);
	dout_u64(o, "tree_leaves", s->leaves);
	dout_u64(o, "tree_blocks", s->tree_blocks);
	dout_u64(o, "leaf_packs", s->leaf_packs);
	dout_u64(o, "packed_leaves", s->packed_leaves);
	if (s->d->smap_loaded)
		dout_u64(o, "space_map", smap);
	dout_u64(o, "xattr_values", s->xattr_blocks);
	dout_u64(o, "metadata", meta);
	if (s->d->smap_loaded)
		dout_u64(o, "data", cp->used_blocks - MIN(cp->used_blocks, meta));
	dout_obj_end(o);
	if (s->bad_nodes || s->bad_items) {
		dout_u64(o, "damaged_nodes", s->bad_nodes);
		dout_u64(o, "damaged_items", s->bad_items);
	}
}

int dump_stats(struct dump_ctx *d)
{
	const struct czfs_cp_info *cp = &d->fs->cp;
	struct stats *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return -ENOMEM;
	s->d = d;
	s->seen = calloc(DIV_ROUND_UP(cp->max_blocks, 64), sizeof(uint64_t));
	err = s->seen ? walk(s, cp->root_blkaddr, cp->root_generation,
			     cp->root_level) : -ENOMEM;
	d->damage += s->bad_nodes + s->bad_items;
	dout_obj(&d->out, "statistics");
	show_counts(s);
	show_algs(s);
	show_blocks(s);
	dout_obj_end(&d->out);
	free(s->seen);
	free(s);
	return err;
}
