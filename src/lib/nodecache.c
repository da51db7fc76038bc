// SPDX-License-Identifier: MIT
/*
 * Node cache: nodes by block address in a hash table, with an LRU list of
 * the clean nodes nobody references.  Clean nodes beyond the limit
 * (max_nodes, or an adaptive one below it) are evicted from the LRU tail.
 * Dirty nodes (built by a transaction, not yet written) are pinned: never
 * on the LRU, they sit on the tree's dirty list instead, linked through the
 * same lru_prev/lru_next fields.
 *
 * With an adaptive limit (the daemon's), the cache keeps few nodes until
 * it is seen to need more: an eviction leaves its address in a small
 * direct-mapped table of ghosts, and a miss that finds its address there
 * (a refault: a larger cache would have hit) raises the limit towards
 * max_nodes.  A walk, which reads each node a few times close together,
 * stays small; random lookups over a big tree grow it.  Each trim (an idle
 * daemon) halves the limit, down to base.
 *
 * One mutex guards the table, the LRU and the counters.  A miss reads the
 * block without holding it, so readers of different nodes proceed in
 * parallel; if another thread inserted the same block meanwhile, its node
 * wins and ours is thrown away.  A miss with readahead reads its window
 * into the cache's one window buffer, under win_lock (taken before lock).
 * A miss of a packed leaf decodes its whole pack, under win_lock too, and
 * keeps every leaf of it.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>

#include "bdev.h"
#include "btree_int.h"
#include "compress.h"
#include "log.h"
#include "util.h"

struct czfs_nodecache {
	pthread_mutex_t lock;
	struct czfs_bdev *bdev;
	_Atomic uint64_t max_blocks;	/* raised by czfs_fs_grow, read unlocked */
	unsigned max_nodes;		/* the ceiling */
	unsigned limit;			/* clean nodes kept now */
	unsigned base;			/* adaptive: the limit it starts at */
	uint64_t *ghosts;		/* adaptive: NGHOSTS evicted addresses */
	struct czfs_node **table;
	size_t nbuckets;		/* a power of two */
	size_t nnodes, nclean, ndirty;	/* nodes in the table */
	struct czfs_node *lru_head;	/* most recently used */
	struct czfs_node *lru_tail;
	unsigned ra_blocks;		/* readahead window, 0: none */
	/* One buffer for every window read, so that a miss allocates no
	 * 128 KiB (glibc maps and unmaps that much each time); its lock
	 * also makes a thread missing a node of the window another thread
	 * is reading wait and find it cached, instead of reading it again. */
	pthread_mutex_t win_lock;
	uint8_t *win;
	size_t win_size;
	/* Decoding leaf packs, under win_lock: made at the first pack. */
	struct czfs_codec *codec;
	uint8_t *pack_out;		/* CZFS_LEAFPACK_MAX blocks */
	unsigned long long hits, misses, evictions, ra_nodes, packs, refaults;
};

/* Ghosts: 64 KiB, enough to see refaults of a cache several times base. */
#define NGHOSTS		8192u

static size_t ghost_of(uint64_t blkaddr)
{
	return (size_t)((blkaddr * 0x9e3779b97f4a7c15ull) >> 40) & (NGHOSTS - 1);
}

static size_t bucket_of(const struct czfs_nodecache *nc, uint64_t blkaddr)
{
	/* Fibonacci hashing spreads runs of consecutive addresses. */
	return (size_t)((blkaddr * 0x9e3779b97f4a7c15ull) >> 20) &
	       (nc->nbuckets - 1);
}

static struct czfs_node *hash_find(struct czfs_nodecache *nc, uint64_t blkaddr)
{
	struct czfs_node *n = nc->table[bucket_of(nc, blkaddr)];

	while (n && n->blkaddr != blkaddr)
		n = n->hnext;
	return n;
}

/* Double the table when chains get long; on -ENOMEM keep the old one. */
static void hash_grow(struct czfs_nodecache *nc)
{
	size_t old = nc->nbuckets;
	struct czfs_node **otable = nc->table;
	struct czfs_node **table = calloc(old * 2, sizeof(*table));

	if (!table)
		return;
	nc->table = table;
	nc->nbuckets = old * 2;
	for (size_t i = 0; i < old; i++) {
		struct czfs_node *n = otable[i], *next;

		for (; n; n = next) {
			size_t b = bucket_of(nc, n->blkaddr);

			next = n->hnext;
			n->hnext = table[b];
			table[b] = n;
		}
	}
	free(otable);
}

