// SPDX-License-Identifier: MIT
/* When writeback runs: checkpoints, the flusher thread, a writer's throttle
 * (flusher.h). */
#include "config.h"

#include <stdlib.h>
#include <time.h>

#include "daemon.h"
#include "discard.h"
#include "fs.h"
#include "flusher.h"
#include "flushreq.h"
#include "log.h"
#include "minode.h"
#include "room.h"
#include "util.h"
#include "writeback.h"

struct czfs_flusher {
	struct czfs_flushreq req;	/* what it is asked: dm->fr */
	pthread_mutex_t commit_lock;	/* one checkpoint at a time */
	pthread_mutex_t balance_lock;	/* one writer balances at a time */
	atomic_ullong unpunched_after;	/* unpunched blocks after the last pass */
	unsigned long long written_at;	/* backing write bytes at the last
					 * checkpoint (commit_lock) */
};


/* One batch of each dirty inode while the pool is past the limit. */
static void wb_some(struct czfs_daemon *dm, struct czfs_minode *mi, void *arg)
{
	const uint64_t *limit = arg;

	atomic_fetch_add(&dm->st.wb_visits, 1);
	if (atomic_load(&dm->reserved_blocks) > *limit)
		czfs_writeback_some(dm, mi);	/* as wb_dirty */
}

/* The dirty data of all files together (room reserved for it, blocks). */
static uint64_t balance_limit(const struct czfs_daemon *dm)
{
	return dm->opts.dirty_max / CZFS_BLOCK_SIZE;
}

bool czfs_flusher_throttling(struct czfs_daemon *dm)
{
	return dm->fl && atomic_load(&dm->reserved_blocks) > balance_limit(dm);
}

void czfs_flusher_balance(struct czfs_daemon *dm)
{
	uint64_t limit = balance_limit(dm);
	unsigned long long before;

	if (!czfs_flusher_throttling(dm))
		return;
	pthread_mutex_lock(&dm->fl->balance_lock);
	if (atomic_load(&dm->reserved_blocks) > limit)
		czfs_writeback_packs(dm);
	/* rounds of a batch per inode, until under the limit or stuck */
	do {
		before = atomic_load(&dm->reserved_blocks);
		if (before <= limit)
			break;
		czfs_itable_each_dirty(dm, wb_some, &limit);
	} while (atomic_load(&dm->reserved_blocks) < before);
	pthread_mutex_unlock(&dm->fl->balance_lock);
}

/*
 * The flusher's discard passes punch only the freed blocks that lie in
 * runs of PUNCH_MIN_RUN blocks or more (a deleted file, a truncate, a
 * cluster stored anew); the scattered single blocks random writes and
 * database commits free are left to the next writes, which take them
 * again (lowest first), and to the unmount's pass, which punches them
 * all.  Punching those too, random 4 KiB writes made 4,000 punches a
 * second, each a host discard holding the image file's lock against
 * every write: 9,000 IOPS and stalls of 150-600 ms, against 14,500 IOPS
 * without discard.  A pass runs after each periodic checkpoint, and
 * sooner once UNPUNCHED_GROWTH blocks more are unpunched than after the
 * last one (a big file deleted).  After a period in which nothing
 * changed, a pass punches the single blocks too: the writer has
 * stopped, and the image gives back what it held for it (else the
 * unmount would: 4.5 s after 15 s of random writes on a host that
 * discards).
 */
#define PUNCH_MIN_RUN		16u
#define UNPUNCHED_GROWTH	1024u

/*
 * A checkpoint after this much was written flushes the image once before
 * it takes fs->lock: the commit's flush under the lock then has only the
 * metadata left to write.  Holding the lock through the host's writeback
 * of 100 MB of a random writer's blocks stalled every write half a
 * second.
 */
#define PREFLUSH_BYTES		(8ull << 20)

