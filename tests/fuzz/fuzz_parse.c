// SPDX-License-Identifier: MIT
/*
 * Everything that parses an image, run over one input: the decoders
 * directly (superblock, checkpoints), the open (checkpoint choice, root
 * node, space map), every item through the library's readers, the
 * high-level calls a mount makes (lookup, readdir, getxattr, read), then
 * fsck's whole check and its repairs.  Work is bounded so that one input
 * takes milliseconds.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bdev.h"
#include "cluster.h"
#include "compress.h"
#include "dir.h"
#include "fs.h"
#include "fsck.h"
#include "fuzz.h"
#include "inode.h"
#include "super.h"
#include "util.h"
#include "xattr.h"

#define FZ_MAX_ITEMS		20000
#define FZ_MAX_INODES		64
#define FZ_MAX_ENTRIES		64
#define FZ_READ_BYTES		(256u << 10)
#define FZ_DATA_CLUSTERS	256

struct fz {
	struct czfs_fs *fs;
	struct czfs_codec *codec;
	uint8_t *scratch, *data;
	long items;
	unsigned clusters;
	uint64_t inos[FZ_MAX_INODES];
	unsigned ninos;
	struct czfs_inode_info ii;	/* the last INODE item */
	bool ii_ok;
};

/* ---- every item ---------------------------------------------------------- */

static void fz_cluster(struct fz *z, const struct czfs_key *key,
		       const void *val, unsigned size)
{
	uint32_t cbytes = z->ii_ok && z->ii.ino == key->objectid ?
			  czfs_inode_cluster_bytes(&z->ii) : CZFS_MAX_CLUSTER_SIZE;
	struct czfs_cluster_info ci;

	if (czfs_cluster_item_decode(val, size, cbytes, z->fs->cp.max_blocks, &ci))
		return;
	if (z->clusters++ < FZ_DATA_CLUSTERS)
		czfs_cluster_read(z->fs, z->codec, &ci, z->scratch, z->data, cbytes);
}

static int fz_item(void *arg, const struct czfs_key *key, const void *val,
		   unsigned size)
{
	struct fz *z = arg;
	struct czfs_dirent de;
	struct czfs_xattr x;
	unsigned pos = 0;

	switch (key->type) {
	case CZFS_ITEM_INODE:
		z->ii_ok = !czfs_inode_decode(val, size, key->objectid, &z->ii);
		if (z->ii_ok && z->ninos < FZ_MAX_INODES)
			z->inos[z->ninos++] = key->objectid;
		break;
	case CZFS_ITEM_DENTRY:
		while (czfs_dentry_next(val, size, &pos, &de) > 0)
			;
		break;
	case CZFS_ITEM_XATTR:
		while (czfs_xattr_next(val, size, &pos, &x) > 0)
			;
		break;
	case CZFS_ITEM_CLUSTER:
		fz_cluster(z, key, val, size);
		break;
	default:
		break;
	}
	return ++z->items >= FZ_MAX_ITEMS;
}

/* ---- what a mount does with an inode ------------------------------------- */

struct fz_dir {
	struct fz *z;
	uint64_t dir;
	unsigned n;
};

static int fz_entry(void *arg, const struct czfs_dirent *de, uint64_t next)
{
	struct fz_dir *d = arg;
	uint64_t ino;
	unsigned type;

	czfs_dir_lookup(d->z->fs, d->dir, de->name, de->name_len, &ino, &type);
	return ++d->n >= FZ_MAX_ENTRIES;
}

static void fz_xattrs(struct fz *z, uint64_t ino)
{
	char names[4096];
	int len = czfs_xattr_list(z->fs, ino, names, sizeof(names));

	for (int pos = 0; len > 0 && pos < len; pos += (int)strlen(names + pos) + 1)
		czfs_xattr_get(z->fs, ino, names + pos, z->data, CZFS_XATTR_SIZE_MAX);
}

