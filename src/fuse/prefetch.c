// SPDX-License-Identifier: MIT
/*
 * Prefetch workers: sequential readers queue the clusters after the ones
 * they read; workers decompress them into the cluster cache, so the FUSE
 * threads mostly copy and every core decompresses.
 */
#include "config.h"

#include <stdlib.h>

#include "ccache.h"
#include "daemon.h"
#include "util.h"

#define PF_QUEUE	64

struct pf_job {
	struct czfs_inode_info ii;
	uint64_t first, count;
};

struct czfs_prefetch {
	struct czfs_daemon *dm;
	pthread_mutex_t lock;
	pthread_cond_t more;
	struct pf_job jobs[PF_QUEUE];
	unsigned head, n;
	bool stop;
	unsigned nthreads;
	pthread_t threads[];
};

static void run_job(struct czfs_daemon *dm, const struct pf_job *job)
{
	for (uint64_t i = 0; i < job->count; i++) {
		struct czfs_centry *e;

		if (czfs_ccache_contains(dm->cc, job->ii.ino, job->first + i))
			continue;
		if (czfs_read_cluster(dm, &job->ii, job->first + i, true, &e))
			return;		/* the reader will see the error itself */
		czfs_ccache_put(dm->cc, e);
	}
}

static void *worker(void *arg)
{
	struct czfs_prefetch *pf = arg;
	struct pf_job job;

	pthread_mutex_lock(&pf->lock);
	for (;;) {
		while (!pf->n && !pf->stop)
			pthread_cond_wait(&pf->more, &pf->lock);
		if (pf->stop)
			break;
		job = pf->jobs[pf->head];
		pf->head = (pf->head + 1) % PF_QUEUE;
		pf->n--;
		pthread_mutex_unlock(&pf->lock);
		run_job(pf->dm, &job);
		pthread_mutex_lock(&pf->lock);
	}
	pthread_mutex_unlock(&pf->lock);
	return NULL;
}

int czfs_prefetch_start(struct czfs_daemon *dm, unsigned nthreads)
{
	struct czfs_prefetch *pf;
	int err = 0;

	pf = calloc(1, sizeof(*pf) + nthreads * sizeof(pthread_t));
	if (!pf)
		return -ENOMEM;
	pf->dm = dm;
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
	pthread_cond_destroy(&pf->more);
	pthread_mutex_destroy(&pf->lock);
	free(pf);
	dm->pf = NULL;
}

void czfs_prefetch_queue(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
			 uint64_t first, uint64_t count)
{
	struct czfs_prefetch *pf = dm->pf;

	if (!pf || !pf->nthreads || !count)
		return;
	pthread_mutex_lock(&pf->lock);
	if (pf->n < PF_QUEUE) {	/* a full queue means we are far ahead */
		struct pf_job *job = &pf->jobs[(pf->head + pf->n) % PF_QUEUE];

		job->ii = *ii;
		job->first = first;
		job->count = count;
		pf->n++;
		pthread_cond_signal(&pf->more);
	}
	pthread_mutex_unlock(&pf->lock);
}
