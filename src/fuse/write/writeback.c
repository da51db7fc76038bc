// SPDX-License-Identifier: MIT
/* Writeback of dirty clusters (writeback.h). */
#include "config.h"

#include <stddef.h>
#include <stdlib.h>
#include <time.h>

#include "ccache.h"
#include "cluster.h"
#include "coldmap.h"
#include "daemon.h"
#include "flushreq.h"
#include "fs.h"
#include "log.h"
#include "minode.h"
#include "room.h"
#include "util.h"
#include "wbencode.h"
#include "wbpack.h"
#include "wbrun.h"
#include "wentry.h"
#include "writeback.h"


/* ---- dirty clusters ------------------------------------------------------ */

static int dirty_add(struct czfs_daemon *dm, struct czfs_minode *mi,
		     struct czfs_centry *e)
{
	if (CZFS_GROW(mi->dirty, mi->ndirty, mi->dirty_cap, 16))
		return -ENOMEM;
	if (!mi->ndirty) {
		czfs_mi_hold(dm, mi);	/* a dirty inode stays in memory */
		czfs_itable_note_dirty(dm, mi);
	}
	mi->dirty[mi->ndirty++] = e;
	return 0;
}

int czfs_writeback_mark_dirty(struct czfs_daemon *dm, struct czfs_minode *mi,
			      struct czfs_centry *e, bool promised)
{
	uint64_t blocks = 1ull << mi->ii.cluster_shift;
	int err = 0;

	struct czfs_wentry *we = czfs_wentry_of(e);

	we->wseq++;
	if (we->dirty) {
		czfs_ccache_put(dm->cc, e);	/* the dirty list has one */
		return 0;
	}
	/* a promised cluster's room is set aside already: counted twice
	 * until writeback replaces the item, never refused */
	if (promised)
		atomic_fetch_add(&dm->reserved_blocks, blocks);
	else
		err = czfs_room_reserve(dm, blocks);
	if (err)
		return err;
	err = dirty_add(dm, mi, e);
	if (err) {
		czfs_room_unreserve(dm, blocks);
		return err;
	}
	we->dirty = true;
	mi->reserved += blocks;
	czfs_flushreq_change(dm);
	return 0;
}

void czfs_writeback_written(struct czfs_centry *e, uint64_t from, uint64_t to)
{
	struct czfs_wentry *we = czfs_wentry_of(e);

	for (uint64_t b = from / 4096; from < to && b <= (to - 1) / 4096 && b < 64; b++)
		we->wmask |= 1ull << b;
	we->recompress = false;
}

/* ---- writeback ------------------------------------------------------------ */

/* Clusters one transaction of writeback takes at most: 4 MiB of data,
 * some tens of milliseconds of compression, and at least 64 clusters (up
 * to 256 of small ones, so that their runs are not cut short). */
#define WB_BATCH_BYTES	(4u << 20)
#define WB_BATCH_MIN	64u
#define WB_BATCH_MAX	256u

static unsigned wb_batch(const struct czfs_minode *mi)
{
	unsigned n = WB_BATCH_BYTES >> (CZFS_BLOCK_SHIFT + mi->ii.cluster_shift);

	return MIN(MAX(n, WB_BATCH_MIN), WB_BATCH_MAX);
}

/*
 * As btrfs does: a file whose first cluster, written whole, did not
 * compress is probably not compressible; later clusters are stored raw
 * without trying, unless compression is forced (CZFS_INODE_COMPRESS).
 */
static bool first_does_not_compress(const struct czfs_inode_info *ii,
				    const struct czfs_wb_item *ws, unsigned n)
{
	return n && ws[0].e->idx == 0 && ws[0].ci.kind == CZFS_CLUSTER_RAW &&
	       ii->cluster_shift > 0 && ii->alg != CZFS_ALG_NONE &&
	       ws[0].ci.ulen == czfs_inode_cluster_bytes(ii) &&
	       !(ii->flags & (CZFS_INODE_COMPRESS | CZFS_INODE_NOCOMPRESS));
}

