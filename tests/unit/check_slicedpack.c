// SPDX-License-Identifier: MIT
/*
 * Unit tests: sliced packs (czfs(5) "Sliced packs").  Two compressed packs,
 * each holding the small clusters of two files, lie back to back in one
 * run, the second starting in the block where the first ends; each file
 * reads back through its pack; the items are checked; deleting the files
 * drops the packs' references, a pack's last its run's, and the run's last
 * frees its blocks; a damaged payload fails only its own pack's files.
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

#define NPACKS		2
#define PER_PACK	2
#define MEMBER		30000u		/* bytes of each file */
#define PACK_ULEN	(PER_PACK * MEMBER)

static struct czfs_fs *fs;
static struct czfs_bdev *dev;
static struct czfs_codec *codec;
static uint8_t data[NPACKS][PACK_ULEN];
static struct czfs_cluster_info packs[NPACKS];	/* SLICEs of the run */
static uint64_t run_at;
static unsigned run_blocks;

/* File j of pack p: inode 3 + p * PER_PACK + j, bytes [j * MEMBER, ..). */
static uint64_t ino_of(unsigned p, unsigned j)
{
	return 3 + p * PER_PACK + j;
}

static void fill(void)
{
	for (unsigned p = 0; p < NPACKS; p++)
		for (unsigned k = 0; k < PACK_ULEN; k++)
			data[p][k] = (uint8_t)("packdata"[(k / 7 + p) % 8] +
					       (k % (13 + p) == 0));
}

/* The PACK item at key offset at: its refs (0: none) and *pi. */
static uint32_t refs_at(uint64_t at, struct czfs_pack_info *pi)
{
	struct czfs_key key = { CZFS_PACK_OBJECTID, CZFS_ITEM_PACK, at };
	uint8_t val[64];
	int n = czfs_btree_lookup(&fs->tree, &key, val, sizeof(val));

	if (n == -ENOENT)
		return 0;
	ck_assert_int_eq(n, (int)sizeof(struct czfs_pack));
	ck_assert_int_eq(czfs_pack_item_decode(at, val, (unsigned)n,
					       fs->cp.max_blocks, pi), 0);
	return pi->refs;
}

/* Encode the packs, lay them in one run, store every item. */
static void make_packs(unsigned alg)
{
	struct czfs_cluster_policy pol = { .alg = alg };
	static uint8_t out[CZFS_MAX_CLUSTER_SIZE + CZFS_BLOCK_SIZE];
	static uint8_t run[CZFS_RUN_MAX_BLOCKS * CZFS_BLOCK_SIZE];
	struct czfs_pack_info pi;
	uint32_t used = 0;

	fill();
	memset(run, 0, sizeof(run));
	for (unsigned p = 0; p < NPACKS; p++) {
		struct czfs_cluster_header_info h;
		struct czfs_cluster_info c;
		unsigned out_len;

		ck_assert_int_eq(czfs_pack_encode(codec, &pol, data[p], PACK_ULEN,
						  out, &c, &out_len), 0);
		ck_assert_uint_eq(c.kind, CZFS_CLUSTER_COMPRESSED);
		czfs_cluster_header_decode(out, &h);
		memcpy(run + used, out + sizeof(struct czfs_cluster_header), h.clen);
		czfs_cluster_slice_make(&c, 0, used, h.clen, &packs[p]);
		used += h.clen;
	}
	run_blocks = DIV_ROUND_UP(used, CZFS_BLOCK_SIZE);
	ck_assert_int_eq(czfs_smap_alloc(&fs->smap, run_blocks, &run_at), 0);
	ck_assert_int_eq(czfs_bdev_write(fs->bdev, run,
					 (size_t)run_blocks * CZFS_BLOCK_SIZE,
					 run_at * CZFS_BLOCK_SIZE), 0);
	for (unsigned p = 0; p < NPACKS; p++) {
		packs[p].blkaddr += run_at;
		packs[p].run = run_at;
		for (unsigned j = 0; j < PER_PACK; j++) {
			struct czfs_cluster_info ci;
			struct czfs_stored d = { 0 };
			struct czfs_inode_info ii;

			czfs_cluster_packed_make(&packs[p], j * MEMBER, MEMBER, &ci);
			ck_assert(czfs_cluster_pack_sliced(&ci));
			ck_assert_int_eq(czfs_cluster_set(fs, ino_of(p, j), 0, &ci,
							  &d), 0);
			ck_assert_int_eq(d.blocks, 0);	/* the run's */
			ck_assert_int_eq(d.inline_bytes,
					 DIV_ROUND_UP(MEMBER * packs[p].slice_len,
						      PACK_ULEN));
			ck_assert_int_eq(czfs_inode_read(&fs->tree, ino_of(p, j),
							 &ii), 0);
			ii.size = MEMBER;
			ck_assert_int_eq(czfs_inode_store(fs, &ii), 0);
		}
		czfs_pack_of_stored(&packs[p], PER_PACK, &pi);
		ck_assert(pi.sliced);
		ck_assert_int_eq(czfs_pack_put(fs, &pi), 0);
	}
	/* the second pack starts in the block where the first ends */
	ck_assert_uint_eq(packs[1].blkaddr, packs[0].blkaddr + packs[0].nblocks - 1);
	ck_assert_uint_gt(packs[1].slice_off, 0);
	pi = (struct czfs_pack_info){ .blkaddr = run_at, .refs = NPACKS,
		.nblocks = run_blocks, .ulen = used, .run = true, .live = used };
	ck_assert_int_eq(czfs_pack_put(fs, &pi), 0);
}

