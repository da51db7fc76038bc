// SPDX-License-Identifier: MIT
/*
 * The loader (load.h): items from the library, stored blocks from the
 * staging or read together into temp pages, decoded through the window
 * cache into the cluster cache.  A raw or block-mapped cluster is read
 * straight into its rpages and checked in place.
 */
#include "config.h"

#include <stdlib.h>

#include "ccache.h"
#include "packcache.h"
#include "pack.h"
#include "cluster.h"
#include "daemon.h"
#include "fs.h"
#include "inode.h"
#include "iobatch.h"
#include "load.h"
#include "log.h"
#include "pagepool.h"
#include "staging.h"
#include "thread.h"
#include "util.h"
#include "wentry.h"
#include "window.h"

static void run_pages(uint32_t first, unsigned n, uint32_t *pages)
{
	for (unsigned i = 0; i < n; i++)
		pages[i] = first + i;
}

/* Map cbuf (when there are cpages) and rbuf, decode, unmap. */
static int decode_mapped(struct czfs_daemon *dm, struct czfs_thread *t,
			 const struct czfs_cluster_info *ci,
			 const uint32_t *cpages, const uint32_t *rpages,
			 unsigned rn, unsigned len)
{
	struct czfs_mapping cm = { 0 }, rm;
	uint64_t t0 = czfs_now_ns();
	const void *cbuf = NULL;
	int err;

	err = czfs_win_map(dm->wc, rpages, rn, true, &rm);
	if (err)
		return err;
	if (cpages && cpages != rpages) {
		err = czfs_win_map(dm->wc, cpages, ci->nblocks, false, &cm);
		if (err)
			goto out_rbuf;
		cbuf = cm.addr;
	} else if (cpages) {
		cbuf = rm.addr;		/* a raw cluster checked in place */
	}
	err = czfs_cluster_decode(t->codec, ci, cbuf, rm.addr, len);
	if (cm.addr)
		czfs_win_unmap(dm->wc, &cm);
	if (ci->kind == CZFS_CLUSTER_COMPRESSED ||
	    ci->kind == CZFS_CLUSTER_INLINE_COMPRESSED ||
	    ci->kind == CZFS_CLUSTER_SLICE ||
	    (ci->kind == CZFS_CLUSTER_PACKED && ci->alg)) {
		atomic_fetch_add(&dm->st.decomp_ns, czfs_now_ns() - t0);
		atomic_fetch_add(&dm->st.decomp_bytes, ci->ulen);
	}
out_rbuf:
	czfs_win_unmap(dm->wc, &rm);
	return err;
}

/*
 * A PACKED cluster that is only part of its pack goes through the pack
 * cache; one that is its whole pack (a cluster of a file with copies)
 * decodes straight into its pages, as a cluster of its own would.
 */
static bool shares_pack(const struct czfs_cluster_info *ci)
{
	return ci->kind == CZFS_CLUSTER_PACKED && ci->pack_ulen > ci->ulen;
}

/* The cluster's range of its decoded pack pe into its pages. */
static int copy_from_pack(struct czfs_daemon *dm, const struct czfs_cluster_info *ci,
			  struct czfs_pentry *pe, const uint32_t *rpages,
			  unsigned rn)
{
	struct czfs_mapping rm;
	int err;

	if (ci->pack_off > pe->ulen || ci->ulen > pe->ulen - ci->pack_off)
		return -EFSCORRUPTED;	/* the item decoder checked it */
	err = czfs_win_map(dm->wc, rpages, rn, true, &rm);
	if (err)
		return err;
	memcpy(rm.addr, (const char *)pe->data + ci->pack_off, ci->ulen);
	czfs_win_unmap(dm->wc, &rm);
	czfs_pcache_took(dm->pc, pe);
	return 0;
}

/* How many clusters use ci's pack (its PACK item's count), 0 if unknown:
 * the pack cache frees a pack once that many were taken from it. */
static uint32_t pack_members(struct czfs_daemon *dm,
			     const struct czfs_cluster_info *ci)
{
	struct czfs_pack_info p;
	int err;

	pthread_rwlock_rdlock(&dm->fs->lock);
	err = czfs_pack_get(dm->fs, czfs_cluster_pack_key(ci), &p);
	pthread_rwlock_unlock(&dm->fs->lock);
	return err ? 0 : p.refs;
}

