// SPDX-License-Identifier: MIT
/* Cluster cache: hash of (ino, idx) → pool run, LRU eviction. */
#include "config.h"

#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "ccache.h"
#include "pagepool.h"
#include "util.h"

/* An evicted cluster, remembered to tell a refault (see czfs_ccache_set_low). */
struct shadow {
	uint64_t ino, idx;
	uint64_t seq;			/* cc->evicted after it left; 0: empty */
	uint32_t pages;
};

#define SHADOWS		4096	/* power of 2 */

struct czfs_ccache {
	pthread_mutex_t lock;
	pthread_cond_t loaded;		/* broadcast when a load ends */
	struct czfs_pool *pool;
	struct czfs_centry **hash;
	uint64_t hmask;
	struct czfs_centry lru;		/* list head: next = oldest */
	uint64_t nr, max;
	size_t entry_size;		/* the owner's, its state after the entry */
	unsigned wait_ms;
	bool punch;
	unsigned (*shrink)(void *arg);	/* czfs_ccache_set_shrinker */
	void *shrink_arg;
	void (*on_idle)(void *arg);	/* czfs_ccache_start_trimmer */
	void *on_idle_arg;
	struct czfs_ccache_stats st;
	/* What the LRU list may hold, between low and the pool (set_low) */
	uint64_t lru_pages, target, low, ceiling;
	uint64_t evicted, decay;	/* pages evicted; decay's remainder */
	uint64_t tick_uses;		/* hits + misses at the last idle tick */
	struct shadow *shadows;
	/* the idle trimmer thread (czfs_ccache_start_trimmer) */
	pthread_t trimmer;
	pthread_cond_t wake;
	bool trimming, stop;
};

static unsigned entry_pages(const struct czfs_centry *e)
{
	return e->page == CZFS_NO_PAGE ? 0 : 1u << e->order;
}

static uint64_t mix(uint64_t ino, uint64_t idx)
{
	uint64_t h = ino * 0x9e3779b97f4a7c15ull ^ (idx + 0x632be59bd9b4e019ull);

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 32);
}

static uint64_t ce_hash(const struct czfs_ccache *cc, uint64_t ino, uint64_t idx)
{
	return mix(ino, idx) & cc->hmask;
}

static void lru_del(struct czfs_ccache *cc, struct czfs_centry *e)
{
	cc->lru_pages -= entry_pages(e);
	e->lru_prev->lru_next = e->lru_next;
	e->lru_next->lru_prev = e->lru_prev;
	e->lru_prev = e->lru_next = NULL;
}

static void lru_add_tail(struct czfs_ccache *cc, struct czfs_centry *e)
{
	cc->lru_pages += entry_pages(e);
	e->lru_prev = cc->lru.lru_prev;
	e->lru_next = &cc->lru;
	cc->lru.lru_prev->lru_next = e;
	cc->lru.lru_prev = e;
}

static struct czfs_centry *hash_find(struct czfs_ccache *cc, uint64_t ino,
				     uint64_t idx)
{
	struct czfs_centry *e = cc->hash[ce_hash(cc, ino, idx)];

	while (e && (e->ino != ino || e->idx != idx))
		e = e->hnext;
	return e;
}

static void hash_del(struct czfs_ccache *cc, struct czfs_centry *e)
{
	struct czfs_centry **pp = &cc->hash[ce_hash(cc, e->ino, e->idx)];

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	e->dead = true;
	cc->nr--;
}

static void entry_free(struct czfs_ccache *cc, struct czfs_centry *e)
{
	if (e->page != CZFS_NO_PAGE)
		czfs_pool_free(cc->pool, e->page, e->order);
	free(e);
}

static struct shadow *shadow_of(struct czfs_ccache *cc, uint64_t ino,
				uint64_t idx)
{
	return &cc->shadows[mix(ino, idx) & (SHADOWS - 1)];
}

