// SPDX-License-Identifier: MIT
/* Writeback's encoders (wbpool.h). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "wbpool.h"

/* One caller's loop, on its stack; in the pool's list while calls of it
 * are left to take. */
struct loop {
	void (*fn)(void *arg, unsigned i);
	void *arg;
	unsigned n, next, done;		/* calls: all, taken, returned */
	pthread_cond_t ended;		/* done == n */
	struct loop *link;
};

struct czfs_wbpool {
	pthread_mutex_t lock;
	pthread_cond_t work;		/* a loop came, or stop */
	struct loop *head;		/* loops with calls left to take */
	bool stop;
	atomic_ullong *by_workers;
	unsigned nthreads;
	pthread_t threads[];
};

/* Take the next call of l (p->lock held); the last leaves the list. */
static unsigned take(struct czfs_wbpool *p, struct loop *l)
{
	unsigned i = l->next++;

	if (l->next == l->n) {
		struct loop **pp = &p->head;

		while (*pp != l)
			pp = &(*pp)->link;
		*pp = l->link;
	}
	return i;
}

/* Run call i of l, p->lock held on entry and on return. */
static void run(struct czfs_wbpool *p, struct loop *l, unsigned i)
{
	pthread_mutex_unlock(&p->lock);
	l->fn(l->arg, i);
	pthread_mutex_lock(&p->lock);
	if (++l->done == l->n)
		pthread_cond_signal(&l->ended);
}

static void *worker(void *arg)
{
	struct czfs_wbpool *p = arg;

	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		struct loop *l = p->head;

		if (!l) {
			pthread_cond_wait(&p->work, &p->lock);
			continue;
		}
		run(p, l, take(p, l));
		atomic_fetch_add(p->by_workers, 1);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

void czfs_wbpool_for(struct czfs_wbpool *p, unsigned n,
		     void (*fn)(void *arg, unsigned i), void *arg)
{
	struct loop l = { .fn = fn, .arg = arg, .n = n };

	if (!p || n < 2) {
		for (unsigned i = 0; i < n; i++)
			fn(arg, i);
		return;
	}
	pthread_cond_init(&l.ended, NULL);
	pthread_mutex_lock(&p->lock);
	l.link = p->head;		/* the newest first: an fsync's batch */
	p->head = &l;			/* is not queued behind a flusher's */
	pthread_cond_broadcast(&p->work);
	while (l.next < l.n)
		run(p, &l, take(p, &l));
	while (l.done < l.n)
		pthread_cond_wait(&l.ended, &p->lock);
	pthread_mutex_unlock(&p->lock);
	pthread_cond_destroy(&l.ended);
}

int czfs_wbpool_start(unsigned threads, atomic_ullong *by_workers,
		      struct czfs_wbpool **out)
{
	struct czfs_wbpool *p;
	int err = 0;

	*out = NULL;
	if (threads <= 1)
		return 0;
	p = calloc(1, sizeof(*p) + (threads - 1) * sizeof(p->threads[0]));
	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	p->by_workers = by_workers;
	while (!err && p->nthreads < threads - 1) {
		err = -pthread_create(&p->threads[p->nthreads], NULL, worker, p);
		p->nthreads += !err;
	}
	if (err) {
		czfs_wbpool_stop(p);
		return err;
	}
	*out = p;
	return 0;
}

void czfs_wbpool_stop(struct czfs_wbpool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
