// SPDX-License-Identifier: MIT
/* One cluster of a writeback batch, encoded and stored (wbencode.h). */
#include "config.h"

#include <string.h>

#include "ccache.h"
#include "cluster.h"
#include "daemon.h"
#include "fs.h"
#include "inode.h"
#include "load.h"
#include "pagepool.h"
#include "room.h"
#include "temp.h"
#include "thread.h"
#include "util.h"
#include "wbblocks.h"
#include "wbencode.h"
#include "wbpool.h"
#include "wbrun.h"
#include "wentry.h"

static void wb_policy(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		      uint64_t idx, struct czfs_cluster_policy *pol)
{
	uint64_t cbytes = czfs_inode_cluster_bytes(ii);

	pol->alg = ii->flags & CZFS_INODE_NOCOMPRESS ? CZFS_ALG_NONE : ii->alg;
	pol->level = ii->level;
	pol->zero_detect = !dm->opts.no_zero_detect;
	pol->allow_inline = ii->size && idx == (ii->size - 1) / cbytes;
}

static bool log_tail(const struct czfs_inode_info *ii,
		     const struct czfs_wb_item *w, bool fsynced)
{
	return fsynced && !w->recompress &&
	       w->e->len < czfs_inode_cluster_bytes(ii);
}

/* Written whole (or one block): never hot, no lookup needed. */
static bool written_whole(const struct czfs_inode_info *ii,
			  const struct czfs_wb_item *w, bool fsynced)
{
	unsigned n = DIV_ROUND_UP(w->e->len, CZFS_BLOCK_SIZE);
	uint64_t all = n >= 64 ? ~0ull : (1ull << n) - 1;

	return n <= 1 || ((w->wmask & all) == all && !log_tail(ii, w, fsynced));
}

/*
 * A cluster written in part over what it held is hot (czfs_cluster_hot):
 * written back block by block, its unwritten blocks kept where they are;
 * so is the partial last cluster of a file a writer fsyncs (log_tail).
 */
static bool wb_is_hot(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		      const struct czfs_wb_item *w, bool fsynced,
		      struct czfs_cluster_info *old, void *old_map)
{
	int err;

	if (written_whole(ii, w, fsynced))
		return false;
	err = czfs_load_items(dm, ii, w->e->idx, 1, old, old_map);
	return !err && czfs_cluster_hot(old, w->wmask, w->e->len,
					log_tail(ii, w, fsynced));
}

/* Write a hot cluster's written blocks out of place (rbuf mapped). */
static int wb_blocks(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		     const struct czfs_cluster_policy *pol,
		     const struct czfs_cluster_info *old, struct czfs_wb_item *w)
{
	uint32_t rpages[CZFS_MAX_CLUSTER_BLOCKS];
	struct czfs_wbblocks *p = &w->hot;
	struct czfs_mapping rm, cm = { 0 };
	struct czfs_temp tp = { 0 };
	uint64_t blk = 0;
	int err;

	czfs_centry_pages(w->e, rpages);
	err = czfs_win_map(dm->wc, rpages, 1u << ii->cluster_shift, false, &rm);
	if (err)
		return err;
	czfs_wbblocks_plan(old, w->wmask, rm.addr, w->e->len, pol->zero_detect, p);
	if (p->unwritten && atomic_load(&czfs_wentry_of(w->e)->partial)) {
		/* blocks it must take from pages it never loaded */
		err = czfs_load_complete(dm, ii, w->e);
		if (!err)
			czfs_wbblocks_plan(old, w->wmask, rm.addr, w->e->len,
					   pol->zero_detect, p);
	}
	if (!err && p->nfresh) {
		err = czfs_temp_alloc(dm, p->nfresh, &tp, &dm->st.temp_alloc, 0);
		if (!err)
			err = czfs_win_map(dm->wc, tp.pages, tp.n, true, &cm);
		if (!err)
			err = czfs_room_alloc(dm, p->nfresh, &blk);
	}
	if (!err) {
		err = czfs_wbblocks_write(dm->fs->bdev, p, rm.addr, cm.addr, blk,
					  &w->ci);
		if (err && p->nfresh)
			czfs_room_give_back(dm, blk, p->nfresh);
	}
	if (!err && p->nfresh) {
		w->blk = blk;
		w->nblk = p->nfresh;
	}
	if (cm.addr)
		czfs_win_unmap(dm->wc, &cm);
	czfs_temp_free(dm, &tp);
	if (!err) {
		atomic_fetch_add(&dm->st.wb_hot, 1);
		atomic_fetch_add(&dm->st.wb_hot_fresh, p->nfresh);
		atomic_fetch_add(&dm->st.wb_hot_kept, p->nkept);
	}
	czfs_win_unmap(dm->wc, &rm);
	return err;
}

