// SPDX-License-Identifier: MIT
/*
 * Unit tests: reading the B-tree and building it in bulk.  Trees of 0 to
 * 100000 items built by the bulk loader, then lookups, searches between
 * keys, range iteration, lookups near the last leaves, damaged nodes in
 * the middle of a tree, extreme keys.  Changes (copy-on-write) are tested
 * in check_btree_cow.c, the node cache under the tree in check_nodecache.c.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>

#include "bdev.h"
#include "btree_int.h"
#include "btree_testlib.h"
#include "log.h"
#include "util.h"

#define MAXB		(1u << 16)

static struct czfs_key K(uint64_t obj, uint8_t type, uint64_t off)
{
	return (struct czfs_key){ obj, type, off };
}

/* Leaves come in key order at consecutive addresses. */
static void check_leaves_contiguous(struct env *e, uint64_t first_leaf)
{
	struct czfs_btree_path path;
	struct czfs_key lo = K(0, 0, 0);
	uint64_t prev;
	int ret = czfs_btree_search(&e->t, &lo, &path);

	ck_assert_int_ge(ret, 0);
	prev = path.nodes[0]->blkaddr;
	ck_assert_uint_eq(prev, first_leaf);
	while (ret != 2 && (ret = czfs_btree_next(&e->t, &path)) == 0) {
		if (path.nodes[0]->blkaddr != prev) {
			ck_assert_uint_eq(path.nodes[0]->blkaddr, prev + 1);
			prev = path.nodes[0]->blkaddr;
		}
	}
	ck_assert_int_ge(ret, 0);
	czfs_btree_path_release(&e->t, &path);
}

/* A key between two items finds the next one, past the last finds none. */
static void check_gaps(struct env *e, const struct model *m)
{
	for (size_t i = 0; i < m->n; i += 1 + i % 37) {
		struct czfs_btree_path path;
		struct czfs_key k = m->v[i].key, found;
		const void *data;
		unsigned size;
		int ret;

		k.offset++;
		ret = czfs_btree_search(&e->t, &k, &path);
		if (i + 1 == m->n) {
			ck_assert_int_eq(ret, 2);
		} else {
			ck_assert_int_eq(ret, 1);
			czfs_btree_item(&path, &found, &data, &size);
			ck_assert_int_eq(czfs_key_cmp(&found, &m->v[i + 1].key), 0);
			ck_assert(tv_equal(&found, 0, data, size));
		}
		czfs_btree_path_release(&e->t, &path);
	}
}

static void check_ranges(struct env *e, const struct model *m, uint64_t *rng)
{
	for (unsigned r = 0; r < 60 && m->n; r++) {
		size_t a = tl_below(rng, (unsigned)m->n), b, count = 0, want;
		struct czfs_key first, last;

		b = a + tl_below(rng, (unsigned)MIN(m->n - a, 3000));
		first = m->v[a].key;
		last = m->v[b].key;
		want = b - a + 1;
		if (r & 1) {
			/* bounds that are not keys: (a, b) shrinks to (a, b] */
			first.offset++;
			want--;
		}
		ck_assert_int_eq(czfs_btree_iterate(&e->t, &first, &last,
						    tl_count_fn, &count), 0);
		ck_assert_uint_eq(count, want);
	}
}

START_TEST(build_and_read)
{
	static const unsigned counts[] = { 0, 1, 100, 100000 };
	unsigned n = counts[_i], writes = 0;
	uint8_t *reach = calloc(MAXB, 1);
	const struct czfs_bdev_req *log;
	struct walk_result res;
	struct model m = { 0 };
	uint64_t rng = n + 1;
	struct env e;
	size_t nreq;

	/* given n items bulk-loaded on a fresh allocator */
	env_init(&e, MAXB, 256);
	czfs_bdev_mem_clear_log(e.bdev);
	env_build_n(&e, n, &m, 3);
	log = czfs_bdev_mem_log(e.bdev, &nreq);
	for (size_t i = 0; i < nreq; i++)
		writes += log[i].op == 'w';

	/* then the tree on disk is valid and holds exactly those items */
	walk_tree(&e, reach, &res);
	ck_assert_uint_eq(res.nitems, n);
	if (n == 100000)
		ck_assert_uint_ge(res.levels, 3);
	/* written in runs of many blocks, not block by block */
	ck_assert_uint_le(writes, res.nnodes / 64 + 2 * res.levels);
	check_no_leaks(&e);
	check_leaves_contiguous(&e, CZFS_FIRST_DATA_BLKADDR + 1);

	/* and reads find every item, the gaps between them, and ranges */
	model_check_iter(&m, &e.t);
	model_check_lookups(&m, &e.t, &rng);
	check_gaps(&e, &m);
	check_ranges(&e, &m, &rng);
	if (n == 0) {
		struct czfs_key k = K(0, 0, 0);

		ck_assert_uint_eq(e.t.root_level, 0);
		ck_assert_int_eq(czfs_btree_lookup(&e.t, &k, NULL, 0), -ENOENT);
	}
	model_free(&m);
	free(reach);
	env_destroy(&e);
}
END_TEST

