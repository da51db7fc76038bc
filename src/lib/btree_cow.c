// SPDX-License-Identifier: MIT
/*
 * Changing the tree copy-on-write.
 *
 * A transaction builds generation G.  A change first copies every node on
 * its path that was not already copied in this transaction (top-down: the
 * copy gets a new block, its parent is pointed at it, the old block goes
 * back to the allocator), then edits the copies in place.  Nothing
 * reachable from the last commit is ever written.
 *
 * Every step that can fail comes before the first edit: the path copy
 * (each step leaves a valid tree), the blocks a split needs, the
 * neighbours a merge reads.  So a failed change leaves the tree holding
 * exactly the items it held before.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "btree_int.h"
#include "util.h"

/* Blocks written per request at commit. */
#define COMMIT_RUN_BLOCKS	64

void czfs_btree_begin(struct czfs_btree *t, struct czfs_allocator *alloc,
		      struct czfs_bdev *bdev, uint64_t gen)
{
	t->alloc = alloc;
	t->bdev = bdev;
	t->trans_gen = gen;
}

static int check_change(const struct czfs_btree *t, const struct czfs_key *key,
			unsigned size)
{
	if (!t->trans_gen)
		return -EROFS;
	if (size > CZFS_MAX_ITEM_SIZE)
		return -E2BIG;
	if (key->offset > CZFS_KEY_OFFSET_MASK)
		return -EINVAL;
	return 0;
}

/* ---- copying the path --------------------------------------------------- */

static bool needs_copy(const struct czfs_btree *t, const struct czfs_node *node)
{
	/* A clean node of generation G was committed: it is on disk too. */
	return czfs_node_generation(node->data) != t->trans_gen ||
	       !czfs_node_is_dirty(node);
}

/* Point the parent of level (or the tree) at node. */
static void relink(struct czfs_btree *t, struct czfs_btree_path *path,
		   unsigned level, const struct czfs_node *node)
{
	if (level == t->root_level) {
		t->root_blkaddr = node->blkaddr;
		t->root_generation = t->trans_gen;
		return;
	}
	czfs_node_set_child(path->nodes[level + 1]->data,
			    path->slots[level + 1], node->blkaddr,
			    t->trans_gen);
}

static int cow_node(struct czfs_btree *t, struct czfs_btree_path *path,
		    unsigned level)
{
	struct czfs_node *old = path->nodes[level], *copy;
	struct czfs_unpack u = { .n = 0 };
	int err;

	if (!needs_copy(t, old))
		return 0;
	if (czfs_leafpack_has_packed(old)) {
		err = czfs_unpack_prepare(t, old, &u);
		if (err)
			return err;
	}
	err = czfs_btree_new_node(t, &copy);
	if (err) {
		czfs_unpack_release(t, &u);
		return err;
	}
	memcpy(copy->data, old->data, CZFS_BLOCK_SIZE);
	czfs_node_set_addr(copy->data, copy->blkaddr, t->trans_gen);
	relink(t, path, level, copy);
	czfs_btree_retire(t, old);
	czfs_node_put(t->nc, old);
	path->nodes[level] = copy;
	czfs_unpack_apply(t, path, copy, &u);
	return 0;
}

static int cow_path(struct czfs_btree *t, struct czfs_btree_path *path)
{
	for (int level = (int)t->root_level; level >= 0; level--) {
		int err = cow_node(t, path, (unsigned)level);

		if (err)
			return err;
	}
	return 0;
}

/* A new smallest key entered the leaf: lower the pointer keys above it. */
static void lower_keys(struct czfs_btree *t, struct czfs_btree_path *path,
		       const struct czfs_key *key)
{
	struct czfs_key pk;

	for (unsigned level = 1; level <= t->root_level; level++) {
		void *node = path->nodes[level]->data;

		czfs_node_key(node, path->slots[level], &pk);
		if (czfs_key_cmp(key, &pk) >= 0)
			break;
		czfs_node_set_ptr_key(node, path->slots[level], key);
	}
}

/* ---- blocks for splits, taken before any edit --------------------------- */

struct prealloc {
	struct czfs_node *nodes[CZFS_MAX_LEVEL + 2];
	unsigned n, used;
};

static void prealloc_release(struct czfs_btree *t, struct prealloc *pa,
			     bool give_back)
{
	for (unsigned i = 0; i < pa->n; i++) {
		if (give_back)
			czfs_btree_retire(t, pa->nodes[i]);
		czfs_node_put(t->nc, pa->nodes[i]);
	}
	pa->n = 0;
}

