/* SPDX-License-Identifier: MIT */
/*
 * The metadata B-tree: every inode, directory entry, xattr and cluster
 * pointer is an item in one copy-on-write B+tree of 4 KiB nodes
 * (struct czfs_node_header in czfs_fs.h).
 *
 *   node.c         validation of a node read from disk, field accessors
 *   nodecache.c    cache of nodes by block address (LRU, pinned dirty nodes)
 *   btree.c        search, lookup, cursor iteration
 *   btree_cow.c    insert / update / delete with copy-on-write, and commit
 *   btree_build.c  bottom-up bulk loader used by mkfs
 *   btree_leafpack.c  leaves compressed together (mkfs), read by the cache
 *
 * Threads: the tree does no locking of its own beyond the node cache's
 * internal mutex.  Readers may run concurrently with each other; any
 * modification or commit needs the caller's exclusive lock (czfs_fs.lock).
 */
#ifndef CZFS_BTREE_H
#define CZFS_BTREE_H

#include <stdbool.h>
#include <stdint.h>

#include "alloc.h"
#include "czfs_fs.h"

struct czfs_bdev;

struct czfs_key {
	uint64_t objectid;
	uint8_t type;
	uint64_t offset;		/* < 2^56 */
};

/* Order of keys: objectid, then type, then offset.  <0, 0 or >0. */
static inline int czfs_key_cmp(const struct czfs_key *a, const struct czfs_key *b)
{
	if (a->objectid != b->objectid)
		return a->objectid < b->objectid ? -1 : 1;
	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	if (a->offset != b->offset)
		return a->offset < b->offset ? -1 : 1;
	return 0;
}

/* A key to and from its little-endian on-disk form (no checks). */
void czfs_key_to_disk(const struct czfs_key *k, struct czfs_disk_key *dk);
void czfs_key_from_disk(const struct czfs_disk_key *dk, struct czfs_key *k);

/* ---- pointers into leaf packs (czfs_fs.h, "Leaf packs") ----------------- */

static inline bool czfs_leafpack_is(uint64_t ptr)
{
	return ptr & CZFS_LEAFPACK_PTR;
}
static inline uint64_t czfs_leafpack_base(uint64_t ptr)
{
	return ptr & ((1ull << 48) - 1);
}
static inline unsigned czfs_leafpack_nblocks(uint64_t ptr)
{
	return (unsigned)((ptr >> 48) & 0xff) + 1;
}
static inline unsigned czfs_leafpack_index(uint64_t ptr)
{
	return (unsigned)(ptr >> 56) & 0x7f;
}
static inline uint64_t czfs_leafpack_ptr(uint64_t base, unsigned nblocks,
					 unsigned index)
{
	return CZFS_LEAFPACK_PTR | (uint64_t)index << 56 |
	       (uint64_t)(nblocks - 1) << 48 | base;
}
/* What a packed leaf's own header holds as its blkaddr. */
static inline uint64_t czfs_leafpack_self(uint64_t ptr)
{
	return CZFS_LEAFPACK_PTR | (uint64_t)czfs_leafpack_index(ptr) << 56;
}
/* A node pointer: the block or blocks it names are in [first, max). */
static inline bool czfs_node_ptr_in(uint64_t ptr, uint64_t first, uint64_t max)
{
	uint64_t b = czfs_leafpack_is(ptr) ? czfs_leafpack_base(ptr) : ptr;
	uint64_t n = czfs_leafpack_is(ptr) ? czfs_leafpack_nblocks(ptr) : 1;

	return b >= first && b < max && n <= max - b &&
	       (!czfs_leafpack_is(ptr) ||
		czfs_leafpack_index(ptr) < CZFS_LEAFPACK_MAX);
}

/* ---- nodes (node.c) ----------------------------------------------------- */

/*
 * Validate a node block read from blkaddr: checksum, magic, blkaddr, owner,
 * level == want_level (or any if want_level < 0), generation == want_gen
 * (or any if 0), nritems bounds (internal nodes have >= 1 pointer; only a
 * root leaf may be empty, which the caller knows), keys
 * strictly increasing, leaf item offsets packed exactly as czfs_fs.h
 * describes, internal pointers in [CZFS_FIRST_DATA_BLKADDR, max_blocks)
 * with generation <= the node's.  Returns 0 or -EFSCORRUPTED with a log
 * line naming blkaddr and the failed check.
 */
