// SPDX-License-Identifier: MIT
/*
 * Unit tests: changing the B-tree copy-on-write.  Targeted splits and
 * merges, a random model test against a sorted array with commits and
 * re-opens, the copy-on-write guarantee checked on the device bytes and
 * the allocator's record, -ENOSPC at every allocation of an operation,
 * and I/O errors during changes and commits.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>

#include "bdev.h"
#include "btree_int.h"
#include "btree_testlib.h"
#include "util.h"

#define MAXB		(1u << 18)

static struct czfs_key K(uint64_t obj, uint8_t type, uint64_t off)
{
	return (struct czfs_key){ obj, type, off };
}

static void store(struct env *e, struct model *m, struct czfs_key k,
		  unsigned size, unsigned salt)
{
	struct op op = { OP_PUT, k, size, salt };

	run_op(e, m, &op);
}

static void delete_all(struct env *e, struct model *m, uint64_t *rng,
		       unsigned order)
{
	while (m->n) {
		size_t i = order == 0 ? 0 : order == 1 ? m->n - 1 :
			   tl_below(rng, (unsigned)m->n);
		struct op op = { OP_DELETE, m->v[i].key, 0, 0 };

		run_op(e, m, &op);
		if (m->n % 500 == 0)
			model_check_iter(m, &e->t);
	}
}

static void commit_and_check(struct env *e, const struct model *m, bool reopen)
{
	env_commit(e);
	check_no_leaks(e);
	if (reopen)
		env_reopen(e);
	model_check_iter(m, &e->t);
}

/* ---- targeted cases ----------------------------------------------------------- */

START_TEST(errors_change_nothing)
{
	uint8_t buf[CZFS_MAX_ITEM_SIZE + 1] = { 0 };
	struct czfs_key k = K(1, 1, 1), bad = K(1, 1, CZFS_KEY_OFFSET_MASK + 1);
	struct model m = { 0 };
	uint64_t live;
	struct env e;

	env_init(&e, MAXB, 64);
	/* outside a transaction the tree is read-only */
	ck_assert_int_eq(czfs_btree_insert(&e.t, &k, buf, 1), -EROFS);
	ck_assert_int_eq(czfs_btree_delete(&e.t, &k), -EROFS);
	env_begin(&e);
	store(&e, &m, k, 10, 1);
	env_commit(&e);
	env_begin(&e);
	live = ta_live_count(&e.ta);
	/* then refused changes take no block and leave the items as they were */
	ck_assert_int_eq(czfs_btree_insert(&e.t, &k, buf, 1), -EEXIST);
	k.offset = 2;
	ck_assert_int_eq(czfs_btree_update(&e.t, &k, buf, 1), -ENOENT);
	ck_assert_int_eq(czfs_btree_delete(&e.t, &k), -ENOENT);
	ck_assert_int_eq(czfs_btree_insert(&e.t, &k, buf, CZFS_MAX_ITEM_SIZE + 1), -E2BIG);
	ck_assert_int_eq(czfs_btree_put(&e.t, &k, buf, CZFS_MAX_ITEM_SIZE + 1), -E2BIG);
	ck_assert_int_eq(czfs_btree_insert(&e.t, &bad, buf, 1), -EINVAL);
	ck_assert_uint_eq(ta_live_count(&e.ta), live);
	ck_assert_ptr_null(e.t.dirty_list);
	model_check_iter(&m, &e.t);
	commit_and_check(&e, &m, true);
	model_free(&m);
	env_destroy(&e);
}
END_TEST

START_TEST(insert_commit_reopen)
{
	struct model m = { 0 };
	uint64_t old_root, rng = 1;
	struct env e;

	/* given an empty committed tree */
	env_init(&e, MAXB, 64);
	old_root = e.t.root_blkaddr;
	/* when one item is inserted and committed */
	env_begin(&e);
	store(&e, &m, K(42, CZFS_ITEM_INODE, 0), 144, 7);
	ck_assert_uint_ne(e.t.root_blkaddr, old_root);	/* copied */
	ck_assert_uint_eq(e.t.root_generation, e.gen);
	commit_and_check(&e, &m, true);
	/* then the old root went back to the allocator */
	ck_assert_uint_eq(e.ta.nfreed, 1);
	ck_assert_uint_eq(e.ta.freed[0], old_root);
	model_check_lookups(&m, &e.t, &rng);
	/* and a second change in the same transaction copies nothing more */
	env_begin(&e);
	store(&e, &m, K(43, CZFS_ITEM_INODE, 0), 144, 7);
	old_root = e.t.root_blkaddr;
	store(&e, &m, K(44, CZFS_ITEM_INODE, 0), 144, 7);
	ck_assert_uint_eq(e.t.root_blkaddr, old_root);
	commit_and_check(&e, &m, false);
	model_free(&m);
	env_destroy(&e);
}
END_TEST

