// SPDX-License-Identifier: MIT
/*
 * Unit tests: the daemon's room for data (src/fuse/write/room.c), over an
 * image in memory.  Reservations count against the free blocks until the
 * margin; statfs's usage counts them; a write that fails gives its blocks
 * back, one that succeeds keeps them until they are given back; an image
 * with a fixed limit does not grow.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "fs_testlib.h"
#include "inode.h"
#include "room.h"
#include "spacemap.h"

static struct czfs_daemon dm;

static void setup(void)
{
	memset(&dm, 0, sizeof(dm));
	dm.fs = open_fs(make_image(), true);
	pthread_rwlock_init(&dm.take_lock, NULL);
	pthread_mutex_init(&dm.grow_lock, NULL);
}

static void teardown(void)
{
	czfs_fs_close(dm.fs);
	pthread_mutex_destroy(&dm.grow_lock);
	pthread_rwlock_destroy(&dm.take_lock);
}

static uint64_t used_blocks(void)
{
	uint64_t max, used;

	czfs_smap_usage(&dm.fs->smap, &max, &used);
	return used;
}

START_TEST(reservations_take_room_until_the_margin)
{
	uint64_t free0 = czfs_room_free(&dm), max, used, used0 = used_blocks();

	/* an image of MAX_BLOCKS keeps a margin of 256 blocks (1%, at least
	 * 256) beside what is used */
	ck_assert_uint_eq(free0, MAX_BLOCKS - used0 - 256);
	ck_assert_int_eq(czfs_room_reserve(&dm, free0 - 10), 0);
	ck_assert_uint_eq(czfs_room_free(&dm), 10);
	czfs_room_usage(&dm, &max, &used);
	ck_assert_uint_eq(max, MAX_BLOCKS);
	ck_assert_uint_eq(used, used0 + free0 - 10);
	ck_assert_int_eq(czfs_room_reserve(&dm, 11), -ENOSPC);
	ck_assert_int_eq(czfs_room_reserve(&dm, 10), 0);
	ck_assert_uint_eq(czfs_room_free(&dm), 0);
	ck_assert_int_eq(czfs_room_reserve(&dm, 1), -ENOSPC);
	czfs_room_unreserve(&dm, free0);
	ck_assert_uint_eq(czfs_room_free(&dm), free0);
	czfs_room_usage(&dm, &max, &used);
	ck_assert_uint_eq(used, used0);
}
END_TEST

START_TEST(a_failed_write_gives_its_blocks_back)
{
	static uint8_t buf[3 * 4096];
	uint64_t used0 = used_blocks(), blk = 0;

	memset(buf, 0x5a, sizeof(buf));
	czfs_bdev_mem_fail_after(dm.fs->bdev, 1, -EIO);
	czfs_room_take_begin(&dm);
	ck_assert_int_eq(czfs_room_write(&dm, buf, sizeof(buf), 3, &blk), -EIO);
	czfs_room_take_end(&dm);
	ck_assert_uint_eq(used_blocks(), used0);	/* given back */

	czfs_room_take_begin(&dm);
	ck_assert_int_eq(czfs_room_write(&dm, buf, sizeof(buf), 3, &blk), 0);
	czfs_room_take_end(&dm);
	ck_assert_uint_eq(used_blocks(), used0 + 3);
	ck_assert(czfs_smap_test(&dm.fs->smap, blk + 2));
	ck_assert_mem_eq(czfs_bdev_mem_data(dm.fs->bdev) + blk * 4096, buf,
			 sizeof(buf));
	/* nothing linked them: given back, they are free again */
	czfs_room_give_back(&dm, blk, 3);
	ck_assert_uint_eq(used_blocks(), used0);
	ck_assert(!czfs_smap_test(&dm.fs->smap, blk));
}
END_TEST

START_TEST(a_fixed_limit_does_not_grow)
{
	uint64_t free0 = czfs_room_free(&dm);

	/* no CZFS_FEATURE_COMPAT_GROW, and memory has no host to grow on */
	ck_assert_int_eq(czfs_room_grow(&dm, free0 + 1), -ENOSPC);
	ck_assert_uint_eq(czfs_room_beyond(&dm), 0);
	ck_assert_uint_eq(czfs_room_free(&dm), free0);
	ck_assert_uint_eq(dm.fs->cp.max_blocks, MAX_BLOCKS);
}
END_TEST

START_TEST(only_a_file_with_promises_is_looked_up)
{
	struct czfs_inode_info ii;

	ck_assert_int_eq(czfs_inode_read(&dm.fs->tree, 2, &ii), 0);
	ck_assert(!ii.prealloc);
	/* no lookup at all (dm has no cache to load with) */
	ck_assert(!czfs_room_promised(&dm, &ii, 0));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("room");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, reservations_take_room_until_the_margin);
	tcase_add_test(tc, a_failed_write_gives_its_blocks_back);
	tcase_add_test(tc, a_fixed_limit_does_not_grow);
	tcase_add_test(tc, only_a_file_with_promises_is_looked_up);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