/*
 * Whether blk looks like the node written at blkaddr (its magic, its own
 * address and its checksum), without a word in the log: what node
 * readahead asks of a block it was not asked for.  Not a full check.
 */
bool czfs_node_is_sealed_at(const void *blk, uint64_t blkaddr);
int czfs_node_check(const void *blk, uint64_t blkaddr, uint64_t want_gen,
		    int want_level, uint64_t max_blocks);

/* Compute and store the checksum of a node about to be written. */
void czfs_node_seal(void *blk);

/* Header fields and the key of item slot of a checked node block. */
unsigned czfs_node_nritems(const void *blk);
unsigned czfs_node_level(const void *blk);
uint64_t czfs_node_generation(const void *blk);
void czfs_node_key(const void *blk, unsigned slot, struct czfs_key *key);
/* Leaf item data (borrowed pointer into blk) and its size. */
const void *czfs_leaf_data(const void *blk, unsigned slot, unsigned *size);
/* Internal node child pointer. */
void czfs_node_child(const void *blk, unsigned slot, uint64_t *blkaddr,
		     uint64_t *generation);
/* Free bytes in a leaf for new items (item header + data). */
unsigned czfs_leaf_free_space(const void *blk);

/* ---- node cache (nodecache.c) ----------------------------------------- */

struct czfs_nodecache;

struct czfs_node {
	uint64_t blkaddr;
	uint8_t *data;			/* CZFS_BLOCK_SIZE bytes, 4 KiB aligned */
	/* private to nodecache.c */
	unsigned refs;
	bool dirty;
	struct czfs_node *hnext;
	struct czfs_node *lru_prev, *lru_next;
};

/*
 * A cache of at most max_nodes clean nodes (dirty nodes are pinned until
 * written and do not count).  Returns 0 or -ENOMEM.
 */
int czfs_nodecache_create(struct czfs_bdev *bdev, uint64_t max_blocks,
			  unsigned max_nodes, struct czfs_nodecache **out);
void czfs_nodecache_destroy(struct czfs_nodecache *nc);	/* accepts NULL */
/*
 * Keep base clean nodes at first, more (up to max_nodes) as misses show
 * that evicted nodes are asked for again, half as many after a trim: a
 * long-lived daemon's memory follows its use.  base 0 (or >= max_nodes):
 * max_nodes always, the default.  Returns 0 or -ENOMEM (unchanged).
 */
int czfs_nodecache_set_adaptive(struct czfs_nodecache *nc, unsigned base);
/* The image's limit raised (czfs_fs_grow): nodes may lie up to it. */
void czfs_nodecache_set_limit(struct czfs_nodecache *nc, uint64_t max_blocks);

/*
 * Node readahead, for an image that cannot change while it is open (a
 * read-only one): a miss reads the aligned window of nblocks blocks (a
 * power of two, at most CZFS_NODE_READAHEAD_MAX; 0 or 1: off, the
 * default) around the node in one request, and keeps the window's other
 * blocks that are sealed nodes (czfs_node_is_sealed_at, then
 * czfs_node_check) as clean cached nodes; what is cached already stays.
 * mkfs.czfs writes the tree in key order, so a cold walk then reads the
 * metadata in few large requests instead of one per node.  Never on a
 * writable image: a freed block may hold an old node until reused, and
 * its cached copy would shadow the new one.
 */
#define CZFS_NODE_READAHEAD_MAX	256
#define CZFS_NODE_READAHEAD	32	/* what a read-only open sets */
void czfs_nodecache_set_readahead(struct czfs_nodecache *nc, unsigned nblocks);

/*
 * Get the node at blkaddr, reading and validating it (czfs_node_check with
 * want_gen, want_level) on a miss.  A node is checked once, when read; a
 * cached node is only matched against want_gen and want_level.
 * Returns 0 with a reference in *out, -EFSCORRUPTED or an I/O error.
 */
int czfs_node_get(struct czfs_nodecache *nc, uint64_t blkaddr,
		  uint64_t want_gen, int want_level, struct czfs_node **out);
void czfs_node_put(struct czfs_nodecache *nc, struct czfs_node *node);

