// SPDX-License-Identifier: MIT
/*
 * Unit tests: reading the B-tree and building it in bulk.  Trees of 0 to
 * 100000 items built by the bulk loader, then lookups, searches between
 * keys, range iteration, the node cache under a tiny budget and from
 * several threads, damaged nodes in the middle of a tree, extreme keys.
 * Changes (copy-on-write) are tested in check_btree_cow.c.
 */
#include "config.h"

#include <check.h>
#include <pthread.h>
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

/* Item i of a built tree: (i/4, 1 + i%4, scattered offset), so that
 * (objectid, type, offset + 1) is never a key of the tree. */
static struct czfs_key build_key(unsigned i)
{
	return K(i / 4, (uint8_t)(1 + i % 4), (uint64_t)i * 7919u % 100000u);
}

static unsigned build_size(unsigned i)
{
	if (i % 97 == 1)
		return CZFS_MAX_ITEM_SIZE;
	if (i % 97 == 50)
		return 1000 + i % 3000;
	if (i % 13 == 0)
		return 200 + i % 500;
	return i % 50;
}

/* Bulk-load n items at generation gen in place of e's (empty) tree. */
static void build(struct env *e, unsigned n, struct model *m, uint64_t gen)
{
	struct model local = { 0 };

	if (!m)
		m = &local;
	for (unsigned i = 0; i < n; i++) {
		struct czfs_key k = build_key(i);

		model_set(m, &k, build_size(i), 0);
	}
	env_build(e, m, gen);
	model_free(&local);
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

static int count_fn(void *ctx, const struct czfs_key *key, const void *data,
		    unsigned size)
{
	(*(size_t *)ctx)++;
	return 0;
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
						    count_fn, &count), 0);
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
	build(&e, n, &m, 3);
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
	build(&e, 30000, &m, 2);
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
	build(&e, 20000, &m, 2);
	run_readers(&e.t, &m, 1);
	czfs_nodecache_stats(e.nc, &st);
	ck_assert_uint_le(st.nodes, budgets[_i]);
	ck_assert_uint_ge(st.hits + st.misses, 4 * 6000 * (e.t.root_level + 1));
	model_free(&m);
	env_destroy(&e);
}
END_TEST

/* ---- damaged trees --------------------------------------------------------- */

enum damage {
	D_LEAF_BYTE, D_INNER_BYTE, D_SWAP_CHILDREN, D_CHILD_GEN, D_WRONG_LEVEL,
	D_SELF_LOOP, D_EMPTY_LEAF, D_KEY_ABOVE_NEXT, D_KEY_BELOW_PTR,
	D_ROOT_LEVEL, D_ROOT_GEN, D_PAST_DEVICE, D_COUNT
};

static void set_key(uint8_t *blk, unsigned slot, const struct czfs_key *k)
{
	struct czfs_disk_key dk;

	czfs_key_to_disk(k, &dk);
	memcpy(blk + CZFS_NODE_HDR_SIZE + slot * CZFS_ITEM_HDR_SIZE, &dk, sizeof(dk));
}

static void damage(struct env *e, enum damage d, uint64_t inner, uint64_t leaf)
{
	uint8_t *dev = czfs_bdev_mem_data(e->bdev);
	uint8_t *pi = dev + inner * CZFS_BLOCK_SIZE, *pl = dev + leaf * CZFS_BLOCK_SIZE;
	uint8_t *root = dev + e->t.root_blkaddr * CZFS_BLOCK_SIZE;
	uint64_t a2, g2, a3, g3;
	struct czfs_key k;

	czfs_node_child(pi, 2, &a2, &g2);
	czfs_node_child(pi, 3, &a3, &g3);
	switch (d) {
	case D_LEAF_BYTE:
		pl[4000] ^= 0x10;
		return;				/* checksum now wrong */
	case D_INNER_BYTE:
		pi[60] ^= 0x01;
		return;
	case D_SWAP_CHILDREN:
		czfs_node_set_child(pi, 2, a3, g3);
		czfs_node_set_child(pi, 3, a2, g2);
		break;
	case D_CHILD_GEN:
		czfs_node_set_child(pi, 2, a2, g2 - 1);
		break;
	case D_WRONG_LEVEL:
		czfs_node_set_child(root, 1, leaf, g2);
		czfs_node_seal(root);
		return;
	case D_SELF_LOOP:
		czfs_node_set_child(pi, 2, inner, g2);
		break;
	case D_EMPTY_LEAF:
		memset(pl + 32, 0, 2);
		czfs_node_seal(pl);
		return;
	case D_KEY_ABOVE_NEXT:
		czfs_node_key(pi, 3, &k);
		k.objectid++;
		set_key(pl, czfs_node_nritems(pl) - 1, &k);
		czfs_node_seal(pl);
		return;
	case D_KEY_BELOW_PTR:
		czfs_node_key(pl, 0, &k);
		k.objectid--;
		set_key(pl, 0, &k);
		czfs_node_seal(pl);
		return;
	case D_ROOT_LEVEL:
		e->t.root_level--;
		return;
	case D_ROOT_GEN:
		e->t.root_generation--;
		return;
	case D_PAST_DEVICE:
		czfs_node_set_child(pi, 2, e->max_blocks - 1, g2);
		break;
	case D_COUNT:
		break;
	}
	czfs_node_seal(pi);
}

