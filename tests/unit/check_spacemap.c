// SPDX-License-Identifier: MIT
/* Unit tests: space map allocation (next fit, the commit rule, threads). */
#include "config.h"

#include <check.h>
#include <pthread.h>
#include <stdlib.h>

#include "czfs_fs.h"
#include "smap_testlib.h"
#include "spacemap.h"
#include "util.h"

/* ---- allocation semantics -------------------------------------------- */

START_TEST(init_and_alloc_free)
{
	struct czfs_smap sm;
	uint64_t a, b;

	/* given a fresh map, then only the header blocks are used */
	ck_assert_int_eq(czfs_smap_init(&sm, 1000), 0);
	ck_assert_uint_eq(sm.used, CZFS_FIRST_DATA_BLKADDR);
	ck_assert_uint_eq(sm.image_blocks, CZFS_FIRST_DATA_BLKADDR);
	for (uint64_t i = 0; i < CZFS_FIRST_DATA_BLKADDR; i++)
		ck_assert(czfs_smap_test(&sm, i));
	smap_assert_free(&sm, CZFS_FIRST_DATA_BLKADDR, 997);
	ck_assert(!czfs_smap_test(&sm, 1000));		/* past the end */
	/* when blocks are allocated, then they are next to each other */
	a = smap_alloc_ok(&sm, 1);
	ck_assert_uint_eq(a, CZFS_FIRST_DATA_BLKADDR);
	b = smap_alloc_ok(&sm, 64);
	ck_assert_uint_eq(b, a + 1);
	ck_assert_uint_eq(sm.used, 3 + 65);
	ck_assert_uint_eq(sm.image_blocks, b + 64);
	/* when freed, then they are free in cur and counted */
	czfs_smap_free(&sm, b + 10, 20);
	smap_assert_free(&sm, b + 10, 20);
	ck_assert(czfs_smap_test(&sm, b + 9));
	ck_assert(czfs_smap_test(&sm, b + 30));
	ck_assert_uint_eq(sm.used, 3 + 45);
	/* image_blocks is the highest block ever used */
	ck_assert_uint_eq(sm.image_blocks, b + 64);
	/* and n = 0 or more than the map never succeeds */
	ck_assert_int_eq(czfs_smap_alloc(&sm, 0, &a), -ENOSPC);
	ck_assert_int_eq(czfs_smap_alloc(&sm, 1001, &a), -ENOSPC);
	czfs_smap_destroy(&sm);
	czfs_smap_destroy(&sm);		/* a zeroed map is accepted */
}
END_TEST

START_TEST(allocator_interface)
{
	struct czfs_smap sm;
	struct czfs_allocator *al;
	uint64_t a;

	ck_assert_int_eq(czfs_smap_init(&sm, 1000), 0);
	al = &sm.alloc;
	/* the embedded allocator hands out and takes back map blocks */
	ck_assert_int_eq(al->alloc(al, 8, &a), 0);
	ck_assert_uint_eq(a, 3);
	ck_assert(czfs_smap_test(&sm, 10));
	al->free(al, a, 8);
	smap_assert_free(&sm, a, 8);
	ck_assert_uint_eq(sm.used, 3);
	czfs_smap_destroy(&sm);
}
END_TEST

START_TEST(set_used_and_bad_frees)
{
	struct czfs_smap sm;

	ck_assert_int_eq(czfs_smap_init(&sm, 1000), 0);
	ck_assert_int_eq(czfs_smap_set_used(&sm, 100, 10), 0);
	ck_assert_uint_eq(sm.used, 13);
	ck_assert_uint_eq(sm.image_blocks, 110);
	/* overlapping a used block: -EEXIST and nothing changes */
	ck_assert_int_eq(czfs_smap_set_used(&sm, 95, 6), -EEXIST);
	ck_assert_int_eq(czfs_smap_set_used(&sm, 0, 1), -EEXIST);
	smap_assert_free(&sm, 95, 5);
	ck_assert_uint_eq(sm.used, 13);
	/* out of range: refused */
	ck_assert_int_eq(czfs_smap_set_used(&sm, 999, 2), -EINVAL);
	ck_assert_int_eq(czfs_smap_set_used(&sm, 5, 0), -EINVAL);
	/* a bad free is reported and changes nothing it must not */
	czfs_smap_free(&sm, 1, 1);
	ck_assert(czfs_smap_test(&sm, 1));
	ck_assert_ptr_nonnull(strstr(smap_last_err, "out of range"));
	czfs_smap_free(&sm, 995, 10);
	ck_assert_uint_eq(sm.used, 13);
	/* a double free keeps the count exact */
	czfs_smap_free(&sm, 105, 5);
	czfs_smap_free(&sm, 100, 10);
	ck_assert_uint_eq(sm.used, 3);
	ck_assert_ptr_nonnull(strstr(smap_last_err, "5 were free"));
	czfs_smap_destroy(&sm);
}
END_TEST