static void setup(void)
{
	open_fresh_fs(&fs, &dev, &codec);
}

static void teardown(void)
{
	close_fresh_fs(fs, codec);
}

static long read_file(unsigned p, unsigned j, uint8_t *buf)
{
	struct czfs_inode_info ii;

	ck_assert_int_eq(czfs_inode_read(&fs->tree, ino_of(p, j), &ii), 0);
	return czfs_file_pread(fs, codec, &ii, buf, MEMBER, 0);
}

static void check_files(void)
{
	static uint8_t buf[MEMBER];

	for (unsigned p = 0; p < NPACKS; p++)
		for (unsigned j = 0; j < PER_PACK; j++) {
			ck_assert_int_eq(read_file(p, j, buf), MEMBER);
			ck_assert_mem_eq(buf, data[p] + j * MEMBER, MEMBER);
		}
}

static uint64_t key_of(unsigned p)
{
	return CZFS_PACK_SLICED_KEY(packs[p].blkaddr, packs[p].slice_off);
}

static const unsigned algs[] = { CZFS_ALG_LZ4, CZFS_ALG_LZ4HC, CZFS_ALG_ZSTD };

START_TEST(packed_files_read_back)
{
	make_packs(algs[_i]);
	check_files();
	commit_reopen(&fs, &dev);
	check_files();
	ck_assert(fs->sb.feature_incompat & CZFS_FEATURE_INCOMPAT_SLICED_PACKS);
}
END_TEST

START_TEST(the_last_file_frees_pack_then_run)
{
	struct czfs_pack_info pi, run;
	static uint8_t buf[MEMBER];

	make_packs(CZFS_ALG_LZ4);
	commit_reopen(&fs, &dev);
	ck_assert_uint_eq(refs_at(key_of(0), &pi), PER_PACK);
	ck_assert_uint_eq(refs_at(run_at, &run), NPACKS);
	ck_assert_int_eq(czfs_inode_destroy(fs, ino_of(0, 0)), 0);
	ck_assert_uint_eq(refs_at(key_of(0), &pi), PER_PACK - 1);
	ck_assert_uint_eq(refs_at(run_at, &run), NPACKS);	/* the pack holds */
	ck_assert_int_eq(czfs_inode_destroy(fs, ino_of(0, 1)), 0);
	ck_assert_uint_eq(refs_at(key_of(0), &pi), 0);		/* gone */
	ck_assert_uint_eq(refs_at(run_at, &run), NPACKS - 1);
	ck_assert_uint_eq(run.live, packs[1].slice_len);
	ck_assert_int_eq(read_file(1, 0, buf), MEMBER);
	ck_assert_mem_eq(buf, data[1], MEMBER);
	for (unsigned b = 0; b < run_blocks; b++)
		ck_assert(czfs_smap_test(&fs->smap, run_at + b));
	for (unsigned j = 0; j < PER_PACK; j++)
		ck_assert_int_eq(czfs_inode_destroy(fs, ino_of(1, j)), 0);
	ck_assert_uint_eq(refs_at(key_of(1), &pi), 0);
	ck_assert_uint_eq(refs_at(run_at, &run), 0);
	commit_reopen(&fs, &dev);	/* the space map reloads with its count */
	for (unsigned b = 0; b < run_blocks; b++)
		ck_assert(!czfs_smap_test(&fs->smap, run_at + b));
}
END_TEST

