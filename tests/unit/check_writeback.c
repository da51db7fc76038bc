// SPDX-License-Identifier: MIT
/*
 * Unit tests: writeback (src/fuse/write/writeback.c and its helpers
 * wbencode.c, wbrun.c, room.c), over an image in memory.  Dirty clusters
 * written back are linked in the tree and read back after a commit, from
 * a copy of the image; a compressible cluster is stored compressed, an
 * incompressible one raw, compressed neighbours as slices of one run,
 * small files together in one pack (wbpack.c); a write that fails gives
 * its blocks back (used blocks unchanged) and leaves the clusters dirty,
 * for the next writeback to store.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ccache.h"
#include "cluster.h"
#include "compress.h"
#include "daemon_testlib.h"
#include "inode.h"
#include "minode.h"
#include "ops.h"
#include "wentry.h"
#include "writeback.h"

#define CB	(16 * CZFS_BLOCK_SIZE)	/* make_image's clusters */
#define INO	2

static struct czfs_daemon dm;
static struct czfs_minode *mi;
static uint8_t data[3][CB], got[3 * CB];

/* ino, empty, compresses with LZ4: its in-memory inode. */
static struct czfs_minode *lz4_file(uint64_t ino)
{
	struct czfs_inode_info ii;
	struct czfs_minode *m;

	ck_assert_int_eq(czfs_inode_read(&dm.fs->tree, ino, &ii), 0);
	ii.alg = CZFS_ALG_LZ4;
	ii.size = 0;
	ck_assert_int_eq(czfs_inode_store(dm.fs, &ii), 0);
	ck_assert_int_eq(czfs_mi_get(&dm, ino, false, &m), 0);
	return m;
}

static void setup(void)
{
	daemon_open(&dm);
	mi = lz4_file(INO);
}

static void teardown(void)
{
	czfs_mi_put(&dm, mi);
	daemon_close(&dm);
}

/* Cluster i's data compresses, to more than an item holds inline (8 KiB
 * of it random): a COMPRESSED or SLICE cluster even when last. */
static void fill_compressible(unsigned i)
{
	fill_text(data[i], CB, i);
	fill_random(data[i], 8192, i);
}

static void write_clusters(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		ck_assert_int_eq(czfs_fuse_do_write(&dm, mi, data[i], CB,
						    i * CB), CB);
	ck_assert_uint_eq(mi->ndirty, n);
}

static unsigned kind_in(uint64_t ino, uint64_t idx)
{
	struct czfs_cluster_info ci;

	item_of(&dm, ino, idx, &ci);
	return ci.kind;
}

static unsigned kind_of(uint64_t idx)
{
	return kind_in(INO, idx);
}

/* Commit, then read INO's first n clusters from a copy of the image. */
static void check_durable(unsigned n)
{
	struct czfs_codec *codec = czfs_codec_new();
	struct czfs_inode_info ii;
	struct czfs_fs *fs;

	ck_assert_int_eq(czfs_fs_commit(dm.fs), 0);
	fs = open_fs(copy_bdev(dm.fs->bdev), false);
	ck_assert_int_eq(czfs_inode_read(&fs->tree, INO, &ii), 0);
	ck_assert_uint_eq(ii.size, n * CB);
	ck_assert_int_eq(czfs_file_pread(fs, codec, &ii, got, n * CB, 0), n * CB);
	for (unsigned i = 0; i < n; i++)
		ck_assert_mem_eq(got + i * CB, data[i], CB);
	czfs_fs_close(fs);
	czfs_codec_free(codec);
}

START_TEST(compressible_compressed_incompressible_raw)
{
	fill_compressible(0);
	fill_random(data[1], CB, 2);
	write_clusters(2);
	ck_assert_uint_eq(kind_of(0), CZFS_CLUSTER_HOLE);	/* not yet */
	ck_assert_int_eq(czfs_writeback_inode(&dm, mi), 0);
	ck_assert_uint_eq(mi->ndirty, 0);
	ck_assert_uint_eq(mi->reserved, 0);
	/* one compressed cluster alone: an extent of its own */
	ck_assert_uint_eq(kind_of(0), CZFS_CLUSTER_COMPRESSED);
	ck_assert_uint_eq(kind_of(1), CZFS_CLUSTER_RAW);
	ck_assert_uint_eq(atomic_load(&dm.st.wb_clusters), 2);
	check_durable(2);
}
END_TEST

