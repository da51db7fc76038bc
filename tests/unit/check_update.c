// SPDX-License-Identifier: MIT
/*
 * Unit tests: changing the tree in transactions — directory entries,
 * inodes and orphans, xattrs (inline and in blocks), cluster items — and
 * the space map staying exact across commits and reopens.
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/xattr.h>

#include "btree.h"
#include "cluster.h"
#include "dir.h"
#include "fs.h"
#include "fs_testlib.h"
#include "inode.h"
#include "util.h"
#include "xattr.h"

static struct czfs_fs *fs;
static struct czfs_bdev *dev;

static void setup(void)
{
	dev = make_image();
	fs = open_fs(dev, true);
	ck_assert_int_eq(czfs_fs_begin(fs), 0);
}

static void teardown(void)
{
	czfs_fs_close(fs);
}

/* Commit, then reopen from a copy of the device (checks the space map). */
static void commit_and_reopen(void)
{
	commit_reopen(&fs, &dev);
}

START_TEST(names_are_added_and_removed)
{
	uint64_t ino;
	unsigned type;
	char name[300];

	for (int i = 0; i < 500; i++) {
		int len = snprintf(name, sizeof(name), "name-%d", i);

		ck_assert_int_eq(czfs_dir_link(fs, 1, name, (size_t)len, 2 + (unsigned)i % 200,
					       DT_REG), 0);
	}
	ck_assert_int_eq(czfs_dir_link(fs, 1, "name-7", 6, 9, DT_REG), -EEXIST);
	memset(name, 'x', 256);
	ck_assert_int_eq(czfs_dir_link(fs, 1, name, 256, 9, DT_REG), -ENAMETOOLONG);
	ck_assert_int_eq(czfs_dir_link(fs, 1, name, 255, 9, DT_REG), 0);
	ck_assert_int_eq(czfs_dir_link(fs, 1, "a/b", 3, 9, DT_REG), -EINVAL);
	ck_assert_int_eq(czfs_dir_is_empty(fs, 1), 0);
	commit_and_reopen();
	ck_assert_int_eq(czfs_dir_lookup(fs, 1, "name-321", 8, &ino, &type), 0);
	ck_assert_uint_eq(ino, 2 + 321 % 200);
	ck_assert_int_eq(czfs_dir_unlink(fs, 1, "name-321", 8, &ino, &type), 0);
	ck_assert_int_eq(czfs_dir_lookup(fs, 1, "name-321", 8, &ino, &type), -ENOENT);
	ck_assert_int_eq(czfs_dir_unlink(fs, 1, "name-321", 8, &ino, &type), -ENOENT);
	for (int i = 0; i < 500; i++) {
		int len = snprintf(name, sizeof(name), "name-%d", i);

		if (i != 321)
			ck_assert_int_eq(czfs_dir_unlink(fs, 1, name, (size_t)len,
							 &ino, &type), 0);
	}
	memset(name, 'x', 255);
	ck_assert_int_eq(czfs_dir_unlink(fs, 1, name, 255, &ino, &type), 0);
	ck_assert_int_eq(czfs_dir_is_empty(fs, 1), 1);
	commit_and_reopen();
	ck_assert_int_eq(czfs_dir_is_empty(fs, 1), 1);
}
END_TEST

