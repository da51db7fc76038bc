// SPDX-License-Identifier: MIT
/*
 * The read path, as f2fs decompresses a cluster: the stored blocks (cpages)
 * are read into temporary pool pages, the cluster's own pool pages (rpages)
 * are allocated in the cluster cache, both are given a contiguous view by
 * the window cache (cbuf, rbuf), and the codec decodes one into the other.
 * A raw cluster is read straight into its rpages and checked in place.
 */
#include "config.h"

#include <stdlib.h>

#include "ccache.h"
#include "cluster.h"
#include "daemon.h"
#include "fs.h"
#include "log.h"
#include "pagepool.h"
#include "staging.h"
#include "util.h"

/* How long a decompression may wait for a page before it gives up. */
#define TEMP_WAIT_MS	10000

static unsigned order_for(unsigned n)
{
	unsigned k = 0;

	while ((1u << k) < n)
		k++;
	return k;
}

static void temp_add_run(struct czfs_temp *tp, uint32_t page, unsigned order,
			 unsigned want, bool single)
{
	tp->runs[tp->nruns].page = page;
	tp->runs[tp->nruns].order = (uint8_t)order;
	tp->runs[tp->nruns++].single = single;
	for (unsigned i = 0; i < (1u << order) && tp->n < want; i++)
		tp->pages[tp->n++] = page + i;
}

/*
 * Find one more piece: a run of up to the order still needed, else one page
 * from the main pool or the reserve.  0 or -ENOMEM (nothing free at all).
 */
static int temp_grab(struct czfs_daemon *dm, struct czfs_temp *tp, unsigned want)
{
	unsigned k = order_for(want - tp->n);
	uint32_t page;

	for (; k > 0; k--) {
		if (!czfs_pool_alloc(dm->pool, k, &page)) {
			temp_add_run(tp, page, k, want, false);
			return 0;
		}
	}
	if (czfs_pool_alloc_temp(dm->pool, &page))
		return -ENOMEM;
	temp_add_run(tp, page, 0, want, true);
	return 0;
}

int czfs_temp_alloc(struct czfs_daemon *dm, unsigned n, struct czfs_temp *tp,
		    struct czfs_latency *lat)
{
	uint64_t t0 = czfs_now_ns();
	int err = 0;

	tp->n = 0;
	tp->nruns = 0;
	if (n > CZFS_TEMP_MAX)
		return -EINVAL;
	while (tp->n < n && !err) {
		if (!temp_grab(dm, tp, n))
			continue;
		/* reclaim: evict a cached cluster, else wait for a free */
		if (czfs_ccache_shrink(dm->cc, 1)) {
			atomic_fetch_add(&dm->st.reclaims, 1);
			continue;
		}
		atomic_fetch_add(&dm->st.temp_waits, 1);
		err = czfs_pool_wait(dm->pool, TEMP_WAIT_MS) ? -ENOMEM : 0;
	}
	czfs_latency_add(lat, czfs_now_ns() - t0);
	if (err) {
		czfs_temp_free(dm, tp);
		czfs_err("no page for decompression: raise cache_size or reserved_pages");
	}
	return err;
}

void czfs_temp_free(struct czfs_daemon *dm, struct czfs_temp *tp)
{
	for (unsigned i = 0; i < tp->nruns; i++) {
		if (tp->runs[i].single)
			czfs_pool_free_temp(dm->pool, tp->runs[i].page);
		else
			czfs_pool_free(dm->pool, tp->runs[i].page, tp->runs[i].order);
	}
	tp->n = 0;
	tp->nruns = 0;
}

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
	    ci->kind == CZFS_CLUSTER_INLINE_COMPRESSED) {
		atomic_fetch_add(&dm->st.decomp_ns, czfs_now_ns() - t0);
		atomic_fetch_add(&dm->st.decomp_bytes, ci->ulen);
	}
out_rbuf:
	czfs_win_unmap(dm->wc, &rm);
	return err;
}

int czfs_decode_cluster(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
			const struct czfs_cluster_info *ci, const uint32_t *cpages,
			struct czfs_centry *e)
{
	uint64_t cbytes = czfs_inode_cluster_bytes(ii);
	uint32_t rpages[CZFS_MAX_CLUSTER_BLOCKS];
	unsigned rn = 1u << ii->cluster_shift;
	struct czfs_thread *t;
	int err;

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
	t = czfs_thread_get();
	if (!t)
		return -ENOMEM;
	if (e->page == CZFS_NO_PAGE) {
		err = czfs_ccache_alloc_run(dm->cc, e, ii->cluster_shift);
		if (err) {
			czfs_err("page pool exhausted: raise cache_size");
			return err;
		}
	}
	run_pages(e->page, rn, rpages);
	if (cpages && cpages[0] == e->page)
		cpages = rpages;	/* a raw cluster read in place */
	err = decode_mapped(dm, t, ci, cpages, rpages, rn, e->len);
	if (err)
		czfs_err("inode %llu cluster %llu: %s", (unsigned long long)ii->ino,
			 (unsigned long long)e->idx, strerror(-err));
	return err;
}

