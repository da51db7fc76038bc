// SPDX-License-Identifier: MIT
/*
 * Unit tests: sliced clusters.  Three compressed clusters (two of one
 * file, one of another) lie back to back in one run, straddling block
 * boundaries; each reads back; damaged items, run items and payloads are
 * refused; rewriting, destroying and truncating drop their references,
 * and the last one frees the run's blocks (space map exact across a
 * reopen).
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

#define CBYTES	65536u			/* the test image's clusters */
#define NSLICES	3

static struct czfs_fs *fs;
static struct czfs_bdev *dev;
static struct czfs_codec *codec;
/* slice i: inode, cluster index, data */
static const uint64_t inos[NSLICES] = { 5, 5, 6 };
static const uint64_t idxs[NSLICES] = { 0, 1, 0 };
static uint8_t data[NSLICES][CBYTES];
static struct czfs_cluster_info slices[NSLICES];
static uint64_t run_at;
static uint32_t run_used;
static uint32_t live;			/* the run's, as refs() found it */

static void fill(unsigned seed)
{
	for (unsigned i = 0; i < NSLICES; i++)
		for (unsigned k = 0; k < CBYTES; k++)
			data[i][k] = (uint8_t)("abcdefgh"[(k / 5 + i + seed) % 8] +
					       (k % (11 + i) == 0) + (k * 7919 % 251 == 0));
}

/* Encode the clusters, lay their payloads in one run, store its items. */
static void make_run(unsigned alg)
{
	struct czfs_cluster_policy pol = { .alg = alg, .zero_detect = true };
	static uint8_t out[CZFS_MAX_CLUSTER_SIZE + CZFS_BLOCK_SIZE];
	static uint8_t run[CZFS_RUN_MAX_BLOCKS * CZFS_BLOCK_SIZE];
	struct czfs_pack_info pi;
	uint8_t val[64];
	unsigned nblocks;

	fill(alg);
	run_used = 0;
	memset(run, 0, sizeof(run));
	for (unsigned i = 0; i < NSLICES; i++) {
		struct czfs_cluster_header_info h;
		struct czfs_cluster_info c;
		unsigned out_len;

		ck_assert_int_eq(czfs_cluster_encode(codec, &pol, data[i], CBYTES,
						     out, &c, &out_len), 0);
		ck_assert_uint_eq(c.kind, CZFS_CLUSTER_COMPRESSED);
		czfs_cluster_header_decode(out, &h);
		memcpy(run + run_used, out + sizeof(struct czfs_cluster_header), h.clen);
		czfs_cluster_slice_make(&c, 0, run_used, h.clen, &slices[i]);
		run_used += h.clen;
	}
	ck_assert_uint_gt(run_used % CZFS_BLOCK_SIZE, 0);
	nblocks = DIV_ROUND_UP(run_used, CZFS_BLOCK_SIZE);
	ck_assert_int_eq(czfs_smap_alloc(&fs->smap, nblocks, &run_at), 0);
	ck_assert_int_eq(czfs_bdev_write(fs->bdev, run,
					 (size_t)nblocks * CZFS_BLOCK_SIZE,
					 run_at * CZFS_BLOCK_SIZE), 0);
	for (unsigned i = 0; i < NSLICES; i++) {
		struct czfs_stored d = { 0 };
		struct czfs_inode_info ii;

		slices[i].blkaddr += run_at;
		slices[i].run = run_at;
		ck_assert_int_eq(czfs_cluster_set(fs, inos[i], idxs[i], &slices[i],
						  &d), 0);
		ck_assert_int_eq(d.blocks, 0);		/* the run's, not its */
		ck_assert_int_eq(d.inline_bytes, slices[i].slice_len);
		ck_assert_int_eq(czfs_inode_read(&fs->tree, inos[i], &ii), 0);
		ii.size = (idxs[i] + 1) * CBYTES;
		ck_assert_int_eq(czfs_inode_store(fs, &ii), 0);
	}
	/* the second slice starts in the block where the first ends */
	ck_assert_uint_eq(slices[1].blkaddr, slices[0].blkaddr +
			  slices[0].nblocks - 1);
	pi = (struct czfs_pack_info){ .blkaddr = run_at, .refs = NSLICES,
		.nblocks = nblocks, .ulen = run_used, .run = true,
		.live = run_used };
	for (unsigned i = 0; i < NSLICES; i++)
		ck_assert(czfs_pack_matches(&pi, &slices[i]));
	ck_assert_int_eq(czfs_pack_put(fs, &pi), 0);
	czfs_cluster_item_encode(&slices[2], val);
	ck_assert_uint_eq(czfs_cluster_item_pack(val, 40, &live), run_at);
	ck_assert_uint_eq(live, slices[2].slice_len);
}