START_TEST(items_are_checked)
{
	uint8_t val[64], bad[64];
	struct czfs_pack_info pi, got;
	struct czfs_cluster_info ci;
	uint32_t bytes;
	unsigned len;

	make_packs(CZFS_ALG_ZSTD);
	/* a PACKED item names its sliced pack by the pack's key */
	czfs_cluster_packed_make(&packs[1], MEMBER, MEMBER, &ci);
	len = czfs_cluster_item_encode(&ci, val);
	ck_assert_uint_eq(len, 40);
	ck_assert_uint_eq(czfs_cluster_item_pack(val, len, &bytes), key_of(1));
	ck_assert_uint_eq(czfs_cluster_pack_key(&ci), key_of(1));
	ck_assert_int_eq(czfs_cluster_item_decode(val, len, 65536,
						  fs->cp.max_blocks, &ci), 0);
	ck_assert_uint_eq(ci.run, run_at);
	ck_assert_uint_eq(ci.slice_len, packs[1].slice_len);
	memcpy(bad, val, len);
	bad[38] = 255;			/* its run too far back to hold it */
	ck_assert_int_eq(czfs_cluster_item_decode(bad, len, 65536,
						  fs->cp.max_blocks, &ci),
			 -EFSCORRUPTED);
	memcpy(bad, val, len);
	memset(bad + 32, 0, 4);		/* not sliced, yet an offset and run */
	ck_assert_int_eq(czfs_cluster_item_decode(bad, len, 65536,
						  fs->cp.max_blocks, &ci),
			 -EFSCORRUPTED);
	memcpy(bad, val, len);
	bad[39] = 1;			/* reserved */
	ck_assert_int_eq(czfs_cluster_item_decode(bad, len, 65536,
						  fs->cp.max_blocks, &ci),
			 -EFSCORRUPTED);
	/* its PACK item */
	ck_assert_uint_eq(refs_at(key_of(1), &pi), PER_PACK);
	ck_assert(pi.sliced && !pi.run);
	ck_assert_uint_eq(pi.clen, packs[1].slice_len);
	ck_assert_uint_eq(pi.run_at, run_at);
	czfs_cluster_packed_make(&packs[1], 0, MEMBER, &ci);
	ck_assert(czfs_pack_matches(&pi, &ci));
	ci.slice_off++;
	ck_assert(!czfs_pack_matches(&pi, &ci));
	len = czfs_pack_item_encode(&pi, val);
	ck_assert_int_eq(czfs_pack_item_decode(pi.blkaddr, val, len,
					       fs->cp.max_blocks, &got),
			 -EFSCORRUPTED);	/* the flag without the key */
	memcpy(bad, val, len);
	bad[6] = 0;			/* the key without the flag */
	ck_assert_int_eq(czfs_pack_item_decode(key_of(1), bad, len,
					       fs->cp.max_blocks, &got),
			 -EFSCORRUPTED);
	memcpy(bad, val, len);
	bad[4] = 0;			/* a sliced pack is compressed */
	ck_assert_int_eq(czfs_pack_item_decode(key_of(1), bad, len,
					       fs->cp.max_blocks, &got),
			 -EFSCORRUPTED);
	memcpy(bad, val, len);
	bad[5]++;			/* blocks not what its payload touches */
	ck_assert_int_eq(czfs_pack_item_decode(key_of(1), bad, len,
					       fs->cp.max_blocks, &got),
			 -EFSCORRUPTED);
	memcpy(bad, val, len);
	bad[7] = 255;			/* its run too far back to hold it */
	ck_assert_int_eq(czfs_pack_item_decode(key_of(1), bad, len,
					       fs->cp.max_blocks, &got),
			 -EFSCORRUPTED);
	ck_assert_int_eq(czfs_pack_item_decode(key_of(1), val, len,
					       pi.blkaddr + pi.nblocks - 1, &got),
			 -EFSCORRUPTED);	/* past the image */
	memcpy(bad, val, len);
	memset(bad + 20, 1, 1);		/* reserved */
	ck_assert_int_eq(czfs_pack_item_decode(key_of(1), bad, len,
					       fs->cp.max_blocks, &got),
			 -EFSCORRUPTED);
}
END_TEST

/* A flipped payload byte fails the files of its pack, not the other's,
 * though the two share a block. */
START_TEST(a_damaged_pack_fails_only_its_files)
{
	static uint8_t buf[MEMBER];

	make_packs(algs[_i]);
	flip_image_byte(fs, packs[0].blkaddr * CZFS_BLOCK_SIZE +
			packs[0].slice_off + packs[0].slice_len / 2);
	for (unsigned j = 0; j < PER_PACK; j++) {
		ck_assert_int_eq(read_file(0, j, buf), -EFSCORRUPTED);
		ck_assert_int_eq(read_file(1, j, buf), MEMBER);
		ck_assert_mem_eq(buf, data[1] + j * MEMBER, MEMBER);
	}
}
END_TEST

static Suite *slicedpack_suite(void)
{
	Suite *s = suite_create("slicedpack");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, packed_files_read_back, 0, ARRAY_SIZE(algs));
	tcase_add_test(tc, the_last_file_frees_pack_then_run);
	tcase_add_test(tc, items_are_checked);
	tcase_add_loop_test(tc, a_damaged_pack_fails_only_its_files, 0,
			    ARRAY_SIZE(algs));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(slicedpack_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
