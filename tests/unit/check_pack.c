// SPDX-License-Identifier: MIT
/*
 * Unit tests: packed clusters.  Three files share one pack; each reads
 * back its own range; damaged items and packs are refused; rewriting,
 * destroying and truncating the files drop their references, and the
 * last one frees the pack's blocks (space map exact across a reopen).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "btree.h"
#include "cluster.h"
#include "compress.h"
#include "fs.h"
#include "fs_testlib.h"
#include "inode.h"
#include "pack.h"
#include "util.h"

#define NFILES	3

static struct czfs_fs *fs;
static struct czfs_bdev *dev;
static struct czfs_codec *codec;
static const unsigned lens[NFILES] = { 1000, 3000, 500 };
static uint8_t data[8192];		/* the pack's bytes, decoded */
static unsigned pack_len;
static struct czfs_cluster_info pack;	/* as stored */

/* File i's bytes: text-like, so that the pack compresses. */
static void fill(void)
{
	pack_len = 0;
	for (unsigned i = 0; i < NFILES; i++)
		for (unsigned k = 0; k < lens[i]; k++)
			data[pack_len++] = (uint8_t)("abcdefgh"[(k / 7 + i) % 8] + (k % 13 == 0));
}

static unsigned offset_of(unsigned i)
{
	unsigned off = 0;

	for (unsigned k = 0; k < i; k++)
		off += lens[k];
	return off;
}

/* Store the pack, its PACK item (refs NFILES) and inodes 5..7's items,
 * through the helpers mkfs and the daemon's writeback share. */
static void make_pack(unsigned alg)
{
	struct czfs_cluster_policy pol = { .alg = alg, .zero_detect = true,
					   .allow_inline = true };
	static uint8_t out[CZFS_MAX_CLUSTER_SIZE + CZFS_BLOCK_SIZE];
	struct czfs_cluster_info any;
	struct czfs_pack_info pi, of_cluster;
	unsigned out_len;

	fill();
	ck_assert_int_eq(czfs_pack_encode(codec, &pol, data, pack_len, out,
					  &pack, &out_len), 0);
	ck_assert_uint_eq(pack.kind, alg ? CZFS_CLUSTER_COMPRESSED :
			  CZFS_CLUSTER_RAW);	/* never inline */
	ck_assert_int_eq(czfs_smap_alloc(&fs->smap, pack.nblocks, &pack.blkaddr), 0);
	ck_assert_int_eq(czfs_bdev_write(fs->bdev, out, out_len,
					 pack.blkaddr * CZFS_BLOCK_SIZE), 0);
	for (unsigned i = 0; i < NFILES; i++) {
		struct czfs_cluster_info ci;
		struct czfs_inode_info ii;
		struct czfs_stored d = { 0 };

		czfs_cluster_packed_make(&pack, offset_of(i), lens[i], &ci);
		ck_assert_int_eq(czfs_cluster_set(fs, 5 + i, 0, &ci, &d), 0);
		ck_assert_int_eq(d.blocks, 0);		/* the pack's, not its */
		ck_assert_int_eq(czfs_inode_read(&fs->tree, 5 + i, &ii), 0);
		ii.size = lens[i];
		ck_assert_int_eq(czfs_inode_store(fs, &ii), 0);
	}
	czfs_pack_of_stored(&pack, NFILES, &pi);
	czfs_cluster_packed_make(&pack, 0, 1, &any);
	ck_assert(czfs_pack_matches(&pi, &any));
	czfs_pack_of_cluster(&any, &of_cluster);
	ck_assert_uint_eq(pi.refs, NFILES);
	ck_assert_uint_eq(pi.blkaddr, of_cluster.blkaddr);
	ck_assert_uint_eq(pi.alg, of_cluster.alg);
	ck_assert_uint_eq(pi.nblocks, of_cluster.nblocks);
	ck_assert_uint_eq(pi.ulen, of_cluster.ulen);
	ck_assert_uint_eq(pi.checksum, of_cluster.checksum);
	pi.refs = 1;		/* replaced by the count */
	ck_assert_int_eq(czfs_pack_put(fs, &pi), 0);
	pi.refs = NFILES;
	ck_assert_int_eq(czfs_pack_put(fs, &pi), 0);
}

static void commit_and_reopen(void)
{
	commit_reopen(&fs, &dev);
}

static void setup(void)
{
	open_fresh_fs(&fs, &dev, &codec);
}

static void teardown(void)
{
	close_fresh_fs(fs, codec);
}

