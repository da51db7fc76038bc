// SPDX-License-Identifier: MIT
/*
 * Leaf packs (czfs_fs.h): the builder compresses the leaves under each
 * level-1 node in packs, the node cache decodes a pack once for all its
 * leaves, the copy-on-write of a level-1 node stores its packed children
 * plain and frees their packs, and a damaged pack fails only its leaves.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "bdev.h"
#include "btree_int.h"
#include "btree_testlib.h"
#include "compress.h"
#include "util.h"

#define MAXB	(1u << 14)
#define NITEMS	24000u		/* about 260 leaves: three level-1 nodes */

static struct env e;
static struct model m;
static struct czfs_btree_build_stats bst;

/* Items of text-like values (they compress), sizes as tl_build_size. */
static void build(int alg)
{
	for (unsigned i = 0; i < NITEMS; i++) {
		struct czfs_key k = tl_build_key(i);
		unsigned size = tl_build_size(i) % 300;

		model_set(&m, &k, size, TV_TEXT | (i % 7));
	}
	env_build_packed(&e, &m, 2, alg, &bst);
	e.gen = 2;
}

static void setup(void)
{
	env_init(&e, MAXB, 4096);
	memset(&m, 0, sizeof(m));
	build(CZFS_ALG_LZ4HC);
}

static void teardown(void)
{
	model_free(&m);
	env_destroy(&e);
}

static const uint8_t *dev_block(uint64_t b)
{
	return czfs_bdev_mem_data(e.bdev) + b * CZFS_BLOCK_SIZE;
}

/* The level-1 nodes, read off the device (the root is level 2 here). */
static unsigned level1_nodes(uint64_t *addr, unsigned max)
{
	const uint8_t *root = dev_block(e.t.root_blkaddr);
	unsigned n = czfs_node_nritems(root);

	ck_assert_uint_eq(e.t.root_level, 2);
	ck_assert_uint_le(n, max);
	for (unsigned i = 0; i < n; i++) {
		uint64_t gen;

		czfs_node_child(root, i, &addr[i], &gen);
		ck_assert(!czfs_leafpack_is(addr[i]));
	}
	return n;
}

static unsigned packed_children(const uint8_t *blk)
{
	unsigned n = czfs_node_nritems(blk), packed = 0;

	for (unsigned i = 0; i < n; i++) {
		uint64_t a, g;

		czfs_node_child(blk, i, &a, &g);
		packed += czfs_leafpack_is(a);
	}
	return packed;
}

START_TEST(builder_packs_every_parents_leaves)
{
	struct walk_result res;
	uint8_t *reach = calloc(MAXB, 1);
	uint64_t l1[8], rng = 7;
	unsigned n1 = level1_nodes(l1, 8), total = 0;

	ck_assert_uint_ge(n1, 2);
	ck_assert_uint_gt(bst.packs, bst.leaves / CZFS_LEAFPACK_MAX);
	ck_assert_uint_eq(bst.packed_leaves, bst.leaves);
	/* a third of the leaves' blocks or less */
	ck_assert_uint_lt(bst.pack_blocks * 3, bst.leaves);
	walk_tree(&e, reach, &res);
	ck_assert_uint_eq(res.packed, bst.leaves);
	ck_assert_uint_eq(res.nitems, NITEMS);
	free(reach);
	check_no_leaks(&e);
	/* Each pack's leaves follow one another under one parent. */
	for (unsigned p = 0; p < n1; p++) {
		const uint8_t *blk = dev_block(l1[p]);
		unsigned n = czfs_node_nritems(blk), next = 0;
		uint64_t base = 0;

		for (unsigned i = 0; i < n; i++) {
			uint64_t a, g;

			czfs_node_child(blk, i, &a, &g);
			ck_assert(czfs_leafpack_is(a));
			if (czfs_leafpack_base(a) != base) {
				ck_assert_uint_eq(czfs_leafpack_index(a), 0);
				base = czfs_leafpack_base(a);
				next = 0;
			}
			ck_assert_uint_eq(czfs_leafpack_index(a), next++);
		}
		total += n;
	}
	ck_assert_uint_eq(total, bst.leaves);
	env_reopen(&e);
	model_check_iter(&m, &e.t);
	model_check_lookups(&m, &e.t, &rng);
}
END_TEST