/*
 * What the batch links (mi->lock held): its items' ends, and the data it
 * took but does not link: a cluster written again since it was taken
 * holds unlinked bytes past what was encoded, one not linked all of it.
 */
static void wb_linked(const struct czfs_minode *mi,
		      const struct czfs_wb_item *ws, unsigned n,
		      struct czfs_mi_link *l)
{
	uint64_t cbytes = czfs_inode_cluster_bytes(&mi->ii);

	l->end = 0;
	l->pending = UINT64_MAX;
	for (unsigned i = 0; i < n; i++) {
		uint64_t at = ws[i].e->idx * cbytes;

		if (!ws[i].done) {
			l->pending = MIN(l->pending, at);
			continue;
		}
		l->end = MAX(l->end, at + ws[i].ci.ulen);
		if (czfs_wentry_of(ws[i].e)->wseq != ws[i].seq)
			l->pending = MIN(l->pending, at + ws[i].ci.ulen);
	}
}

/* Point the file at the new clusters (and the runs their slices are in)
 * and store its inode. */
static int wb_link(struct czfs_daemon *dm, struct czfs_minode *mi,
		   struct czfs_wb_item *ws, unsigned n, struct czfs_wbrun *run)
{
	unsigned *linked = run->nruns ? calloc(run->nruns, sizeof(*linked)) : NULL;
	struct czfs_fs *fs = dm->fs;
	struct czfs_stored delta = { 0 };
	unsigned put = 0, slices = 0;
	int err = run->nruns && !linked ? -ENOMEM : 0;

	pthread_rwlock_wrlock(&fs->lock);
	if (!err)
		err = czfs_fs_begin(fs);
	for (; !err && put < run->nruns; put++)
		err = czfs_pack_put(fs, &run->runs[put]);
	for (unsigned i = 0; !err && i < n; i++) {
		err = czfs_cluster_write(fs, mi->ino, ws[i].e->idx, &ws[i].ci,
					 &delta);
		ws[i].done = !err;
		if (!err && ws[i].ci.kind == CZFS_CLUSTER_SLICE) {
			linked[ws[i].run_no]++;
			slices++;
		}
		if (!err && dm->cold && ws[i].ci.kind == CZFS_CLUSTER_BLOCKMAP)
			czfs_cold_note(dm->cold, mi->ino, ws[i].e->idx,
				       czfs_cold_now());
	}
	for (unsigned r = 0; err && r < run->nruns; r++) {
		if (r < put && linked)	/* its item counts what links it */
			czfs_pack_settle(fs, &run->runs[r], linked[r]);
		if (!linked || !linked[r])
			czfs_room_give_back(dm, run->runs[r].blkaddr,
					    run->runs[r].nblocks);
	}
	if (delta.underused && dm->cold)	/* its old runs: recompression */
		czfs_cold_note(dm->cold, mi->ino, CZFS_COLD_RUNS, czfs_cold_now());
	atomic_fetch_add(&dm->items_version, 1);
	pthread_mutex_lock(&mi->lock);
	czfs_inode_add_stored(&mi->ii, &delta);
	if (!err && first_does_not_compress(&mi->ii, ws, n))
		mi->ii.flags |= CZFS_INODE_NOCOMPRESS;
	if (!err && !mi->unlinked) {
		struct czfs_mi_link l;

		wb_linked(mi, ws, n, &l);
		err = czfs_mi_store(fs, mi, &l);
		mi->ii_dirty = err != 0;
	}
	pthread_mutex_unlock(&mi->lock);
	pthread_rwlock_unlock(&fs->lock);
	czfs_flushreq_freed(dm);
	if (slices) {
		atomic_fetch_add(&dm->st.wb_runs, run->nruns);
		atomic_fetch_add(&dm->st.wb_slices, slices);
	}
	free(linked);
	return err;
}

