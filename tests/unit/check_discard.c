// SPDX-License-Identifier: MIT
/*
 * Unit tests: giving freed blocks back to the host (discard.c) and the
 * compact allocation that goes with it.  The in-memory device logs every
 * request, so the tests assert which ranges are punched, in how many
 * requests, and that no punch comes before the checkpoint that freed the
 * blocks is durable.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bdev.h"
#include "discard.h"
#include "fs.h"
#include "fs_testlib.h"
#include "inode.h"
#include "log.h"
#include "smap_testlib.h"
#include "util.h"
#include "spacemap.h"

/* The punch requests in b's log, after clearing it was last done. */
static size_t punches(struct czfs_bdev *b, const struct czfs_bdev_req **first)
{
	size_t n, count = 0;
	const struct czfs_bdev_req *log = czfs_bdev_mem_log(b, &n);

	*first = NULL;
	for (size_t i = 0; i < n; i++) {
		if (log[i].op != 'p')
			continue;
		if (!count++)
			*first = &log[i];
	}
	return count;
}

/* A map of map_blocks on a memory device of dev_blocks, nothing logged. */
static struct czfs_bdev *map_on_device(uint64_t dev_blocks, uint64_t map_blocks,
				       struct czfs_smap *sm)
{
	struct czfs_bdev *b;

	ck_assert_int_eq(czfs_bdev_mem_create(dev_blocks * BS, 0, &b), 0);
	ck_assert_int_eq(czfs_smap_init(sm, map_blocks), 0);
	return b;
}

/* The commit's steps: the freed blocks noted unpunched, committed, then
 * held, punched and released by a discard pass; the one punch it must
 * make. */
static void expect_one_punch(struct czfs_smap *sm, struct czfs_bdev *b,
			     uint64_t start, uint64_t n)
{
	struct czfs_discard_stats st = { 0 };
	const struct czfs_bdev_req *p;

	czfs_bdev_mem_clear_log(b);
	czfs_smap_note_freed(sm);
	czfs_smap_committed(sm);
	ck_assert_int_eq(czfs_smap_discard_freed(sm, b, 1, &st), 0);
	ck_assert_uint_eq(punches(b, &p), 1);
	ck_assert_uint_eq(p->off, start * BS);
	ck_assert_uint_eq(p->len, n * BS);
	ck_assert_uint_eq(st.blocks, n);
	ck_assert_uint_eq(st.ranges, 1);
}

/* n blocks allocated, committed, freed and committed again: unpunched. */
static uint64_t freed_by_a_checkpoint(struct czfs_smap *sm, uint64_t n)
{
	uint64_t a = smap_alloc_ok(sm, n);

	czfs_smap_committed(sm);
	czfs_smap_free(sm, a, n);
	czfs_smap_note_freed(sm);
	czfs_smap_committed(sm);
	return a;
}

START_TEST(freed_blocks_punched_once_merged)
{
	struct czfs_discard_stats st = { 0 };
	const struct czfs_bdev_req *p;
	struct czfs_bdev *b;
	struct czfs_smap sm;
	uint64_t a, c, d;

	/* given: three extents, committed */
	b = map_on_device(1000, 1000, &sm);
	a = smap_alloc_ok(&sm, 10);
	c = smap_alloc_ok(&sm, 5);
	d = smap_alloc_ok(&sm, 7);
	czfs_smap_committed(&sm);
	memset(czfs_bdev_mem_data(b) + c * BS, 0xaa, 12 * BS);
	/* when: the two adjacent ones are freed and discarded */
	czfs_smap_free(&sm, c, 5);
	czfs_smap_free(&sm, d, 7);
	/* then: one request covers both, and they read as zeros */
	expect_one_punch(&sm, b, c, 12);
	ck_assert(czfs_is_zero(czfs_bdev_mem_data(b) + c * BS, 12 * BS));
	/* and: at the next commit, nothing is left to punch */
	czfs_smap_note_freed(&sm);
	czfs_smap_committed(&sm);
	czfs_bdev_mem_clear_log(b);
	ck_assert_int_eq(czfs_smap_discard_freed(&sm, b, 1, &st), 0);
	ck_assert_uint_eq(punches(b, &p), 0);
	/* and: blocks still in use are never punched */
	ck_assert(czfs_smap_test(&sm, a));
	czfs_smap_destroy(&sm);
	czfs_bdev_close(b);
}
END_TEST