START_TEST(cache_decodes_each_pack_once)
{
	struct czfs_nodecache_stats st;
	uint64_t rng = 3;

	env_reopen(&e);
	model_check_iter(&m, &e.t);
	czfs_nodecache_stats(e.nc, &st);
	ck_assert_uint_eq(st.packs, bst.packs);
	/* the other leaves of a pack came with it: one miss per pack and
	 * per internal node */
	ck_assert_uint_le(st.misses, bst.packs + 4);
	model_check_lookups(&m, &e.t, &rng);
	czfs_nodecache_stats(e.nc, &st);
	ck_assert_uint_eq(st.packs, bst.packs);
}
END_TEST

START_TEST(copying_a_parent_stores_its_leaves_plain)
{
	uint64_t l1[8], after[8], rng = 11;
	unsigned n1 = level1_nodes(l1, 8), leaves0, packs0 = 0;
	const uint8_t *blk = dev_block(l1[0]);
	struct walk_result res;
	uint8_t *reach = calloc(MAXB, 1);
	struct op op = { OP_UPDATE, m.v[5].key, 17, 99 };
	uint64_t base = 0, freed_pack_blocks = 0;

	leaves0 = czfs_node_nritems(blk);
	for (unsigned i = 0; i < leaves0; i++) {
		uint64_t a, g;

		czfs_node_child(blk, i, &a, &g);
		if (czfs_leafpack_base(a) != base) {
			base = czfs_leafpack_base(a);
			packs0++;
			freed_pack_blocks += czfs_leafpack_nblocks(a);
		}
	}
	ta_mark(&e.ta);
	env_begin(&e);
	run_op(&e, &m, &op);
	env_commit(&e);
	/* the old root, the old parent and that parent's packs */
	ck_assert_uint_eq(e.ta.nfreed, 2 + freed_pack_blocks);
	ck_assert_uint_eq(level1_nodes(after, 8), n1);
	ck_assert_uint_eq(packed_children(dev_block(after[0])), 0);
	for (unsigned p = 1; p < n1; p++) {
		ck_assert_uint_eq(after[p], l1[p]);
		ck_assert_uint_eq(packed_children(dev_block(after[p])),
				  czfs_node_nritems(dev_block(after[p])));
	}
	walk_tree(&e, reach, &res);
	ck_assert_uint_eq(res.packed, bst.leaves - leaves0);
	free(reach);
	check_no_leaks(&e);
	env_reopen(&e);
	model_check_iter(&m, &e.t);
	model_check_lookups(&m, &e.t, &rng);
	ck_assert_uint_gt(packs0, 1);
}
END_TEST

/* A failed allocation while the parent's leaves are taken out of their
 * packs leaves the tree as it was. */
START_TEST(failed_unpack_changes_nothing)
{
	struct op op = { OP_UPDATE, m.v[5].key, 17, 99 };
	uint64_t l1[8], after[8];
	unsigned n1 = level1_nodes(l1, 8);

	env_begin(&e);
	ta_fail_from(&e.ta, 3);	/* the root copy, then two leaves */
	ck_assert_int_eq(apply_op(&e, &op), -ENOSPC);
	ta_fail_from(&e.ta, 0);
	env_commit(&e);
	ck_assert_uint_eq(level1_nodes(after, 8), n1);
	ck_assert_uint_eq(packed_children(dev_block(after[0])),
			  czfs_node_nritems(dev_block(after[0])));
	check_no_leaks(&e);
	env_reopen(&e);
	model_check_iter(&m, &e.t);
}
END_TEST

/* Random changes over many transactions: the tree stays exact and no
 * block leaks or is used twice, packs being freed as parents are copied. */
START_TEST(random_changes_on_a_packed_tree)
{
	static const struct mix mix = { 30, 30, 10, 80 };
	uint64_t rng = 0x1eaf;
	struct walk_result res;
	uint8_t *reach;

	for (unsigned tx = 0; tx < 40; tx++) {
		env_begin(&e);
		for (unsigned i = 0; i < 60; i++) {
			struct op op;

			random_op(&rng, &m, (enum profile)(i % P_COUNT), &mix,
				  NITEMS / 4, &op);
			run_op(&e, &m, &op);
		}
		env_commit(&e);
		if (tx % 10 == 9) {
			check_no_leaks(&e);
			env_reopen(&e);
		}
	}
	model_check_iter(&m, &e.t);
	model_check_lookups(&m, &e.t, &rng);
	reach = calloc(MAXB, 1);
	walk_tree(&e, reach, &res);
	free(reach);
	ck_assert_uint_lt(res.packed, bst.leaves);
}
END_TEST

/* Emptying most of the first parent: it does not merge with a neighbour
 * whose children are still packed, and the tree stays whole. */
