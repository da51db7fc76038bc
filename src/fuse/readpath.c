// SPDX-License-Identifier: MIT
/*
 * The read path, as f2fs decompresses a cluster: the stored blocks (cpages)
 * are read into temporary pool pages, the cluster's own pool pages (rpages)
 * are allocated in the cluster cache, both are given a contiguous view by
 * the window cache (cbuf, rbuf), and the codec decodes one into the other.
 * A raw cluster is read straight into its rpages and checked in place.
 */
#include "config.h"

#include "ccache.h"
#include "cluster.h"
#include "daemon.h"
#include "fs.h"
#include "log.h"
#include "pagepool.h"
#include "util.h"

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

int czfs_temp_alloc(struct czfs_daemon *dm, unsigned n, struct czfs_temp *tp)
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
		err = czfs_pool_wait(dm->pool, 2000) ? -ENOMEM : 0;
	}
	czfs_latency_add(&dm->st.temp_alloc, czfs_now_ns() - t0);
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

	e->len = (uint32_t)MIN(cbytes, ii->size - e->idx * cbytes);
	if (ci->kind == CZFS_CLUSTER_HOLE)
		return 0;
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

/* Read one cluster's stored blocks into pages (one batched request). */
static int read_stored(struct czfs_daemon *dm, const struct czfs_cluster_info *ci,
		       const uint32_t *pages)
{
	void *addrs[CZFS_MAX_CLUSTER_BLOCKS];
	struct czfs_io_seg seg = { ci->blkaddr, ci->nblocks, addrs };
	int err;

	for (unsigned i = 0; i < ci->nblocks; i++)
		addrs[i] = czfs_pool_addr(dm->pool, pages[i]);
	err = czfs_io_read(dm->fs->bdev, &seg, 1, &dm->io);
	if (err)
		czfs_err("read error at block %llu: %s",
			 (unsigned long long)ci->blkaddr, strerror(-err));
	return err ? -EIO : 0;
}

/* Load one cluster into e in this thread: the path of a reader that got
 * ahead of the prefetcher, or of random reads. */
static int load_cluster(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
			struct czfs_centry *e)
{
	uint8_t inl[CZFS_INLINE_MAX];
	uint32_t rpages[CZFS_MAX_CLUSTER_BLOCKS];
	struct czfs_cluster_info ci;
	struct czfs_temp tp;
	int err;

	pthread_rwlock_rdlock(&dm->fs->lock);
	err = czfs_cluster_lookup(dm->fs, ii, e->idx, &ci, inl);
	pthread_rwlock_unlock(&dm->fs->lock);
	if (err)
		return err;
	if (ci.kind == CZFS_CLUSTER_RAW) {
		/* straight into the cluster's own pages */
		err = czfs_ccache_alloc_run(dm->cc, e, ii->cluster_shift);
		if (err)
			return err;
		run_pages(e->page, ci.nblocks, rpages);
		err = read_stored(dm, &ci, rpages);
		return err ?: czfs_decode_cluster(dm, ii, &ci, rpages, e);
	}
	if (ci.kind != CZFS_CLUSTER_COMPRESSED)
		return czfs_decode_cluster(dm, ii, &ci, NULL, e);
	err = czfs_temp_alloc(dm, ci.nblocks, &tp);
	if (err)
		return err;
	err = read_stored(dm, &ci, tp.pages);
	if (!err)
		err = czfs_decode_cluster(dm, ii, &ci, tp.pages, e);
	czfs_temp_free(dm, &tp);
	return err;
}

int czfs_read_cluster(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		      uint64_t idx, struct czfs_centry **out)
{
	struct czfs_centry *e;
	int ret;

	ret = czfs_ccache_get(dm->cc, ii->ino, idx, true, &e);
	if (ret < 0)
		return ret;
	if (ret == 1) {
		ret = load_cluster(dm, ii, e);
		atomic_fetch_add(&dm->st.loads_reader, 1);
		if (ret)
			atomic_fetch_add(&dm->st.load_errors, 1);
		czfs_ccache_loaded(dm->cc, e, ret);
		if (ret) {
			czfs_ccache_put(dm->cc, e);
			return ret;
		}
	}
	*out = e;
	return 0;
}
