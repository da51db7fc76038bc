// SPDX-License-Identifier: MIT
/*
 * Bottom-up bulk loading (mkfs): items arrive in key order and fill leaves
 * greedily in memory.  A full leaf is closed and never touched again except
 * through the value pointers handed out, so those stay valid until finish.
 * Finish gives the leaves blocks one at a time in key order (contiguous on
 * a fresh allocator), or compresses them in leaf packs, then builds and
 * places each internal level, writing runs of consecutive blocks in single
 * requests.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "bdev.h"
#include "btree_int.h"
#include "compress.h"
#include "util.h"

#define BUILD_RUN_BLOCKS	64

/* ---- writing runs of blocks --------------------------------------------- */

int czfs_blkwriter_init(struct czfs_blkwriter *w, struct czfs_bdev *bdev,
			unsigned cap)
{
	void *buf;

	memset(w, 0, sizeof(*w));
	if (posix_memalign(&buf, CZFS_BLOCK_SIZE, (size_t)cap * CZFS_BLOCK_SIZE))
		return -ENOMEM;
	w->bdev = bdev;
	w->buf = buf;
	w->cap = cap;
	return 0;
}

int czfs_blkwriter_flush(struct czfs_blkwriter *w)
{
	int err = 0;

	if (w->n)
		err = czfs_bdev_write(w->bdev, w->buf,
				      (size_t)w->n * CZFS_BLOCK_SIZE,
				      w->start << CZFS_BLOCK_SHIFT);
	w->n = 0;
	return err;
}

int czfs_blkwriter_add(struct czfs_blkwriter *w, uint64_t blkaddr,
		       const void *blk)
{
	if (w->n && (w->n == w->cap || blkaddr != w->start + w->n)) {
		int err = czfs_blkwriter_flush(w);

		if (err)
			return err;
	}
	if (!w->n)
		w->start = blkaddr;
	memcpy(w->buf + (size_t)w->n * CZFS_BLOCK_SIZE, blk, CZFS_BLOCK_SIZE);
	w->n++;
	return 0;
}

void czfs_blkwriter_free(struct czfs_blkwriter *w)
{
	free(w->buf);
	w->buf = NULL;
}

/* ---- the builder -------------------------------------------------------- */

struct czfs_btree_builder {
	struct czfs_bdev *bdev;
	struct czfs_allocator *alloc;
	uint64_t gen;
	uint8_t **leaves;		/* the last one is open */
	size_t nleaves, cap;
	struct czfs_key last;		/* key of the last item added */
	bool finished;
	uint64_t *taken;		/* blocks finish allocated so far */
	size_t ntaken;
	int pack_alg, pack_level;	/* leaf packs; CZFS_ALG_NONE: none */
	struct czfs_btree_build_stats st;
};

int czfs_btree_builder_new(struct czfs_bdev *bdev, struct czfs_allocator *alloc,
			   uint64_t gen, struct czfs_btree_builder **out)
{
	struct czfs_btree_builder *b = calloc(1, sizeof(*b));

	if (!b)
		return -ENOMEM;
	b->bdev = bdev;
	b->alloc = alloc;
	b->gen = gen;
	*out = b;
	return 0;
}

void czfs_btree_builder_pack_leaves(struct czfs_btree_builder *b, int alg,
				    int level)
{
	b->pack_alg = czfs_compressor_get(alg) ? alg : CZFS_ALG_NONE;
	b->pack_level = level;
}

void czfs_btree_builder_stats(const struct czfs_btree_builder *b,
			      struct czfs_btree_build_stats *st)
{
	*st = b->st;
}

void czfs_btree_builder_free(struct czfs_btree_builder *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->nleaves; i++)
		free(b->leaves[i]);
	free(b->leaves);
	free(b->taken);
	free(b);
}

/* Allocate one node buffer at the given level (address set at finish). */
static uint8_t *node_buf(uint64_t gen, unsigned level)
{
	void *blk;

	if (posix_memalign(&blk, CZFS_BLOCK_SIZE, CZFS_BLOCK_SIZE))
		return NULL;
	czfs_node_init(blk, 0, gen, level);
	return blk;
}

static int open_leaf(struct czfs_btree_builder *b)
{
	uint8_t *leaf;

	if (CZFS_GROW(b->leaves, b->nleaves, b->cap, 64))
		return -ENOMEM;
	leaf = node_buf(b->gen, 0);
	if (!leaf)
		return -ENOMEM;
	b->leaves[b->nleaves++] = leaf;
	return 0;
}