static void check_shape(struct env *e, unsigned levels, uint64_t nnodes,
			uint64_t nitems)
{
	uint8_t *reach = calloc(MAXB, 1);
	struct walk_result res;

	env_commit(e);
	walk_tree(e, reach, &res);
	ck_assert_uint_eq(res.levels, levels);
	ck_assert_uint_eq(res.nnodes, nnodes);
	ck_assert_uint_eq(res.nitems, nitems);
	free(reach);
	env_begin(e);
}

START_TEST(leaf_splits)
{
	struct model m = { 0 };
	uint64_t rng = 2;
	struct env e;

	env_init(&e, MAXB, 64);
	env_begin(&e);
	/* a root leaf that overflows splits in two under a new root */
	store(&e, &m, K(1, 1, 0), 1400, 1);
	store(&e, &m, K(1, 1, 2), 1400, 1);
	check_shape(&e, 1, 1, 2);
	store(&e, &m, K(1, 1, 1), 1400, 1);
	check_shape(&e, 2, 3, 3);

	/* a huge item between two large ones makes a three-way split */
	delete_all(&e, &m, &rng, 2);
	check_shape(&e, 1, 1, 0);
	store(&e, &m, K(2, 1, 0), 2000, 1);
	store(&e, &m, K(2, 1, 2), 2000, 1);
	check_shape(&e, 1, 1, 2);
	store(&e, &m, K(2, 1, 1), CZFS_MAX_ITEM_SIZE, 1);
	check_shape(&e, 2, 4, 3);
	model_check_lookups(&m, &e.t, &rng);

	/* an update that grows past the leaf splits it, no item lost */
	delete_all(&e, &m, &rng, 0);
	store(&e, &m, K(3, 1, 0), 2000, 1);
	store(&e, &m, K(3, 1, 1), 10, 1);
	store(&e, &m, K(3, 1, 2), 1000, 1);
	check_shape(&e, 1, 1, 3);
	store(&e, &m, K(3, 1, 1), CZFS_MAX_ITEM_SIZE, 2);
	check_shape(&e, 2, 4, 3);
	/* a shrinking update merges its leaf, under half full now, with a
	 * neighbour, as a delete would; a same-size one stays in place; and
	 * once all fits one leaf the root hands over to it */
	store(&e, &m, K(3, 1, 1), 5, 3);
	check_shape(&e, 2, 3, 3);
	store(&e, &m, K(3, 1, 1), 5, 4);
	check_shape(&e, 2, 3, 3);
	store(&e, &m, K(3, 1, 0), 0, 4);
	check_shape(&e, 1, 1, 3);
	model_check_lookups(&m, &e.t, &rng);
	/* an empty item still needs its 20-byte header: with exactly 20
	 * bytes free it fits, with fewer the leaf splits */
	delete_all(&e, &m, &rng, 1);
	store(&e, &m, K(4, 1, 0), 2000, 1);
	store(&e, &m, K(4, 1, 2), 4048 - 40 - 2000 - 20, 1);
	store(&e, &m, K(4, 1, 1), 0, 1);
	check_shape(&e, 1, 1, 3);
	delete_all(&e, &m, &rng, 1);
	store(&e, &m, K(4, 1, 0), 2000, 1);
	store(&e, &m, K(4, 1, 2), 4048 - 40 - 2000 - 1, 1);
	store(&e, &m, K(4, 1, 1), 0, 1);
	check_shape(&e, 2, 3, 3);
	model_check_lookups(&m, &e.t, &rng);
	/* a new smallest key goes in front and its pointer follows */
	store(&e, &m, K(0, 0, 0), 100, 5);
	commit_and_check(&e, &m, true);
	model_free(&m);
	env_destroy(&e);
}
END_TEST