static void hash_add(struct czfs_nodecache *nc, struct czfs_node *n)
{
	size_t b;

	if (nc->nnodes >= nc->nbuckets * 2)
		hash_grow(nc);
	b = bucket_of(nc, n->blkaddr);
	n->hnext = nc->table[b];
	nc->table[b] = n;
	nc->nnodes++;
}

static void hash_del(struct czfs_nodecache *nc, struct czfs_node *n)
{
	struct czfs_node **pp = &nc->table[bucket_of(nc, n->blkaddr)];

	while (*pp != n)
		pp = &(*pp)->hnext;
	*pp = n->hnext;
	n->hnext = NULL;
	nc->nnodes--;
}

/* Doubly linked lists through lru_prev/lru_next: the LRU and dirty lists. */
static void list_add(struct czfs_node **head, struct czfs_node **tail,
		     struct czfs_node *n)
{
	n->lru_prev = NULL;
	n->lru_next = *head;
	if (*head)
		(*head)->lru_prev = n;
	else if (tail)
		*tail = n;
	*head = n;
}

static void list_del(struct czfs_node **head, struct czfs_node **tail,
		     struct czfs_node *n)
{
	if (n->lru_prev)
		n->lru_prev->lru_next = n->lru_next;
	else
		*head = n->lru_next;
	if (n->lru_next)
		n->lru_next->lru_prev = n->lru_prev;
	else if (tail)
		*tail = n->lru_prev;
	n->lru_prev = n->lru_next = NULL;
}

static struct czfs_node *node_alloc(uint64_t blkaddr)
{
	struct czfs_node *n = calloc(1, sizeof(*n));
	void *data;

	if (!n)
		return NULL;
	if (posix_memalign(&data, CZFS_BLOCK_SIZE, CZFS_BLOCK_SIZE)) {
		free(n);
		return NULL;
	}
	n->data = data;
	n->blkaddr = blkaddr;
	return n;
}

static void node_free(struct czfs_node *n)
{
	free(n->data);
	free(n);
}

/* Remove a clean unreferenced node (on the LRU) from the cache. */
static void evict(struct czfs_nodecache *nc, struct czfs_node *n)
{
	list_del(&nc->lru_head, &nc->lru_tail, n);
	hash_del(nc, n);
	nc->nclean--;
	node_free(n);
}

static void evict_to(struct czfs_nodecache *nc, size_t keep)
{
	while (nc->nclean > keep && nc->lru_tail) {
		if (nc->ghosts)
			nc->ghosts[ghost_of(nc->lru_tail->blkaddr)] =
				nc->lru_tail->blkaddr;
		evict(nc, nc->lru_tail);
		nc->evictions++;
	}
}

static void evict_excess(struct czfs_nodecache *nc)
{
	evict_to(nc, nc->limit);
}

/* A miss of blkaddr: if it was evicted lately, keep more (by 1/32). */
static void note_miss(struct czfs_nodecache *nc, uint64_t blkaddr)
{
	uint64_t *g;

	nc->misses++;
	if (!nc->ghosts)
		return;
	g = &nc->ghosts[ghost_of(blkaddr)];
	if (*g != blkaddr)
		return;
	*g = 0;
	nc->refaults++;
	nc->limit = MIN(nc->max_nodes, nc->limit + MAX(8u, nc->limit / 32));
}

int czfs_nodecache_create(struct czfs_bdev *bdev, uint64_t max_blocks,
			  unsigned max_nodes, struct czfs_nodecache **out)
{
	struct czfs_nodecache *nc = calloc(1, sizeof(*nc));

	if (!nc)
		return -ENOMEM;
	nc->nbuckets = 64;
	while (nc->nbuckets < max_nodes && nc->nbuckets < (1u << 20))
		nc->nbuckets *= 2;
	nc->table = calloc(nc->nbuckets, sizeof(*nc->table));
	if (!nc->table) {
		free(nc);
		return -ENOMEM;
	}
	pthread_mutex_init(&nc->lock, NULL);
	pthread_mutex_init(&nc->win_lock, NULL);
	nc->bdev = bdev;
	nc->max_blocks = max_blocks;
	nc->max_nodes = max_nodes;
	nc->limit = max_nodes;
	*out = nc;
	return 0;
}

