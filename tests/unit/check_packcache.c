// SPDX-License-Identifier: MIT
/* Unit tests: the pack cache — hits by key, LRU eviction of what nobody
 * holds, a full cache of held entries refusing, a second insert of a key. */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "packcache.h"

static void *bytes(char c)
{
	char *p = malloc(16);

	ck_assert_ptr_nonnull(p);
	memset(p, c, 16);
	return p;
}

START_TEST(hits_by_the_whole_key)
{
	struct czfs_pcache *pc;
	struct czfs_pentry *e;
	uint64_t hits, misses;

	ck_assert_int_eq(czfs_pcache_create(4, &pc), 0);
	e = czfs_pcache_insert(pc, 10, 0xabc, 16, bytes('a'));
	ck_assert_ptr_nonnull(e);
	czfs_pcache_put(pc, e);
	e = czfs_pcache_get(pc, 10, 0xabc, 16);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(((char *)e->data)[15], 'a');
	czfs_pcache_put(pc, e);
	/* the same address with another checksum or length is another pack */
	ck_assert_ptr_null(czfs_pcache_get(pc, 10, 0xabd, 16));
	ck_assert_ptr_null(czfs_pcache_get(pc, 10, 0xabc, 17));
	ck_assert_ptr_null(czfs_pcache_get(pc, 11, 0xabc, 16));
	czfs_pcache_counts(pc, &hits, &misses);
	ck_assert_uint_eq(hits, 1);
	ck_assert_uint_eq(misses, 3);
	czfs_pcache_destroy(pc);
}
END_TEST

START_TEST(evicts_the_least_recently_used)
{
	struct czfs_pcache *pc;
	struct czfs_pentry *e;

	ck_assert_int_eq(czfs_pcache_create(2, &pc), 0);
	czfs_pcache_put(pc, czfs_pcache_insert(pc, 1, 1, 16, bytes('1')));
	czfs_pcache_put(pc, czfs_pcache_insert(pc, 2, 2, 16, bytes('2')));
	czfs_pcache_put(pc, czfs_pcache_get(pc, 1, 1, 16));	/* 2 is older */
	czfs_pcache_put(pc, czfs_pcache_insert(pc, 3, 3, 16, bytes('3')));
	ck_assert_ptr_null(czfs_pcache_get(pc, 2, 2, 16));
	e = czfs_pcache_get(pc, 1, 1, 16);
	ck_assert_ptr_nonnull(e);
	czfs_pcache_put(pc, e);
	czfs_pcache_destroy(pc);
}
END_TEST

START_TEST(held_entries_are_never_evicted)
{
	struct czfs_pcache *pc;
	struct czfs_pentry *a, *b, *again;

	ck_assert_int_eq(czfs_pcache_create(1, &pc), 0);
	a = czfs_pcache_insert(pc, 1, 1, 16, bytes('1'));
	ck_assert_ptr_nonnull(a);
	/* full of held entries: refused, the data freed (ASan would see it) */
	ck_assert_ptr_null(czfs_pcache_insert(pc, 2, 2, 16, bytes('2')));
	ck_assert_int_eq(((char *)a->data)[0], '1');
	/* a second insert of a key gives the first entry */
	again = czfs_pcache_insert(pc, 1, 1, 16, bytes('x'));
	ck_assert_ptr_eq(again, a);
	ck_assert_int_eq(((char *)a->data)[0], '1');
	czfs_pcache_put(pc, again);
	czfs_pcache_put(pc, a);
	b = czfs_pcache_insert(pc, 2, 2, 16, bytes('2'));
	ck_assert_ptr_nonnull(b);
	czfs_pcache_put(pc, b);
	czfs_pcache_put(pc, NULL);
	czfs_pcache_destroy(pc);
	czfs_pcache_destroy(NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("packcache");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, hits_by_the_whole_key);
	tcase_add_test(tc, evicts_the_least_recently_used);
	tcase_add_test(tc, held_entries_are_never_evicted);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