START_TEST(three_way_split_under_full_parent)
{
	static const unsigned at[] = { 0, 62, 124 };
	unsigned j = at[_i];
	struct model m = { 0 };
	uint64_t rng = 4;
	struct env e;

	/* given 125 leaves of two 2000-byte items under one root */
	env_init(&e, MAXB, 512);
	for (unsigned i = 0; i < 250; i++) {
		struct czfs_key k = K(2 * i, 1, 0);

		model_set(&m, &k, 2000, i);
	}
	env_build(&e, &m, 2);
	ck_assert_uint_eq(e.t.root_level, 1);
	env_begin(&e);
	check_shape(&e, 2, 126, 250);
	/* when the largest item goes between the two items of leaf j, it
	 * takes a leaf of its own: the root gets two pointers and splits */
	store(&e, &m, K(4 * j + 1, 1, 0), CZFS_MAX_ITEM_SIZE, 1);
	check_shape(&e, 3, 127 + 2 + 1, 251);
	model_check_lookups(&m, &e.t, &rng);
	commit_and_check(&e, &m, true);
	model_free(&m);
	env_destroy(&e);
}
END_TEST

START_TEST(grow_and_shrink_three_levels)
{
	static const char *orders[] = { "ascending", "descending", "random" };
	struct model m = { 0 };
	uint64_t rng = 3 + _i;
	struct env e;

	/* given 12000 small items inserted in key order (worst for splits) */
	env_init(&e, MAXB, 4096);
	env_begin(&e);
	for (unsigned i = 0; i < 12000; i++)
		store(&e, &m, K(i / 3, 1, i % 3), 40 + i % 30, i);
	ck_assert_uint_eq(e.t.root_level, 2);
	commit_and_check(&e, &m, true);
	model_check_lookups(&m, &e.t, &rng);

	/* when all are deleted, leaves and inner nodes merge away */
	env_begin(&e);
	delete_all(&e, &m, &rng, _i);
	/* then one empty root leaf is left, the only block in use */
	ck_assert_msg(e.t.root_level == 0, "%s", orders[_i]);
	commit_and_check(&e, &m, true);
	ck_assert_uint_eq(ta_live_count(&e.ta), 1);
	model_free(&m);
	env_destroy(&e);
}
END_TEST

START_TEST(shrinking_items_merge_leaves)
{
	struct model m = { 0 };
	uint64_t rng = 11 + _i;
	uint8_t *reach = calloc(MAXB, 1);
	struct walk_result big, small;
	struct env e;

	/* given 3000 items of 300 bytes (block-mapped cluster items) */
	ck_assert_ptr_nonnull(reach);
	env_init(&e, MAXB, 4096);
	env_begin(&e);
	for (unsigned i = 0; i < 3000; i++)
		store(&e, &m, K(7, 4, i), 300, i);
	commit_and_check(&e, &m, true);
	walk_tree(&e, reach, &big);

	/* when every one shrinks to 24 bytes (compressed again), in key
	 * order or at random */
	env_begin(&e);
	for (unsigned k = 0; k < 3000; k++) {
		unsigned i = _i ? tl_below(&rng, 3000) : k;

		store(&e, &m, K(7, 4, i), 24, i + 5);
	}
	for (unsigned i = 0; i < 3000; i++)	/* (the random pass missed some) */
		store(&e, &m, K(7, 4, i), 24, i + 5);
	commit_and_check(&e, &m, true);
	memset(reach, 0, MAXB);
	walk_tree(&e, reach, &small);

	/* then the leaves merged as they emptied: at most about twice what
	 * the items need (at least half full each), and no block leaks */
	ck_assert_uint_eq(small.nitems, 3000);
	ck_assert_uint_lt(small.nnodes * 4, big.nnodes);
	ck_assert_uint_le(small.nnodes,
			  2 * DIV_ROUND_UP(3000 * (24 + CZFS_ITEM_HDR_SIZE),
					   CZFS_LEAF_SPACE) + 2);
	model_check_lookups(&m, &e.t, &rng);
	model_free(&m);
	env_destroy(&e);
	free(reach);
}
END_TEST

