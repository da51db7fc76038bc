// SPDX-License-Identifier: MIT
/*
 * Unit tests: the loader (src/fuse/read/load.c), over an image in memory.
 * A cluster stored compressed, raw, as a hole or in a pack comes into the
 * cluster cache as the bytes that were stored; a device that fails gives
 * -EIO and leaves nothing half-loaded: no entry, no page held.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ccache.h"
#include "cluster.h"
#include "daemon_testlib.h"
#include "inode.h"
#include "load.h"
#include "pagepool.h"

#define CB	(16 * CZFS_BLOCK_SIZE)	/* make_image's clusters */

static struct czfs_daemon dm;
static uint8_t data[4][CB], got[CB];

static void setup(void)
{
	daemon_open(&dm);
}

static void teardown(void)
{
	daemon_close(&dm);
}

static void read_inode(uint64_t ino, struct czfs_inode_info *ii)
{
	ck_assert_int_eq(czfs_inode_read(&dm.fs->tree, ino, ii), 0);
}

/* e's bytes (a hole's: zeros) into got. */
static void entry_bytes(const struct czfs_centry *e)
{
	uint32_t pages[CZFS_MAX_CLUSTER_BLOCKS];

	memset(got, 0xee, sizeof(got));
	if (e->page == CZFS_NO_PAGE) {
		memset(got, 0, sizeof(got));
		return;
	}
	czfs_centry_pages(e, pages);
	czfs_memcpy_from_pages(dm.pool, pages, 0, got, e->len);
}

static uint64_t pool_used(void)
{
	struct czfs_pool_stats st;

	czfs_pool_get_stats(dm.pool, &st);
	return st.used;
}

START_TEST(each_kind_loads_its_bytes)
{
	static const unsigned kinds[4] = { CZFS_CLUSTER_COMPRESSED,
		CZFS_CLUSTER_RAW, CZFS_CLUSTER_HOLE, CZFS_CLUSTER_COMPRESSED };
	static const unsigned lens[4] = { CB, CB, CB, 10000 };
	struct czfs_centry *ents[4];
	struct czfs_cluster_info ci;
	struct czfs_inode_info ii;

	fill_text(data[0], CB, 1);
	fill_random(data[1], CB, 2);
	memset(data[2], 0, CB);
	fill_text(data[3], lens[3], 3);
	for (unsigned i = 0; i < 4; i++) {
		store_cluster(&dm, 2, i, data[i], lens[i], CZFS_ALG_LZ4);
		item_of(&dm, 2, i, &ci);
		ck_assert_uint_eq(ci.kind, kinds[i]);	/* as intended */
	}
	read_inode(2, &ii);
	ck_assert_int_eq(czfs_load_get(&dm, &ii, NULL, 0, 4, ents), 0);
	for (unsigned i = 0; i < 4; i++) {
		ck_assert_uint_eq(ents[i]->state, CZFS_CE_READY);
		entry_bytes(ents[i]);
		ck_assert_mem_eq(got, data[i], lens[i]);
		czfs_ccache_put(dm.cc, ents[i]);
	}
	ck_assert_uint_eq(atomic_load(&dm.st.loads_reader), 4);
	ck_assert_uint_eq(atomic_load(&dm.st.load_errors), 0);
}
END_TEST

START_TEST(packed_files_load_their_range_from_one_decode)
{
	static const uint64_t inos[3] = { 5, 6, 7 };
	static const unsigned lens[3] = { 1000, 3000, 500 };
	unsigned off = 0;

	fill_text(data[0], 4500, 4);
	store_pack(&dm, inos, 3, lens, data[0], CZFS_ALG_ZSTD);
	for (unsigned i = 0; i < 3; off += lens[i++]) {
		struct czfs_cluster_info ci;
		struct czfs_inode_info ii;
		struct czfs_centry *e;

		item_of(&dm, inos[i], 0, &ci);
		ck_assert_uint_eq(ci.kind, CZFS_CLUSTER_PACKED);
		read_inode(inos[i], &ii);
		ck_assert_int_eq(czfs_load_get(&dm, &ii, NULL, 0, 1, &e), 0);
		ck_assert_uint_eq(e->len, lens[i]);
		entry_bytes(e);
		ck_assert_mem_eq(got, data[0] + off, lens[i]);
		czfs_ccache_put(dm.cc, e);
	}
	/* the pack cache kept the decoded pack for the other two */
	ck_assert_uint_eq(atomic_load(&dm.st.pack_decodes), 1);
}
END_TEST

START_TEST(a_failed_read_leaves_nothing_loaded)
{
	struct czfs_inode_info ii;
	struct czfs_centry *e;
	uint64_t used0;

	fill_text(data[0], CB, 5);
	fill_random(data[1], CB, 6);
	store_cluster(&dm, 2, 0, data[0], CB, CZFS_ALG_ZSTD);
	store_cluster(&dm, 2, 1, data[1], CB, CZFS_ALG_ZSTD);
	read_inode(2, &ii);
	used0 = pool_used();
	for (unsigned i = 0; i < 2; i++) {	/* compressed, raw */
		czfs_bdev_mem_fail_after(dm.fs->bdev, 1, -EIO);
		ck_assert_int_eq(czfs_load_get(&dm, &ii, NULL, i, 1, &e), -EIO);
		ck_assert(!czfs_ccache_contains(dm.cc, 2, i));
		ck_assert_uint_eq(pool_used(), used0);	/* no page kept */
		ck_assert_uint_eq(atomic_load(&dm.st.load_errors), i + 1);
	}
	/* the device works again: the next load reads it whole */
	czfs_bdev_mem_fail_after(dm.fs->bdev, 0, 0);
	for (unsigned i = 0; i < 2; i++) {
		ck_assert_int_eq(czfs_load_get(&dm, &ii, NULL, i, 1, &e), 0);
		entry_bytes(e);
		ck_assert_mem_eq(got, data[i], CB);
		czfs_ccache_put(dm.cc, e);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("load");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, each_kind_loads_its_bytes);
	tcase_add_test(tc, packed_files_load_their_range_from_one_decode);
	tcase_add_test(tc, a_failed_read_leaves_nothing_loaded);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
