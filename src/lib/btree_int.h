/* SPDX-License-Identifier: MIT */
/*
 * Private interfaces shared by node.c, nodecache.c and btree*.c.  Nothing
 * outside the B-tree includes this file.
 *
 * The edit helpers below work on nodes that are valid (checked when read,
 * or built here) and trust their callers to have checked for room: they do
 * no bounds checks of their own.
 */
#ifndef CZFS_BTREE_INT_H
#define CZFS_BTREE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "btree.h"

#define CZFS_ITEM_HDR_SIZE	((unsigned)sizeof(struct czfs_item))
#define CZFS_PTR_SIZE		((unsigned)sizeof(struct czfs_node_ptr))
/* Most items a leaf can hold (all of size 0). */
#define CZFS_LEAF_MAX_ITEMS	(CZFS_LEAF_SPACE / CZFS_ITEM_HDR_SIZE)

/* ---- node.c: searching inside one node --------------------------------- */

/* First slot whose key is >= key (nritems if none); *exact if equal. */
unsigned czfs_leaf_lower_bound(const void *blk, const struct czfs_key *key,
			       bool *exact);
/* Internal node: the last slot whose key is <= key, or 0. */
unsigned czfs_node_child_slot(const void *blk, const struct czfs_key *key);
/* Bytes a leaf uses for item headers and data. */
unsigned czfs_leaf_used(const void *blk);

/* ---- node.c: building and editing nodes in memory ---------------------- */

/* Zero blk and write a header for an empty node. */
void czfs_node_init(void *blk, uint64_t blkaddr, uint64_t gen, unsigned level);
/* Rewrite the header's blkaddr and generation (a copied node). */
void czfs_node_set_addr(void *blk, uint64_t blkaddr, uint64_t gen);

/* Insert an item at slot; the leaf must have ITEM_HDR_SIZE + size free. */
void czfs_leaf_insert(void *blk, unsigned slot, const struct czfs_key *key,
		      const void *data, unsigned size);
void czfs_leaf_remove(void *blk, unsigned slot);
/* Give item slot a new size (room checked by the caller); returns its data,
 * whose content is undefined until the caller fills it. */
void *czfs_leaf_resize(void *blk, unsigned slot, unsigned size);
/* Append every item of src to dst (same level, room checked, keys larger). */
void czfs_node_append(void *dst, const void *src);

/* An internal node's pointer: built from its parts / read n from slot. */
void czfs_node_make_ptr(struct czfs_node_ptr *p, const struct czfs_key *key,
			uint64_t blkaddr, uint64_t gen);
void czfs_node_read_ptrs(const void *blk, unsigned slot, unsigned n,
			 struct czfs_node_ptr *p);
/* Insert n pointers at slot; nritems + n must be <= CZFS_NODE_MAX_PTRS. */
void czfs_node_insert_ptrs(void *blk, unsigned slot,
			   const struct czfs_node_ptr *p, unsigned n);
void czfs_node_remove_ptr(void *blk, unsigned slot);
void czfs_node_set_child(void *blk, unsigned slot, uint64_t blkaddr,
			 uint64_t gen);
void czfs_node_set_ptr_key(void *blk, unsigned slot,
			   const struct czfs_key *key);

/* ---- nodecache.c: dirty nodes ------------------------------------------ */

/*
 * Put a new dirty node for blkaddr (just allocated) in the cache with one
 * reference and link it on *dirty_list; its data is uninitialised.  A
 * stale clean unreferenced node for the same block is dropped first.
 * Returns 0, -ENOMEM, or -EEXIST if the block is still in use in the cache.
 */
int czfs_nodecache_new(struct czfs_nodecache *nc, uint64_t blkaddr,
		       struct czfs_node **dirty_list, struct czfs_node **out);
/*
 * The node's block was freed: take it out of the cache (and off
 * *dirty_list if dirty).  The caller keeps its reference; the memory goes
 * with the last czfs_node_put().
 */
void czfs_nodecache_drop(struct czfs_nodecache *nc, struct czfs_node *node,
			 struct czfs_node **dirty_list);
bool czfs_node_is_dirty(const struct czfs_node *node);
/* The nodes of a dirty list as a malloc'ed array.  0 or -ENOMEM. */
int czfs_nodecache_dirty_array(struct czfs_node *dirty_list,
			       struct czfs_node ***out, size_t *n);
/* Every node of *dirty_list was written: mark them clean, empty the list. */
void czfs_nodecache_clean(struct czfs_nodecache *nc,
			  struct czfs_node **dirty_list);

/* ---- btree_leafpack.c: leaves compressed together ---------------------- */

struct czfs_codec;

