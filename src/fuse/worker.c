// SPDX-License-Identifier: MIT
/* The daemon's background threads (worker.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "worker.h"

void czfs_worker_init(struct czfs_worker *w)
{
	memset(w, 0, sizeof(*w));
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->wake, NULL);
}

int czfs_worker_run(struct czfs_worker *w, unsigned n,
		    void *(*fn)(void *), void *arg)
{
	int err = 0;

	w->threads = calloc(n ? n : 1, sizeof(*w->threads));
	if (!w->threads)
		return -ENOMEM;
	for (; w->n < n && !err; w->n += !err)
		err = -pthread_create(&w->threads[w->n], NULL, fn, arg);
	return err;
}

int czfs_worker_start(struct czfs_worker *w, unsigned n,
		      void *(*fn)(void *), void *arg)
{
	czfs_worker_init(w);
	return czfs_worker_run(w, n, fn, arg);
}

bool czfs_worker_nap(struct czfs_worker *w, uint64_t ns)
{
	struct timespec until;
	bool going;

	clock_gettime(CLOCK_REALTIME, &until);
	ns += (uint64_t)until.tv_nsec;
	until.tv_sec += (time_t)(ns / 1000000000ull);
	until.tv_nsec = (long)(ns % 1000000000ull);
	pthread_mutex_lock(&w->lock);
	if (!w->stop)
		pthread_cond_timedwait(&w->wake, &w->lock, &until);
	going = !w->stop;
	pthread_mutex_unlock(&w->lock);
	return going;
}

bool czfs_worker_stopped(struct czfs_worker *w)
{
	bool stop;

	pthread_mutex_lock(&w->lock);
	stop = w->stop;
	pthread_mutex_unlock(&w->lock);
	return stop;
}

void czfs_worker_stop(struct czfs_worker *w)
{
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_broadcast(&w->wake);
	pthread_mutex_unlock(&w->lock);
}

void czfs_worker_join(struct czfs_worker *w)
{
	for (unsigned i = 0; i < w->n; i++)
		pthread_join(w->threads[i], NULL);
	w->n = 0;
}

void czfs_worker_free(struct czfs_worker *w)
{
	pthread_cond_destroy(&w->wake);
	pthread_mutex_destroy(&w->lock);
	free(w->threads);
	w->threads = NULL;
}