int czfs_nodecache_set_adaptive(struct czfs_nodecache *nc, unsigned base)
{
	uint64_t *ghosts = NULL;

	if (base && base < nc->max_nodes) {
		ghosts = calloc(NGHOSTS, sizeof(*ghosts));
		if (!ghosts)
			return -ENOMEM;
	}
	pthread_mutex_lock(&nc->lock);
	free(nc->ghosts);
	nc->ghosts = ghosts;
	nc->base = ghosts ? base : 0;
	nc->limit = ghosts ? base : nc->max_nodes;
	evict_excess(nc);
	pthread_mutex_unlock(&nc->lock);
	return 0;
}

void czfs_nodecache_destroy(struct czfs_nodecache *nc)
{
	if (!nc)
		return;
	for (size_t i = 0; i < nc->nbuckets; i++) {
		struct czfs_node *n = nc->table[i], *next;

		for (; n; n = next) {
			next = n->hnext;
			node_free(n);
		}
	}
	free(nc->table);
	free(nc->ghosts);
	free(nc->win);
	free(nc->pack_out);
	czfs_codec_free(nc->codec);
	pthread_mutex_destroy(&nc->win_lock);
	pthread_mutex_destroy(&nc->lock);
	free(nc);
}

/* Take a reference on the cached node for blkaddr, if any.  Locked. */
static struct czfs_node *grab(struct czfs_nodecache *nc, uint64_t blkaddr)
{
	struct czfs_node *n = hash_find(nc, blkaddr);

	if (!n)
		return NULL;
	if (!n->refs && !n->dirty)
		list_del(&nc->lru_head, &nc->lru_tail, n);
	n->refs++;
	return n;
}

/* A cached node was checked when read; still make sure it is the node the
 * pointer expects (cheap, and catches a stale or misplaced entry). */
static int verify_cached(struct czfs_nodecache *nc, struct czfs_node *n,
			 uint64_t want_gen, int want_level,
			 struct czfs_node **out)
{
	unsigned level = czfs_node_level(n->data);
	uint64_t gen = czfs_node_generation(n->data);

	if ((want_level >= 0 && level != (unsigned)want_level) ||
	    (want_gen && gen != want_gen)) {
		czfs_err("node %llu: cached node has level %u generation %llu, expected level %d generation %llu",
			 (unsigned long long)n->blkaddr, level,
			 (unsigned long long)gen, want_level,
			 (unsigned long long)want_gen);
		czfs_node_put(nc, n);
		return -EFSCORRUPTED;
	}
	*out = n;
	return 0;
}

/*
 * Keep the sealed nodes of a readahead window that are not cached yet, as
 * clean unreferenced nodes, the one that was asked for too: a thread that
 * waited for the window then finds it (the asker's own copy loses to it).
 * A block that fails the full check is left out (logged).
 */
/* Keep a checked node read beside the one asked for, unless cached. */
static void keep_clean(struct czfs_nodecache *nc, const uint8_t *blk,
		       uint64_t addr)
{
	struct czfs_node *node;

	pthread_mutex_lock(&nc->lock);
	node = hash_find(nc, addr) ? NULL : node_alloc(addr);
	if (node) {
		memcpy(node->data, blk, CZFS_BLOCK_SIZE);
		hash_add(nc, node);
		list_add(&nc->lru_head, &nc->lru_tail, node);
		nc->nclean++;
		nc->ra_nodes++;
		evict_excess(nc);
	}
	pthread_mutex_unlock(&nc->lock);
}

static void keep_window(struct czfs_nodecache *nc, const uint8_t *buf,
			uint64_t first, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		const uint8_t *blk = buf + ((size_t)i << CZFS_BLOCK_SHIFT);
		uint64_t addr = first + i;

		if (czfs_node_is_sealed_at(blk, addr) &&
		    !czfs_node_check(blk, addr, 0, -1, nc->max_blocks))
			keep_clean(nc, blk, addr);
	}
}

