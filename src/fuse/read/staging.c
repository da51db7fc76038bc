// SPDX-License-Identifier: MIT
/* Staging: the ordered, request-aligned read cursor of a stream. */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>

#include "daemon.h"
#include "fs.h"
#include "log.h"
#include "pagepool.h"
#include "staging.h"
#include "temp.h"
#include "util.h"

/* A request may be larger than one temp allocation (up to 4 MiB). */
#define STAGE_PARTS	(CZFS_MAX_REQUEST_LIMIT / CZFS_BLOCK_SIZE / CZFS_TEMP_MAX)

/* One backing request whose pages may still be needed. */
struct czfs_staged {
	uint64_t start, end;		/* image bytes */
	unsigned refs;
	bool ready;			/* read; false while in flight */
	/* dm->items_version when it was read: once a writeback has changed
	 * any item since, its blocks may have been freed and written anew
	 * (copy-on-write reuses freed blocks, discard zeroes them), so it
	 * serves no block any more */
	unsigned long long version;
	unsigned n;			/* pages, in tp[0], tp[1], ... */
	struct czfs_temp tp[STAGE_PARTS];
};

static uint32_t staged_page(const struct czfs_staged *st, unsigned i)
{
	return st->tp[i / CZFS_TEMP_MAX].pages[i % CZFS_TEMP_MAX];
}

static void staged_pages_free(struct czfs_daemon *dm, struct czfs_staged *st)
{
	for (unsigned k = 0; k < STAGE_PARTS; k++)
		czfs_temp_free(dm, &st->tp[k]);
}

/* n pages for st, in parts of at most CZFS_TEMP_MAX: 0 or -errno. */
static int staged_pages_alloc(struct czfs_daemon *dm, struct czfs_staged *st,
			      unsigned n, unsigned flags)
{
	unsigned tflags = flags & CZFS_STAGE_NOWAIT ? CZFS_TEMP_NOWAIT : 0;
	int err = n > STAGE_PARTS * CZFS_TEMP_MAX ? -EINVAL : 0;

	for (unsigned k = 0, done = 0; !err && done < n; k++) {
		unsigned m = MIN(n - done, (unsigned)CZFS_TEMP_MAX);

		err = czfs_temp_alloc(dm, m, &st->tp[k], &dm->st.stage_alloc,
				      tflags);
		done += m;
	}
	if (err)
		staged_pages_free(dm, st);
	else
		st->n = n;
	return err;
}

struct czfs_staging {
	struct czfs_staging *prev, *next;	/* dm->stagings */
	pthread_mutex_t lock;
	pthread_cond_t ready;		/* a request came in */
	unsigned waiters;		/* threads waiting on ready */
	uint64_t disk_pos;		/* where the next request starts */
	struct czfs_staged **st;	/* in image order, contiguous */
	unsigned n, cap;
};

struct czfs_staging *czfs_staging_new(struct czfs_daemon *dm)
{
	struct czfs_staging *stg = calloc(1, sizeof(*stg));

	if (!stg)
		return NULL;
	pthread_mutex_init(&stg->lock, NULL);
	pthread_cond_init(&stg->ready, NULL);
	stg->disk_pos = UINT64_MAX;
	pthread_mutex_lock(&dm->stg_lock);
	stg->next = dm->stagings;
	if (stg->next)
		stg->next->prev = stg;
	dm->stagings = stg;
	pthread_mutex_unlock(&dm->stg_lock);
	return stg;
}

static void staged_free(struct czfs_daemon *dm, struct czfs_staged *st)
{
	atomic_fetch_sub(&dm->staged_pages, st->n);
	staged_pages_free(dm, st);
	free(st);
}

static bool stale(struct czfs_daemon *dm, const struct czfs_staged *st)
{
	return st->ready && st->version != atomic_load(&dm->items_version);
}

/* Drop unreferenced requests that end at or before pos, and stale ones:
 * the pages freed. */
static unsigned drop_before(struct czfs_daemon *dm, struct czfs_staging *stg,
			    uint64_t pos)
{
	unsigned keep = 0, freed = 0;

	for (unsigned i = 0; i < stg->n; i++) {
		if ((stg->st[i]->end <= pos || stale(dm, stg->st[i])) &&
		    !stg->st[i]->refs && stg->st[i]->ready) {
			freed += stg->st[i]->n;
			staged_free(dm, stg->st[i]);
		} else {
			stg->st[keep++] = stg->st[i];
		}
	}
	stg->n = keep;
	return freed;
}

/*
 * Readers and prefetchers decode clusters a little out of order: keep the
 * requests of the last few max_request (at least 2 MiB) behind the cursor.
 */
static uint64_t keep_bytes(struct czfs_daemon *dm)
{
	return MAX(4ull * dm->io.max_request, 2ull << 20);
}

static void drop_behind(struct czfs_daemon *dm, struct czfs_staging *stg)
{
	/* over budget, keep nothing behind the cursor */
	uint64_t keep = atomic_load(&dm->staged_pages) > dm->stage_budget ? 0 :
			keep_bytes(dm);

	if (stg->disk_pos != UINT64_MAX && stg->disk_pos > keep)
		drop_before(dm, stg, stg->disk_pos - keep);
}