static int prealloc_get(struct czfs_btree *t, unsigned n, struct prealloc *pa)
{
	pa->n = pa->used = 0;
	while (pa->n < n) {
		int err = czfs_btree_new_node(t, &pa->nodes[pa->n]);

		if (err) {
			prealloc_release(t, pa, true);
			return err;
		}
		pa->n++;
	}
	return 0;
}

static struct czfs_node *prealloc_take(struct czfs_btree *t,
				       struct prealloc *pa, unsigned level)
{
	struct czfs_node *node = pa->nodes[pa->used++];

	czfs_node_init(node->data, node->blkaddr, t->trans_gen, level);
	return node;
}

/*
 * New nodes needed when the leaf splits into 1 + extra leaves: each full
 * parent splits in two, and a root that splits gets a new root above it.
 */
static int split_blocks(const struct czfs_btree *t,
			const struct czfs_btree_path *path, unsigned extra)
{
	unsigned need = extra, carry = extra;

	for (unsigned level = 1; level <= t->root_level && carry; level++) {
		if (czfs_node_nritems(path->nodes[level]->data) + carry >
		    CZFS_NODE_MAX_PTRS) {
			need++;
			carry = 1;
		} else {
			carry = 0;
		}
	}
	if (carry) {
		if (t->root_level + 1 >= CZFS_MAX_LEVEL)
			return -ENOSPC;
		need++;
	}
	return (int)need;
}

/* ---- splitting ---------------------------------------------------------- */

static void grow_root(struct czfs_btree *t, struct czfs_btree_path *path,
		      const struct czfs_node_ptr *ptrs, unsigned k,
		      struct prealloc *pa)
{
	struct czfs_node *old = path->nodes[t->root_level];
	struct czfs_node *root = prealloc_take(t, pa, t->root_level + 1);
	struct czfs_node_ptr first;
	struct czfs_key key;

	czfs_node_key(old->data, 0, &key);
	czfs_node_make_ptr(&first, &key, old->blkaddr, t->trans_gen);
	czfs_node_insert_ptrs(root->data, 0, &first, 1);
	czfs_node_insert_ptrs(root->data, 1, ptrs, k);
	t->root_blkaddr = root->blkaddr;
	t->root_generation = t->trans_gen;
	t->root_level++;
}

/* Insert k pointers at pos into a full node: halve it into a new right
 * sibling, whose pointer goes to *carry. */
static void split_internal(struct czfs_btree *t, struct czfs_node *node,
			   unsigned pos, const struct czfs_node_ptr *ptrs,
			   unsigned k, struct prealloc *pa,
			   struct czfs_node_ptr *carry)
{
	struct czfs_node_ptr all[CZFS_NODE_MAX_PTRS + 2];
	unsigned level = czfs_node_level(node->data);
	unsigned n = czfs_node_nritems(node->data), total = n + k;
	unsigned left = total / 2;
	struct czfs_node *right = prealloc_take(t, pa, level);
	struct czfs_key key;

	czfs_node_read_ptrs(node->data, 0, pos, all);
	memcpy(all + pos, ptrs, k * CZFS_PTR_SIZE);
	czfs_node_read_ptrs(node->data, pos, n - pos, all + pos + k);
	czfs_node_init(node->data, node->blkaddr, t->trans_gen, level);
	czfs_node_insert_ptrs(node->data, 0, all, left);
	czfs_node_insert_ptrs(right->data, 0, all + left, total - left);
	czfs_node_key(right->data, 0, &key);
	czfs_node_make_ptr(carry, &key, right->blkaddr, t->trans_gen);
}

/* Add the pointers to new siblings of path->nodes[level - 1] upward. */
static void insert_up(struct czfs_btree *t, struct czfs_btree_path *path,
		      unsigned level, const struct czfs_node_ptr *ptrs,
		      unsigned k, struct prealloc *pa)
{
	struct czfs_node_ptr carry;

	while (k) {
		struct czfs_node *node;
		unsigned pos;

		if (level > t->root_level) {
			grow_root(t, path, ptrs, k, pa);
			return;
		}
		node = path->nodes[level];
		pos = path->slots[level] + 1;
		if (czfs_node_nritems(node->data) + k <= CZFS_NODE_MAX_PTRS) {
			czfs_node_insert_ptrs(node->data, pos, ptrs, k);
			return;
		}
		split_internal(t, node, pos, ptrs, k, pa, &carry);
		ptrs = &carry;
		k = 1;
		level++;
	}
}

