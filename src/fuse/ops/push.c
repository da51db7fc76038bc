// SPDX-License-Identifier: MIT
/* Data into the page cache ahead of reads: the next files, a cluster's rest. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ccache.h"
#include "daemon.h"
#include "load.h"
#include "minode.h"
#include "ops.h"
#include "pagepool.h"
#include "push.h"
#include "util.h"
#include "writeback.h"

/* Inode numbers looked at after the one read; files stored at most. */
#define PUSH_SCAN	64
#define PUSH_FILES	32

/* The largest file stored whole: one read's worth, as the kernel asks. */
#define PUSH_FILE_MAX	(1u << 20)

/* Whether e's cluster holds its first bytes of data (not a hole, whose
 * pages the kernel reads itself). */
static bool holds(const struct czfs_centry *e, uint64_t bytes)
{
	return e->page != CZFS_NO_PAGE && e->len >= bytes;
}

/*
 * Store one file's data: its clusters from the cache (loaded here if
 * absent), handed to the kernel in one notification.  A cluster that holds
 * less than its part of the file (a hole) makes us leave the file to the
 * kernel's own reads.  Returns the bytes stored, 0 if left, or -errno.
 */
static long push_file(struct czfs_daemon *dm, const struct czfs_inode_info *ii)
{
	uint64_t cbytes = czfs_inode_cluster_bytes(ii);
	unsigned n = (unsigned)DIV_ROUND_UP(ii->size, cbytes);
	struct czfs_centry *ents[CZFS_BATCH_MAX];	/* n, checked below */
	struct fuse_bufvec *bv;
	long ret = 0;
	int err;

	if (n > CZFS_BATCH_MAX)
		return 0;
	bv = calloc(1, sizeof(*bv) + n * sizeof(bv->buf[0]));
	if (!bv)
		return -ENOMEM;
	err = czfs_load_get(dm, ii, NULL, 0, n, ents);
	if (err) {
		free(bv);
		return err;
	}
	bv->count = n;
	for (unsigned i = 0; i < n; i++) {
		uint64_t want = MIN(cbytes, ii->size - i * cbytes);

		if (!holds(ents[i], want))
			bv->count = 0;
		if (!bv->count)
			break;
		bv->buf[i].mem = czfs_pool_addr(dm->pool, ents[i]->page);
		bv->buf[i].size = want;
	}
	if (bv->count && atomic_load(&dm->serving)) {
		err = fuse_lowlevel_notify_store(dm->se, ii->ino, 0, bv, 0);
		ret = err ? err : (long)ii->size;
	}
	/* the kernel holds the data now */
	for (unsigned i = 0; i < n; i++)
		czfs_ccache_put_used(dm->cc, ents[i]);
	free(bv);
	return ret;
}

/*
 * Whether mi is a file to store now, and if so mark it stored (so no
 * other thread stores it too) and pushing (so no writer changes it
 * meanwhile), and copy its attributes out.  A file whose next read would
 * update its access time is stored only where opens reach us: its
 * reader's open updates it then (ops_file.c), or, open already, the
 * store does.  Where opens are declined the kernel reads it itself, and
 * the READ does.
 */
static bool take(struct czfs_daemon *dm, struct czfs_minode *mi, uint64_t room,
		 time_t now, struct czfs_inode_info *ii)
{
	bool take, touched = false;

	pthread_mutex_lock(&mi->lock);
	take = !mi->pushed && S_ISREG(mi->ii.mode) && mi->ii.size &&
	       mi->ii.size <= MIN(room, PUSH_FILE_MAX) &&
	       (!dm->skip_opens || !czfs_fuse_atime_due(dm, &mi->ii, now)) &&
	       czfs_mi_push_begin(mi);
	if (take) {
		mi->pushed = true;
		touched = mi->readers && czfs_fuse_atime_touch(dm, mi);
		*ii = mi->ii;
	}
	pthread_mutex_unlock(&mi->lock);
	if (touched)
		czfs_writeback_notify_attrs(dm, mi->ino);
	return take;
}

/*
 * Store slots: a walk's and a random read's stores each have their own,
 * so that random readers never take the store of the file a walk reads
 * next.  All of them fewer than the FUSE threads (push.h).
 */
enum { SLOT_WALK, SLOT_REST };

void czfs_push_init(struct czfs_daemon *dm, unsigned threads)
{
	unsigned total = threads > 1 ? MIN(4u, threads - 1) : 0;

	atomic_init(&dm->push_slots[SLOT_WALK], (int)((total + 1) / 2));
	atomic_init(&dm->push_slots[SLOT_REST], (int)(total / 2));
}

/* Take one of the kind's store slots, without waiting: false if none is
 * free. */
static bool slot_take(struct czfs_daemon *dm, int kind)
{
	int n = atomic_load(&dm->push_slots[kind]);

	while (n > 0)
		if (atomic_compare_exchange_weak(&dm->push_slots[kind], &n, n - 1))
			return true;
	return false;
}

static void slot_give(struct czfs_daemon *dm, int kind)
{
	atomic_fetch_add(&dm->push_slots[kind], 1);
}

