// SPDX-License-Identifier: MIT
/*
 * Unit tests: transactions.  An image is built in memory, changed through
 * czfs_fs_begin/commit, and a crash is simulated by failing the n-th write
 * of a commit for every n: the image must then open and hold exactly the
 * state before or after the transaction, never anything else.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bdev.h"
#include "btree.h"
#include "fs.h"
#include "inode.h"
#include "spacemap.h"
#include "super.h"
#include "util.h"
#include "fs_testlib.h"

/* Which state the image holds: the size all files 2.. have, and count. */
static void state(struct czfs_fs *fs, uint64_t *size, unsigned *count)
{
	struct czfs_inode_info ii;

	*count = 0;
	ck_assert_int_eq(czfs_inode_read(&fs->tree, 2, &ii), 0);
	*size = ii.size;
	for (uint64_t ino = 2; czfs_inode_read(&fs->tree, ino, &ii) == 0; ino++) {
		ck_assert_uint_eq(ii.size, *size);	/* never a mix */
		(*count)++;
	}
}

START_TEST(commit_then_reopen)
{
	struct czfs_bdev *b = make_image(), *again;
	struct czfs_fs *fs = open_fs(b, true);
	uint64_t size, gen = fs->cp.generation;
	unsigned count;

	ck_assert_int_eq(change_sizes(fs, 777, 200), 0);
	ck_assert_int_eq(czfs_fs_commit(fs), 0);
	ck_assert_uint_eq(fs->cp.generation, gen + 1);
	again = copy_bdev(b);
	czfs_fs_close(fs);
	fs = open_fs(again, false);
	state(fs, &size, &count);
	ck_assert_uint_eq(size, 777);
	ck_assert_uint_eq(count, BASE_INODES - 1 + 200);
	ck_assert_uint_eq(fs->cp.next_ino, BASE_INODES + 201);
	czfs_fs_close(fs);
}
END_TEST

START_TEST(many_commits_keep_the_space_map_exact)
{
	struct czfs_bdev *b = make_image(), *copy;
	struct czfs_fs *fs = open_fs(b, true);
	uint64_t used0 = fs->cp.used_blocks;

	/* when the same items are rewritten many times, then old copies of
	 * nodes are freed: the used count stays bounded, and it reloads */
	for (unsigned i = 0; i < 50; i++) {
		ck_assert_int_eq(change_sizes(fs, 1000 + i, 0), 0);
		ck_assert_int_eq(czfs_fs_commit(fs), 0);
	}
	ck_assert_uint_lt(fs->cp.used_blocks, used0 + 30);
	copy = copy_bdev(b);
	czfs_fs_close(fs);		/* closes b */
	fs = open_fs(copy, true);	/* loads and checks the map */
	czfs_fs_close(fs);
}
END_TEST

/* Close fs and open a copy of its device b read-only: what a crash or an
 * unmount leaves, looked at afresh. */
static struct czfs_fs *reopen_copy(struct czfs_fs *fs, struct czfs_bdev *b)
{
	struct czfs_bdev *copy = copy_bdev(b);

	czfs_fs_close(fs);
	return open_fs(copy, false);
}

/* Requests of kind op ('f', 'r', ...) in the device's log since it was
 * last cleared. */
static unsigned requests(struct czfs_bdev *b, char op)
{
	const struct czfs_bdev_req *r;
	size_t n;
	unsigned f = 0;

	r = czfs_bdev_mem_log(b, &n);
	for (size_t i = 0; i < n; i++)
		f += r[i].op == op;
	return f;
}

static unsigned flushes(struct czfs_bdev *b)
{
	return requests(b, 'f');
}