/*
 * The batch is encoded: its last run is written, and its placed clusters
 * become slices of their runs; one alone is stored as a COMPRESSED
 * extent.
 */
static int wb_write_run(struct czfs_daemon *dm, struct czfs_wbrun *run,
			struct czfs_wb_item *ws, unsigned n)
{
	bool alone;
	int err = czfs_wbrun_finish(dm, run, &alone);

	for (unsigned i = 0; !err && i < n; i++) {
		struct czfs_wb_item *w = &ws[i];

		if (!w->in_run)
			continue;
		if (!alone) {
			struct czfs_cluster_info c = w->ci;

			czfs_cluster_slice_make(&c, run->runs[w->run_no].blkaddr,
						w->run_off, w->run_clen, &w->ci);
			continue;
		}
		err = czfs_wbrun_write_alone(dm, run, w->run_off, w->run_clen,
					     &w->ci);
		if (!err) {
			w->blk = w->ci.blkaddr;
			w->nblk = w->ci.nblocks;
		}
	}
	return err;
}

static int cmp_idx(const void *a, const void *b)
{
	const struct czfs_wb_item *x = a, *y = b;

	return x->e->idx < y->e->idx ? -1 : x->e->idx > y->e->idx;
}

/* Clusters written again meanwhile stay dirty; the others are clean. */
static void wb_finish(struct czfs_daemon *dm, struct czfs_minode *mi,
		      struct czfs_wb_item *ws, unsigned n, int err)
{
	uint64_t per = 1ull << mi->ii.cluster_shift;
	uint64_t whole = per >= 64 ? UINT64_MAX : (1ull << per) - 1;

	pthread_mutex_lock(&mi->lock);
	mi->wb_pending = UINT64_MAX;	/* linked, or dirty again */
	for (unsigned i = 0; i < n; i++) {
		struct czfs_centry *e = ws[i].e;
		struct czfs_wentry *we = czfs_wentry_of(e);

		if (!err && ws[i].done && we->wseq == ws[i].seq) {
			/* Written whole by writes: the writer's page cache
			 * holds it, and a stream's next cluster reuses its
			 * pages (czfs_ccache_put_used), so a sequential
			 * writer keeps no clean clusters in the pool. */
			bool used = (we->wmask & whole) == whole && !we->recompress;

			we->dirty = false;
			/* Without its written blocks a partial entry holds
			 * nothing: it leaves the cache.  Its wmask stays, for
			 * a reader completing it meanwhile from an item
			 * looked up before ours was linked: the blocks it
			 * copies in must not include the written ones (it
			 * read zeros where a write had been). */
			if (atomic_load(&we->partial))
				czfs_ccache_invalidate_range(dm->cc, mi->ino,
							     e->idx, e->idx + 1);
			else
				we->wmask = 0;
			we->recompress = false;
			czfs_room_unreserve(dm, per);
			mi->reserved -= per;
			if (used)
				czfs_ccache_put_used(dm->cc, e);
			else
				czfs_ccache_put(dm->cc, e);
		} else if (dirty_add(dm, mi, e)) {
			czfs_err("inode %llu: out of memory: a dirty cluster is lost",
				 (unsigned long long)mi->ino);
			we->dirty = false;
			czfs_ccache_put(dm->cc, e);
		}
	}
	pthread_mutex_unlock(&mi->lock);
}

/*
 * Encode and write ws[0..n), then link them in one transaction, holding
 * the room (room.h) so that no commit falls in between; blocks written
 * but not linked go back on failure.
 */