struct collect {
	struct czfs_daemon *dm;
	const struct czfs_inode_info *ii;
	struct czfs_cluster_batch *b;
};

static int collect_item(void *arg, const struct czfs_key *key, const void *val,
			unsigned size)
{
	struct collect *c = arg;
	unsigned i = (unsigned)(key->offset - c->b->first);
	struct czfs_cluster_info *ci = &c->b->ci[i];
	int err;

	err = czfs_cluster_item_decode(val, size, czfs_inode_cluster_bytes(c->ii),
				       c->dm->fs->cp.max_blocks, ci);
	if (err) {
		czfs_err("inode %llu: bad cluster item %llu",
			 (unsigned long long)c->ii->ino,
			 (unsigned long long)key->offset);
		return err;
	}
	if (ci->inline_len) {
		memcpy(c->b->inl[i], ci->inline_data, ci->inline_len);
		ci->inline_data = c->b->inl[i];
	}
	return 0;
}

int czfs_lookup_clusters(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
			 struct czfs_cluster_batch *b)
{
	struct collect c = { dm, ii, b };
	struct czfs_key lo = { ii->ino, CZFS_ITEM_CLUSTER, b->first };
	struct czfs_key hi = { ii->ino, CZFS_ITEM_CLUSTER, b->first + b->n - 1 };
	int err;

	memset(b->ci, 0, sizeof(b->ci[0]) * b->n);	/* CZFS_CLUSTER_HOLE */
	b->version = atomic_load(&dm->items_version);
	pthread_rwlock_rdlock(&dm->fs->lock);
	err = czfs_btree_iterate(&dm->fs->tree, &lo, &hi, collect_item, &c);
	pthread_rwlock_unlock(&dm->fs->lock);
	return err < 0 ? err : 0;
}

/* One cluster of a reader's batch: its entry, its stored blocks' pages. */
struct load {
	struct czfs_centry *e;
	const struct czfs_cluster_info *ci;
	const uint32_t *cpages;		/* where the stored blocks are */
	struct czfs_stage_ref ref;	/* ... from the stream's staging */
	struct czfs_temp tp;		/* ... read alone: compressed input */
	uint32_t pages[CZFS_MAX_CLUSTER_BLOCKS];	/* raw in place / staged */
	void *addrs[CZFS_MAX_CLUSTER_BLOCKS];
	int err;
};

static bool is_extent(const struct czfs_cluster_info *ci)
{
	return ci->kind == CZFS_CLUSTER_RAW || ci->kind == CZFS_CLUSTER_COMPRESSED;
}

uint64_t czfs_batch_run_end(const struct czfs_cluster_batch *b, unsigned i)
{
	uint64_t end = 0;

	for (; i < b->n; i++) {
		const struct czfs_cluster_info *ci = &b->ci[i];
		uint64_t a = ci->blkaddr * CZFS_BLOCK_SIZE;

		if (!is_extent(ci))
			continue;
		if (end && a != end)
			break;
		end = a + (uint64_t)ci->nblocks * CZFS_BLOCK_SIZE;
	}
	return end;
}

/*
 * Where l's stored blocks come from: the sequential stream s's staging
 * (b: the batch, for the run's end), else the cluster's own pages (raw,
 * read in place) or temp pages, to be read with the rest of the batch.
 * s may be NULL.
 */
static int load_prepare(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
			struct czfs_stream *s, const struct czfs_cluster_batch *b,
			struct load *l)
{
	int err;

	if (s && czfs_stream_sequential(s) &&
	    !czfs_staging_get(dm, czfs_stream_staging(s), l->ci->blkaddr,
			      l->ci->nblocks,
			      czfs_batch_run_end(b, (unsigned)(l->e->idx - b->first)),
			      true, l->pages, &l->ref)) {
		l->cpages = l->pages;
		return 0;
	}
	atomic_fetch_add(&dm->st.stage_private, 1);
	if (l->ci->kind == CZFS_CLUSTER_RAW) {
		err = czfs_ccache_alloc_run(dm->cc, l->e, ii->cluster_shift);
		if (err)
			return err;
		run_pages(l->e->page, l->ci->nblocks, l->pages);
		l->cpages = l->pages;
	} else {
		err = czfs_temp_alloc(dm, l->ci->nblocks, &l->tp, &dm->st.temp_alloc);
		if (err)
			return err;
		l->cpages = l->tp.pages;
	}
	for (unsigned k = 0; k < l->ci->nblocks; k++)
		l->addrs[k] = czfs_pool_addr(dm->pool, l->cpages[k]);
	return 0;
}

