// SPDX-License-Identifier: MIT
/*
 * Unit tests: block-mapped clusters (cluster_blockmap.c and their items in
 * cluster_update.c).  The item's entries round trip and each damage is
 * refused; stored blocks decode with their checksums, zero entries read
 * as zeros; the writeback rule (hot or not); a BLOCKMAP replacing a RAW
 * or BLOCKMAP cluster keeps the blocks it names and frees the others, the
 * inode's count stays exact, a keep the old item cannot back is refused;
 * a scan of the tree in pieces finds each block-mapped cluster once.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "crc32c.h"
#include "fs.h"
#include "fs_testlib.h"
#include "inode.h"
#include "util.h"

#define BS		CZFS_BLOCK_SIZE
#define CB		(16 * BS)	/* 64 KiB clusters */
#define ITEM		((unsigned)sizeof(struct czfs_cluster))
#define ENTRY		((unsigned)sizeof(struct czfs_cluster_block))

/* A BLOCKMAP of ulen bytes whose entry i is addrs[i] (0: zeros), with the
 * checksums of blocks[i] when given, else of a block of byte i + 1. */
static void make_map(uint8_t *map, const uint64_t *addrs, unsigned n,
		     const uint8_t *blocks, struct czfs_cluster_info *ci,
		     unsigned ulen)
{
	uint8_t b[BS];

	*ci = (struct czfs_cluster_info){ .kind = CZFS_CLUSTER_BLOCKMAP,
					  .ulen = ulen, .inline_data = map,
					  .inline_len = n * ENTRY };
	for (unsigned i = 0; i < n; i++) {
		uint32_t crc = 0;

		if (addrs[i]) {
			memset(b, (int)(i + 1), BS);
			crc = czfs_crc32c(0, blocks ? blocks + (size_t)i * BS : b, BS);
			ci->nblocks++;
		}
		czfs_blockmap_set(map, i, addrs[i], crc);
	}
}

START_TEST(item_round_trip)
{
	static const uint64_t addrs[5] = { 100, 0, 102, 103, 0 };
	uint8_t map[5 * ENTRY], val[ITEM + CZFS_INLINE_MAX];
	struct czfs_cluster_info ci, got;
	unsigned len;

	/* given a map of five entries, two of them zeros, 18000 bytes */
	make_map(map, addrs, 5, NULL, &ci, 18000);

	/* when it is encoded and decoded */
	len = czfs_cluster_item_encode(&ci, val);
	ck_assert_uint_eq(len, ITEM + 5 * ENTRY);
	ck_assert_int_eq(czfs_cluster_item_decode(val, len, CB, 4096, &got), 0);

	/* then kind, counts and every entry come back */
	ck_assert_uint_eq(got.kind, CZFS_CLUSTER_BLOCKMAP);
	ck_assert_uint_eq(got.nblocks, 3);
	ck_assert_uint_eq(got.ulen, 18000);
	ck_assert_uint_eq(czfs_blockmap_entries(&got), 5);
	for (unsigned i = 0; i < 5; i++) {
		uint64_t a, b;
		uint32_t c1, c2;

		czfs_blockmap_get(&ci, i, &a, &c1);
		czfs_blockmap_get(&got, i, &b, &c2);
		ck_assert_uint_eq(a, b);
		ck_assert_uint_eq(c1, c2);
	}
	/* it names no data of its own in the inode's inline bytes */
	ck_assert_uint_eq(czfs_cluster_shared_bytes(&got), 0);
}
END_TEST

enum damage {
	D_SIZE_SHORT, D_SIZE_LONG, D_PAST_IMAGE, D_BELOW_DATA, D_ZERO_CRC,
	D_RESERVED, D_NBLOCKS, D_ALG, D_BLKADDR, D_CHECKSUM, D_ULEN_BIG,
	D_COUNT
};