static int stop_fn(void *ctx, const struct czfs_key *key, const void *data,
		   unsigned size)
{
	int *calls = ctx;

	return ++*calls == 2 ? 7 : 0;
}

static int fail_fn(void *ctx, const struct czfs_key *key, const void *data,
		   unsigned size)
{
	return -EIO;
}

START_TEST(search_semantics)
{
	struct czfs_key k, found, lo = K(0, 0, 0), hi = K(UINT64_MAX, 255, UINT64_MAX);
	struct czfs_btree_path path;
	struct czfs_btree_builder *b;
	const void *data;
	unsigned size, level;
	uint64_t root;
	int calls = 0;
	struct env e;

	/* given a tree with items 10, 20, 30 */
	env_init(&e, MAXB, 16);
	ck_assert_int_eq(czfs_btree_builder_new(e.bdev, &e.ta.a, 2, &b), 0);
	for (unsigned i = 1; i <= 3; i++) {
		k = K(10 * i, 1, 0);
		ck_assert_int_eq(czfs_btree_builder_add(b, &k, "abc", i, NULL), 0);
	}
	ck_assert_int_eq(czfs_btree_builder_finish(b, &root, &level), 0);
	czfs_btree_builder_free(b);
	env_set_root(&e, root, level, 2);

	/* then search reports exact, greater, or past the end */
	k = K(5, 0, 0);
	ck_assert_int_eq(czfs_btree_search(&e.t, &k, &path), 1);
	czfs_btree_item(&path, &found, &data, &size);
	ck_assert_uint_eq(found.objectid, 10);
	ck_assert_uint_eq(size, 1);
	czfs_btree_path_release(&e.t, &path);
	k = K(20, 1, 0);
	ck_assert_int_eq(czfs_btree_search(&e.t, &k, &path), 0);
	ck_assert_int_eq(czfs_btree_next(&e.t, &path), 0);
	czfs_btree_item(&path, &found, &data, &size);
	ck_assert_uint_eq(found.objectid, 30);
	ck_assert_mem_eq(data, "abc", 3);
	ck_assert_int_eq(czfs_btree_next(&e.t, &path), 1);
	ck_assert_int_eq(czfs_btree_next(&e.t, &path), 1);	/* stays at end */
	czfs_btree_path_release(&e.t, &path);
	k = K(30, 1, 1);
	ck_assert_int_eq(czfs_btree_search(&e.t, &k, &path), 2);
	czfs_btree_path_release(&e.t, &path);

	/* and iterate passes on the callback's stop value or error */
	ck_assert_int_eq(czfs_btree_iterate(&e.t, &lo, &hi, stop_fn, &calls), 7);
	ck_assert_int_eq(calls, 2);
	ck_assert_int_eq(czfs_btree_iterate(&e.t, &lo, &hi, fail_fn, NULL), -EIO);
	k = K(31, 0, 0);
	ck_assert_int_eq(czfs_btree_iterate(&e.t, &k, &hi, fail_fn, NULL), 0);
	ck_assert_int_eq(czfs_btree_iterate(&e.t, &hi, &lo, fail_fn, NULL), 0);
	env_destroy(&e);
}
END_TEST

