// SPDX-License-Identifier: MIT
/*
 * Reading the tree: descend from the root to a leaf, step through leaves
 * with a path of (node, slot) per level, look up and iterate.
 *
 * A path descends exactly root_level + 1 levels and each node read must
 * have the level its parent implies, so a damaged tree that points back
 * at itself fails a level check instead of looping.
 */
#include "config.h"

#include <string.h>

#include "btree_int.h"
#include "log.h"
#include "util.h"

static int child_bad(const struct czfs_node *parent, unsigned slot,
		     uint64_t child, const char *what)
{
	czfs_err("node %llu: child %u (node %llu) %s",
		 (unsigned long long)parent->blkaddr, slot,
		 (unsigned long long)child, what);
	return -EFSCORRUPTED;
}

/* The child's keys must lie in [its pointer key, the next pointer key). */
static int check_child_keys(const struct czfs_node *parent, unsigned slot,
			    const struct czfs_node *child)
{
	unsigned n = czfs_node_nritems(child->data);
	struct czfs_key pk, ck;

	if (!n)
		return child_bad(parent, slot, child->blkaddr, "is empty");
	czfs_node_key(parent->data, slot, &pk);
	czfs_node_key(child->data, 0, &ck);
	if (czfs_key_cmp(&ck, &pk) < 0)
		return child_bad(parent, slot, child->blkaddr,
				 "starts below its pointer key");
	if (slot + 1 < czfs_node_nritems(parent->data)) {
		czfs_node_key(parent->data, slot + 1, &pk);
		czfs_node_key(child->data, n - 1, &ck);
		if (czfs_key_cmp(&ck, &pk) >= 0)
			return child_bad(parent, slot, child->blkaddr,
					 "ends at or above the next pointer key");
	}
	return 0;
}

int czfs_btree_read_child(struct czfs_btree *t, const struct czfs_node *parent,
			  unsigned slot, struct czfs_node **out)
{
	unsigned level = czfs_node_level(parent->data) - 1;
	uint64_t blkaddr, gen;
	struct czfs_node *child;
	int err;

	czfs_node_child(parent->data, slot, &blkaddr, &gen);
	err = czfs_node_get(t->nc, blkaddr, gen, (int)level, &child);
	if (err)
		return err;
	err = check_child_keys(parent, slot, child);
	if (err) {
		czfs_node_put(t->nc, child);
		return err;
	}
	*out = child;
	return 0;
}

int czfs_btree_descend(struct czfs_btree *t, const struct czfs_key *key,
		       struct czfs_btree_path *path)
{
	unsigned level = t->root_level;
	struct czfs_node *node;
	bool exact;
	int err;

	memset(path, 0, sizeof(*path));
	if (level >= CZFS_MAX_LEVEL) {
		czfs_err("btree: root level %u too big", level);
		return -EFSCORRUPTED;
	}
	err = czfs_node_get(t->nc, t->root_blkaddr, t->root_generation,
			    (int)level, &node);
	if (err)
		return err;
	path->levels = level + 1;
	path->nodes[level] = node;
	while (level > 0) {
		unsigned slot = czfs_node_child_slot(node->data, key);

		path->slots[level] = slot;
		err = czfs_btree_read_child(t, node, slot, &node);
		if (err)
			return err;
		path->nodes[--level] = node;
	}
	path->slots[0] = czfs_leaf_lower_bound(node->data, key, &exact);
	return exact ? 0 : 1;
}

/*
 * Move to slot 0 of the next leaf.  Returns 0, 1 when the path is at the
 * last leaf (it then stays at its end), or -errno.
 */
static int next_leaf(struct czfs_btree *t, struct czfs_btree_path *path)
{
	unsigned level;
	int err;

	for (level = 1; level < path->levels; level++) {
		if (path->slots[level] + 1 <
		    czfs_node_nritems(path->nodes[level]->data))
			break;
	}
	if (level >= path->levels)
		return 1;
	path->slots[level]++;
	for (; level > 0; level--) {
		struct czfs_node *child;

		err = czfs_btree_read_child(t, path->nodes[level],
					    path->slots[level], &child);
		if (err)
			return err;
		czfs_node_put(t->nc, path->nodes[level - 1]);
		path->nodes[level - 1] = child;
		path->slots[level - 1] = 0;
	}
	return 0;
}

int czfs_btree_search(struct czfs_btree *t, const struct czfs_key *key,
		      struct czfs_btree_path *path)
{
	int ret = czfs_btree_descend(t, key, path);

	if (ret != 1 ||
	    path->slots[0] < czfs_node_nritems(path->nodes[0]->data))
		return ret;
	ret = next_leaf(t, path);
	if (ret < 0)
		return ret;
	return ret ? 2 : 1;
}