/* Written and freed between two checkpoints: unpunched after the second,
 * and reusable from then on, never before. */
START_TEST(allocated_and_freed_between_commits)
{
	struct czfs_discard_stats st = { 0 };
	struct czfs_smap sm;
	struct czfs_bdev *b = map_on_device(1000, 1000, &sm);
	uint64_t a, other;

	czfs_smap_committed(&sm);
	a = smap_alloc_ok(&sm, 16);
	czfs_smap_free(&sm, a, 16);
	/* not reusable before the commit: it may hold data on the host */
	other = smap_alloc_ok(&sm, 16);
	ck_assert_uint_ne(other, a);
	czfs_smap_free(&sm, other, 16);
	/* after it: unpunched (counted once, however often noted) */
	czfs_smap_note_freed(&sm);
	czfs_smap_committed(&sm);
	ck_assert_uint_eq(czfs_smap_unpunched(&sm), 32);
	czfs_smap_note_freed(&sm);
	ck_assert_uint_eq(czfs_smap_unpunched(&sm), 32);
	ck_assert_uint_eq(czfs_smap_held(&sm), 0);
	ck_assert_int_eq(czfs_smap_discard_freed(&sm, b, 1, &st), 0);
	ck_assert_uint_eq(czfs_smap_unpunched(&sm), 0);
	ck_assert_uint_eq(czfs_smap_held(&sm), 0);
	ck_assert_uint_eq(st.blocks, 32);
	ck_assert_uint_eq(st.ranges, 1);
	/* punched and released: the lowest is taken first again */
	ck_assert_uint_eq(smap_alloc_ok(&sm, 16), a);
	czfs_smap_destroy(&sm);
	czfs_bdev_close(b);
}
END_TEST

/* A freed block taken again before the discard pass is never punched:
 * the pass punches only what is still free, and the reused data stays. */
START_TEST(reused_before_the_pass_not_punched)
{
	struct czfs_discard_stats st = { 0 };
	const struct czfs_bdev_req *p;
	struct czfs_smap sm;
	struct czfs_bdev *b = map_on_device(1000, 1000, &sm);
	uint64_t a;

	/* given: 24 blocks freed by a durable checkpoint */
	a = freed_by_a_checkpoint(&sm, 24);
	ck_assert_uint_eq(czfs_smap_unpunched(&sm), 24);
	/* when: the first 16 are allocated again at once and written */
	ck_assert_uint_eq(smap_alloc_ok(&sm, 16), a);
	ck_assert_uint_eq(czfs_smap_unpunched(&sm), 8);
	memset(czfs_bdev_mem_data(b) + a * BS, 0x5a, 24 * BS);
	czfs_bdev_mem_clear_log(b);
	ck_assert_int_eq(czfs_smap_discard_freed(&sm, b, 1, &st), 0);
	/* then: one punch, of the 8 still free; the reused 16 keep data */
	ck_assert_uint_eq(punches(b, &p), 1);
	ck_assert_uint_eq(p->off, (a + 16) * BS);
	ck_assert_uint_eq(p->len, 8 * BS);
	ck_assert_uint_eq(st.blocks, 8);
	ck_assert(czfs_is_zero(czfs_bdev_mem_data(b) + (a + 16) * BS, 8 * BS));
	for (unsigned i = 0; i < 16 * BS; i++)
		ck_assert_uint_eq(czfs_bdev_mem_data(b)[a * BS + i], 0x5a);
	ck_assert_uint_eq(czfs_smap_unpunched(&sm), 0);
	ck_assert(czfs_smap_test(&sm, a));
	/* and: freed again later, they are punched by the next pass */
	czfs_smap_free(&sm, a, 16);
	czfs_smap_note_freed(&sm);
	czfs_smap_committed(&sm);
	czfs_bdev_mem_clear_log(b);
	ck_assert_int_eq(czfs_smap_discard_freed(&sm, b, 1, &st), 0);
	ck_assert_uint_eq(punches(b, &p), 1);
	ck_assert_uint_eq(p->off, a * BS);
	ck_assert_uint_eq(p->len, 16 * BS);
	czfs_smap_destroy(&sm);
	czfs_bdev_close(b);
}
END_TEST