START_TEST(a_small_commit_takes_one_flush)
{
	struct czfs_bdev *b = make_image();
	struct czfs_fs *fs = open_fs(b, true);
	uint64_t size, gen = fs->cp.generation;
	unsigned count;

	ck_assert_int_eq(czfs_fs_cover(fs, 1024), 0);
	ck_assert_int_eq(change_sizes(fs, 300, 10), 0);
	czfs_bdev_mem_clear_log(b);
	ck_assert_int_eq(czfs_fs_commit(fs), 0);
	ck_assert_uint_eq(flushes(b), 1);
	ck_assert(fs->cp.flags & CZFS_CP_COVERED);
	ck_assert_uint_gt(fs->cp.nr_covered, 0);
	/* the crc of its blocks was kept as they were written, not read */
	ck_assert_uint_eq(requests(b, 'r'), 0);
	fs = reopen_copy(fs, b);
	ck_assert_uint_eq(fs->cp.generation, gen + 1);
	state(fs, &size, &count);
	ck_assert_uint_eq(size, 300);
	czfs_fs_close(fs);
}
END_TEST

START_TEST(a_big_commit_takes_two_flushes)
{
	struct czfs_bdev *b = make_image();
	struct czfs_fs *fs = open_fs(b, true);

	fs->cover_blocks = 2;		/* less than any commit brings */
	ck_assert_int_eq(change_sizes(fs, 300, 10), 0);
	czfs_bdev_mem_clear_log(b);
	ck_assert_int_eq(czfs_fs_commit(fs), 0);
	ck_assert_uint_eq(flushes(b), 2);
	ck_assert(!(fs->cp.flags & CZFS_CP_COVERED));
	ck_assert_uint_eq(fs->cp.nr_covered, 0);
	/* and a covered one after a superblock write is not covered either */
	fs->cover_blocks = 1024;
	ck_assert_int_eq(czfs_fs_write_super(fs, &fs->sb), 0);
	ck_assert_int_eq(change_sizes(fs, 400, 10), 0);
	czfs_bdev_mem_clear_log(b);
	ck_assert_int_eq(czfs_fs_commit(fs), 0);
	ck_assert_uint_eq(flushes(b), 2);
	ck_assert(!(fs->cp.flags & CZFS_CP_COVERED));
	czfs_fs_close(fs);
}
END_TEST

/*
 * A one-flush commit that reached the disk without one of its blocks (a
 * power cut before the flush completed: any of them may be missing) is
 * refused for the one before, whole; with every block there, it is taken.
 */
START_TEST(a_covered_commit_missing_a_block_gives_the_one_before)
{
	struct czfs_bdev *b = make_image(), *before, *whole, *after;
	struct czfs_fs *fs = open_fs(b, true);
	uint64_t size, gen, blocks = 0;
	struct czfs_cp_info cp;
	unsigned count;

	ck_assert_int_eq(czfs_fs_cover(fs, 1024), 0);
	ck_assert_int_eq(change_sizes(fs, 100, 20), 0);
	ck_assert_int_eq(czfs_fs_commit(fs), 0);
	gen = fs->cp.generation;
	before = copy_bdev(b);		/* the disk before the next commit */
	ck_assert_int_eq(change_sizes(fs, 200, 40), 0);
	ck_assert_int_eq(czfs_fs_commit(fs), 0);
	ck_assert(fs->cp.flags & CZFS_CP_COVERED);
	cp = fs->cp;
	whole = copy_bdev(b);		/* the disk with every block */
	czfs_fs_close(fs);
	fs = open_fs(copy_bdev(whole), false);
	ck_assert_uint_eq(fs->cp.generation, gen + 1);
	czfs_fs_close(fs);

	for (unsigned i = 0; i < cp.nr_covered; i++) {
		uint64_t addr = CZFS_CP_EXTENT_ADDR(cp.covered[i]);
		uint64_t n = CZFS_CP_EXTENT_LEN(cp.covered[i]);

		for (uint64_t k = addr; k < addr + n; k++, blocks++) {
			uint8_t *blk;

			after = copy_bdev(whole);
			blk = czfs_bdev_mem_data(after) + k * CZFS_BLOCK_SIZE;
			/* as it was; past the old end: zeros, never written */
			if ((k + 1) * CZFS_BLOCK_SIZE <= before->size)
				memcpy(blk, czfs_bdev_mem_data(before) +
				       k * CZFS_BLOCK_SIZE, CZFS_BLOCK_SIZE);
			else
				memset(blk, 0, CZFS_BLOCK_SIZE);
			fs = open_fs(after, true);
			ck_assert_msg(fs->cp.generation == gen,
				      "block %llu missing: generation %llu",
				      (unsigned long long)k,
				      (unsigned long long)fs->cp.generation);
			state(fs, &size, &count);
			ck_assert_uint_eq(size, 100);
			ck_assert_uint_eq(count, BASE_INODES - 1 + 20);
			/* and the image goes on from there */
			ck_assert_int_eq(change_sizes(fs, 300, 30), 0);
			ck_assert_int_eq(czfs_fs_commit(fs), 0);
			fs = reopen_copy(fs, after);
			state(fs, &size, &count);
			ck_assert_uint_eq(size, 300);
			czfs_fs_close(fs);
		}
	}
	ck_assert_uint_gt(blocks, 2);	/* nodes and space map blocks */
	czfs_bdev_close(whole);
	czfs_bdev_close(before);
}
END_TEST

