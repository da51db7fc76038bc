// SPDX-License-Identifier: MIT
/* Read-ahead across the source files, in inode order (prefetch.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prefetch.h"
#include "scan.h"
#include "util.h"

struct mk_prefetch {
	const struct mk_tree *t;
	uint64_t ahead;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	uint64_t reader_at;		/* the inode the reader is on */
	bool stop;
	/* the thread's quiescent points, for mk_prefetch_settle */
	bool waiting;			/* for the reader to pass wait_lag */
	uint64_t wait_lag;
	bool done;			/* every inode seen */
	pthread_cond_t idle_cv;		/* waiting or done became true */
	uint64_t advised;		/* files advised so far */
	pthread_t thread;
};

/*
 * The bytes of inode i to advise, the same when advised and when counted
 * off.  A copy's bytes are its original's; the holes of a sparse file would
 * fill the cache with zeros; past `ahead` the kernel's own sequential
 * read-ahead of the reader's file does as well.
 */
static uint64_t advice_len(const struct mk_prefetch *pf, uint64_t i)
{
	const struct mk_inode *ip = pf->t->inodes[i];

	if (!S_ISREG(ip->mode) || ip->copy_of || ip->maybe_sparse)
		return 0;
	return MIN(ip->size, pf->ahead);
}

static void advise(const struct mk_prefetch *pf, const struct mk_inode *ip,
		   uint64_t len)
{
	/* O_NONBLOCK: a file swapped for a fifo since the scan must not
	 * hang us; the reader reports what it cannot read */
	int fd = openat(pf->t->rootfd, ip->path, O_RDONLY | O_NOFOLLOW |
			O_NOCTTY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return;
	posix_fadvise(fd, 0, (off_t)len, POSIX_FADV_WILLNEED);
	close(fd);
}

/* Wait until the reader is past inode lag: false when stopped. */
static bool wait_reader(struct mk_prefetch *pf, uint64_t lag, uint64_t *at)
{
	bool go;

	pthread_mutex_lock(&pf->lock);
	while (!pf->stop && pf->reader_at <= lag) {
		pf->waiting = true;
		pf->wait_lag = lag;
		pthread_cond_broadcast(&pf->idle_cv);
		pthread_cond_wait(&pf->cv, &pf->lock);
	}
	pf->waiting = false;
	*at = pf->reader_at;
	go = !pf->stop;
	pthread_mutex_unlock(&pf->lock);
	return go;
}

/* Count off the advice of the inodes in [*lag, end): the reader has them. */
static void count_off(const struct mk_prefetch *pf, uint64_t *lag,
		      uint64_t *pending, uint64_t end)
{
	for (; *lag < end; (*lag)++)
		*pending -= advice_len(pf, *lag);
}

static void *prefetch_main(void *arg)
{
	struct mk_prefetch *pf = arg;
	uint64_t lag = 0;		/* inodes before lag are counted off */
	uint64_t pending = 0;		/* advised bytes of [lag, i) */

	for (uint64_t i = 0; i < pf->t->count; i++) {
		uint64_t len = advice_len(pf, i);
		uint64_t at = __atomic_load_n(&pf->reader_at, __ATOMIC_RELAXED);

		if (!len)
			continue;
		if (__atomic_load_n(&pf->stop, __ATOMIC_RELAXED))
			break;
		while (at <= i && pending + len > pf->ahead && lag < i) {
			if (lag >= at && !wait_reader(pf, lag, &at))
				return NULL;
			count_off(pf, &lag, &pending, MIN(at, i));
		}
		if (at > i) {	/* the reader passed it: advice comes too late */
			count_off(pf, &lag, &pending, i);
			lag = i + 1;
			continue;
		}
		advise(pf, pf->t->inodes[i], len);
		pending += len;
		__atomic_add_fetch(&pf->advised, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_lock(&pf->lock);
	pf->done = true;
	pthread_cond_broadcast(&pf->idle_cv);
	pthread_mutex_unlock(&pf->lock);
	return NULL;
}

int mk_prefetch_start(const struct mk_tree *t, uint64_t ahead,
		      struct mk_prefetch **out)
{
	struct mk_prefetch *pf = calloc(1, sizeof(*pf));
	int err;

	*out = NULL;
	if (!pf)
		return -ENOMEM;
	pf->t = t;
	pf->ahead = ahead;
	pthread_mutex_init(&pf->lock, NULL);
	pthread_cond_init(&pf->cv, NULL);
	pthread_cond_init(&pf->idle_cv, NULL);
	err = -pthread_create(&pf->thread, NULL, prefetch_main, pf);
	if (err) {
		pthread_mutex_destroy(&pf->lock);
		pthread_cond_destroy(&pf->cv);
		pthread_cond_destroy(&pf->idle_cv);
		free(pf);
		return err;
	}
	*out = pf;
	return 0;
}

void mk_prefetch_at(struct mk_prefetch *pf, uint64_t i)
{
	if (!pf)
		return;
	pthread_mutex_lock(&pf->lock);
	__atomic_store_n(&pf->reader_at, i, __ATOMIC_RELAXED);
	if (pf->waiting && i > pf->wait_lag)
		pf->waiting = false;	/* it goes on: not quiet any more */
	pthread_cond_signal(&pf->cv);
	pthread_mutex_unlock(&pf->lock);
}

uint64_t mk_prefetch_settle(struct mk_prefetch *pf)
{
	uint64_t n;

	pthread_mutex_lock(&pf->lock);
	while (!pf->waiting && !pf->done)
		pthread_cond_wait(&pf->idle_cv, &pf->lock);
	n = __atomic_load_n(&pf->advised, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&pf->lock);
	return n;
}

void mk_prefetch_stop(struct mk_prefetch *pf)
{
	if (!pf)
		return;
	pthread_mutex_lock(&pf->lock);
	__atomic_store_n(&pf->stop, true, __ATOMIC_RELAXED);
	pthread_cond_signal(&pf->cv);
	pthread_mutex_unlock(&pf->lock);
	pthread_join(pf->thread, NULL);
	pthread_mutex_destroy(&pf->lock);
	pthread_cond_destroy(&pf->cv);
	pthread_cond_destroy(&pf->idle_cv);
	free(pf);
}
