// SPDX-License-Identifier: MIT
/* Unit tests: the pack cache — hits by key, LRU eviction of what nobody
 * holds, a full cache of held (or LOADING) entries refusing, and two
 * threads missing one pack at once: one decode, or two when the first
 * fails. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "czfs_fs.h"
#include "packcache.h"

static void *bytes(struct czfs_pcache *pc, char c)
{
	char *p = czfs_pcache_buffer(pc);

	ck_assert_ptr_nonnull(p);
	memset(p, c, 16);
	return p;
}

/* Claim an absent key and fill it with c; the reference is dropped. */
static void add(struct czfs_pcache *pc, uint64_t key, char c)
{
	struct czfs_pentry *e;

	ck_assert_int_eq(czfs_pcache_claim(pc, key, (uint32_t)key, 16, 0, &e), 1);
	ck_assert_ptr_null(e->data);
	czfs_pcache_fill(pc, e, bytes(pc, c), 0);
	czfs_pcache_put(pc, e);
}

/* key is absent: the claim is a miss, given up at once. */
static void assert_absent(struct czfs_pcache *pc, uint64_t key,
			  uint32_t checksum, uint32_t ulen)
{
	struct czfs_pentry *e;

	ck_assert_int_eq(czfs_pcache_claim(pc, key, checksum, ulen,
					   CZFS_PC_NOWAIT, &e), 1);
	czfs_pcache_abort(pc, e);
}

START_TEST(hits_by_the_whole_key)
{
	struct czfs_pcache_stats st;
	struct czfs_pcache *pc;
	struct czfs_pentry *e;

	ck_assert_int_eq(czfs_pcache_create(4, &pc), 0);
	add(pc, 10, 'a');
	ck_assert_int_eq(czfs_pcache_claim(pc, 10, 10, 16, 0, &e), 0);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(((char *)e->data)[15], 'a');
	czfs_pcache_put(pc, e);
	/* the same address with another checksum or length is another pack */
	assert_absent(pc, 10, 11, 16);
	assert_absent(pc, 10, 10, 17);
	assert_absent(pc, 11, 10, 16);
	czfs_pcache_get_stats(pc, &st);
	ck_assert_uint_eq(st.hits, 1);
	ck_assert_uint_eq(st.misses, 4);
	ck_assert_uint_eq(st.waits, 0);
	czfs_pcache_destroy(pc);
}
END_TEST

START_TEST(evicts_the_least_recently_used)
{
	struct czfs_pcache *pc;
	struct czfs_pentry *e;

	ck_assert_int_eq(czfs_pcache_create(2, &pc), 0);
	add(pc, 1, '1');
	add(pc, 2, '2');
	ck_assert_int_eq(czfs_pcache_claim(pc, 1, 1, 16, 0, &e), 0);
	czfs_pcache_put(pc, e);			/* 2 is older */
	add(pc, 3, '3');
	ck_assert_int_eq(czfs_pcache_claim(pc, 1, 1, 16, 0, &e), 0);
	ck_assert_int_eq(((char *)e->data)[0], '1');
	czfs_pcache_put(pc, e);
	assert_absent(pc, 2, 2, 16);	/* (its claim evicts 3) */
	czfs_pcache_destroy(pc);
}
END_TEST

START_TEST(held_entries_are_never_evicted)
{
	struct czfs_pcache *pc;
	struct czfs_pentry *a, *again, *e;

	ck_assert_int_eq(czfs_pcache_create(1, &pc), 0);
	ck_assert_int_eq(czfs_pcache_claim(pc, 1, 1, 16, 0, &a), 1);
	/* a LOADING entry holds its slot */
	ck_assert_int_eq(czfs_pcache_claim(pc, 2, 2, 16, 0, &e), -ENOSPC);
	ck_assert_ptr_null(e);
	czfs_pcache_fill(pc, a, bytes(pc, '1'), 0);
	/* full of held entries: refused */
	ck_assert_int_eq(czfs_pcache_claim(pc, 2, 2, 16, 0, &e), -ENOSPC);
	ck_assert_ptr_null(e);
	ck_assert_int_eq(((char *)a->data)[0], '1');
	/* a second claim of a key gives the first entry */
	ck_assert_int_eq(czfs_pcache_claim(pc, 1, 1, 16, 0, &again), 0);
	ck_assert_ptr_eq(again, a);
	czfs_pcache_put(pc, again);
	czfs_pcache_put(pc, a);
	add(pc, 2, '2');
	assert_absent(pc, 1, 1, 16);
	czfs_pcache_put(pc, NULL);
	czfs_pcache_destroy(pc);
	czfs_pcache_destroy(NULL);
}
END_TEST