/* The window buffer, at least len bytes; NULL on -ENOMEM.  win_lock held. */
static uint8_t *window_buf(struct czfs_nodecache *nc, size_t len)
{
	void *buf;

	if (nc->win_size >= len)
		return nc->win;
	if (posix_memalign(&buf, CZFS_BLOCK_SIZE, len))
		return NULL;
	free(nc->win);
	nc->win = buf;
	nc->win_size = len;
	return buf;
}

/* Copy the block at blkaddr out of the table if it is cached now (the
 * window of a thread win_lock waited for); false if not. */
static bool copy_cached(struct czfs_nodecache *nc, uint64_t blkaddr,
			uint8_t *dst)
{
	struct czfs_node *n;

	pthread_mutex_lock(&nc->lock);
	n = hash_find(nc, blkaddr);
	if (n)
		memcpy(dst, n->data, CZFS_BLOCK_SIZE);
	pthread_mutex_unlock(&nc->lock);
	return n != NULL;
}

/*
 * Read the window [first, end) around a missed node into the window buffer,
 * n->data taking its block and the cache the window's other nodes.  Returns
 * 0, -ENOMEM or the device's error; win_lock held.
 */
static int read_window(struct czfs_nodecache *nc, struct czfs_node *n,
		       uint64_t first, uint64_t end)
{
	size_t len = (end - first) << CZFS_BLOCK_SHIFT;
	uint8_t *buf;
	int err;

	if (copy_cached(nc, n->blkaddr, n->data))
		return 0;
	buf = window_buf(nc, len);
	if (!buf)
		return -ENOMEM;
	err = czfs_bdev_read(nc->bdev, buf, len, first << CZFS_BLOCK_SHIFT);
	if (err)
		return err;
	memcpy(n->data, buf + ((n->blkaddr - first) << CZFS_BLOCK_SHIFT),
	       CZFS_BLOCK_SIZE);
	keep_window(nc, buf, first, (unsigned)(end - first));
	return 0;
}

/*
 * Read the block of a missed node into n->data: alone, or with its aligned
 * readahead window (inside the image) when one is set.
 */
static int read_block(struct czfs_nodecache *nc, struct czfs_node *n)
{
	uint64_t blkaddr = n->blkaddr, first, end;
	unsigned ra = nc->ra_blocks;
	int err;

	if (ra > 1) {
		first = MAX(blkaddr & ~(uint64_t)(ra - 1), CZFS_FIRST_DATA_BLKADDR);
		end = MIN(first + ra, MIN(nc->max_blocks,
					  nc->bdev->size >> CZFS_BLOCK_SHIFT));
		if (end > blkaddr + 1) {
			pthread_mutex_lock(&nc->win_lock);
			err = read_window(nc, n, first, end);
			pthread_mutex_unlock(&nc->win_lock);
			if (!err)
				return 0;
			/* no memory, or a window past a short image: the
			 * block alone */
		}
	}
	return czfs_bdev_read(nc->bdev, n->data, CZFS_BLOCK_SIZE,
			      blkaddr << CZFS_BLOCK_SHIFT);
}

/*
 * A missed leaf of a pack: read and decode the pack (win_lock held), copy
 * the leaf into n->data and keep its siblings, which a walk of the tree
 * asks for next.  A sibling that fails its check is left out (logged).
 */
static int read_pack(struct czfs_nodecache *nc, struct czfs_node *n)
{
	uint64_t ptr = n->blkaddr, base = czfs_leafpack_base(ptr);
	unsigned nb = czfs_leafpack_nblocks(ptr), idx = czfs_leafpack_index(ptr);
	unsigned count, i;
	uint8_t *raw;
	int err;

	if (copy_cached(nc, ptr, n->data))
		return 0;
	if (!nc->codec)
		nc->codec = czfs_codec_new();
	if (!nc->pack_out && posix_memalign((void **)&nc->pack_out,
					    CZFS_BLOCK_SIZE,
					    CZFS_LEAFPACK_MAX * CZFS_BLOCK_SIZE))
		nc->pack_out = NULL;
	raw = window_buf(nc, (size_t)nb << CZFS_BLOCK_SHIFT);
	if (!nc->codec || !nc->pack_out || !raw)
		return -ENOMEM;
	err = czfs_bdev_read(nc->bdev, raw, (size_t)nb << CZFS_BLOCK_SHIFT,
			     base << CZFS_BLOCK_SHIFT);
	if (!err)
		err = czfs_leafpack_decode(raw, ptr, nc->codec, nc->pack_out,
					   &count);
	if (err)
		return err;
	memcpy(n->data, nc->pack_out + ((size_t)idx << CZFS_BLOCK_SHIFT),
	       CZFS_BLOCK_SIZE);
	for (i = 0; i < count; i++) {
		const uint8_t *blk = nc->pack_out + ((size_t)i << CZFS_BLOCK_SHIFT);
		uint64_t sib = czfs_leafpack_ptr(base, nb, i);

		if (i != idx && !czfs_node_check(blk, czfs_leafpack_self(sib), 0,
						 0, nc->max_blocks))
			keep_clean(nc, blk, sib);
	}
	pthread_mutex_lock(&nc->lock);
	nc->packs++;
	pthread_mutex_unlock(&nc->lock);
	return 0;
}