struct seq_item {
	struct czfs_key key;
	const void *data;
	unsigned size;
};

/* The leaf's items with item inserted at slot, or replacing slot. */
static unsigned build_seq(const void *leaf, unsigned slot, bool replace,
			  const struct seq_item *item, struct seq_item *seq)
{
	unsigned n = czfs_node_nritems(leaf), m = 0;

	for (unsigned i = 0; i < n; i++) {
		if (i == slot) {
			seq[m++] = *item;
			if (replace)
				continue;
		}
		czfs_node_key(leaf, i, &seq[m].key);
		seq[m].data = czfs_leaf_data(leaf, i, &seq[m].size);
		m++;
	}
	if (slot == n)
		seq[m++] = *item;
	return m;
}

/*
 * Cut seq (m items, the new one at j) into runs that each fit a leaf;
 * returns the number of runs, run r being [cut[r], cut[r + 1]).  A new
 * item past the leaf's last (append: a file written in order, inodes
 * made one after another) starts the new leaf alone, so that appends
 * leave full leaves behind, not half-full ones, as btrfs splits; else two
 * runs split near the middle by bytes when some cut works; otherwise the
 * new item goes alone between the others, which fit one leaf before.
 */
static unsigned plan_runs(const struct seq_item *seq, unsigned m, unsigned j,
			  bool append, unsigned cut[4])
{
	unsigned total = 0, prefix = 0, best = 0, best_diff = ~0u;

	cut[0] = 0;
	if (append && j == m - 1 && j > 0) {	/* the others fit one leaf */
		cut[1] = j;
		cut[2] = m;
		return 2;
	}
	for (unsigned i = 0; i < m; i++)
		total += CZFS_ITEM_HDR_SIZE + seq[i].size;
	cut[0] = 0;
	for (unsigned p = 1; p < m; p++) {
		unsigned diff;

		prefix += CZFS_ITEM_HDR_SIZE + seq[p - 1].size;
		if (prefix > CZFS_LEAF_SPACE || total - prefix > CZFS_LEAF_SPACE)
			continue;
		diff = prefix * 2 > total ? prefix * 2 - total : total - prefix * 2;
		if (diff < best_diff) {
			best = p;
			best_diff = diff;
		}
	}
	if (best) {
		cut[1] = best;
		cut[2] = m;
		return 2;
	}
	cut[1] = j;
	cut[2] = j + 1;
	cut[3] = m;
	return 3;
}

static void fill_leaf(void *leaf, const struct seq_item *seq, unsigned from,
		      unsigned to)
{
	for (unsigned i = from; i < to; i++)
		czfs_leaf_insert(leaf, i - from, &seq[i].key, seq[i].data,
				 seq[i].size);
}

static int leaf_split(struct czfs_btree *t, struct czfs_btree_path *path,
		      const struct seq_item *item, bool replace)
{
	struct czfs_node *leaf = path->nodes[0];
	struct seq_item seq[CZFS_LEAF_MAX_ITEMS + 1];
	uint8_t tmp[CZFS_BLOCK_SIZE] __attribute__((aligned(8)));
	struct czfs_node_ptr ptrs[2];
	unsigned cut[4], runs, m;
	struct prealloc pa;
	int need;

	m = build_seq(leaf->data, path->slots[0], replace, item, seq);
	runs = plan_runs(seq, m, path->slots[0], !replace, cut);
	need = split_blocks(t, path, runs - 1);
	if (need < 0)
		return need;
	need = prealloc_get(t, (unsigned)need, &pa);
	if (need < 0)
		return need;
	if (!replace)
		lower_keys(t, path, &item->key);
	/* seq points into the leaf: fill the new leaves before rewriting it. */
	for (unsigned r = 1; r < runs; r++) {
		struct czfs_node *sib = prealloc_take(t, &pa, 0);

		fill_leaf(sib->data, seq, cut[r], cut[r + 1]);
		czfs_node_make_ptr(&ptrs[r - 1], &seq[cut[r]].key,
				   sib->blkaddr, t->trans_gen);
	}
	czfs_node_init(tmp, leaf->blkaddr, t->trans_gen, 0);
	fill_leaf(tmp, seq, cut[0], cut[1]);
	memcpy(leaf->data, tmp, CZFS_BLOCK_SIZE);
	insert_up(t, path, 1, ptrs, runs - 1, &pa);
	prealloc_release(t, &pa, false);
	return 0;
}