/* ---- two threads, one pack ---------------------------------------------- */

struct race {
	struct czfs_pcache *pc;
	atomic_uint decodes;
	bool fail_first;		/* the first decode fails */
	atomic_bool failed;
};

/* Until the other thread sleeps in its claim (a wait counted); the limit,
 * 60 s, only guards against a hang. */
static void until_waited(struct czfs_pcache *pc)
{
	struct czfs_pcache_stats st;

	for (int i = 0; i < 60000; i++) {
		czfs_pcache_get_stats(pc, &st);
		if (st.waits)
			return;
		usleep(1000);
	}
	ck_abort_msg("the second thread never waited for the decode");
}

static void *reader(void *arg)
{
	struct race *r = arg;
	struct czfs_pentry *e;
	int ret = czfs_pcache_claim(r->pc, 7, 7, 16, 0, &e);

	ck_assert_int_ge(ret, 0);
	if (ret == 1) {			/* ours to decode */
		unsigned n = atomic_fetch_add(&r->decodes, 1);

		if (!n)
			until_waited(r->pc);
		if (!n && r->fail_first) {
			atomic_store(&r->failed, true);
			czfs_pcache_abort(r->pc, e);
			return NULL;
		}
		czfs_pcache_fill(r->pc, e, bytes(r->pc, 'p'), 0);
	}
	ck_assert_int_eq(((char *)e->data)[15], 'p');
	czfs_pcache_put(r->pc, e);
	return NULL;
}

static void race(struct race *r)
{
	pthread_t t[2];

	ck_assert_int_eq(czfs_pcache_create(4, &r->pc), 0);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, reader, r), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
}

START_TEST(a_second_miss_waits_for_the_decode)
{
	struct race r = { 0 };
	struct czfs_pcache_stats st;
	struct czfs_pentry *e;

	race(&r);
	ck_assert_uint_eq(atomic_load(&r.decodes), 1);
	czfs_pcache_get_stats(r.pc, &st);
	ck_assert_uint_eq(st.misses, 1);
	ck_assert_uint_eq(st.waits, 1);
	ck_assert_uint_eq(st.hits, 1);
	/* while a decode is in flight, NOWAIT does not sleep */
	ck_assert_int_eq(czfs_pcache_claim(r.pc, 8, 8, 16, 0, &e), 1);
	ck_assert_int_eq(czfs_pcache_claim(r.pc, 8, 8, 16, CZFS_PC_NOWAIT, &e),
			 -EAGAIN);
	ck_assert_ptr_null(e);
	czfs_pcache_destroy(r.pc);
}
END_TEST

START_TEST(a_failed_decode_leaves_it_to_the_waiter)
{
	struct race r = { .fail_first = true };
	struct czfs_pcache_stats st;
	struct czfs_pentry *e;

	race(&r);
	ck_assert(atomic_load(&r.failed));
	ck_assert_uint_eq(atomic_load(&r.decodes), 2);
	czfs_pcache_get_stats(r.pc, &st);
	ck_assert_uint_eq(st.misses, 2);
	ck_assert_uint_eq(st.waits, 1);
	ck_assert_int_eq(czfs_pcache_claim(r.pc, 7, 7, 16, 0, &e), 0);
	ck_assert_int_eq(((char *)e->data)[0], 'p');
	czfs_pcache_put(r.pc, e);
	czfs_pcache_destroy(r.pc);
}
END_TEST

/* Given a pack held and one not, when the cache is dropped, then only
 * the one nobody holds is gone. */