static int encode_link(struct czfs_daemon *dm, struct czfs_minode *mi,
		       const struct czfs_inode_info *ii, struct czfs_wb_item *ws,
		       unsigned n)
{
	struct czfs_wbrun run = { 0 };
	bool fsynced = atomic_load(&mi->fsynced);
	int err = 0;

	czfs_wbenc_ahead(dm, ii, fsynced, ws, n);	/* takes no blocks */
	czfs_room_take_begin(dm);
	for (unsigned i = 0; i < n && !err; i++) {
		ws[i].in_run = false;
		err = czfs_wbenc_one(dm, ii, fsynced, &run, &ws[i]);
	}
	czfs_wbenc_drop(dm, ws, n);		/* after a failure */
	if (!err)
		err = wb_write_run(dm, &run, ws, n);
	if (!err)
		err = wb_link(dm, mi, ws, n, &run);	/* frees what it can't */
	else
		czfs_wbrun_unwrite(dm, &run);		/* never linked */
	for (unsigned i = 0; err && i < n; i++) {
		if (!ws[i].done && ws[i].nblk)
			czfs_room_give_back(dm, ws[i].blk, ws[i].nblk);
		ws[i].nblk = 0;
	}
	czfs_room_take_end(dm);
	czfs_wbrun_free(&run);
	return err;
}

void czfs_writeback_notify_attrs(struct czfs_daemon *dm, uint64_t ino)
{
	if (!atomic_load(&dm->serving))
		return;
	atomic_fetch_add(&dm->st.attr_notifies, 1);
	fuse_lowlevel_notify_inval_inode(dm->se, ino, -1, 0);
}

/* st_blocks now differs from before's (the writeback's own change, or
 * another's meanwhile). */
static bool blocks_changed(struct czfs_minode *mi,
			   const struct czfs_inode_info *before)
{
	blkcnt_t now;

	pthread_mutex_lock(&mi->lock);
	now = czfs_inode_stat_blocks(&mi->ii);
	pthread_mutex_unlock(&mi->lock);
	return now != czfs_inode_stat_blocks(before);
}

/*
 * Write back the oldest max of mi's dirty clusters (wb_lock held) in one
 * transaction; *took says how many it took.
 */
static int writeback_locked(struct czfs_daemon *dm, struct czfs_minode *mi,
			    unsigned max, unsigned *took)
{
	struct czfs_inode_info ii;
	struct czfs_wb_item *ws;
	unsigned n;
	int err = 0;

	pthread_mutex_lock(&mi->lock);
	n = MIN(mi->ndirty, max);
	*took = n;
	ws = n ? malloc(n * sizeof(*ws)) : NULL;
	if (!ws) {
		pthread_mutex_unlock(&mi->lock);
		return n ? -ENOMEM : 0;
	}
	for (unsigned i = 0; i < n; i++) {
		const struct czfs_wentry *we = czfs_wentry_of(mi->dirty[i]);

		memset(&ws[i], 0, offsetof(struct czfs_wb_item, inl));
		ws[i].e = mi->dirty[i];
		ws[i].seq = we->wseq;
		ws[i].wmask = we->wmask;
		ws[i].recompress = we->recompress;
		/* off the dirty list, still not linked: no store's size
		 * may cover them (czfs_mi_store) */
		mi->wb_pending = MIN(mi->wb_pending, mi->dirty[i]->idx *
				     czfs_inode_cluster_bytes(&mi->ii));
	}
	/* the list's hold on mi is ours now; if some stay, a hold of ours */
	if (n < mi->ndirty)
		czfs_mi_hold(dm, mi);
	mi->ndirty -= n;
	memmove(mi->dirty, mi->dirty + n, mi->ndirty * sizeof(*mi->dirty));
	ii = mi->ii;
	pthread_mutex_unlock(&mi->lock);

	qsort(ws, n, sizeof(*ws), cmp_idx);
	if (mi->unlinked) {		/* nobody will read it: drop it */
		for (unsigned i = 0; i < n; i++)
			ws[i].done = true;
		goto out;
	}
	err = encode_link(dm, mi, &ii, ws, n);
	/* only blocks freed since the last checkpoint left: once one is
	 * committed they can be used */
	if (err == -ENOSPC && !czfs_room_reclaim(dm))
		err = encode_link(dm, mi, &ii, ws, n);
	/* not when blocks were only replaced (a database's rewritten pages,
	 * a journal's header): nothing the kernel keeps changed, and the
	 * notification is a system call */
	if (!err && blocks_changed(mi, &ii))
		czfs_writeback_notify_attrs(dm, mi->ino);
	if (err) {
		czfs_err("inode %llu: writeback failed: %s",
			 (unsigned long long)mi->ino, strerror(-err));
	}
out:
	wb_finish(dm, mi, ws, n, err);
	free(ws);
	czfs_mi_put(dm, mi);		/* the hold the dirty list had */
	return err;
}

