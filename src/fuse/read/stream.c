// SPDX-License-Identifier: MIT
/*
 * Prefetch streams (stream.h).  A worker walks the file's clusters in
 * order and loads them (load.h) through the stream's staging (one ordered,
 * aligned read cursor, shared with the FUSE threads: staging.c) into the
 * cluster cache, so FUSE threads mostly copy.
 */
#include "config.h"

#include <stdlib.h>

#include "ccache.h"
#include "daemon.h"
#include "inode.h"
#include "load.h"
#include "staging.h"
#include "stream.h"
#include "util.h"
#include "worker.h"

#define JOB_QUEUE	256

struct czfs_stream {
	atomic_uint refs;
	struct czfs_inode_info ii;
	pthread_mutex_t lock;		/* reader-side state */
	uint64_t last_end;		/* end of the previous read */
	uint64_t window;		/* readahead window, bytes */
	uint64_t reader_end;
	bool queued, closed;
	bool running;			/* sync_prefetch: a reader runs it */
	atomic_ullong next_idx;		/* next cluster to prefetch */
	struct czfs_staging *stg;	/* the one read cursor of the stream */
};

struct czfs_prefetch {
	struct czfs_daemon *dm;
	struct czfs_worker w;		/* its wake: more jobs */
	struct czfs_stream *jobs[JOB_QUEUE];
	unsigned head, n;
};

/* ---- a batch of clusters -------------------------------------------------- */

static int load_one(struct czfs_daemon *dm, struct czfs_stream *s,
		    struct czfs_cluster_batch *b, unsigned i)
{
	struct czfs_load l;
	int ret;

	if (czfs_ccache_contains(dm->cc, s->ii.ino, b->first + i))
		return 0;
	/* a cluster someone is loading is theirs: do not wait for it */
	ret = czfs_ccache_get(dm->cc, s->ii.ino, b->first + i,
			      CZFS_CC_CREATE | CZFS_CC_NOWAIT, &l.e);
	if (ret <= 0) {
		if (!ret)
			czfs_ccache_put(dm->cc, l.e);
		return ret == -EAGAIN ? 0 : ret;
	}
	/*
	 * The batch was looked up before e was claimed: a writeback may
	 * have changed the items since, and the cluster left the cache.
	 * Now that e is claimed they change only through it (a truncate
	 * drops it), so looking its item up again is current.
	 */
	ret = czfs_load_refresh(dm, &s->ii, b, i);
	l.err = ret < 0 ? ret : 0;
	czfs_load_batch(dm, &s->ii, s->stg, b, &l, 1, CZFS_LOAD_BY_PREFETCH);
	czfs_ccache_put(dm->cc, l.e);
	return l.err;
}

static int run_batch(struct czfs_daemon *dm, struct czfs_stream *s,
		     struct czfs_cluster_batch *b)
{
	int err = czfs_load_lookup(dm, &s->ii, b);

	for (unsigned i = 0; i < b->n && !err; i++)
		err = load_one(dm, s, b, i);
	atomic_store(&s->next_idx, b->first + b->n);
	return err;
}

/* ---- running a stream ------------------------------------------------------ */