START_TEST(damaged_node_in_the_middle)
{
	enum damage d = (enum damage)_i;
	struct czfs_key lo = K(0, 0, 0), hi = K(UINT64_MAX, 255, UINT64_MAX), target;
	uint64_t inner, leaf, g;
	uint8_t *dev;
	size_t count = 0;
	int want = d == D_PAST_DEVICE ? -EIO : -EFSCORRUPTED;
	struct env e;

	/* given a three-level tree: root -> inner (child 1) -> leaf (child 2) */
	env_init(&e, MAXB, 1024);
	build(&e, 30000, NULL, 5);
	ck_assert_uint_eq(e.t.root_level, 2);
	dev = czfs_bdev_mem_data(e.bdev);
	czfs_node_child(dev + e.t.root_blkaddr * CZFS_BLOCK_SIZE, 1, &inner, &g);
	czfs_node_child(dev + inner * CZFS_BLOCK_SIZE, 2, &leaf, &g);
	czfs_node_key(dev + leaf * CZFS_BLOCK_SIZE, 0, &target);

	/* when one thing is broken and the tree is read through a fresh cache */
	damage(&e, d, inner, leaf);
	env_reopen(&e);

	/* then reads that reach it fail cleanly, and others still work */
	ck_assert_int_eq(czfs_btree_lookup(&e.t, &target, NULL, 0), want);
	ck_assert_int_eq(czfs_btree_iterate(&e.t, &lo, &hi, count_fn, &count), want);
	if (d != D_ROOT_LEVEL && d != D_ROOT_GEN) {
		struct czfs_key first = build_key(0);

		ck_assert_int_eq(czfs_btree_lookup(&e.t, &first, NULL, 0),
				 (int)build_size(0));
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
	build(&e, 20000, &m, 2);
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
	build(&e, 30000, &m, 2);
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
	ck_assert_int_eq(czfs_btree_iterate(&e.t, &lo, &hi, count_fn, &count),
			 -EFSCORRUPTED);
	ck_assert_uint_gt(count, 0);
	target = build_key(0);
	ck_assert_int_eq(czfs_btree_lookup(&e.t, &target, NULL, 0),
			 (int)build_size(0));
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
	build(&e, 20000, &m, 2);
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
	static const enum damage cases[] = { D_CHILD_GEN, D_WRONG_LEVEL, D_SELF_LOOP };
	struct czfs_key lo = K(0, 0, 0), hi = K(UINT64_MAX, 255, UINT64_MAX), target;
	uint64_t inner, leaf, g;
	size_t count = 0;
	uint8_t *dev;
	struct env e;

	/* given a tree whose nodes are all in the cache */
	env_init(&e, MAXB, 4096);
	build(&e, 30000, NULL, 5);
	dev = czfs_bdev_mem_data(e.bdev);
	czfs_node_child(dev + e.t.root_blkaddr * CZFS_BLOCK_SIZE, 1, &inner, &g);
	czfs_node_child(dev + inner * CZFS_BLOCK_SIZE, 2, &leaf, &g);
	czfs_node_key(dev + leaf * CZFS_BLOCK_SIZE, 0, &target);
	ck_assert_int_eq(czfs_btree_iterate(&e.t, &lo, &hi, count_fn, &count), 0);

	/* when a pointer above a cached node changes and only the nodes
	 * holding pointers are read again */
	damage(&e, cases[_i], inner, leaf);
	czfs_nodecache_forget(e.nc, e.t.root_blkaddr);
	czfs_nodecache_forget(e.nc, inner);

	/* then the cached node is still checked against its new pointer */
	ck_assert_int_eq(czfs_btree_lookup(&e.t, &target, NULL, 0), -EFSCORRUPTED);
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
	build(&e, 3000, NULL, 5);
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
		ret = czfs_btree_iterate(&e.t, &lo, &hi, count_fn, &count);
		ck_assert_msg(ret == 0 || ret == -EFSCORRUPTED || ret == -EIO,
			      "iterate: %d", ret);
		failed += ret != 0;
		for (unsigned i = 0; i < 3000; i += 101) {
			struct czfs_key k = build_key(i);

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
	ck_assert_int_eq(czfs_btree_iterate(&e.t, &lo, &hi, count_fn, &count), 0);
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
	tcase_add_loop_test(tc, cache_eviction, 0, 3);
	tcase_add_loop_test(tc, cache_parallel_readers, 0, 3);
	tcase_add_loop_test(tc, damaged_node_in_the_middle, 0, D_COUNT);
	tcase_add_loop_test(tc, cached_nodes_checked_against_pointers, 0, 3);
	tcase_add_test(tc, lookup_near_hint);
	tcase_add_test(tc, readahead_reads_windows);
	tcase_add_test(tc, readahead_window_read_once);
	tcase_add_test(tc, random_tree_damage_never_crashes);
	tcase_add_test(tc, extreme_keys);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