/* ---- packs of small files -------------------------------------------------- */

struct cands {
	struct czfs_wbpack_cand *c;
	unsigned n, cap;
};

static void pack_gather(struct czfs_daemon *dm, struct czfs_minode *mi,
			void *arg)
{
	struct cands *l = arg;
	struct czfs_wbpack_cand c;
	bool fits;

	atomic_fetch_add(&dm->st.wb_visits, 1);
	pthread_mutex_lock(&mi->lock);
	fits = czfs_wbpack_fits(dm, mi, &c);
	pthread_mutex_unlock(&mi->lock);
	if (!fits)
		return;
	if (CZFS_GROW(l->c, l->n, l->cap, 256))
		return;		/* written back alone */
	czfs_mi_hold(dm, mi);
	l->c[l->n++] = c;
}

/* Write the pack's blocks, out of place. */
static int pack_write(struct czfs_daemon *dm, struct czfs_wbpack *pk)
{
	uint64_t blk;
	int err = czfs_room_write(dm, pk->out, pk->out_len, pk->stored.nblocks,
				  &blk);

	if (!err)
		pk->stored.blkaddr = blk;
	return err;
}

/* Members linked are clean unless written again; the others stay dirty
 * (a lone member too: a pack of one saves nothing). */
static void pack_finish(struct czfs_daemon *dm, struct czfs_wbpack *pk)
{
	for (unsigned i = 0; i < pk->n; i++) {
		struct czfs_wbpack_member *m = &pk->m[i];
		struct czfs_wb_item w = { .e = m->e, .seq = m->seq, .done = m->done };

		if (m->done)
			czfs_writeback_notify_attrs(dm, m->mi->ino);
		wb_finish(dm, m->mi, &w, 1, 0);
		pthread_mutex_unlock(&m->mi->wb_lock);
		czfs_mi_put(dm, m->mi);		/* the dirty list's hold */
	}
}

static void pack_one(struct czfs_daemon *dm, struct czfs_wbpack *pk)
{
	int err;

	if (pk->n > 1) {
		err = czfs_wbpack_encode(dm, pk);
		czfs_room_take_begin(dm);	/* blocks to link: no commit between */
		if (!err)
			err = pack_write(dm, pk);
		if (!err)
			err = czfs_wbpack_link(dm, pk);
		czfs_room_take_end(dm);
		if (err)
			czfs_err("a pack of %u small files failed (%s): written alone",
				 pk->n, strerror(-err));
		czfs_flushreq_freed(dm);
	}
	pack_finish(dm, pk);
}

/*
 * Pack the dirty small files before the inodes are written back one by
 * one: those in inode order, which is the order they were made in (a cp
 * or tar of a directory gives neighbours neighbours) and the order a
 * read-only mount reads ahead in (push.c), so a pack decoded for one
 * file serves the next.  A failure leaves them to the usual writeback.
 */
static void pack_pass(struct czfs_daemon *dm)
{
	struct cands l = { 0 };
	struct czfs_wbpack *pk;
	unsigned i = 0;

	if (dm->opts.nopack)
		return;
	czfs_itable_each_dirty(dm, pack_gather, &l);
	pk = l.n > 1 ? calloc(1, sizeof(*pk)) : NULL;
	if (pk && !czfs_wbpack_init(pk)) {
		qsort(l.c, l.n, sizeof(*l.c), czfs_wbpack_cmp);
		while (i < l.n) {
			czfs_wbpack_take(dm, l.c, l.n, &i, pk);
			if (pk->n)
				pack_one(dm, pk);
		}
	}
	if (pk)
		czfs_wbpack_free(pk);
	free(pk);
	for (i = 0; i < l.n; i++)
		czfs_mi_put(dm, l.c[i].mi);
	free(l.c);
}