static void stream_put(struct czfs_daemon *dm, struct czfs_stream *s)
{
	if (atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	czfs_staging_free(dm, s->stg);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/*
 * The next batch to load, or 0 when the stream is a window ahead of its
 * reader (then it is no longer queued).
 */
static unsigned next_batch(struct czfs_stream *s, struct czfs_cluster_batch *b)
{
	uint64_t cbytes = czfs_inode_cluster_bytes(&s->ii), target, from;
	unsigned n = 0;

	pthread_mutex_lock(&s->lock);
	target = MIN(s->reader_end + s->window, s->ii.size);
	from = MAX(atomic_load(&s->next_idx), s->reader_end / cbytes);
	if (!s->closed && s->window && from * cbytes < target)
		n = (unsigned)MIN(DIV_ROUND_UP(target, cbytes) - from, CZFS_BATCH_MAX);
	if (!n)
		s->queued = false;
	pthread_mutex_unlock(&s->lock);
	b->first = from;
	b->n = n;
	return n;
}

static void run_stream(struct czfs_daemon *dm, struct czfs_stream *s)
{
	struct czfs_cluster_batch *b = malloc(sizeof(*b));

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
	if (atomic_load(&dm->staged_pages) > dm->stage_budget / 2)
		czfs_staging_trim(dm, s->stg);
	free(b);
}

static void *worker(void *arg)
{
	struct czfs_prefetch *pf = arg;
	struct czfs_stream *s;

	pthread_mutex_lock(&pf->w.lock);
	for (;;) {
		while (!pf->n && !pf->w.stop)
			pthread_cond_wait(&pf->w.wake, &pf->w.lock);
		if (pf->w.stop)
			break;
		s = pf->jobs[pf->head];
		pf->head = (pf->head + 1) % JOB_QUEUE;
		pf->n--;
		pthread_mutex_unlock(&pf->w.lock);
		run_stream(pf->dm, s);
		stream_put(pf->dm, s);
		pthread_mutex_lock(&pf->w.lock);
	}
	pthread_mutex_unlock(&pf->w.lock);
	return NULL;
}

static bool queue_stream(struct czfs_daemon *dm, struct czfs_stream *s)
{
	struct czfs_prefetch *pf = dm->pf;
	bool queued = false;

	if (!pf || !pf->w.n)
		return false;
	pthread_mutex_lock(&pf->w.lock);
	if (pf->n < JOB_QUEUE) {
		atomic_fetch_add(&s->refs, 1);
		pf->jobs[(pf->head + pf->n++) % JOB_QUEUE] = s;
		pthread_cond_signal(&pf->w.wake);
		queued = true;
	}
	pthread_mutex_unlock(&pf->w.lock);
	return queued;
}

struct czfs_stream *czfs_stream_new(struct czfs_daemon *dm,
				    const struct czfs_inode_info *ii)
{
	struct czfs_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->stg = czfs_staging_new(dm);
	if (!s->stg) {
		free(s);
		return NULL;
	}
	atomic_init(&s->refs, 1);
	atomic_fetch_add(&dm->st.streams, 1);
	s->ii = *ii;
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

bool czfs_stream_note_read(struct czfs_daemon *dm, struct czfs_stream *s,
			   const struct czfs_inode_info *ii, uint64_t off,
			   uint64_t end)
{
	uint64_t cbytes = czfs_inode_cluster_bytes(&s->ii);
	bool queue = false, sequential;

	pthread_mutex_lock(&s->lock);
	s->ii.size = ii->size;		/* the file may have grown or shrunk */
	/* As the kernel's on-demand readahead: a read at the start or right
	 * after the previous one is sequential; the window starts at a few
	 * times the read and doubles. */
	if (off == s->last_end)
		s->window = MIN(MAX(s->window * 2, MAX(2 * (end - off), 4 * cbytes)),
				dm->opts.readahead);
	else
		s->window = 0;
	sequential = s->window;
	s->last_end = end;
	s->reader_end = end;
	if (s->window && !s->queued && !s->closed &&
	    atomic_load(&s->next_idx) * cbytes < MIN(end + s->window, s->ii.size))
		queue = s->queued = true;
	pthread_mutex_unlock(&s->lock);
	if (queue && !dm->opts.sync_prefetch && !queue_stream(dm, s)) {
		pthread_mutex_lock(&s->lock);
		s->queued = false;
		pthread_mutex_unlock(&s->lock);
	}
	return sequential;
}

void czfs_stream_run_sync(struct czfs_daemon *dm, struct czfs_stream *s)
{
	bool go;

	if (!dm->opts.sync_prefetch)
		return;
	pthread_mutex_lock(&s->lock);
	go = s->queued && !s->running;
	s->running = s->running || go;
	pthread_mutex_unlock(&s->lock);
	if (!go)
		return;
	run_stream(dm, s);
	pthread_mutex_lock(&s->lock);
	s->running = false;
	pthread_mutex_unlock(&s->lock);
}

int czfs_prefetch_start(struct czfs_daemon *dm, unsigned nthreads)
{
	struct czfs_prefetch *pf;
	int err = 0;

	pf = calloc(1, sizeof(*pf));
	if (!pf)
		return -ENOMEM;
	pf->dm = dm;
	dm->pf = pf;
	err = czfs_worker_start(&pf->w, nthreads, worker, pf);
	if (err)
		czfs_prefetch_stop(dm);
	return err;
}

void czfs_prefetch_stop(struct czfs_daemon *dm)
{
	struct czfs_prefetch *pf = dm->pf;

	if (!pf)
		return;
	czfs_worker_stop(&pf->w);
	czfs_worker_join(&pf->w);
	while (pf->n) {		/* streams queued but never run */
		stream_put(dm, pf->jobs[pf->head]);
		pf->head = (pf->head + 1) % JOB_QUEUE;
		pf->n--;
	}
	czfs_worker_free(&pf->w);
	free(pf);
	dm->pf = NULL;
}

struct czfs_staging *czfs_stream_staging(struct czfs_stream *s)
{
	bool seq;

	pthread_mutex_lock(&s->lock);
	seq = s->window != 0;
	pthread_mutex_unlock(&s->lock);
	return seq ? s->stg : NULL;
}
