// SPDX-License-Identifier: MIT
/*
 * Unit tests: the compact inodes' table (src/fuse/lookups.c).  Against a
 * plain array as the oracle, through seeded random adds and deletes:
 * every record is found with what was stored, no deleted one is, the
 * array grows past three quarters and shrinks below an eighth, and runs
 * of records that share a home slot (clustered inode numbers, deletes in
 * the middle of a run, a run wrapping past the array's end) stay whole.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>

#include "lookups.h"

#define N	20000

static uint64_t oracle[N];	/* ino of the record i holds, 0: none */

static void check_all(struct czfs_lookups *t)
{
	size_t n = 0;

	for (size_t i = 0; i < N; i++) {
		struct czfs_lookup *e = czfs_lookups_find(t, 1000 + i);

		if (!oracle[i]) {
			ck_assert_ptr_null(e);
			continue;
		}
		n++;
		ck_assert_ptr_nonnull(e);
		ck_assert_uint_eq(e->nlookup, i * 3 + 1);
		ck_assert_uint_eq(e->flags, i & 31);
		ck_assert_uint_eq(e->seq, (uint32_t)i);
	}
	ck_assert_uint_eq(t->n, n);
	ck_assert(t->cap == 0 || t->n * 4 <= t->cap * 3);
}

static void add(struct czfs_lookups *t, size_t i)
{
	struct czfs_lookup e = {
		.ino = 1000 + i, .nlookup = i * 3 + 1,
		.seq = (uint32_t)i, .flags = (uint32_t)(i & 31),
	};

	ck_assert_int_eq(czfs_lookups_add(t, &e), 0);
	oracle[i] = e.ino;
}

static void del(struct czfs_lookups *t, size_t i)
{
	struct czfs_lookup *e = czfs_lookups_find(t, 1000 + i);

	ck_assert_ptr_nonnull(e);
	czfs_lookups_del(t, e);
	oracle[i] = 0;
}

START_TEST(random_adds_and_deletes_match_the_oracle)
{
	struct czfs_lookups t = { 0 };
	size_t max_cap = 0;

	srandom(7);
	for (size_t i = 0; i < N; i++)
		oracle[i] = 0;
	for (int round = 0; round < 200000; round++) {
		size_t i = (size_t)random() % N;

		if (oracle[i])
			del(&t, i);
		else
			add(&t, i);
		if (t.cap > max_cap)
			max_cap = t.cap;
		if (round % 20000 == 0)
			check_all(&t);
	}
	check_all(&t);
	ck_assert_uint_ge(max_cap, 16384);	/* it grew */
	for (size_t i = 0; i < N; i++)
		if (oracle[i])
			del(&t, i);
	check_all(&t);
	ck_assert_uint_lt(t.cap, max_cap);	/* and shrank */
	czfs_lookups_free(&t);
}
END_TEST

START_TEST(dense_numbers_and_middle_deletes)
{
	struct czfs_lookups t = { 0 };

	for (size_t i = 0; i < N; i++)
		oracle[i] = 0;
	for (size_t i = 0; i < 700; i++)	/* under one growth */
		add(&t, i);
	check_all(&t);
	for (size_t i = 0; i < 700; i += 3)	/* holes in every run */
		del(&t, i);
	check_all(&t);
	for (size_t i = 0; i < 700; i += 3)
		add(&t, i);
	check_all(&t);
	for (size_t i = 0; i < 700; i++)
		del(&t, i);
	check_all(&t);
	ck_assert_uint_eq(t.n, 0);
	czfs_lookups_free(&t);
	ck_assert_ptr_null(czfs_lookups_find(&t, 1000));	/* empty, freed */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("lookups");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, random_adds_and_deletes_match_the_oracle);
	tcase_add_test(tc, dense_numbers_and_middle_deletes);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