int czfs_writeback_attr(struct czfs_daemon *dm, struct czfs_minode *mi)
{
	int err;

	pthread_rwlock_wrlock(&dm->fs->lock);
	err = czfs_fs_begin(dm->fs);
	pthread_mutex_lock(&mi->lock);
	if (!err)
		err = czfs_mi_store(dm->fs, mi, NULL);
	if (!err)
		mi->ii_dirty = false;
	pthread_mutex_unlock(&mi->lock);
	pthread_rwlock_unlock(&dm->fs->lock);
	czfs_flushreq_change(dm);
	return err;
}

int czfs_writeback_some(struct czfs_daemon *dm, struct czfs_minode *mi)
{
	unsigned took;
	int err;

	pthread_mutex_lock(&mi->wb_lock);
	err = writeback_locked(dm, mi, wb_batch(mi), &took);
	pthread_mutex_unlock(&mi->wb_lock);
	return err;
}

/*
 * Batch by batch, wb_lock let go between them: a writer that throttles
 * itself on the same file (czfs_writeback_some) waits for one batch, not
 * for the whole file (measured: up to a second of a 1 GiB file's random
 * writes).  Batches take the oldest first and new clusters go last, so
 * once as many as were dirty at the start have been taken, by this or
 * by batches the lock ordered before this one's last, all of those are
 * linked.  They are counted under wb_lock: a batch in flight (the
 * recompression's, a throttled writer's) holds clusters off the list,
 * and puts back at its end those written meanwhile; counted without
 * them, an fsync's checkpoint committed the batch's older copy of a
 * cluster and left the data the fsync covered dirty (powerloss.sh,
 * its recompress workload: block 24 of /rc/h3 lost).
 */
int czfs_writeback_inode(struct czfs_daemon *dm, struct czfs_minode *mi)
{
	unsigned left, took = 1;
	int err = 0;

	pthread_mutex_lock(&mi->wb_lock);
	pthread_mutex_lock(&mi->lock);
	left = mi->ndirty;
	pthread_mutex_unlock(&mi->lock);
	while (!err && left && took) {
		err = writeback_locked(dm, mi, MIN(left, wb_batch(mi)), &took);
		left -= took;
		pthread_mutex_unlock(&mi->wb_lock);	/* a writer's batch */
		pthread_mutex_lock(&mi->wb_lock);	/* may come between */
	}
	pthread_mutex_unlock(&mi->wb_lock);
	return err;
}

/* ---- everything ------------------------------------------------------------ */

static void wb_one(struct czfs_daemon *dm, struct czfs_minode *mi, void *arg)
{
	int *first = arg, err;

	atomic_fetch_add(&dm->st.wb_visits, 1);
	err = czfs_writeback_inode(dm, mi);	/* nothing dirty: nothing done */
	if (!err && mi->ii_dirty && !mi->unlinked)	/* attributes alone (atime) */
		err = czfs_writeback_attr(dm, mi);
	if (err && !*first)
		*first = err;
}

static void wb_dirty(struct czfs_daemon *dm, struct czfs_minode *mi, void *arg)
{
	atomic_fetch_add(&dm->st.wb_visits, 1);
	czfs_writeback_inode(dm, mi);	/* a failure is logged, data kept dirty */
}

int czfs_writeback_all(struct czfs_daemon *dm, int *first)
{
	*first = 0;
	pack_pass(dm);
	return czfs_itable_each_dirty(dm, wb_one, first);
}

void czfs_writeback_dirty(struct czfs_daemon *dm)
{
	pack_pass(dm);
	czfs_itable_each_dirty(dm, wb_dirty, NULL);
}

void czfs_writeback_packs(struct czfs_daemon *dm)
{
	pack_pass(dm);
}
