// SPDX-License-Identifier: MIT
/* Unit tests: cluster cache (load protocol, LRU eviction, invalidation). */
#include "config.h"

#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "ccache.h"
#include "pagepool.h"
#include "util.h"

static struct czfs_pool *pool;
static struct czfs_ccache *cc;

/* An owner's entry: its own state after the cache's. */
struct owned {
	struct czfs_centry ce;
	uint64_t mine[2];
};

static void setup(void)
{
	/* 256 pages: room for 16 clusters of 16 pages */
	ck_assert_int_eq(czfs_pool_create(256 * 4096, 0, &pool), 0);
	ck_assert_int_eq(czfs_ccache_create(pool, 0, sizeof(struct owned), &cc), 0);
}

static void teardown(void)
{
	czfs_ccache_destroy(cc);
	czfs_pool_destroy(pool);
}

/* Load (ino, idx) with a 16-page run filled with a marker byte. */
static struct czfs_centry *load(uint64_t ino, uint64_t idx, int *ret)
{
	struct czfs_centry *e;

	*ret = czfs_ccache_get(cc, ino, idx, CZFS_CC_CREATE, &e);
	if (*ret == 1) {
		ck_assert_int_eq(czfs_ccache_alloc_run(cc, e, 4, 0), 0);
		memset(czfs_pool_addr(pool, e->page), (int)(ino + idx), 16 * 4096);
		e->len = 16 * 4096;
		czfs_ccache_loaded(cc, e, 0);
	}
	return e;
}

START_TEST(miss_then_hit)
{
	struct czfs_centry *e, *again;
	struct czfs_ccache_stats st;
	int ret;

	e = load(5, 0, &ret);
	ck_assert_int_eq(ret, 1);		/* first: the caller loads */
	czfs_ccache_put(cc, e);
	again = load(5, 0, &ret);
	ck_assert_int_eq(ret, 0);		/* then: a hit */
	ck_assert_ptr_eq(again, e);
	ck_assert_uint_eq(*(uint8_t *)czfs_pool_addr(pool, e->page), 5);
	czfs_ccache_put(cc, again);
	ck_assert_int_eq(czfs_ccache_get(cc, 6, 0, 0, &e), -ENOENT);
	czfs_ccache_get_stats(cc, &st);
	ck_assert_uint_eq(st.hits, 1);
	ck_assert_uint_eq(st.misses, 1);
}
END_TEST

START_TEST(the_owners_state_is_zeroed_then_kept)
{
	struct czfs_ccache *small;
	struct czfs_centry *e;
	struct owned *o;
	int ret;

	ck_assert_int_eq(czfs_ccache_create(pool, 0, sizeof(*e) - 1, &small),
			 -EINVAL);
	e = load(5, 0, &ret);
	o = (struct owned *)e;
	ck_assert_uint_eq(o->mine[0] | o->mine[1], 0);
	o->mine[1] = 42;
	czfs_ccache_put(cc, e);
	e = load(5, 0, &ret);
	ck_assert_int_eq(ret, 0);
	ck_assert_uint_eq(((struct owned *)e)->mine[1], 42);
	czfs_ccache_put(cc, e);
}
END_TEST

START_TEST(lru_eviction_keeps_referenced_entries)
{
	struct czfs_centry *held, *e;
	int ret;

	/* given one referenced entry and 15 unreferenced ones filling the pool */
	held = load(1, 0, &ret);
	for (uint64_t i = 1; i < 16; i++)
		czfs_ccache_put(cc, load(1, i, &ret));
	/* when a 17th cluster is loaded */
	e = load(1, 100, &ret);
	ck_assert_int_eq(ret, 1);
	czfs_ccache_put(cc, e);
	/* then the oldest unreferenced one went, the referenced one stayed */
	ck_assert(!czfs_ccache_contains(cc, 1, 1));
	ck_assert(czfs_ccache_contains(cc, 1, 0));
	ck_assert(czfs_ccache_contains(cc, 1, 15));
	ck_assert_uint_eq(*(uint8_t *)czfs_pool_addr(pool, held->page), 1);
	czfs_ccache_put(cc, held);
}
END_TEST

START_TEST(all_referenced_gives_enomem)
{
	struct czfs_centry *ents[16], *e;
	int ret;

	for (uint64_t i = 0; i < 16; i++)
		ents[i] = load(2, i, &ret);
	czfs_ccache_set_wait(cc, 100);	/* nothing will come back */
	ck_assert_int_eq(czfs_ccache_get(cc, 2, 99, CZFS_CC_CREATE, &e), 1);
	ck_assert_int_eq(czfs_ccache_alloc_run(cc, e, 4, 0), -ENOMEM);
	czfs_ccache_loaded(cc, e, -ENOMEM);
	czfs_ccache_put(cc, e);
	ck_assert(!czfs_ccache_contains(cc, 2, 99));	/* failed load dropped */
	for (unsigned i = 0; i < 16; i++)
		czfs_ccache_put(cc, ents[i]);
}
END_TEST