/*
 * A PACKED cluster whose pack this thread claimed: decode the whole pack
 * once (its stored blocks in l->cpages) into the pack cache, for the
 * neighbours that share it and the threads waiting for it.  On success
 * l->pe is a decoded entry; on error the caller aborts the claim.
 */
static int fill_pack(struct czfs_daemon *dm, struct czfs_thread *t,
		     struct czfs_load *l)
{
	struct czfs_cluster_info pack;
	struct czfs_mapping cm;
	uint64_t t0 = czfs_now_ns();
	void *buf;
	int err;

	czfs_cluster_pack_info(l->ci, &pack);
	buf = czfs_pcache_buffer(dm->pc);
	if (!buf)
		return -ENOMEM;
	err = czfs_win_map(dm->wc, l->cpages, l->ci->nblocks, false, &cm);
	if (!err) {
		err = czfs_cluster_decode(t->codec, &pack, cm.addr, buf, pack.ulen);
		czfs_win_unmap(dm->wc, &cm);
	}
	if (err) {
		czfs_pcache_give(dm->pc, buf);
		return err;
	}
	atomic_fetch_add(&dm->st.pack_decodes, 1);
	if (pack.alg) {
		atomic_fetch_add(&dm->st.decomp_ns, czfs_now_ns() - t0);
		atomic_fetch_add(&dm->st.decomp_bytes, pack.ulen);
	}
	czfs_pcache_fill(dm->pc, l->pe, buf, pack_members(dm, l->ci));
	l->pe_claimed = false;
	return 0;
}

/*
 * A prefetch never waits for pages: it holds a claimed entry, which a
 * reader holding pages of its own may be waiting for.  The NOWAIT flag of
 * each allocator (ccache.h, temp.h, staging.h) for a load by `by`.
 */
static bool no_wait(enum czfs_load_by by)
{
	return by == CZFS_LOAD_BY_PREFETCH;
}

static unsigned cc_flags(enum czfs_load_by by)
{
	return no_wait(by) ? CZFS_CC_NOWAIT : 0;
}

/*
 * Decode cluster l->ci into its LOADING entry l->e (pages allocated here):
 * from l->pe, its decoded pack (decoded now if claimed), else from
 * l->cpages, the n = ci->nblocks pool pages holding the stored blocks
 * (extent kinds; NULL for holes and inline).  Maps both buffers through
 * the window cache.  Returns 0 or -errno.
 */
static int decode(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		  enum czfs_load_by by, struct czfs_load *l)
{
	const struct czfs_cluster_info *ci = l->ci;
	uint64_t cbytes = czfs_inode_cluster_bytes(ii);
	uint32_t rpages[CZFS_MAX_CLUSTER_BLOCKS];
	unsigned rn = 1u << ii->cluster_shift;
	const uint32_t *cpages = l->cpages;
	struct czfs_centry *e = l->e;
	struct czfs_thread *t;
	int err = 0;

	/*
	 * A stored cluster holds ci->ulen bytes, whatever size the caller's
	 * (possibly older) copy of the inode gives: a shorter length would
	 * let a later write zero what lies between.  A hole has no pages.
	 */
	if (ci->kind == CZFS_CLUSTER_HOLE) {
		e->len = (uint32_t)MIN(cbytes, ii->size - e->idx * cbytes);
		return 0;
	}
	e->len = ci->ulen;
	t = czfs_fuse_thread();
	if (!t)
		return -ENOMEM;
	if (e->page == CZFS_NO_PAGE) {
		err = czfs_ccache_alloc_run(dm->cc, e, ii->cluster_shift,
					    cc_flags(by));
		if (err) {
			if (by == CZFS_LOAD_BY_READER)
				czfs_err("page pool exhausted: raise cache_size");
			return err;
		}
	}
	run_pages(e->page, rn, rpages);
	if (cpages && cpages[0] == e->page)
		cpages = rpages;	/* a raw cluster read in place */
	if (l->pe_claimed)
		err = fill_pack(dm, t, l);
	if (!err && l->pe) {
		err = copy_from_pack(dm, ci, l->pe, rpages, rn);
	} else if (!err) {	/* a pack without a slot is decoded for it */
		if (shares_pack(ci))
			atomic_fetch_add(&dm->st.pack_decodes, 1);
		err = decode_mapped(dm, t, ci, cpages, rpages, rn, e->len);
	}
	if (err && !(err == -ENOMEM && no_wait(by)))
		czfs_err("inode %llu cluster %llu: %s", (unsigned long long)ii->ino,
			 (unsigned long long)e->idx, strerror(-err));
	return err;
}