START_TEST(builder_errors)
{
	struct czfs_key k = K(5, 1, 5), k2;
	struct czfs_btree_builder *b;
	static uint8_t big[CZFS_MAX_ITEM_SIZE + 1];
	uint64_t root;
	unsigned level;
	struct env e;

	env_init(&e, MAXB, 16);
	ck_assert_int_eq(czfs_btree_builder_new(e.bdev, &e.ta.a, 2, &b), 0);
	ck_assert_int_eq(czfs_btree_builder_add(b, &k, big, CZFS_MAX_ITEM_SIZE + 1, NULL), -E2BIG);
	ck_assert_int_eq(czfs_btree_builder_add(b, &k, big, CZFS_MAX_ITEM_SIZE, NULL), 0);
	/* keys must increase strictly */
	ck_assert_int_eq(czfs_btree_builder_add(b, &k, NULL, 0, NULL), -EINVAL);
	k2 = K(5, 1, 4);
	ck_assert_int_eq(czfs_btree_builder_add(b, &k2, NULL, 0, NULL), -EINVAL);
	k2 = K(5, 1, CZFS_KEY_OFFSET_MASK + 1);
	ck_assert_int_eq(czfs_btree_builder_add(b, &k2, NULL, 0, NULL), -EINVAL);
	k2 = K(5, 2, 0);
	ck_assert_int_eq(czfs_btree_builder_add(b, &k2, NULL, 0, NULL), 0);
	ck_assert_int_eq(czfs_btree_builder_finish(b, &root, &level), 0);
	ck_assert_uint_eq(level, 1);	/* a full item and one more: 2 leaves */
	ck_assert_int_eq(czfs_btree_builder_finish(b, &root, &level), -EINVAL);
	ck_assert_int_eq(czfs_btree_builder_add(b, &k2, NULL, 0, NULL), -EINVAL);
	czfs_btree_builder_free(b);
	czfs_btree_builder_free(NULL);
	env_destroy(&e);
}
END_TEST

START_TEST(builder_stored_pointers_stay_valid)
{
	struct czfs_btree_builder *b;
	void *stored[5000];
	uint8_t buf[100];
	uint64_t root, old;
	unsigned level;
	struct model m = { 0 };
	uint64_t rng = 5;
	struct env e;

	/* given values patched through their pointers after later adds */
	env_init(&e, MAXB, 64);
	old = e.t.root_blkaddr;
	ck_assert_int_eq(czfs_btree_builder_new(e.bdev, &e.ta.a, 2, &b), 0);
	for (unsigned i = 0; i < 5000; i++) {
		struct czfs_key k = K(i, 1, 0);

		memset(buf, 0xee, sizeof(buf));
		ck_assert_int_eq(czfs_btree_builder_add(b, &k, buf, 100, &stored[i]), 0);
		model_set(&m, &k, 100, 1);
	}
	for (unsigned i = 0; i < 5000; i++) {
		struct czfs_key k = K(i, 1, 0);

		ck_assert(memcmp(stored[i], buf, 100) == 0);
		tv_fill(&k, 1, stored[i], 100);
	}
	ck_assert_int_eq(czfs_btree_builder_finish(b, &root, &level), 0);
	czfs_btree_builder_free(b);
	e.ta.a.free(&e.ta.a, old, 1);
	env_set_root(&e, root, level, 2);
	/* then the tree holds the patched values */
	model_check_iter(&m, &e.t);
	model_check_lookups(&m, &e.t, &rng);
	check_no_leaks(&e);
	model_free(&m);
	env_destroy(&e);
}
END_TEST

START_TEST(builder_failures_give_blocks_back)
{
	static const uint8_t buf[2000];
	struct czfs_btree_builder *b;
	uint64_t root, live;
	unsigned level;
	struct env e;

	env_init(&e, 300, 16);
	live = ta_live_count(&e.ta);
	/* given more leaves than free blocks, then -ENOSPC and nothing kept */
	ck_assert_int_eq(czfs_btree_builder_new(e.bdev, &e.ta.a, 2, &b), 0);
	for (unsigned i = 0; i < 1000; i++) {
		struct czfs_key k = K(i, 1, 0);

		ck_assert_int_eq(czfs_btree_builder_add(b, &k, buf, 2000, NULL), 0);
	}
	ck_assert_int_eq(czfs_btree_builder_finish(b, &root, &level), -ENOSPC);
	ck_assert_uint_eq(ta_live_count(&e.ta), live);
	czfs_btree_builder_free(b);
	env_destroy(&e);

	/* given a write error, then it is returned and nothing kept */
	env_init(&e, MAXB, 16);
	live = ta_live_count(&e.ta);
	ck_assert_int_eq(czfs_btree_builder_new(e.bdev, &e.ta.a, 2, &b), 0);
	for (unsigned i = 0; i < 20; i++) {
		struct czfs_key k = K(i, 1, 0);

		ck_assert_int_eq(czfs_btree_builder_add(b, &k, buf, 2000, NULL), 0);
	}
	czfs_bdev_mem_fail_after(e.bdev, 1, -EIO);
	ck_assert_int_eq(czfs_btree_builder_finish(b, &root, &level), -EIO);
	ck_assert_uint_eq(ta_live_count(&e.ta), live);
	czfs_btree_builder_free(b);
	env_destroy(&e);
}
END_TEST