START_TEST(damaged_items_are_refused)
{
	static const uint64_t addrs[4] = { 100, 0, 102, 103 };
	uint8_t map[4 * ENTRY], val[ITEM + CZFS_INLINE_MAX];
	struct czfs_cluster_info ci, got;
	struct czfs_cluster raw;
	unsigned len;

	/* given a good item of four entries */
	make_map(map, addrs, 4, NULL, &ci, 4 * BS);
	len = czfs_cluster_item_encode(&ci, val);
	ck_assert_int_eq(czfs_cluster_item_decode(val, len, CB, 4096, &got), 0);

	/* when one thing about it is wrong */
	memcpy(&raw, val, ITEM);
	switch (_i) {
	case D_SIZE_SHORT: len -= ENTRY; break;
	case D_SIZE_LONG: len += ENTRY; break;
	case D_PAST_IMAGE: czfs_blockmap_set(val + ITEM, 3, 4096, 1); break;
	case D_BELOW_DATA: czfs_blockmap_set(val + ITEM, 0, 1, 1); break;
	case D_ZERO_CRC: czfs_blockmap_set(val + ITEM, 1, 0, 7); break;
	case D_RESERVED: val[ITEM + ENTRY + 12] = 1; break;
	case D_NBLOCKS: raw.nblocks = 4; break;
	case D_ALG: raw.alg = CZFS_ALG_LZ4; break;
	case D_BLKADDR: raw.blkaddr = cpu_to_le64(100); break;
	case D_CHECKSUM: raw.checksum = cpu_to_le32(5); break;
	case D_ULEN_BIG: raw.ulen = cpu_to_le32(CB + 1); break;
	}
	if (_i >= D_NBLOCKS)
		memcpy(val, &raw, ITEM);

	/* then the decoder refuses it */
	ck_assert_int_eq(czfs_cluster_item_decode(val, len, CB, 4096, &got),
			 -EFSCORRUPTED);
}
END_TEST

START_TEST(stored_blocks_decode)
{
	static const uint64_t addrs[3] = { 100, 0, 102 };
	uint8_t map[3 * ENTRY];
	uint8_t *stored = malloc(3 * BS), *dst = malloc(CB);
	struct czfs_cluster_info ci;

	/* given stored blocks 0 and 2 (block 1 is zeros, never read) */
	ck_assert_ptr_nonnull(stored);
	ck_assert_ptr_nonnull(dst);
	memset(stored, 0xee, 3 * BS);
	memset(stored, 'a', BS);
	memset(stored + 2 * BS, 'c', BS);
	make_map(map, addrs, 3, stored, &ci, 2 * BS + 100);

	/* when decoded into a cluster buffer */
	memset(dst, 0x77, CB);
	ck_assert_int_eq(czfs_cluster_decode(NULL, &ci, stored, dst, CB), 0);

	/* then the blocks, zeros for the zero entry and past ulen */
	ck_assert_uint_eq(dst[0], 'a');
	ck_assert_uint_eq(dst[BS - 1], 'a');
	ck_assert(czfs_is_zero(dst + BS, BS));
	ck_assert_uint_eq(dst[2 * BS + 99], 'c');
	ck_assert(czfs_is_zero(dst + 2 * BS + 100, CB - 2 * BS - 100));

	/* and in place the same */
	memcpy(dst, stored, 3 * BS);
	ck_assert_int_eq(czfs_cluster_decode(NULL, &ci, dst, dst, CB), 0);
	ck_assert(czfs_is_zero(dst + BS, BS));
	ck_assert_uint_eq(dst[2 * BS], 'c');

	/* and a changed byte of a stored block is found */
	stored[2 * BS + 4000] ^= 1;
	ck_assert_int_eq(czfs_cluster_decode(NULL, &ci, stored, dst, CB),
			 -EFSCORRUPTED);
	free(stored);
	free(dst);
}
END_TEST