/* Without a device (discard off, or after an error) the pass releases
 * the blocks unpunched: they never stay unallocatable. */
START_TEST(held_released_without_device)
{
	struct czfs_discard_stats st = { 0 };
	struct czfs_smap sm;
	struct czfs_bdev *b = map_on_device(1000, 1000, &sm);
	uint64_t a;

	a = freed_by_a_checkpoint(&sm, 8);
	ck_assert_int_eq(czfs_smap_discard_freed(&sm, NULL, 1, &st), 0);
	ck_assert_uint_eq(st.blocks, 0);
	ck_assert_uint_eq(smap_alloc_ok(&sm, 8), a);
	czfs_smap_destroy(&sm);
	czfs_bdev_close(b);
}
END_TEST

START_TEST(trim_punches_every_free_range)
{
	struct czfs_discard_stats st = { 0 };
	const struct czfs_bdev_req *p;
	struct czfs_bdev *b;
	struct czfs_smap sm;
	uint64_t a;

	/* given: blocks 3..102 used, 13..22 freed and committed, a map of
	 * 2000 blocks on a device of 1000 */
	b = map_on_device(1000, 2000, &sm);
	a = smap_alloc_ok(&sm, 100);
	czfs_smap_free(&sm, a + 10, 10);
	czfs_smap_committed(&sm);
	/* when: the whole map is trimmed */
	czfs_bdev_mem_clear_log(b);
	ck_assert_int_eq(czfs_smap_discard_all(&sm, b, &st), 0);
	/* then: the hole and the free rest of the device, nothing past it */
	ck_assert_uint_eq(punches(b, &p), 2);
	ck_assert_uint_eq(p->off, (a + 10) * BS);
	ck_assert_uint_eq(p->len, 10 * BS);
	ck_assert_uint_eq(st.blocks, 10 + 1000 - (a + 100));
	ck_assert_uint_eq(st.ranges, 2);
	czfs_smap_destroy(&sm);
	czfs_bdev_close(b);
}
END_TEST

START_TEST(runs_across_words_and_chunks)
{
	static const uint64_t cases[][2] = {
		{ 3, 1 }, { 60, 3 }, { 64, 64 }, { 130, 300 },
		{ 32760, 20 }, { 32790, 1 }, { 60000, 10000 },
	};
	/* the requests: one per range, but a range across a bitmap chunk
	 * (32768 blocks) is cut there, as each chunk is released once its
	 * own punches are done */
	static const uint64_t want[][2] = {
		{ 3, 1 }, { 60, 3 }, { 64, 64 }, { 130, 300 },
		{ 32760, 8 }, { 32768, 12 }, { 32790, 1 },
		{ 60000, 5536 }, { 65536, 4464 },
	};
	struct czfs_smap sm;
	struct czfs_bdev *b;

	b = map_on_device(80000, 80000, &sm);
	ck_assert_int_eq(czfs_smap_set_used(&sm, 3, 80000 - 3), 0);
	czfs_smap_committed(&sm);
	for (unsigned i = 0; i < ARRAY_SIZE(cases); i++)
		czfs_smap_free(&sm, cases[i][0], cases[i][1]);
	czfs_bdev_mem_clear_log(b);
	czfs_smap_note_freed(&sm);
	czfs_smap_committed(&sm);
	{
		struct czfs_discard_stats st = { 0 };
		const struct czfs_bdev_req *log, *p;
		size_t n, k = 0;

		ck_assert_int_eq(czfs_smap_discard_freed(&sm, b, 1, &st), 0);
		/* each freed range exactly, in order: one word apart is one
		 * request */
		ck_assert_uint_eq(punches(b, &p), ARRAY_SIZE(want));
		log = czfs_bdev_mem_log(b, &n);
		for (size_t i = 0; i < n; i++) {
			if (log[i].op != 'p')
				continue;
			ck_assert_uint_eq(log[i].off, want[k][0] * BS);
			ck_assert_uint_eq(log[i].len, want[k][1] * BS);
			k++;
		}
	}
	czfs_smap_destroy(&sm);
	czfs_bdev_close(b);
}
END_TEST