START_TEST(inodes_are_created_and_destroyed)
{
	struct czfs_inode_info ii = { .mode = S_IFREG | 0600, .nlink = 1,
				      .cluster_shift = 2, .size = 5 }, got;
	uint64_t count = fs->cp.inode_count;
	int64_t delta = 0;
	char value[5000];

	ck_assert_int_eq(czfs_inode_create(fs, &ii), 0);
	ck_assert_uint_eq(ii.ino, BASE_INODES + 1);
	ck_assert_uint_eq(fs->cp.inode_count, count + 1);
	memset(value, 'v', sizeof(value));
	ck_assert_int_eq(czfs_xattr_set(fs, ii.ino, "user.big", value, sizeof(value),
					0, &delta), 0);
	ck_assert_int_eq(delta, 2);		/* 5000 bytes: two blocks */
	ck_assert_int_eq(czfs_orphan_add(fs, ii.ino), 0);
	commit_and_reopen();
	ck_assert_int_eq(czfs_inode_read(&fs->tree, ii.ino, &got), 0);
	ck_assert_uint_eq(got.size, 5);
	uint64_t used = fs->cp.used_blocks;
	ck_assert_int_eq(czfs_orphan_del(fs, ii.ino), 0);
	ck_assert_int_eq(czfs_inode_destroy(fs, ii.ino), 0);
	ck_assert_uint_eq(fs->cp.inode_count, count);
	commit_and_reopen();
	ck_assert_int_eq(czfs_inode_read(&fs->tree, ii.ino, &got), -ENOENT);
	ck_assert_int_eq(czfs_xattr_get(fs, ii.ino, "user.big", NULL, 0), -ENODATA);
	ck_assert_uint_lt(fs->cp.used_blocks, used);	/* the value's blocks */
}
END_TEST

START_TEST(xattrs_follow_create_replace_semantics)
{
	int64_t delta = 0;
	char big[CZFS_XATTR_SIZE_MAX], out[CZFS_XATTR_SIZE_MAX];

	ck_assert_int_eq(czfs_xattr_set(fs, 2, "user.a", "1", 1, XATTR_REPLACE, &delta),
			 -ENODATA);
	ck_assert_int_eq(czfs_xattr_set(fs, 2, "user.a", "1", 1, XATTR_CREATE, &delta), 0);
	ck_assert_int_eq(czfs_xattr_set(fs, 2, "user.a", "2", 1, XATTR_CREATE, &delta),
			 -EEXIST);
	ck_assert_int_eq(czfs_xattr_set(fs, 2, "user.a", "22", 2, XATTR_REPLACE, &delta), 0);
	ck_assert_int_eq(czfs_xattr_set(fs, 2, "other.a", "x", 1, 0, &delta), -EOPNOTSUPP);
	ck_assert_int_eq(czfs_xattr_set(fs, 2, "user.big", big, sizeof(big) + 1, 0, &delta),
			 -E2BIG);
	for (unsigned i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7);
	ck_assert_int_eq(czfs_xattr_set(fs, 2, "user.big", big, sizeof(big), 0, &delta), 0);
	ck_assert_int_eq(delta, 16);
	for (int i = 0; i < 1000; i++) {
		char name[32];

		snprintf(name, sizeof(name), "user.many%d", i);
		ck_assert_int_eq(czfs_xattr_set(fs, 3, name, name, strlen(name), 0, &delta), 0);
	}
	commit_and_reopen();
	ck_assert_int_eq(czfs_xattr_get(fs, 2, "user.a", out, sizeof(out)), 2);
	ck_assert_int_eq(memcmp(out, "22", 2), 0);
	ck_assert_int_eq(czfs_xattr_get(fs, 2, "user.big", out, sizeof(out)),
			 (int)sizeof(big));
	ck_assert_int_eq(memcmp(out, big, sizeof(big)), 0);
	ck_assert_int_eq(czfs_xattr_get(fs, 3, "user.many999", out, sizeof(out)), 12);
	ck_assert_int_gt(czfs_xattr_list(fs, 3, NULL, 0), 1000 * 10);
	delta = 0;
	ck_assert_int_eq(czfs_xattr_remove(fs, 2, "user.big", &delta), 0);
	ck_assert_int_eq(delta, -16);
	ck_assert_int_eq(czfs_xattr_remove(fs, 2, "user.big", &delta), -ENODATA);
	commit_and_reopen();
	ck_assert_int_eq(czfs_xattr_get(fs, 2, "user.big", NULL, 0), -ENODATA);
	ck_assert_int_eq(czfs_xattr_get(fs, 2, "user.a", NULL, 0), 2);
}
END_TEST