int czfs_load_items(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		    uint64_t first, unsigned n, struct czfs_cluster_info *ci,
		    void *inl)
{
	int err;

	pthread_rwlock_rdlock(&dm->fs->lock);
	err = czfs_cluster_lookup(dm->fs, ii, first, n, ci, inl);
	pthread_rwlock_unlock(&dm->fs->lock);
	return err;
}

int czfs_load_lookup(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		     struct czfs_cluster_batch *b)
{
	b->version = atomic_load(&dm->items_version);
	return czfs_load_items(dm, ii, b->first, b->n, b->ci, b->inl);
}

int czfs_load_refresh(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		      struct czfs_cluster_batch *b, unsigned i)
{
	if (atomic_load(&dm->items_version) == b->version)
		return 0;
	return czfs_load_items(dm, ii, b->first + i, 1, &b->ci[i], b->inl[i]);
}

static bool is_extent(const struct czfs_cluster_info *ci)
{
	return czfs_cluster_has_extent(ci->kind);	/* a pack's too */
}

/* Stored blocks to read: an extent's, or a BLOCKMAP's entries'. */
static bool has_blocks(const struct czfs_cluster_info *ci)
{
	return is_extent(ci) || ci->kind == CZFS_CLUSTER_BLOCKMAP;
}

/* End (image bytes) of the run of adjacent stored blocks from b->ci[i]. */
static uint64_t run_end(const struct czfs_cluster_batch *b, unsigned i)
{
	uint64_t end = 0;

	for (; i < b->n; i++) {
		const struct czfs_cluster_info *ci = &b->ci[i];
		uint64_t a = ci->blkaddr * CZFS_BLOCK_SIZE;

		if (!is_extent(ci))
			continue;
		/* slices of a run share their boundary block */
		if (end && a != end && a + CZFS_BLOCK_SIZE != end)
			break;
		end = MAX(end, a + (uint64_t)ci->nblocks * CZFS_BLOCK_SIZE);
	}
	return end;
}

/*
 * Where l's stored blocks come from: the staging stg (b: the batch, for
 * the run's end), else the cluster's own pages (raw, read in place) or
 * temp pages, to be read with the rest of the batch.  stg may be NULL.
 */
static int load_prepare(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
			struct czfs_staging *stg, enum czfs_load_by by,
			const struct czfs_cluster_batch *b, struct czfs_load *l)
{
	unsigned n;
	int err;

	if (stg && is_extent(l->ci)) {	/* a BLOCKMAP is read apart */
		err = czfs_staging_get(dm, stg, l->ci->blkaddr, l->ci->nblocks,
				       run_end(b, (unsigned)(l->e->idx - b->first)),
				       CZFS_STAGE_RESTART |
				       (no_wait(by) ? CZFS_STAGE_NOWAIT : 0),
				       l->pages, &l->ref);
		if (!err) {
			l->cpages = l->pages;
			return 0;
		}
		if (err != -ENOENT && by == CZFS_LOAD_BY_PREFETCH)
			return err;
	}
	atomic_fetch_add(&dm->st.stage_private, 1);
	if (l->ci->kind == CZFS_CLUSTER_RAW ||
	    l->ci->kind == CZFS_CLUSTER_BLOCKMAP) {	/* read in place */
		n = l->ci->kind == CZFS_CLUSTER_RAW ? l->ci->nblocks :
		    czfs_blockmap_entries(l->ci);
		err = czfs_ccache_alloc_run(dm->cc, l->e, ii->cluster_shift,
					    cc_flags(by));
		if (err)
			return err;
		run_pages(l->e->page, n, l->pages);
		l->cpages = l->pages;
	} else {
		n = l->ci->nblocks;
		err = czfs_temp_alloc(dm, n, &l->tp, &dm->st.temp_alloc,
				      no_wait(by) ? CZFS_TEMP_NOWAIT : 0);
		if (err)
			return err;
		l->cpages = l->tp.pages;
	}
	for (unsigned k = 0; k < n; k++)
		l->addrs[k] = czfs_pool_addr(dm->pool, l->cpages[k]);
	return 0;
}

static int cmp_seg(const void *a, const void *b)
{
	const struct czfs_io_seg *x = a, *y = b;

	if (x->blkaddr != y->blkaddr)
		return x->blkaddr < y->blkaddr ? -1 : 1;
	return x->nblocks < y->nblocks ? -1 : x->nblocks > y->nblocks;
}