void czfs_push_after(struct czfs_daemon *dm, uint64_t ino)
{
	uint64_t budget = dm->opts.tree_readahead, done = 0;
	time_t now = time(NULL);
	unsigned files = 0;

	/* ino was just read whole: the kernel holds its data, so a store
	 * started after an earlier file's read must not store it again */
	czfs_mi_mark_pushed(dm, ino);
	if (!slot_take(dm, SLOT_WALK))
		return;

	for (uint64_t j = ino + 1; j <= ino + PUSH_SCAN && done < budget &&
	     files < PUSH_FILES; j++) {
		struct czfs_minode *mi = czfs_mi_to_push(dm, j);
		struct czfs_inode_info ii;
		long got;

		if (!mi)
			continue;
		if (take(dm, mi, budget - done, now, &ii)) {
			got = push_file(dm, &ii);
			czfs_mi_push_end(dm, mi);
			if (got > 0) {
				done += (uint64_t)got;
				files++;
				atomic_fetch_add(&dm->st.push_files, 1);
				atomic_fetch_add(&dm->st.push_bytes, (uint64_t)got);
			} else if (got < 0) {
				atomic_fetch_add(&dm->st.push_errors, 1);
			}
		}
		czfs_mi_put(dm, mi);
	}
	slot_give(dm, SLOT_WALK);
}

/* A random read's clusters' rest, copied out of the pool (push.h). */
struct czfs_rest {
	struct czfs_inode_info ii;	/* the file as the read saw it */
	uint64_t from[2], len[2];	/* before and after the read */
	char data[];			/* len[0], then len[1] bytes */
};

/* Bytes [from, to) of the file, all inside e's cluster: how many to
 * store, 0 for a cluster that does not hold them all (a hole: the kernel
 * reads it). */
static uint64_t rest_len(const struct czfs_inode_info *ii,
			 const struct czfs_centry *e, uint64_t from, uint64_t to)
{
	uint64_t start = e->idx * czfs_inode_cluster_bytes(ii);

	if (from >= to || !holds(e, to - start))
		return 0;
	return to - from;
}

bool czfs_push_rest_plan(struct czfs_daemon *dm,
			 const struct czfs_inode_info *ii,
			 struct czfs_centry *const *ents, unsigned n,
			 uint64_t off, uint64_t end, struct czfs_rest_plan *p)
{
	uint64_t cbytes = czfs_inode_cluster_bytes(ii);
	const struct czfs_centry *e[2] = { ents[0], ents[n - 1] };
	uint64_t lo = e[0]->idx * cbytes;
	uint64_t to[2] = { off, MIN(e[1]->idx * cbytes + cbytes, ii->size) };

	p->from[0] = lo;
	p->from[1] = MAX(end, lo);
	for (int i = 0; i < 2; i++) {
		p->e[i] = e[i];
		p->len[i] = rest_len(ii, e[i], p->from[i], to[i]);
	}
	return (p->len[0] || p->len[1]) && atomic_load(&dm->serving) &&
	       slot_take(dm, SLOT_REST);
}

struct czfs_rest *czfs_push_rest_copy(struct czfs_daemon *dm,
				      const struct czfs_inode_info *ii,
				      const struct czfs_rest_plan *p)
{
	uint64_t cbytes = czfs_inode_cluster_bytes(ii), at = 0;
	struct czfs_rest *r = malloc(sizeof(*r) + p->len[0] + p->len[1]);

	if (!r) {
		slot_give(dm, SLOT_REST);
		return NULL;
	}
	r->ii = *ii;
	for (int i = 0; i < 2; i++) {
		r->from[i] = p->from[i];
		r->len[i] = p->len[i];
		if (!p->len[i])		/* perhaps a hole: no page */
			continue;
		memcpy(r->data + at, (const char *)czfs_pool_addr(dm->pool,
		       p->e[i]->page) + (p->from[i] - p->e[i]->idx * cbytes),
		       p->len[i]);
		at += p->len[i];
	}
	return r;
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

void czfs_push_rest(struct czfs_daemon *dm, struct czfs_minode *mi,
		    struct czfs_rest *r)
{
	uint64_t stored = 0, at = 0;
	bool go;

	/* One store of a file at a time, none while it is written, and none
	 * if it changed since the read (a write or a truncate came and went
	 * between the reply and here: r may hold what it replaced, and a
	 * store past the size would grow the file in the kernel). */
	pthread_mutex_lock(&mi->lock);
	go = !atomic_load(&mi->pushing) && mi->ii.size == r->ii.size &&
	     same_time(&mi->ii.mtime, &r->ii.mtime) &&
	     same_time(&mi->ii.ctime, &r->ii.ctime) && czfs_mi_push_begin(mi);
	pthread_mutex_unlock(&mi->lock);
	for (int i = 0; go && i < 2; i++) {
		struct fuse_bufvec bv = FUSE_BUFVEC_INIT(r->len[i]);
		int err;

		bv.buf[0].mem = r->data + at;
		at += r->len[i];
		if (!r->len[i] || !atomic_load(&dm->serving))
			continue;
		err = fuse_lowlevel_notify_store(dm->se, r->ii.ino, r->from[i],
						 &bv, 0);
		if (err)
			atomic_fetch_add(&dm->st.push_errors, 1);
		else
			stored += r->len[i];
	}
	if (go)
		czfs_mi_push_end(dm, mi);
	if (stored) {
		atomic_fetch_add(&dm->st.push_rests, 1);
		atomic_fetch_add(&dm->st.push_rest_bytes, stored);
	}
	slot_give(dm, SLOT_REST);
	free(r);
}