/* Pages the pool waited for (czfs_pool_wait calls), so far. */
static uint64_t pool_waits(void)
{
	struct czfs_pool_stats st;

	czfs_pool_get_stats(pool, &st);
	return st.waits;
}

START_TEST(nowait_gives_enomem_at_once)
{
	struct czfs_centry *ents[16], *e;
	int ret;

	/* given a full cache, every entry held, and a 2 s wait set */
	for (uint64_t i = 0; i < 16; i++)
		ents[i] = load(2, i, &ret);
	czfs_ccache_set_wait(cc, 2000);
	ck_assert_int_eq(czfs_ccache_get(cc, 2, 99, CZFS_CC_CREATE, &e), 1);
	/* when a prefetch asks for pages, then it gives up without waiting
	 * (with its claim held) */
	ck_assert_int_eq(czfs_ccache_alloc_run(cc, e, 4, CZFS_CC_NOWAIT), -ENOMEM);
	ck_assert_uint_eq(pool_waits(), 0);
	ck_assert_uint_eq(e->page, CZFS_NO_PAGE);
	/* while a plain allocation waits (here the shortest wait) */
	czfs_ccache_set_wait(cc, 0);
	ck_assert_int_eq(czfs_ccache_alloc_run(cc, e, 4, 0), -ENOMEM);
	ck_assert_uint_eq(pool_waits(), 1);
	ck_assert_uint_eq(e->page, CZFS_NO_PAGE);
	czfs_ccache_loaded(cc, e, -ENOMEM);
	czfs_ccache_put(cc, e);
	for (unsigned i = 0; i < 16; i++)
		czfs_ccache_put(cc, ents[i]);
}
END_TEST

/* A shrinker holding one pool run of 16 pages, given back when asked. */
struct held_run {
	struct czfs_pool *pool;
	uint32_t page;
	unsigned calls;
};

static unsigned give_back(void *arg)
{
	struct held_run *h = arg;

	h->calls++;
	if (h->page == CZFS_NO_PAGE)
		return 0;
	czfs_pool_free(h->pool, h->page, 4);
	h->page = CZFS_NO_PAGE;
	return 16;
}

START_TEST(shrinker_is_asked_before_anyone_waits)
{
	struct held_run h = { .pool = pool };
	struct czfs_centry *ents[15], *e;
	int ret;

	/* given a pool whose last run is held outside the cache */
	for (uint64_t i = 0; i < 15; i++)
		ents[i] = load(3, i, &ret);
	ck_assert_int_eq(czfs_pool_alloc(pool, 4, &h.page), 0);
	czfs_ccache_set_shrinker(cc, give_back, &h);
	/* when a load finds nothing to evict, even without waiting */
	ck_assert_int_eq(czfs_ccache_get(cc, 3, 99, CZFS_CC_CREATE, &e), 1);
	ck_assert_int_eq(czfs_ccache_alloc_run(cc, e, 4, CZFS_CC_NOWAIT), 0);
	/* then the shrinker gave back its run, and the load has it */
	ck_assert_uint_eq(h.calls, 1);
	ck_assert_uint_eq(h.page, CZFS_NO_PAGE);
	ck_assert_uint_ne(e->page, CZFS_NO_PAGE);
	e->len = 4096;
	czfs_ccache_loaded(cc, e, 0);
	czfs_ccache_put(cc, e);
	/* and a shrink evicts before it asks, and asks when nothing is left */
	ck_assert_uint_eq(czfs_ccache_shrink(cc, 1), 16);
	ck_assert_uint_eq(h.calls, 1);
	ck_assert_uint_eq(czfs_ccache_shrink(cc, 1), 0);
	ck_assert_uint_eq(h.calls, 2);
	for (unsigned i = 0; i < 15; i++)
		czfs_ccache_put(cc, ents[i]);
	czfs_ccache_set_shrinker(cc, NULL, NULL);
}
END_TEST

START_TEST(holes_take_no_pages)
{
	struct czfs_centry *e;
	struct czfs_pool_stats st;

	ck_assert_int_eq(czfs_ccache_get(cc, 3, 7, CZFS_CC_CREATE, &e), 1);
	e->len = 65536;
	czfs_ccache_loaded(cc, e, 0);
	ck_assert_uint_eq(e->page, CZFS_NO_PAGE);
	czfs_ccache_put(cc, e);
	czfs_pool_get_stats(pool, &st);
	ck_assert_uint_eq(st.used, 0);
	ck_assert(czfs_ccache_contains(cc, 3, 7));
}
END_TEST