/* l's stored blocks are to be read: not from the staging, nor a pack
 * that is cached or that another thread decodes. */
static bool to_read(const struct czfs_load *l)
{
	return !l->err && has_blocks(l->ci) && !l->ref.n && !l->pe_wait &&
	       (!l->pe || l->pe_claimed);
}

/* Segments of l's stored blocks: one extent, or one per BLOCKMAP entry
 * with a block (into the page of its index). */
static unsigned load_segs(const struct czfs_load *l, struct czfs_io_seg *segs)
{
	unsigned k = 0;

	if (l->ci->kind != CZFS_CLUSTER_BLOCKMAP) {
		segs[0] = (struct czfs_io_seg){ l->ci->blkaddr, l->ci->nblocks,
						l->addrs };
		return 1;
	}
	for (unsigned i = 0; i < czfs_blockmap_entries(l->ci); i++) {
		uint64_t a;
		uint32_t crc;

		czfs_blockmap_get(l->ci, i, &a, &crc);
		if (a)
			segs[k++] = (struct czfs_io_seg){ a, 1, &l->addrs[i] };
	}
	return k;
}

/* Read the stored blocks of every cluster of the batch at once. */
static int load_read(struct czfs_daemon *dm, struct czfs_load *ls, unsigned n)
{
	struct czfs_io_seg few[CZFS_BATCH_MAX], *segs = few;
	unsigned k = 0, max = 0;
	int err = 0;

	for (unsigned i = 0; i < n; i++)
		if (to_read(&ls[i]))
			max += ls[i].ci->kind == CZFS_CLUSTER_BLOCKMAP ?
			       czfs_blockmap_entries(ls[i].ci) : 1;
	if (!max)
		return 0;
	if (max > CZFS_BATCH_MAX)	/* block-mapped clusters */
		segs = malloc(max * sizeof(*segs));
	if (!segs)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++)
		if (to_read(&ls[i]))
			k += load_segs(&ls[i], segs + k);
	qsort(segs, k, sizeof(segs[0]), cmp_seg);
	/* two clusters share blocks; slices of a run share one at most */
	for (unsigned i = 1; i < k && !err; i++)
		if (segs[i].blkaddr + 1 < segs[i - 1].blkaddr + segs[i - 1].nblocks)
			err = -EFSCORRUPTED;
	if (!err && k)
		err = czfs_io_read(dm->fs->bdev, segs, k, &dm->io);
	if (err && err != -EFSCORRUPTED) {
		czfs_err("read error at block %llu: %s",
			 (unsigned long long)segs[0].blkaddr, strerror(-err));
		err = -EIO;
	}
	if (segs != few)
		free(segs);
	return err;
}

/*
 * Where l's bytes come from: its pack, cached or claimed now (pc_flags:
 * CZFS_PC_NOWAIT, or 0 to wait for another thread's decode); with
 * NOWAIT, a pack another thread decodes sets l->pe_wait and nothing
 * else.  Else its stored blocks, from the staging or to read.
 */
static int load_start(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		      struct czfs_staging *stg, enum czfs_load_by by,
		      const struct czfs_cluster_batch *b, struct czfs_load *l,
		      unsigned pc_flags)
{
	const struct czfs_cluster_info *ci = l->ci;
	int ret;

	if (shares_pack(ci)) {
		ret = czfs_pcache_claim(dm->pc, czfs_cluster_pack_key(ci), ci->checksum,
					ci->pack_ulen, pc_flags, &l->pe);
		l->pe_wait = ret == -EAGAIN;
		l->pe_claimed = ret == 1;
		if (ret == 0 || l->pe_wait)
			return 0;
	}
	return has_blocks(ci) ? load_prepare(dm, ii, stg, by, b, l) : 0;
}

/* Decode l (err: of its read), release what it held, mark it loaded. */
static void load_finish(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
			struct czfs_staging *stg, enum czfs_load_by by,
			struct czfs_load *l, int err)
{
	atomic_ullong *loads = by == CZFS_LOAD_BY_READER ? &dm->st.loads_reader :
			       &dm->st.loads_prefetch;

	if (!l->err)
		l->err = err ?: decode(dm, ii, by, l);
	if (l->pe_claimed)	/* not decoded: a waiter decodes it */
		czfs_pcache_abort(dm->pc, l->pe);
	else
		czfs_pcache_put(dm->pc, l->pe);
	if (l->ref.n)
		czfs_staging_put(dm, stg, &l->ref);
	czfs_temp_free(dm, &l->tp);
	atomic_fetch_add(loads, 1);
	if (l->err == -ENOMEM && no_wait(by))
		atomic_fetch_add(&dm->st.prefetch_nomem, 1);
	else if (l->err)
		atomic_fetch_add(&dm->st.load_errors, 1);
	czfs_ccache_loaded(dm->cc, l->e, l->err);
}