/* ---- damaged trees --------------------------------------------------------- */

START_TEST(damaged_node_in_the_middle)
{
	enum tl_damage d = (enum tl_damage)_i;
	struct czfs_key lo = K(0, 0, 0), hi = K(UINT64_MAX, 255, UINT64_MAX), target;
	uint64_t inner, leaf, g;
	uint8_t *dev;
	size_t count = 0;
	int want = d == D_PAST_DEVICE ? -EIO : -EFSCORRUPTED;
	struct env e;

	/* given a three-level tree: root -> inner (child 1) -> leaf (child 2) */
	env_init(&e, MAXB, 1024);
	env_build_n(&e, 30000, NULL, 5);
	ck_assert_uint_eq(e.t.root_level, 2);
	dev = czfs_bdev_mem_data(e.bdev);
	czfs_node_child(dev + e.t.root_blkaddr * CZFS_BLOCK_SIZE, 1, &inner, &g);
	czfs_node_child(dev + inner * CZFS_BLOCK_SIZE, 2, &leaf, &g);
	czfs_node_key(dev + leaf * CZFS_BLOCK_SIZE, 0, &target);

	/* when one thing is broken and the tree is read through a fresh cache */
	tl_damage(&e, d, inner, leaf);
	env_reopen(&e);

	/* then reads that reach it fail cleanly, and others still work */
	ck_assert_int_eq(czfs_btree_lookup(&e.t, &target, NULL, 0), want);
	ck_assert_int_eq(czfs_btree_iterate(&e.t, &lo, &hi, tl_count_fn, &count), want);
	if (d != D_ROOT_LEVEL && d != D_ROOT_GEN) {
		struct czfs_key first = tl_build_key(0);

		ck_assert_int_eq(czfs_btree_lookup(&e.t, &first, NULL, 0),
				 (int)tl_build_size(0));
		ck_assert_uint_gt(count, 0);
	}
	env_destroy(&e);
}
END_TEST

/* Lookups through a leaf hint answer as plain ones, for keys present and
 * absent, in order or not; keys in order walk from the root about once a
 * leaf, not once a key. */
START_TEST(lookup_near_hint)
{
	struct czfs_btree_hint h = { 0 };
	struct czfs_nodecache_stats st0, st1;
	uint8_t buf[CZFS_BLOCK_SIZE], want[CZFS_BLOCK_SIZE];
	struct model m = { 0 };
	uint64_t rng = 3;
	struct env e;

	/* given a three-level tree in a warm cache */
	env_init(&e, MAXB, 100000);
	env_build_n(&e, 20000, &m, 2);
	model_check_lookups(&m, &e.t, &rng);

	/* when every key is looked up in order through one hint */
	czfs_nodecache_stats(e.nc, &st0);
	for (size_t i = 0; i < m.n; i++) {
		const struct mitem *it = &m.v[i];

		ck_assert_int_eq(czfs_btree_lookup_near(&e.t, &it->key, buf,
							sizeof(buf), &h),
				 (int)it->size);
		ck_assert(tv_equal(&it->key, it->salt, buf, it->size));
	}
	czfs_nodecache_stats(e.nc, &st1);

	/* then most found the last leaf (a walk of three levels each: 3n) */
	ck_assert_uint_lt(st1.hits + st1.misses - st0.hits - st0.misses, m.n / 4);

	/* and keys absent, or far from the hint's leaf, answer as plainly */
	for (unsigned i = 0; i < 4000; i++) {
		const struct mitem *it = &m.v[tl_below(&rng, (unsigned)m.n)];
		struct czfs_key k = it->key;
		int plain;

		if (i & 1)
			k.offset += 1 + tl_below(&rng, 3);
		plain = czfs_btree_lookup(&e.t, &k, want, sizeof(want));
		ck_assert_int_eq(czfs_btree_lookup_near(&e.t, &k, buf,
							sizeof(buf), &h), plain);
		if (plain > 0)
			ck_assert_mem_eq(buf, want, (size_t)plain);
	}
	czfs_btree_hint_release(&e.t, &h);
	for (unsigned i = 0; i < CZFS_BTREE_HINT_LEAVES; i++)
		ck_assert_ptr_null(h.leaf[i]);
	model_free(&m);
	env_destroy(&e);
}
END_TEST