START_TEST(drop_frees_what_nobody_holds)
{
	struct czfs_pcache *pc;
	struct czfs_pentry *held, *e;

	ck_assert_int_eq(czfs_pcache_create(4, &pc), 0);
	add(pc, 1, '1');
	add(pc, 2, '2');
	ck_assert_int_eq(czfs_pcache_claim(pc, 2, 2, 16, 0, &held), 0);
	czfs_pcache_drop(pc);
	assert_absent(pc, 1, 1, 16);
	ck_assert_int_eq(czfs_pcache_claim(pc, 2, 2, 16, 0, &e), 0);
	ck_assert_int_eq(((char *)e->data)[0], '2');
	czfs_pcache_put(pc, e);
	czfs_pcache_put(pc, held);
	czfs_pcache_destroy(pc);
}
END_TEST

/* Given a pack of two members, when both were taken, then its last put
 * frees it (counted), while one of unknown members stays. */
START_TEST(a_pack_all_taken_goes_at_its_last_put)
{
	struct czfs_pcache_stats st;
	struct czfs_pcache *pc;
	struct czfs_pentry *e, *held;

	ck_assert_int_eq(czfs_pcache_create(4, &pc), 0);
	add(pc, 1, '1');			/* members unknown */
	ck_assert_int_eq(czfs_pcache_claim(pc, 2, 2, 16, 0, &e), 1);
	czfs_pcache_fill(pc, e, bytes(pc, '2'), 2);
	czfs_pcache_took(pc, e);
	czfs_pcache_put(pc, e);
	ck_assert_int_eq(czfs_pcache_claim(pc, 2, 2, 16, 0, &e), 0);
	ck_assert_int_eq(czfs_pcache_claim(pc, 2, 2, 16, 0, &held), 0);
	czfs_pcache_took(pc, e);
	czfs_pcache_put(pc, e);
	czfs_pcache_get_stats(pc, &st);
	ck_assert_uint_eq(st.consumed, 0);	/* still held */
	ck_assert_uint_eq(st.bytes, 32);
	czfs_pcache_put(pc, held);
	czfs_pcache_get_stats(pc, &st);
	ck_assert_uint_eq(st.consumed, 1);
	ck_assert_uint_eq(st.bytes, 16);
	assert_absent(pc, 2, 2, 16);
	ck_assert_int_eq(czfs_pcache_claim(pc, 1, 1, 16, 0, &e), 0);
	czfs_pcache_put(pc, e);
	czfs_pcache_destroy(pc);
}
END_TEST

/* A freed pack's buffer is the next decode's (no fresh pages for each
 * pack); given back unused, too; a drop frees them all. */
START_TEST(buffers_are_reused)
{
	struct czfs_pcache *pc;
	struct czfs_pentry *e;
	void *first, *spare;

	ck_assert_int_eq(czfs_pcache_create(1, &pc), 0);
	ck_assert_int_eq(czfs_pcache_claim(pc, 1, 1, 16, 0, &e), 1);
	first = czfs_pcache_buffer(pc);
	ck_assert_ptr_nonnull(first);
	((char *)first)[CZFS_PACK_MAX_ULEN - 1] = 'z';	/* all of it is ours */
	czfs_pcache_fill(pc, e, first, 0);
	czfs_pcache_put(pc, e);
	add(pc, 2, '2');			/* evicts 1: its buffer is kept */
	ck_assert_int_eq(czfs_pcache_claim(pc, 2, 2, 16, 0, &e), 0);
	ck_assert_ptr_eq(e->data, first);	/* and 2 was decoded into it: */
	ck_assert_int_eq(((char *)e->data)[CZFS_PACK_MAX_ULEN - 1], 'z');
						/* (the same pages, not new) */
	czfs_pcache_put(pc, e);
	spare = czfs_pcache_buffer(pc);	/* none spare: a new one */
	ck_assert_ptr_ne(spare, first);
	czfs_pcache_give(pc, spare);
	ck_assert_ptr_eq(czfs_pcache_buffer(pc), spare);
	czfs_pcache_give(pc, spare);
	czfs_pcache_drop(pc);			/* 2 and the spare freed */
	assert_absent(pc, 2, 2, 16);
	czfs_pcache_destroy(pc);		/* (ASan: nothing leaked) */
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
	tcase_add_test(tc, a_second_miss_waits_for_the_decode);
	tcase_add_test(tc, a_failed_decode_leaves_it_to_the_waiter);
	tcase_add_test(tc, drop_frees_what_nobody_holds);
	tcase_add_test(tc, a_pack_all_taken_goes_at_its_last_put);
	tcase_add_test(tc, buffers_are_reused);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