START_TEST(second_fill_of_a_hole_keeps_the_first_pages)
{
	struct czfs_centry *e;
	struct czfs_pool_stats st;
	uint32_t first;

	/* given a hole entry a writer has filled and written into */
	ck_assert_int_eq(czfs_ccache_get(cc, 3, 8, CZFS_CC_CREATE, &e), 1);
	czfs_ccache_loaded(cc, e, 0);
	ck_assert_int_eq(czfs_ccache_fill_hole(cc, e, 4), 0);
	first = e->page;
	memset(czfs_pool_addr(pool, first), 0x5a, 100);
	/* when a second writer, which saw the hole too, fills it */
	ck_assert_int_eq(czfs_ccache_fill_hole(cc, e, 4), 0);
	/* then the first pages and what was written there stay */
	ck_assert_uint_eq(e->page, first);
	ck_assert_uint_eq(*(uint8_t *)czfs_pool_addr(pool, e->page), 0x5a);
	czfs_pool_get_stats(pool, &st);
	ck_assert_uint_eq(st.used, 16);
	czfs_ccache_put(cc, e);
}
END_TEST

START_TEST(invalidate_drops_range_even_when_referenced)
{
	struct czfs_centry *held;
	struct czfs_pool_stats st;
	int ret;

	held = load(4, 3, &ret);
	czfs_ccache_put(cc, load(4, 1, &ret));
	czfs_ccache_put(cc, load(4, 5, &ret));
	czfs_ccache_invalidate(cc, 4, 2);
	ck_assert(czfs_ccache_contains(cc, 4, 1));
	ck_assert(!czfs_ccache_contains(cc, 4, 3));
	ck_assert(!czfs_ccache_contains(cc, 4, 5));
	/* the held entry's pages stay valid until it is put */
	ck_assert_uint_eq(*(uint8_t *)czfs_pool_addr(pool, held->page), 7);
	czfs_ccache_put(cc, held);
	czfs_pool_get_stats(pool, &st);
	ck_assert_uint_eq(st.used, 16);	/* only (4, 1) is left */
	/* a short range (looked up index by index) drops only its own */
	czfs_ccache_put(cc, load(4, 7, &ret));
	czfs_ccache_put(cc, load(5, 7, &ret));
	czfs_ccache_invalidate_range(cc, 4, 7, 8);
	ck_assert(!czfs_ccache_contains(cc, 4, 7));
	ck_assert(czfs_ccache_contains(cc, 5, 7));
	ck_assert(czfs_ccache_contains(cc, 4, 1));
	czfs_ccache_invalidate_range(cc, 4, 0, 3);
	ck_assert(!czfs_ccache_contains(cc, 4, 1));
}
END_TEST

struct waiter {
	int ret;
	struct czfs_centry *e;
};

static void *wait_for_load(void *arg)
{
	struct waiter *w = arg;

	w->ret = czfs_ccache_get(cc, 9, 9, CZFS_CC_CREATE, &w->e);
	return NULL;
}

START_TEST(second_reader_waits_for_the_loader)
{
	struct czfs_centry *e;
	struct czfs_ccache_stats st;
	struct waiter w = { -1, NULL };
	pthread_t th;

	/* given a loader holding a LOADING entry */
	ck_assert_int_eq(czfs_ccache_get(cc, 9, 9, CZFS_CC_CREATE, &e), 1);
	ck_assert_int_eq(pthread_create(&th, NULL, wait_for_load, &w), 0);
	do {
		czfs_ccache_get_stats(cc, &st);
	} while (!st.waits);
	/* a NOWAIT caller does not wait */
	struct czfs_centry *other;
	ck_assert_int_eq(czfs_ccache_get(cc, 9, 9, CZFS_CC_CREATE | CZFS_CC_NOWAIT,
					 &other), -EAGAIN);
	/* when the load completes, then the waiter gets the same entry */
	ck_assert_int_eq(czfs_ccache_alloc_run(cc, e, 0, 0), 0);
	e->len = 4096;
	czfs_ccache_loaded(cc, e, 0);
	pthread_join(th, NULL);
	ck_assert_int_eq(w.ret, 0);
	ck_assert_ptr_eq(w.e, e);
	czfs_ccache_put(cc, w.e);
	czfs_ccache_put(cc, e);
}
END_TEST

