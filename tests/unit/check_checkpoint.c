// SPDX-License-Identifier: MIT
/* Unit tests: checkpoint layout, encode/decode, validation, slot choice. */
#include "config.h"

#include <check.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "bdev.h"
#include "crc32c.h"
#include "log.h"
#include "super.h"
#include "util.h"

static char last_err[512];
static unsigned nr_warn;

static void capture_sink(enum czfs_log_level level, const char *msg)
{
	if (level <= CZFS_LOG_ERR)
		snprintf(last_err, sizeof(last_err), "%s", msg);
	else if (level == CZFS_LOG_WARN)
		nr_warn++;
}

static void setup(void)
{
	last_err[0] = '\0';
	nr_warn = 0;
	czfs_log_set_sink(capture_sink, CZFS_LOG_DEBUG);
}

static void teardown(void)
{
	czfs_log_set_sink(NULL, CZFS_LOG_INFO);
}

#define MAX_BLOCKS	(600ull * CZFS_SMAP_BITS_PER_BLOCK)	/* 3 index */

/* A checkpoint with a distinct value in every field. */
static void sample_cp(struct czfs_cp_info *cp, uint64_t gen)
{
	memset(cp, 0, sizeof(*cp));
	cp->generation = gen;
	cp->root_blkaddr = 77777;
	cp->root_generation = gen - 1;
	cp->root_level = 3;
	cp->flags = CZFS_CP_CLEAN_UMOUNT;
	cp->image_blocks = 100000;
	cp->max_blocks = MAX_BLOCKS;
	cp->used_blocks = 54321;
	cp->next_ino = 1000;
	cp->inode_count = 997;
	cp->commit_time = -42;
	cp->commit_nsec = 123456789;
	cp->mount_count = 17;
	cp->nr_smap_index = czfs_smap_index_count(MAX_BLOCKS);
	cp->smap_index[0] = 5000;
	cp->smap_index[1] = 0;
	cp->smap_index[2] = 6000;
}

static uint64_t get_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

