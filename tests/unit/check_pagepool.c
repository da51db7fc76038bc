// SPDX-License-Identifier: MIT
/* Unit tests: page pool (buddy runs, reserve, copy helpers). */
#include "config.h"

#include <check.h>
#include <stdlib.h>

#include "pagepool.h"
#include "util.h"

#define POOL_PAGES	256

START_TEST(runs_are_naturally_aligned_and_contiguous)
{
	struct czfs_pool *p;
	uint32_t pg[4];

	ck_assert_int_eq(czfs_pool_create(POOL_PAGES * 4096, 0, &p), 0);
	/* when runs of every order are taken, each starts on its size */
	for (unsigned order = 0; order <= CZFS_POOL_MAX_ORDER; order++) {
		ck_assert_int_eq(czfs_pool_alloc(p, order, &pg[0]), 0);
		ck_assert_uint_eq(pg[0] % (1u << order), 0);
		ck_assert_ptr_eq(czfs_pool_addr(p, pg[0] + 1),
				 (char *)czfs_pool_addr(p, pg[0]) + 4096);
		memset(czfs_pool_addr(p, pg[0]), 0x5a, 4096u << order);
		czfs_pool_free(p, pg[0], order);
	}
	ck_assert_int_eq(czfs_pool_alloc(p, CZFS_POOL_MAX_ORDER + 1, &pg[0]), -EINVAL);
	czfs_pool_destroy(p);
}
END_TEST

START_TEST(exhaustion_and_buddy_merge)
{
	struct czfs_pool *p;
	struct czfs_pool_stats st;
	uint32_t pages[POOL_PAGES], big;

	ck_assert_int_eq(czfs_pool_create(POOL_PAGES * 4096, 0, &p), 0);
	/* given every page taken one by one */
	for (unsigned i = 0; i < POOL_PAGES; i++)
		ck_assert_int_eq(czfs_pool_alloc(p, 0, &pages[i]), 0);
	ck_assert_int_eq(czfs_pool_alloc(p, 0, &big), -ENOMEM);
	czfs_pool_get_stats(p, &st);
	ck_assert_uint_eq(st.used, POOL_PAGES);
	ck_assert_uint_eq(st.alloc_fail, 1);
	/* when they are all freed, then buddies merge back into 64-page runs */
	for (unsigned i = 0; i < POOL_PAGES; i++)
		czfs_pool_free(p, pages[POOL_PAGES - 1 - i], 0);
	for (unsigned i = 0; i < POOL_PAGES / 64; i++)
		ck_assert_int_eq(czfs_pool_alloc(p, 6, &big), 0);
	ck_assert_int_eq(czfs_pool_alloc(p, 0, &big), -ENOMEM);
	czfs_pool_destroy(p);
}
END_TEST

START_TEST(reserve_drains_then_refills_first)
{
	struct czfs_pool *p;
	struct czfs_pool_stats st;
	uint32_t run[POOL_PAGES / 64], tmp[8];

	ck_assert_int_eq(czfs_pool_create(POOL_PAGES * 4096, 4, &p), 0);
	czfs_pool_get_stats(p, &st);
	ck_assert_uint_eq(st.reserve_size, 4);
	ck_assert_uint_eq(st.reserve_fill, 4);
	/* given the main pool exhausted by runs (the reserve is not usable
	 * for runs) */
	unsigned nrun = 0;
	while (czfs_pool_alloc(p, 6, &run[nrun]) == 0)
		nrun++;
	uint32_t single;
	while (czfs_pool_alloc(p, 0, &single) == 0)
		;
	/* when temp pages are taken, then they come from the reserve */
	for (unsigned i = 0; i < 4; i++)
		ck_assert_int_eq(czfs_pool_alloc_temp(p, &tmp[i]), 0);
	czfs_pool_get_stats(p, &st);
	ck_assert_uint_eq(st.reserve_fill, 0);
	ck_assert_uint_eq(st.reserve_hits, 4);
	ck_assert_int_eq(czfs_pool_alloc_temp(p, &tmp[4]), -ENOMEM);
	/* when temp pages come back, then the reserve refills first */
	czfs_pool_free_temp(p, tmp[0]);
	czfs_pool_free_temp(p, tmp[1]);
	czfs_pool_get_stats(p, &st);
	ck_assert_uint_eq(st.reserve_fill, 2);
	czfs_pool_destroy(p);
}
END_TEST

START_TEST(reserve_larger_than_half_is_refused)
{
	struct czfs_pool *p = NULL;

	ck_assert_int_eq(czfs_pool_create(128 * 4096, 65, &p), -EINVAL);
	ck_assert_ptr_null(p);
}
END_TEST