static int read_node(struct czfs_nodecache *nc, uint64_t blkaddr,
		     uint64_t want_gen, int want_level, struct czfs_node **out)
{
	struct czfs_node *n = node_alloc(blkaddr);
	int err;

	if (!n)
		return -ENOMEM;
	if (czfs_leafpack_is(blkaddr)) {
		pthread_mutex_lock(&nc->win_lock);
		err = read_pack(nc, n);
		pthread_mutex_unlock(&nc->win_lock);
	} else {
		err = read_block(nc, n);
	}
	if (err) {
		czfs_err("node %llu: read failed: %s",
			 (unsigned long long)blkaddr, strerror(-err));
		goto out_free;
	}
	err = czfs_node_check(n->data, czfs_leafpack_is(blkaddr) ?
				       czfs_leafpack_self(blkaddr) : blkaddr,
			      want_gen, want_level, nc->max_blocks);
	if (err)
		goto out_free;
	n->refs = 1;
	*out = n;
	return 0;
out_free:
	node_free(n);
	return err;
}

void czfs_nodecache_set_limit(struct czfs_nodecache *nc, uint64_t max_blocks)
{
	nc->max_blocks = max_blocks;
}

void czfs_nodecache_set_readahead(struct czfs_nodecache *nc, unsigned nblocks)
{
	if (nblocks > CZFS_NODE_READAHEAD_MAX)
		nblocks = CZFS_NODE_READAHEAD_MAX;
	while (nblocks & (nblocks - 1))		/* a power of two */
		nblocks &= nblocks - 1;
	pthread_mutex_lock(&nc->lock);
	nc->ra_blocks = nblocks;
	pthread_mutex_unlock(&nc->lock);
}

int czfs_node_get(struct czfs_nodecache *nc, uint64_t blkaddr,
		  uint64_t want_gen, int want_level, struct czfs_node **out)
{
	struct czfs_node *n, *other;
	int err;

	if (!czfs_node_ptr_in(blkaddr, CZFS_FIRST_DATA_BLKADDR, nc->max_blocks)) {
		czfs_err("node %llu: address outside [%u, %llu)",
			 (unsigned long long)blkaddr, CZFS_FIRST_DATA_BLKADDR,
			 (unsigned long long)nc->max_blocks);
		return -EFSCORRUPTED;
	}
	pthread_mutex_lock(&nc->lock);
	n = grab(nc, blkaddr);
	if (n)
		nc->hits++;
	else
		note_miss(nc, blkaddr);
	pthread_mutex_unlock(&nc->lock);
	if (n)
		return verify_cached(nc, n, want_gen, want_level, out);

	err = read_node(nc, blkaddr, want_gen, want_level, &n);
	if (err)
		return err;
	pthread_mutex_lock(&nc->lock);
	other = grab(nc, blkaddr);
	if (!other) {
		hash_add(nc, n);
		nc->nclean++;
		evict_excess(nc);
	}
	pthread_mutex_unlock(&nc->lock);
	if (!other) {
		*out = n;
		return 0;
	}
	/* Another reader inserted it while we read: use theirs. */
	node_free(n);
	return verify_cached(nc, other, want_gen, want_level, out);
}

void czfs_node_put(struct czfs_nodecache *nc, struct czfs_node *node)
{
	if (!node)
		return;
	pthread_mutex_lock(&nc->lock);
	if (--node->refs == 0) {
		if (!node->blkaddr) {
			node_free(node);	/* dropped: its block was freed */
		} else if (!node->dirty) {
			list_add(&nc->lru_head, &nc->lru_tail, node);
			evict_excess(nc);
		}
	}
	pthread_mutex_unlock(&nc->lock);
}