static int checkpoint(struct czfs_daemon *dm, bool clean)
{
	struct czfs_flusher *fl = dm->fl;
	int err = 0, wb_err = 0;
	uint64_t t0, t1;

	pthread_mutex_lock(&fl->commit_lock);
	err = czfs_writeback_all(dm, &wb_err);
	if (!err && atomic_load(&dm->fs->bdev->stats.write_bytes) - fl->written_at >
		    PREFLUSH_BYTES)
		err = czfs_bdev_flush(dm->fs->bdev);
	t0 = czfs_now_ns();
	czfs_room_commit_begin(dm);	/* no writeback between blocks and link */
	pthread_rwlock_wrlock(&dm->fs->lock);
	t1 = czfs_now_ns();
	czfs_latency_add(&dm->st.cp_wait, t1 - t0);
	/* Nothing written back and nothing else changed since the last
	 * checkpoint (an fsync of a clean file or directory, as SQLite's
	 * of its directory): that one holds it all already. */
	if (!err && !clean && !czfs_fs_changed(dm->fs))
		atomic_fetch_add(&dm->st.checkpoints_skipped, 1);
	else if (!err && !(err = clean && !wb_err ?
			   czfs_fs_commit_unmount(dm->fs) : czfs_fs_commit(dm->fs))) {
		atomic_fetch_add(&dm->st.checkpoints, 1);
		if (dm->fs->cp.flags & CZFS_CP_COVERED)
			atomic_fetch_add(&dm->st.checkpoints_one_flush, 1);
	}
	pthread_rwlock_unlock(&dm->fs->lock);
	czfs_room_commit_end(dm);
	czfs_latency_add(&dm->st.cp_hold, czfs_now_ns() - t1);
	fl->written_at = atomic_load(&dm->fs->bdev->stats.write_bytes);
	pthread_mutex_unlock(&fl->commit_lock);
	/* The host's punches of the blocks it freed: with fs->lock let go
	 * (under it they stalled every reader and writer: random 4 KiB
	 * writes' 99.9th percentile 1 s, 80 ms without discard), and not in
	 * an fsync's wait (SQLite with a rollback journal: 28 punches, a
	 * third of each transaction's time): the flusher punches them after
	 * its periodic checkpoint, or sooner past UNPUNCHED_GROWTH more, in
	 * fewer, longer runs, and the last checkpoint before the unmount
	 * ends.  Meanwhile they are free to take again, which saves the
	 * host the punch and the next write's allocation: SQLite with a
	 * rollback journal, 21 punches a transaction before. */
	if (clean || !dm->fr)
		czfs_fs_discard_freed(dm->fs, 1);
	else if (czfs_smap_unpunched(&dm->fs->smap) >=
		 atomic_load(&fl->unpunched_after) + UNPUNCHED_GROWTH)
		czfs_flushreq_discard(dm);
	return err ?: wb_err;
}

int czfs_flusher_checkpoint(struct czfs_daemon *dm)
{
	return checkpoint(dm, false);
}

int czfs_flusher_checkpoint_clean(struct czfs_daemon *dm)
{
	return checkpoint(dm, true);
}

/* Say why a checkpoint failed, and what to do when the image is full. */
static void checkpoint_failed(int err, const char *which)
{
	if (!err)
		return;
	czfs_err("%s failed (%s): the image keeps the one before%s", which,
		 strerror(-err), err == -ENOSPC ? "; the image is full: raise "
		 "its size limit with fsck.czfs --grow=SIZE" : "");
}

/*
 * The flusher: a checkpoint every opts.commit seconds when something
 * changed, and writeback when a writer asks for it (then the writer goes
 * on taking data while this thread compresses: two cores at work).
 */
static void *flusher(void *arg)
{
	struct czfs_daemon *dm = arg;
	struct timespec until;
	bool kick, commit, quiet, discard;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += dm->opts.commit;
	while (czfs_flushreq_wait(dm->fr, &until, dm->opts.commit, &kick,
				  &commit, &quiet, &discard)) {
		if (kick)
			czfs_writeback_dirty(dm);
		if (commit)
			checkpoint_failed(czfs_flusher_checkpoint(dm), "a periodic checkpoint");
		if (discard || commit || (quiet && czfs_smap_unpunched(&dm->fs->smap))) {
			czfs_fs_discard_freed(dm->fs, quiet ? 1 : PUNCH_MIN_RUN);
			atomic_store(&dm->fl->unpunched_after,
				     czfs_smap_unpunched(&dm->fs->smap));
		}
	}
	return NULL;
}

int czfs_flusher_start(struct czfs_daemon *dm)
{
	struct czfs_flusher *fl = calloc(1, sizeof(*fl));

	if (!fl)
		return -ENOMEM;
	czfs_flushreq_init(&fl->req);
	pthread_mutex_init(&fl->commit_lock, NULL);
	pthread_mutex_init(&fl->balance_lock, NULL);
	dm->fl = fl;
	dm->fr = &fl->req;
	return czfs_worker_run(&fl->req.w, 1, flusher, dm);
}

void czfs_flusher_stop(struct czfs_daemon *dm)
{
	struct czfs_flusher *fl = dm->fl;

	if (!fl)
		return;
	czfs_flushreq_stop(&fl->req);
	czfs_worker_join(&fl->req.w);
	checkpoint_failed(checkpoint(dm, true), "the last checkpoint");
	dm->fr = NULL;
	czfs_flushreq_destroy(&fl->req);
	pthread_mutex_destroy(&fl->commit_lock);
	pthread_mutex_destroy(&fl->balance_lock);
	free(fl);
	dm->fl = NULL;
}