void czfs_load_batch(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		     struct czfs_staging *stg, const struct czfs_cluster_batch *b,
		     struct czfs_load *ls, unsigned n, enum czfs_load_by by)
{
	int err;

	for (unsigned i = 0; i < n; i++) {
		ls[i].tp.n = ls[i].tp.nruns = 0;
		ls[i].ref.n = 0;
		ls[i].cpages = NULL;
		ls[i].pe = NULL;
		ls[i].pe_claimed = ls[i].pe_wait = false;
		if (!ls[i].err) {
			ls[i].ci = &b->ci[ls[i].e->idx - b->first];
			ls[i].err = load_start(dm, ii, stg, by, b, &ls[i],
					       CZFS_PC_NOWAIT);
		}
	}
	err = load_read(dm, ls, n);
	for (unsigned i = 0; i < n; i++)
		if (!ls[i].pe_wait)
			load_finish(dm, ii, stg, by, &ls[i], err);
	/* no claim of ours is left: wait for the others' pack decodes */
	for (unsigned i = 0; i < n; i++) {
		if (!ls[i].pe_wait)
			continue;
		ls[i].err = load_start(dm, ii, stg, by, b, &ls[i], 0);
		load_finish(dm, ii, stg, by, &ls[i],
			    ls[i].err ? 0 : load_read(dm, &ls[i], 1));
	}
}

/* A thread's claims and their items (thread.h: kept with the thread). */
struct load_scratch {
	struct czfs_load ls[CZFS_BATCH_MAX];
	struct czfs_cluster_batch b;
};

static struct load_scratch *load_scratch(void)
{
	struct czfs_thread *t = czfs_fuse_thread();

	if (t && !t->load)
		t->load = malloc(sizeof(struct load_scratch));
	return t ? t->load : NULL;
}

/* Load the claimed entries ls[0..n) (ascending idx) of a FUSE thread:
 * their items looked up now, after the claims, into b. */
static void load_claimed(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
			 struct czfs_staging *stg, struct czfs_cluster_batch *b,
			 struct czfs_load *ls, unsigned n)
{
	int err;

	b->first = ls[0].e->idx;
	b->n = (unsigned)(ls[n - 1].e->idx - b->first + 1);
	err = czfs_load_lookup(dm, ii, b);
	for (unsigned i = 0; i < n; i++)
		ls[i].err = err;
	czfs_load_batch(dm, ii, stg, b, ls, n, CZFS_LOAD_BY_READER);
}

static void put_all(struct czfs_daemon *dm, struct czfs_centry **ents, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (ents[i])
			czfs_ccache_put(dm->cc, ents[i]);
}

int czfs_load_get(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		  struct czfs_staging *stg, uint64_t first, unsigned n,
		  struct czfs_centry **ents)
{
	struct load_scratch *sc = load_scratch();
	struct czfs_load *ls = sc ? sc->ls : NULL;
	unsigned k = 0;
	int err = !sc ? -ENOMEM : n > CZFS_BATCH_MAX ? -EINVAL : 0;

	for (unsigned i = 0; i < n; i++)
		ents[i] = NULL;
	/* 1: take what is there, claim what is absent, never wait */
	for (unsigned i = 0; i < n && !err; i++) {
		int ret = czfs_ccache_get(dm->cc, ii->ino, first + i,
					  CZFS_CC_CREATE | CZFS_CC_NOWAIT, &ents[i]);

		if (ret == 1)
			ls[k++].e = ents[i];
		else if (ret == -EAGAIN || ret < 0)
			ents[i] = NULL;
		if (ret < 0 && ret != -EAGAIN)
			err = ret;
	}
	/* 2: load ours in one batch */
	if (k)
		load_claimed(dm, ii, stg, &sc->b, ls, k);
	for (unsigned i = 0; i < k && !err; i++)
		err = ls[i].err;
	/* 3: wait for the ones other threads were loading */
	for (unsigned i = 0; i < n && !err; i++) {
		if (ents[i])
			continue;
		err = czfs_ccache_get(dm->cc, ii->ino, first + i, CZFS_CC_CREATE,
				      &ents[i]);
		if (err == 1) {		/* that load failed: try it ourselves */
			ls[0].e = ents[i];
			load_claimed(dm, ii, stg, &sc->b, ls, 1);
			err = ls[0].err;
		}
	}
	/* 4: entries written in whole blocks without a load are completed */
	for (unsigned i = 0; i < n && err >= 0; i++)
		err = czfs_load_complete(dm, ii, ents[i]);
	if (err)
		put_all(dm, ents, n);
	return err < 0 ? err : 0;
}