static long read_file(uint64_t ino, uint8_t *buf, size_t len)
{
	struct czfs_inode_info ii;

	ck_assert_int_eq(czfs_inode_read(&fs->tree, ino, &ii), 0);
	return czfs_file_pread(fs, codec, &ii, buf, len, 0);
}

static void check_files(void)
{
	uint8_t buf[4096];

	for (unsigned i = 0; i < NFILES; i++) {
		ck_assert_int_eq(read_file(5 + i, buf, sizeof(buf)), lens[i]);
		ck_assert_mem_eq(buf, data + offset_of(i), lens[i]);
	}
}

static uint32_t refs(void)
{
	struct czfs_pack_info pi;
	int err = czfs_pack_get(fs, pack.blkaddr, &pi);

	if (err == -ENOENT)
		return 0;
	ck_assert_int_eq(err, 0);
	ck_assert_uint_eq(pi.blkaddr, pack.blkaddr);
	return pi.refs;
}

static const unsigned algs[] = { CZFS_ALG_NONE, CZFS_ALG_LZ4, CZFS_ALG_ZSTD };

/* The pack is bigger than the 4 KiB clusters: decoded beside dst. */
START_TEST(files_read_their_range)
{
	make_pack(algs[_i]);
	check_files();
	commit_and_reopen();
	check_files();
	ck_assert(fs->sb.feature_incompat & CZFS_FEATURE_INCOMPAT_PACKED);
}
END_TEST

START_TEST(references_free_the_pack_at_the_last)
{
	struct czfs_cluster_info raw = { .kind = CZFS_CLUSTER_RAW, .nblocks = 1,
					 .ulen = 100 };
	struct czfs_stored d = { 0 };
	uint8_t buf[4096];

	make_pack(CZFS_ALG_LZ4);
	commit_and_reopen();
	ck_assert(czfs_smap_test(&fs->smap, pack.blkaddr));
	ck_assert_uint_eq(refs(), 3);
	/* a rewrite moves file 5 out */
	ck_assert_int_eq(czfs_smap_alloc(&fs->smap, 1, &raw.blkaddr), 0);
	ck_assert_int_eq(czfs_cluster_set(fs, 5, 0, &raw, &d), 0);
	ck_assert_uint_eq(refs(), 2);
	/* a destroy drops file 6's */
	ck_assert_int_eq(czfs_inode_destroy(fs, 6), 0);
	ck_assert_uint_eq(refs(), 1);
	ck_assert_int_eq(read_file(7, buf, sizeof(buf)), lens[2]);
	ck_assert_mem_eq(buf, data + offset_of(2), lens[2]);
	/* a truncate drops the last: the pack's blocks are free */
	ck_assert_int_eq(czfs_clusters_drop(fs, 7, 0, &d), 0);
	ck_assert_uint_eq(refs(), 0);
	commit_and_reopen();	/* the space map reloads with its count */
	ck_assert_uint_eq(refs(), 0);
	ck_assert(!czfs_smap_test(&fs->smap, pack.blkaddr));
}
END_TEST

START_TEST(a_missing_pack_item_is_corruption)
{
	struct czfs_key key = { CZFS_PACK_OBJECTID, CZFS_ITEM_PACK, 0 };
	struct czfs_stored d = { 0 };

	make_pack(CZFS_ALG_LZ4);
	key.offset = pack.blkaddr;
	ck_assert_int_eq(czfs_btree_delete(&fs->tree, &key), 0);
	ck_assert_int_eq(czfs_pack_get(fs, pack.blkaddr, &(struct czfs_pack_info){ 0 }),
			 -ENOENT);
	ck_assert_int_eq(czfs_clusters_drop(fs, 5, 0, &d), -EFSCORRUPTED);
}
END_TEST

/* Byte offsets in the 40-byte item and what they are set to. */
struct item_case {
	unsigned off, size;
	uint32_t value;
};

static const struct item_case item_cases[] = {
	{ 24, 4, 4000 },		/* offset + ulen past the pack */
	{ 28, 4, CZFS_PACK_MAX_ULEN + 1 },	/* pack too big */
	{ 28, 4, 100 },			/* pack smaller than the range */
	{ 39, 1, 1 },			/* reserved */
	{ 36, 2, 5 },			/* a slice offset, not sliced */
	{ 38, 1, 1 },			/* a run, not sliced */
	{ 1, 1, CZFS_ALG_MAX + 1 },	/* algorithm */
	{ 2, 1, 0 },			/* nblocks */
	{ 2, 1, 2 },			/* a compressed pack that saves nothing */
	{ 16, 4, 0 },			/* ulen 0 */
};