void czfs_nodecache_stats(struct czfs_nodecache *nc,
			  struct czfs_nodecache_stats *st)
{
	pthread_mutex_lock(&nc->lock);
	st->hits = nc->hits;
	st->misses = nc->misses;
	st->evictions = nc->evictions;
	st->nodes = nc->nnodes;
	st->dirty = nc->ndirty;
	st->readahead = nc->ra_nodes;
	st->packs = nc->packs;
	st->refaults = nc->refaults;
	st->limit = nc->limit;
	pthread_mutex_unlock(&nc->lock);
}

void czfs_nodecache_trim(struct czfs_nodecache *nc, unsigned keep)
{
	pthread_mutex_lock(&nc->lock);
	if (nc->ghosts)		/* halved: a busy spell may resume */
		nc->limit = MAX(nc->base, nc->limit / 2);
	evict_to(nc, keep);
	pthread_mutex_unlock(&nc->lock);
}

void czfs_nodecache_forget(struct czfs_nodecache *nc, uint64_t blkaddr)
{
	struct czfs_node *n;

	pthread_mutex_lock(&nc->lock);
	n = hash_find(nc, blkaddr);
	if (n && !n->refs && !n->dirty)
		evict(nc, n);
	pthread_mutex_unlock(&nc->lock);
}

/* ---- dirty nodes (the copy-on-write code) ------------------------------- */

int czfs_nodecache_new(struct czfs_nodecache *nc, uint64_t blkaddr,
		       struct czfs_node **dirty_list, struct czfs_node **out)
{
	struct czfs_node *n = node_alloc(blkaddr), *old;

	if (!n)
		return -ENOMEM;
	pthread_mutex_lock(&nc->lock);
	old = hash_find(nc, blkaddr);
	if (old && (old->refs || old->dirty)) {
		pthread_mutex_unlock(&nc->lock);
		node_free(n);
		czfs_err("node %llu: allocated while still in use",
			 (unsigned long long)blkaddr);
		return -EEXIST;
	}
	if (old)
		evict(nc, old);		/* stale copy of a freed block */
	n->refs = 1;
	n->dirty = true;
	hash_add(nc, n);
	nc->ndirty++;
	list_add(dirty_list, NULL, n);
	pthread_mutex_unlock(&nc->lock);
	*out = n;
	return 0;
}

void czfs_nodecache_drop(struct czfs_nodecache *nc, struct czfs_node *node,
			 struct czfs_node **dirty_list)
{
	pthread_mutex_lock(&nc->lock);
	if (node->dirty) {
		list_del(dirty_list, NULL, node);
		node->dirty = false;
		nc->ndirty--;
	} else {
		nc->nclean--;
	}
	hash_del(nc, node);
	node->blkaddr = 0;
	pthread_mutex_unlock(&nc->lock);
}

bool czfs_node_is_dirty(const struct czfs_node *node)
{
	/* Only the transaction changes it, under the caller's tree lock. */
	return node->dirty;
}

int czfs_nodecache_dirty_array(struct czfs_node *dirty_list,
			       struct czfs_node ***out, size_t *n)
{
	struct czfs_node **arr, *d;
	size_t count = 0;

	for (d = dirty_list; d; d = d->lru_next)
		count++;
	arr = malloc(MAX(count, 1) * sizeof(*arr));
	if (!arr)
		return -ENOMEM;
	count = 0;
	for (d = dirty_list; d; d = d->lru_next)
		arr[count++] = d;
	*out = arr;
	*n = count;
	return 0;
}

void czfs_nodecache_clean(struct czfs_nodecache *nc,
			  struct czfs_node **dirty_list)
{
	struct czfs_node *d, *next;

	pthread_mutex_lock(&nc->lock);
	for (d = *dirty_list; d; d = next) {
		next = d->lru_next;
		d->dirty = false;
		nc->ndirty--;
		nc->nclean++;
		d->lru_prev = d->lru_next = NULL;
		if (!d->refs)
			list_add(&nc->lru_head, &nc->lru_tail, d);
	}
	*dirty_list = NULL;
	evict_excess(nc);
	pthread_mutex_unlock(&nc->lock);
}