int czfs_load_blocks(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		     uint64_t idx, struct czfs_centry **out)
{
	struct load_scratch *sc = load_scratch();
	struct czfs_centry *e;
	int err;

	if (!sc)
		return -ENOMEM;
	err = czfs_ccache_get(dm->cc, ii->ino, idx, CZFS_CC_CREATE, &e);
	if (err < 0)
		return err;
	*out = e;
	if (err == 0)		/* cached, partial or whole: written as it is */
		return 0;
	/* ours: no writeback can change the item while we hold it LOADING */
	sc->b.first = idx;
	sc->b.n = 1;
	err = czfs_load_lookup(dm, ii, &sc->b);
	if (!err && sc->b.ci[0].kind == CZFS_CLUSTER_BLOCKMAP) {
		e->len = sc->b.ci[0].ulen;
		err = czfs_ccache_alloc_run(dm->cc, e, ii->cluster_shift, 0);
		if (!err) {
			atomic_store(&czfs_wentry_of(e)->partial, true);
			atomic_fetch_add(&dm->st.partial_writes, 1);
		}
		czfs_ccache_loaded(dm->cc, e, err);
	} else {
		sc->ls[0].e = e;
		sc->ls[0].err = err;
		czfs_load_batch(dm, ii, NULL, &sc->b, sc->ls, 1,
				CZFS_LOAD_BY_READER);
		err = sc->ls[0].err;
	}
	if (err)
		czfs_ccache_put(dm->cc, e);
	return err;
}

/* The blocks of e not in its wmask from data (its cluster decoded). */
static void fill_unwritten(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
			   struct czfs_centry *e, const uint8_t *data)
{
	uint64_t wmask = czfs_wentry_of(e)->wmask;
	uint32_t pages[CZFS_MAX_CLUSTER_BLOCKS];

	czfs_centry_pages(e, pages);
	for (unsigned i = 0; i < 1u << ii->cluster_shift; i++)
		if (!(wmask & (1ull << i)))
			czfs_memcpy_to_pages(dm->pool, pages,
					     (uint64_t)i * CZFS_BLOCK_SIZE,
					     data + (size_t)i * CZFS_BLOCK_SIZE,
					     CZFS_BLOCK_SIZE);
}

int czfs_load_complete(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		       struct czfs_centry *e)
{
	uint32_t cbytes = czfs_inode_cluster_bytes(ii);
	struct czfs_thread *t = czfs_fuse_thread();
	struct czfs_wentry *we = czfs_wentry_of(e);
	void *scratch = NULL, *data = NULL;
	struct czfs_cluster_info ci;
	uint8_t inl[CZFS_INLINE_MAX];
	int err;

	if (!atomic_load(&we->partial))
		return 0;
	if (!t || posix_memalign(&scratch, CZFS_BLOCK_SIZE, CZFS_MAX_CLUSTER_SIZE) ||
	    posix_memalign(&data, CZFS_BLOCK_SIZE, CZFS_MAX_CLUSTER_SIZE)) {
		err = -ENOMEM;
		goto out;
	}
	/* the blocks it lacks are the same in every item since its creation:
	 * writeback keeps them, and only writes into it would change them */
	err = czfs_load_items(dm, ii, e->idx, 1, &ci, inl);
	if (!err)
		err = czfs_cluster_read(dm->fs, t->codec, &ci, scratch, data, cbytes);
	if (err) {
		czfs_err("inode %llu cluster %llu: %s", (unsigned long long)ii->ino,
			 (unsigned long long)e->idx, strerror(-err));
		goto out;
	}
	pthread_mutex_lock(&dm->partial_lock);
	if (atomic_load(&we->partial)) {
		fill_unwritten(dm, ii, e, data);
		atomic_store(&we->partial, false);
		atomic_fetch_add(&dm->st.partial_completed, 1);
	}
	pthread_mutex_unlock(&dm->partial_lock);
out:
	free(scratch);
	free(data);
	return err;
}
