// SPDX-License-Identifier: MIT
/*
 * Prefetch streams.  Each open file has one; a sequential reader keeps it
 * a window ahead (the window grows as the kernel's readahead does), and one
 * worker at a time runs it: it walks the file's clusters in order and reads
 * the backing image in whole, aligned max_request requests (the block
 * layer's bio_export_pages idea), staging what it read past the clusters
 * it needs for the next ones.  Workers decode straight into the cluster
 * cache, so FUSE threads mostly copy.
 */
#include "config.h"

#include <stdlib.h>

#include "ccache.h"
#include "cluster.h"
#include "daemon.h"
#include "fs.h"
#include "log.h"
#include "pagepool.h"
#include "util.h"

#define STREAM_BATCH	64	/* clusters per tree walk */
#define JOB_QUEUE	256

/* One backing request whose pages are still needed. */
struct staged {
	uint64_t start, end;		/* image bytes */
	struct czfs_temp tp;
};

struct czfs_stream {
	atomic_uint refs;
	struct czfs_inode_info ii;
	pthread_mutex_t lock;		/* reader-side state */
	uint64_t last_end;		/* end of the previous read */
	uint64_t window;		/* readahead window, bytes */
	uint64_t reader_end;
	bool queued, closed;
	/* the worker's side */
	atomic_ullong next_idx;		/* next cluster to prefetch */
	uint64_t disk_pos;		/* where the next request starts */
	struct staged *stg;
	unsigned nstg, stg_cap;
};

struct czfs_prefetch {
	struct czfs_daemon *dm;
	/* Staged pages of all streams, kept under a quarter of the pool so
	 * that they never starve the cluster cache. */
	atomic_ullong staged;
	uint64_t stage_budget;
	pthread_mutex_t lock;
	pthread_cond_t more;
	struct czfs_stream *jobs[JOB_QUEUE];
	unsigned head, n;
	bool stop;
	unsigned nthreads;
	pthread_t threads[];
};

/* ---- staging ------------------------------------------------------------ */

static void stage_drop_before(struct czfs_daemon *dm, struct czfs_stream *s,
			      uint64_t pos)
{
	unsigned keep = 0;

	for (unsigned i = 0; i < s->nstg; i++) {
		if (s->stg[i].end <= pos) {
			if (dm->pf)
				atomic_fetch_sub(&dm->pf->staged, s->stg[i].tp.n);
			czfs_temp_free(dm, &s->stg[i].tp);
		} else
			s->stg[keep++] = s->stg[i];
	}
	s->nstg = keep;
}

static void stage_reset(struct czfs_daemon *dm, struct czfs_stream *s)
{
	stage_drop_before(dm, s, UINT64_MAX);
	s->disk_pos = UINT64_MAX;
}