static void setup(void)
{
	open_fresh_fs(&fs, &dev, &codec);
}

static void teardown(void)
{
	close_fresh_fs(fs, codec);
}

static long read_cluster(unsigned i, uint8_t *buf)
{
	struct czfs_inode_info ii;

	ck_assert_int_eq(czfs_inode_read(&fs->tree, inos[i], &ii), 0);
	return czfs_file_pread(fs, codec, &ii, buf, CBYTES, idxs[i] * CBYTES);
}

static void check_slices(void)
{
	static uint8_t buf[CBYTES];

	for (unsigned i = 0; i < NSLICES; i++) {
		ck_assert_int_eq(read_cluster(i, buf), CBYTES);
		ck_assert_mem_eq(buf, data[i], CBYTES);
	}
}

static uint32_t refs(void)
{
	struct czfs_key key = { CZFS_PACK_OBJECTID, CZFS_ITEM_PACK, run_at };
	struct czfs_pack_info pi;
	uint8_t val[64];
	int n = czfs_btree_lookup(&fs->tree, &key, val, sizeof(val));

	if (n == -ENOENT)
		return 0;
	live = 0;
	ck_assert_int_eq(n, (int)sizeof(struct czfs_pack));
	ck_assert_int_eq(czfs_pack_item_decode(run_at, val, (unsigned)n,
					       fs->cp.max_blocks, &pi), 0);
	ck_assert(pi.run);
	live = pi.live;
	return pi.refs;
}

static const unsigned algs[] = { CZFS_ALG_LZ4, CZFS_ALG_LZ4HC, CZFS_ALG_ZSTD };

START_TEST(slices_read_back)
{
	make_run(algs[_i]);
	check_slices();
	commit_reopen(&fs, &dev);
	check_slices();
	ck_assert(fs->sb.feature_incompat & CZFS_FEATURE_INCOMPAT_SLICED);
}
END_TEST

START_TEST(references_free_the_run_at_the_last)
{
	struct czfs_cluster_info raw = { .kind = CZFS_CLUSTER_RAW, .nblocks = 1,
					 .ulen = 100 };
	static uint8_t buf[CBYTES];
	struct czfs_stored d = { 0 };
	unsigned nblocks;

	make_run(CZFS_ALG_LZ4);
	nblocks = DIV_ROUND_UP(run_used, CZFS_BLOCK_SIZE);
	commit_reopen(&fs, &dev);
	ck_assert_uint_eq(refs(), 3);
	ck_assert_uint_eq(live, run_used);
	/* a rewrite moves file 5's first cluster out */
	ck_assert_int_eq(czfs_smap_alloc(&fs->smap, 1, &raw.blkaddr), 0);
	ck_assert_int_eq(czfs_cluster_set(fs, 5, 0, &raw, &d), 0);
	ck_assert_uint_eq(refs(), 2);
	ck_assert_uint_eq(live, run_used - slices[0].slice_len);
	ck_assert_uint_eq(d.underused, 0);	/* two thirds live */
	d = (struct czfs_stored){ 0 };
	ck_assert_int_eq(czfs_smap_alloc(&fs->smap, 1, &raw.blkaddr), 0);
	ck_assert_int_eq(czfs_cluster_set(fs, 5, 1, &raw, &d), 0);
	ck_assert_uint_eq(d.underused, 1);	/* one third: move it */
	ck_assert_uint_eq(refs(), 1);
	ck_assert_uint_eq(live, slices[2].slice_len);
	ck_assert_int_eq(read_cluster(2, buf), CBYTES);
	ck_assert_mem_eq(buf, data[2], CBYTES);
	for (unsigned b = 0; b < nblocks; b++)
		ck_assert(czfs_smap_test(&fs->smap, run_at + b));
	/* a destroy drops the last (file 6's): the run's blocks are free */
	ck_assert_int_eq(czfs_inode_destroy(fs, 6), 0);
	ck_assert_uint_eq(refs(), 0);
	commit_reopen(&fs, &dev);	/* the space map reloads with its count */
	for (unsigned b = 0; b < nblocks; b++)
		ck_assert(!czfs_smap_test(&fs->smap, run_at + b));
}
END_TEST

