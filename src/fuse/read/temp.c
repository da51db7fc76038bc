// SPDX-License-Identifier: MIT
/* Temporary pages: runs from the pool, else single pages, else reclaim. */
#include "config.h"

#include "ccache.h"
#include "daemon.h"
#include "latency.h"
#include "log.h"
#include "pagepool.h"
#include "temp.h"
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
		    struct czfs_latency *lat, unsigned flags)
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
		/* reclaim: evict a cached cluster or a staged request */
		if (czfs_ccache_shrink(dm->cc, 1)) {
			atomic_fetch_add(&dm->st.reclaims, 1);
			continue;
		}
		/* else wait for a free, holding nothing */
		czfs_temp_free(dm, tp);
		if (flags & CZFS_TEMP_NOWAIT)
			return -ENOMEM;
		atomic_fetch_add(&dm->st.temp_waits, 1);
		err = czfs_pool_wait(dm->pool, TEMP_WAIT_MS) ? -ENOMEM : 0;
	}
	czfs_latency_add(lat, czfs_now_ns() - t0);
	if (err)
		czfs_err("no page for decompression: raise cache_size or reserved_pages");
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
