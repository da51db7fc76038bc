/* SPDX-License-Identifier: MIT */
/*
 * What is asked of the flusher thread (flusher.h): writers, writeback and
 * the operations say that something changed (the next periodic checkpoint
 * has work), that writeback should run now (a kick), or that freed blocks
 * pile up (checkpoint early); the flusher waits here for them.  Apart
 * from flusher.c so that writeback, below it, can ask without a loop.
 *
 * Threads: any; one mutex.  dm->fr is NULL without a flusher (read-only):
 * then asking does nothing.
 */
#ifndef CZFS_FUSE_FLUSHREQ_H
#define CZFS_FUSE_FLUSHREQ_H

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "worker.h"

struct czfs_daemon;

struct czfs_flushreq {
	struct czfs_worker w;		/* the flusher's thread; its lock
					 * guards the flags below */
	bool changed;			/* something to checkpoint */
	bool kick;			/* a writer asks for writeback */
	bool commit_now;		/* freed blocks wait: checkpoint early */
	bool discard;			/* a checkpoint left blocks to punch */
};

void czfs_flushreq_init(struct czfs_flushreq *fr);
void czfs_flushreq_destroy(struct czfs_flushreq *fr);

/* Something changed: the next periodic checkpoint has work. */
void czfs_flushreq_change(struct czfs_daemon *dm);
/* Ask for writeback of every dirty inode now. */
void czfs_flushreq_kick(struct czfs_daemon *dm);
/* Blocks were freed: past FREED_PENDING_MAX waiting, checkpoint early. */
void czfs_flushreq_freed(struct czfs_daemon *dm);
/* Freed blocks pile up: punch them (czfs_fs_discard_freed) on the
 * flusher now.  False without a flusher, or once it stopped. */
bool czfs_flushreq_discard(struct czfs_daemon *dm);

/*
 * The flusher waits for a request or for *until; when a checkpoint is
 * due (until passed, or early) *until moves period seconds on.  *kick:
 * writeback asked; *commit: a checkpoint is due and something changed;
 * *quiet: it is due and nothing changed in the period; *discard: freed
 * blocks to punch.  False once stopped.
 */
bool czfs_flushreq_wait(struct czfs_flushreq *fr, struct timespec *until,
			unsigned period, bool *kick, bool *commit,
			bool *quiet, bool *discard);
/* Wake the flusher for good: its wait returns false. */
void czfs_flushreq_stop(struct czfs_flushreq *fr);

#endif /* CZFS_FUSE_FLUSHREQ_H */