START_TEST(extreme_keys_cow)
{
	static const struct czfs_key keys[] = {
		{ 0, 0, 0 }, { 0, 0, CZFS_KEY_OFFSET_MASK }, { 0, 255, 0 },
		{ 0, 255, CZFS_KEY_OFFSET_MASK }, { 1, 0, 0 },
		{ UINT64_MAX, 0, 0 }, { UINT64_MAX, 0, CZFS_KEY_OFFSET_MASK },
		{ UINT64_MAX, 255, 0 }, { UINT64_MAX, 255, CZFS_KEY_OFFSET_MASK },
	};
	struct model m = { 0 };
	uint64_t rng = 9;
	struct env e;

	env_init(&e, MAXB, 64);
	env_begin(&e);
	/* inserted in a scrambled order, big enough to split leaves */
	for (unsigned i = 0; i < ARRAY_SIZE(keys); i++) {
		unsigned j = (i * 5) % ARRAY_SIZE(keys);

		store(&e, &m, keys[j], 1500, j);
	}
	commit_and_check(&e, &m, true);
	model_check_lookups(&m, &e.t, &rng);
	env_begin(&e);
	for (unsigned i = 0; i < ARRAY_SIZE(keys); i += 2) {
		struct op op = { OP_DELETE, keys[i], 0, 0 };

		run_op(&e, &m, &op);
	}
	commit_and_check(&e, &m, true);
	model_check_lookups(&m, &e.t, &rng);
	model_free(&m);
	env_destroy(&e);
}
END_TEST

/* ---- the model test ------------------------------------------------------------- */

struct model_case {
	enum profile profile;
	unsigned cache_nodes;
	unsigned ops;
	unsigned nobj;
	struct mix grow;		/* first half; the second shrinks */
	unsigned min_root_level;	/* the tree must grow this tall */
};

static void model_run(uint64_t seed, const struct model_case *c)
{
	static const struct mix shrink = { 15, 15, 10, 60 };
	struct model m = { 0 };
	uint64_t rng = seed * 0x1234567 + 1;
	unsigned top = 0;
	struct env e;
	struct op op;

	env_init(&e, MAXB, c->cache_nodes);
	env_begin(&e);
	for (unsigned i = 0; i < 2 * c->ops; i++) {
		random_op(&rng, &m, c->profile, i < c->ops ? &c->grow : &shrink,
			  c->nobj, &op);
		run_op(&e, &m, &op);
		top = MAX(top, e.t.root_level);
		if (tl_below(&rng, 150) == 0) {
			/* commit, check the blocks, read back from disk */
			commit_and_check(&e, &m, tl_below(&rng, 2));
			env_begin(&e);
		} else if (tl_below(&rng, 300) == 0) {
			model_check_iter(&m, &e.t);	/* dirty tree */
		}
	}
	commit_and_check(&e, &m, true);
	model_check_lookups(&m, &e.t, &rng);
	ck_assert_uint_ge(top, c->min_root_level);
	env_begin(&e);
	delete_all(&e, &m, &rng, 2);
	commit_and_check(&e, &m, true);
	ck_assert_uint_eq(e.t.root_level, 0);
	ck_assert_uint_eq(ta_live_count(&e.ta), 1);
	model_free(&m);
	env_destroy(&e);
}

START_TEST(model_random)
{
	struct model_case c = {
		.profile = (enum profile)(_i % P_COUNT),
		.cache_nodes = _i % 4 == 3 ? 2 : 1024,
		.ops = 1500,
		.nobj = 60,
		.grow = { 55, 15, 15, 60 },
		.min_root_level = 1,
	};

	model_run((uint64_t)_i, &c);
}
END_TEST

START_TEST(model_random_deep)
{
	/* enough small items for three levels, with inner merges on the way down */
	struct model_case c = {
		.profile = P_SMALL,
		.cache_nodes = 256,
		.ops = 14000,
		.nobj = 4000,
		.grow = { 80, 5, 10, 20 },
		.min_root_level = 2,
	};

	model_run(1000, &c);
}
END_TEST

/* ---- copy-on-write guarantee -------------------------------------------------- */

