// SPDX-License-Identifier: MIT
/*
 * Every node of the B-tree, depth first.  The node cache checks each node
 * as it is read (checksum, magic, address, owner, level, generation,
 * item layout, key order); the walk adds what needs the parent: every key
 * of a node lies in the range its parent gives it.  A node that fails is
 * reported and its subtree skipped; the walk goes on with its siblings,
 * so one bad leaf hides only the items it held.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "fsck.h"
#include "util.h"

/* Keys of a subtree: [lo, hi), no upper bound when hi is NULL. */
struct walk_range {
	struct czfs_key lo;
	const struct czfs_key *hi;
};

static void key_str(const struct czfs_key *k, char *buf, size_t len)
{
	snprintf(buf, len, "(%" PRIu64 ", %u, %" PRIu64 ")", k->objectid,
		 k->type, k->offset);
}

/* The node's keys lie in the range its parent pointer gives it. */
static bool node_keys_ok(struct fsck_ctx *c, const struct czfs_node *node,
			 const struct walk_range *r)
{
	unsigned n = czfs_node_nritems(node->data);
	struct czfs_key first, last;
	char kb[64];

	if (!n)
		return true;
	czfs_node_key(node->data, 0, &first);
	czfs_node_key(node->data, n - 1, &last);
	if (czfs_key_cmp(&first, &r->lo) < 0) {
		key_str(&first, kb, sizeof(kb));
		fsck_error(c, "node %" PRIu64 ": first key %s below its pointer key",
			   node->blkaddr, kb);
		return false;
	}
	if (r->hi && czfs_key_cmp(&last, r->hi) >= 0) {
		key_str(&last, kb, sizeof(kb));
		fsck_error(c, "node %" PRIu64 ": key %s at or above the next pointer key",
			   node->blkaddr, kb);
		return false;
	}
	return true;
}

static int walk_leaf(struct fsck_ctx *c, const struct czfs_node *node)
{
	unsigned n = czfs_node_nritems(node->data);
	struct czfs_key key;
	int err = 0;

	c->leaves++;
	for (unsigned i = 0; i < n && !err; i++) {
		const void *val;
		unsigned size;

		czfs_node_key(node->data, i, &key);
		val = czfs_leaf_data(node->data, i, &size);
		err = fsck_item(c, &key, val, size);
	}
	return err;
}

static int walk_node(struct fsck_ctx *c, uint64_t blkaddr, uint64_t gen,
		     unsigned level, const struct walk_range *r);

/*
 * The blocks of a node: its own, or its leaf pack's at the pack's first
 * leaf.  A pack's leaves must follow one another in index order under one
 * parent (czfs_fs.h): the copy-on-write of that parent frees the pack.
 * Some may be missing: a damaged leaf stays packed when its neighbours
 * are stored plain.
 */
static bool ref_node(struct fsck_ctx *c, uint64_t ptr)
{
	uint64_t base = czfs_leafpack_base(ptr);
	unsigned idx = czfs_leafpack_index(ptr);

	if (!czfs_leafpack_is(ptr)) {
		c->lp_base = 0;
		return fsck_ref(c, ptr, 1, "tree node", 0);
	}
	if (base != c->lp_base) {
		c->lp_base = base;
		c->lp_next = 0;
		if (!fsck_ref(c, base, czfs_leafpack_nblocks(ptr), "leaf pack", 0))
			return false;
		c->leaf_packs++;
	}
	if (idx < c->lp_next)
		fsck_error(c, "leaf pack %" PRIu64 ": leaf %u after leaf %u; its leaves must follow one another under one parent",
			   base, idx, c->lp_next - 1);
	c->lp_next = idx + 1;
	c->packed_leaves++;
	return true;
}

static int walk_children(struct fsck_ctx *c, const struct czfs_node *node,
			 const struct walk_range *r)
{
	unsigned n = czfs_node_nritems(node->data);
	unsigned level = czfs_node_level(node->data) - 1;
	struct czfs_key next;
	int err = 0;

	c->lp_base = 0;		/* a pack never spans two parents */
	for (unsigned i = 0; i < n && !err; i++) {
		struct walk_range cr = { .hi = r->hi };
		uint64_t child, cgen;

		czfs_node_key(node->data, i, &cr.lo);
		if (i + 1 < n) {
			czfs_node_key(node->data, i + 1, &next);
			cr.hi = &next;
		}
		czfs_node_child(node->data, i, &child, &cgen);
		err = walk_node(c, child, cgen, level, &cr);
	}
	return err;
}

/* A node that cannot be read loses its subtree, not the walk. */
static int node_unreadable(struct fsck_ctx *c, uint64_t blkaddr, int err,
			   const struct walk_range *r)
{
	char kb[64];

	if (err != -EFSCORRUPTED && err != -EIO)
		return err;
	key_str(&r->lo, kb, sizeof(kb));
	fsck_error(c, "node %" PRIu64 ": %s; the items from key %s on that it held are lost",
		   blkaddr, err == -EIO ? "read error" : "damaged", kb);
	c->walk_incomplete = true;
	return 0;
}

static int walk_node(struct fsck_ctx *c, uint64_t blkaddr, uint64_t gen,
		     unsigned level, const struct walk_range *r)
{
	struct czfs_node *node;
	int err;

	/* Marked before reading: a damaged node's block is still in use. */
	if (!ref_node(c, blkaddr)) {
		c->walk_incomplete = true;	/* its subtree is not walked */
		return 0;
	}
	fsck_progress(c, 1);
	err = czfs_node_get(c->fs->nc, blkaddr, gen, (int)level, &node);
	if (err)
		return node_unreadable(c, blkaddr, err, r);
	c->nodes++;
	if (level && !czfs_node_nritems(node->data))
		fsck_error(c, "node %" PRIu64 ": empty", blkaddr);
	else if (!level && !czfs_node_nritems(node->data) &&
		 blkaddr != c->fs->cp.root_blkaddr)
		fsck_error(c, "leaf %" PRIu64 ": empty but not the root", blkaddr);
	if (node_keys_ok(c, node, r))
		err = level ? walk_children(c, node, r) : walk_leaf(c, node);
	else
		c->walk_incomplete = true;
	czfs_node_put(c->fs->nc, node);
	/* Each node is read once: keep the cache for the data's sake. */
	czfs_nodecache_forget(c->fs->nc, blkaddr);
	return err;
}

int fsck_walk(struct fsck_ctx *c)
{
	const struct czfs_cp_info *cp = &c->fs->cp;
	struct walk_range r = { .lo = { 0, 0, 0 } };
	int err;

	if (cp->root_generation > cp->generation)
		fsck_error(c, "checkpoint: root generation %" PRIu64
			   " newer than the checkpoint's %" PRIu64,
			   cp->root_generation, cp->generation);
	err = walk_node(c, cp->root_blkaddr, cp->root_generation,
			cp->root_level, &r);
	return err;
}