START_TEST(freed_blocks_wait_for_commit)
{
	struct czfs_smap sm;
	uint64_t a, b;

	/* given a map with 13 data blocks, all allocated and committed */
	ck_assert_int_eq(czfs_smap_init(&sm, 16), 0);
	a = smap_alloc_ok(&sm, 13);
	ck_assert_int_eq(czfs_smap_alloc(&sm, 1, &b), -ENOSPC);
	czfs_smap_committed(&sm);
	/* when 5 are freed, then none can be reused before the commit */
	czfs_smap_free(&sm, a + 4, 5);
	ck_assert_uint_eq(sm.used, 11);
	ck_assert_int_eq(czfs_smap_alloc(&sm, 1, &b), -ENOSPC);
	/* and after the commit they can */
	czfs_smap_committed(&sm);
	b = smap_alloc_ok(&sm, 5);
	ck_assert_uint_eq(b, a + 4);
	/* blocks allocated since the commit and freed wait for the next one
	 * too: they may have been written, and are punched first */
	czfs_smap_free(&sm, b, 5);
	ck_assert_int_eq(czfs_smap_alloc(&sm, 1, &b), -ENOSPC);
	czfs_smap_committed(&sm);
	ck_assert_uint_eq(smap_alloc_ok(&sm, 5), a + 4);
	czfs_smap_destroy(&sm);
}
END_TEST

START_TEST(fresh_blocks_since_the_commit)
{
	uint64_t ext[4], a;
	struct czfs_smap sm;

	/* given a committed map (its header blocks are never named) */
	ck_assert_int_eq(czfs_smap_init(&sm, 3 * 32768), 0);
	ck_assert_int_eq(czfs_smap_fresh(&sm, ext, 4, 100), 0);
	a = smap_alloc_ok(&sm, 10);
	czfs_smap_committed(&sm);
	ck_assert_int_eq(czfs_smap_fresh(&sm, ext, 4, 100), 0);
	/* when blocks are allocated, some freed again, and one taken far off
	 * in another bitmap block, then the ones in use are named in runs */
	ck_assert_uint_eq(smap_alloc_ok(&sm, 100), a + 10);	/* a+10..a+109 */
	czfs_smap_free(&sm, a + 50, 10);
	czfs_smap_free(&sm, a + 2, 1);		/* committed: not fresh */
	ck_assert_int_eq(czfs_smap_set_used(&sm, 70000, 3), 0);
	ck_assert_int_eq(czfs_smap_fresh(&sm, ext, 4, 200), 3);
	ck_assert_uint_eq(CZFS_CP_EXTENT_ADDR(ext[0]), a + 10);
	ck_assert_uint_eq(CZFS_CP_EXTENT_LEN(ext[0]), 40);
	ck_assert_uint_eq(CZFS_CP_EXTENT_ADDR(ext[1]), a + 60);
	ck_assert_uint_eq(CZFS_CP_EXTENT_LEN(ext[1]), 50);
	ck_assert_uint_eq(CZFS_CP_EXTENT_ADDR(ext[2]), 70000);
	ck_assert_uint_eq(CZFS_CP_EXTENT_LEN(ext[2]), 3);
	/* past the extents or blocks allowed: -E2BIG */
	ck_assert_int_eq(czfs_smap_fresh(&sm, ext, 2, 200), -E2BIG);
	ck_assert_int_eq(czfs_smap_fresh(&sm, ext, 4, 92), -E2BIG);
	ck_assert_int_eq(czfs_smap_fresh(&sm, ext, 4, 93), 3);
	/* and after the commit, nothing is fresh */
	czfs_smap_committed(&sm);
	ck_assert_int_eq(czfs_smap_fresh(&sm, ext, 4, 200), 0);
	czfs_smap_destroy(&sm);
}
END_TEST