START_TEST(hot_rule)
{
	struct czfs_cluster_info comp = { .kind = CZFS_CLUSTER_COMPRESSED,
					  .ulen = CB };
	struct czfs_cluster_info tail = { .kind = CZFS_CLUSTER_COMPRESSED,
					  .ulen = 5 * BS + 10 };
	struct czfs_cluster_info hole = { .kind = CZFS_CLUSTER_HOLE };

	/* a block rewritten in a full cluster: hot */
	ck_assert(czfs_cluster_hot(&comp, 1ull << 7, CB, false));
	ck_assert(czfs_cluster_hot(&comp, 0x7fff, CB, false));
	/* written whole: compressed, as a sequential writer's */
	ck_assert(!czfs_cluster_hot(&comp, 0xffff, CB, false));
	/* a tail appended to (its partial last block on): not hot */
	ck_assert(!czfs_cluster_hot(&tail, 0x3e0, 10 * BS, false));
	/* ... but rewritten where it held full blocks: hot */
	ck_assert(czfs_cluster_hot(&tail, 0x3f0, 10 * BS, false));
	/* a hole written in part: nothing held, not hot */
	ck_assert(!czfs_cluster_hot(&hole, 1, CB, false));
	/* one block: always written whole */
	ck_assert(!czfs_cluster_hot(&comp, 0, 100, false));

	/* an fsync'd file's partial last cluster (a log's tail): hot, new
	 * (a journal written and fsync'd), appended to, or written whole */
	ck_assert(czfs_cluster_hot(&hole, 0x3ff, 10 * BS, true));
	ck_assert(czfs_cluster_hot(&tail, 0x3e0, 10 * BS, true));
	ck_assert(czfs_cluster_hot(&tail, 0x3ff, 10 * BS, true));
	/* ... unless it is one block (inline, packed or compressed) */
	ck_assert(!czfs_cluster_hot(&hole, 1, 100, true));
	ck_assert(!czfs_cluster_hot(&hole, 1, BS, true));
}
END_TEST

START_TEST(keeps_what_old_holds)
{
	static const uint64_t addrs[3] = { 100, 0, 102 };
	struct czfs_cluster_info raw = { .kind = CZFS_CLUSTER_RAW, .nblocks = 4,
					 .blkaddr = 50, .ulen = 4 * BS };
	struct czfs_cluster_info comp = { .kind = CZFS_CLUSTER_COMPRESSED,
					  .nblocks = 2, .blkaddr = 50,
					  .ulen = 4 * BS };
	struct czfs_cluster_info bm;
	uint8_t map[3 * ENTRY];
	uint64_t a;
	uint32_t crc;
	bool known;

	make_map(map, addrs, 3, NULL, &bm, 3 * BS);
	ck_assert(czfs_blockmap_keeps(&raw, 3, &a, &crc, &known));
	ck_assert_uint_eq(a, 53);
	ck_assert(!known);
	ck_assert(!czfs_blockmap_keeps(&raw, 4, &a, &crc, &known));
	ck_assert(czfs_blockmap_keeps(&bm, 2, &a, &crc, &known));
	ck_assert_uint_eq(a, 102);
	ck_assert(known);
	ck_assert(czfs_blockmap_keeps(&bm, 1, &a, &crc, &known));
	ck_assert_uint_eq(a, 0);
	ck_assert(!czfs_blockmap_keeps(&comp, 0, &a, &crc, &known));
}
END_TEST

/* ---- items in a file ----------------------------------------------------- */

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

/* Which of blocks [blk, blk + 16) the space map has in use. */
static unsigned in_use(uint64_t blk)
{
	unsigned m = 0;

	for (unsigned i = 0; i < 16; i++)
		m |= (unsigned)czfs_smap_test(&fs->smap, blk + i) << i;
	return m;
}

