// SPDX-License-Identifier: MIT
/*
 * Unit tests: the node cache under the B-tree.  A tiny budget (eviction,
 * the path of a repeated lookup all hits), an adaptive limit (grows on
 * refaults, halved by a trim), readers from several threads,
 * the aligned windows a read-only image reads ahead (few reads, each
 * window read once by threads that miss it together, a damaged node in a
 * window still found), and cached nodes checked against the pointers that
 * lead to them.
 */
#include "config.h"

#include <check.h>
#include <pthread.h>
#include <stdlib.h>

#include "bdev.h"
#include "btree_int.h"
#include "btree_testlib.h"
#include "util.h"

#define MAXB		(1u << 16)

static struct czfs_key K(uint64_t obj, uint8_t type, uint64_t off)
{
	return (struct czfs_key){ obj, type, off };
}

START_TEST(cache_eviction)
{
	static const unsigned budgets[] = { 0, 1, 3 };
	struct czfs_nodecache_stats st, st2;
	struct model m = { 0 };
	uint64_t rng = 11;
	struct czfs_key k;
	struct env e;

	/* given a three-level tree read through a cache of a few nodes */
	env_init(&e, MAXB, budgets[_i]);
	env_build_n(&e, 30000, &m, 2);
	ck_assert_uint_eq(e.t.root_level, 2);
	model_check_lookups(&m, &e.t, &rng);
	model_check_iter(&m, &e.t);

	/* then results are right and the cache stays within budget */
	czfs_nodecache_stats(e.nc, &st);
	ck_assert_uint_gt(st.evictions, 1000);
	ck_assert_uint_le(st.nodes, budgets[_i]);
	ck_assert_uint_eq(st.dirty, 0);
	k = m.v[0].key;
	ck_assert_int_ge(czfs_btree_lookup(&e.t, &k, NULL, 0), 0);
	czfs_nodecache_stats(e.nc, &st);
	ck_assert_int_ge(czfs_btree_lookup(&e.t, &k, NULL, 0), 0);
	czfs_nodecache_stats(e.nc, &st2);
	if (budgets[_i] >= 3) {
		/* the path of a repeated lookup is all hits */
		ck_assert_uint_eq(st2.misses, st.misses);
		ck_assert_uint_eq(st2.hits, st.hits + 3);
		czfs_nodecache_forget(e.nc, e.t.root_blkaddr);
		ck_assert_int_ge(czfs_btree_lookup(&e.t, &k, NULL, 0), 0);
		czfs_nodecache_stats(e.nc, &st);
		ck_assert_uint_eq(st.misses, st2.misses + 1);
	} else {
		/* at most the root survives between lookups */
		ck_assert_uint_ge(st2.misses, st.misses + 2);
	}
	model_free(&m);
	env_destroy(&e);
}
END_TEST

/* Given a tree read through a large cache, when it is trimmed to a few
 * nodes, then that many stay, lookups still find every key, and the
 * nodes of a held path are never evicted. */
START_TEST(trim_keeps_a_few)
{
	struct czfs_nodecache_stats st;
	struct czfs_node *root;
	struct model m = { 0 };
	uint64_t rng = 5;
	struct env e;

	env_init(&e, MAXB, 100000);
	env_build_n(&e, 30000, &m, 2);
	model_check_lookups(&m, &e.t, &rng);
	czfs_nodecache_stats(e.nc, &st);
	ck_assert_uint_gt(st.nodes, 10);
	ck_assert_int_eq(czfs_node_get(e.nc, e.t.root_blkaddr, 0, -1, &root), 0);
	czfs_nodecache_trim(e.nc, 4);
	czfs_nodecache_stats(e.nc, &st);
	ck_assert_uint_le(st.nodes, 4 + 1);	/* the held root does not count */
	czfs_nodecache_trim(e.nc, 0);
	czfs_nodecache_stats(e.nc, &st);
	ck_assert_uint_eq(st.nodes, 1);
	czfs_node_put(e.nc, root);
	model_check_lookups(&m, &e.t, &rng);
	model_free(&m);
	env_destroy(&e);
}
END_TEST

