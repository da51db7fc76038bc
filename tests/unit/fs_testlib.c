// SPDX-License-Identifier: MIT
/* Unit test helpers: a small image in memory, opened through the library. */
#include "config.h"

#include <check.h>
#include <string.h>

#include "btree.h"
#include "compress.h"
#include "fs_testlib.h"
#include "inode.h"
#include "spacemap.h"
#include "super.h"

struct czfs_bdev *make_image(void)
{
	struct czfs_btree_builder *bb;
	struct czfs_sb_info sb;
	struct czfs_cp_info cp = { 0 };
	struct czfs_smap sm;
	struct czfs_bdev *b;
	uint8_t blk[CZFS_BLOCK_SIZE] = { 0 };
	uint64_t root;
	unsigned level;

	ck_assert_int_eq(czfs_bdev_mem_create(MAX_BLOCKS * 4096ull, 0, &b), 0);
	ck_assert_int_eq(czfs_smap_init(&sm, MAX_BLOCKS), 0);
	ck_assert_int_eq(czfs_btree_builder_new(b, &sm.alloc, 1, &bb), 0);
	for (uint64_t ino = CZFS_ROOT_INO; ino <= BASE_INODES; ino++) {
		struct czfs_inode_info ii = {
			.ino = ino, .mode = ino == 1 ? S_IFDIR | 0755 : S_IFREG | 0644,
			.nlink = 1, .parent = ino == 1 ? 1 : 0, .cluster_shift = 4,
			.size = ino,
		};
		struct czfs_key k = { ino, CZFS_ITEM_INODE, 0 };
		struct czfs_inode di;

		czfs_inode_encode(&ii, &di);
		ck_assert_int_eq(czfs_btree_builder_add(bb, &k, &di, sizeof(di), NULL), 0);
	}
	ck_assert_int_eq(czfs_btree_builder_finish(bb, &root, &level), 0);
	czfs_btree_builder_free(bb);
	cp.generation = 1;
	cp.root_blkaddr = root;
	cp.root_generation = 1;
	cp.root_level = level;
	cp.next_ino = BASE_INODES + 1;
	cp.inode_count = BASE_INODES;
	ck_assert_int_eq(czfs_smap_write(&sm, b, 1, &cp), 0);
	czfs_super_init(&sb);
	sb.max_blocks = MAX_BLOCKS;
	ck_assert_int_eq(czfs_cp_write(b, &sb, &cp), 0);
	czfs_super_encode(&sb, blk);
	ck_assert_int_eq(czfs_bdev_write(b, blk, sizeof(blk), 0), 0);
	ck_assert_int_eq(b->ops->resize(b, cp.image_blocks * 4096ull), 0);
	czfs_smap_destroy(&sm);
	return b;
}

struct czfs_bdev *copy_bdev(struct czfs_bdev *src)
{
	struct czfs_bdev *b;

	ck_assert_int_eq(czfs_bdev_mem_create(src->size, 0, &b), 0);
	memcpy(czfs_bdev_mem_data(b), czfs_bdev_mem_data(src), src->size);
	return b;
}

void open_fresh_fs(struct czfs_fs **fs, struct czfs_bdev **dev,
		   struct czfs_codec **codec)
{
	*dev = make_image();
	*fs = open_fs(*dev, true);
	*codec = czfs_codec_new();
	ck_assert_ptr_nonnull(*codec);
	ck_assert_int_eq(czfs_fs_begin(*fs), 0);
}

void close_fresh_fs(struct czfs_fs *fs, struct czfs_codec *codec)
{
	czfs_codec_free(codec);
	czfs_fs_close(fs);
}

struct czfs_fs *open_fs(struct czfs_bdev *b, bool rw)
{
	struct czfs_fs_opts o = { .flags = rw ? 0 : CZFS_OPEN_RDONLY };
	struct czfs_fs *fs = NULL;

	ck_assert_int_eq(czfs_fs_open_bdev(b, &o, &fs), 0);
	return fs;
}


void commit_reopen(struct czfs_fs **fs, struct czfs_bdev **dev)
{
	struct czfs_bdev *copy;

	ck_assert_int_eq(czfs_fs_commit(*fs), 0);
	copy = copy_bdev(*dev);
	czfs_fs_close(*fs);
	*dev = copy;
	*fs = open_fs(copy, true);
	ck_assert_int_eq(czfs_fs_begin(*fs), 0);
}

void flip_image_byte(struct czfs_fs *fs, uint64_t at)
{
	uint8_t blk[CZFS_BLOCK_SIZE];
	uint64_t base = at / CZFS_BLOCK_SIZE * CZFS_BLOCK_SIZE;

	ck_assert_int_eq(czfs_bdev_read(fs->bdev, blk, sizeof(blk), base), 0);
	blk[at % CZFS_BLOCK_SIZE] ^= 0x10;
	ck_assert_int_eq(czfs_bdev_write(fs->bdev, blk, sizeof(blk), base), 0);
}

int change_sizes(struct czfs_fs *fs, uint64_t size, unsigned added)
{
	int err = czfs_fs_begin(fs);

	for (uint64_t ino = 2; !err && ino <= BASE_INODES + added; ino++) {
		struct czfs_inode_info ii = {
			.ino = ino, .mode = S_IFREG | 0644, .nlink = 1,
			.cluster_shift = 4, .size = size,
		};
		struct czfs_key k = { ino, CZFS_ITEM_INODE, 0 };
		struct czfs_inode di;

		czfs_inode_encode(&ii, &di);
		err = czfs_btree_put(&fs->tree, &k, &di, sizeof(di));
	}
	fs->cp.next_ino = BASE_INODES + added + 1;
	return err;
}