static int leaf_store(struct czfs_btree *t, struct czfs_btree_path *path,
		      const struct seq_item *item, bool replace)
{
	void *leaf = path->nodes[0]->data;
	unsigned slot = path->slots[0], room = czfs_leaf_free_space(leaf);
	unsigned old = 0;
	void *dst;

	/* A new item needs its header too; a replaced one reuses its own
	 * header and data. */
	if (replace)
		czfs_leaf_data(leaf, slot, &old);
	if (replace ? item->size > old + room :
		      CZFS_ITEM_HDR_SIZE + item->size > room)
		return leaf_split(t, path, item, replace);
	if (!replace) {
		lower_keys(t, path, &item->key);
		czfs_leaf_insert(leaf, slot, &item->key, item->data,
				 item->size);
		return 0;
	}
	dst = czfs_leaf_resize(leaf, slot, item->size);
	if (item->size)
		memcpy(dst, item->data, item->size);
	return 0;
}

enum store_mode { STORE_INSERT, STORE_UPDATE, STORE_PUT };

static int shrink_item(struct czfs_btree *t, struct czfs_btree_path *path,
		       const struct seq_item *item, unsigned old);

static int store(struct czfs_btree *t, const struct czfs_key *key,
		 const void *data, unsigned size, enum store_mode mode)
{
	struct seq_item item = { .key = *key, .data = data, .size = size };
	struct czfs_btree_path path;
	int ret = check_change(t, key, size);
	unsigned old = 0;
	bool replace;

	if (ret)
		return ret;
	ret = czfs_btree_descend(t, key, &path);
	if (ret < 0)
		goto out;
	if (ret == 0 && mode == STORE_INSERT) {
		ret = -EEXIST;
		goto out;
	}
	if (ret == 1 && mode == STORE_UPDATE) {
		ret = -ENOENT;
		goto out;
	}
	replace = ret == 0;
	ret = cow_path(t, &path);
	if (!ret && replace)
		czfs_leaf_data(path.nodes[0]->data, path.slots[0], &old);
	if (!ret && replace && size < old)
		ret = shrink_item(t, &path, &item, old);
	else if (!ret)
		ret = leaf_store(t, &path, &item, replace);
out:
	czfs_btree_path_release(t, &path);
	return ret;
}

int czfs_btree_insert(struct czfs_btree *t, const struct czfs_key *key,
		      const void *data, unsigned size)
{
	return store(t, key, data, size, STORE_INSERT);
}

int czfs_btree_update(struct czfs_btree *t, const struct czfs_key *key,
		      const void *data, unsigned size)
{
	return store(t, key, data, size, STORE_UPDATE);
}

int czfs_btree_put(struct czfs_btree *t, const struct czfs_key *key,
		   const void *data, unsigned size)
{
	return store(t, key, data, size, STORE_PUT);
}

/* ---- deleting ----------------------------------------------------------- */

enum merge_action { MERGE_NONE, MERGE_REMOVE, MERGE_LEFT, MERGE_RIGHT };

/* What happens at each level below the root once the item is gone. */
struct delete_plan {
	enum merge_action action[CZFS_MAX_LEVEL];
	struct czfs_node *nb[CZFS_MAX_LEVEL];	/* neighbour merged in */
};

/* Fullness in a node's own unit: bytes for leaves, pointers above. */
static unsigned node_fill(const void *blk)
{
	return czfs_node_level(blk) ? czfs_node_nritems(blk) :
				      czfs_leaf_used(blk);
}

static unsigned node_cap(unsigned level)
{
	return level ? CZFS_NODE_MAX_PTRS : CZFS_LEAF_SPACE;
}

/* Read child slot of parent as a merge partner if both fit in one node. */
static int try_neighbour(struct czfs_btree *t, const struct czfs_node *parent,
			 unsigned slot, unsigned fill, unsigned cap,
			 struct czfs_node **out)
{
	struct czfs_node *nb;
	int err = czfs_btree_read_child(t, parent, slot, &nb);

	*out = NULL;
	if (err)
		return err;
	/* Packed children stay under the node mkfs made (see unpack). */
	if (fill + node_fill(nb->data) <= cap && !czfs_leafpack_has_packed(nb))
		*out = nb;
	else
		czfs_node_put(t->nc, nb);
	return 0;
}

