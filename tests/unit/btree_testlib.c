// SPDX-License-Identifier: MIT
/* Helpers shared by the B-tree test programs (see btree_testlib.h). */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "bdev.h"
#include "btree_int.h"
#include "btree_testlib.h"
#include "compress.h"
#include "util.h"

uint64_t tl_rnd(uint64_t *state)
{
	uint64_t x = *state ? *state : 0x9e3779b97f4a7c15ull;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* ---- the recording allocator ------------------------------------------- */

static int ta_alloc(struct czfs_allocator *a, uint64_t n, uint64_t *blkaddr)
{
	struct test_alloc *ta = container_of(a, struct test_alloc, a);

	ta->calls++;
	if (ta->fail_from && ta->calls >= ta->fail_from)
		return -ENOSPC;
	if (ta->next + n > ta->limit)
		return -ENOSPC;
	for (uint64_t b = ta->next; b < ta->next + n; b++) {
		TL_ASSERT(!ta->live[b], "block %llu allocated twice",
			  (unsigned long long)b);
		ta->live[b] = 1;
		ta->fresh[b] = 1;
	}
	*blkaddr = ta->next;
	ta->next += n;
	return 0;
}

static void ta_free(struct czfs_allocator *a, uint64_t blkaddr, uint64_t n)
{
	struct test_alloc *ta = container_of(a, struct test_alloc, a);

	for (uint64_t b = blkaddr; b < blkaddr + n; b++) {
		TL_ASSERT(b < ta->limit && ta->live[b],
			  "block %llu freed but not allocated",
			  (unsigned long long)b);
		ta->live[b] = 0;
		if (ta->nfreed == ta->freed_cap) {
			ta->freed_cap = ta->freed_cap ? ta->freed_cap * 2 : 256;
			ta->freed = realloc(ta->freed,
					    ta->freed_cap * sizeof(*ta->freed));
			ck_assert_ptr_nonnull(ta->freed);
		}
		ta->freed[ta->nfreed++] = b;
	}
}

void ta_init(struct test_alloc *ta, uint64_t limit)
{
	memset(ta, 0, sizeof(*ta));
	ta->a.alloc = ta_alloc;
	ta->a.free = ta_free;
	ta->next = CZFS_FIRST_DATA_BLKADDR;
	ta->limit = limit;
	ta->live = calloc(limit, 1);
	ta->fresh = calloc(limit, 1);
	TL_ASSERT(ta->live && ta->fresh);
}

void ta_destroy(struct test_alloc *ta)
{
	free(ta->live);
	free(ta->fresh);
	free(ta->freed);
}

void ta_mark(struct test_alloc *ta)
{
	ta->nfreed = 0;
	memset(ta->fresh, 0, ta->limit);
}

void ta_fail_from(struct test_alloc *ta, unsigned long k)
{
	ta->calls = 0;
	ta->fail_from = k;
}

uint64_t ta_live_count(const struct test_alloc *ta)
{
	uint64_t n = 0;

	for (uint64_t b = 0; b < ta->limit; b++)
		n += ta->live[b];
	return n;
}

/* ---- an image with a tree --------------------------------------------- */

void env_init(struct env *e, uint64_t max_blocks, unsigned cache_nodes)
{
	struct czfs_btree_builder *b;
	uint64_t root;
	unsigned level;

	memset(e, 0, sizeof(*e));
	e->max_blocks = max_blocks;
	e->cache_nodes = cache_nodes;
	TL_ASSERT(czfs_bdev_mem_create(0, CZFS_BDEV_DIRECT, &e->bdev) == 0);
	ta_init(&e->ta, max_blocks);
	ck_assert_int_eq(czfs_nodecache_create(e->bdev, max_blocks,
					       cache_nodes, &e->nc), 0);
	TL_ASSERT(czfs_btree_builder_new(e->bdev, &e->ta.a, 1, &b) == 0);
	TL_ASSERT(czfs_btree_builder_finish(b, &root, &level) == 0);
	czfs_btree_builder_free(b);
	env_set_root(e, root, level, 1);
}

void env_destroy(struct env *e)
{
	czfs_nodecache_destroy(e->nc);
	czfs_bdev_close(e->bdev);
	ta_destroy(&e->ta);
}

void env_set_root(struct env *e, uint64_t root, unsigned level, uint64_t gen)
{
	memset(&e->t, 0, sizeof(e->t));
	e->t.nc = e->nc;
	e->t.root_blkaddr = root;
	e->t.root_generation = gen;
	e->t.root_level = level;
	e->t.max_blocks = e->max_blocks;
	e->gen = gen;
}

void env_build(struct env *e, const struct model *m, uint64_t gen)
{
	env_build_packed(e, m, gen, CZFS_ALG_NONE, NULL);
}

void env_build_packed(struct env *e, const struct model *m, uint64_t gen,
		      int alg, struct czfs_btree_build_stats *st)
{
	struct czfs_btree_builder *b;
	uint8_t buf[CZFS_MAX_ITEM_SIZE];
	uint64_t root, old = e->t.root_blkaddr;
	unsigned level;

	TL_ASSERT(e->t.root_level == 0);
	TL_ASSERT(czfs_btree_builder_new(e->bdev, &e->ta.a, gen, &b) == 0);
	czfs_btree_builder_pack_leaves(b, alg, 0);
	for (size_t i = 0; i < m->n; i++) {
		const struct mitem *it = &m->v[i];
		int err;

		tv_fill(&it->key, it->salt, buf, it->size);
		err = czfs_btree_builder_add(b, &it->key, buf, it->size, NULL);
		TL_ASSERT(err == 0, "item %zu: %d", i, err);
	}
	TL_ASSERT(czfs_btree_builder_finish(b, &root, &level) == 0);
	if (st)
		czfs_btree_builder_stats(b, st);
	czfs_btree_builder_free(b);
	e->ta.a.free(&e->ta.a, old, 1);
	czfs_nodecache_forget(e->nc, old);
	env_set_root(e, root, level, gen);
}

void env_reopen(struct env *e)
{
	ck_assert_ptr_null(e->t.dirty_list);
	czfs_nodecache_destroy(e->nc);
	ck_assert_int_eq(czfs_nodecache_create(e->bdev, e->max_blocks,
					       e->cache_nodes, &e->nc), 0);
	e->t.nc = e->nc;
}

void env_begin(struct env *e)
{
	e->gen++;
	czfs_btree_begin(&e->t, &e->ta.a, e->bdev, e->gen);
}

void env_commit(struct env *e)
{
	struct czfs_nodecache_stats st;

	TL_ASSERT(czfs_btree_commit(&e->t) == 0);
	ck_assert_ptr_null(e->t.dirty_list);
	TL_ASSERT(e->t.trans_gen == 0);
	czfs_nodecache_stats(e->nc, &st);
	TL_ASSERT(st.dirty == 0);
}

/* ---- values and the model ---------------------------------------------- */

void tv_fill(const struct czfs_key *k, unsigned salt, void *buf, unsigned size)
{
	uint64_t s = k->objectid * 0x9e3779b97f4a7c15ull ^
		     ((uint64_t)k->type << 56 | k->offset) * 0xbf58476d1ce4e5b9ull ^
		     (uint64_t)salt * 0x94d049bb133111ebull ^ size;
	uint8_t *b = buf;

	if (salt & TV_TEXT) {
		for (unsigned i = 0; i < size; i++)
			b[i] = (uint8_t)('a' + (k->objectid + salt + i / 5) % 11);
		return;
	}
	for (unsigned i = 0; i < size; i++) {
		if (i % 8 == 0)
			tl_rnd(&s);
		b[i] = (uint8_t)(s >> (8 * (i % 8)));
	}
}

bool tv_equal(const struct czfs_key *k, unsigned salt, const void *data,
	      unsigned size)
{
	uint8_t want[CZFS_BLOCK_SIZE];

	tv_fill(k, salt, want, size);
	return memcmp(want, data, size) == 0;
}

void model_free(struct model *m)
{
	free(m->v);
	memset(m, 0, sizeof(*m));
}

long model_find(const struct model *m, const struct czfs_key *key, size_t *at)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = czfs_key_cmp(&m->v[mid].key, key);

		if (!c) {
			*at = mid;
			return (long)mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*at = lo;
	return -1;
}

void model_set(struct model *m, const struct czfs_key *key, unsigned size,
	       unsigned salt)
{
	size_t at;

	if (model_find(m, key, &at) < 0) {
		if (m->n == m->cap) {
			m->cap = m->cap ? m->cap * 2 : 256;
			m->v = realloc(m->v, m->cap * sizeof(*m->v));
			ck_assert_ptr_nonnull(m->v);
		}
		memmove(m->v + at + 1, m->v + at, (m->n - at) * sizeof(*m->v));
		m->n++;
	}
	m->v[at] = (struct mitem){ *key, size, salt };
}

void model_del(struct model *m, const struct czfs_key *key)
{
	size_t at;

	TL_ASSERT(model_find(m, key, &at) >= 0);
	memmove(m->v + at, m->v + at + 1, (m->n - at - 1) * sizeof(*m->v));
	m->n--;
}

struct iter_ctx {
	const struct model *m;
	size_t i;
};

static int iter_cmp(void *ctx, const struct czfs_key *key, const void *data,
		    unsigned size)
{
	struct iter_ctx *c = ctx;
	const struct mitem *it;

	TL_ASSERT(c->i < c->m->n, "tree has more items than the model");
	it = &c->m->v[c->i++];
	TL_ASSERT(czfs_key_cmp(key, &it->key) == 0,
		  "item %zu: key (%llu,%u,%llu), model (%llu,%u,%llu)",
		  c->i - 1, (unsigned long long)key->objectid, key->type,
		  (unsigned long long)key->offset,
		  (unsigned long long)it->key.objectid, it->key.type,
		  (unsigned long long)it->key.offset);
	TL_ASSERT(size == it->size, "item %zu: size %u, model %u", c->i - 1,
		  size, it->size);
	TL_ASSERT(tv_equal(key, it->salt, data, size),
		  "item %zu (%llu,%u,%llu) size %u: bytes differ", c->i - 1,
		  (unsigned long long)key->objectid, key->type,
		  (unsigned long long)key->offset, size);
	return 0;
}

void model_check_iter(const struct model *m, struct czfs_btree *t)
{
	struct czfs_key lo = { 0, 0, 0 }, hi = { UINT64_MAX, 255, UINT64_MAX };
	struct iter_ctx c = { m, 0 };

	TL_ASSERT(czfs_btree_iterate(t, &lo, &hi, iter_cmp, &c) == 0);
	TL_ASSERT(c.i == m->n);
}

void model_check_lookups(const struct model *m, struct czfs_btree *t,
			 uint64_t *rng)
{
	uint8_t buf[CZFS_BLOCK_SIZE], want[CZFS_BLOCK_SIZE];
	size_t at;

	for (size_t i = 0; i < m->n; i++) {
		const struct mitem *it = &m->v[i];
		struct czfs_key miss = it->key;

		int ret = czfs_btree_lookup(t, &it->key, buf, sizeof(buf));

		TL_ASSERT(ret == (int)it->size, "lookup %zu: %d", i, ret);
		TL_ASSERT(tv_equal(&it->key, it->salt, buf, it->size));
		/* a key just above, unless the model has it */
		miss.offset++;
		if (model_find(m, &miss, &at) < 0 && miss.offset <= CZFS_KEY_OFFSET_MASK)
			TL_ASSERT(czfs_btree_lookup(t, &miss, buf, 0) == -ENOENT);
		if (tl_below(rng, 8))
			continue;
		/* a short buffer gets a prefix and the full size */
		memset(buf, 0, sizeof(buf));
		TL_ASSERT(czfs_btree_lookup(t, &it->key, buf, 3) == (int)it->size);
		tv_fill(&it->key, it->salt, want, it->size);
		TL_ASSERT(memcmp(buf, want, MIN(3, it->size)) == 0);
		TL_ASSERT(czfs_is_zero(buf + 3, sizeof(buf) - 3));
	}
}

/* ---- the validator ------------------------------------------------------ */

struct walker {
	struct env *e;
	const uint8_t *dev;
	uint8_t *reach;
	struct walk_result *res;
	struct czfs_codec *codec;
	uint8_t *pack;			/* a decoded leaf pack */
};

/* A leaf in a leaf pack: its pack's blocks are reached at its leaf 0. */
static const uint8_t *packed_leaf(struct walker *w, uint64_t ptr)
{
	uint64_t base = czfs_leafpack_base(ptr);
	unsigned nb = czfs_leafpack_nblocks(ptr), count;

	TL_ASSERT(base >= CZFS_FIRST_DATA_BLKADDR && base + nb <= w->e->max_blocks &&
		  (base + nb) * CZFS_BLOCK_SIZE <= w->e->bdev->size,
		  "leaf pack %llu+%u", (unsigned long long)base, nb);
	for (unsigned i = 0; i < nb; i++) {
		TL_ASSERT(w->reach[base + i] == !!czfs_leafpack_index(ptr),
			  "leaf pack %llu: leaf %u reached out of turn",
			  (unsigned long long)base, czfs_leafpack_index(ptr));
		w->reach[base + i] = 1;
	}
	TL_ASSERT(czfs_leafpack_decode(w->dev + base * CZFS_BLOCK_SIZE, ptr,
				       w->codec, w->pack, &count) == 0);
	return w->pack + (size_t)czfs_leafpack_index(ptr) * CZFS_BLOCK_SIZE;
}

static void check_bounds(const void *blk, uint64_t addr,
			 const struct czfs_key *lo, const struct czfs_key *hi)
{
	unsigned n = czfs_node_nritems(blk);
	struct czfs_key k;

	for (unsigned i = 0; i < n; i++) {
		czfs_node_key(blk, i, &k);
		TL_ASSERT(!lo || czfs_key_cmp(&k, lo) >= 0,
			  "node %llu key %u below its pointer key",
			  (unsigned long long)addr, i);
		TL_ASSERT(!hi || czfs_key_cmp(&k, hi) < 0,
			  "node %llu key %u not below the next pointer key",
			  (unsigned long long)addr, i);
	}
}

static void walk_node(struct walker *w, uint64_t addr, uint64_t gen,
		      unsigned level, const struct czfs_key *lo,
		      const struct czfs_key *hi, bool root)
{
	const uint8_t *blk;
	unsigned n;

	if (czfs_leafpack_is(addr)) {
		TL_ASSERT(level == 0, "a pack pointer at level %u", level);
		blk = packed_leaf(w, addr);
		TL_ASSERT(!czfs_node_check(blk, czfs_leafpack_self(addr), gen, 0,
					   w->e->max_blocks),
			  "packed leaf %#llx does not check", (unsigned long long)addr);
		w->res->packed++;
	} else {
		TL_ASSERT(addr >= CZFS_FIRST_DATA_BLKADDR && addr < w->e->max_blocks &&
			  (addr + 1) * CZFS_BLOCK_SIZE <= w->e->bdev->size,
			  "node address %llu", (unsigned long long)addr);
		blk = w->dev + addr * CZFS_BLOCK_SIZE;
		TL_ASSERT(!czfs_node_check(blk, addr, gen, (int)level,
					   w->e->max_blocks),
			  "node %llu does not check", (unsigned long long)addr);
		TL_ASSERT(!w->reach[addr], "node %llu reached twice",
			  (unsigned long long)addr);
		w->reach[addr] = 1;
	}
	n = czfs_node_nritems(blk);
	TL_ASSERT(root || n, "node %llu empty", (unsigned long long)addr);
	check_bounds(blk, addr, lo, hi);
	w->res->nnodes++;
	if (!level) {
		w->res->nitems += n;
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		struct czfs_key klo, khi;
		uint64_t caddr, cgen;

		czfs_node_key(blk, i, &klo);
		if (i + 1 < n)
			czfs_node_key(blk, i + 1, &khi);
		czfs_node_child(blk, i, &caddr, &cgen);
		walk_node(w, caddr, cgen, level - 1, &klo,
			  i + 1 < n ? &khi : hi, false);
	}
}

void walk_tree(struct env *e, uint8_t *reach, struct walk_result *res)
{
	struct walker w = { e, czfs_bdev_mem_data(e->bdev), reach, res,
			    czfs_codec_new(),
			    malloc(CZFS_LEAFPACK_MAX * CZFS_BLOCK_SIZE) };

	ck_assert(w.codec && w.pack);
	memset(res, 0, sizeof(*res));
	ck_assert_uint_lt(e->t.root_level, CZFS_MAX_LEVEL);
	res->levels = e->t.root_level + 1;
	walk_node(&w, e->t.root_blkaddr, e->t.root_generation,
		  e->t.root_level, NULL, NULL, true);
	czfs_codec_free(w.codec);
	free(w.pack);
}

void check_no_leaks(struct env *e)
{
	uint8_t *reach = calloc(e->max_blocks, 1);
	struct walk_result res;

	ck_assert_ptr_nonnull(reach);
	walk_tree(e, reach, &res);
	for (uint64_t b = 0; b < e->max_blocks; b++)
		TL_ASSERT(reach[b] == e->ta.live[b],
			  "block %llu: reachable %d, allocated %d",
			  (unsigned long long)b, reach[b], e->ta.live[b]);
	free(reach);
}

/* ---- random operations ------------------------------------------------- */

unsigned random_size(uint64_t *rng, enum profile p)
{
	unsigned r = tl_below(rng, 100);

	switch (p) {
	case P_SMALL:
		return tl_below(rng, 65);
	case P_MIXED:
		if (r < 80)
			return tl_below(rng, 100);
		if (r < 95)
			return 100 + tl_below(rng, 900);
		return 1000 + tl_below(rng, CZFS_MAX_ITEM_SIZE - 999);
	default:
		if (r < 10)
			return CZFS_MAX_ITEM_SIZE;
		return 500 + tl_below(rng, CZFS_MAX_ITEM_SIZE - 499);
	}
}

void random_op(uint64_t *rng, const struct model *m, enum profile p,
		      const struct mix *mix, unsigned nobj, struct op *op)
{
	unsigned r = tl_below(rng, 100);

	op->kind = r < mix->insert ? OP_INSERT :
		   r < mix->insert + mix->update ? OP_UPDATE :
		   r < mix->insert + mix->update + mix->put ? OP_PUT : OP_DELETE;
	if (m->n && tl_below(rng, 100) < mix->existing)
		op->key = m->v[tl_below(rng, (unsigned)m->n)].key;
	else
		op->key = (struct czfs_key){ tl_below(rng, nobj),
					     (uint8_t)(1 + tl_below(rng, 5)),
					     tl_below(rng, 40) };
	op->size = random_size(rng, p);
	op->salt = (unsigned)tl_rnd(rng);
}

int apply_op(struct env *e, const struct op *op)
{
	uint8_t buf[CZFS_MAX_ITEM_SIZE];

	tv_fill(&op->key, op->salt, buf, op->size);
	switch (op->kind) {
	case OP_INSERT:
		return czfs_btree_insert(&e->t, &op->key, buf, op->size);
	case OP_UPDATE:
		return czfs_btree_update(&e->t, &op->key, buf, op->size);
	case OP_PUT:
		return czfs_btree_put(&e->t, &op->key, buf, op->size);
	default:
		return czfs_btree_delete(&e->t, &op->key);
	}
}

/* What the operation returns on the model, and its effect there. */
int model_apply(struct model *m, const struct op *op, bool change)
{
	size_t at;
	bool exists = model_find(m, &op->key, &at) >= 0;

	if ((op->kind == OP_INSERT && exists))
		return -EEXIST;
	if ((op->kind == OP_UPDATE || op->kind == OP_DELETE) && !exists)
		return -ENOENT;
	if (!change)
		return 0;
	if (op->kind == OP_DELETE)
		model_del(m, &op->key);
	else
		model_set(m, &op->key, op->size, op->salt);
	return 0;
}

void run_op(struct env *e, struct model *m, const struct op *op)
{
	int want = model_apply(m, op, false), ret = apply_op(e, op);

	TL_ASSERT(ret == want, "op %d on (%llu,%u,%llu) size %u: %d, want %d",
		  op->kind, (unsigned long long)op->key.objectid, op->key.type,
		  (unsigned long long)op->key.offset, op->size, ret, want);
	if (!want)
		model_apply(m, op, true);
}

/* ---- bulk-built trees and their damage ------------------------------- */

struct czfs_key tl_build_key(unsigned i)
{
	return (struct czfs_key){ i / 4, (uint8_t)(1 + i % 4),
				 (uint64_t)i * 7919u % 100000u };
}

unsigned tl_build_size(unsigned i)
{
	if (i % 97 == 1)
		return CZFS_MAX_ITEM_SIZE;
	if (i % 97 == 50)
		return 1000 + i % 3000;
	if (i % 13 == 0)
		return 200 + i % 500;
	return i % 50;
}

void env_build_n(struct env *e, unsigned n, struct model *m, uint64_t gen)
{
	struct model local = { 0 };

	if (!m)
		m = &local;
	for (unsigned i = 0; i < n; i++) {
		struct czfs_key k = tl_build_key(i);

		model_set(m, &k, tl_build_size(i), 0);
	}
	env_build(e, m, gen);
	model_free(&local);
}

int tl_count_fn(void *ctx, const struct czfs_key *key, const void *data,
		unsigned size)
{
	(*(size_t *)ctx)++;
	return 0;
}

static void set_key(uint8_t *blk, unsigned slot, const struct czfs_key *k)
{
	struct czfs_disk_key dk;

	czfs_key_to_disk(k, &dk);
	memcpy(blk + CZFS_NODE_HDR_SIZE + slot * CZFS_ITEM_HDR_SIZE, &dk, sizeof(dk));
}

void tl_damage(struct env *e, enum tl_damage d, uint64_t inner, uint64_t leaf)
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