START_TEST(cow_never_overwrites)
{
	uint8_t *old = calloc(MAXB, 1), *now = calloc(MAXB, 1);
	uint8_t *freed = calloc(MAXB, 1), *saved;
	const struct czfs_bdev_req *log;
	struct walk_result res;
	struct model m = { 0 };
	uint64_t rng = 77 + _i;
	struct env e;
	struct op op;
	size_t nreq;

	/* given a committed tree of a few thousand mixed items */
	env_init(&e, MAXB, 512);
	env_begin(&e);
	for (unsigned i = 0; i < 4000; i++) {
		random_op(&rng, &m, P_MIXED, &(struct mix){ 100, 0, 0, 60 }, 2000, &op);
		run_op(&e, &m, &op);
	}
	env_commit(&e);
	for (unsigned round = 0; round < 4; round++) {
		const uint8_t *dev = czfs_bdev_mem_data(e.bdev);
		uint64_t nold = 0, j = 0;

		/* snapshot every block reachable from the committed root */
		memset(old, 0, MAXB);
		walk_tree(&e, old, &res);
		saved = malloc(res.nnodes * CZFS_BLOCK_SIZE);
		for (uint64_t b = 0; b < MAXB; b++)
			if (old[b])
				memcpy(saved + nold++ * CZFS_BLOCK_SIZE,
				       dev + b * CZFS_BLOCK_SIZE, CZFS_BLOCK_SIZE);
		ta_mark(&e.ta);
		czfs_bdev_mem_clear_log(e.bdev);

		/* when a transaction changes things and commits */
		env_begin(&e);
		for (unsigned i = 0; i < 400; i++) {
			random_op(&rng, &m, P_MIXED, &(struct mix){ 30, 20, 20, 60 },
				  2000, &op);
			run_op(&e, &m, &op);
		}
		env_commit(&e);

		/* then no old block changed on the device */
		dev = czfs_bdev_mem_data(e.bdev);
		for (uint64_t b = 0; b < MAXB; b++)
			if (old[b])
				ck_assert_msg(memcmp(saved + j++ * CZFS_BLOCK_SIZE,
						     dev + b * CZFS_BLOCK_SIZE,
						     CZFS_BLOCK_SIZE) == 0,
					      "old block %llu overwritten",
					      (unsigned long long)b);
		/* and only blocks of this transaction were written */
		log = czfs_bdev_mem_log(e.bdev, &nreq);
		for (size_t i = 0; i < nreq; i++) {
			if (log[i].op != 'w')
				continue;
			for (uint64_t b = log[i].off / CZFS_BLOCK_SIZE;
			     b < (log[i].off + log[i].len) / CZFS_BLOCK_SIZE; b++)
				ck_assert(e.ta.fresh[b] && !old[b]);
		}
		/* and the freed blocks are exactly the old ones now unreachable,
		 * plus copies made and dropped within the transaction */
		memset(now, 0, MAXB);
		walk_tree(&e, now, &res);
		memset(freed, 0, MAXB);
		for (size_t i = 0; i < e.ta.nfreed; i++)
			freed[e.ta.freed[i]] = 1;
		for (uint64_t b = 0; b < MAXB; b++) {
			if (old[b])
				ck_assert_msg(freed[b] == !now[b], "block %llu",
					      (unsigned long long)b);
			else if (freed[b])
				ck_assert(e.ta.fresh[b] && !now[b]);
			if (now[b] && !old[b])
				ck_assert(e.ta.fresh[b]);
		}
		check_no_leaks(&e);
		model_check_iter(&m, &e.t);
		free(saved);
	}
	model_free(&m);
	free(old);
	free(now);
	free(freed);
	env_destroy(&e);
}
END_TEST

/* ---- failures ------------------------------------------------------------------ */

START_TEST(enospc_at_every_allocation)
{
	static const struct mix mix = { 45, 20, 15, 60 };
	enum profile p = _i == 0 ? P_BIG : P_MIXED;
	unsigned failures = 0, late = 0;
	struct model m = { 0 };
	uint64_t rng = 500 + _i;
	struct env e;
	struct op op;

	/* given a committed tree of two or three levels */
	env_init(&e, MAXB, _i == 2 ? 3 : 512);
	env_begin(&e);
	for (unsigned i = 0; i < (p == P_BIG ? 400u : 3000u); i++) {
		random_op(&rng, &m, p, &(struct mix){ 100, 0, 0, 60 }, 3000, &op);
		run_op(&e, &m, &op);
	}
	commit_and_check(&e, &m, true);
	env_begin(&e);
	for (unsigned i = 0; i < 120; i++) {
		int want, ret;

		random_op(&rng, &m, p, &mix, 3000, &op);
		want = model_apply(&m, &op, false);
		/* when the k-th allocation fails, for k = 1, 2, ... */
		for (unsigned long k = 1;; k++) {
			ta_fail_from(&e.ta, k);
			ret = apply_op(&e, &op);
			if (ret != -ENOSPC)
				break;
			/* then the operation changed nothing */
			failures++;
			late += k > 1;
			if (failures % 8 == 0)
				model_check_iter(&m, &e.t);
		}
		ta_fail_from(&e.ta, 0);
		ck_assert_int_eq(ret, want);
		if (!want)
			model_apply(&m, &op, true);
		if (i % 20 == 19) {
			commit_and_check(&e, &m, true);
			env_begin(&e);
		}
	}
	commit_and_check(&e, &m, true);
	ck_assert_uint_gt(failures, 40);
	ck_assert_uint_gt(late, 10);
	model_free(&m);
	env_destroy(&e);
}
END_TEST