int czfs_btree_next(struct czfs_btree *t, struct czfs_btree_path *path)
{
	unsigned n;

	if (!path->levels)
		return -EINVAL;
	n = czfs_node_nritems(path->nodes[0]->data);
	if (path->slots[0] + 1 < n) {
		path->slots[0]++;
		return 0;
	}
	path->slots[0] = n;
	return next_leaf(t, path);
}

void czfs_btree_item(const struct czfs_btree_path *path, struct czfs_key *key,
		     const void **data, unsigned *size)
{
	const void *leaf = path->nodes[0]->data;

	czfs_node_key(leaf, path->slots[0], key);
	*data = czfs_leaf_data(leaf, path->slots[0], size);
}

void czfs_btree_path_release(struct czfs_btree *t, struct czfs_btree_path *path)
{
	for (unsigned i = 0; i < CZFS_MAX_LEVEL; i++) {
		czfs_node_put(t->nc, path->nodes[i]);
		path->nodes[i] = NULL;
	}
	path->levels = 0;
}

/* Copy the value at slot of leaf into buf; its size. */
static int leaf_value(const void *leaf, unsigned slot, void *buf, unsigned cap)
{
	unsigned size;
	const void *data = czfs_leaf_data(leaf, slot, &size);

	if (size && cap)
		memcpy(buf, data, MIN(size, cap));
	return (int)size;
}

/* Whether key is inside the range of leaf (then it is there or nowhere). */
static bool in_leaf(const struct czfs_node *leaf, const struct czfs_key *key)
{
	unsigned n = leaf ? czfs_node_nritems(leaf->data) : 0;
	struct czfs_key k;

	if (!n)
		return false;
	czfs_node_key(leaf->data, 0, &k);
	if (czfs_key_cmp(key, &k) < 0)
		return false;
	czfs_node_key(leaf->data, n - 1, &k);
	return czfs_key_cmp(key, &k) <= 0;
}

/* The hint's leaf whose range holds key, or NULL. */
static const struct czfs_node *hint_leaf(const struct czfs_btree_hint *h,
					 const struct czfs_key *key)
{
	for (unsigned i = 0; h && i < CZFS_BTREE_HINT_LEAVES; i++)
		if (in_leaf(h->leaf[i], key))
			return h->leaf[i];
	return NULL;
}

int czfs_btree_lookup_near(struct czfs_btree *t, const struct czfs_key *key,
			   void *buf, unsigned cap, struct czfs_btree_hint *h)
{
	const struct czfs_node *leaf = hint_leaf(h, key);
	struct czfs_btree_path path;
	unsigned slot;
	bool exact;
	int ret;

	if (leaf) {
		slot = czfs_leaf_lower_bound(leaf->data, key, &exact);
		return exact ? leaf_value(leaf->data, slot, buf, cap) : -ENOENT;
	}
	ret = czfs_btree_descend(t, key, &path);
	if (ret == 0)
		ret = leaf_value(path.nodes[0]->data, path.slots[0], buf, cap);
	else if (ret == 1)
		ret = -ENOENT;
	if (h && path.levels && path.nodes[0]) {	/* the hint takes the leaf */
		czfs_node_put(t->nc, h->leaf[h->next]);
		h->leaf[h->next] = path.nodes[0];
		h->next = (h->next + 1) % CZFS_BTREE_HINT_LEAVES;
		path.nodes[0] = NULL;
	}
	czfs_btree_path_release(t, &path);
	return ret;
}

int czfs_btree_lookup(struct czfs_btree *t, const struct czfs_key *key,
		      void *buf, unsigned cap)
{
	return czfs_btree_lookup_near(t, key, buf, cap, NULL);
}

void czfs_btree_hint_release(struct czfs_btree *t, struct czfs_btree_hint *h)
{
	for (unsigned i = 0; i < CZFS_BTREE_HINT_LEAVES; i++) {
		czfs_node_put(t->nc, h->leaf[i]);
		h->leaf[i] = NULL;
	}
}

int czfs_btree_iterate(struct czfs_btree *t, const struct czfs_key *first,
		       const struct czfs_key *last, czfs_btree_iter_fn fn,
		       void *ctx)
{
	struct czfs_btree_path path;
	struct czfs_key key;
	const void *data;
	unsigned size;
	int ret = czfs_btree_search(t, first, &path);
	bool positioned = ret == 0 || ret == 1;

	if (ret > 0)
		ret = 0;
	while (positioned) {
		czfs_btree_item(&path, &key, &data, &size);
		if (czfs_key_cmp(&key, last) > 0)
			break;
		ret = fn(ctx, &key, data, size);
		if (ret)
			break;
		ret = czfs_btree_next(t, &path);
		if (ret) {
			ret = ret > 0 ? 0 : ret;	/* 1: the end */
			break;
		}
	}
	czfs_btree_path_release(t, &path);
	return ret;
}
