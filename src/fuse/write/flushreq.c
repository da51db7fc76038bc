// SPDX-License-Identifier: MIT
/* Requests to the flusher thread (flushreq.h). */
#include "config.h"

#include <string.h>

#include "daemon.h"
#include "flushreq.h"
#include "fs.h"

/*
 * Freed blocks wait for the next checkpoint before they are reused and
 * punched (discard): past this many, checkpoint early, so a rewrite-heavy
 * workload holds at most about this much more than it uses on the host.
 */
#define FREED_PENDING_MAX	(65536u)	/* blocks: 256 MiB */

void czfs_flushreq_init(struct czfs_flushreq *fr)
{
	memset(fr, 0, sizeof(*fr));
	czfs_worker_init(&fr->w);
}

void czfs_flushreq_destroy(struct czfs_flushreq *fr)
{
	czfs_worker_free(&fr->w);
}

void czfs_flushreq_change(struct czfs_daemon *dm)
{
	struct czfs_flushreq *fr = dm->fr;

	if (!fr || fr->changed)		/* (a stale read only costs the lock) */
		return;
	pthread_mutex_lock(&fr->w.lock);
	fr->changed = true;
	pthread_mutex_unlock(&fr->w.lock);
}

void czfs_flushreq_kick(struct czfs_daemon *dm)
{
	struct czfs_flushreq *fr = dm->fr;

	if (!fr || fr->kick)
		return;
	pthread_mutex_lock(&fr->w.lock);
	fr->kick = true;
	pthread_cond_signal(&fr->w.wake);
	pthread_mutex_unlock(&fr->w.lock);
}

void czfs_flushreq_freed(struct czfs_daemon *dm)
{
	struct czfs_flushreq *fr = dm->fr;

	if (!fr || fr->commit_now || !dm->fs->discard ||
	    czfs_smap_freed_pending(&dm->fs->smap) < FREED_PENDING_MAX)
		return;
	pthread_mutex_lock(&fr->w.lock);
	fr->commit_now = true;
	pthread_cond_signal(&fr->w.wake);
	pthread_mutex_unlock(&fr->w.lock);
}

bool czfs_flushreq_discard(struct czfs_daemon *dm)
{
	struct czfs_flushreq *fr = dm->fr;
	bool queued;

	if (!fr)
		return false;
	pthread_mutex_lock(&fr->w.lock);
	queued = !fr->w.stop;
	if (queued && !fr->discard) {
		fr->discard = true;
		pthread_cond_signal(&fr->w.wake);
	}
	pthread_mutex_unlock(&fr->w.lock);
	return queued;
}

static bool past(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return now.tv_sec > t->tv_sec ||
	       (now.tv_sec == t->tv_sec && now.tv_nsec >= t->tv_nsec);
}

bool czfs_flushreq_wait(struct czfs_flushreq *fr, struct timespec *until,
			unsigned period, bool *kick, bool *commit,
			bool *quiet, bool *discard)
{
	bool running;

	pthread_mutex_lock(&fr->w.lock);
	if (!fr->w.stop && !fr->kick && !fr->commit_now && !fr->discard)
		pthread_cond_timedwait(&fr->w.wake, &fr->w.lock, until);
	running = !fr->w.stop;
	*kick = fr->kick && running;
	fr->kick = false;
	*discard = fr->discard && running;
	fr->discard = false;
	*commit = running && (past(until) || fr->commit_now);
	fr->commit_now = false;
	*quiet = *commit && !fr->changed;
	if (*commit) {
		*commit = fr->changed;
		fr->changed = false;
		clock_gettime(CLOCK_REALTIME, until);
		until->tv_sec += period;
	}
	pthread_mutex_unlock(&fr->w.lock);
	return running;
}

void czfs_flushreq_stop(struct czfs_flushreq *fr)
{
	czfs_worker_stop(&fr->w);
}
