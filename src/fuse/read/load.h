/* SPDX-License-Identifier: MIT */
/*
 * The loader: the one way a cluster comes from the image into the cluster
 * cache, for the FUSE threads and the prefetch workers alike.  As f2fs
 * decompresses a cluster: the items are found in the library
 * (czfs_cluster_lookup); the stored blocks (cpages) come from the stream's
 * staging while its reader is sequential, else they are read together into
 * temporary pages (a raw cluster straight into its own pages); the
 * cluster's pool pages (rpages) are allocated in the cluster cache; the
 * window cache gives both a contiguous view (cbuf, rbuf) and the codec
 * decodes one into the other.
 *
 * Threads: every function may run in any FUSE thread or prefetch worker.
 */
#ifndef CZFS_FUSE_LOAD_H
#define CZFS_FUSE_LOAD_H

#include <stdint.h>

#include "cluster.h"
#include "staging.h"
#include "temp.h"

struct czfs_daemon;
struct czfs_centry;
struct czfs_inode_info;
struct czfs_pentry;

#define CZFS_BATCH_MAX	64	/* clusters loaded together */

/* Cluster items of [first, first + n), n <= CZFS_BATCH_MAX; absent = hole. */
struct czfs_cluster_batch {
	uint64_t first;
	unsigned n;
	unsigned long long version;	/* dm->items_version before the lookup */
	struct czfs_cluster_info ci[CZFS_BATCH_MAX];
	uint8_t inl[CZFS_BATCH_MAX][CZFS_INLINE_MAX];
};

/* The items of clusters first .. first + n - 1 of ii (inline bytes into
 * inl), looked up under fs->lock shared: czfs_cluster_lookup's returns.
 * The one locked item lookup of the daemon. */
int czfs_load_items(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		    uint64_t first, unsigned n, struct czfs_cluster_info *ci,
		    void *inl);

/* Fill b->ci for b->first, b->n with one walk of the tree, and b->version:
 * 0 or -errno. */
int czfs_load_lookup(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		     struct czfs_cluster_batch *b);

/*
 * The items of b may be older than a claim made after its lookup (a
 * writeback changed them since): look cluster i up again when any item
 * has changed since b was looked up.  0 or -errno.
 */
int czfs_load_refresh(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		      struct czfs_cluster_batch *b, unsigned i);

/* One claimed (LOADING) cache entry to load, and what came of it. */
struct czfs_load {
	struct czfs_centry *e;
	int err;
	/* the loader's own */
	const struct czfs_cluster_info *ci;
	const uint32_t *cpages;		/* where the stored blocks are */
	struct czfs_stage_ref ref;	/* ... from the stream's staging */
	struct czfs_temp tp;		/* ... read alone: compressed input */
	struct czfs_pentry *pe;		/* a PACKED cluster's decoded pack,
					 * cached: no blocks to read; or
					 * claimed (LOADING): we decode it */
	bool pe_claimed;
	bool pe_wait;			/* another thread decodes its pack */
	uint32_t pages[CZFS_MAX_CLUSTER_BLOCKS];	/* raw in place / staged */
	void *addrs[CZFS_MAX_CLUSTER_BLOCKS];
};

/*
 * Who loads: the counter it is counted in, and what it does with blocks
 * the staging cannot give.  Behind the cursor (-ENOENT) both read them
 * apart; on another error (no memory, a read error) a reader reads them
 * apart too, and a prefetch worker gives up (the reader will load it).
 */
enum czfs_load_by { CZFS_LOAD_BY_READER, CZFS_LOAD_BY_PREFETCH };

/*
 * Load the claimed entries ls[0..n) (ascending idx, their items in b) and
 * mark each loaded with its result, ls[i].err; an entry whose err is set
 * on entry is marked loaded with that error.  stg: the stream's staging,
 * or NULL (the blocks are read apart).  A PACKED cluster whose pack
 * another thread is decoding is loaded last, from that decode, once this
 * thread's own pack decodes are done (it then holds no pack claim).
 */
void czfs_load_batch(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		     struct czfs_staging *stg, const struct czfs_cluster_batch *b,
		     struct czfs_load *ls, unsigned n, enum czfs_load_by by);

/*
 * Get clusters [first, first + n) of the file (n <= CZFS_BATCH_MAX) into
 * ents[]: take what the cache has, load the missing ones in this thread
 * together (one tree walk; their stored blocks through stg, the stream's
 * staging while it is sequential, else read together), wait for those
 * another thread loads.  Returns 0 with n references, or -errno with none.
 */
int czfs_load_get(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		  struct czfs_staging *stg, uint64_t first, unsigned n,
		  struct czfs_centry **ents);

/*
 * Cluster idx for a write of whole blocks: as czfs_load_get, but a
 * BLOCKMAP cluster not in the cache is not loaded: its entry is partial
 * (only the blocks the writes set in wmask hold data; its len is the
 * item's), since writeback keeps the other blocks where they are.  Every
 * other way to an entry (czfs_load_get, writeback) completes a partial
 * one first.  Returns 0 with a reference in *e, or -errno.
 */
int czfs_load_blocks(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		     uint64_t idx, struct czfs_centry **e);

/*
 * Complete a partial entry: its stored item read and decoded, the blocks
 * not in wmask copied into its pages under dm->partial_lock (which the
 * writes into a partial entry take too), then not partial.  0 (also for
 * an entry that is not partial) or -errno.
 */
int czfs_load_complete(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		       struct czfs_centry *e);

#endif /* CZFS_FUSE_LOAD_H */
