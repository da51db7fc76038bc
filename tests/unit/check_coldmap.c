// SPDX-License-Identifier: MIT
/*
 * Unit tests: the daemon's map of block-mapped clusters and when each was
 * last written (src/fuse/write/coldmap.c).  A later note of the same cluster
 * keeps the later time; take gives only what is older than asked, sorted,
 * and removes it (pending until the taker is done); thousands of entries survive growth and removal (the
 * backward shift keeps every other entry findable); past its bound the
 * map drops notes and says so once.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>

#include "coldmap.h"

static struct czfs_coldmap *cm;

static void setup(void)
{
	ck_assert_int_eq(czfs_cold_create(&cm), 0);
}

static void teardown(void)
{
	czfs_cold_destroy(cm);
}

START_TEST(take_what_is_cold)
{
	struct czfs_cold_ref out[8];

	/* given three clusters, one noted twice (the later time counts) */
	czfs_cold_note(cm, 9, 4, 10);
	czfs_cold_note(cm, 3, 7, 20);
	czfs_cold_note(cm, 9, 1, 5);
	czfs_cold_note(cm, 9, 4, 30);
	czfs_cold_note(cm, 9, 4, 25);
	ck_assert_uint_eq(czfs_cold_count(cm), 3);

	/* when what was written before 21 is taken */
	ck_assert_uint_eq(czfs_cold_take(cm, 21, out, 8), 2);

	/* then those two, sorted by inode and index, and they are gone */
	ck_assert(out[0].ino == 3 && out[0].idx == 7 && out[0].when == 20);
	ck_assert(out[1].ino == 9 && out[1].idx == 1);
	/* pending until the taker is done with them */
	ck_assert_uint_eq(czfs_cold_count(cm), 3);
	czfs_cold_done(cm, 2);
	ck_assert_uint_eq(czfs_cold_count(cm), 1);
	ck_assert_uint_eq(czfs_cold_take(cm, 21, out, 8), 0);
	ck_assert_uint_eq(czfs_cold_take(cm, 31, out, 8), 1);
	czfs_cold_done(cm, 1);
	ck_assert(out[0].ino == 9 && out[0].idx == 4 && out[0].when == 30);
	ck_assert(!czfs_cold_overflowed(cm));
}
END_TEST

START_TEST(many_survive_growth_and_removal)
{
	enum { N = 20000 };
	struct czfs_cold_ref *out = malloc(N * sizeof(*out));
	unsigned got = 0, n;

	ck_assert_ptr_nonnull(out);
	/* given N clusters of 50 files, the odd ones written later */
	for (unsigned i = 0; i < N; i++)
		czfs_cold_note(cm, 1 + i % 50, i / 50, i % 2 ? 200 : 100);
	ck_assert_uint_eq(czfs_cold_count(cm), N);

	/* when the even ones are taken a little at a time */
	while ((n = czfs_cold_take(cm, 150, out, 333)) > 0) {
		for (unsigned k = 0; k < n; k++) {
			ck_assert_uint_eq(out[k].when, 100);
			if (k)	/* sorted within a take */
				ck_assert(out[k - 1].ino < out[k].ino ||
					  (out[k - 1].ino == out[k].ino &&
					   out[k - 1].idx < out[k].idx));
		}
		got += n;
		czfs_cold_done(cm, n);
	}

	/* then exactly those came out, and every odd one is still found:
	 * noted again it is not added twice */
	ck_assert_uint_eq(got, N / 2);
	ck_assert_uint_eq(czfs_cold_count(cm), N / 2);
	for (unsigned i = 1; i < N; i += 2)
		czfs_cold_note(cm, 1 + i % 50, i / 50, 250);
	ck_assert_uint_eq(czfs_cold_count(cm), N / 2);
	ck_assert_uint_eq(czfs_cold_take(cm, 240, out, N), 0);
	ck_assert_uint_eq(czfs_cold_take(cm, 251, out, N), N / 2);
	czfs_cold_done(cm, N / 2);
	ck_assert_uint_eq(czfs_cold_count(cm), 0);
	free(out);
}
END_TEST

START_TEST(bounded)
{
	struct czfs_cold_ref out[4];

	/* given a full map */
	for (unsigned i = 0; i < CZFS_COLD_MAX; i++)
		czfs_cold_note(cm, 1, i, 1);
	ck_assert(!czfs_cold_overflowed(cm));

	/* when one more is noted, it is dropped and the map says so once */
	czfs_cold_note(cm, 2, 0, 1);
	ck_assert_uint_eq(czfs_cold_count(cm), CZFS_COLD_MAX);
	ck_assert(czfs_cold_overflowed(cm));
	ck_assert(!czfs_cold_overflowed(cm));

	/* and one already there is still noted again */
	czfs_cold_note(cm, 1, 5, 9);
	ck_assert(!czfs_cold_overflowed(cm));
	ck_assert_uint_eq(czfs_cold_take(cm, 2, out, 4), 4);
	ck_assert_uint_eq(out[0].ino, 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("coldmap");
	TCase *tc = tcase_create("map");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, take_what_is_cold);
	tcase_add_test(tc, many_survive_growth_and_removal);
	tcase_add_test(tc, bounded);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