/* Read the next request of the stream: [disk_pos, end). */
static int stage_next(struct czfs_daemon *dm, struct czfs_stream *s,
		      uint64_t need_end, uint64_t run_end)
{
	uint64_t max = dm->io.max_request, start = s->disk_pos, end;
	uint64_t image_end = dm->fs->cp.image_blocks * CZFS_BLOCK_SIZE;
	void *addrs[CZFS_TEMP_MAX];
	struct czfs_io_seg seg;
	struct staged *st;
	int err;

	if (dm->io.aligned)	/* whole aligned requests, read past need_end */
		end = MIN((start / max + 1) * max, image_end);
	else			/* the "before": cut where the run ends */
		end = MIN(start + max, MAX(run_end, need_end));
	/* Over budget, read only what the cluster needs. */
	if (atomic_load(&dm->pf->staged) + (end - start) / CZFS_BLOCK_SIZE >
	    dm->pf->stage_budget)
		end = MIN(end, MAX(need_end, start + CZFS_BLOCK_SIZE));
	if (s->nstg == s->stg_cap) {
		unsigned cap = s->stg_cap ? s->stg_cap * 2 : 4;
		struct staged *n = realloc(s->stg, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->stg = n;
		s->stg_cap = cap;
	}
	st = &s->stg[s->nstg];
	err = czfs_temp_alloc(dm, (unsigned)((end - start) / CZFS_BLOCK_SIZE), &st->tp);
	if (err)
		return err;
	for (unsigned i = 0; i < st->tp.n; i++)
		addrs[i] = czfs_pool_addr(dm->pool, st->tp.pages[i]);
	seg = (struct czfs_io_seg){ start / CZFS_BLOCK_SIZE, st->tp.n, addrs };
	err = czfs_io_read(dm->fs->bdev, &seg, 1, &dm->io);
	if (err) {
		czfs_temp_free(dm, &st->tp);
		czfs_err("read error at block %llu: %s",
			 (unsigned long long)(start / CZFS_BLOCK_SIZE), strerror(-err));
		return -EIO;
	}
	st->start = start;
	st->end = end;
	s->nstg++;
	atomic_fetch_add(&dm->pf->staged, st->tp.n);
	s->disk_pos = end;
	return 0;
}

/* The staged pages holding [a, a + n blocks): 0, or -ENOENT if not staged. */
static int stage_pages(struct czfs_stream *s, uint64_t a, unsigned n,
		       uint32_t *pages)
{
	unsigned got = 0;

	for (unsigned i = 0; i < s->nstg && got < n; i++) {
		struct staged *st = &s->stg[i];

		while (got < n) {
			uint64_t pos = a + (uint64_t)got * CZFS_BLOCK_SIZE;

			if (pos < st->start || pos >= st->end)
				break;
			pages[got++] = st->tp.pages[(pos - st->start) / CZFS_BLOCK_SIZE];
		}
	}
	return got == n ? 0 : -ENOENT;
}

/*
 * Make the stored blocks of ci staged and return their pages.  A cluster
 * right where the stream is continues it; anything else restarts it there.
 */
static int stage_cluster(struct czfs_daemon *dm, struct czfs_stream *s,
			 const struct czfs_cluster_info *ci, uint64_t run_end,
			 uint32_t *pages)
{
	uint64_t a = ci->blkaddr * CZFS_BLOCK_SIZE;
	uint64_t b = a + (uint64_t)ci->nblocks * CZFS_BLOCK_SIZE;
	int err = 0;

	if (stage_pages(s, a, ci->nblocks, pages) == 0)
		return 0;
	if (a < (s->nstg ? s->stg[0].start : s->disk_pos) || a > s->disk_pos)
		stage_reset(dm, s);
	if (s->disk_pos == UINT64_MAX)
		s->disk_pos = a;
	stage_drop_before(dm, s, a);
	while (s->disk_pos < b && !err)
		err = stage_next(dm, s, b, run_end);
	return err ?: stage_pages(s, a, ci->nblocks, pages);
}

/* ---- a batch of clusters -------------------------------------------------- */

struct batch {
	uint64_t first;
	unsigned n;
	struct czfs_cluster_info ci[STREAM_BATCH];
	uint8_t inl[STREAM_BATCH][CZFS_INLINE_MAX];
};

struct collect {
	struct czfs_daemon *dm;
	struct czfs_stream *s;
	struct batch *b;
};

static int collect_item(void *arg, const struct czfs_key *key, const void *val,
			unsigned size)
{
	struct collect *c = arg;
	unsigned i = (unsigned)(key->offset - c->b->first);
	struct czfs_cluster_info *ci = &c->b->ci[i];
	int err;

	err = czfs_cluster_item_decode(val, size, czfs_inode_cluster_bytes(&c->s->ii),
				       c->dm->fs->cp.max_blocks, ci);
	if (err)
		return err;
	if (ci->inline_len) {
		memcpy(c->b->inl[i], ci->inline_data, ci->inline_len);
		ci->inline_data = c->b->inl[i];
	}
	return 0;
}

/* The cluster items of [first, first + n): one walk of the tree. */
static int batch_lookup(struct czfs_daemon *dm, struct czfs_stream *s,
			struct batch *b)
{
	struct collect c = { dm, s, b };
	struct czfs_key lo = { s->ii.ino, CZFS_ITEM_CLUSTER, b->first };
	struct czfs_key hi = { s->ii.ino, CZFS_ITEM_CLUSTER, b->first + b->n - 1 };
	int err;

	memset(b->ci, 0, sizeof(b->ci[0]) * b->n);	/* CZFS_CLUSTER_HOLE */
	pthread_rwlock_rdlock(&dm->fs->lock);
	err = czfs_btree_iterate(&dm->fs->tree, &lo, &hi, collect_item, &c);
	pthread_rwlock_unlock(&dm->fs->lock);
	return err < 0 ? err : 0;
}

/* End of the run of adjacent stored blocks that starts at cluster i. */
static uint64_t run_end_from(const struct batch *b, unsigned i)
{
	uint64_t end = 0;

	for (; i < b->n; i++) {
		const struct czfs_cluster_info *ci = &b->ci[i];
		uint64_t a = ci->blkaddr * CZFS_BLOCK_SIZE;

		if (ci->kind != CZFS_CLUSTER_RAW && ci->kind != CZFS_CLUSTER_COMPRESSED)
			continue;
		if (end && a != end)
			break;
		end = a + (uint64_t)ci->nblocks * CZFS_BLOCK_SIZE;
	}
	return end;
}

static int load_one(struct czfs_daemon *dm, struct czfs_stream *s,
		    struct batch *b, unsigned i)
{
	const struct czfs_cluster_info *ci = &b->ci[i];
	uint32_t pages[CZFS_MAX_CLUSTER_BLOCKS];
	struct czfs_centry *e;
	int ret;

	if (czfs_ccache_contains(dm->cc, s->ii.ino, b->first + i))
		return 0;
	ret = czfs_ccache_get(dm->cc, s->ii.ino, b->first + i, true, &e);
	if (ret <= 0) {
		if (!ret)
			czfs_ccache_put(dm->cc, e);
		return ret;
	}
	if (ci->kind == CZFS_CLUSTER_RAW || ci->kind == CZFS_CLUSTER_COMPRESSED)
		ret = stage_cluster(dm, s, ci, run_end_from(b, i), pages);
	if (!ret)
		ret = czfs_decode_cluster(dm, &s->ii, ci,
					  ret || !ci->nblocks ? NULL : pages, e);
	atomic_fetch_add(&dm->st.loads_prefetch, 1);
	if (ret)
		atomic_fetch_add(&dm->st.load_errors, 1);
	czfs_ccache_loaded(dm->cc, e, ret);
	czfs_ccache_put(dm->cc, e);
	return ret;
}

static int run_batch(struct czfs_daemon *dm, struct czfs_stream *s,
		     struct batch *b)
{
	int err = batch_lookup(dm, s, b);

	for (unsigned i = 0; i < b->n && !err; i++)
		err = load_one(dm, s, b, i);
	if (err)
		stage_reset(dm, s);	/* the reader will meet the error */
	atomic_store(&s->next_idx, b->first + b->n);
	return err;
}

/* ---- running a stream ------------------------------------------------------ */

static void stream_put(struct czfs_daemon *dm, struct czfs_stream *s)
{
	if (atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	stage_reset(dm, s);
	free(s->stg);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/*
 * The next batch to load, or 0 when the stream is a window ahead of its
 * reader (then it is no longer queued).
 */
static unsigned next_batch(struct czfs_stream *s, struct batch *b)
{
	uint64_t cbytes = czfs_inode_cluster_bytes(&s->ii), target, from;
	unsigned n = 0;

	pthread_mutex_lock(&s->lock);
	target = MIN(s->reader_end + s->window, s->ii.size);
	from = MAX(atomic_load(&s->next_idx), s->reader_end / cbytes);
	if (!s->closed && s->window && from * cbytes < target)
		n = (unsigned)MIN(DIV_ROUND_UP(target, cbytes) - from, STREAM_BATCH);
	if (!n)
		s->queued = false;
	pthread_mutex_unlock(&s->lock);
	b->first = from;
	b->n = n;
	return n;
}

static void run_stream(struct czfs_daemon *dm, struct czfs_stream *s)
{
	struct batch *b = malloc(sizeof(*b));

	if (!b) {
		pthread_mutex_lock(&s->lock);
		s->queued = false;
		pthread_mutex_unlock(&s->lock);
		return;
	}
	while (next_batch(s, b)) {
		if (run_batch(dm, s, b)) {
			pthread_mutex_lock(&s->lock);
			s->window = 0;	/* stop until the reader moves again */
			pthread_mutex_unlock(&s->lock);
		}
	}
	/* Idle streams keep their staged tail only while memory is easy. */
	if (atomic_load(&dm->pf->staged) > dm->pf->stage_budget / 2)
		stage_reset(dm, s);
	free(b);
}

static void *worker(void *arg)
{
	struct czfs_prefetch *pf = arg;
	struct czfs_stream *s;

	pthread_mutex_lock(&pf->lock);
	for (;;) {
		while (!pf->n && !pf->stop)
			pthread_cond_wait(&pf->more, &pf->lock);
		if (pf->stop)
			break;
		s = pf->jobs[pf->head];
		pf->head = (pf->head + 1) % JOB_QUEUE;
		pf->n--;
		pthread_mutex_unlock(&pf->lock);
		run_stream(pf->dm, s);
		stream_put(pf->dm, s);
		pthread_mutex_lock(&pf->lock);
	}
	pthread_mutex_unlock(&pf->lock);
	return NULL;
}

static bool queue_stream(struct czfs_daemon *dm, struct czfs_stream *s)
{
	struct czfs_prefetch *pf = dm->pf;
	bool queued = false;

	if (!pf || !pf->nthreads)
		return false;
	pthread_mutex_lock(&pf->lock);
	if (pf->n < JOB_QUEUE) {
		atomic_fetch_add(&s->refs, 1);
		pf->jobs[(pf->head + pf->n++) % JOB_QUEUE] = s;
		pthread_cond_signal(&pf->more);
		queued = true;
	}
	pthread_mutex_unlock(&pf->lock);
	return queued;
}

struct czfs_stream *czfs_stream_new(const struct czfs_inode_info *ii)
{
	struct czfs_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	atomic_init(&s->refs, 1);
	s->ii = *ii;
	s->disk_pos = UINT64_MAX;
	pthread_mutex_init(&s->lock, NULL);
	return s;
}

void czfs_stream_close(struct czfs_daemon *dm, struct czfs_stream *s)
{
	pthread_mutex_lock(&s->lock);
	s->closed = true;
	pthread_mutex_unlock(&s->lock);
	stream_put(dm, s);
}

void czfs_stream_note_read(struct czfs_daemon *dm, struct czfs_stream *s,
			   uint64_t off, uint64_t end)
{
	uint64_t cbytes = czfs_inode_cluster_bytes(&s->ii);
	bool queue = false;

	pthread_mutex_lock(&s->lock);
	if (off == s->last_end && off)
		s->window = MIN(MAX(s->window * 2, 4 * cbytes), dm->opts.readahead);
	else
		s->window = 0;
	s->last_end = end;
	s->reader_end = end;
	if (s->window && !s->queued && !s->closed &&
	    atomic_load(&s->next_idx) * cbytes < MIN(end + s->window, s->ii.size))
		queue = s->queued = true;
	pthread_mutex_unlock(&s->lock);
	if (queue && !queue_stream(dm, s)) {
		pthread_mutex_lock(&s->lock);
		s->queued = false;
		pthread_mutex_unlock(&s->lock);
	}
}

int czfs_prefetch_start(struct czfs_daemon *dm, unsigned nthreads)
{
	struct czfs_pool_stats ps;
	struct czfs_prefetch *pf;
	int err = 0;

	pf = calloc(1, sizeof(*pf) + nthreads * sizeof(pthread_t));
	if (!pf)
		return -ENOMEM;
	pf->dm = dm;
	czfs_pool_get_stats(dm->pool, &ps);
	pf->stage_budget = MAX(ps.pages / 4, 2 * dm->io.max_request / CZFS_BLOCK_SIZE);
	pthread_mutex_init(&pf->lock, NULL);
	pthread_cond_init(&pf->more, NULL);
	dm->pf = pf;
	for (; pf->nthreads < nthreads; pf->nthreads++) {
		err = -pthread_create(&pf->threads[pf->nthreads], NULL, worker, pf);
		if (err)
			break;
	}
	if (err)
		czfs_prefetch_stop(dm);
	return err;
}

void czfs_prefetch_stop(struct czfs_daemon *dm)
{
	struct czfs_prefetch *pf = dm->pf;

	if (!pf)
		return;
	pthread_mutex_lock(&pf->lock);
	pf->stop = true;
	pthread_cond_broadcast(&pf->more);
	pthread_mutex_unlock(&pf->lock);
	for (unsigned i = 0; i < pf->nthreads; i++)
		pthread_join(pf->threads[i], NULL);
	while (pf->n) {		/* streams queued but never run */
		stream_put(dm, pf->jobs[pf->head]);
		pf->head = (pf->head + 1) % JOB_QUEUE;
		pf->n--;
	}
	pthread_cond_destroy(&pf->more);
	pthread_mutex_destroy(&pf->lock);
	free(pf);
	dm->pf = NULL;
}
