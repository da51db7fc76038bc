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

int czfs_btree_lookup(struct czfs_btree *t, const struct czfs_key *key,
		      void *buf, unsigned cap)
{
	struct czfs_btree_path path;
	struct czfs_key found;
	const void *data;
	unsigned size;
	int ret = czfs_btree_descend(t, key, &path);

	if (ret == 0) {
		czfs_btree_item(&path, &found, &data, &size);
		if (size && cap)
			memcpy(buf, data, MIN(size, cap));
		ret = (int)size;
	} else if (ret == 1) {
		ret = -ENOENT;
	}
	czfs_btree_path_release(t, &path);
	return ret;
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