START_TEST(replacing_keeps_and_frees)
{
	struct czfs_cluster_info raw = { .kind = CZFS_CLUSTER_RAW, .nblocks = 16,
					 .ulen = CB }, bm, got;
	struct czfs_stored delta = { 0 };
	uint8_t map[16 * ENTRY], map2[16 * ENTRY], inl[CZFS_INLINE_MAX];
	struct czfs_inode_info ii;
	uint64_t addrs[16], blk, fresh;
	uint32_t crc;

	ck_assert_int_eq(czfs_inode_read(&fs->tree, 5, &ii), 0);
	ii.cluster_shift = 4;
	/* given a RAW cluster of 16 blocks */
	ck_assert_int_eq(czfs_smap_alloc(&fs->smap, 16, &blk), 0);
	raw.blkaddr = blk;
	ck_assert_int_eq(czfs_cluster_set(fs, 5, 0, &raw, &delta), 0);
	ck_assert_int_eq(delta.blocks, 16);
	commit_reopen(&fs, &dev);
	ck_assert_uint_eq(in_use(blk), 0xffff);

	/* when a BLOCKMAP replaces it keeping 13 blocks, writing 2 fresh
	 * ones (3 and 9) and making block 5 zeros */
	ck_assert_int_eq(czfs_smap_alloc(&fs->smap, 2, &fresh), 0);
	for (unsigned i = 0; i < 16; i++)
		addrs[i] = blk + i;
	addrs[3] = fresh;
	addrs[9] = fresh + 1;
	addrs[5] = 0;
	make_map(map, addrs, 16, NULL, &bm, CB);
	bm.fresh = 1u << 3 | 1u << 9;
	ck_assert_int_eq(czfs_cluster_write(fs, 5, 0, &bm, &delta), 0);

	/* then the three it does not keep are freed, the inode counts 15 */
	ck_assert_int_eq(delta.blocks, 15);
	commit_reopen(&fs, &dev);
	ck_assert_int_eq(czfs_cluster_lookup(fs, &ii, 0, 1, &got, inl), 0);
	ck_assert_uint_eq(got.kind, CZFS_CLUSTER_BLOCKMAP);
	ck_assert_uint_eq(got.nblocks, 15);
	ck_assert_uint_eq(in_use(blk), 0xffff & ~(1u << 3 | 1u << 5 | 1u << 9));
	ck_assert(czfs_smap_test(&fs->smap, fresh));
	ck_assert(czfs_smap_test(&fs->smap, fresh + 1));

	/* and a BLOCKMAP over it that keeps a block it does not hold there
	 * (block 4 named at index 6) is refused, nothing changed */
	memcpy(map2, inl, sizeof(map2));
	bm = got;
	bm.inline_data = map2;
	bm.fresh = 0;
	czfs_blockmap_set(map2, 6, blk + 4, 0);
	ck_assert_int_eq(czfs_cluster_write(fs, 5, 0, &bm, &delta), -ESTALE);

	/* and one with a checksum old does not have is refused too */
	memcpy(map2, inl, sizeof(map2));
	czfs_blockmap_get(&got, 0, &addrs[0], &crc);
	czfs_blockmap_set(map2, 0, addrs[0], crc + 1);
	ck_assert_int_eq(czfs_cluster_write(fs, 5, 0, &bm, &delta), -ESTALE);
	commit_reopen(&fs, &dev);
	ck_assert_uint_eq(in_use(blk), 0xffff & ~(1u << 3 | 1u << 5 | 1u << 9));

	/* and dropping the file's clusters frees every block */
	ck_assert_int_eq(czfs_clusters_drop(fs, 5, 0, &delta), 0);
	ck_assert_int_eq(delta.blocks, 0);
	commit_reopen(&fs, &dev);
	/* (the three freed first may hold tree nodes by now) */
	ck_assert_uint_eq(in_use(blk) & ~(1u << 3 | 1u << 5 | 1u << 9), 0);
	ck_assert(!czfs_smap_test(&fs->smap, fresh));
	ck_assert(!czfs_smap_test(&fs->smap, fresh + 1));
}
END_TEST