START_TEST(a_truncate_drops_its_slices)
{
	struct czfs_stored d = { 0 };

	make_run(CZFS_ALG_ZSTD);
	ck_assert_int_eq(czfs_clusters_drop(fs, 5, 0, &d), 0);	/* 0 and 1 */
	ck_assert_uint_eq(refs(), 1);
	ck_assert_uint_eq(live, slices[2].slice_len);
	ck_assert_int_eq(-d.inline_bytes, slices[0].slice_len + slices[1].slice_len);
	ck_assert_int_eq(d.blocks, 0);
}
END_TEST

START_TEST(a_missing_run_item_is_corruption)
{
	struct czfs_key key = { CZFS_PACK_OBJECTID, CZFS_ITEM_PACK, 0 };
	struct czfs_stored d = { 0 };

	make_run(CZFS_ALG_LZ4);
	key.offset = run_at;
	ck_assert_int_eq(czfs_btree_delete(&fs->tree, &key), 0);
	ck_assert_int_eq(czfs_clusters_drop(fs, 6, 0, &d), -EFSCORRUPTED);
}
END_TEST

/* Byte offsets in the 40-byte item and what they are set to. */
struct item_case {
	unsigned off, size;
	uint64_t value;
};

static const struct item_case item_cases[] = {
	{ 24, 4, 4096 },		/* offset past its first block */
	{ 28, 4, 0 },			/* no payload */
	{ 28, 4, 65536 - 4096 - 15 },	/* saves no block */
	{ 2, 1, 5 },			/* nblocks not what it touches */
	{ 32, 8, 1001 },		/* run after its first block */
	{ 32, 8, 1000 - 252 },		/* blocks past the run's 255 */
	{ 32, 8, 2 },			/* run in the fixed blocks */
	{ 1, 1, 0 },			/* no algorithm */
	{ 1, 1, CZFS_ALG_MAX + 1 },	/* unknown algorithm */
	{ 8, 8, 4095 },			/* blocks past the image */
};

START_TEST(damaged_items_are_refused)
{
	const struct item_case *tc = &item_cases[_i];
	struct czfs_cluster_info c = { .kind = CZFS_CLUSTER_COMPRESSED,
		.alg = CZFS_ALG_LZ4, .nblocks = 4, .checksum = 7, .ulen = 65536 };
	struct czfs_cluster_info ci, got;
	uint8_t val[sizeof(struct czfs_cluster) + CZFS_INLINE_MAX];
	unsigned len;

	/* 12000 bytes at 3000 of the run at 1000: blocks 1000..1003 */
	czfs_cluster_slice_make(&c, 1000, 3000, 12000, &ci);
	ck_assert_uint_eq(ci.blkaddr, 1000);
	ck_assert_uint_eq(ci.nblocks, 4);
	len = czfs_cluster_item_encode(&ci, val);
	ck_assert_uint_eq(len, 40);
	ck_assert_int_eq(czfs_cluster_item_decode(val, len, 65536, 4096, &got), 0);
	ck_assert_uint_eq(got.kind, CZFS_CLUSTER_SLICE);
	ck_assert_uint_eq(got.slice_off, 3000);
	ck_assert_uint_eq(got.slice_len, 12000);
	ck_assert_uint_eq(got.run, 1000);
	ck_assert_uint_eq(czfs_cluster_shared_bytes(&got), 12000);
	memcpy(val + tc->off, &tc->value, tc->size);	/* little-endian host */
	ck_assert_int_eq(czfs_cluster_item_decode(val, len, 65536, 4096, &got),
			 -EFSCORRUPTED);
	ck_assert_int_eq(czfs_cluster_item_decode(val, 24, 65536, 4096, &got),
			 -EFSCORRUPTED);
}
END_TEST