/* A compressed cluster's payload into the batch's runs. */
static int wb_place(struct czfs_daemon *dm, struct czfs_wbrun *run,
		    const uint8_t *stored, struct czfs_wb_item *w)
{
	int err = czfs_wbrun_place(dm, run,
				   stored + sizeof(struct czfs_cluster_header),
				   w->ci.clen, &w->run_no, &w->run_off);

	w->in_run = !err;
	w->run_clen = w->ci.clen;
	return err;
}

/*
 * Compress w's cluster (its pages -> tp's, through the window cache);
 * on success tp stays mapped at *cm, and an inline payload is copied
 * into the item.  flags: czfs_temp_alloc's.
 */
static int wb_compress(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		       struct czfs_wb_item *w, struct czfs_temp *tp, unsigned flags,
		       struct czfs_mapping *cm)
{
	unsigned rn = 1u << ii->cluster_shift;
	uint32_t rpages[CZFS_MAX_CLUSTER_BLOCKS];
	struct czfs_thread *t = czfs_fuse_thread();
	struct czfs_cluster_policy pol;
	struct czfs_mapping rm;
	int err;

	if (!t)
		return -ENOMEM;
	wb_policy(dm, ii, w->e->idx, &pol);
	czfs_centry_pages(w->e, rpages);
	err = czfs_temp_alloc(dm, MIN(rn + 1, (unsigned)CZFS_MAX_CLUSTER_BLOCKS),
			      tp, &dm->st.temp_alloc, flags);
	if (err)
		return err;
	err = czfs_win_map(dm->wc, rpages, rn, false, &rm);
	if (err)
		goto out_temp;
	err = czfs_win_map(dm->wc, tp->pages, tp->n, true, cm);
	if (err)
		goto out_rbuf;
	err = czfs_cluster_encode(t->codec, &pol, rm.addr, w->e->len,
				  cm->addr, &w->ci, &w->out_len);
	if (!err && w->ci.inline_len) {
		memcpy(w->inl, w->ci.inline_data, w->ci.inline_len);
		w->ci.inline_data = w->inl;
	}
	if (err)
		czfs_win_unmap(dm->wc, cm);
out_rbuf:
	czfs_win_unmap(dm->wc, &rm);
out_temp:
	if (err)
		czfs_temp_free(dm, tp);
	return err;
}

/* An encoded cluster's payload (at out): a compressed one into the
 * batch's run, a raw one to new blocks; an inline one or a hole holds
 * no blocks. */
static int wb_store(struct czfs_daemon *dm, struct czfs_wbrun *run,
		    const uint8_t *out, struct czfs_wb_item *w)
{
	uint64_t blk;
	int err;

	if (w->ci.inline_len || !w->ci.nblocks)
		return 0;
	if (w->ci.kind == CZFS_CLUSTER_COMPRESSED)
		return wb_place(dm, run, out, w);	/* written with a run */
	err = czfs_room_write(dm, out, w->out_len, w->ci.nblocks, &blk);
	if (!err) {
		w->ci.blkaddr = blk;
		w->blk = blk;
		w->nblk = w->ci.nblocks;
	}
	return err;
}

/* Store what was encoded ahead. */
static int wb_store_ahead(struct czfs_daemon *dm, struct czfs_wbrun *run,
			  struct czfs_wb_item *w)
{
	struct czfs_mapping cm;
	int err;

	w->ahead = false;
	if (!w->tp.n)		/* inline, or a hole: nothing to store */
		return 0;
	err = czfs_win_map(dm->wc, w->tp.pages, w->tp.n, false, &cm);
	if (!err) {
		err = wb_store(dm, run, cm.addr, w);
		czfs_win_unmap(dm->wc, &cm);
	}
	czfs_temp_free(dm, &w->tp);
	return err;
}