START_TEST(cluster_items_replace_and_truncate)
{
	struct czfs_inode_info ii;
	struct czfs_cluster_info ci = { .kind = CZFS_CLUSTER_RAW, .nblocks = 4,
					.ulen = 16384 }, got;
	uint8_t inl[CZFS_INLINE_MAX];
	struct czfs_stored delta = { 0 };
	uint64_t blk;

	memset(inl, 0x5a, sizeof(inl));
	ck_assert_int_eq(czfs_inode_read(&fs->tree, 5, &ii), 0);	/* 16 KiB clusters? */
	ii.cluster_shift = 2;
	for (uint64_t idx = 0; idx < 10; idx++) {
		ck_assert_int_eq(czfs_smap_alloc(&fs->smap, 4, &blk), 0);
		ci.blkaddr = blk;
		ck_assert_int_eq(czfs_cluster_set(fs, 5, idx, &ci, &delta), 0);
	}
	ck_assert_int_eq(delta.blocks, 40);
	/* replacing a cluster frees the old extent */
	ck_assert_int_eq(czfs_smap_alloc(&fs->smap, 4, &blk), 0);
	ci.blkaddr = blk;
	ck_assert_int_eq(czfs_cluster_set(fs, 5, 3, &ci, &delta), 0);
	ck_assert_int_eq(delta.blocks, 40);
	/* a hole deletes the item */
	ci.kind = CZFS_CLUSTER_HOLE;
	ck_assert_int_eq(czfs_cluster_set(fs, 5, 4, &ci, &delta), 0);
	ck_assert_int_eq(delta.blocks, 36);
	ck_assert_int_eq(czfs_clusters_drop(fs, 5, 7, &delta), 0);
	ck_assert_int_eq(delta.blocks, 24);
	ck_assert_int_eq(delta.inline_bytes, 0);
	/* an inline cluster counts its payload, replacing it uncounts it */
	ci = (struct czfs_cluster_info){ .kind = CZFS_CLUSTER_INLINE,
					 .ulen = 700, .inline_len = 700,
					 .inline_data = inl };
	ck_assert_int_eq(czfs_cluster_set(fs, 5, 5, &ci, &delta), 0);
	ck_assert_int_eq(delta.inline_bytes, 700);
	ck_assert_int_eq(delta.blocks, 20);	/* its 4 blocks are gone */
	ci.ulen = ci.inline_len = 300;
	ck_assert_int_eq(czfs_cluster_set(fs, 5, 5, &ci, &delta), 0);
	ck_assert_int_eq(delta.inline_bytes, 300);
	ck_assert_int_eq(czfs_clusters_drop(fs, 5, 5, &delta), 0);
	ck_assert_int_eq(delta.inline_bytes, 0);
	ck_assert_int_eq(delta.blocks, 16);
	commit_and_reopen();
	ck_assert_int_eq(czfs_cluster_lookup(fs, &ii, 3, 1, &got, inl), 0);
	ck_assert_uint_eq(got.blkaddr, blk);
	ck_assert_int_eq(czfs_cluster_lookup(fs, &ii, 4, 1, &got, inl), 0);
	ck_assert_uint_eq(got.kind, CZFS_CLUSTER_HOLE);
	ck_assert_int_eq(czfs_cluster_lookup(fs, &ii, 8, 1, &got, inl), 0);
	ck_assert_uint_eq(got.kind, CZFS_CLUSTER_HOLE);
}
END_TEST

/*
 * fallocate's promise: the holes of a range become RESERVED clusters and
 * a partial tail carries one, counted in the space map and the checkpoint;
 * writing a cluster replaces its item (zeros keep the promise), and a
 * hole, a truncate, a destroy give it back.
 */