/* A node under half full looks for a neighbour to merge with. */
static int pick_merge(struct czfs_btree *t, struct czfs_btree_path *path,
		      unsigned level, unsigned fill, struct delete_plan *plan)
{
	const struct czfs_node *parent = path->nodes[level + 1];
	unsigned ps = path->slots[level + 1], cap = node_cap(level);
	int err;

	if (fill * 2 >= cap)
		return 0;
	if (ps > 0) {
		err = try_neighbour(t, parent, ps - 1, fill, cap,
				    &plan->nb[level]);
		if (err || plan->nb[level]) {
			plan->action[level] = MERGE_LEFT;
			return err;
		}
	}
	if (ps + 1 < czfs_node_nritems(parent->data)) {
		err = try_neighbour(t, parent, ps + 1, fill, cap,
				    &plan->nb[level]);
		if (err || plan->nb[level]) {
			plan->action[level] = MERGE_RIGHT;
			return err;
		}
	}
	return 0;
}

/*
 * The merges a leaf of n items filling fill bytes (once the change is
 * made) brings about, level by level: a leaf under half full merges with
 * a neighbour it fits beside, which takes a pointer from its parent, which
 * may then merge too.  Reads the neighbours: before any edit.
 */
static int plan_merges(struct czfs_btree *t, struct czfs_btree_path *path,
		       unsigned fill, unsigned n, struct delete_plan *plan)
{
	for (unsigned level = 0; level < t->root_level; level++) {
		if (n == 0) {
			plan->action[level] = MERGE_REMOVE;
		} else {
			int err = pick_merge(t, path, level, fill, plan);

			if (err || plan->action[level] == MERGE_NONE)
				return err;
		}
		/* Either way the parent loses one pointer. */
		n = czfs_node_nritems(path->nodes[level + 1]->data) - 1;
		fill = n;
	}
	return 0;
}

static int plan_delete(struct czfs_btree *t, struct czfs_btree_path *path,
		       struct delete_plan *plan)
{
	const void *leaf = path->nodes[0]->data;
	unsigned size;

	czfs_leaf_data(leaf, path->slots[0], &size);
	return plan_merges(t, path,
			   czfs_leaf_used(leaf) - CZFS_ITEM_HDR_SIZE - size,
			   czfs_node_nritems(leaf) - 1, plan);
}

static void merge_left(struct czfs_btree *t, struct czfs_btree_path *path,
		       unsigned level, struct czfs_node *nb)
{
	struct czfs_node *node = path->nodes[level];
	void *parent = path->nodes[level + 1]->data;
	unsigned ps = path->slots[level + 1];
	uint8_t tmp[CZFS_BLOCK_SIZE] __attribute__((aligned(8)));
	struct czfs_key key;

	czfs_node_init(tmp, node->blkaddr, t->trans_gen, level);
	czfs_node_append(tmp, nb->data);
	czfs_node_append(tmp, node->data);
	memcpy(node->data, tmp, CZFS_BLOCK_SIZE);
	/* The merged node takes the neighbour's place and lower bound. */
	czfs_node_key(parent, ps - 1, &key);
	czfs_node_set_ptr_key(parent, ps, &key);
	czfs_node_remove_ptr(parent, ps - 1);
	path->slots[level + 1] = ps - 1;
	czfs_btree_retire(t, nb);
}

static void merge_right(struct czfs_btree *t, struct czfs_btree_path *path,
			unsigned level, struct czfs_node *nb)
{
	czfs_node_append(path->nodes[level]->data, nb->data);
	czfs_node_remove_ptr(path->nodes[level + 1]->data,
			     path->slots[level + 1] + 1);
	czfs_btree_retire(t, nb);
}

/* An internal root left with one child hands the root to it. */
static void shrink_root(struct czfs_btree *t, struct czfs_btree_path *path)
{
	struct czfs_node *root = path->nodes[t->root_level];
	unsigned n = czfs_node_nritems(root->data);
	uint64_t blkaddr, gen;

	if (!t->root_level || n > 1)
		return;
	if (!n) {
		czfs_node_init(root->data, root->blkaddr, t->trans_gen, 0);
		t->root_level = 0;
		return;
	}
	czfs_node_child(root->data, 0, &blkaddr, &gen);
	czfs_btree_retire(t, root);
	t->root_blkaddr = blkaddr;
	t->root_generation = gen;
	t->root_level--;
}