/* Load clusters 0..n-1 of ino 1 and let them go. */
static void load_put(uint64_t n)
{
	struct czfs_centry *e;
	int ret;

	for (uint64_t i = 0; i < n; i++) {
		e = load(1, i, &ret);
		ck_assert_int_eq(ret, 1);
		czfs_ccache_put(cc, e);
	}
}

/* Given a low mark of 2 clusters, when 6 are loaded and let go, then the
 * unreferenced entries hold at most the target, the oldest left first. */
START_TEST(low_mark_caps_unreferenced_entries)
{
	struct czfs_ccache_stats st;

	ck_assert_int_eq(czfs_ccache_set_low(cc, 32), 0);
	load_put(6);
	czfs_ccache_get_stats(cc, &st);
	ck_assert_uint_eq(st.target, 32);
	ck_assert_uint_eq(st.lru_pages, 32);
	ck_assert_uint_eq(st.evictions, 4);
	ck_assert(czfs_ccache_contains(cc, 1, 5));
	ck_assert(!czfs_ccache_contains(cc, 1, 0));
}
END_TEST

/* Given clusters evicted by the low mark, when the last one evicted is
 * read again at once, then the target grows by its pages; when one
 * evicted long before (more than the target's pages of evictions ago) is
 * read again, it does not. */
START_TEST(refault_within_target_grows_it)
{
	struct czfs_ccache_stats st;
	struct czfs_centry *e;
	int ret;

	ck_assert_int_eq(czfs_ccache_set_low(cc, 32), 0);
	load_put(8);
	/* evicted: 0..5, 16 pages each; 5 last, 0 80 pages before */
	e = load(1, 5, &ret);
	ck_assert_int_eq(ret, 1);
	czfs_ccache_put(cc, e);
	czfs_ccache_get_stats(cc, &st);
	ck_assert_uint_eq(st.refaults, 1);
	ck_assert_uint_eq(st.target, 48);
	e = load(1, 0, &ret);
	ck_assert_int_eq(ret, 1);
	czfs_ccache_put(cc, e);
	czfs_ccache_get_stats(cc, &st);
	ck_assert_uint_eq(st.refaults, 1);
	ck_assert_uint_le(st.lru_pages, st.target);
}
END_TEST

/* Given a target grown by refaults, when ticks find no lookup since the
 * one before, then the target halves (not below low), the LRU list is
 * cut to it, and the free pages beyond low are given back. */
START_TEST(idle_tick_shrinks_and_gives_pages_back)
{
	struct czfs_ccache_stats st;
	struct czfs_pool_stats ps;
	struct czfs_centry *e;
	int ret;

	ck_assert_int_eq(czfs_ccache_set_low(cc, 16), 0);
	for (uint64_t i = 0; i < 3; i++) {	/* 0, 1 (0 out), 0 again */
		e = load(1, i % 2, &ret);
		czfs_ccache_put(cc, e);
	}
	czfs_ccache_get_stats(cc, &st);
	ck_assert_uint_gt(st.target, 16);
	ck_assert(!czfs_ccache_idle(cc));	/* lookups since the start */
	for (int i = 0; i < 8; i++)
		ck_assert(czfs_ccache_idle(cc));
	czfs_ccache_get_stats(cc, &st);
	ck_assert_uint_eq(st.target, 16);
	ck_assert_uint_le(st.lru_pages, 16);
	czfs_pool_get_stats(pool, &ps);
	ck_assert_uint_le(ps.resident, 16);
	ck_assert_uint_eq(ps.used, st.lru_pages);
	/* what is left still reads back */
	e = load(1, 0, &ret);
	ck_assert_int_eq(ret, 0);
	ck_assert_uint_eq(*(uint8_t *)czfs_pool_addr(pool, e->page), 1);
	czfs_ccache_put(cc, e);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ccache");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, miss_then_hit);
	tcase_add_test(tc, the_owners_state_is_zeroed_then_kept);
	tcase_add_test(tc, lru_eviction_keeps_referenced_entries);
	tcase_add_test(tc, all_referenced_gives_enomem);
	tcase_add_test(tc, nowait_gives_enomem_at_once);
	tcase_add_test(tc, shrinker_is_asked_before_anyone_waits);
	tcase_add_test(tc, holes_take_no_pages);
	tcase_add_test(tc, second_fill_of_a_hole_keeps_the_first_pages);
	tcase_add_test(tc, invalidate_drops_range_even_when_referenced);
	tcase_add_test(tc, second_reader_waits_for_the_loader);
	tcase_add_test(tc, low_mark_caps_unreferenced_entries);
	tcase_add_test(tc, refault_within_target_grows_it);
	tcase_add_test(tc, idle_tick_shrinks_and_gives_pages_back);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