int czfs_btree_builder_add(struct czfs_btree_builder *b,
			   const struct czfs_key *key, const void *data,
			   unsigned size, void **stored)
{
	uint8_t *leaf;
	unsigned slot, size_out;
	int err;

	if (b->finished || key->offset > CZFS_KEY_OFFSET_MASK ||
	    (b->nleaves && czfs_key_cmp(key, &b->last) <= 0))
		return -EINVAL;
	if (size > CZFS_MAX_ITEM_SIZE)
		return -E2BIG;
	if (!b->nleaves || czfs_leaf_free_space(b->leaves[b->nleaves - 1]) <
			   CZFS_ITEM_HDR_SIZE + size) {
		err = open_leaf(b);
		if (err)
			return err;
	}
	leaf = b->leaves[b->nleaves - 1];
	slot = czfs_node_nritems(leaf);
	czfs_leaf_insert(leaf, slot, key, data, size);
	if (stored)
		*stored = (void *)czfs_leaf_data(leaf, slot, &size_out);
	b->last = *key;
	return 0;
}

static int take_block(struct czfs_btree_builder *b, uint64_t *blkaddr)
{
	int err = b->alloc->alloc(b->alloc, 1, blkaddr);

	if (!err)
		b->taken[b->ntaken++] = *blkaddr;
	return err;
}

/* Place, seal and queue n nodes, one block each, on w; ptrs[i] receives
 * node i's pointer. */
static int place_nodes(struct czfs_btree_builder *b, struct czfs_blkwriter *w,
		       uint8_t **nodes, size_t n, struct czfs_node_ptr *ptrs)
{
	struct czfs_key key;
	uint64_t blkaddr;
	int err = 0;

	for (size_t i = 0; i < n && !err; i++) {
		err = take_block(b, &blkaddr);
		if (err)
			break;
		czfs_node_set_addr(nodes[i], blkaddr, b->gen);
		czfs_node_seal(nodes[i]);
		err = czfs_blkwriter_add(w, blkaddr, nodes[i]);
		/* An empty root leaf has no key: its pointer is never used. */
		memset(&key, 0, sizeof(key));
		if (czfs_node_nritems(nodes[i]))
			czfs_node_key(nodes[i], 0, &key);
		czfs_node_make_ptr(&ptrs[i], &key, blkaddr, b->gen);
	}
	return err;
}

/* Place, seal and write one level. */
static int write_level(struct czfs_btree_builder *b, uint8_t **nodes, size_t n,
		       struct czfs_node_ptr *ptrs)
{
	struct czfs_blkwriter w;
	int err = czfs_blkwriter_init(&w, b->bdev, BUILD_RUN_BLOCKS);

	if (!err)
		err = place_nodes(b, &w, nodes, n, ptrs);
	if (!err)
		err = czfs_blkwriter_flush(&w);
	czfs_blkwriter_free(&w);
	return err;
}

/* ---- leaf packs ---------------------------------------------------------- */

struct pack_ctx {
	struct czfs_blkwriter w;
	struct czfs_codec *codec;
	uint8_t *src, *dst;		/* CZFS_LEAFPACK_MAX, - 1 blocks */
};

/* n consecutive leaves of one parent in one pack, or plain when that does
 * not save a block. */
static int write_group(struct czfs_btree_builder *b, struct pack_ctx *pc,
		       uint8_t **nodes, unsigned n, struct czfs_node_ptr *ptrs)
{
	struct czfs_key key;
	uint64_t base;
	int nb, err;

	if (n < 2)
		return place_nodes(b, &pc->w, nodes, n, ptrs);
	for (unsigned i = 0; i < n; i++) {
		czfs_node_set_addr(nodes[i], czfs_leafpack_self(
				   czfs_leafpack_ptr(0, 1, i)), b->gen);
		czfs_node_seal(nodes[i]);
		memcpy(pc->src + (size_t)i * CZFS_BLOCK_SIZE, nodes[i],
		       CZFS_BLOCK_SIZE);
	}
	nb = czfs_leafpack_encode(pc->codec, b->pack_alg, b->pack_level,
				  pc->src, n, b->gen, pc->dst);
	if (nb < 0)
		return nb;
	if (!nb)
		return place_nodes(b, &pc->w, nodes, n, ptrs);
	err = b->alloc->alloc(b->alloc, (uint64_t)nb, &base);
	if (err)
		return err;
	for (int i = 0; i < nb; i++)
		b->taken[b->ntaken++] = base + (uint64_t)i;
	czfs_leafpack_seal(pc->dst, base);
	for (int i = 0; i < nb && !err; i++)
		err = czfs_blkwriter_add(&pc->w, base + (uint64_t)i,
					 pc->dst + (size_t)i * CZFS_BLOCK_SIZE);
	for (unsigned i = 0; i < n; i++) {
		czfs_node_key(nodes[i], 0, &key);
		czfs_node_make_ptr(&ptrs[i], &key,
				   czfs_leafpack_ptr(base, (unsigned)nb, i), b->gen);
	}
	b->st.packs++;
	b->st.packed_leaves += n;
	b->st.pack_blocks += (uint64_t)nb;
	return err;
}

