// SPDX-License-Identifier: MIT
/*
 * Unit tests: the crc of blocks kept as they are written (blockcrc.h).
 * What it gives for a checkpoint's extents must be what reading those
 * blocks back gives (czfs_cp_covered_crc), and it must say "unknown"
 * rather than guess whenever a block was written in part, failed, or
 * did not fit.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bdev.h"
#include "blockcrc.h"
#include "crc32c.h"
#include "czfs_fs.h"
#include "super.h"

#define DEV_BLOCKS	512

static struct czfs_bdev *dev(struct czfs_blockcrc **t, unsigned max)
{
	struct czfs_bdev *b;

	ck_assert_int_eq(czfs_bdev_mem_create((uint64_t)DEV_BLOCKS * CZFS_BLOCK_SIZE,
					      0, &b), 0);
	*t = czfs_blockcrc_new(max);
	ck_assert_ptr_nonnull(*t);
	b->written = *t;
	return b;
}

static void done(struct czfs_bdev *b, struct czfs_blockcrc *t)
{
	b->written = NULL;
	czfs_blockcrc_free(t);
	czfs_bdev_close(b);
}

/* Write n blocks of pseudo-random bytes at block blk, in one request. */
static void write_blocks(struct czfs_bdev *b, uint64_t blk, unsigned n,
			 unsigned seed)
{
	size_t len = (size_t)n * CZFS_BLOCK_SIZE;
	uint8_t *buf = malloc(len);

	srand(seed);
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)rand();
	ck_assert_int_eq(czfs_bdev_write(b, buf, len, blk * CZFS_BLOCK_SIZE), 0);
	free(buf);
}

/* The crc of ext[0..n) read back from the device, as a mount checks it. */
static uint32_t read_back(struct czfs_bdev *b, const uint64_t *ext, unsigned n)
{
	struct czfs_cp_info *cp = calloc(1, sizeof(*cp));
	uint32_t crc;

	cp->nr_covered = n;
	memcpy(cp->covered, ext, n * sizeof(*ext));
	ck_assert_int_eq(czfs_cp_covered_crc(b, cp, &crc), 0);
	free(cp);
	return crc;
}

START_TEST(known_blocks_give_what_reading_them_gives)
{
	struct czfs_blockcrc *t;
	struct czfs_bdev *b = dev(&t, 1024);
	uint64_t ext[3] = {
		CZFS_CP_EXTENT(40, 3), CZFS_CP_EXTENT(10, 1), CZFS_CP_EXTENT(100, 17),
	};
	uint32_t crc;

	write_blocks(b, 10, 1, 1);
	write_blocks(b, 100, 17, 2);
	write_blocks(b, 40, 3, 3);
	write_blocks(b, 41, 1, 4);		/* rewritten: the last counts */
	ck_assert_int_eq(czfs_blockcrc_covered(t, ext, 3, &crc), 0);
	ck_assert_uint_eq(crc, read_back(b, ext, 3));
	/* in another order, another crc, still the read one */
	ck_assert_int_eq(czfs_blockcrc_covered(t, ext + 1, 2, &crc), 0);
	ck_assert_uint_eq(crc, read_back(b, ext + 1, 2));
	done(b, t);
}
END_TEST

START_TEST(a_block_written_in_part_or_never_is_unknown)
{
	struct czfs_blockcrc *t;
	struct czfs_bdev *b = dev(&t, 1024);
	uint64_t whole = CZFS_CP_EXTENT(20, 2), never = CZFS_CP_EXTENT(30, 1);
	uint8_t bytes[100] = { 1 };
	uint32_t crc;

	write_blocks(b, 20, 2, 5);
	ck_assert_int_eq(czfs_blockcrc_covered(t, &whole, 1, &crc), 0);
	ck_assert_int_eq(czfs_blockcrc_covered(t, &never, 1, &crc), -ENOENT);
	/* 100 bytes into block 21: its crc is no longer known */
	ck_assert_int_eq(czfs_bdev_write(b, bytes, sizeof(bytes),
					 21 * CZFS_BLOCK_SIZE + 7), 0);
	ck_assert_int_eq(czfs_blockcrc_covered(t, &whole, 1, &crc), -ENOENT);
	/* a request that straddles blocks knows only the whole ones */
	{
		size_t len = 3 * CZFS_BLOCK_SIZE;
		uint8_t *buf = calloc(1, len);
		uint64_t mid = CZFS_CP_EXTENT(51, 2), head = CZFS_CP_EXTENT(50, 1);
		uint64_t tail = CZFS_CP_EXTENT(53, 1);

		/* blocks 50 and 53 in part, 51 and 52 whole */
		ck_assert_int_eq(czfs_bdev_write(b, buf, len,
						 50 * CZFS_BLOCK_SIZE + 2048), 0);
		ck_assert_int_eq(czfs_blockcrc_covered(t, &head, 1, &crc), -ENOENT);
		ck_assert_int_eq(czfs_blockcrc_covered(t, &tail, 1, &crc), -ENOENT);
		ck_assert_int_eq(czfs_blockcrc_covered(t, &mid, 1, &crc), 0);
		ck_assert_uint_eq(crc, read_back(b, &mid, 1));
		free(buf);
	}
	done(b, t);
}
END_TEST

