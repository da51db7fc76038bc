/* SPDX-License-Identifier: MIT */
/*
 * The daemon's background threads: n threads of one function, a lock, a
 * condition they wait on and a stop flag set under the lock.  Start,
 * nap and stop written once for the flusher, the prefetch workers, the
 * recompression and the remount thread.
 */
#ifndef CZFS_FUSE_WORKER_H
#define CZFS_FUSE_WORKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct czfs_worker {
	pthread_mutex_t lock;		/* the owner's state too */
	pthread_cond_t wake;
	bool stop;			/* (lock) */
	unsigned n;			/* threads started */
	pthread_t *threads;
};

/* The lock and the condition, no thread yet (czfs_worker_free undoes). */
void czfs_worker_init(struct czfs_worker *w);
/*
 * Start n threads of fn(arg) (czfs_worker_start: after czfs_worker_init).
 * Returns 0, or -errno with the threads started so far running: stop,
 * join and free w either way.
 */
int czfs_worker_run(struct czfs_worker *w, unsigned n,
		    void *(*fn)(void *), void *arg);
int czfs_worker_start(struct czfs_worker *w, unsigned n,
		      void *(*fn)(void *), void *arg);
/* Wait on wake, the lock not held, for ns at most: false once stopped. */
bool czfs_worker_nap(struct czfs_worker *w, uint64_t ns);
/* Whether w is stopped (takes the lock). */
bool czfs_worker_stopped(struct czfs_worker *w);
/* Set stop and wake every thread (one that waits on something else, a
 * signal, its owner wakes); czfs_worker_join then waits for them. */
void czfs_worker_stop(struct czfs_worker *w);
void czfs_worker_join(struct czfs_worker *w);
/* The lock, the condition and the thread list freed, after the join. */
void czfs_worker_free(struct czfs_worker *w);

#endif /* CZFS_FUSE_WORKER_H */