START_TEST(enospc_full_and_fragmented)
{
	struct czfs_smap sm;
	uint64_t a;

	/* given every other block used */
	ck_assert_int_eq(czfs_smap_init(&sm, 1000), 0);
	for (uint64_t i = CZFS_FIRST_DATA_BLKADDR; i < 1000; i += 2)
		ck_assert_int_eq(czfs_smap_set_used(&sm, i, 1), 0);
	/* then single blocks fit but no run of two */
	ck_assert_int_eq(czfs_smap_alloc(&sm, 2, &a), -ENOSPC);
	ck_assert_int_eq(czfs_smap_alloc(&sm, 64, &a), -ENOSPC);
	while (czfs_smap_alloc(&sm, 1, &a) == 0)
		ck_assert_uint_eq(a % 2, 0);
	/* when full, then even one block fails */
	ck_assert_uint_eq(sm.used, 1000);
	ck_assert_int_eq(czfs_smap_alloc(&sm, 1, &a), -ENOSPC);
	czfs_smap_destroy(&sm);
}
END_TEST

/* The only free run is [start, start + n): alloc(n) must find it. */
static const struct { uint64_t start, n; } run_cases[] = {
	{ 3, 1 }, { 60, 8 }, { 63, 2 }, { 64, 64 }, { 65, 64 }, { 100, 64 },
	{ 127, 65 }, { 63, 130 }, { 1000, 200 }, { 5, 64 }, { 32760, 16 },
	{ 32767, 64 }, { 40000, 70000 }, { 199936, 64 }, { 199999, 1 },
};

START_TEST(runs_across_words)
{
	uint64_t start = run_cases[_i].start, n = run_cases[_i].n, a;
	const uint64_t max = 200000;

	/* a run exactly n long is found; one block shorter is not */
	for (uint64_t len = n; len + 1 >= n && len; len--) {
		struct czfs_smap sm;

		ck_assert_int_eq(czfs_smap_init(&sm, max), 0);
		if (start > 3)
			ck_assert_int_eq(czfs_smap_set_used(&sm, 3, start - 3), 0);
		if (start + len < max)
			ck_assert_int_eq(czfs_smap_set_used(&sm, start + len,
							    max - start - len), 0);
		if (len == n) {
			ck_assert_int_eq(czfs_smap_alloc(&sm, n, &a), 0);
			ck_assert_uint_eq(a, start);
			ck_assert_uint_eq(sm.used, max);
		} else {
			ck_assert_int_eq(czfs_smap_alloc(&sm, n, &a), -ENOSPC);
		}
		czfs_smap_destroy(&sm);
	}
}
END_TEST

/* ---- randomized comparison with a plain model -------------------------- */

#define MODEL_MAX	5000

struct model {
	bool cur[MODEL_MAX], com[MODEL_MAX];
	uint64_t cursor;
	uint64_t low_freed;		/* since the last commit, 0 = none */
};

static bool model_fits(const struct model *m, uint64_t s, uint64_t n)
{
	if (s + n > MODEL_MAX)
		return false;
	for (uint64_t i = s; i < s + n; i++)
		if (m->cur[i] || m->com[i])
			return false;
	return true;
}

/*
 * Next fit as the contract states: from the cursor, then from 0; a commit
 * moves the cursor back to the lowest block it made reusable.
 */
static uint64_t model_expect(const struct model *m, uint64_t n)
{
	for (uint64_t s = m->cursor; s < MODEL_MAX; s++)
		if (model_fits(m, s, n))
			return s;
	for (uint64_t s = 0; s < m->cursor; s++)
		if (model_fits(m, s, n))
			return s;
	return UINT64_MAX;
}