START_TEST(damaged_items_are_refused)
{
	const struct item_case *tc = &item_cases[_i];
	struct czfs_cluster_info ci, got;
	uint8_t val[sizeof(struct czfs_cluster) + CZFS_INLINE_MAX];
	unsigned len;

	fill();
	pack = (struct czfs_cluster_info){ .kind = CZFS_CLUSTER_COMPRESSED,
		.alg = CZFS_ALG_LZ4, .nblocks = 1, .checksum = 7,
		.blkaddr = 100, .ulen = 4500 };
	czfs_cluster_packed_make(&pack, 1000, 3000, &ci);
	len = czfs_cluster_item_encode(&ci, val);
	ck_assert_uint_eq(len, 40);
	ck_assert_int_eq(czfs_cluster_item_decode(val, len, 4096, 4096, &got), 0);
	ck_assert_uint_eq(got.pack_off, 1000);
	ck_assert_uint_eq(got.pack_ulen, 4500);
	memcpy(val + tc->off, &tc->value, tc->size);	/* little-endian host */
	ck_assert_int_eq(czfs_cluster_item_decode(val, len, 4096, 4096, &got),
			 -EFSCORRUPTED);
	ck_assert_int_eq(czfs_cluster_item_decode(val, 24, 4096, 4096, &got),
			 -EFSCORRUPTED);
}
END_TEST

START_TEST(a_damaged_pack_is_caught)
{
	uint8_t blk[CZFS_BLOCK_SIZE], buf[4096];

	make_pack(algs[_i]);
	ck_assert_int_eq(czfs_bdev_read(fs->bdev, blk, sizeof(blk),
					pack.blkaddr * CZFS_BLOCK_SIZE), 0);
	blk[40] ^= 0x10;
	ck_assert_int_eq(czfs_bdev_write(fs->bdev, blk, sizeof(blk),
					 pack.blkaddr * CZFS_BLOCK_SIZE), 0);
	ck_assert_int_eq(read_file(6, buf, sizeof(buf)), -EFSCORRUPTED);
}
END_TEST

/* size, cluster bytes, pack_max: the bytes mkfs and writeback pack */
static const struct { uint64_t size; unsigned cbytes, max, want; } tails[] = {
	{ 0, 65536, CZFS_PACK_MAX_ULEN, 0 },
	{ 1, 65536, CZFS_PACK_MAX_ULEN, 1 },
	{ 65535, 65536, CZFS_PACK_MAX_ULEN, 65535 },
	{ 65536, 65536, CZFS_PACK_MAX_ULEN, 0 },	/* no partial cluster */
	{ 65537, 65536, CZFS_PACK_MAX_ULEN, 1 },	/* a tail */
	{ 5000, 4096, 904, 904 },
	{ 5000, 4096, 903, 0 },				/* past pack_max */
};

START_TEST(the_packing_rule)
{
	ck_assert_uint_eq(czfs_pack_tail(tails[_i].size, tails[_i].cbytes,
					 tails[_i].max), tails[_i].want);
}
END_TEST

START_TEST(a_pack_is_never_a_hole)
{
	static uint8_t zeros[8192], out[CZFS_MAX_CLUSTER_SIZE + CZFS_BLOCK_SIZE];
	struct czfs_cluster_policy pol = { .alg = CZFS_ALG_LZ4,
					   .zero_detect = true };
	struct czfs_cluster_info ci;
	unsigned out_len;

	ck_assert_int_eq(czfs_pack_encode(codec, &pol, zeros, sizeof(zeros),
					  out, &ci, &out_len), 0);
	ck_assert_uint_eq(ci.kind, CZFS_CLUSTER_COMPRESSED);
	ck_assert_int_eq(czfs_pack_encode(codec, &pol, out, CZFS_PACK_MAX_ULEN + 1,
					  out, &ci, &out_len), -EINVAL);
}
END_TEST

static Suite *pack_suite(void)
{
	Suite *s = suite_create("pack");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, files_read_their_range, 0, ARRAY_SIZE(algs));
	tcase_add_test(tc, references_free_the_pack_at_the_last);
	tcase_add_test(tc, a_missing_pack_item_is_corruption);
	tcase_add_loop_test(tc, damaged_items_are_refused, 0,
			    ARRAY_SIZE(item_cases));
	tcase_add_loop_test(tc, a_damaged_pack_is_caught, 0, ARRAY_SIZE(algs));
	tcase_add_loop_test(tc, the_packing_rule, 0, ARRAY_SIZE(tails));
	tcase_add_test(tc, a_pack_is_never_a_hole);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(pack_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