START_TEST(compressed_neighbours_share_a_run)
{
	for (unsigned i = 0; i < 3; i++)
		fill_compressible(i);
	write_clusters(3);
	ck_assert_int_eq(czfs_writeback_inode(&dm, mi), 0);
	for (unsigned i = 0; i < 3; i++)
		ck_assert_uint_eq(kind_of(i), CZFS_CLUSTER_SLICE);
	ck_assert_uint_eq(atomic_load(&dm.st.wb_runs), 1);
	ck_assert_uint_eq(atomic_load(&dm.st.wb_slices), 3);
	check_durable(3);
}
END_TEST

START_TEST(small_files_share_a_pack)
{
	static const unsigned lens[3] = { 1000, 3000, 500 };
	struct czfs_minode *m[3] = { mi, lz4_file(INO + 1), lz4_file(INO + 2) };
	struct czfs_codec *codec = czfs_codec_new();
	int first;

	for (unsigned i = 0; i < 3; i++) {
		fill_text(data[i], lens[i], i);
		ck_assert_int_eq(czfs_fuse_do_write(&dm, m[i], data[i], lens[i],
						    0), lens[i]);
	}
	ck_assert_int_eq(czfs_writeback_all(&dm, &first), 0);
	ck_assert_int_eq(first, 0);
	ck_assert_uint_eq(atomic_load(&dm.st.packs_written), 1);
	ck_assert_uint_eq(atomic_load(&dm.st.packed_files), 3);
	ck_assert_int_eq(czfs_fs_commit(dm.fs), 0);
	for (unsigned i = 0; i < 3; i++) {
		struct czfs_inode_info ii;

		ck_assert_uint_eq(m[i]->ndirty, 0);
		ck_assert_uint_eq(kind_in(INO + i, 0), CZFS_CLUSTER_PACKED);
		ck_assert_int_eq(czfs_inode_read(&dm.fs->tree, INO + i, &ii), 0);
		ck_assert_int_eq(czfs_file_pread(dm.fs, codec, &ii, got, CB, 0),
				 lens[i]);
		ck_assert_mem_eq(got, data[i], lens[i]);
	}
	czfs_mi_put(&dm, m[1]);
	czfs_mi_put(&dm, m[2]);
	czfs_codec_free(codec);
}
END_TEST

/* _i: 0, a raw cluster (room_write); 1, a compressed one (a run). */
START_TEST(a_failed_write_gives_blocks_back_and_stays_dirty)
{
	uint64_t used0;
	struct czfs_centry *e;

	if (_i)
		fill_compressible(0);
	else
		fill_random(data[0], CB, 3);
	write_clusters(1);
	e = mi->dirty[0];
	used0 = daemon_used_blocks(&dm);
	czfs_bdev_mem_fail_after(dm.fs->bdev, 1, -EIO);
	ck_assert_int_eq(czfs_writeback_inode(&dm, mi), -EIO);
	ck_assert_uint_eq(daemon_used_blocks(&dm), used0);	/* given back */
	ck_assert_uint_eq(mi->ndirty, 1);
	ck_assert_ptr_eq(mi->dirty[0], e);
	ck_assert(czfs_wentry_of(e)->dirty);
	ck_assert_uint_eq(mi->reserved, 16);
	ck_assert_uint_eq(kind_of(0), CZFS_CLUSTER_HOLE);	/* not linked */

	czfs_bdev_mem_fail_after(dm.fs->bdev, 0, 0);
	ck_assert_int_eq(czfs_writeback_inode(&dm, mi), 0);
	ck_assert_uint_eq(mi->ndirty, 0);
	ck_assert_uint_eq(kind_of(0), _i ? CZFS_CLUSTER_COMPRESSED :
			  CZFS_CLUSTER_RAW);
	check_durable(1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("writeback");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, compressible_compressed_incompressible_raw);
	tcase_add_test(tc, compressed_neighbours_share_a_run);
	tcase_add_test(tc, small_files_share_a_pack);
	tcase_add_loop_test(tc, a_failed_write_gives_blocks_back_and_stays_dirty,
			    0, 2);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