START_TEST(a_crash_at_any_write_leaves_old_or_new)
{
	unsigned old_seen = 0, new_seen = 0;
	const bool covered = _i != 0;

	/* given a base image with one committed change */
	struct czfs_bdev *base = make_image();
	struct czfs_fs *fs = open_fs(base, true);

	ck_assert_int_eq(change_sizes(fs, 100, 50), 0);
	ck_assert_int_eq(czfs_fs_commit(fs), 0);
	czfs_fs_close(fs);		/* base is closed with it */

	/* failing the n-th write (or flush) of the next commit, for each n */
	for (unsigned n = 1; n < 200; n++) {
		struct czfs_bdev *b = make_image(), *after;
		uint64_t size;
		unsigned count;
		int err;

		fs = open_fs(b, true);
		/* 1: the crc kept as the blocks were written; 2: read back */
		if (_i == 2)
			fs->cover_blocks = 1024;
		else
			ck_assert_int_eq(czfs_fs_cover(fs, covered ? 1024 : 0), 0);
		ck_assert_int_eq(change_sizes(fs, 100, 50), 0);
		ck_assert_int_eq(czfs_fs_commit(fs), 0);
		ck_assert_int_eq(change_sizes(fs, 200, 150), 0);
		czfs_bdev_mem_fail_after(b, n, -EIO);
		err = czfs_fs_commit(fs);
		/* the loop goes through a one-flush commit when asked */
		ck_assert(err || covered == !!(fs->cp.flags & CZFS_CP_COVERED));
		after = copy_bdev(b);	/* what a crash leaves on disk */
		czfs_fs_close(fs);
		fs = open_fs(after, false);
		state(fs, &size, &count);
		ck_assert_msg((size == 100 && count == BASE_INODES - 1 + 50) ||
			      (size == 200 && count == BASE_INODES - 1 + 150),
			      "write %u: size %llu, %u inodes", n,
			      (unsigned long long)size, count);
		if (size == 100)
			old_seen++;
		else
			new_seen++;
		czfs_fs_close(fs);
		if (!err) {		/* n was past the commit's last write */
			ck_assert_uint_eq(size, 200);
			break;
		}
		ck_assert_uint_eq(size, 100);	/* a failed commit changed nothing */
	}
	/* both outcomes happened: the loop went through the whole commit */
	ck_assert_uint_gt(old_seen, 3);
	ck_assert_uint_eq(new_seen, 1);
}
END_TEST