START_TEST(copy_helpers_cross_pages_and_zero_fill)
{
	struct czfs_pool *p;
	uint32_t pages[3];
	uint8_t src[10000], dst[10000];

	ck_assert_int_eq(czfs_pool_create(POOL_PAGES * 4096, 0, &p), 0);
	/* given scattered pages with a missing one in the middle */
	ck_assert_int_eq(czfs_pool_alloc(p, 0, &pages[2]), 0);
	ck_assert_int_eq(czfs_pool_alloc(p, 0, &pages[1]), 0);
	ck_assert_int_eq(czfs_pool_alloc(p, 0, &pages[0]), 0);
	for (unsigned i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 31 + 7);
	/* when copied in at an offset across page boundaries */
	czfs_memcpy_to_pages(p, pages, 100, src, sizeof(src));
	czfs_memcpy_from_pages(p, pages, 100, dst, sizeof(src));
	ck_assert_mem_eq(src, dst, sizeof(src));
	/* then a missing page reads as zeros */
	pages[1] = CZFS_NO_PAGE;
	czfs_memcpy_from_pages(p, pages, 4000, dst, 4096 + 200);
	ck_assert_mem_eq(dst, src + 3900, 96);
	ck_assert(czfs_is_zero(dst + 96, 4096));
	ck_assert_mem_eq(dst + 96 + 4096, src + 8092, 104);
	czfs_pool_destroy(p);
}
END_TEST

/* Given pages used then freed, when trimmed to a mark, then what is free
 * beyond it is given back and pages in use never are. */
START_TEST(trim_gives_back_free_pages_only)
{
	struct czfs_pool_stats st;
	struct czfs_pool *p;
	uint32_t a, b;

	ck_assert_int_eq(czfs_pool_create(256 * 4096, 0, &p), 0);
	czfs_pool_get_stats(p, &st);
	ck_assert_uint_eq(st.resident, 0);	/* nothing touched yet */
	ck_assert_int_eq(czfs_pool_alloc(p, 4, &a), 0);
	ck_assert_int_eq(czfs_pool_alloc(p, 4, &b), 0);
	memset(czfs_pool_addr(p, a), 7, 16 * 4096);
	czfs_pool_get_stats(p, &st);
	ck_assert_uint_eq(st.resident, 32);
	czfs_pool_free(p, b, 4);
	ck_assert_uint_eq(czfs_pool_trim(p, 0), 16);
	ck_assert_uint_eq(czfs_pool_trim(p, 0), 0);
	czfs_pool_get_stats(p, &st);
	ck_assert_uint_eq(st.resident, 16);
	ck_assert_uint_eq(*(uint8_t *)czfs_pool_addr(p, a + 15), 7);
	czfs_pool_free(p, a, 4);
	ck_assert_uint_eq(czfs_pool_trim(p, 16), 0);	/* within the mark */
	ck_assert_uint_eq(czfs_pool_trim(p, 0), 16);
	ck_assert_int_eq(czfs_pool_alloc(p, 4, &a), 0);
	ck_assert_uint_eq(*(uint8_t *)czfs_pool_addr(p, a), 0);	/* given back */
	czfs_pool_destroy(p);
}
END_TEST

/* Given a free run holding memory beside one given back, when a run is
 * allocated, then it is the one holding memory: no page faults in while
 * resident ones lie free. */
START_TEST(allocation_prefers_resident_pages)
{
	struct czfs_pool_stats st;
	struct czfs_pool *p;
	uint32_t a, b, c;

	ck_assert_int_eq(czfs_pool_create(256 * 4096, 0, &p), 0);
	ck_assert_int_eq(czfs_pool_alloc(p, 4, &a), 0);
	ck_assert_int_eq(czfs_pool_alloc(p, 4, &b), 0);
	ck_assert_uint_eq(b, a ^ 16);			/* buddies */
	czfs_pool_free(p, a, 4);
	ck_assert_uint_eq(czfs_pool_trim(p, 0), 16);	/* a given back */
	czfs_pool_free(p, b, 4);			/* merged with a */
	ck_assert_int_eq(czfs_pool_alloc(p, 4, &c), 0);
	ck_assert_uint_eq(c, b);
	czfs_pool_get_stats(p, &st);
	ck_assert_uint_eq(st.resident, 16);
	czfs_pool_destroy(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pagepool");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, runs_are_naturally_aligned_and_contiguous);
	tcase_add_test(tc, exhaustion_and_buddy_merge);
	tcase_add_test(tc, reserve_drains_then_refills_first);
	tcase_add_test(tc, reserve_larger_than_half_is_refused);
	tcase_add_test(tc, copy_helpers_cross_pages_and_zero_fill);
	tcase_add_test(tc, trim_gives_back_free_pages_only);
	tcase_add_test(tc, allocation_prefers_resident_pages);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
