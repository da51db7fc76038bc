// SPDX-License-Identifier: MIT
/*
 * Test helper: where does a structure of an image live?  The damaged-image
 * tests use it to flip bits in exactly the structure they mean to break.
 *
 *   czfs-locate IMAGE PATH leaf         block of the leaf holding PATH's inode
 *                                       (of its leaf pack's first block)
 *   czfs-locate IMAGE PATH cluster N    "blkaddr nblocks kind" of cluster N
 *   czfs-locate IMAGE PATH payload N    image byte offset where cluster N's
 *                                       data or compressed payload starts
 *                                       (past a header; a slice's in its run)
 *   czfs-locate IMAGE - root            block of the root node
 *   czfs-locate IMAGE - rootlevel       the root node's level
 *   czfs-locate IMAGE PATH node LEVEL   the node at LEVEL above PATH's inode
 *   czfs-locate IMAGE PATH xattr NAME   first block of an external value
 *   czfs-locate IMAGE - bitmap K        block of space-map bitmap K
 *   czfs-locate IMAGE - used BLK N      how many of blocks BLK..BLK+N-1
 *                                       the space map marks used
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "btree.h"
#include "cluster.h"
#include "dir.h"
#include "fs.h"
#include "hash.h"
#include "inode.h"
#include "log.h"
#include "xattr.h"

static int walk(struct czfs_fs *fs, const char *path, uint64_t *ino)
{
	char buf[4096], *save, *name;
	unsigned type;
	int err = 0;

	snprintf(buf, sizeof(buf), "%s", path);
	*ino = CZFS_ROOT_INO;
	for (name = strtok_r(buf, "/", &save); name && !err;
	     name = strtok_r(NULL, "/", &save))
		err = czfs_dir_lookup(fs, *ino, name, strlen(name), ino, &type);
	return err;
}

/* The node at level on the path to ino's INODE item (0: the leaf). */
static int print_node(struct czfs_fs *fs, uint64_t ino, unsigned level)
{
	struct czfs_key key = { ino, CZFS_ITEM_INODE, 0 };
	struct czfs_btree_path path = { 0 };
	int ret = czfs_btree_search(&fs->tree, &key, &path);

	if (ret == 0 && level < path.levels)
		printf("%llu\n", (unsigned long long)
		       czfs_leafpack_base(path.nodes[level]->blkaddr));
	else if (ret == 0)
		ret = -ERANGE;
	czfs_btree_path_release(&fs->tree, &path);
	return ret == 0 ? 0 : ret < 0 ? ret : -ENOENT;
}

struct xattr_find {
	const char *name;
	uint64_t blkaddr;
};

static int find_value(void *arg, const struct czfs_key *key, const void *val,
		      unsigned size)
{
	struct xattr_find *xf = arg;
	struct czfs_xattr x;
	unsigned pos = 0;

	while (czfs_xattr_next(val, size, &pos, &x) > 0)
		if (x.name_len == strlen(xf->name) &&
		    !memcmp(x.name, xf->name, x.name_len))
			xf->blkaddr = x.blkaddr;
	return 0;
}

static int print_xattr(struct czfs_fs *fs, uint64_t ino, const char *name)
{
	struct xattr_find xf = { name, 0 };
	struct czfs_key key = { ino, CZFS_ITEM_XATTR,
				czfs_name_hash(fs->sb.hash_seed, name, strlen(name)) };
	int err = czfs_btree_iterate(&fs->tree, &key, &key, find_value, &xf);

	if (!err && !xf.blkaddr)
		err = -ENOENT;
	if (!err)
		printf("%llu\n", (unsigned long long)xf.blkaddr);
	return err;
}

static int print_bitmap(struct czfs_fs *fs, uint64_t k)
{
	if (k >= fs->smap.nr_bitmaps || !fs->smap.bitmap_addr[k])
		return -ENOENT;
	printf("%llu\n", (unsigned long long)fs->smap.bitmap_addr[k]);
	return 0;
}

static int print_used(struct czfs_fs *fs, uint64_t blk, uint64_t n)
{
	uint64_t used = 0;

	for (uint64_t b = blk; b < blk + n; b++)
		used += czfs_smap_test(&fs->smap, b);
	printf("%llu\n", (unsigned long long)used);
	return 0;
}

