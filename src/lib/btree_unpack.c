// SPDX-License-Identifier: MIT
/*
 * Unpacking under a copied level-1 node (btree_int.h): the leaves mkfs
 * packed (btree_leafpack.c) that a writer's copy-on-write reaches are
 * stored plain again.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "btree_int.h"
#include "util.h"

/*
 * A level-1 node that is copied takes its packed children out of their
 * leaf packs (czfs_fs.h): each becomes a plain leaf on a new block, and
 * each pack is freed, so that no node written after mkfs points into a
 * pack.  The leaves are read and the blocks taken before any edit.
 */

static bool in_list(const uint64_t *list, unsigned n, uint64_t v)
{
	for (unsigned i = 0; i < n; i++)
		if (list[i] == v)
			return true;
	return false;
}

void czfs_unpack_release(struct czfs_btree *t, struct czfs_unpack *u)
{
	for (unsigned k = 0; k < u->n; k++) {
		czfs_btree_retire(t, u->copy[k]);
		czfs_node_put(t->nc, u->copy[k]);
		czfs_node_put(t->nc, u->old[k]);
	}
	u->n = 0;
}

int czfs_unpack_prepare(struct czfs_btree *t, const struct czfs_node *parent,
			struct czfs_unpack *u)
{
	unsigned n = czfs_node_nritems(parent->data);
	int err = 0;

	u->n = u->nkept = 0;
	for (unsigned i = 0; i < n && !err; i++) {
		uint64_t addr, gen;

		czfs_node_child(parent->data, i, &addr, &gen);
		if (!czfs_leafpack_is(addr))
			continue;
		err = czfs_node_get(t->nc, addr, gen, 0, &u->old[u->n]);
		if (err == -EFSCORRUPTED || err == -EIO) {
			u->kept[u->nkept++] = czfs_leafpack_base(addr);
			err = 0;
			continue;
		}
		if (err)
			break;
		err = czfs_btree_new_node(t, &u->copy[u->n]);
		if (err) {
			czfs_node_put(t->nc, u->old[u->n]);
			break;
		}
		u->slot[u->n++] = i;
	}
	if (err)
		czfs_unpack_release(t, u);
	return err;
}

void czfs_unpack_apply(struct czfs_btree *t, struct czfs_btree_path *path,
		       struct czfs_node *parent, struct czfs_unpack *u)
{
	uint64_t freed[CZFS_NODE_MAX_PTRS];
	unsigned nfreed = 0;

	for (unsigned k = 0; k < u->n; k++) {
		struct czfs_node *old = u->old[k], *copy = u->copy[k];
		uint64_t base = czfs_leafpack_base(old->blkaddr);

		memcpy(copy->data, old->data, CZFS_BLOCK_SIZE);
		czfs_node_set_addr(copy->data, copy->blkaddr, t->trans_gen);
		czfs_node_set_child(parent->data, u->slot[k], copy->blkaddr,
				    t->trans_gen);
		if (!in_list(freed, nfreed, base) &&
		    !in_list(u->kept, u->nkept, base)) {
			t->alloc->free(t->alloc, base,
				       czfs_leafpack_nblocks(old->blkaddr));
			freed[nfreed++] = base;
		}
		if (path->nodes[0] == old) {
			/* The path's leaf: the path holds the copy now. */
			czfs_node_put(t->nc, old);
			path->nodes[0] = copy;
		} else {
			czfs_node_put(t->nc, copy);
		}
		czfs_btree_retire(t, old);
		czfs_node_put(t->nc, old);
	}
	u->n = 0;
}

bool czfs_leafpack_has_packed(const struct czfs_node *node)
{
	unsigned n = czfs_node_nritems(node->data);

	if (czfs_node_level(node->data) != 1)
		return false;
	for (unsigned i = 0; i < n; i++) {
		uint64_t addr, gen;

		czfs_node_child(node->data, i, &addr, &gen);
		if (czfs_leafpack_is(addr))
			return true;
	}
	return false;
}