/*
 * A pass with a minimum run punches the freed runs that long and leaves
 * the shorter ones unpunched, allocatable: the scattered blocks random
 * writes free, which the next writes take again.  A pass of all (the
 * unmount's) punches them too.
 */
START_TEST(a_pass_leaves_short_runs_to_the_next_writes)
{
	static const uint64_t runs[][2] = {
		{ 100, 1 }, { 300, 15 }, { 500, 16 }, { 1000, 200 },
		{ 32760, 10 }, { 40000, 3 },
	};
	struct czfs_discard_stats st = { 0 };
	const struct czfs_bdev_req *p, *log;
	struct czfs_smap sm;
	struct czfs_bdev *b;
	size_t n, k = 0;

	b = map_on_device(80000, 80000, &sm);
	ck_assert_int_eq(czfs_smap_set_used(&sm, 3, 80000 - 3), 0);
	czfs_smap_committed(&sm);
	for (unsigned i = 0; i < ARRAY_SIZE(runs); i++)
		czfs_smap_free(&sm, runs[i][0], runs[i][1]);
	czfs_smap_note_freed(&sm);
	czfs_smap_committed(&sm);
	ck_assert_uint_eq(czfs_smap_unpunched(&sm), 245);

	czfs_bdev_mem_clear_log(b);
	ck_assert_int_eq(czfs_smap_discard_freed(&sm, b, 16, &st), 0);
	/* 500+16 and 1000+200; 32760+10 is cut by the chunk: 8 and 2 */
	ck_assert_uint_eq(punches(b, &p), 2);
	log = czfs_bdev_mem_log(b, &n);
	for (size_t i = 0; i < n; i++) {
		if (log[i].op != 'p')
			continue;
		ck_assert_uint_eq(log[i].off, (k ? 1000 : 500) * BS);
		ck_assert_uint_eq(log[i].len, (k ? 200 : 16) * BS);
		k++;
	}
	ck_assert_uint_eq(czfs_smap_unpunched(&sm), 245 - 216);
	/* the short ones are allocatable: the lowest is taken first */
	ck_assert_uint_eq(smap_alloc_ok(&sm, 1), 100);
	ck_assert_uint_eq(czfs_smap_unpunched(&sm), 245 - 217);
	/* and a pass of all punches the rest */
	czfs_bdev_mem_clear_log(b);
	ck_assert_int_eq(czfs_smap_discard_freed(&sm, b, 1, &st), 0);
	ck_assert_uint_eq(czfs_smap_unpunched(&sm), 0);
	ck_assert_uint_eq(st.blocks, 244);
	czfs_smap_destroy(&sm);
	czfs_bdev_close(b);
}
END_TEST

START_TEST(commit_punches_after_the_checkpoint)
{
	struct czfs_bdev *b = make_image();
	struct czfs_fs_opts o = { .flags = CZFS_OPEN_DISCARD };
	const struct czfs_bdev_req *log;
	struct czfs_fs *fs = NULL;
	size_t n, last_flush = 0, first_punch = 0;
	uint64_t blk;

	ck_assert_int_eq(czfs_fs_open_bdev(b, &o, &fs), 0);
	ck_assert(fs->discard);
	/* given: a block in use, committed */
	ck_assert_int_eq(czfs_fs_begin(fs), 0);
	ck_assert_int_eq(czfs_smap_alloc(&fs->smap, 4, &blk), 0);
	ck_assert_int_eq(czfs_fs_commit(fs), 0);
	/* when: it is freed and the next commit runs */
	ck_assert_int_eq(czfs_fs_begin(fs), 0);
	czfs_smap_free(&fs->smap, blk, 4);
	czfs_bdev_mem_clear_log(b);
	ck_assert_int_eq(czfs_fs_commit(fs), 0);
	/* then: it is punched, after the checkpoint's last flush */
	log = czfs_bdev_mem_log(b, &n);
	for (size_t i = 0; i < n; i++) {
		if (log[i].op == 'f')
			last_flush = i;
		if (log[i].op == 'p' && log[i].off == blk * BS && !first_punch)
			first_punch = i;
	}
	ck_assert_uint_gt(first_punch, 0);
	ck_assert_uint_gt(first_punch, last_flush);
	ck_assert_uint_ge(fs->discarded.blocks, 4);
	czfs_fs_close(fs);
}
END_TEST

static unsigned discard_warnings;