/* Statistics for the daemon's counters. */
struct czfs_nodecache_stats {
	unsigned long long hits, misses, evictions, nodes, dirty;
	unsigned long long readahead;	/* nodes cached by readahead */
	unsigned long long packs;	/* leaf packs decoded */
	unsigned long long refaults;	/* misses of nodes evicted lately */
	unsigned long long limit;	/* clean nodes it keeps now */
};
void czfs_nodecache_stats(struct czfs_nodecache *nc,
			  struct czfs_nodecache_stats *st);
/* Evict clean unreferenced nodes, least recently used first, until at
 * most keep clean nodes are left (an idle daemon's memory back); an
 * adaptive limit is halved, down to its base. */
void czfs_nodecache_trim(struct czfs_nodecache *nc, unsigned keep);
/* Drop the clean node at blkaddr if cached and unreferenced (fsck, tests). */
void czfs_nodecache_forget(struct czfs_nodecache *nc, uint64_t blkaddr);

/* ---- the tree (btree.c) -------------------------------------------------- */

struct czfs_btree {
	struct czfs_nodecache *nc;
	uint64_t root_blkaddr;
	uint64_t root_generation;
	unsigned root_level;
	uint64_t max_blocks;
	/* copy-on-write state (btree_cow.c); trans_gen 0 = read-only */
	uint64_t trans_gen;		/* generation being built */
	struct czfs_allocator *alloc;	/* blocks for copied nodes */
	struct czfs_bdev *bdev;
	struct czfs_node *dirty_list;	/* nodes to write at commit */
};

/* A position in the tree: the node and slot at each level, leaf first. */
struct czfs_btree_path {
	struct czfs_node *nodes[CZFS_MAX_LEVEL];
	unsigned slots[CZFS_MAX_LEVEL];
	unsigned levels;		/* root_level + 1 once positioned */
};

/*
 * Position path at the first item >= key.  Returns 0 when an item with
 * exactly key is there, 1 when positioned at a greater item, 2 when every
 * item is smaller (the path is then past the end), or -errno.  Release the
 * path with czfs_btree_path_release() in every case.
 */
int czfs_btree_search(struct czfs_btree *t, const struct czfs_key *key,
		      struct czfs_btree_path *path);

/* Move to the next item.  Returns 0, 1 at the end, or -errno. */
int czfs_btree_next(struct czfs_btree *t, struct czfs_btree_path *path);

/* The current item of a positioned path (borrowed until release/next). */
void czfs_btree_item(const struct czfs_btree_path *path, struct czfs_key *key,
		     const void **data, unsigned *size);

/* Let go of the nodes a path holds (after any search, even a failed one). */
void czfs_btree_path_release(struct czfs_btree *t, struct czfs_btree_path *path);

/*
 * Copy the value of the item with exactly key into buf (capacity cap).
 * Returns the value size (which may exceed cap: then only cap bytes are
 * copied), -ENOENT, or -errno.
 */
int czfs_btree_lookup(struct czfs_btree *t, const struct czfs_key *key,
		      void *buf, unsigned cap);

/*
 * The leaves of a caller's last lookups, for lookups of keys near each
 * other (the inodes of a directory's entries, which mkfs.czfs numbers
 * together, come in name hash order, and share leaves with the files'
 * cluster items): a key inside one leaf's range is looked up there, with
 * no walk from the root.  It holds the leaves: valid only while the tree
 * cannot change (the caller holds fs->lock from the first lookup to the
 * release).  Zero it to start.
 */
#define CZFS_BTREE_HINT_LEAVES	4
struct czfs_btree_hint {
	struct czfs_node *leaf[CZFS_BTREE_HINT_LEAVES];
	unsigned next;			/* the one a walk replaces */
};
/* czfs_btree_lookup through a hint (NULL: none), which it updates. */
int czfs_btree_lookup_near(struct czfs_btree *t, const struct czfs_key *key,
			   void *buf, unsigned cap, struct czfs_btree_hint *h);
void czfs_btree_hint_release(struct czfs_btree *t, struct czfs_btree_hint *h);

/*
 * Call fn for each item with first <= key <= last, in key order.  fn
 * returns 0 to go on, > 0 to stop (czfs_btree_iterate then returns that
 * value), < 0 to fail (returned as is).
 */
typedef int (*czfs_btree_iter_fn)(void *ctx, const struct czfs_key *key,
				  const void *data, unsigned size);