START_TEST(enospc_every_attempt_checked)
{
	static const unsigned sizes[] = { 80, CZFS_MAX_ITEM_SIZE, 2000, 0 };
	struct model m = { 0 };
	uint64_t rng = 31, live;
	struct env e;

	/* given 126 full leaves under a full root (bulk-loaded) */
	env_init(&e, MAXB, 512);
	for (unsigned i = 0; i < 126 * 40; i++) {
		struct czfs_key k = K(2 * i, 1, 0);

		model_set(&m, &k, 80, i);
	}
	env_build(&e, &m, 2);
	ck_assert_uint_eq(e.t.root_level, 1);
	live = ta_live_count(&e.ta);
	env_begin(&e);
	/* when inserts split a leaf, the root and grow a level, and every
	 * allocation of each in turn fails, then each failure is clean */
	for (unsigned i = 0; i < 40; i++) {
		struct op op = { OP_INSERT,
				 K(2 * tl_below(&rng, 126 * 40) + 1, 1, 0),
				 sizes[i % ARRAY_SIZE(sizes)], i };
		unsigned long k;

		for (k = 1;; k++) {
			int ret;

			ta_fail_from(&e.ta, k);
			ret = apply_op(&e, &op);
			ta_fail_from(&e.ta, 0);
			if (ret != -ENOSPC) {
				ck_assert_int_eq(ret, model_apply(&m, &op, false));
				if (!ret)
					model_apply(&m, &op, true);
				break;
			}
			model_check_iter(&m, &e.t);
		}
		/*
		 * The first insert copies root and leaf, then takes a new
		 * leaf, inner node and root at once.  Copies made before a
		 * failure stay (the tree is valid with them), so attempts
		 * fail at the root copy, the leaf copy, then the three new
		 * blocks, and the fourth goes through.
		 */
		if (i == 0) {
			ck_assert_uint_eq(k, 4);
			ck_assert_uint_eq(e.t.root_level, 2);
			ck_assert_uint_eq(ta_live_count(&e.ta), live + 3);
		}
	}
	commit_and_check(&e, &m, true);
	model_free(&m);
	env_destroy(&e);
}
END_TEST

START_TEST(commit_write_error_then_retry)
{
	struct model m = { 0 };
	uint64_t rng = 8;
	struct env e;

	/* given a transaction with many dirty nodes */
	env_init(&e, MAXB, 64);
	env_begin(&e);
	for (unsigned i = 0; i < 2000; i++)
		store(&e, &m, K(i, 1, 0), 100, i);
	/* when a write fails, then commit reports it and keeps the nodes dirty */
	czfs_bdev_mem_fail_after(e.bdev, 2, -EIO);
	ck_assert_int_eq(czfs_btree_commit(&e.t), -EIO);
	ck_assert_ptr_nonnull(e.t.dirty_list);
	ck_assert_uint_eq(e.t.trans_gen, e.gen);
	model_check_iter(&m, &e.t);
	/* and a retry writes everything */
	commit_and_check(&e, &m, true);
	model_check_lookups(&m, &e.t, &rng);
	model_free(&m);
	env_destroy(&e);
}
END_TEST