START_TEST(random_tree_damage_never_crashes)
{
	struct czfs_key lo = K(0, 0, 0), hi = K(UINT64_MAX, 255, UINT64_MAX);
	uint64_t rng = 1234, nblocks;
	uint8_t *dev, *saved;
	unsigned failed = 0;
	struct env e;

	/* given a two-level tree and a copy of its image */
	env_init(&e, 4096, 8);
	env_build_n(&e, 3000, NULL, 5);
	nblocks = e.bdev->size / CZFS_BLOCK_SIZE;
	saved = malloc(e.bdev->size);
	memcpy(saved, czfs_bdev_mem_data(e.bdev), e.bdev->size);
	for (unsigned it = 0; it < 300; it++) {
		size_t count = 0;
		uint64_t blk = CZFS_FIRST_DATA_BLKADDR +
			       tl_below(&rng, (unsigned)(nblocks - CZFS_FIRST_DATA_BLKADDR));
		uint8_t *p;
		int ret;

		/* when a few bits of one node flip, mostly resealed */
		dev = czfs_bdev_mem_data(e.bdev);
		memcpy(dev, saved, e.bdev->size);
		p = dev + blk * CZFS_BLOCK_SIZE;
		for (unsigned f = 0, nf = 1 + tl_below(&rng, 4); f < nf; f++)
			p[tl_below(&rng, 200)] ^= (uint8_t)(1u << tl_below(&rng, 8));
		if (tl_below(&rng, 4))
			czfs_node_seal(p);
		env_reopen(&e);
		/* then reading fails with a clean error or goes through */
		ret = czfs_btree_iterate(&e.t, &lo, &hi, tl_count_fn, &count);
		ck_assert_msg(ret == 0 || ret == -EFSCORRUPTED || ret == -EIO,
			      "iterate: %d", ret);
		failed += ret != 0;
		for (unsigned i = 0; i < 3000; i += 101) {
			struct czfs_key k = tl_build_key(i);

			ret = czfs_btree_lookup(&e.t, &k, NULL, 0);
			ck_assert(ret >= 0 || ret == -ENOENT ||
				  ret == -EFSCORRUPTED || ret == -EIO);
		}
	}
	ck_assert_uint_gt(failed, 50);
	free(saved);
	env_destroy(&e);
}
END_TEST

START_TEST(extreme_keys)
{
	static const struct czfs_key keys[] = {
		{ 0, 0, 0 }, { 0, 0, 1 }, { 0, 0, CZFS_KEY_OFFSET_MASK },
		{ 0, 255, 0 }, { 0, 255, CZFS_KEY_OFFSET_MASK }, { 1, 0, 0 },
		{ UINT64_MAX - 1, 255, CZFS_KEY_OFFSET_MASK },
		{ UINT64_MAX, 0, 0 }, { UINT64_MAX, 255, CZFS_KEY_OFFSET_MASK },
	};
	struct czfs_key lo = K(0, 0, 0), hi = K(UINT64_MAX, 255, UINT64_MAX);
	struct czfs_btree_path path;
	struct model m = { 0 };
	uint64_t rng = 3;
	size_t count = 0;
	struct env e;

	/* given the smallest and largest keys, each in its own leaf */
	env_init(&e, MAXB, 16);
	for (unsigned i = 0; i < ARRAY_SIZE(keys); i++)
		model_set(&m, &keys[i], 3000, 0);
	env_build(&e, &m, 2);
	ck_assert_uint_eq(e.t.root_level, 1);

	/* then all are found, in order, by lookup, search and iteration */
	model_check_iter(&m, &e.t);
	model_check_lookups(&m, &e.t, &rng);
	ck_assert_int_eq(czfs_btree_iterate(&e.t, &lo, &hi, tl_count_fn, &count), 0);
	ck_assert_uint_eq(count, ARRAY_SIZE(keys));
	ck_assert_int_eq(czfs_btree_search(&e.t, &lo, &path), 0);
	czfs_btree_path_release(&e.t, &path);
	ck_assert_int_eq(czfs_btree_search(&e.t, &hi, &path), 2);
	czfs_btree_path_release(&e.t, &path);
	model_free(&m);
	env_destroy(&e);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("btree");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, build_and_read, 0, 4);
	tcase_add_test(tc, search_semantics);
	tcase_add_test(tc, builder_errors);
	tcase_add_test(tc, builder_stored_pointers_stay_valid);
	tcase_add_test(tc, builder_failures_give_blocks_back);
	tcase_add_loop_test(tc, damaged_node_in_the_middle, 0, D_COUNT);
	tcase_add_test(tc, lookup_near_hint);
	tcase_add_test(tc, random_tree_damage_never_crashes);
	tcase_add_test(tc, extreme_keys);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