START_TEST(packed_neighbours_are_not_merged)
{
	uint64_t l1[8];
	unsigned n1 = level1_nodes(l1, 8), kept = 0;
	struct czfs_key last;
	struct walk_result res;
	uint8_t *reach = calloc(MAXB, 1);

	{
		const uint8_t *p1 = dev_block(l1[1]);

		czfs_node_key(p1, 0, &last);	/* first key of parent 1 */
	}
	env_begin(&e);
	for (size_t i = 0; i < m.n; ) {
		struct op op = { OP_DELETE, m.v[i].key, 0, 0 };

		if (czfs_key_cmp(&m.v[i].key, &last) >= 0)
			break;
		if (i % 50 == 0) {
			i++;
			kept++;
			continue;
		}
		run_op(&e, &m, &op);
	}
	env_commit(&e);
	walk_tree(&e, reach, &res);
	free(reach);
	/* parent 1 and after still packed: not merged into parent 0 */
	ck_assert_uint_ge(res.packed, bst.leaves - czfs_node_nritems(dev_block(l1[0])));
	check_no_leaks(&e);
	env_reopen(&e);
	model_check_iter(&m, &e.t);
	ck_assert_uint_gt(kept, 0);
	ck_assert_uint_ge(n1, 2);
}
END_TEST

/* A pack whose payload is damaged fails its leaves, not the others. */
START_TEST(damaged_pack_fails_its_leaves_only)
{
	uint64_t l1[8], a, g;
	struct czfs_btree_path path;
	struct czfs_key k_bad, k_good;
	uint8_t *dev = czfs_bdev_mem_data(e.bdev);

	level1_nodes(l1, 8);
	czfs_node_child(dev_block(l1[0]), 0, &a, &g);
	czfs_node_key(dev_block(l1[0]), 0, &k_bad);
	czfs_node_key(dev_block(l1[1]), 0, &k_good);
	dev[czfs_leafpack_base(a) * CZFS_BLOCK_SIZE + 100] ^= 0x40;
	env_reopen(&e);
	ck_assert_int_eq(czfs_btree_descend(&e.t, &k_bad, &path), -EFSCORRUPTED);
	czfs_btree_path_release(&e.t, &path);
	ck_assert_int_eq(czfs_btree_descend(&e.t, &k_good, &path), 0);
	czfs_btree_path_release(&e.t, &path);
}
END_TEST

/* A change under a parent whose other pack is damaged: the readable leaves
 * are stored plain, the damaged pack stays, still allocated. */
START_TEST(damaged_sibling_pack_stays)
{
	uint64_t l1[8], a, last = 0, g;
	const uint8_t *p0;
	uint8_t *dev = czfs_bdev_mem_data(e.bdev);
	struct czfs_btree_path path;
	struct czfs_key k_bad;
	unsigned n, packed_after = 0, in_first = 0;
	struct op op;

	level1_nodes(l1, 8);
	p0 = dev_block(l1[0]);
	n = czfs_node_nritems(p0);
	czfs_node_child(p0, 0, &a, &g);
	czfs_node_key(p0, 0, &k_bad);
	for (unsigned i = 0; i < n; i++) {
		czfs_node_child(p0, i, &last, &g);
		in_first += czfs_leafpack_base(last) == czfs_leafpack_base(a);
	}
	ck_assert_uint_ne(czfs_leafpack_base(last), czfs_leafpack_base(a));
	dev[czfs_leafpack_base(a) * CZFS_BLOCK_SIZE + 100] ^= 0x40;
	env_reopen(&e);
	/* an item in the first parent's last leaf, outside the damaged pack */
	{
		const uint8_t *leaf;
		static uint8_t buf[CZFS_LEAFPACK_MAX * CZFS_BLOCK_SIZE];
		struct czfs_codec *codec = czfs_codec_new();
		unsigned cnt;

		ck_assert_int_eq(czfs_leafpack_decode(dev + czfs_leafpack_base(last) *
						      CZFS_BLOCK_SIZE, last, codec,
						      buf, &cnt), 0);
		leaf = buf + (size_t)czfs_leafpack_index(last) * CZFS_BLOCK_SIZE;
		czfs_node_key(leaf, 0, &op.key);
		czfs_codec_free(codec);
	}
	op.kind = OP_UPDATE;
	op.size = 9;
	op.salt = 4;
	env_begin(&e);
	ck_assert_int_eq(apply_op(&e, &op), 0);
	env_commit(&e);
	level1_nodes(l1, 8);
	packed_after = packed_children(dev_block(l1[0]));
	ck_assert_uint_eq(packed_after, in_first);
	ck_assert(e.ta.live[czfs_leafpack_base(a)]);
	ck_assert_int_eq(czfs_btree_descend(&e.t, &k_bad, &path), -EFSCORRUPTED);
	czfs_btree_path_release(&e.t, &path);
	ck_assert_int_eq(czfs_btree_descend(&e.t, &op.key, &path), 0);
	czfs_btree_path_release(&e.t, &path);
}
END_TEST

