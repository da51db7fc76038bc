// SPDX-License-Identifier: MIT
/* Background and on-demand recompression (recompress.h). */
#include "config.h"

#include <linux/ioprio.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "btree.h"
#include "ccache.h"
#include "cluster.h"
#include "coldmap.h"
#include "daemon.h"
#include "fs.h"
#include "inode.h"
#include "load.h"
#include "log.h"
#include "minode.h"
#include "pack.h"
#include "pagepool.h"
#include "recompress.h"
#include "util.h"
#include "wentry.h"
#include "worker.h"
#include "writeback.h"

/* Clusters taken at a time: at most one writeback transaction's worth
 * (writeback.c: 4 MiB of data, 64 to 256 clusters; rewrite_batch cuts a
 * longer list of big clusters to that). */
#define RECOMP_BATCH	256
#define RECOMP_BYTES	(4u << 20)
/* Tree items the mount's scan looks at under one hold of fs->lock. */
#define SCAN_STEP	4096

struct czfs_recomp {
	struct czfs_worker w;
	struct czfs_key next;		/* the tree scan's place */
	bool scanning;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Whether ci is the kind a cluster being recompressed may be. */
static bool wanted(const struct czfs_cluster_info *ci, bool any)
{
	if (ci->kind == CZFS_CLUSTER_BLOCKMAP)
		return true;
	/* packs are shared: a member rewritten alone would leave them; a
	 * slice leaves its run, freed with its last slice */
	return any && ci->kind != CZFS_CLUSTER_HOLE &&
	       ci->kind != CZFS_CLUSTER_PACKED;
}

/* The bytes of the image ci holds (an inline payload as a block; a
 * pack's are shared; a slice's, its payload). */
static uint64_t held(const struct czfs_cluster_info *ci)
{
	if (ci->kind == CZFS_CLUSTER_SLICE)
		return ci->slice_len;
	if (ci->kind == CZFS_CLUSTER_PACKED)
		return 0;
	return ((uint64_t)ci->nblocks +
		(ci->inline_len && ci->kind != CZFS_CLUSTER_BLOCKMAP)) *
	       CZFS_BLOCK_SIZE;
}

/* The item of cluster idx of mi (with ii, its attributes now). */
static int lookup(struct czfs_daemon *dm, struct czfs_minode *mi, uint64_t idx,
		  struct czfs_inode_info *ii, struct czfs_cluster_info *ci,
		  void *inl)
{
	czfs_mi_attr(mi, ii);
	return czfs_load_items(dm, ii, idx, 1, ci, inl);
}

/*
 * Mark cluster idx of mi written whole, as a write of what it holds
 * would: writeback then encodes it with the file's algorithm.  Skipped
 * (0) when it is not of a wanted kind, or dirty already: a writer has it,
 * and its writeback decides.  *old: the bytes of the image it held.
 */
static int rewrite_one(struct czfs_daemon *dm, struct czfs_minode *mi,
		       uint64_t idx, bool any, uint64_t *old, bool *taken)
{
	uint8_t inl[CZFS_INLINE_MAX];
	struct czfs_inode_info ii;
	struct czfs_cluster_info ci;
	struct czfs_centry *e;
	struct czfs_wentry *we;
	unsigned n;
	int err;

	*taken = false;
	/* A truncate or punch drops clusters under wb_lock: held from the
	 * look to the mark, this cluster is either gone before (not found)
	 * or dropped after, never written back past the file's end. */
	pthread_mutex_lock(&mi->wb_lock);
	err = lookup(dm, mi, idx, &ii, &ci, inl);
	if (err || mi->unlinked || !wanted(&ci, any) ||
	    idx * czfs_inode_cluster_bytes(&ii) >= ii.size)
		goto out;
	*old = held(&ci);
	err = czfs_load_get(dm, &ii, NULL, idx, 1, &e);
	if (err)
		goto out;
	pthread_mutex_lock(&mi->lock);
	we = czfs_wentry_of(e);
	if (we->dirty || !e->len || e->page == CZFS_NO_PAGE) {
		pthread_mutex_unlock(&mi->lock);
		czfs_ccache_put(dm->cc, e);
		goto out;
	}
	n = DIV_ROUND_UP(e->len, CZFS_BLOCK_SIZE);
	we->wmask = n >= 64 ? ~0ull : (1ull << n) - 1;
	we->recompress = true;	/* compressed, even a log's tail */
	/* A promised (fallocated) cluster keeps its promise: the item
	 * looked up above says whether it has one. */
	err = czfs_writeback_mark_dirty(dm, mi, e, ci.prealloc);
	pthread_mutex_unlock(&mi->lock);
	if (err)
		czfs_ccache_put(dm->cc, e);
	*taken = !err;
out:
	pthread_mutex_unlock(&mi->wb_lock);
	return err;
}

/* The bytes cluster idx of mi holds now. */
static uint64_t stored_bytes(struct czfs_daemon *dm, struct czfs_minode *mi,
			      uint64_t idx)
{
	uint8_t inl[CZFS_INLINE_MAX];
	struct czfs_inode_info ii;
	struct czfs_cluster_info ci;

	return lookup(dm, mi, idx, &ii, &ci, inl) ? 0 : held(&ci);
}

static int rewrite_some(struct czfs_daemon *dm, struct czfs_minode *mi,
			const uint64_t *idx, unsigned n, bool any);

/* Rewrite clusters idx[0..n) of mi (n <= RECOMP_BATCH) and write them
 * back, at most RECOMP_BYTES (but 64 clusters) at a time: 0 or -errno;
 * -ENOSPC once one found no room (those before it are written back). */
static int rewrite_batch(struct czfs_daemon *dm, struct czfs_minode *mi,
			 const uint64_t *idx, unsigned n, bool any)
{
	unsigned step = MAX(RECOMP_BYTES >> (CZFS_BLOCK_SHIFT +
					     mi->ii.cluster_shift), 64u);
	int err = 0;

	for (unsigned i = 0; !err && i < n; i += step)
		err = rewrite_some(dm, mi, idx + i, MIN(step, n - i), any);
	return err;
}

static int rewrite_some(struct czfs_daemon *dm, struct czfs_minode *mi,
			const uint64_t *idx, unsigned n, bool any)
{
	uint64_t old[RECOMP_BATCH];
	unsigned done = 0;
	bool taken[RECOMP_BATCH] = { false };
	uint64_t before = 0, after = 0;
	int err = 0;

	for (unsigned i = 0; i < n && !err; i++)
		err = rewrite_one(dm, mi, idx[i], any, &old[i], &taken[i]);
	if (!err || err == -ENOSPC) {
		int wb = czfs_writeback_inode(dm, mi);

		err = err ?: wb;
	}
	for (unsigned i = 0; i < n; i++) {
		if (!taken[i])
			continue;
		done++;
		before += old[i];
		after += stored_bytes(dm, mi, idx[i]);
	}
	atomic_fetch_add(&dm->st.recomp_clusters, done);
	if (before > after)
		atomic_fetch_add(&dm->st.recomp_saved, before - after);
	return err;
}

int czfs_recomp_file(struct czfs_daemon *dm, struct czfs_minode *mi)
{
	uint64_t idx[RECOMP_BATCH], next = 0, end;
	struct czfs_inode_info ii;
	int err = 0;

	czfs_mi_attr(mi, &ii);
	end = DIV_ROUND_UP(ii.size, czfs_inode_cluster_bytes(&ii));
	while (!err && next < end) {
		unsigned n = 0;

		while (n < RECOMP_BATCH && next < end)
			idx[n++] = next++;
		err = rewrite_batch(dm, mi, idx, n, true);
	}
	return err;
}

/* Whether the run at blkaddr is less than half live (0: gone, damaged). */
static bool run_underused(struct czfs_daemon *dm, uint64_t blkaddr)
{
	struct czfs_pack_info p;
	int err;

	pthread_rwlock_rdlock(&dm->fs->lock);
	err = czfs_pack_get(dm->fs, blkaddr, &p);
	pthread_rwlock_unlock(&dm->fs->lock);
	return !err && czfs_run_underused(&p);
}

/*
 * Move mi's slices that lie in runs less than half live out of them:
 * rewritten whole, writeback lays them in a run of their own, and the old
 * run is freed with its last slice.  (Slices of other files that share
 * such a run keep it until they move too.)
 */
#define COMPACT_WALK	64	/* clusters looked up in one walk */

static int compact_runs(struct czfs_daemon *dm, struct czfs_minode *mi)
{
	struct czfs_cluster_info *ci = malloc(COMPACT_WALK * sizeof(*ci));
	uint8_t *inl = malloc((size_t)COMPACT_WALK * CZFS_INLINE_MAX);
	uint64_t idx[RECOMP_BATCH], end, run = 0;
	struct czfs_inode_info ii;
	bool under = false;
	unsigned n = 0;
	int err = ci && inl ? 0 : -ENOMEM;

	czfs_mi_attr(mi, &ii);
	end = DIV_ROUND_UP(ii.size, czfs_inode_cluster_bytes(&ii));
	for (uint64_t first = 0; !err && first < end; first += COMPACT_WALK) {
		unsigned w = (unsigned)MIN(end - first, COMPACT_WALK);
		bool found;	/* a damaged item: the window is skipped */

		czfs_mi_attr(mi, &ii);
		found = !czfs_load_items(dm, &ii, first, w, ci, inl);
		for (unsigned k = 0; found && !err && k < w; k++) {
			if (ci[k].kind != CZFS_CLUSTER_SLICE)
				continue;
			if (ci[k].run != run) {	/* slices come run by run */
				run = ci[k].run;
				under = run_underused(dm, run);
			}
			if (!under)
				continue;
			idx[n++] = first + k;
			if (n == RECOMP_BATCH) {
				err = rewrite_batch(dm, mi, idx, n, true);
				n = 0;
			}
		}
	}
	if (!err && n)
		err = rewrite_batch(dm, mi, idx, n, true);
	free(ci);
	free(inl);
	return err;
}

/* ---- the worker --------------------------------------------------------- */

static int scan_found(void *arg, uint64_t ino, uint64_t idx)
{
	struct czfs_daemon *dm = arg;

	czfs_cold_note(dm->cold, ino, idx, czfs_cold_now());
	return 0;
}

/* One step of the scan for block-mapped clusters (rc->scanning). */
static void scan_step(struct czfs_daemon *dm, struct czfs_recomp *rc)
{
	int ret;

	pthread_rwlock_rdlock(&dm->fs->lock);
	ret = czfs_cluster_scan(dm->fs, CZFS_CLUSTER_BLOCKMAP, &rc->next,
				SCAN_STEP, scan_found, dm);
	pthread_rwlock_unlock(&dm->fs->lock);
	if (ret < 0)
		czfs_err("recompression: the scan of the tree failed (%s); "
			 "it tries again later", strerror(-ret));
	if (ret != 0) {		/* the end, or a failure: from the start later */
		rc->scanning = false;
		memset(&rc->next, 0, sizeof(rc->next));
		if (ret > 0)
			atomic_fetch_add(&dm->st.recomp_scans, 1);
	}
}

/* Recompress refs[0..n) (sorted by inode), an inode's batch at a time. */
static void recompress_refs(struct czfs_daemon *dm, struct czfs_cold_ref *refs,
			    unsigned n)
{
	uint64_t idx[RECOMP_BATCH];

	for (unsigned i = 0, j; i < n; i = j) {
		struct czfs_minode *mi;
		bool runs = false;
		unsigned m = 0;
		int err = 0;

		for (j = i; j < n && refs[j].ino == refs[i].ino; j++) {
			if (refs[j].idx == CZFS_COLD_RUNS)
				runs = true;
			else
				idx[m++] = refs[j].idx;
		}
		if (czfs_mi_get(dm, refs[i].ino, false, &mi))
			continue;		/* gone: nothing to do */
		if (m)
			err = rewrite_batch(dm, mi, idx, m, false);
		if (!err && runs)
			err = compact_runs(dm, mi);
		czfs_mi_put(dm, mi);
		if (err == -ENOSPC) {		/* later, when there is room */
			for (unsigned k = i; k < j; k++)
				czfs_cold_note(dm->cold, refs[k].ino, refs[k].idx,
					       czfs_cold_now());
		} else if (err) {
			czfs_err("recompression of inode %llu failed: %s",
				 (unsigned long long)refs[i].ino, strerror(-err));
		}
	}
}

/* The worker runs at idle priority: the scheduler's and the disk's. */
static void lower_priority(void)
{
	struct sched_param sp = { 0 };
	pid_t tid = (pid_t)syscall(SYS_gettid);

	if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp))
		(void)setpriority(PRIO_PROCESS, (id_t)tid, 19);
	(void)syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, tid,
		      IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0));
}

