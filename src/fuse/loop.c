// SPDX-License-Identifier: MIT
/* The session loop of a mount of a local image (see loop.h). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <linux/fuse.h>

#include "daemon.h"
#include "flusher.h"
#include "loop.h"

#define LOOP_THREADS_DEFAULT	10
#define QUICK_WRITE_MAX		(128u << 10)	/* bytes of a quick write */

struct loop {
	struct czfs_daemon *dm;
	struct fuse_session *se;
	pthread_mutex_t lock;
	pthread_cond_t wake;		/* idle threads wait for the token */
	bool reading;			/* the token is taken */
	pthread_t reader;		/* its holder */
	bool exit;
	int error;
	unsigned idle, nthreads, max_threads;
	pthread_t *threads;		/* max_threads of them, to join */
	sem_t finish;			/* posted when the session ends */
};

/* Requests of a read-only image that wait on no other request and no
 * data: the token holder answers them itself. */
static bool quick_ro(uint32_t opcode)
{
	switch (opcode) {
	case FUSE_LOOKUP: case FUSE_FORGET: case FUSE_BATCH_FORGET:
	case FUSE_GETATTR: case FUSE_READLINK: case FUSE_STATFS:
	case FUSE_GETXATTR: case FUSE_LISTXATTR: case FUSE_ACCESS:
	case FUSE_OPENDIR: case FUSE_READDIR: case FUSE_READDIRPLUS:
	case FUSE_RELEASEDIR: case FUSE_FLUSH:
		return true;
	default:
		return false;
	}
}

/*
 * On a writable mount: those, and the changes that take only short locks
 * and no checkpoint: small writes (into the cluster cache) while no writer
 * throttles itself, opens, closes, the namespace.  Not: reads, fsync (a
 * checkpoint and a flush), large writes (they may write back), truncates,
 * fallocate, copies, ioctls.
 */
static bool quick_rw(struct czfs_daemon *dm, const struct fuse_in_header *in,
		     size_t size)
{
	const struct fuse_write_in *w = (const void *)(in + 1);
	const struct fuse_setattr_in *sa = (const void *)(in + 1);

	switch (in->opcode) {
	case FUSE_WRITE:
		return size >= sizeof(*in) + sizeof(*w) &&
		       w->size <= QUICK_WRITE_MAX && !czfs_flusher_throttling(dm);
	case FUSE_SETATTR:
		return size >= sizeof(*in) + sizeof(*sa) && !(sa->valid & FATTR_SIZE);
	case FUSE_OPEN: case FUSE_CREATE: case FUSE_RELEASE:
	case FUSE_MKNOD: case FUSE_MKDIR: case FUSE_SYMLINK: case FUSE_LINK:
	case FUSE_UNLINK: case FUSE_RMDIR: case FUSE_RENAME: case FUSE_RENAME2:
	case FUSE_SETXATTR: case FUSE_REMOVEXATTR:
		return true;
	default:
		return quick_ro(in->opcode);
	}
}

static bool quick(const struct loop *l, const struct fuse_buf *buf)
{
	const struct fuse_in_header *in = buf->mem;

	if (buf->flags & FUSE_BUF_IS_FD || buf->size < sizeof(*in))
		return false;
	return l->dm->opts.ro ? quick_ro(in->opcode) :
				quick_rw(l->dm, in, buf->size);
}

static void *worker(void *arg);

/* Start a thread that takes the token.  Locked. */
static void spawn(struct loop *l)
{
	sigset_t all, old;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if (!pthread_create(&l->threads[l->nthreads], NULL, worker, l)) {
		l->nthreads++;
		atomic_store_explicit(&l->dm->st.loop_threads, l->nthreads,
				      memory_order_relaxed);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Give the token up: to an idle thread, or a new one.  Locked. */
static void give_token(struct loop *l)
{
	l->reading = false;
	if (l->exit)
		return;
	if (l->idle)
		pthread_cond_signal(&l->wake);
	else if (l->nthreads < l->max_threads)
		spawn(l);
}

/* Wait for the token; false when the session ends.  Locked. */
static bool take_token(struct loop *l)
{
	while (l->reading && !l->exit) {
		l->idle++;
		pthread_cond_wait(&l->wake, &l->lock);
		l->idle--;
	}
	if (l->exit)
		return false;
	l->reading = true;
	l->reader = pthread_self();
	return true;
}

/* The device is gone (unmount) or failed: every thread stops.  Locked. */
static void end(struct loop *l, int res)
{
	if (res < 0 && !l->error)
		l->error = res;
	l->exit = true;
	l->reading = false;
	fuse_session_exit(l->se);
	pthread_cond_broadcast(&l->wake);
	sem_post(&l->finish);
}

/* Read one request with the token (cancellable only here: see run). */
static int receive(struct loop *l, struct fuse_buf *buf)
{
	int res;

	pthread_mutex_unlock(&l->lock);
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	res = fuse_session_receive_buf(l->se, buf);
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_mutex_lock(&l->lock);
	return res;
}

static void *worker(void *arg)
{
	struct loop *l = arg;
	struct fuse_buf buf = { .mem = NULL };
	bool keep;
	int res;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_mutex_lock(&l->lock);
	while (take_token(l)) {
		keep = false;
		do {
			res = receive(l, &buf);
			if (res == -EINTR || res == -EAGAIN) {
				keep = !l->exit;
				continue;
			}
			if (res <= 0 || l->exit) {
				end(l, res);
				break;
			}
			keep = quick(l, &buf);
			if (!keep) {
				give_token(l);
				atomic_fetch_add_explicit(&l->dm->st.loop_handoffs,
							  1, memory_order_relaxed);
			}
			pthread_mutex_unlock(&l->lock);
			fuse_session_process_buf(l->se, &buf);
			pthread_mutex_lock(&l->lock);
		} while (keep && !l->exit);
		if (keep && l->reading && pthread_equal(l->reader, pthread_self()))
			give_token(l);		/* the session ends */
	}
	pthread_mutex_unlock(&l->lock);
	free(buf.mem);
	return NULL;
}

int czfs_loop_run(struct czfs_daemon *dm, unsigned max_threads)
{
	struct fuse_session *se = dm->se;
	struct loop l = {
		.dm = dm, .se = se,
		.max_threads = max_threads ? max_threads : LOOP_THREADS_DEFAULT,
	};
	bool started;

	l.threads = calloc(l.max_threads, sizeof(*l.threads));
	if (!l.threads)
		return -ENOMEM;
	pthread_mutex_init(&l.lock, NULL);
	pthread_cond_init(&l.wake, NULL);
	sem_init(&l.finish, 0, 0);
	pthread_mutex_lock(&l.lock);
	spawn(&l);
	started = l.nthreads;
	pthread_mutex_unlock(&l.lock);
	if (!started)
		l.error = -EAGAIN;
	/* signals come here (the workers block them): their handlers call
	 * fuse_session_exit */
	while (started && !fuse_session_exited(se))
		sem_wait(&l.finish);
	pthread_mutex_lock(&l.lock);
	l.exit = true;
	pthread_cond_broadcast(&l.wake);
	if (l.reading)			/* blocked reading: nothing will come */
		pthread_cancel(l.reader);
	pthread_mutex_unlock(&l.lock);
	/* no thread starts once exit is set: nthreads is final */
	for (unsigned i = 0; i < l.nthreads; i++)
		pthread_join(l.threads[i], NULL);
	sem_destroy(&l.finish);
	pthread_cond_destroy(&l.wake);
	pthread_mutex_destroy(&l.lock);
	free(l.threads);
	return l.error;
}