int czfs_btree_iterate(struct czfs_btree *t, const struct czfs_key *first,
		       const struct czfs_key *last, czfs_btree_iter_fn fn,
		       void *ctx);

/* ---- copy-on-write changes (btree_cow.c) ------------------------------- */

/*
 * Start a transaction that builds generation gen: a node changed in it is
 * first copied to a new block from alloc (its old block is given back to
 * alloc); nodes already copied in this transaction change in place.
 */
void czfs_btree_begin(struct czfs_btree *t, struct czfs_allocator *alloc,
		      struct czfs_bdev *bdev, uint64_t gen);

/* Insert an item; -EEXIST if the key exists, -E2BIG if size is too big
 * (> CZFS_MAX_ITEM_SIZE), -ENOSPC if no block is free, -EINVAL if
 * key->offset >= 2^56, -EROFS outside a transaction.  Any failure leaves
 * the tree's items as they were.  The same errors apply to update, put
 * and delete. */
int czfs_btree_insert(struct czfs_btree *t, const struct czfs_key *key,
		      const void *data, unsigned size);

/* Replace the value of an existing item (any new size); -ENOENT if none.
 * A smaller value merges its leaf, under half full then, with a
 * neighbour it fits beside, as a delete does. */
int czfs_btree_update(struct czfs_btree *t, const struct czfs_key *key,
		      const void *data, unsigned size);

/* Insert or replace. */
int czfs_btree_put(struct czfs_btree *t, const struct czfs_key *key,
		   const void *data, unsigned size);

/* Delete an item; -ENOENT if none.  Empty nodes are removed; a node
 * under half full merges with a neighbour it fits beside. */
int czfs_btree_delete(struct czfs_btree *t, const struct czfs_key *key);

/*
 * Write every dirty node (sealed) to its block, children before parents.
 * Afterwards root_blkaddr/root_generation/root_level describe the new tree,
 * the nodes are clean and the transaction is over (trans_gen = 0: call
 * czfs_btree_begin before the next change).  Returns 0 or an I/O error
 * (the nodes then stay dirty and the transaction open: commit may be
 * retried).
 */
int czfs_btree_commit(struct czfs_btree *t);

/* ---- bulk loading (btree_build.c) --------------------------------------- */

struct czfs_btree_builder;

/*
 * Build a tree from items added in strictly increasing key order.  Leaves
 * are kept in memory and written at finish, contiguously, with blocks from
 * alloc, followed by the internal levels.
 */
int czfs_btree_builder_new(struct czfs_bdev *bdev, struct czfs_allocator *alloc,
			   uint64_t gen, struct czfs_btree_builder **out);

/*
 * Add one item.  *stored (if not NULL) receives a pointer to the copy of
 * data inside the builder, writable until finish (so a value can be patched
 * after later items were added).  Returns 0, -EINVAL if key is not greater
 * than the previous key (or its offset >= 2^56, or after finish), -E2BIG
 * if size > CZFS_MAX_ITEM_SIZE, -ENOMEM.
 */
int czfs_btree_builder_add(struct czfs_btree_builder *b,
			   const struct czfs_key *key, const void *data,
			   unsigned size, void **stored);

/*
 * Write all nodes.  An empty builder produces one empty leaf as root.
 * Returns 0 and the root, or -ENOSPC or an I/O error (the blocks taken are
 * then given back to alloc).
 */
int czfs_btree_builder_finish(struct czfs_btree_builder *b,
			      uint64_t *root_blkaddr, unsigned *root_level);
void czfs_btree_builder_free(struct czfs_btree_builder *b); /* accepts NULL */

/*
 * Store the leaves in leaf packs compressed with alg at level (0: its
 * default); CZFS_ALG_NONE (the default) writes them plain.  A group of
 * leaves whose pack would not save a block is written plain too.  The
 * image needs CZFS_FEATURE_INCOMPAT_LEAFPACK when stats give packs.
 */
void czfs_btree_builder_pack_leaves(struct czfs_btree_builder *b, int alg,
				    int level);
struct czfs_btree_build_stats {
	uint64_t leaves, packs, packed_leaves, pack_blocks;
};
/* What finish wrote. */
void czfs_btree_builder_stats(const struct czfs_btree_builder *b,
			      struct czfs_btree_build_stats *st);

#endif /* CZFS_BTREE_H */