static int print_cluster(struct czfs_fs *fs, uint64_t ino, uint64_t idx)
{
	uint8_t inl[CZFS_INLINE_MAX];
	struct czfs_inode_info ii;
	struct czfs_cluster_info ci;
	int err = czfs_inode_read(&fs->tree, ino, &ii);

	if (!err)
		err = czfs_cluster_lookup(fs, &ii, idx, 1, &ci, inl);
	if (!err)
		printf("%llu %u %u\n", (unsigned long long)ci.blkaddr, ci.nblocks,
		       ci.kind);
	return err;
}

static int print_payload(struct czfs_fs *fs, uint64_t ino, uint64_t idx)
{
	uint8_t inl[CZFS_INLINE_MAX];
	struct czfs_inode_info ii;
	struct czfs_cluster_info ci;
	int err = czfs_inode_read(&fs->tree, ino, &ii);
	uint64_t at;

	if (!err)
		err = czfs_cluster_lookup(fs, &ii, idx, 1, &ci, inl);
	if (err)
		return err;
	if (!czfs_cluster_has_extent(ci.kind))
		return -EINVAL;
	at = ci.blkaddr * CZFS_BLOCK_SIZE;
	if (ci.kind == CZFS_CLUSTER_SLICE || czfs_cluster_pack_sliced(&ci))
		at += ci.slice_off;
	else if (ci.kind == CZFS_CLUSTER_COMPRESSED ||
		 (ci.kind == CZFS_CLUSTER_PACKED && ci.alg))
		at += sizeof(struct czfs_cluster_header);
	printf("%llu\n", (unsigned long long)at);
	return 0;
}

int main(int argc, char **argv)
{
	struct czfs_fs_opts opts = { .flags = CZFS_OPEN_RDONLY | CZFS_OPEN_NOSMAP };
	struct czfs_fs *fs;
	uint64_t ino = CZFS_ROOT_INO;
	int err;

	if (argc < 4) {
		fprintf(stderr, "usage: czfs-locate IMAGE PATH leaf|cluster N|payload N|root|rootlevel|node L|xattr NAME|bitmap K|used BLK N\n");
		return 2;
	}
	czfs_log_set_sink(czfs_log_stderr, CZFS_LOG_WARN);
	if (!strcmp(argv[3], "bitmap") || !strcmp(argv[3], "used"))
		opts.flags &= ~CZFS_OPEN_NOSMAP;
	err = czfs_fs_open(argv[1], &opts, &fs);
	if (err)
		return 1;
	if (strcmp(argv[2], "-"))
		err = walk(fs, argv[2], &ino);
	if (!err && !strcmp(argv[3], "leaf"))
		err = print_node(fs, ino, 0);
	else if (!err && !strcmp(argv[3], "node") && argc > 4)
		err = print_node(fs, ino, (unsigned)strtoul(argv[4], NULL, 0));
	else if (!err && !strcmp(argv[3], "xattr") && argc > 4)
		err = print_xattr(fs, ino, argv[4]);
	else if (!err && !strcmp(argv[3], "bitmap") && argc > 4)
		err = print_bitmap(fs, strtoull(argv[4], NULL, 0));
	else if (!err && !strcmp(argv[3], "used") && argc > 5)
		err = print_used(fs, strtoull(argv[4], NULL, 0),
				 strtoull(argv[5], NULL, 0));
	else if (!err && !strcmp(argv[3], "rootlevel"))
		printf("%u\n", fs->cp.root_level);
	else if (!err && !strcmp(argv[3], "cluster") && argc > 4)
		err = print_cluster(fs, ino, strtoull(argv[4], NULL, 0));
	else if (!err && !strcmp(argv[3], "payload") && argc > 4)
		err = print_payload(fs, ino, strtoull(argv[4], NULL, 0));
	else if (!err && !strcmp(argv[3], "root"))
		printf("%llu\n", (unsigned long long)fs->cp.root_blkaddr);
	else if (!err)
		err = -EINVAL;
	if (err)
		fprintf(stderr, "czfs-locate: %s\n", strerror(-err));
	czfs_fs_close(fs);
	return err ? 1 : 0;
}