static void fz_inode(struct fz *z, uint64_t ino)
{
	struct fz_dir d = { z, ino, 0 };
	struct czfs_inode_info ii;

	if (czfs_inode_read(&z->fs->tree, ino, &ii))
		return;
	fz_xattrs(z, ino);
	if (S_ISDIR(ii.mode))
		czfs_dir_iterate(z->fs, ino, 0, fz_entry, &d);
	else if (S_ISREG(ii.mode) || S_ISLNK(ii.mode))
		czfs_file_pread(z->fs, z->codec, &ii, z->data, FZ_READ_BYTES, 0);
}

/* ---- fsck ---------------------------------------------------------------- */

static void fz_fsck(struct czfs_fs *fs)
{
	struct fsck_ctx c = { .o = { .silent = true, .repair = true } };

	c.fs = fs;
	c.smap = fs->smap.max_blocks ? &fs->smap : NULL;
	if (!fsck_ctx_init(&c) && !fsck_check(&c))
		fsck_repair(&c);
	fsck_ctx_free(&c);
}

/* ---- the input --------------------------------------------------------- */

/* Decoders on their own, and a size the harness is willing to open. */
static bool fz_headers(const uint8_t *img)
{
	struct czfs_sb_info sb;
	struct czfs_cp_info cp;
	bool any = false;

	if (czfs_super_decode(img, &sb, NULL))
		return false;
	for (unsigned i = 0; i < 2; i++) {
		uint64_t slot = CZFS_CP_BLKADDR0 + i;

		if (!czfs_cp_decode(img + slot * CZFS_BLOCK_SIZE, slot, &cp))
			any |= cp.max_blocks <= CZFS_FUZZ_MAX_BLOCKS;
	}
	return any && sb.max_blocks <= CZFS_FUZZ_MAX_BLOCKS;
}

static int fz_open(const uint8_t *img, size_t size, unsigned flags,
		   struct czfs_fs **fs)
{
	struct czfs_fs_opts o = { .flags = flags };
	struct czfs_bdev *b;
	int err = czfs_bdev_mem_create(size, 0, &b);

	if (err)
		return err;
	memcpy(czfs_bdev_mem_data(b), img, size);
	return czfs_fs_open_bdev(b, &o, fs);
}

static long fz_run(struct fz *z, const uint8_t *img, size_t size)
{
	struct czfs_key first = { 0, 0, 0 };
	struct czfs_key last = { UINT64_MAX, 255, CZFS_KEY_OFFSET_MASK };

	if (!fz_headers(img))
		return 0;
	if (fz_open(img, size, 0, &z->fs) &&
	    fz_open(img, size, CZFS_OPEN_RDONLY | CZFS_OPEN_NOSMAP, &z->fs))
		return 0;
	czfs_btree_iterate(&z->fs->tree, &first, &last, fz_item, z);
	for (unsigned i = 0; i < z->ninos; i++)
		fz_inode(z, z->inos[i]);
	fz_fsck(z->fs);
	czfs_fs_close(z->fs);
	return z->items;
}

long czfs_fuzz_image(const uint8_t *data, size_t size)
{
	struct fz z = { 0 };
	uint8_t *img;
	long ret = 0;

	if (size < CZFS_FIRST_DATA_BLKADDR * CZFS_BLOCK_SIZE ||
	    size > CZFS_FUZZ_MAX_INPUT)
		return 0;
	img = malloc(size);
	z.codec = czfs_codec_new();
	z.scratch = aligned_alloc(CZFS_BLOCK_SIZE, CZFS_MAX_CLUSTER_SIZE);
	z.data = aligned_alloc(CZFS_BLOCK_SIZE, CZFS_MAX_CLUSTER_SIZE);
	if (img && z.codec && z.scratch && z.data) {
		memcpy(img, data, size);
		czfs_fuzz_fixup(img, size);
		ret = fz_run(&z, img, size);
	}
	free(img);
	free(z.scratch);
	free(z.data);
	czfs_codec_free(z.codec);
	return ret;
}
