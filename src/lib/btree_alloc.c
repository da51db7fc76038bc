// SPDX-License-Identifier: MIT
/*
 * A transaction's node blocks (btree_int.h): a new dirty node on a block
 * from the allocator, and a node's block given back when it leaves the
 * tree.  Below btree_cow.c and btree_unpack.c, which both copy nodes.
 */
#include "config.h"

#include "btree_int.h"

void czfs_btree_retire(struct czfs_btree *t, struct czfs_node *node)
{
	if (!czfs_leafpack_is(node->blkaddr))
		t->alloc->free(t->alloc, node->blkaddr, 1);
	czfs_nodecache_drop(t->nc, node, &t->dirty_list);
}

int czfs_btree_new_node(struct czfs_btree *t, struct czfs_node **out)
{
	uint64_t blkaddr;
	int err = t->alloc->alloc(t->alloc, 1, &blkaddr);

	if (err)
		return err;
	err = czfs_nodecache_new(t->nc, blkaddr, &t->dirty_list, out);
	if (err)
		t->alloc->free(t->alloc, blkaddr, 1);
	return err;
}