/*
 * Each round: a step of the scan while it runs, else the clusters cold
 * now, a batch at a time; then a rest three times as long as the work
 * (a quarter of the time at most), or a second when there was none.
 */
static void *worker(void *arg)
{
	struct czfs_daemon *dm = arg;
	struct czfs_recomp *rc = dm->rc;
	struct czfs_cold_ref refs[RECOMP_BATCH];
	uint64_t limit = dm->opts.cache_size / CZFS_BLOCK_SIZE / 4;
	uint64_t rest = 1000000000ull;

	lower_priority();
	do {
		uint64_t t0 = now_ns();
		unsigned n = 0;

		if (atomic_load(&dm->remounted_ro) ||
		    atomic_load(&dm->reserved_blocks) > limit) {
			rest = 1000000000ull;	/* writers are busy: later */
			continue;
		}
		if (!rc->scanning && czfs_cold_overflowed(dm->cold))
			rc->scanning = true;
		if (rc->scanning) {
			scan_step(dm, rc);
		} else {
			n = czfs_cold_take(dm->cold, czfs_cold_now() - dm->opts.recompress,
					   refs, RECOMP_BATCH);
			recompress_refs(dm, refs, n);
			czfs_cold_done(dm->cold, n);
		}
		rest = rc->scanning || n ? MAX(3 * (now_ns() - t0), 10000000ull) :
		       1000000000ull;
	} while (czfs_worker_nap(&rc->w, rest));
	return NULL;
}

int czfs_recomp_start(struct czfs_daemon *dm)
{
	struct czfs_recomp *rc;

	if (!dm->cold)		/* (made with the daemon when it is on) */
		return 0;
	rc = calloc(1, sizeof(*rc));
	if (!rc)
		return -ENOMEM;
	rc->scanning = true;		/* what earlier mounts left */
	dm->rc = rc;
	return czfs_worker_start(&rc->w, 1, worker, dm);
}

void czfs_recomp_stop(struct czfs_daemon *dm)
{
	struct czfs_recomp *rc = dm->rc;

	if (!rc)
		return;
	czfs_worker_stop(&rc->w);
	czfs_worker_join(&rc->w);
	czfs_worker_free(&rc->w);
	free(rc);
	dm->rc = NULL;
}