/* Given a cache that may grow from 16 nodes to 4,096, when a scan reads
 * the tree in order (each leaf once), then it stays small; when random
 * lookups ask for nodes it evicted, then it grows (refaults) until they
 * mostly hit; and a trim halves the limit. */
START_TEST(adaptive_limit)
{
	struct czfs_nodecache_stats st, st2;
	struct model m = { 0 };
	uint64_t rng = 7;
	struct env e;

	env_init(&e, MAXB, 4096);
	env_build_n(&e, 30000, &m, 2);
	ck_assert_int_eq(czfs_nodecache_set_adaptive(e.nc, 16), 0);
	czfs_nodecache_stats(e.nc, &st);
	ck_assert_uint_eq(st.limit, 16);
	ck_assert_uint_le(st.nodes, 16);

	model_check_iter(&m, &e.t);
	czfs_nodecache_stats(e.nc, &st);
	ck_assert_uint_gt(st.misses, 100);	/* every leaf was read */
	ck_assert_uint_le(st.refaults, 8);
	ck_assert_uint_le(st.limit, 16 + 8 * 8);
	ck_assert_uint_le(st.nodes, st.limit);

	model_check_lookups(&m, &e.t, &rng);
	czfs_nodecache_stats(e.nc, &st);
	ck_assert_uint_gt(st.refaults, 20);
	ck_assert_uint_gt(st.limit, 100);
	model_check_lookups(&m, &e.t, &rng);
	czfs_nodecache_stats(e.nc, &st2);
	/* the second round misses a fraction of what the first did */
	ck_assert_uint_lt(st2.misses - st.misses, st.misses / 4);

	czfs_nodecache_trim(e.nc, 0);
	czfs_nodecache_stats(e.nc, &st);
	ck_assert_uint_eq(st.limit, MAX(16, st2.limit / 2));
	ck_assert_uint_eq(st.nodes, 0);
	/* a fixed cache (base 0) keeps its ceiling */
	ck_assert_int_eq(czfs_nodecache_set_adaptive(e.nc, 0), 0);
	czfs_nodecache_stats(e.nc, &st);
	ck_assert_uint_eq(st.limit, 4096);
	model_check_lookups(&m, &e.t, &rng);
	czfs_nodecache_stats(e.nc, &st2);
	ck_assert_uint_eq(st2.refaults, st.refaults);
	model_free(&m);
	env_destroy(&e);
}
END_TEST

struct reader_arg {
	struct czfs_btree *t;
	const struct model *m;
	uint64_t seed;
	unsigned errors;
};

static void *reader(void *p)
{
	struct reader_arg *a = p;
	uint8_t buf[CZFS_BLOCK_SIZE];

	for (unsigned i = 0; i < 6000; i++) {
		const struct mitem *it = &a->m->v[tl_below(&a->seed, (unsigned)a->m->n)];
		int ret = czfs_btree_lookup(a->t, &it->key, buf, sizeof(buf));

		if (ret != (int)it->size || !tv_equal(&it->key, 0, buf, it->size))
			a->errors++;
	}
	return NULL;
}