static void exec_merges(struct czfs_btree *t, struct czfs_btree_path *path,
			const struct delete_plan *plan)
{
	for (unsigned level = 0; level < t->root_level; level++) {
		switch (plan->action[level]) {
		case MERGE_NONE:
			return;
		case MERGE_REMOVE:
			czfs_node_remove_ptr(path->nodes[level + 1]->data,
					     path->slots[level + 1]);
			czfs_btree_retire(t, path->nodes[level]);
			break;
		case MERGE_LEFT:
			merge_left(t, path, level, plan->nb[level]);
			break;
		case MERGE_RIGHT:
			merge_right(t, path, level, plan->nb[level]);
			break;
		}
	}
	shrink_root(t, path);
}

static void exec_delete(struct czfs_btree *t, struct czfs_btree_path *path,
			const struct delete_plan *plan)
{
	czfs_leaf_remove(path->nodes[0]->data, path->slots[0]);
	exec_merges(t, path, plan);
}

/*
 * An item replaced by a smaller one, as a delete does: its leaf merges
 * when under half full (a cluster item that shrinks back from block-
 * mapped to compressed, many times over, would leave leaves a sixth
 * full).  Merges planned first, so a failed read changes nothing.
 */
static int shrink_item(struct czfs_btree *t, struct czfs_btree_path *path,
		       const struct seq_item *item, unsigned old)
{
	struct delete_plan plan = { { MERGE_NONE } };
	const void *leaf = path->nodes[0]->data;
	int err = plan_merges(t, path, czfs_leaf_used(leaf) - (old - item->size),
			      czfs_node_nritems(leaf), &plan);

	if (!err) {
		err = leaf_store(t, path, item, true);	/* in place: never splits */
		exec_merges(t, path, &plan);
	}
	for (unsigned i = 0; i < CZFS_MAX_LEVEL; i++)
		czfs_node_put(t->nc, plan.nb[i]);
	return err;
}

int czfs_btree_delete(struct czfs_btree *t, const struct czfs_key *key)
{
	struct delete_plan plan = { { MERGE_NONE } };
	struct czfs_btree_path path;
	int ret = check_change(t, key, 0);

	if (ret)
		return ret;
	ret = czfs_btree_descend(t, key, &path);
	if (ret == 1)
		ret = -ENOENT;
	if (!ret)
		ret = cow_path(t, &path);
	if (!ret)
		ret = plan_delete(t, &path, &plan);
	if (!ret)
		exec_delete(t, &path, &plan);
	for (unsigned i = 0; i < CZFS_MAX_LEVEL; i++)
		czfs_node_put(t->nc, plan.nb[i]);
	czfs_btree_path_release(t, &path);
	return ret;
}

/* ---- commit ------------------------------------------------------------- */

static int cmp_level_addr(const void *a, const void *b)
{
	const struct czfs_node *x = *(struct czfs_node *const *)a;
	const struct czfs_node *y = *(struct czfs_node *const *)b;
	unsigned lx = czfs_node_level(x->data), ly = czfs_node_level(y->data);

	if (lx != ly)
		return lx < ly ? -1 : 1;
	return (x->blkaddr > y->blkaddr) - (x->blkaddr < y->blkaddr);
}

/* Children before parents; blocks with consecutive addresses go out in
 * one write. */
static int write_nodes(struct czfs_btree *t, struct czfs_node **arr, size_t n)
{
	struct czfs_blkwriter w;
	int err;

	qsort(arr, n, sizeof(*arr), cmp_level_addr);
	/* no bigger than the commit: an fsync's few nodes need no fresh
	 * 256 KiB mapping (an mmap, faults and a munmap at each one) */
	err = czfs_blkwriter_init(&w, t->bdev, (unsigned)MIN(n, COMMIT_RUN_BLOCKS));
	for (size_t i = 0; i < n && !err; i++) {
		czfs_node_seal(arr[i]->data);
		err = czfs_blkwriter_add(&w, arr[i]->blkaddr, arr[i]->data);
	}
	if (!err)
		err = czfs_blkwriter_flush(&w);
	czfs_blkwriter_free(&w);
	return err;
}

int czfs_btree_commit(struct czfs_btree *t)
{
	struct czfs_node **arr;
	size_t n;
	int err;

	if (t->dirty_list) {
		err = czfs_nodecache_dirty_array(t->dirty_list, &arr, &n);
		if (err)
			return err;
		err = write_nodes(t, arr, n);
		free(arr);
		/* On failure every node stays dirty: a retry writes them all. */
		if (err)
			return err;
		czfs_nodecache_clean(t->nc, &t->dirty_list);
	}
	t->trans_gen = 0;
	return 0;
}