START_TEST(reserved_clusters_promise_room)
{
	struct czfs_cluster_info ci = { .kind = CZFS_CLUSTER_RAW, .nblocks = 4,
					.ulen = 16384 }, got;
	struct czfs_stored delta = { 0 };
	uint8_t inl[CZFS_INLINE_MAX];
	struct czfs_inode_info ii;
	uint64_t gaps, blk, max, used0, used;

	ck_assert_int_eq(czfs_inode_read(&fs->tree, 5, &ii), 0);
	ii.cluster_shift = 2;
	czfs_smap_usage(&fs->smap, &max, &used0);
	/* given: cluster 2 holds data */
	ck_assert_int_eq(czfs_smap_alloc(&fs->smap, 4, &blk), 0);
	ci.blkaddr = blk;
	ck_assert_int_eq(czfs_cluster_set(fs, 5, 2, &ci, &delta), 0);
	/* when: clusters [0, 6) are set aside, then the 5 holes are */
	ck_assert_int_eq(czfs_clusters_gaps(fs, 5, 0, 6, 4, &gaps), 0);
	ck_assert_uint_eq(gaps, 5);
	ck_assert_int_eq(czfs_clusters_reserve(fs, 5, 0, 6, 4, &delta), 0);
	ck_assert_int_eq(delta.prealloc, 20);
	ck_assert_int_eq(czfs_clusters_gaps(fs, 5, 0, 6, 4, &gaps), 0);
	ck_assert_uint_eq(gaps, 0);
	ck_assert_int_eq(czfs_clusters_reserve(fs, 5, 0, 6, 4, &delta), 0);
	ck_assert_int_eq(delta.prealloc, 20);		/* nothing twice */
	czfs_smap_usage(&fs->smap, &max, &used);
	ck_assert_uint_eq(fs->smap.prealloc, 20);
	ck_assert_uint_ge(used, used0 + 4 + 20);	/* counted as used */
	ck_assert(fs->sb.feature_incompat & CZFS_FEATURE_INCOMPAT_PREALLOC);
	/* a reserved cluster reads as a hole, and says it is promised */
	ck_assert_int_eq(czfs_cluster_lookup(fs, &ii, 1, 1, &got, inl), 0);
	ck_assert_uint_eq(got.kind, CZFS_CLUSTER_HOLE);
	ck_assert_uint_eq(got.prealloc, 4);
	/* zeros written back keep the promise, data takes its place */
	ci.kind = CZFS_CLUSTER_HOLE;
	ck_assert_int_eq(czfs_cluster_write(fs, 5, 1, &ci, &delta), 0);
	ck_assert_int_eq(delta.prealloc, 20);
	ci = (struct czfs_cluster_info){ .kind = CZFS_CLUSTER_INLINE,
					 .ulen = 10, .inline_len = 10,
					 .inline_data = inl };
	ck_assert_int_eq(czfs_cluster_write(fs, 5, 1, &ci, &delta), 0);
	ck_assert_int_eq(delta.prealloc, 16);
	ck_assert_int_eq(delta.inline_bytes, 10);
	/* a punched hole gives it back */
	ci.kind = CZFS_CLUSTER_HOLE;
	ck_assert_int_eq(czfs_cluster_set(fs, 5, 0, &ci, &delta), 0);
	ck_assert_int_eq(delta.prealloc, 12);
	/* the count is the checkpoint's after a commit */
	commit_and_reopen();
	ck_assert_uint_eq(fs->cp.prealloc_blocks, 12);
	ck_assert(fs->sb.feature_incompat & CZFS_FEATURE_INCOMPAT_PREALLOC);
	ck_assert_int_eq(czfs_cluster_lookup(fs, &ii, 3, 1, &got, inl), 0);
	ck_assert_uint_eq(got.prealloc, 4);
	/* a punch and a truncate give back what they cover */
	ck_assert_int_eq(czfs_clusters_delete(fs, 5, 4, 5, &delta), 0);
	ck_assert_int_eq(delta.prealloc, 8);
	ck_assert_int_eq(czfs_clusters_drop(fs, 5, 5, &delta), 0);
	ck_assert_int_eq(delta.prealloc, 4);
	/* a partial tail cluster promises room for the rest of it */
	ci = (struct czfs_cluster_info){ .kind = CZFS_CLUSTER_INLINE,
					 .ulen = 10, .inline_len = 10,
					 .inline_data = inl };
	ck_assert_int_eq(czfs_cluster_set(fs, 5, 4, &ci, &delta), 0);
	ck_assert_int_eq(czfs_clusters_gaps(fs, 5, 4, 5, 4, &gaps), 0);
	ck_assert_uint_eq(gaps, 1);
	ck_assert_int_eq(czfs_clusters_reserve(fs, 5, 4, 5, 4, &delta), 0);
	ck_assert_int_eq(delta.prealloc, 8);
	ck_assert_int_eq(czfs_cluster_lookup(fs, &ii, 4, 1, &got, inl), 0);
	ck_assert_uint_eq(got.kind, CZFS_CLUSTER_INLINE);
	ck_assert_uint_eq(got.prealloc, 4);
	ck_assert_int_eq(memcmp(got.inline_data, inl, 10), 0);
	/* zeros written over it keep the promise as a RESERVED cluster */
	ci.kind = CZFS_CLUSTER_HOLE;
	ck_assert_int_eq(czfs_cluster_write(fs, 5, 4, &ci, &delta), 0);
	ck_assert_int_eq(delta.prealloc, 8);
	ck_assert_int_eq(czfs_cluster_lookup(fs, &ii, 4, 1, &got, inl), 0);
	ck_assert_uint_eq(got.kind, CZFS_CLUSTER_HOLE);
	ck_assert_uint_eq(got.prealloc, 4);
	ck_assert_int_eq(czfs_inode_destroy(fs, 5), 0);
	commit_and_reopen();
	ck_assert_uint_eq(fs->cp.prealloc_blocks, 0);
	czfs_smap_usage(&fs->smap, &max, &used);
	ck_assert_uint_eq(used, fs->cp.used_blocks);	/* nothing promised */
}
END_TEST