START_TEST(read_error_during_change)
{
	struct model m = { 0 };
	unsigned errors = 0;
	struct env e;

	/* given a committed two-level tree */
	env_init(&e, MAXB, 64);
	env_begin(&e);
	for (unsigned i = 0; i < 3000; i++)
		store(&e, &m, K(i, 1, 0), 100, i);
	commit_and_check(&e, &m, true);
	/* when the k-th read of a change fails (path, then neighbours) */
	for (unsigned k = 1; k < 8; k++) {
		struct op ops[2] = {
			{ OP_DELETE, m.v[m.n / 2].key, 0, 0 },
			{ OP_INSERT, K(m.v[m.n / 3].key.objectid, 2, 0), 3000, 1 },
		};

		for (unsigned j = 0; j < 2; j++) {
			int ret;

			env_reopen(&e);
			env_begin(&e);
			czfs_bdev_mem_fail_after(e.bdev, k, -EIO);
			ret = apply_op(&e, &ops[j]);
			czfs_bdev_mem_fail_after(e.bdev, 0, 0);
			/* then the error comes back and the items are unchanged */
			if (ret == -EIO) {
				errors++;
			} else {
				ck_assert_int_eq(ret, model_apply(&m, &ops[j], false));
				if (!ret)
					model_apply(&m, &ops[j], true);
			}
			model_check_iter(&m, &e.t);
			commit_and_check(&e, &m, false);
		}
	}
	ck_assert_uint_ge(errors, 4);
	model_free(&m);
	env_destroy(&e);
}
END_TEST

START_TEST(commit_writes_runs)
{
	const struct czfs_bdev_req *log;
	struct czfs_nodecache_stats st;
	unsigned writes = 0, last_level = 0;
	struct model m = { 0 };
	const uint8_t *dev;
	struct env e;
	size_t nreq;

	/* given a transaction that creates a few hundred nodes */
	env_init(&e, MAXB, 64);
	env_begin(&e);
	for (unsigned i = 0; i < 20000; i++)
		store(&e, &m, K(i, 1, 0), 30, i);
	czfs_nodecache_stats(e.nc, &st);
	ck_assert_uint_gt(st.dirty, 200);
	/* when committed, then consecutive blocks go out together */
	czfs_bdev_mem_clear_log(e.bdev);
	commit_and_check(&e, &m, false);
	log = czfs_bdev_mem_log(e.bdev, &nreq);
	dev = czfs_bdev_mem_data(e.bdev);
	for (size_t i = 0; i < nreq; i++) {
		if (log[i].op != 'w')
			continue;
		writes++;
		/* children before parents */
		for (uint64_t b = log[i].off / CZFS_BLOCK_SIZE;
		     b < (log[i].off + log[i].len) / CZFS_BLOCK_SIZE; b++) {
			unsigned level = czfs_node_level(dev + b * CZFS_BLOCK_SIZE);

			ck_assert_uint_ge(level, last_level);
			last_level = level;
		}
	}
	ck_assert_uint_lt(writes, st.dirty / 8);
	ck_assert_uint_eq(last_level, e.t.root_level);
	model_free(&m);
	env_destroy(&e);
}
END_TEST

START_TEST(begin_again_before_commit)
{
	struct model m = { 0 };
	struct env e;

	/* given an uncommitted transaction */
	env_init(&e, MAXB, 64);
	env_begin(&e);
	for (unsigned i = 0; i < 1000; i++)
		store(&e, &m, K(i, 1, 0), 100, i);
	/* when a new generation starts without a commit, nodes are copied again */
	env_begin(&e);
	for (unsigned i = 0; i < 1000; i += 3)
		store(&e, &m, K(i, 1, 0), 50, i + 1);
	/* then the tree is whole and no block leaks */
	commit_and_check(&e, &m, true);
	model_free(&m);
	env_destroy(&e);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("btree_cow");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, errors_change_nothing);
	tcase_add_test(tc, insert_commit_reopen);
	tcase_add_test(tc, leaf_splits);
	tcase_add_loop_test(tc, three_way_split_under_full_parent, 0, 3);
	tcase_add_loop_test(tc, grow_and_shrink_three_levels, 0, 3);
	tcase_add_loop_test(tc, shrinking_items_merge_leaves, 0, 2);
	tcase_add_test(tc, extreme_keys_cow);
	tcase_add_loop_test(tc, model_random, 0, 24);
	tcase_add_test(tc, model_random_deep);
	tcase_add_loop_test(tc, cow_never_overwrites, 0, 2);
	tcase_add_loop_test(tc, enospc_at_every_allocation, 0, 3);
	tcase_add_test(tc, enospc_every_attempt_checked);
	tcase_add_test(tc, commit_write_error_then_retry);
	tcase_add_test(tc, read_error_during_change);
	tcase_add_test(tc, commit_writes_runs);
	tcase_add_test(tc, begin_again_before_commit);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