/*
 * e leaves: remember it, and let the target decay by target/ceiling of
 * each page evicted.  A refault within target pages grows it by the
 * cluster (note_refault): so the target grows only when the clusters read
 * again fit in the ceiling (a random read over a file larger than the
 * ceiling would gain a fraction of its reads for the memory), and falls
 * back to low otherwise.
 */
static void note_eviction(struct czfs_ccache *cc, const struct czfs_centry *e)
{
	struct shadow *sh = shadow_of(cc, e->ino, e->idx);
	unsigned pages = entry_pages(e);

	cc->evicted += pages;
	*sh = (struct shadow){ e->ino, e->idx, cc->evicted, pages };
	cc->decay += pages * cc->target;
	cc->target -= MIN(cc->target - cc->low, cc->decay / cc->ceiling);
	cc->decay %= cc->ceiling;
}

/* A miss: a cluster evicted within target pages grows the target. */
static void note_refault(struct czfs_ccache *cc, uint64_t ino, uint64_t idx)
{
	struct shadow *sh = shadow_of(cc, ino, idx);

	if (!sh->seq || sh->ino != ino || sh->idx != idx)
		return;
	if (cc->evicted - sh->seq <= cc->target) {
		cc->target = MIN(cc->target + sh->pages, cc->ceiling);
		cc->st.refaults++;
	}
	sh->seq = 0;
}

/* Evict the oldest unreferenced entry; returns pages freed, 0 if none. */
static unsigned evict_one(struct czfs_ccache *cc)
{
	struct czfs_centry *e = cc->lru.lru_next;
	unsigned pages;

	if (e == &cc->lru)
		return 0;
	lru_del(cc, e);
	hash_del(cc, e);
	if (cc->shadows)
		note_eviction(cc, e);
	pages = e->page == CZFS_NO_PAGE ? 1 : 1u << e->order;
	if (cc->punch && e->page != CZFS_NO_PAGE)
		czfs_pool_punch(cc->pool, e->page, e->order);
	entry_free(cc, e);
	cc->st.evictions++;
	return pages;
}

/* Cut the LRU list to the target. */
static void evict_to_target(struct czfs_ccache *cc)
{
	while (cc->lru_pages > cc->target && evict_one(cc))
		;
}

int czfs_ccache_create(struct czfs_pool *pool, unsigned max_entries,
		       size_t entry_size, struct czfs_ccache **out)
{
	struct czfs_pool_stats ps;
	struct czfs_ccache *cc;
	uint64_t buckets = 1024;

	if (entry_size < sizeof(struct czfs_centry))
		return -EINVAL;
	czfs_pool_get_stats(pool, &ps);
	cc = calloc(1, sizeof(*cc));
	if (!cc)
		return -ENOMEM;
	cc->max = max_entries ? max_entries : ps.pages;
	while (buckets < cc->max)
		buckets <<= 1;
	cc->hash = calloc(buckets, sizeof(*cc->hash));
	if (!cc->hash) {
		free(cc);
		return -ENOMEM;
	}
	cc->hmask = buckets - 1;
	cc->entry_size = entry_size;
	cc->pool = pool;
	cc->target = cc->low = cc->ceiling = ps.pages;
	cc->wait_ms = CZFS_CCACHE_WAIT_MS;
	cc->lru.lru_next = cc->lru.lru_prev = &cc->lru;
	pthread_mutex_init(&cc->lock, NULL);
	pthread_cond_init(&cc->loaded, NULL);
	pthread_cond_init(&cc->wake, NULL);
	*out = cc;
	return 0;
}

void czfs_ccache_destroy(struct czfs_ccache *cc)
{
	if (!cc)
		return;
	czfs_ccache_stop_trimmer(cc);
	for (uint64_t b = 0; b <= cc->hmask; b++) {
		while (cc->hash[b]) {
			struct czfs_centry *e = cc->hash[b];

			cc->hash[b] = e->hnext;
			entry_free(cc, e);
		}
	}
	pthread_cond_destroy(&cc->loaded);
	pthread_cond_destroy(&cc->wake);
	pthread_mutex_destroy(&cc->lock);
	free(cc->shadows);
	free(cc->hash);
	free(cc);
}