/*
 * The leaves, in packs of consecutive children of one parent: the parents
 * are cut as build_parents will cut them, and each parent's leaves into
 * as few even packs as hold them.
 */
static int write_leaves_packed(struct czfs_btree_builder *b, uint8_t **nodes,
			       size_t n, struct czfs_node_ptr *ptrs)
{
	size_t parents = DIV_ROUND_UP(n, CZFS_NODE_MAX_PTRS), at = 0;
	struct pack_ctx pc = { .codec = czfs_codec_new() };
	int err = czfs_blkwriter_init(&pc.w, b->bdev, BUILD_RUN_BLOCKS);

	if (!err && (posix_memalign((void **)&pc.src, CZFS_BLOCK_SIZE,
				    CZFS_LEAFPACK_MAX * CZFS_BLOCK_SIZE) ||
		     posix_memalign((void **)&pc.dst, CZFS_BLOCK_SIZE,
				    CZFS_LEAFPACK_MAX * CZFS_BLOCK_SIZE)))
		err = -ENOMEM;
	if (!pc.codec)
		err = -ENOMEM;
	for (size_t p = 0; p < parents && !err; p++) {
		size_t take = n / parents + (p < n % parents);
		size_t npacks = DIV_ROUND_UP(take, CZFS_LEAFPACK_MAX);

		for (size_t k = 0; k < npacks && !err; k++) {
			unsigned cnt = (unsigned)(take / npacks + (k < take % npacks));

			err = write_group(b, &pc, nodes + at, cnt, ptrs + at);
			at += cnt;
		}
	}
	if (!err)
		err = czfs_blkwriter_flush(&pc.w);
	czfs_blkwriter_free(&pc.w);
	czfs_codec_free(pc.codec);
	free(pc.src);
	free(pc.dst);
	return err;
}

static void free_nodes(uint8_t **nodes, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(nodes[i]);
	free(nodes);
}

/* Spread n pointers evenly over as few nodes as hold them. */
static int build_parents(const struct czfs_node_ptr *ptrs, size_t n,
			 uint64_t gen, unsigned level, uint8_t ***out,
			 size_t *nout)
{
	size_t count = DIV_ROUND_UP(n, CZFS_NODE_MAX_PTRS), at = 0;
	uint8_t **nodes = calloc(count, sizeof(*nodes));

	if (!nodes)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++) {
		size_t take = n / count + (i < n % count);

		nodes[i] = node_buf(gen, level);
		if (!nodes[i]) {
			free_nodes(nodes, i);
			return -ENOMEM;
		}
		czfs_node_insert_ptrs(nodes[i], 0, ptrs + at, (unsigned)take);
		at += take;
	}
	*out = nodes;
	*nout = count;
	return 0;
}

static int build_tree(struct czfs_btree_builder *b, struct czfs_node_ptr *ptrs,
		      uint64_t *root_blkaddr, unsigned *root_level)
{
	uint8_t **nodes = b->leaves, **parents;
	size_t n = b->nleaves, np;
	unsigned level = 0;
	int err;

	b->st.leaves = n;
	for (;;) {
		if (!level && n > 1 && b->pack_alg != CZFS_ALG_NONE)
			err = write_leaves_packed(b, nodes, n, ptrs);
		else
			err = write_level(b, nodes, n, ptrs);
		if (nodes != b->leaves)
			free_nodes(nodes, n);
		if (err)
			return err;
		if (n == 1)
			break;
		if (level + 1 >= CZFS_MAX_LEVEL)
			return -ENOSPC;
		err = build_parents(ptrs, n, b->gen, ++level, &parents, &np);
		if (err)
			return err;
		nodes = parents;
		n = np;
	}
	*root_blkaddr = le64_to_cpu(ptrs[0].blkaddr);
	*root_level = level;
	return 0;
}

int czfs_btree_builder_finish(struct czfs_btree_builder *b,
			      uint64_t *root_blkaddr, unsigned *root_level)
{
	struct czfs_node_ptr *ptrs = NULL;
	int err;

	if (b->finished)
		return -EINVAL;
	if (!b->nleaves) {
		err = open_leaf(b);
		if (err)
			return err;
	}
	/* Every level has at most as many nodes as there are leaves. */
	ptrs = calloc(b->nleaves, sizeof(*ptrs));
	b->taken = calloc(b->nleaves * 2, sizeof(*b->taken));
	if (!ptrs || !b->taken) {
		err = -ENOMEM;
		goto out;
	}
	err = build_tree(b, ptrs, root_blkaddr, root_level);
	if (err) {
		for (size_t i = 0; i < b->ntaken; i++)
			b->alloc->free(b->alloc, b->taken[i], 1);
	} else {
		b->finished = true;
	}
out:
	free(ptrs);
	free(b->taken);
	b->taken = NULL;
	b->ntaken = 0;
	return err;
}