/* Blocks whose crc the writer gave (czfs_bdev_write_blocks) are known
 * as if it had been computed. */
START_TEST(blocks_written_with_their_crc_are_known)
{
	struct czfs_blockcrc *t;
	struct czfs_bdev *b = dev(&t, 1024);
	uint64_t ext = CZFS_CP_EXTENT(70, 3);
	uint8_t *buf = malloc(3 * CZFS_BLOCK_SIZE);
	uint32_t crcs[3], crc;

	for (unsigned i = 0; i < 3 * CZFS_BLOCK_SIZE; i++)
		buf[i] = (uint8_t)(i * 7 + i / 4096);
	for (unsigned i = 0; i < 3; i++)
		crcs[i] = czfs_crc32c(0, buf + i * CZFS_BLOCK_SIZE, CZFS_BLOCK_SIZE);
	ck_assert_int_eq(czfs_bdev_write_blocks(b, buf, 3, 70, crcs), 0);
	ck_assert_int_eq(czfs_blockcrc_covered(t, &ext, 1, &crc), 0);
	ck_assert_uint_eq(crc, read_back(b, &ext, 1));
	/* and a failed one forgets them */
	czfs_bdev_mem_fail_after(b, 1, -EIO);
	ck_assert_int_eq(czfs_bdev_write_blocks(b, buf, 3, 70, crcs), -EIO);
	ck_assert_int_eq(czfs_blockcrc_covered(t, &ext, 1, &crc), -ENOENT);
	free(buf);
	done(b, t);
}
END_TEST

START_TEST(a_failed_write_forgets_its_blocks)
{
	struct czfs_blockcrc *t;
	struct czfs_bdev *b = dev(&t, 1024);
	uint64_t ext = CZFS_CP_EXTENT(60, 4);
	uint8_t *buf = calloc(4, CZFS_BLOCK_SIZE);
	uint32_t crc;

	write_blocks(b, 60, 4, 6);
	czfs_bdev_mem_fail_after(b, 1, -EIO);
	ck_assert_int_eq(czfs_bdev_write(b, buf, 4 * CZFS_BLOCK_SIZE,
					 60 * CZFS_BLOCK_SIZE), -EIO);
	ck_assert_int_eq(czfs_blockcrc_covered(t, &ext, 1, &crc), -ENOENT);
	free(buf);
	done(b, t);
}
END_TEST

START_TEST(past_its_room_nothing_is_known_until_a_reset)
{
	struct czfs_blockcrc *t;
	struct czfs_bdev *b = dev(&t, 8);
	uint64_t first = CZFS_CP_EXTENT(100, 1), ext = CZFS_CP_EXTENT(200, 3);
	uint32_t crc;

	write_blocks(b, 100, 8, 7);
	ck_assert_int_eq(czfs_blockcrc_covered(t, &first, 1, &crc), 0);
	write_blocks(b, 300, 1, 8);		/* the ninth */
	ck_assert_int_eq(czfs_blockcrc_covered(t, &first, 1, &crc), -ENOENT);
	czfs_blockcrc_reset(t);
	ck_assert_int_eq(czfs_blockcrc_covered(t, &first, 1, &crc), -ENOENT);
	write_blocks(b, 200, 3, 9);
	ck_assert_int_eq(czfs_blockcrc_covered(t, &ext, 1, &crc), 0);
	ck_assert_uint_eq(crc, read_back(b, &ext, 1));
	done(b, t);
}
END_TEST

/* Many resets (each an O(1) epoch) leave no block of an earlier one. */
START_TEST(resets_forget_every_block)
{
	struct czfs_blockcrc *t;
	struct czfs_bdev *b = dev(&t, 64);
	uint32_t crc;

	for (unsigned round = 0; round < 300; round++) {
		uint64_t now = CZFS_CP_EXTENT(10 + round % 50, 1);
		uint64_t before = CZFS_CP_EXTENT(10 + (round + 49) % 50, 1);

		write_blocks(b, 10 + round % 50, 1, round);
		ck_assert_int_eq(czfs_blockcrc_covered(t, &now, 1, &crc), 0);
		ck_assert_uint_eq(crc, read_back(b, &now, 1));
		if (round)
			ck_assert_int_eq(czfs_blockcrc_covered(t, &before, 1, &crc),
					 -ENOENT);
		czfs_blockcrc_reset(t);
	}
	done(b, t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("blockcrc");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, known_blocks_give_what_reading_them_gives);
	tcase_add_test(tc, a_block_written_in_part_or_never_is_unknown);
	tcase_add_test(tc, blocks_written_with_their_crc_are_known);
	tcase_add_test(tc, a_failed_write_forgets_its_blocks);
	tcase_add_test(tc, past_its_room_nothing_is_known_until_a_reset);
	tcase_add_test(tc, resets_forget_every_block);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