/* Four readers of t at once, seeds seed..seed+3; every lookup right. */
static void run_readers(struct czfs_btree *t, const struct model *m,
			uint64_t seed)
{
	struct reader_arg args[4];
	pthread_t th[4];

	for (unsigned i = 0; i < 4; i++) {
		args[i] = (struct reader_arg){ t, m, seed + i, 0 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, reader, &args[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		ck_assert_uint_eq(args[i].errors, 0);
	}
}

START_TEST(cache_parallel_readers)
{
	static const unsigned budgets[] = { 2, 64, 100000 };
	struct model m = { 0 };
	struct czfs_nodecache_stats st;
	struct env e;

	/* given readers sharing one tree and one cache, every lookup right */
	env_init(&e, MAXB, budgets[_i]);
	env_build_n(&e, 20000, &m, 2);
	run_readers(&e.t, &m, 1);
	czfs_nodecache_stats(e.nc, &st);
	ck_assert_uint_le(st.nodes, budgets[_i]);
	ck_assert_uint_ge(st.hits + st.misses, 4 * 6000 * (e.t.root_level + 1));
	model_free(&m);
	env_destroy(&e);
}
END_TEST

/* Node readahead (read-only images): a cold walk of a bulk-loaded tree is
 * a few aligned window reads, not one read per node; the results are the
 * same, and a damaged node in a window is still found when asked for. */
START_TEST(readahead_reads_windows)
{
	struct czfs_key lo = K(0, 0, 0), hi = K(UINT64_MAX, 255, UINT64_MAX);
	struct czfs_nodecache_stats st;
	const struct czfs_bdev_req *log;
	struct walk_result wr = { 0 };
	struct model m = { 0 };
	uint64_t rng = 7, inner, leaf, g;
	size_t nlog, reads = 0, count = 0;
	uint8_t *reach, *dev;
	struct czfs_key target;
	struct env e;

	/* given a three-level tree, its nodes written in key order */
	env_init(&e, MAXB, 100000);
	env_build_n(&e, 30000, &m, 2);
	reach = calloc(MAXB, 1);
	ck_assert_ptr_nonnull(reach);
	walk_tree(&e, reach, &wr);
	ck_assert_uint_gt(wr.nnodes, 200);

	/* when it is walked through a fresh cache with a 32-block window
	 * (33 is rounded down to a power of two) */
	env_reopen(&e);
	czfs_nodecache_set_readahead(e.nc, 33);
	czfs_bdev_mem_clear_log(e.bdev);
	model_check_iter(&m, &e.t);
	model_check_lookups(&m, &e.t, &rng);

	/* then every read is one aligned window, and there are few */
	log = czfs_bdev_mem_log(e.bdev, &nlog);
	for (size_t i = 0; i < nlog; i++) {
		if (log[i].op != 'r')
			continue;
		reads++;
		ck_assert_uint_le(log[i].len, 32 * CZFS_BLOCK_SIZE);
		/* (a node at the device's end is read alone) */
		if (log[i].off % (32 * CZFS_BLOCK_SIZE) &&
		    log[i].off != CZFS_FIRST_DATA_BLKADDR * CZFS_BLOCK_SIZE &&
		    log[i].len != CZFS_BLOCK_SIZE)
			ck_abort_msg("read %zu at %llu, %llu bytes: not a window",
				     i, (unsigned long long)log[i].off,
				     (unsigned long long)log[i].len);
	}
	ck_assert_uint_le(reads, wr.nnodes / 16 + 2);
	czfs_nodecache_stats(e.nc, &st);
	ck_assert_uint_eq(st.misses, reads);
	ck_assert_uint_ge(st.readahead + st.misses, wr.nnodes);

	/* and a leaf damaged inside a window is refused when reached,
	 * while the rest reads on */
	dev = czfs_bdev_mem_data(e.bdev);
	czfs_node_child(dev + e.t.root_blkaddr * CZFS_BLOCK_SIZE, 1, &inner, &g);
	czfs_node_child(dev + inner * CZFS_BLOCK_SIZE, 2, &leaf, &g);
	czfs_node_key(dev + leaf * CZFS_BLOCK_SIZE, 0, &target);
	dev[leaf * CZFS_BLOCK_SIZE + 200] ^= 0x40;
	env_reopen(&e);
	czfs_nodecache_set_readahead(e.nc, 32);
	ck_assert_int_eq(czfs_btree_lookup(&e.t, &target, NULL, 0), -EFSCORRUPTED);
	ck_assert_int_eq(czfs_btree_iterate(&e.t, &lo, &hi, tl_count_fn, &count),
			 -EFSCORRUPTED);
	ck_assert_uint_gt(count, 0);
	target = tl_build_key(0);
	ck_assert_int_eq(czfs_btree_lookup(&e.t, &target, NULL, 0),
			 (int)tl_build_size(0));
	free(reach);
	model_free(&m);
	env_destroy(&e);
}
END_TEST

/* Readers missing nodes of one window at once: the window is read once
 * (the others wait for it and find their nodes cached), into the cache's
 * one buffer, and every lookup is right. */
START_TEST(readahead_window_read_once)
{
	const struct czfs_bdev_req *log;
	struct model m = { 0 };
	size_t nlog, reads = 0;
	unsigned *per_window;
	struct env e;

	/* given a bulk-loaded tree in a cold cache with 32-block windows */
	env_init(&e, MAXB, 100000);
	env_build_n(&e, 20000, &m, 2);
	env_reopen(&e);
	czfs_nodecache_set_readahead(e.nc, 32);
	czfs_bdev_mem_clear_log(e.bdev);

	/* when four threads look keys up in it together */
	run_readers(&e.t, &m, 11);

	/* then no window was read twice */
	per_window = calloc(MAXB / 32 + 1, sizeof(*per_window));
	ck_assert_ptr_nonnull(per_window);
	log = czfs_bdev_mem_log(e.bdev, &nlog);
	for (size_t i = 0; i < nlog; i++) {
		uint64_t w = log[i].off / CZFS_BLOCK_SIZE / 32;

		/* (the last node of the device is read alone) */
		if (log[i].op != 'r' || log[i].len == CZFS_BLOCK_SIZE)
			continue;
		reads++;
		ck_assert_uint_lt(w, MAXB / 32 + 1);
		if (++per_window[w] > 1)
			ck_abort_msg("window %llu read twice",
				     (unsigned long long)w);
	}
	ck_assert_uint_gt(reads, 1);
	free(per_window);
	model_free(&m);
	env_destroy(&e);
}
END_TEST

START_TEST(cached_nodes_checked_against_pointers)
{
	static const enum tl_damage cases[] = { D_CHILD_GEN, D_WRONG_LEVEL, D_SELF_LOOP };
	struct czfs_key lo = K(0, 0, 0), hi = K(UINT64_MAX, 255, UINT64_MAX), target;
	uint64_t inner, leaf, g;
	size_t count = 0;
	uint8_t *dev;
	struct env e;

	/* given a tree whose nodes are all in the cache */
	env_init(&e, MAXB, 4096);
	env_build_n(&e, 30000, NULL, 5);
	dev = czfs_bdev_mem_data(e.bdev);
	czfs_node_child(dev + e.t.root_blkaddr * CZFS_BLOCK_SIZE, 1, &inner, &g);
	czfs_node_child(dev + inner * CZFS_BLOCK_SIZE, 2, &leaf, &g);
	czfs_node_key(dev + leaf * CZFS_BLOCK_SIZE, 0, &target);
	ck_assert_int_eq(czfs_btree_iterate(&e.t, &lo, &hi, tl_count_fn, &count), 0);

	/* when a pointer above a cached node changes and only the nodes
	 * holding pointers are read again */
	tl_damage(&e, cases[_i], inner, leaf);
	czfs_nodecache_forget(e.nc, e.t.root_blkaddr);
	czfs_nodecache_forget(e.nc, inner);

	/* then the cached node is still checked against its new pointer */
	ck_assert_int_eq(czfs_btree_lookup(&e.t, &target, NULL, 0), -EFSCORRUPTED);
	env_destroy(&e);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("nodecache");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, cache_eviction, 0, 3);
	tcase_add_loop_test(tc, cache_parallel_readers, 0, 3);
	tcase_add_loop_test(tc, cached_nodes_checked_against_pointers, 0, 3);
	tcase_add_test(tc, trim_keeps_a_few);
	tcase_add_test(tc, adaptive_limit);
	tcase_add_test(tc, readahead_reads_windows);
	tcase_add_test(tc, readahead_window_read_once);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