static struct czfs_centry *insert_loading(struct czfs_ccache *cc, uint64_t ino,
					  uint64_t idx)
{
	struct czfs_centry *e = calloc(1, cc->entry_size);
	uint64_t b;

	if (!e)
		return NULL;
	if (cc->nr >= cc->max)
		evict_one(cc);
	e->ino = ino;
	e->idx = idx;
	e->page = CZFS_NO_PAGE;
	e->state = CZFS_CE_LOADING;
	e->refs = 1;
	b = ce_hash(cc, ino, idx);
	e->hnext = cc->hash[b];
	cc->hash[b] = e;
	cc->nr++;
	return e;
}

int czfs_ccache_get(struct czfs_ccache *cc, uint64_t ino, uint64_t idx,
		    unsigned flags, struct czfs_centry **out)
{
	struct czfs_centry *e;
	int ret = 0;

	pthread_mutex_lock(&cc->lock);
	for (;;) {
		e = hash_find(cc, ino, idx);
		if (!e || e->state == CZFS_CE_READY)
			break;
		if (flags & CZFS_CC_NOWAIT) {
			pthread_mutex_unlock(&cc->lock);
			return -EAGAIN;
		}
		cc->st.waits++;
		e->waited = true;
		pthread_cond_wait(&cc->loaded, &cc->lock);
	}
	if (e) {
		if (!e->refs++)
			lru_del(cc, e);
		cc->st.hits++;
	} else if (!(flags & CZFS_CC_CREATE)) {
		ret = -ENOENT;
	} else {
		if (cc->shadows)
			note_refault(cc, ino, idx);
		e = insert_loading(cc, ino, idx);
		ret = e ? 1 : -ENOMEM;
		cc->st.misses += !!e;
	}
	pthread_mutex_unlock(&cc->lock);
	*out = e;
	return ret;
}

/* Evict one entry, else ask the shrinker: the pages freed. */
static unsigned reclaim_some(struct czfs_ccache *cc)
{
	unsigned freed;

	pthread_mutex_lock(&cc->lock);
	freed = evict_one(cc);
	pthread_mutex_unlock(&cc->lock);
	if (!freed && cc->shrink)
		freed = cc->shrink(cc->shrink_arg);
	return freed;
}

int czfs_ccache_alloc_run(struct czfs_ccache *cc, struct czfs_centry *e,
			  unsigned order, unsigned flags)
{
	int err;

	while ((err = czfs_pool_alloc(cc->pool, order, &e->page))) {
		if (reclaim_some(cc))
			continue;
		/* Everything is in use: wait for a reader to let go. */
		if ((flags & CZFS_CC_NOWAIT) ||
		    czfs_pool_wait(cc->pool, cc->wait_ms)) {
			e->page = CZFS_NO_PAGE;
			return err;
		}
	}
	e->order = (uint8_t)order;
	return 0;
}