/* Old readers must refuse an image once it holds zstd clusters. */
START_TEST(new_algorithm_sets_its_feature_bit)
{
	struct czfs_cluster_info ci = { .kind = CZFS_CLUSTER_RAW, .nblocks = 1,
					.ulen = 4096 };
	struct czfs_stored delta = { 0 };
	uint64_t blk;

	/* given: an image announcing lz4 only */
	ck_assert_uint_eq(fs->sb.feature_incompat, CZFS_FEATURE_INCOMPAT_LZ4);
	/* when: a raw cluster is written, no bit is added */
	ck_assert_int_eq(czfs_smap_alloc(&fs->smap, 1, &blk), 0);
	ci.blkaddr = blk;
	ck_assert_int_eq(czfs_cluster_set(fs, 5, 0, &ci, &delta), 0);
	commit_and_reopen();
	ck_assert_uint_eq(fs->sb.feature_incompat, CZFS_FEATURE_INCOMPAT_LZ4);
	/* when: a zstd cluster is written */
	ci.kind = CZFS_CLUSTER_COMPRESSED;
	ci.alg = CZFS_ALG_ZSTD;
	ck_assert_int_eq(czfs_smap_alloc(&fs->smap, 1, &blk), 0);
	ci.blkaddr = blk;
	ck_assert_int_eq(czfs_cluster_set(fs, 5, 1, &ci, &delta), 0);
	/* then: the superblock on the device announces zstd */
	commit_and_reopen();
	ck_assert_uint_eq(fs->sb.feature_incompat,
			  CZFS_FEATURE_INCOMPAT_LZ4 | CZFS_FEATURE_INCOMPAT_ZSTD);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("update");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, names_are_added_and_removed);
	tcase_add_test(tc, inodes_are_created_and_destroyed);
	tcase_add_test(tc, xattrs_follow_create_replace_semantics);
	tcase_add_test(tc, cluster_items_replace_and_truncate);
	tcase_add_test(tc, new_algorithm_sets_its_feature_bit);
	tcase_add_test(tc, reserved_clusters_promise_room);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