/* A run's PACK item: fields and what each damage looks like. */
START_TEST(run_items_are_checked)
{
	struct czfs_pack_info pi = { .blkaddr = 100, .refs = 2, .nblocks = 255,
				     .ulen = 255 * 4096 - 7, .run = true,
				     .live = 255 * 4096 - 9 }, got;
	struct czfs_cluster_info in = { .kind = CZFS_CLUSTER_SLICE,
		.blkaddr = 354, .nblocks = 1, .slice_off = 0,
		.slice_len = 4089, .run = 100 };
	uint8_t val[sizeof(struct czfs_pack)], bad[sizeof(val)];

	ck_assert_uint_eq(czfs_pack_item_encode(&pi, val), sizeof(val));
	ck_assert_int_eq(czfs_pack_item_decode(100, val, sizeof(val), 4096, &got), 0);
	ck_assert(got.run);
	ck_assert_uint_eq(got.nblocks, 255);
	ck_assert_uint_eq(got.ulen, pi.ulen);
	ck_assert_uint_eq(got.live, pi.live);
	ck_assert_uint_eq(got.checksum, 0);
	ck_assert(!czfs_run_underused(&got));
	got.live = got.ulen / 2 - 1;
	ck_assert(czfs_run_underused(&got));
	got.live = pi.live;
	ck_assert(czfs_pack_matches(&got, &in));
	in.slice_len++;			/* one byte past what the run holds */
	ck_assert(!czfs_pack_matches(&got, &in));
	got.run = false;		/* a pack is not a run */
	in.slice_len--;
	ck_assert(!czfs_pack_matches(&got, &in));
	memcpy(bad, val, sizeof(val));
	bad[4] = CZFS_ALG_LZ4;		/* a run has no codec */
	ck_assert_int_eq(czfs_pack_item_decode(100, bad, sizeof(bad), 4096, &got),
			 -EFSCORRUPTED);
	memcpy(bad, val, sizeof(val));
	memset(bad + 12, 0, 4);		/* nothing live */
	ck_assert_int_eq(czfs_pack_item_decode(100, bad, sizeof(bad), 4096, &got),
			 -EFSCORRUPTED);
	memset(bad + 12, 0xff, 4);	/* more live than it holds */
	ck_assert_int_eq(czfs_pack_item_decode(100, bad, sizeof(bad), 4096, &got),
			 -EFSCORRUPTED);
	memcpy(bad, val, sizeof(val));
	bad[5] = 254;			/* ulen past its blocks */
	ck_assert_int_eq(czfs_pack_item_decode(100, bad, sizeof(bad), 4096, &got),
			 -EFSCORRUPTED);
	memcpy(bad, val, sizeof(val));
	bad[6] = 0x04;			/* an unknown flag */
	ck_assert_int_eq(czfs_pack_item_decode(100, bad, sizeof(bad), 4096, &got),
			 -EFSCORRUPTED);
	ck_assert_int_eq(czfs_pack_item_decode(100, val, sizeof(val), 300, &got),
			 -EFSCORRUPTED);	/* past the image */
}
END_TEST

/* A flipped payload byte fails its slice only, not its neighbours, even
 * those that share its blocks. */
START_TEST(a_damaged_payload_is_caught)
{
	static uint8_t buf[CBYTES];

	make_run(algs[_i]);
	/* the middle byte of slice 1's payload */
	flip_image_byte(fs, slices[1].blkaddr * CZFS_BLOCK_SIZE +
			slices[1].slice_off + slices[1].slice_len / 2);
	ck_assert_int_eq(read_cluster(1, buf), -EFSCORRUPTED);
	for (unsigned i = 0; i < NSLICES; i += 2) {
		ck_assert_int_eq(read_cluster(i, buf), CBYTES);
		ck_assert_mem_eq(buf, data[i], CBYTES);
	}
}
END_TEST

static Suite *slice_suite(void)
{
	Suite *s = suite_create("slice");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, slices_read_back, 0, ARRAY_SIZE(algs));
	tcase_add_test(tc, references_free_the_run_at_the_last);
	tcase_add_test(tc, a_truncate_drops_its_slices);
	tcase_add_test(tc, a_missing_run_item_is_corruption);
	tcase_add_loop_test(tc, damaged_items_are_refused, 0,
			    ARRAY_SIZE(item_cases));
	tcase_add_test(tc, run_items_are_checked);
	tcase_add_loop_test(tc, a_damaged_payload_is_caught, 0, ARRAY_SIZE(algs));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(slice_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