int czfs_ccache_fill_hole(struct czfs_ccache *cc, struct czfs_centry *e,
			  unsigned order)
{
	struct czfs_centry tmp = { .page = CZFS_NO_PAGE };
	int err = czfs_ccache_alloc_run(cc, &tmp, order, 0);
	bool lost;

	if (err)
		return err;
	memset(czfs_pool_addr(cc->pool, tmp.page), 0, (size_t)CZFS_PAGE_SIZE << order);
	/* Two writers may fill the same hole: the first one's pages stay,
	 * or what it wrote there would be lost. */
	pthread_mutex_lock(&cc->lock);
	lost = e->page != CZFS_NO_PAGE;
	if (!lost) {
		e->order = (uint8_t)order;
		__atomic_store_n(&e->page, tmp.page, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&cc->lock);
	if (lost)
		czfs_pool_free(cc->pool, tmp.page, order);
	return 0;
}

static void put_locked(struct czfs_ccache *cc, struct czfs_centry *e, bool used)
{
	if (--e->refs)
		return;
	if (!e->dead && used) {
		hash_del(cc, e);
		cc->st.recycled++;
	}
	if (e->dead) {
		entry_free(cc, e);
		return;
	}
	lru_add_tail(cc, e);
	evict_to_target(cc);
}

/*
 * The waiters wake only for an entry someone waits for (a prefetch worker
 * loads one cluster after another, and each load woke every waiting reader
 * for nothing), and after the unlock (woken under it, a waiter blocks
 * again on the mutex at once: a second switch).
 */
void czfs_ccache_loaded(struct czfs_ccache *cc, struct czfs_centry *e, int err)
{
	bool wake;

	pthread_mutex_lock(&cc->lock);
	if (err) {
		if (!e->dead)
			hash_del(cc, e);
	} else {
		e->state = CZFS_CE_READY;
	}
	wake = e->waited;
	e->waited = false;
	cc->st.wakes += wake;
	pthread_mutex_unlock(&cc->lock);
	if (wake)
		pthread_cond_broadcast(&cc->loaded);
}

void czfs_ccache_put(struct czfs_ccache *cc, struct czfs_centry *e)
{
	pthread_mutex_lock(&cc->lock);
	put_locked(cc, e, false);
	pthread_mutex_unlock(&cc->lock);
}

void czfs_ccache_set_wait(struct czfs_ccache *cc, unsigned ms)
{
	cc->wait_ms = ms;
}

void czfs_ccache_set_punch(struct czfs_ccache *cc, bool punch)
{
	cc->punch = punch;
}

void czfs_ccache_put_used(struct czfs_ccache *cc, struct czfs_centry *e)
{
	pthread_mutex_lock(&cc->lock);
	put_locked(cc, e, true);
	pthread_mutex_unlock(&cc->lock);
}

bool czfs_ccache_contains(struct czfs_ccache *cc, uint64_t ino, uint64_t idx)
{
	bool found;

	pthread_mutex_lock(&cc->lock);
	found = hash_find(cc, ino, idx) != NULL;
	pthread_mutex_unlock(&cc->lock);
	return found;
}

bool czfs_ccache_live(struct czfs_ccache *cc, const struct czfs_centry *e)
{
	bool live;

	pthread_mutex_lock(&cc->lock);
	live = !e->dead;
	pthread_mutex_unlock(&cc->lock);
	return live;
}

void czfs_ccache_invalidate(struct czfs_ccache *cc, uint64_t ino, uint64_t from)
{
	czfs_ccache_invalidate_range(cc, ino, from, UINT64_MAX);
}

static void invalidate(struct czfs_ccache *cc, struct czfs_centry *e)
{
	hash_del(cc, e);
	if (!e->refs) {
		lru_del(cc, e);
		entry_free(cc, e);
	}
}

/* A short range is looked up index by index, not by a scan of the hash:
 * writeback drops one entry at a time (a partial one, written back). */
#define INVALIDATE_LOOKUPS	64

void czfs_ccache_invalidate_range(struct czfs_ccache *cc, uint64_t ino,
				  uint64_t from, uint64_t to)
{
	pthread_mutex_lock(&cc->lock);
	if (to > from && to - from <= INVALIDATE_LOOKUPS) {
		for (uint64_t idx = from; idx < to; idx++) {
			struct czfs_centry *e = hash_find(cc, ino, idx);

			if (e)
				invalidate(cc, e);
		}
		pthread_mutex_unlock(&cc->lock);
		return;
	}
	for (uint64_t b = 0; b <= cc->hmask; b++) {
		struct czfs_centry *e = cc->hash[b], *next;

		for (; e; e = next) {
			next = e->hnext;
			if (e->ino == ino && e->idx >= from && e->idx < to)
				invalidate(cc, e);
		}
	}
	pthread_mutex_unlock(&cc->lock);
}

unsigned czfs_ccache_shrink(struct czfs_ccache *cc, unsigned n)
{
	unsigned freed = 0, got;

	while (freed < n && (got = reclaim_some(cc)))
		freed += got;
	return freed;
}

void czfs_ccache_set_shrinker(struct czfs_ccache *cc,
			      unsigned (*shrink)(void *arg), void *arg)
{
	cc->shrink = shrink;
	cc->shrink_arg = arg;
}

int czfs_ccache_set_low(struct czfs_ccache *cc, uint64_t low_pages)
{
	struct shadow *sh = calloc(SHADOWS, sizeof(*sh));

	if (!sh)
		return -ENOMEM;
	pthread_mutex_lock(&cc->lock);
	free(cc->shadows);
	cc->shadows = sh;
	cc->low = cc->target = MIN(low_pages, cc->ceiling);
	evict_to_target(cc);
	pthread_mutex_unlock(&cc->lock);
	return 0;
}

bool czfs_ccache_idle(struct czfs_ccache *cc)
{
	uint64_t uses, keep;
	bool idle;

	pthread_mutex_lock(&cc->lock);
	uses = cc->st.hits + cc->st.misses;
	idle = uses == cc->tick_uses;
	cc->tick_uses = uses;
	keep = cc->low;
	if (idle && cc->shadows) {
		cc->target = MAX(cc->low, cc->target / 2);
		evict_to_target(cc);
	}
	pthread_mutex_unlock(&cc->lock);
	if (keep >= cc->ceiling)
		return idle;
	if (idle && cc->on_idle)	/* the owner's other caches */
		cc->on_idle(cc->on_idle_arg);
	/* what the daemon's threads freed (decoded packs, nodes) lies in
	 * their malloc arenas: give it back too */
	if (idle)
		malloc_trim(0);
	{
		/* Busy: free runs the buddy allocator split around (a random
		 * reader's temporary pages) may be resident; keep a quarter of
		 * low of them to allocate from.  Idle: the clusters kept (low
		 * of them at least) and no free page. */
		struct czfs_pool_stats ps;

		czfs_pool_get_stats(cc->pool, &ps);
		keep = (idle ? 0 : keep / 4) + ps.used + ps.reserve_fill;
	}
	while (czfs_pool_trim(cc->pool, (uint32_t)MIN(keep, cc->ceiling)))
		;
	return idle;
}

static void *trimmer(void *arg)
{
	struct czfs_ccache *cc = arg;
	struct timespec until;

	pthread_mutex_lock(&cc->lock);
	while (!cc->stop) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += CZFS_CCACHE_TICK_S;
		pthread_cond_timedwait(&cc->wake, &cc->lock, &until);
		if (cc->stop)
			break;
		pthread_mutex_unlock(&cc->lock);
		czfs_ccache_idle(cc);
		pthread_mutex_lock(&cc->lock);
	}
	pthread_mutex_unlock(&cc->lock);
	return NULL;
}

int czfs_ccache_start_trimmer(struct czfs_ccache *cc,
			      void (*on_idle)(void *arg), void *arg)
{
	int err;

	cc->on_idle = on_idle;
	cc->on_idle_arg = arg;
	err = -pthread_create(&cc->trimmer, NULL, trimmer, cc);

	cc->trimming = !err;
	return err;
}

void czfs_ccache_stop_trimmer(struct czfs_ccache *cc)
{
	if (!cc->trimming)
		return;
	pthread_mutex_lock(&cc->lock);
	cc->stop = true;
	pthread_cond_broadcast(&cc->wake);
	pthread_mutex_unlock(&cc->lock);
	pthread_join(cc->trimmer, NULL);
	cc->trimming = false;
}

void czfs_ccache_get_stats(struct czfs_ccache *cc, struct czfs_ccache_stats *st)
{
	pthread_mutex_lock(&cc->lock);
	*st = cc->st;
	st->entries = cc->nr;
	st->lru_pages = cc->lru_pages;
	st->target = cc->target;
	pthread_mutex_unlock(&cc->lock);
}
