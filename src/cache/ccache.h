/* SPDX-License-Identifier: MIT */
/*
 * Cluster cache: decompressed clusters in page-pool pages, keyed by
 * (inode, cluster index), as f2fs keeps a cluster's pages together.
 *
 * An entry is LOADING while one thread fills it (others wait for it) and
 * READY afterwards.  Unreferenced READY entries sit on an LRU list; when
 * the pool has no run to give, the least recently used entries are
 * evicted.  A hole is an entry without pages (page == CZFS_NO_PAGE).
 *
 * Threads: every function is safe to call concurrently.
 */
#ifndef CZFS_CCACHE_H
#define CZFS_CCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct czfs_pool;

enum czfs_centry_state {
	CZFS_CE_LOADING,
	CZFS_CE_READY,
};

/*
 * A cached cluster.  Its owner may keep per-entry state of its own after
 * it (czfs_ccache_create's entry_size): the cache allocates and zeroes
 * that much for each entry, this struct first, and never reads the rest.
 */
struct czfs_centry {
	uint64_t ino, idx;
	uint32_t page;			/* first page of the run, or NO_PAGE */
	uint8_t order;			/* run of 2^order pages */
	uint8_t state;			/* enum czfs_centry_state */
	uint32_t len;			/* bytes of file data held */
	/* private to ccache.c */
	unsigned refs;
	bool dead;			/* failed or invalidated: not in the hash */
	bool waited;			/* LOADING, and a thread waits for it */
	struct czfs_centry *hnext, *lru_prev, *lru_next;
};

/* The page numbers of e's run, in order: 2^e->order of them. */
static inline void czfs_centry_pages(const struct czfs_centry *e,
				     uint32_t *pages)
{
	for (unsigned i = 0; i < (1u << e->order); i++)
		pages[i] = e->page + i;
}

struct czfs_ccache;

struct czfs_ccache_stats {
	uint64_t hits, misses, waits, evictions, recycled, entries;
	uint64_t refaults;		/* misses that grew the target */
	uint64_t wakes;			/* loads that woke their waiters */
	uint64_t lru_pages, target;	/* unreferenced entries' pages; their cap */
};

/* A cache over pool holding at most max_entries entries (0 = pool pages),
 * each of entry_size bytes (>= sizeof(struct czfs_centry)). */
int czfs_ccache_create(struct czfs_pool *pool, unsigned max_entries,
		       size_t entry_size, struct czfs_ccache **out);
void czfs_ccache_destroy(struct czfs_ccache *cc);	/* accepts NULL */

#define CZFS_CC_CREATE	0x01	/* insert a LOADING entry when absent */
/* get: do not wait for another thread's load; alloc_run: for pages */
#define CZFS_CC_NOWAIT	0x02

/*
 * Find (ino, idx).  READY: returns 0 with a reference in *e.  Being loaded
 * by another thread: waits, then as READY (or tries again if that load
 * failed); with CZFS_CC_NOWAIT returns -EAGAIN instead.  Absent: with
 * CZFS_CC_CREATE, inserts a LOADING entry and returns 1: the caller must
 * fill it (czfs_ccache_alloc_run, then write the pages) and call
 * czfs_ccache_loaded; else returns -ENOENT.
 *
 * A thread holding LOADING entries must not wait for another's: use
 * CZFS_CC_NOWAIT until its own loads are done, or two loaders could wait
 * for each other.
 */
int czfs_ccache_get(struct czfs_ccache *cc, uint64_t ino, uint64_t idx,
		    unsigned flags, struct czfs_centry **e);

#define CZFS_CCACHE_WAIT_MS	5000	/* default of czfs_ccache_set_wait */

/*
 * Give a LOADING entry a run of 2^order pages, evicting unreferenced
 * entries (then asking the shrinker) as needed, and waiting for pages to
 * come back when every page is in use.  Returns 0, or -ENOMEM when nothing
 * came back in time (czfs_ccache_set_wait) or, with CZFS_CC_NOWAIT (a
 * prefetch: it must never hold a claim while it waits), at once.
 */
int czfs_ccache_alloc_run(struct czfs_ccache *cc, struct czfs_centry *e,
			  unsigned order, unsigned flags);

/*
 * Give a READY entry without pages (a hole) a zeroed run of 2^order pages,
 * so that it can be written: the pages are zeroed before readers can see
 * them.  Of two writers filling one hole at once, the first one's pages
 * stay (the second's are freed).  Returns 0 or -ENOMEM.
 */