static void count_sink(enum czfs_log_level level, const char *msg)
{
	if (level <= CZFS_LOG_WARN && strstr(msg, "discard"))
		discard_warnings++;
}

/* Free 4 blocks committed before, and commit: what a discard pass sees. */
static void free_and_commit(struct czfs_fs *fs)
{
	uint64_t blk;

	ck_assert_int_eq(czfs_fs_begin(fs), 0);
	ck_assert_int_eq(czfs_smap_alloc(&fs->smap, 4, &blk), 0);
	ck_assert_int_eq(czfs_fs_commit(fs), 0);
	ck_assert_int_eq(czfs_fs_begin(fs), 0);
	czfs_smap_free(&fs->smap, blk, 4);
	ck_assert_int_eq(czfs_fs_commit(fs), 0);
}

START_TEST(a_host_without_punch_is_left_alone)
{
	static struct czfs_bdev_ops nopunch;
	struct czfs_bdev *b = make_image();
	struct czfs_fs_opts o = { .flags = CZFS_OPEN_DISCARD };
	const struct czfs_bdev_req *p;
	struct czfs_fs *fs = NULL;

	/* given: a device that cannot punch (as a file system without it) */
	nopunch = *b->ops;
	nopunch.punch = NULL;
	b->ops = &nopunch;
	discard_warnings = 0;
	czfs_log_set_sink(count_sink, CZFS_LOG_DEBUG);
	ck_assert_int_eq(czfs_fs_open_bdev(b, &o, &fs), 0);
	/* when: commits free blocks, twice */
	free_and_commit(fs);
	free_and_commit(fs);
	/* then: the commits succeed, one log line, discard is off */
	ck_assert_uint_eq(discard_warnings, 1);
	ck_assert(!fs->discard);
	ck_assert_uint_eq(fs->discarded.blocks, 0);
	ck_assert_uint_eq(punches(b, &p), 0);
	czfs_fs_close(fs);
}
END_TEST

START_TEST(nodiscard_never_punches)
{
	struct czfs_bdev *b = make_image();
	const struct czfs_bdev_req *p;
	struct czfs_fs *fs = open_fs(b, true);

	ck_assert(!fs->discard);
	free_and_commit(fs);
	ck_assert_uint_eq(punches(b, &p), 0);
	czfs_fs_close(fs);
}
END_TEST

START_TEST(commit_reuses_low_blocks_first)
{
	struct czfs_smap sm;
	uint64_t a, c, d;

	/* given: extents a < c < d, all committed */
	ck_assert_int_eq(czfs_smap_init(&sm, 10000), 0);
	a = smap_alloc_ok(&sm, 8);
	c = smap_alloc_ok(&sm, 8);
	d = smap_alloc_ok(&sm, 8);
	czfs_smap_committed(&sm);
	/* when: a is freed, then reused only after a commit */
	czfs_smap_free(&sm, a, 8);
	ck_assert_uint_eq(smap_alloc_ok(&sm, 8), d + 8);
	czfs_smap_committed(&sm);
	/* then: the next allocation fills the hole at the start */
	ck_assert_uint_eq(smap_alloc_ok(&sm, 8), a);
	ck_assert_uint_eq(smap_alloc_ok(&sm, 8), d + 16);
	ck_assert(czfs_smap_test(&sm, c));
	czfs_smap_destroy(&sm);
}
END_TEST

static Suite *discard_suite(void)
{
	Suite *s = suite_create("discard");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, smap_test_setup, smap_test_teardown);
	tcase_add_test(tc, freed_blocks_punched_once_merged);
	tcase_add_test(tc, allocated_and_freed_between_commits);
	tcase_add_test(tc, reused_before_the_pass_not_punched);
	tcase_add_test(tc, held_released_without_device);
	tcase_add_test(tc, trim_punches_every_free_range);
	tcase_add_test(tc, runs_across_words_and_chunks);
	tcase_add_test(tc, a_pass_leaves_short_runs_to_the_next_writes);
	tcase_add_test(tc, commit_punches_after_the_checkpoint);
	tcase_add_test(tc, a_host_without_punch_is_left_alone);
	tcase_add_test(tc, nodiscard_never_punches);
	tcase_add_test(tc, commit_reuses_low_blocks_first);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(discard_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