int czfs_wbenc_one(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		   bool fsynced, struct czfs_wbrun *run, struct czfs_wb_item *w)
{
	struct czfs_cluster_policy pol;
	struct czfs_cluster_info old;
	struct czfs_mapping cm;
	struct czfs_temp tp;
	int err;

	if (!w->e->len || w->e->page == CZFS_NO_PAGE) {
		memset(&w->ci, 0, sizeof(w->ci));	/* a hole */
		return 0;
	}
	atomic_fetch_add(&dm->st.wb_clusters, 1);
	if (w->ahead)
		return wb_store_ahead(dm, run, w);
	wb_policy(dm, ii, w->e->idx, &pol);
	if (wb_is_hot(dm, ii, w, fsynced, &old, w->inl))
		return wb_blocks(dm, ii, &pol, &old, w);
	err = czfs_load_complete(dm, ii, w->e);	/* encoded whole */
	if (!err)
		err = wb_compress(dm, ii, w, &tp, 0, &cm);
	if (err)
		return err;
	err = wb_store(dm, run, cm.addr, w);
	czfs_win_unmap(dm->wc, &cm);
	czfs_temp_free(dm, &tp);
	return err;
}

/* ---- ahead, on every core ------------------------------------------------ */

struct wb_pre {
	struct czfs_daemon *dm;
	const struct czfs_inode_info *ii;
	bool fsynced;
	struct czfs_wb_item *ws;
};

/*
 * Encode one cluster of the batch ahead of its turn, on any thread: only
 * a whole one (no lookup, no load) whose pages come without waiting (the
 * batch holds its encoded pages until its turn: waiting could deadlock
 * batches on a small pool).  Whatever is not encoded here, czfs_wbenc_one
 * does in order, as with one thread.
 */
static void wb_pre_one(void *arg, unsigned i)
{
	struct wb_pre *p = arg;
	struct czfs_daemon *dm = p->dm;
	struct czfs_wb_item *w = &p->ws[i];
	struct czfs_mapping cm;
	unsigned long long now, max;

	if (!w->e->len || w->e->page == CZFS_NO_PAGE ||
	    atomic_load(&czfs_wentry_of(w->e)->partial) ||
	    !written_whole(p->ii, w, p->fsynced))
		return;
	now = atomic_fetch_add(&dm->wb_encoding, 1) + 1;
	max = atomic_load(&dm->st.wb_encoders_max);
	while (now > max &&
	       !atomic_compare_exchange_weak(&dm->st.wb_encoders_max, &max, now))
		;
	if (!wb_compress(dm, p->ii, w, &w->tp, CZFS_TEMP_NOWAIT, &cm)) {
		czfs_win_unmap(dm->wc, &cm);	/* mapped by this thread */
		if (w->ci.inline_len || !w->ci.nblocks)
			czfs_temp_free(dm, &w->tp);	/* nothing to store */
		w->ahead = true;
		atomic_fetch_add(&dm->st.wb_ahead, 1);
	}
	atomic_fetch_sub(&dm->wb_encoding, 1);
}

/*
 * Only the batch's first clusters, as many as half of dirty_max holds
 * encoded: its ordered part may wait for pages (a hot cluster, one not
 * encoded ahead) while it holds those, and the rest of the pool is where
 * they come from (the default, 8 MiB per encoder, holds about a batch).
 */
void czfs_wbenc_ahead(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		      bool fsynced, struct czfs_wb_item *ws, unsigned n)
{
	struct wb_pre p = { .dm = dm, .ii = ii, .fsynced = fsynced, .ws = ws };
	uint64_t budget = dm->opts.dirty_max / CZFS_BLOCK_SIZE / 2;
	unsigned per = MIN((1u << ii->cluster_shift) + 1,
			   (unsigned)CZFS_MAX_CLUSTER_BLOCKS);

	if (dm->wp)
		czfs_wbpool_for(dm->wp, (unsigned)MIN(n, budget / per),
				wb_pre_one, &p);
}

void czfs_wbenc_drop(struct czfs_daemon *dm, struct czfs_wb_item *ws,
		     unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (ws[i].ahead)
			czfs_temp_free(dm, &ws[i].tp);
		ws[i].ahead = false;
	}
}