void czfs_staging_free(struct czfs_daemon *dm, struct czfs_staging *stg)
{
	if (!stg)
		return;
	pthread_mutex_lock(&dm->stg_lock);
	if (stg->prev)
		stg->prev->next = stg->next;
	else
		dm->stagings = stg->next;
	if (stg->next)
		stg->next->prev = stg->prev;
	pthread_mutex_unlock(&dm->stg_lock);
	drop_before(dm, stg, UINT64_MAX);
	free(stg->st);
	pthread_cond_destroy(&stg->ready);
	pthread_mutex_destroy(&stg->lock);
	free(stg);
}

/* Called with stg->lock held. */
static unsigned trim_locked(struct czfs_daemon *dm, struct czfs_staging *stg)
{
	unsigned freed = drop_before(dm, stg, UINT64_MAX);

	if (!stg->n)
		stg->disk_pos = UINT64_MAX;
	return freed;
}

void czfs_staging_trim(struct czfs_daemon *dm, struct czfs_staging *stg)
{
	pthread_mutex_lock(&stg->lock);
	trim_locked(dm, stg);
	pthread_mutex_unlock(&stg->lock);
}

unsigned czfs_staging_reclaim(void *arg)
{
	struct czfs_daemon *dm = arg;
	unsigned freed = 0;

	/* A staging whose lock is taken is busy (its owner may be the very
	 * thread that asks, in read_next): left alone. */
	pthread_mutex_lock(&dm->stg_lock);
	for (struct czfs_staging *stg = dm->stagings; stg; stg = stg->next) {
		if (pthread_mutex_trylock(&stg->lock))
			continue;
		freed += trim_locked(dm, stg);
		pthread_mutex_unlock(&stg->lock);
	}
	pthread_mutex_unlock(&dm->stg_lock);
	if (freed)
		atomic_fetch_add(&dm->st.stage_reclaimed, freed);
	return freed;
}

/* Where the request starting at start ends. */
static uint64_t request_end(struct czfs_daemon *dm, uint64_t start,
			    uint64_t need_end, uint64_t run_end)
{
	uint64_t max = dm->io.max_request, end;
	uint64_t image_end = czfs_fs_checkpointed_blocks(dm->fs) * CZFS_BLOCK_SIZE;

	if (dm->io.aligned)	/* whole aligned requests, read past need_end */
		end = MIN((start / max + 1) * max, image_end);
	else			/* the "before": cut where the run ends */
		end = MIN(start + max, MAX(run_end, need_end));
	/* Over budget, read only what is needed now. */
	if (atomic_load(&dm->staged_pages) + (end - start) / CZFS_BLOCK_SIZE >
	    dm->stage_budget)
		end = MIN(end, MAX(need_end, start + CZFS_BLOCK_SIZE));
	return end;
}

static int add_slot(struct czfs_staging *stg)
{
	return CZFS_GROW(stg->st, stg->n, stg->cap, 8);
}

/*
 * Reserve the cursor's next request and read it with the lock dropped, so
 * that other threads can reserve and read the ones after it meanwhile.
 * Called and returns with stg->lock held.
 */
static int read_next(struct czfs_daemon *dm, struct czfs_staging *stg,
		     uint64_t need_end, uint64_t run_end, unsigned flags)
{
	uint64_t start = stg->disk_pos, end;
	void *addrs[CZFS_MAX_REQUEST_LIMIT / CZFS_BLOCK_SIZE];
	struct czfs_io_seg seg;
	struct czfs_staged *st;
	int err;

	end = request_end(dm, start, need_end, run_end);
	/* Past the image's end as the last checkpoint knew it (a read-write
	 * mount writes beyond it before the next one): not staged, read
	 * apart.  Before parts, the huge page count failed the temp
	 * allocation with EINVAL, which did the same by chance. */
	if (end <= start || end - start > CZFS_MAX_REQUEST_LIMIT)
		return -ENOENT;
	st = calloc(1, sizeof(*st));
	if (!st || add_slot(stg)) {
		free(st);
		return -ENOMEM;
	}
	err = staged_pages_alloc(dm, st, (unsigned)((end - start) / CZFS_BLOCK_SIZE),
				 flags);
	if (err) {
		free(st);
		return err;
	}
	atomic_fetch_add(&dm->staged_pages, st->n);
	st->start = start;
	st->end = end;
	st->version = atomic_load(&dm->items_version);
	stg->st[stg->n++] = st;
	stg->disk_pos = end;
	for (unsigned i = 0; i < st->n; i++)
		addrs[i] = czfs_pool_addr(dm->pool, staged_page(st, i));
	seg = (struct czfs_io_seg){ start / CZFS_BLOCK_SIZE, st->n, addrs };
	pthread_mutex_unlock(&stg->lock);
	err = czfs_io_read(dm->fs->bdev, &seg, 1, &dm->io);
	pthread_mutex_lock(&stg->lock);
	st->ready = true;
	if (err) {
		/* forget it and the cursor: whoever needs it reads again */
		unsigned keep = 0;

		for (unsigned i = 0; i < stg->n; i++)
			if (stg->st[i] != st)
				stg->st[keep++] = stg->st[i];
		stg->n = keep;
		staged_free(dm, st);
		stg->disk_pos = UINT64_MAX;
		czfs_err("read error at block %llu: %s",
			 (unsigned long long)(start / CZFS_BLOCK_SIZE), strerror(-err));
		err = -EIO;
	}
	/* woken with the lock free, or a waiter blocks on it again at once */
	if (stg->waiters) {
		pthread_mutex_unlock(&stg->lock);
		pthread_cond_broadcast(&stg->ready);
		pthread_mutex_lock(&stg->lock);
	}
	return err;
}

