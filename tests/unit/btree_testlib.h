/* SPDX-License-Identifier: MIT */
/*
 * Helpers shared by the B-tree test programs: a recording allocator, an
 * in-memory image with a tree on it, deterministic item values, a sorted
 * array model, and an independent validator that walks the tree on the
 * device bytes.
 */
#ifndef CZFS_BTREE_TESTLIB_H
#define CZFS_BTREE_TESTLIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "btree.h"

/*
 * ck_assert records every check that passes (a write(2) each), which is
 * slow in loops over thousands of items: hot loops use this instead, which
 * costs nothing until it fails.
 */
#define TL_ASSERT(cond, ...) \
	do { \
		if (!(cond)) \
			ck_abort_msg("TL_ASSERT(" #cond ") " __VA_ARGS__); \
	} while (0)

/* ---- random numbers --------------------------------------------------- */

uint64_t tl_rnd(uint64_t *state);
static inline unsigned tl_below(uint64_t *state, unsigned n)
{
	return (unsigned)(tl_rnd(state) % n);
}

/* ---- the recording allocator ------------------------------------------- */

struct test_alloc {
	struct czfs_allocator a;
	uint64_t next;			/* bump pointer */
	uint64_t limit;			/* blocks [3, limit) */
	unsigned long calls;		/* alloc calls since ta_fail_from */
	unsigned long fail_from;	/* fail call k and after; 0 = never */
	uint8_t *live;			/* per block: allocated, not freed */
	uint8_t *fresh;			/* allocated since ta_mark */
	uint64_t *freed;		/* freed since ta_mark, in order */
	size_t nfreed, freed_cap;
};

void ta_init(struct test_alloc *ta, uint64_t limit);
void ta_destroy(struct test_alloc *ta);
/* Forget the freed list and the fresh marks. */
void ta_mark(struct test_alloc *ta);
/* Make the k-th allocation from now (1 = next) and all later ones fail. */
void ta_fail_from(struct test_alloc *ta, unsigned long k);
uint64_t ta_live_count(const struct test_alloc *ta);

/* ---- an image with a tree --------------------------------------------- */

struct env {
	struct czfs_bdev *bdev;
	struct test_alloc ta;
	struct czfs_nodecache *nc;
	struct czfs_btree t;
	uint64_t gen;			/* generation of the last commit */
	uint64_t max_blocks;
	unsigned cache_nodes;
};

/* Device (O_DIRECT rules), allocator, cache and an empty committed tree. */
void env_init(struct env *e, uint64_t max_blocks, unsigned cache_nodes);
void env_destroy(struct env *e);
/* Replace the tree by the one a builder made at generation gen. */
void env_set_root(struct env *e, uint64_t root, unsigned level, uint64_t gen);
/* Bulk-load the model's items at generation gen in place of e's tree
 * (whose single empty leaf goes back to the allocator). */
struct model;
void env_build(struct env *e, const struct model *m, uint64_t gen);
/* The same with the leaves in leaf packs of alg (CZFS_ALG_NONE: plain);
 * st (may be NULL) gets the builder's figures. */
void env_build_packed(struct env *e, const struct model *m, uint64_t gen,
		      int alg, struct czfs_btree_build_stats *st);
/* A new node cache; the tree is read again from its committed root. */
void env_reopen(struct env *e);
void env_begin(struct env *e);
void env_commit(struct env *e);

/* ---- values and the model ---------------------------------------------- */

/* A value's bytes: random from key, salt and size, or, with TV_TEXT in
 * salt, a few letters in runs (they compress). */
#define TV_TEXT		0x40000000u
void tv_fill(const struct czfs_key *k, unsigned salt, void *buf, unsigned size);
bool tv_equal(const struct czfs_key *k, unsigned salt, const void *data,
	      unsigned size);

struct mitem {
	struct czfs_key key;
	unsigned size, salt;
};

struct model {
	struct mitem *v;
	size_t n, cap;
};

void model_free(struct model *m);
/* Index of key, or -1 with *at = where it would go. */
long model_find(const struct model *m, const struct czfs_key *key, size_t *at);
void model_set(struct model *m, const struct czfs_key *key, unsigned size,
	       unsigned salt);
void model_del(struct model *m, const struct czfs_key *key);
/* The tree must iterate exactly as the model (keys, sizes, bytes). */
void model_check_iter(const struct model *m, struct czfs_btree *t);
/* Look up every model key and some keys that are absent. */
void model_check_lookups(const struct model *m, struct czfs_btree *t,
			 uint64_t *rng);

/* ---- the validator ------------------------------------------------------ */

struct walk_result {
	uint64_t nitems, nnodes;
	uint64_t packed;		/* leaves reached in leaf packs */
	unsigned levels;
};

/*
 * Walk the committed tree of e on the device bytes, checking every node
 * and the key ranges across levels.  Marks reach[blkaddr] (max_blocks
 * bytes, zeroed by the caller) and fails if a block is reached twice.
 */
void walk_tree(struct env *e, uint8_t *reach, struct walk_result *res);
/* Walk, then check the allocator's live blocks are exactly the tree's. */
void check_no_leaks(struct env *e);

/* ---- bulk-built trees and their damage ------------------------------- */

/* Item i of a built tree: (i/4, 1 + i%4, scattered offset), so that
 * (objectid, type, offset + 1) is never a key of the tree; its size. */
struct czfs_key tl_build_key(unsigned i);
unsigned tl_build_size(unsigned i);
/* Bulk-load items 0..n-1 at generation gen in place of e's (empty) tree,
 * recording them in m (may be NULL). */
void env_build_n(struct env *e, unsigned n, struct model *m, uint64_t gen);
/* An iterate callback counting the items into *(size_t *)ctx. */
int tl_count_fn(void *ctx, const struct czfs_key *key, const void *data,
		unsigned size);

enum tl_damage {
	D_LEAF_BYTE, D_INNER_BYTE, D_SWAP_CHILDREN, D_CHILD_GEN, D_WRONG_LEVEL,
	D_SELF_LOOP, D_EMPTY_LEAF, D_KEY_ABOVE_NEXT, D_KEY_BELOW_PTR,
	D_ROOT_LEVEL, D_ROOT_GEN, D_PAST_DEVICE, D_COUNT
};

/* Damage the device bytes of e's tree around an inner node and one of its
 * leaves (or e's root pointer), as d says. */
void tl_damage(struct env *e, enum tl_damage d, uint64_t inner, uint64_t leaf);

/* ---- random operations ------------------------------------------------- */

enum op_kind { OP_INSERT, OP_UPDATE, OP_PUT, OP_DELETE };

struct op {
	enum op_kind kind;
	struct czfs_key key;
	unsigned size, salt;
};

enum profile { P_SMALL, P_MIXED, P_BIG, P_COUNT };

/* weights of insert, update, put (delete: the rest) in percent, and the
 * share of operations on a key the model holds */
struct mix {
	unsigned insert, update, put;
	unsigned existing;
};

unsigned random_size(uint64_t *rng, enum profile p);
/* An operation on a random key of nobj objects (or on a model key). */
void random_op(uint64_t *rng, const struct model *m, enum profile p,
	       const struct mix *mix, unsigned nobj, struct op *op);
/* Apply to the tree; returns what the tree call returned. */
int apply_op(struct env *e, const struct op *op);
/* What the operation should return; with change, apply it to the model. */
int model_apply(struct model *m, const struct op *op, bool change);
/* Apply to both, checking the tree returns what the model says. */
void run_op(struct env *e, struct model *m, const struct op *op);

#endif /* CZFS_BTREE_TESTLIB_H */