static int cmp_seg(const void *a, const void *b)
{
	const struct czfs_io_seg *x = a, *y = b;

	return x->blkaddr < y->blkaddr ? -1 : x->blkaddr > y->blkaddr;
}

/* Read the stored blocks of every extent cluster of the batch at once. */
static int load_read(struct czfs_daemon *dm, struct load *ls, unsigned n)
{
	struct czfs_io_seg segs[CZFS_BATCH_MAX];
	unsigned k = 0;
	int err;

	for (unsigned i = 0; i < n; i++)
		if (is_extent(ls[i].ci) && !ls[i].err && !ls[i].ref.n)
			segs[k++] = (struct czfs_io_seg){ ls[i].ci->blkaddr,
				ls[i].ci->nblocks, ls[i].addrs };
	qsort(segs, k, sizeof(segs[0]), cmp_seg);
	for (unsigned i = 1; i < k; i++)
		if (segs[i].blkaddr < segs[i - 1].blkaddr + segs[i - 1].nblocks)
			return -EFSCORRUPTED;	/* two clusters share blocks */
	err = k ? czfs_io_read(dm->fs->bdev, segs, k, &dm->io) : 0;
	if (err)
		czfs_err("read error at block %llu: %s",
			 (unsigned long long)segs[0].blkaddr, strerror(-err));
	return err ? -EIO : 0;
}

/* Load the LOADING entries ls[0..n) (ascending idx) and mark them loaded. */
static void load_batch(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		       struct czfs_stream *s, struct load *ls, unsigned n)
{
	struct czfs_cluster_batch *b = malloc(sizeof(*b));
	int err = b ? 0 : -ENOMEM;

	if (b) {
		b->first = ls[0].e->idx;
		b->n = (unsigned)(ls[n - 1].e->idx - b->first + 1);
		err = czfs_lookup_clusters(dm, ii, b);
	}
	for (unsigned i = 0; i < n; i++) {
		ls[i].err = err;
		ls[i].tp.n = ls[i].tp.nruns = 0;
		ls[i].ref.n = 0;
		ls[i].cpages = NULL;
		if (!err) {
			ls[i].ci = &b->ci[ls[i].e->idx - b->first];
			if (is_extent(ls[i].ci))
				ls[i].err = load_prepare(dm, ii, s, b, &ls[i]);
		}
	}
	if (!err)
		err = load_read(dm, ls, n);
	for (unsigned i = 0; i < n; i++) {
		if (!ls[i].err)
			ls[i].err = err ?: czfs_decode_cluster(dm, ii, ls[i].ci,
						ls[i].cpages, ls[i].e);
		if (ls[i].ref.n)
			czfs_staging_put(dm, czfs_stream_staging(s), &ls[i].ref);
		czfs_temp_free(dm, &ls[i].tp);
		atomic_fetch_add(&dm->st.loads_reader, 1);
		if (ls[i].err)
			atomic_fetch_add(&dm->st.load_errors, 1);
		czfs_ccache_loaded(dm->cc, ls[i].e, ls[i].err);
	}
	free(b);
}

int czfs_load_apart(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		    const struct czfs_cluster_info *ci, struct czfs_centry *e)
{
	struct load *l = calloc(1, sizeof(*l));
	int err;

	if (!l)
		return -ENOMEM;
	l->e = e;
	l->ci = ci;
	err = load_prepare(dm, ii, NULL, NULL, l);
	if (!err)
		err = load_read(dm, l, 1);
	if (!err)
		err = czfs_decode_cluster(dm, ii, ci, l->cpages, e);
	czfs_temp_free(dm, &l->tp);
	free(l);
	return err;
}

static void put_all(struct czfs_daemon *dm, struct czfs_centry **ents, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (ents[i])
			czfs_ccache_put(dm->cc, ents[i]);
}

int czfs_read_clusters(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		       struct czfs_stream *s, uint64_t first, unsigned n,
		       struct czfs_centry **ents)
{
	struct load *ls = malloc(n * sizeof(*ls));
	unsigned k = 0;
	int err = ls ? 0 : -ENOMEM;

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
		load_batch(dm, ii, s, ls, k);
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
			load_batch(dm, ii, s, ls, 1);
			err = ls[0].err;
		}
	}
	if (err)
		put_all(dm, ents, n);
	free(ls);
	return err < 0 ? err : 0;
}