/*
 * Compress the n sealed leaves at leaves (2..CZFS_LEAFPACK_MAX, each with
 * czfs_leafpack_self() of its pointer as blkaddr) into dst, header first;
 * dst holds n - 1 blocks.  Returns the blocks the pack takes, 0 when it
 * would not save a block, or -ENOMEM / -EINVAL.  czfs_leafpack_seal then
 * writes its address and checksum.
 */
int czfs_leafpack_encode(struct czfs_codec *codec, int alg, int level,
			 const uint8_t *leaves, unsigned n, uint64_t gen,
			 uint8_t *dst);
void czfs_leafpack_seal(uint8_t *pack, uint64_t base);
/*
 * Check the pack read from the blocks ptr names and decode its leaves
 * into out (CZFS_LEAFPACK_MAX blocks).  The leaves themselves are for
 * czfs_node_check.  0, -EFSCORRUPTED (logged) or -ENOMEM.
 */
int czfs_leafpack_decode(const uint8_t *pack, uint64_t ptr,
			 struct czfs_codec *codec, uint8_t *out,
			 unsigned *nleaves);

/* ---- btree_unpack.c: leaf packs under a copied node ---------------------- */

/*
 * A level-1 node that is copied takes its packed children out of their
 * leaf packs: czfs_unpack_prepare reads them and takes a new block for
 * each (before any edit: on error nothing changed), czfs_unpack_apply
 * makes each a plain leaf there, points the copy at it and frees the
 * packs; czfs_unpack_release undoes a prepare that is not applied.
 */
struct czfs_unpack {
	struct czfs_node *old[CZFS_NODE_MAX_PTRS], *copy[CZFS_NODE_MAX_PTRS];
	unsigned slot[CZFS_NODE_MAX_PTRS], n;
	/* Packs with a leaf that cannot be read: that leaf stays packed
	 * (the damage does not spread), and the pack is not freed. */
	uint64_t kept[CZFS_NODE_MAX_PTRS];
	unsigned nkept;
};

/* A level-1 node with at least one child in a leaf pack. */
bool czfs_leafpack_has_packed(const struct czfs_node *node);
int czfs_unpack_prepare(struct czfs_btree *t, const struct czfs_node *parent,
			struct czfs_unpack *u);
void czfs_unpack_apply(struct czfs_btree *t, struct czfs_btree_path *path,
		       struct czfs_node *parent, struct czfs_unpack *u);
void czfs_unpack_release(struct czfs_btree *t, struct czfs_unpack *u);

/* ---- btree_alloc.c: blocks of the transaction --------------------------- */

/* A dirty node on a new block; its content is for the caller to write. */
int czfs_btree_new_node(struct czfs_btree *t, struct czfs_node **out);
/* The node's block left the tree: give it back (a packed leaf's blocks are
 * its pack's, which czfs_unpack_apply frees) and forget the node. */
void czfs_btree_retire(struct czfs_btree *t, struct czfs_node *node);

/* ---- btree.c: descending ----------------------------------------------- */

/*
 * Position path at the leaf where key belongs and the first slot >= key
 * there (possibly nritems: no move to the next leaf).  Returns 0 if the
 * item exists, 1 if not, or -errno.  Release the path in every case.
 */
int czfs_btree_descend(struct czfs_btree *t, const struct czfs_key *key,
		       struct czfs_btree_path *path);
/*
 * Read child slot of an internal node, checking that it is not empty and
 * that its keys lie between its pointer key and the next pointer key.
 */
int czfs_btree_read_child(struct czfs_btree *t, const struct czfs_node *parent,
			  unsigned slot, struct czfs_node **out);

/* ---- btree_build.c: writing runs of blocks ----------------------------- */

/* Gathers blocks with consecutive addresses into one write. */
struct czfs_blkwriter {
	struct czfs_bdev *bdev;
	uint8_t *buf;			/* cap blocks, 4 KiB aligned */
	unsigned cap, n;
	uint64_t start;			/* address of buf's first block */
};

/*
 * czfs_blkwriter_init: a writer of up to cap blocks per request (0 or
 * -ENOMEM).  czfs_blkwriter_add: copy blk, bound for blkaddr; a block that
 * does not follow the gathered ones, or a full buffer, writes them first.
 * czfs_blkwriter_flush: write what is gathered.  Both return 0 or the
 * write's error (the gathered blocks are dropped then).
 * czfs_blkwriter_free: the buffer (no flush).  One thread per writer.
 */
int czfs_blkwriter_init(struct czfs_blkwriter *w, struct czfs_bdev *bdev,
			unsigned cap);
int czfs_blkwriter_add(struct czfs_blkwriter *w, uint64_t blkaddr,
		       const void *blk);
int czfs_blkwriter_flush(struct czfs_blkwriter *w);
void czfs_blkwriter_free(struct czfs_blkwriter *w);

#endif /* CZFS_BTREE_INT_H */