START_TEST(an_open_image_grows_in_place)
{
	struct czfs_bdev *b = make_image();
	struct czfs_fs *fs = open_fs(b, true);
	uint64_t max, used, blk, size;
	unsigned count;

	/* given an image whose room below its limit is taken (as data) */
	ck_assert_int_eq(czfs_fs_begin(fs), 0);
	czfs_smap_usage(&fs->smap, &max, &used);
	while (max - used > 16) {
		ck_assert_int_eq(czfs_smap_alloc(&fs->smap, 1, &blk), 0);
		czfs_smap_usage(&fs->smap, &max, &used);
	}
	ck_assert_int_eq(czfs_fs_commit(fs), 0);
	/* when its limit is raised while open, and a change needs more */
	ck_assert_int_eq(czfs_fs_grow(fs, 2 * MAX_BLOCKS), 0);
	ck_assert_uint_eq(fs->cp.max_blocks, 2 * MAX_BLOCKS);
	ck_assert_int_eq(change_sizes(fs, 4242, 500), 0);
	ck_assert_int_eq(czfs_fs_commit(fs), 0);
	/* then nodes past the old limit are read through the open image
	 * (its node cache knows the new limit) and after a reopen */
	ck_assert_uint_gt(fs->cp.image_blocks, MAX_BLOCKS);
	state(fs, &size, &count);
	ck_assert_uint_eq(size, 4242);
	ck_assert_uint_eq(count, BASE_INODES - 1 + 500);
	fs = reopen_copy(fs, b);
	ck_assert_uint_eq(fs->cp.max_blocks, 2 * MAX_BLOCKS);
	state(fs, &size, &count);
	ck_assert_uint_eq(size, 4242);
	czfs_fs_close(fs);
}
END_TEST

START_TEST(a_fixed_time_makes_the_same_image_twice)
{
	struct czfs_fs_opts o = { .fixed_time = 1000000000 };
	struct czfs_bdev *base = make_image(), *after[2];

	/* the same change to the same image, committed at different moments */
	for (unsigned i = 0; i < 2; i++) {
		struct czfs_fs *fs = NULL;

		ck_assert_int_eq(czfs_fs_open_bdev(copy_bdev(base), &o, &fs), 0);
		ck_assert_int_eq(change_sizes(fs, 123, 3), 0);
		ck_assert_int_eq(czfs_fs_commit(fs), 0);
		ck_assert_int_eq(fs->cp.commit_time, 1000000000);
		ck_assert_uint_eq(fs->cp.commit_nsec, 0);
		after[i] = copy_bdev(fs->bdev);
		czfs_fs_close(fs);
		usleep(20 * 1000);
	}
	ck_assert_uint_eq(after[0]->size, after[1]->size);
	ck_assert_mem_eq(czfs_bdev_mem_data(after[0]), czfs_bdev_mem_data(after[1]),
			 after[0]->size);
	for (unsigned i = 0; i < 2; i++)
		czfs_bdev_close(after[i]);
	czfs_bdev_close(base);
}
END_TEST

START_TEST(read_only_refuses_changes)
{
	struct czfs_fs *fs = open_fs(make_image(), false);

	ck_assert_int_eq(czfs_fs_begin(fs), -EROFS);
	ck_assert_int_eq(czfs_fs_commit(fs), -EROFS);
	czfs_fs_close(fs);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("commit");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, commit_then_reopen);
	tcase_add_test(tc, many_commits_keep_the_space_map_exact);
	tcase_add_loop_test(tc, a_crash_at_any_write_leaves_old_or_new, 0, 3);
	tcase_add_test(tc, a_small_commit_takes_one_flush);
	tcase_add_test(tc, a_big_commit_takes_two_flushes);
	tcase_add_test(tc, a_covered_commit_missing_a_block_gives_the_one_before);
	tcase_add_test(tc, read_only_refuses_changes);
	tcase_add_test(tc, a_fixed_time_makes_the_same_image_twice);
	tcase_add_test(tc, an_open_image_grows_in_place);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