int czfs_ccache_fill_hole(struct czfs_ccache *cc, struct czfs_centry *e,
			  unsigned order);

/* The loader is done: err == 0 makes the entry READY, else drops it. */
void czfs_ccache_loaded(struct czfs_ccache *cc, struct czfs_centry *e, int err);

/* Drop a reference from czfs_ccache_get (the last one of an entry that
 * was dropped frees it; a READY one goes on the LRU list). */
void czfs_ccache_put(struct czfs_ccache *cc, struct czfs_centry *e);

/* How long czfs_ccache_alloc_run waits for pages to come back. */
void czfs_ccache_set_wait(struct czfs_ccache *cc, unsigned ms);

/*
 * The pool's other holder of pages that can be dropped (the daemon's staged
 * requests): called, without the cache's lock, when an allocation found the
 * pool empty and nothing left to evict, before anyone waits.  It returns
 * the pages it gave back.
 */
void czfs_ccache_set_shrinker(struct czfs_ccache *cc,
			      unsigned (*shrink)(void *arg), void *arg);

/*
 * Low-memory mode: evicted clusters' pages are given back to the kernel
 * (punched out of the memfd), so the pool holds only what it caches, at
 * the price of a slower reclaim and of faults when the pages are reused.
 */
void czfs_ccache_set_punch(struct czfs_ccache *cc, bool punch);

/*
 * Put an entry whose data a reader has now read to its end: the kernel's
 * page cache holds that data now, so the entry is dropped (when nobody
 * else holds it) and its pages, still mapped and hot, serve the next
 * cluster: a stream recycles a few pages instead of faulting in the whole
 * pool.
 */
void czfs_ccache_put_used(struct czfs_ccache *cc, struct czfs_centry *e);

/*
 * Memory that follows use.  Unreferenced entries (the LRU list: clean, as
 * the dirty list holds a reference) keep at most a target of pages, which
 * starts at low_pages.  An entry read again soon after it was evicted
 * (within target pages of evictions: a cache twice as large would have
 * kept it) grows the target by its pages, up to the whole pool; every
 * eviction shrinks it by target/pool of the pages evicted, so it grows
 * only while what is read again fits in the pool.  Without this call the
 * target is the whole pool.  Returns 0 or -ENOMEM.
 */
int czfs_ccache_set_low(struct czfs_ccache *cc, uint64_t low_pages);

#define CZFS_CCACHE_TICK_S	1	/* the trimmer's period */

/*
 * One tick of the trimmer: when no entry was looked up since the last tick,
 * the target halves (not below low), the LRU list is cut to it, the
 * trimmer's on_idle is called, every free pool page and the free
 * memory of malloc's arenas (malloc_trim) are given back to the kernel;
 * when busy, the free pages beyond low that are still
 * resident are.  Returns whether it was idle.
 */
bool czfs_ccache_idle(struct czfs_ccache *cc);

/* A thread calling czfs_ccache_idle every CZFS_CCACHE_TICK_S seconds,
 * until stopped (czfs_ccache_destroy stops it too); on an idle tick it
 * calls on_idle(arg) (may be NULL), for the owner's other caches.  0 or
 * -errno. */
int czfs_ccache_start_trimmer(struct czfs_ccache *cc,
			      void (*on_idle)(void *arg), void *arg);
void czfs_ccache_stop_trimmer(struct czfs_ccache *cc);

/* True if (ino, idx) is cached or being loaded. */
bool czfs_ccache_contains(struct czfs_ccache *cc, uint64_t ino, uint64_t idx);

/* True while e is in the hash (not invalidated, not failed): an entry a
 * holder got before an invalidation is no longer the cluster's. */
bool czfs_ccache_live(struct czfs_ccache *cc, const struct czfs_centry *e);

/* Drop every entry of ino with idx >= from (referenced ones die on put). */
void czfs_ccache_invalidate(struct czfs_ccache *cc, uint64_t ino, uint64_t from);
/* The same for from <= idx < to. */
void czfs_ccache_invalidate_range(struct czfs_ccache *cc, uint64_t ino,
				  uint64_t from, uint64_t to);

/* Evict unreferenced entries, then ask the shrinker, until n pages were
 * freed (or nothing is left). */
unsigned czfs_ccache_shrink(struct czfs_ccache *cc, unsigned n);

/* A snapshot of the counters (each read atomically, not all at once). */
void czfs_ccache_get_stats(struct czfs_ccache *cc, struct czfs_ccache_stats *st);

#endif /* CZFS_CCACHE_H */