START_TEST(keeping_without_an_item_is_refused)
{
	static const uint64_t addrs[2] = { 200, 201 };
	struct czfs_stored delta = { 0 };
	struct czfs_cluster_info bm;
	uint8_t map[2 * ENTRY];

	make_map(map, addrs, 2, NULL, &bm, 2 * BS);
	ck_assert_int_eq(czfs_cluster_write(fs, 6, 0, &bm, &delta), -ESTALE);
	bm.fresh = 3;		/* both written now: fine */
	ck_assert_int_eq(czfs_cluster_write(fs, 6, 0, &bm, &delta), 0);
	ck_assert_int_eq(delta.blocks, 2);
	ck_assert(fs->sb.feature_incompat & CZFS_FEATURE_INCOMPAT_BLOCKMAP);
}
END_TEST

/* scan: what czfs_cluster_scan found, in order */
struct found {
	uint64_t ino[16], idx[16];
	unsigned n;
};

static int found_one(void *arg, uint64_t ino, uint64_t idx)
{
	struct found *f = arg;

	ck_assert_uint_lt(f->n, 16);
	f->ino[f->n] = ino;
	f->idx[f->n++] = idx;
	return 0;
}

START_TEST(scan_finds_each_once)
{
	static const struct { uint64_t ino, idx; bool bm; } put[] = {
		{ 5, 0, true }, { 5, 1, false }, { 5, 3, true },
		{ 6, 0, false }, { 6, 1, true }, { 7, 9, true },
	};
	struct czfs_stored delta = { 0 };
	uint8_t map[2 * ENTRY];

	/* given block-mapped clusters among raw ones of three files */
	for (unsigned i = 0; i < sizeof(put) / sizeof(put[0]); i++) {
		struct czfs_cluster_info ci;
		uint64_t addrs[2];

		ck_assert_int_eq(czfs_smap_alloc(&fs->smap, 2, &addrs[0]), 0);
		addrs[1] = addrs[0] + 1;
		if (put[i].bm) {
			make_map(map, addrs, 2, NULL, &ci, 2 * BS);
			ci.fresh = 3;
		} else {
			ci = (struct czfs_cluster_info){ .kind = CZFS_CLUSTER_RAW,
				.nblocks = 2, .blkaddr = addrs[0], .ulen = 2 * BS };
		}
		ck_assert_int_eq(czfs_cluster_write(fs, put[i].ino, put[i].idx,
						    &ci, &delta), 0);
	}
	commit_reopen(&fs, &dev);

	/* when the tree is walked in pieces of _i items (0: all at once) */
	struct czfs_key next = { 0 };
	struct found f = { .n = 0 };
	unsigned pieces = 0;
	int ret;

	do {
		ret = czfs_cluster_scan(fs, CZFS_CLUSTER_BLOCKMAP, &next,
					_i ? (unsigned)_i : 100000, found_one, &f);
		ck_assert_int_ge(ret, 0);
		ck_assert_uint_lt(++pieces, 1000);
	} while (ret == 0);

	/* then each block-mapped cluster is found once, in key order */
	ck_assert_uint_eq(f.n, 4);
	ck_assert(f.ino[0] == 5 && f.idx[0] == 0);
	ck_assert(f.ino[1] == 5 && f.idx[1] == 3);
	ck_assert(f.ino[2] == 6 && f.idx[2] == 1);
	ck_assert(f.ino[3] == 7 && f.idx[3] == 9);
	if (_i == 1)
		ck_assert_uint_gt(pieces, 6);	/* it did stop and go on */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("blockmap");
	TCase *tc = tcase_create("codec"), *tf = tcase_create("items");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, item_round_trip);
	tcase_add_loop_test(tc, damaged_items_are_refused, 0, D_COUNT);
	tcase_add_test(tc, stored_blocks_decode);
	tcase_add_test(tc, hot_rule);
	tcase_add_test(tc, keeps_what_old_holds);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(tf, setup, teardown);
	tcase_add_test(tf, replacing_keeps_and_frees);
	tcase_add_test(tf, keeping_without_an_item_is_refused);
	tcase_add_loop_test(tf, scan_finds_each_once, 0, 4);
	suite_add_tcase(s, tf);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