/* Pointers the decoder must refuse: an index past the pack's last leaf,
 * a pack pointer above level 1, a pack past the image's end. */
START_TEST(bad_pack_pointers_are_refused)
{
	uint64_t l1[8], a, b, g;
	uint8_t *dev = czfs_bdev_mem_data(e.bdev), *p0, *root;
	struct czfs_node *node;
	unsigned n, first = 0;

	level1_nodes(l1, 8);
	p0 = dev + l1[0] * CZFS_BLOCK_SIZE;
	root = dev + e.t.root_blkaddr * CZFS_BLOCK_SIZE;
	n = czfs_node_nritems(p0);
	czfs_node_child(p0, 0, &a, &g);
	for (unsigned i = 0; i < n; i++) {
		czfs_node_child(p0, i, &b, &g);
		first += czfs_leafpack_base(b) == czfs_leafpack_base(a);
	}
	ck_assert_uint_lt(first, CZFS_LEAFPACK_MAX);
	/* the first pack's leaf just past its last */
	ck_assert_int_eq(czfs_node_get(e.nc, czfs_leafpack_ptr(czfs_leafpack_base(a),
							       czfs_leafpack_nblocks(a),
							       first),
				       g, 0, &node), -EFSCORRUPTED);
	/* a pack past the device's end */
	ck_assert_int_eq(czfs_node_get(e.nc, czfs_leafpack_ptr(MAXB - 1, 2, 0),
				       g, 0, &node), -EFSCORRUPTED);
	/* a level-2 node pointing into a pack */
	czfs_node_set_child(root, 0, a, g);
	czfs_node_seal(root);
	ck_assert_int_ne(czfs_node_check(root, e.t.root_blkaddr, 0, 2, MAXB), 0);
}
END_TEST

/* Leaves that do not compress are written plain. */
START_TEST(incompressible_leaves_stay_plain)
{
	struct model r = { 0 };
	struct czfs_btree_build_stats st;
	struct env e2;

	env_init(&e2, MAXB, 1024);
	for (unsigned i = 0; i < 400; i++) {
		struct czfs_key k = { i, 1, 0 };

		model_set(&r, &k, 2000, i);	/* random bytes */
	}
	env_build_packed(&e2, &r, 2, CZFS_ALG_LZ4, &st);
	ck_assert_uint_eq(st.packs, 0);
	ck_assert_uint_eq(st.leaves, 200);
	check_no_leaks(&e2);
	model_check_iter(&r, &e2.t);
	model_free(&r);
	env_destroy(&e2);
}
END_TEST

/* zstd packs read back as lz4hc ones do. */
START_TEST(zstd_packs)
{
	uint64_t rng = 5;

	model_free(&m);
	env_destroy(&e);
	env_init(&e, MAXB, 4096);
	build(CZFS_ALG_ZSTD);
	ck_assert_uint_gt(bst.packs, 0);
	check_no_leaks(&e);
	env_reopen(&e);
	model_check_iter(&m, &e.t);
	model_check_lookups(&m, &e.t, &rng);
}
END_TEST

static Suite *leafpack_suite(void)
{
	Suite *s = suite_create("leafpack");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, builder_packs_every_parents_leaves);
	tcase_add_test(tc, cache_decodes_each_pack_once);
	tcase_add_test(tc, copying_a_parent_stores_its_leaves_plain);
	tcase_add_test(tc, failed_unpack_changes_nothing);
	tcase_add_test(tc, random_changes_on_a_packed_tree);
	tcase_add_test(tc, packed_neighbours_are_not_merged);
	tcase_add_test(tc, damaged_pack_fails_its_leaves_only);
	tcase_add_test(tc, damaged_sibling_pack_stays);
	tcase_add_test(tc, bad_pack_pointers_are_refused);
	tcase_add_test(tc, incompressible_leaves_stay_plain);
	tcase_add_test(tc, zstd_packs);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(leafpack_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