START_TEST(random_against_model)
{
	static struct model m;
	static uint64_t ext[MODEL_MAX][2];
	struct czfs_smap sm;
	unsigned next = 12345, n_ext = 0;
	uint64_t used = 3;

	memset(&m, 0, sizeof(m));
	m.cur[0] = m.cur[1] = m.cur[2] = m.com[0] = m.com[1] = m.com[2] = true;
	m.cursor = 3;
	ck_assert_int_eq(czfs_smap_init(&sm, MODEL_MAX), 0);
	for (unsigned step = 0; step < 6000; step++) {
		unsigned op = (next = next * 1103515245 + 12345) >> 16;
		uint64_t n = op % 7 == 0 ? 65 + op % 150 : 1 + op % 64;
		uint64_t want, got = 0;
		int err;

		if (op % 5 < 2 && n_ext) {		/* free an extent */
			unsigned i = op % n_ext;

			czfs_smap_free(&sm, ext[i][0], ext[i][1]);
			for (uint64_t b = 0; b < ext[i][1]; b++)
				m.cur[ext[i][0] + b] = false;
			if (!m.low_freed || ext[i][0] < m.low_freed)
				m.low_freed = ext[i][0];
			used -= ext[i][1];
			ext[i][0] = ext[--n_ext][0];
			ext[i][1] = ext[n_ext][1];
		} else if (op % 23 == 0) {		/* commit */
			czfs_smap_committed(&sm);
			memcpy(m.com, m.cur, sizeof(m.cur));
			if (m.low_freed && m.low_freed < m.cursor)
				m.cursor = m.low_freed;
			m.low_freed = 0;
		} else {				/* allocate */
			want = model_expect(&m, n);
			err = czfs_smap_alloc(&sm, n, &got);
			ck_assert_msg(want == UINT64_MAX ? err == -ENOSPC :
				      err == 0 && got == want,
				      "step %u n %llu: got %d/%llu want %llu",
				      step, (unsigned long long)n, err,
				      (unsigned long long)got,
				      (unsigned long long)want);
			if (err)
				continue;
			for (uint64_t b = 0; b < n; b++)
				m.cur[got + b] = m.com[got + b] = true;
			m.cursor = got + n < MODEL_MAX ? got + n : 3;
			ext[n_ext][0] = got;
			ext[n_ext++][1] = n;
			used += n;
		}
		ck_assert_uint_eq(sm.used, used);
	}
	for (uint64_t b = 0; b < MODEL_MAX; b++)
		ck_assert_int_eq(czfs_smap_test(&sm, b), m.cur[b]);
	czfs_smap_destroy(&sm);
}
END_TEST

/* ---- threads --------------------------------------------------------- */

#define THREAD_ALLOCS	3000

struct thread_arg {
	struct czfs_smap *sm;
	uint64_t addr[THREAD_ALLOCS], n[THREAD_ALLOCS];
};

static void *alloc_thread(void *p)
{
	struct thread_arg *t = p;

	for (unsigned i = 0; i < THREAD_ALLOCS; i++) {
		t->n[i] = 1 + i % 9;
		if (czfs_smap_alloc(t->sm, t->n[i], &t->addr[i]))
			t->n[i] = 0;
		if (i % 3 == 0 && t->n[i]) {
			czfs_smap_free(t->sm, t->addr[i], t->n[i]);
			t->n[i] = 0;
		}
	}
	return NULL;
}

START_TEST(threads_never_share_blocks)
{
	static struct thread_arg t[2];
	static uint8_t owner[40000];
	struct czfs_smap sm;
	pthread_t th[2];
	uint64_t total = 3;

	/* given two threads allocating and freeing at once */
	ck_assert_int_eq(czfs_smap_init(&sm, sizeof(owner)), 0);
	memset(owner, 0, sizeof(owner));
	for (int i = 0; i < 2; i++) {
		t[i].sm = &sm;
		ck_assert_int_eq(pthread_create(&th[i], NULL, alloc_thread,
						&t[i]), 0);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	/* then no block is held twice and the count is exact */
	for (int i = 0; i < 2; i++) {
		for (unsigned j = 0; j < THREAD_ALLOCS; j++) {
			for (uint64_t b = 0; b < t[i].n[j]; b++) {
				ck_assert_uint_eq(owner[t[i].addr[j] + b], 0);
				owner[t[i].addr[j] + b] = 1;
			}
			total += t[i].n[j];
		}
	}
	ck_assert_uint_eq(sm.used, total);
	czfs_smap_destroy(&sm);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("spacemap");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, smap_test_setup, smap_test_teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, init_and_alloc_free);
	tcase_add_test(tc, allocator_interface);
	tcase_add_test(tc, set_used_and_bad_frees);
	tcase_add_test(tc, freed_blocks_wait_for_commit);
	tcase_add_test(tc, fresh_blocks_since_the_commit);
	tcase_add_test(tc, enospc_full_and_fragmented);
	tcase_add_loop_test(tc, runs_across_words, 0, ARRAY_SIZE(run_cases));
	tcase_add_test(tc, random_against_model);
	tcase_add_test(tc, threads_never_share_blocks);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