static void put_le(uint8_t *p, unsigned n, uint64_t v)
{
	for (unsigned i = 0; i < n; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

/* The test's own checksum: crc32c of the block with bytes 0..3 zero. */
static void reseal(uint8_t *blk)
{
	memset(blk, 0, 4);
	put_le(blk, 4, czfs_crc32c(0, blk, CZFS_BLOCK_SIZE));
}

START_TEST(roundtrip_every_field)
{
	struct czfs_cp_info in, out;
	uint8_t blk[CZFS_BLOCK_SIZE];

	/* given a checkpoint of odd generation, in slot 2 */
	sample_cp(&in, 7);
	memset(blk, 0xee, sizeof(blk));		/* encode clears stale bytes */
	czfs_cp_encode(&in, CZFS_CP_BLKADDR1, blk);
	/* when decoded from the same slot, then every field comes back */
	ck_assert_int_eq(czfs_cp_decode(blk, CZFS_CP_BLKADDR1, &out), 0);
	ck_assert_uint_eq(out.generation, 7);
	ck_assert_uint_eq(out.root_blkaddr, 77777);
	ck_assert_uint_eq(out.root_generation, 6);
	ck_assert_uint_eq(out.root_level, 3);
	ck_assert_uint_eq(out.flags, CZFS_CP_CLEAN_UMOUNT);
	ck_assert_uint_eq(out.image_blocks, 100000);
	ck_assert_uint_eq(out.max_blocks, MAX_BLOCKS);
	ck_assert_uint_eq(out.used_blocks, 54321);
	ck_assert_uint_eq(out.next_ino, 1000);
	ck_assert_uint_eq(out.inode_count, 997);
	ck_assert_int_eq(out.commit_time, -42);
	ck_assert_uint_eq(out.commit_nsec, 123456789);
	ck_assert_uint_eq(out.mount_count, 17);
	ck_assert_uint_eq(out.nr_smap_index, 3);
	ck_assert_uint_eq(out.smap_index[0], 5000);
	ck_assert_uint_eq(out.smap_index[1], 0);
	ck_assert_uint_eq(out.smap_index[2], 6000);
	ck_assert(czfs_is_zero(blk + offsetof(struct czfs_checkpoint,
					      smap_index[3]),
			       CZFS_BLOCK_SIZE -
			       offsetof(struct czfs_checkpoint, smap_index[3])));
}
END_TEST

START_TEST(layout_offsets)
{
	struct czfs_cp_info cp;
	uint8_t blk[CZFS_BLOCK_SIZE];

	ck_assert_uint_eq(offsetof(struct czfs_checkpoint, checksum), 0);
	ck_assert_uint_eq(offsetof(struct czfs_checkpoint, magic), 4);
	ck_assert_uint_eq(offsetof(struct czfs_checkpoint, blkaddr), 8);
	ck_assert_uint_eq(offsetof(struct czfs_checkpoint, generation), 16);
	ck_assert_uint_eq(offsetof(struct czfs_checkpoint, root_level), 40);
	ck_assert_uint_eq(offsetof(struct czfs_checkpoint, nr_smap_index), 42);
	ck_assert_uint_eq(offsetof(struct czfs_checkpoint, used_blocks), 64);
	ck_assert_uint_eq(offsetof(struct czfs_checkpoint, smap_index), 128);

	sample_cp(&cp, 8);
	czfs_cp_encode(&cp, CZFS_CP_BLKADDR0, blk);
	ck_assert_mem_eq(blk + 4, "CZCP", 4);
	ck_assert_uint_eq(get_le(blk + 8, 8), CZFS_CP_BLKADDR0);
	ck_assert_uint_eq(get_le(blk + 16, 8), 8);
	ck_assert_uint_eq(get_le(blk + 24, 8), 77777);
	ck_assert_uint_eq(blk[40], 3);
	ck_assert_uint_eq(get_le(blk + 42, 2), 3);
	ck_assert_uint_eq(get_le(blk + 64, 8), 54321);
	ck_assert_uint_eq(get_le(blk + 128, 8), 5000);
	ck_assert_uint_eq(get_le(blk + 144, 8), 6000);
	/* the checksum covers the whole block with the field zeroed */
	{
		uint32_t stored = (uint32_t)get_le(blk, 4);

		reseal(blk);
		ck_assert_uint_eq(get_le(blk, 4), stored);
	}
}
END_TEST

static const struct corrupt_case {
	const char *name;
	unsigned off, len;
	uint64_t val;
	bool reseal;
	int err;
	const char *msg;
} corrupt_cases[] = {
	{ "magic", 4, 4, 0x11111111, true, -EFSCORRUPTED, "bad magic" },
	{ "checksum", 200, 1, 0x42, false, -EFSCORRUPTED, "bad checksum" },
	{ "blkaddr", 8, 8, 2, true, -EFSCORRUPTED, "written for block 2" },
	{ "generation 0", 16, 8, 0, true, -EFSCORRUPTED, "generation 0" },
	{ "slot parity", 16, 8, 9, true, -EFSCORRUPTED, "generation 9" },
	{ "root_level", 40, 1, CZFS_MAX_LEVEL, true, -EFSCORRUPTED,
	  "root_level" },
	{ "root_blkaddr past max", 24, 8, MAX_BLOCKS, true, -EFSCORRUPTED,
	  "root_blkaddr" },
	{ "root_blkaddr in header", 24, 8, 2, true, -EFSCORRUPTED,
	  "root_blkaddr" },
	{ "root_blkaddr 0", 24, 8, 0, true, 0, NULL },
	{ "image_blocks", 48, 8, MAX_BLOCKS + 1, true, -EFSCORRUPTED,
	  "image_blocks" },
	{ "used_blocks", 64, 8, 100001, true, -EFSCORRUPTED, "used_blocks" },
	{ "next_ino low", 72, 8, 1, true, -EFSCORRUPTED, "next_ino" },
	{ "next_ino high", 72, 8, CZFS_MAX_INO + 1, true, -EFSCORRUPTED,
	  "next_ino" },
	{ "next_ino max", 72, 8, CZFS_MAX_INO, true, 0, NULL },
	{ "nr_smap_index", 42, 2, 2, true, -EFSCORRUPTED, "index blocks" },
	{ "nr_smap_index huge", 42, 2, 60000, true, -EFSCORRUPTED,
	  "index blocks" },
	{ "max_blocks", 56, 8, 1ull << 40, true, -EFSCORRUPTED,
	  "index blocks" },
	{ "smap_index past max", 144, 8, MAX_BLOCKS, true, -EFSCORRUPTED,
	  "index 2 address" },
	{ "smap_index in header", 128, 8, 1, true, -EFSCORRUPTED,
	  "index 0 address" },
};

START_TEST(corruption_table)
{
	const struct corrupt_case *c = &corrupt_cases[_i];
	struct czfs_cp_info cp, out;
	uint8_t blk[CZFS_BLOCK_SIZE];
	int err;

	/* given a valid checkpoint of slot 1 with one field changed */
	sample_cp(&cp, 8);
	czfs_cp_encode(&cp, CZFS_CP_BLKADDR0, blk);
	put_le(blk + c->off, c->len, c->val);
	if (c->reseal)
		reseal(blk);
	/* when it is decoded, then that field's check fails */
	err = czfs_cp_decode(blk, CZFS_CP_BLKADDR0, &out);
	ck_assert_msg(err == c->err, "%s: got %d want %d", c->name, err, c->err);
	if (c->msg)
		ck_assert_msg(strstr(last_err, c->msg), "%s: message \"%s\"",
			      c->name, last_err);
	else
		ck_assert_str_eq(last_err, "");
}
END_TEST

START_TEST(wrong_slot)
{
	struct czfs_cp_info cp, out;
	uint8_t blk[CZFS_BLOCK_SIZE];

	/* given a checkpoint written for slot 1 */
	sample_cp(&cp, 8);
	czfs_cp_encode(&cp, CZFS_CP_BLKADDR0, blk);
	/* when read back from slot 2, then it is refused */
	ck_assert_int_eq(czfs_cp_decode(blk, CZFS_CP_BLKADDR1, &out),
			 -EFSCORRUPTED);
	/* and an even generation encoded for slot 2 is refused there */
	czfs_cp_encode(&cp, CZFS_CP_BLKADDR1, blk);
	ck_assert_int_eq(czfs_cp_decode(blk, CZFS_CP_BLKADDR1, &out),
			 -EFSCORRUPTED);
	ck_assert_ptr_nonnull(strstr(last_err, "does not belong"));
}
END_TEST

START_TEST(index_count)
{
	static const struct { uint64_t max; unsigned n; } cases[] = {
		{ 4, 1 }, { 32768, 1 }, { 32769, 1 },
		{ 254ull * 32768, 1 }, { 254ull * 32768 + 1, 2 },
		{ 600ull * 32768, 3 }, { 1ull << 32, 517 },
		{ 496ull * 254 * 32768, 496 }, { 496ull * 254 * 32768 + 1, 497 },
	};

	for (unsigned i = 0; i < ARRAY_SIZE(cases); i++)
		ck_assert_uint_eq(czfs_smap_index_count(cases[i].max),
				  cases[i].n);
	/* no overflow near 2^64 */
	ck_assert_uint_gt(czfs_smap_index_count(UINT64_MAX), 496);
	ck_assert_uint_gt(czfs_smap_index_count(UINT64_MAX - 5), 496);
}
END_TEST

/* An in-memory image with checkpoints of generations g0 (slot 1), g1. */
static struct czfs_bdev *image_with(uint64_t gen_a, uint64_t gen_b,
				    struct czfs_sb_info *sb)
{
	struct czfs_bdev *b;
	struct czfs_cp_info cp;

	czfs_super_init(sb);
	sb->max_blocks = MAX_BLOCKS;
	ck_assert_int_eq(czfs_bdev_mem_create(16 * CZFS_BLOCK_SIZE,
					      CZFS_BDEV_DIRECT, &b), 0);
	sample_cp(&cp, gen_a);
	ck_assert_int_eq(czfs_cp_write(b, sb, &cp), 0);
	sample_cp(&cp, gen_b);
	cp.root_blkaddr = 88888;
	ck_assert_int_eq(czfs_cp_write(b, sb, &cp), 0);
	return b;
}

static void smash_slot(struct czfs_bdev *b, uint64_t slot)
{
	czfs_bdev_mem_data(b)[slot * CZFS_BLOCK_SIZE + 300] ^= 1;
}

START_TEST(load_picks_newer)
{
	struct czfs_sb_info sb;
	struct czfs_cp_info cp;
	struct czfs_bdev *b;

	/* given generation 6 in slot 1 and 7 in slot 2 */
	b = image_with(6, 7, &sb);
	ck_assert_int_eq(czfs_cp_load(b, &sb, &cp), 0);
	ck_assert_uint_eq(cp.generation, 7);
	ck_assert_uint_eq(cp.root_blkaddr, 88888);
	ck_assert_uint_eq(nr_warn, 0);
	czfs_bdev_close(b);

	/* and the other way round */
	b = image_with(9, 8, &sb);
	ck_assert_int_eq(czfs_cp_load(b, &sb, &cp), 0);
	ck_assert_uint_eq(cp.generation, 9);
	ck_assert_uint_eq(cp.root_blkaddr, 77777);
	czfs_bdev_close(b);
}
END_TEST

START_TEST(load_falls_back)
{
	struct czfs_sb_info sb;
	struct czfs_cp_info cp;
	struct czfs_bdev *b;

	/* given the newer slot (2, generation 7) damaged */
	b = image_with(6, 7, &sb);
	smash_slot(b, CZFS_CP_BLKADDR1);
	/* then the older one is used, with a warning but no error */
	ck_assert_int_eq(czfs_cp_load(b, &sb, &cp), 0);
	ck_assert_uint_eq(cp.generation, 6);
	ck_assert_uint_ge(nr_warn, 1);
	ck_assert_str_eq(last_err, "");
	/* when both are damaged, then there is no checkpoint */
	smash_slot(b, CZFS_CP_BLKADDR0);
	ck_assert_int_eq(czfs_cp_load(b, &sb, &cp), -EFSCORRUPTED);
	ck_assert_ptr_nonnull(strstr(last_err, "no valid checkpoint"));
	czfs_bdev_close(b);
}
END_TEST

/* cp made COVERED, naming blocks 5-6 and 9 of b with their crc now. */
static void cover_blocks(struct czfs_bdev *b, struct czfs_cp_info *cp)
{
	cp->flags |= CZFS_CP_COVERED;
	cp->nr_covered = 2;
	cp->covered[0] = CZFS_CP_EXTENT(5, 2);
	cp->covered[1] = CZFS_CP_EXTENT(9, 1);
	ck_assert_int_eq(czfs_cp_covered_crc(b, cp, &cp->covered_crc), 0);
}

START_TEST(covered_roundtrip_and_checks)
{
	struct czfs_cp_info in, out;
	uint8_t blk[CZFS_BLOCK_SIZE];
	struct czfs_bdev *b;

	ck_assert_int_eq(czfs_bdev_mem_create(16 * CZFS_BLOCK_SIZE, 0, &b), 0);
	memset(czfs_bdev_mem_data(b), 0x5a, 16 * CZFS_BLOCK_SIZE);
	/* given a covered checkpoint: its extents follow the index */
	sample_cp(&in, 7);
	cover_blocks(b, &in);
	czfs_cp_encode(&in, CZFS_CP_BLKADDR1, blk);
	ck_assert_uint_eq(get_le(blk + 44, 2), 2);
	ck_assert_uint_eq(get_le(blk + 100, 4), in.covered_crc);
	ck_assert_uint_eq(get_le(blk + 128 + 3 * 8, 8), (5ull << 16) | 1);
	ck_assert_uint_eq(get_le(blk + 128 + 4 * 8, 8), 9ull << 16);
	ck_assert_int_eq(czfs_cp_decode(blk, CZFS_CP_BLKADDR1, &out), 0);
	ck_assert_uint_eq(out.nr_covered, 2);
	ck_assert_uint_eq(out.covered_crc, in.covered_crc);
	ck_assert_uint_eq(CZFS_CP_EXTENT_ADDR(out.covered[0]), 5);
	ck_assert_uint_eq(CZFS_CP_EXTENT_LEN(out.covered[0]), 2);
	ck_assert_uint_eq(CZFS_CP_EXTENT_LEN(out.covered[1]), 1);
	ck_assert_uint_eq(out.smap_index[2], 6000);	/* the index intact */

	/* extents without the flag, the flag without extents, an extent
	 * in the header or past max_blocks, too many: refused */
	blk[41] &= (uint8_t)~CZFS_CP_COVERED;
	reseal(blk);
	ck_assert_int_eq(czfs_cp_decode(blk, CZFS_CP_BLKADDR1, &out), -EFSCORRUPTED);
	ck_assert_ptr_nonnull(strstr(last_err, "not flagged covered"));
	blk[41] |= CZFS_CP_COVERED;
	put_le(blk + 44, 2, 0);
	reseal(blk);
	ck_assert_int_eq(czfs_cp_decode(blk, CZFS_CP_BLKADDR1, &out), -EFSCORRUPTED);
	put_le(blk + 44, 2, 2);
	put_le(blk + 128 + 4 * 8, 8, 2ull << 16);
	reseal(blk);
	ck_assert_int_eq(czfs_cp_decode(blk, CZFS_CP_BLKADDR1, &out), -EFSCORRUPTED);
	ck_assert_ptr_nonnull(strstr(last_err, "out of range"));
	put_le(blk + 128 + 4 * 8, 8, (MAX_BLOCKS - 1) << 16 | 1);
	reseal(blk);
	ck_assert_int_eq(czfs_cp_decode(blk, CZFS_CP_BLKADDR1, &out), -EFSCORRUPTED);
	put_le(blk + 128 + 4 * 8, 8, 9ull << 16);
	put_le(blk + 44, 2, 494);
	reseal(blk);
	ck_assert_int_eq(czfs_cp_decode(blk, CZFS_CP_BLKADDR1, &out), -EFSCORRUPTED);
	czfs_bdev_close(b);
}
END_TEST

START_TEST(load_refuses_a_cut_covered_checkpoint)
{
	struct czfs_sb_info sb;
	struct czfs_cp_info cp;
	struct czfs_bdev *b;

	/* given generation 7 covering blocks 5, 6 and 9 as they are now */
	b = image_with(6, 7, &sb);
	sample_cp(&cp, 7);
	cp.root_blkaddr = 88888;
	cover_blocks(b, &cp);
	ck_assert_int_eq(czfs_cp_write(b, &sb, &cp), 0);
	ck_assert_int_eq(czfs_cp_load(b, &sb, &cp), 0);
	ck_assert_uint_eq(cp.generation, 7);
	ck_assert_uint_eq(nr_warn, 0);
	/* when one of them is not what it names (its write did not land),
	 * then generation 6 is used, with warnings and no error */
	czfs_bdev_mem_data(b)[6 * CZFS_BLOCK_SIZE + 100] ^= 0x10;
	ck_assert_int_eq(czfs_cp_load(b, &sb, &cp), 0);
	ck_assert_uint_eq(cp.generation, 6);
	ck_assert_uint_ge(nr_warn, 2);
	ck_assert_str_eq(last_err, "");
	/* and when the other slot is damaged too, there is none */
	smash_slot(b, CZFS_CP_BLKADDR0);
	ck_assert_int_eq(czfs_cp_load(b, &sb, &cp), -EFSCORRUPTED);
	czfs_bdev_close(b);
}
END_TEST

START_TEST(load_read_errors)
{
	struct czfs_sb_info sb;
	struct czfs_cp_info cp;
	struct czfs_bdev *b;

	b = image_with(6, 7, &sb);
	/* given the first read (slot 1) fails, then slot 2 is used */
	czfs_bdev_mem_fail_after(b, 1, -EIO);
	ck_assert_int_eq(czfs_cp_load(b, &sb, &cp), 0);
	ck_assert_uint_eq(cp.generation, 7);
	/* given the second read (slot 2) fails, then slot 1 is used */
	czfs_bdev_mem_fail_after(b, 2, -EIO);
	ck_assert_int_eq(czfs_cp_load(b, &sb, &cp), 0);
	ck_assert_uint_eq(cp.generation, 6);
	/* given slot 1 unreadable and slot 2 damaged, then the I/O error */
	smash_slot(b, CZFS_CP_BLKADDR1);
	czfs_bdev_mem_fail_after(b, 1, -EIO);
	ck_assert_int_eq(czfs_cp_load(b, &sb, &cp), -EIO);
	czfs_bdev_close(b);
}
END_TEST

START_TEST(write_one_aligned_block)
{
	struct czfs_sb_info sb;
	struct czfs_cp_info cp;
	struct czfs_bdev *b;
	const struct czfs_bdev_req *log;
	size_t n;

	czfs_super_init(&sb);
	ck_assert_int_eq(czfs_bdev_mem_create(0, CZFS_BDEV_DIRECT, &b), 0);
	/* when generation 5 is written, then one block goes to slot 2 */
	sample_cp(&cp, 5);
	ck_assert_int_eq(czfs_cp_write(b, &sb, &cp), 0);
	log = czfs_bdev_mem_log(b, &n);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(log[0].op, 'w');
	ck_assert_uint_eq(log[0].off, 2 * CZFS_BLOCK_SIZE);
	ck_assert_uint_eq(log[0].len, CZFS_BLOCK_SIZE);
	/* and generation 0 is refused */
	cp.generation = 0;
	ck_assert_int_eq(czfs_cp_write(b, &sb, &cp), -EINVAL);
	czfs_bdev_close(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("checkpoint");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, roundtrip_every_field);
	tcase_add_test(tc, layout_offsets);
	tcase_add_loop_test(tc, corruption_table, 0, ARRAY_SIZE(corrupt_cases));
	tcase_add_test(tc, wrong_slot);
	tcase_add_test(tc, index_count);
	tcase_add_test(tc, load_picks_newer);
	tcase_add_test(tc, load_falls_back);
	tcase_add_test(tc, load_read_errors);
	tcase_add_test(tc, covered_roundtrip_and_checks);
	tcase_add_test(tc, load_refuses_a_cut_covered_checkpoint);
	tcase_add_test(tc, write_one_aligned_block);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