/*
 * Pages of the leading staged blocks of [a, a + n blocks): returns how many
 * are staged (by requests that are not stale), and the requests holding
 * them in ref (no references taken).
 */
static unsigned staged_prefix(struct czfs_daemon *dm, struct czfs_staging *stg,
			      uint64_t a, unsigned n, uint32_t *pages,
			      struct czfs_stage_ref *ref)
{
	unsigned got = 0;

	ref->n = 0;
	for (unsigned i = 0; i < stg->n && got < n; i++) {
		struct czfs_staged *st = stg->st[i];
		unsigned before = got;

		if (stale(dm, st)) {	/* not to be served: ends the prefix */
			uint64_t pos = a + (uint64_t)got * CZFS_BLOCK_SIZE;

			if (pos >= st->start && pos < st->end)
				break;
			continue;
		}

		while (got < n) {
			uint64_t pos = a + (uint64_t)got * CZFS_BLOCK_SIZE;

			if (pos < st->start || pos >= st->end)
				break;
			pages[got++] = staged_page(st, (unsigned)((pos - st->start) /
							     CZFS_BLOCK_SIZE));
		}
		if (got > before)
			ref->st[ref->n++] = st;
	}
	return got;
}

static bool all_ready(const struct czfs_stage_ref *ref)
{
	for (unsigned i = 0; i < ref->n; i++)
		if (!ref->st[i]->ready)
			return false;
	return true;
}

/*
 * Is [a, b) on the cursor's path, the first pos not staged or in flight?
 * On it: at the cursor, or a little ahead (a prefetcher ahead of a reader:
 * the gap is what the reader needs next, read in order).  Far ahead, the
 * cursor jumps there when allowed.  Behind it, what is gone is not read
 * again here: the cursor never moves back, or a reader and a prefetcher
 * would drag it to and fro.  Returns 0 or -ENOENT.
 */
static int on_path(struct czfs_daemon *dm, struct czfs_staging *stg,
		   uint64_t a, uint64_t pos, bool restart)
{
	if (stg->disk_pos != UINT64_MAX && pos < stg->disk_pos)
		return -ENOENT;
	if (stg->disk_pos != UINT64_MAX && pos - stg->disk_pos <= keep_bytes(dm))
		return 0;
	if (!restart)
		return -ENOENT;
	atomic_fetch_add(&dm->st.stage_restarts, 1);
	drop_before(dm, stg, UINT64_MAX);
	stg->disk_pos = a;
	return 0;
}

int czfs_staging_get(struct czfs_daemon *dm, struct czfs_staging *stg,
		     uint64_t blk, unsigned n, uint64_t run_end, unsigned flags,
		     uint32_t *pages, struct czfs_stage_ref *ref)
{
	uint64_t a = blk * CZFS_BLOCK_SIZE, b = a + (uint64_t)n * CZFS_BLOCK_SIZE;
	unsigned got;
	int err = 0;

	pthread_mutex_lock(&stg->lock);
	for (;;) {
		got = staged_prefix(dm, stg, a, n, pages, ref);
		if (got == n && all_ready(ref))
			break;
		if (got == n) {		/* in flight: another thread reads it */
			stg->waiters++;
			pthread_cond_wait(&stg->ready, &stg->lock);
			stg->waiters--;
			continue;
		}
		err = on_path(dm, stg, a, a + (uint64_t)got * CZFS_BLOCK_SIZE,
			      flags & CZFS_STAGE_RESTART);
		if (!err && stg->disk_pos < b)
			err = read_next(dm, stg, b, run_end, flags);
		if (err)
			break;
	}
	if (!err)
		for (unsigned i = 0; i < ref->n; i++)
			ref->st[i]->refs++;
	drop_behind(dm, stg);
	if (err)
		ref->n = 0;
	pthread_mutex_unlock(&stg->lock);
	return err;
}

void czfs_staging_put(struct czfs_daemon *dm, struct czfs_staging *stg,
		      struct czfs_stage_ref *ref)
{
	pthread_mutex_lock(&stg->lock);
	for (unsigned i = 0; i < ref->n; i++)
		ref->st[i]->refs--;
	drop_behind(dm, stg);
	pthread_mutex_unlock(&stg->lock);
	ref->n = 0;
}
