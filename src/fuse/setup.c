// SPDX-License-Identifier: MIT
/* The daemon's memory and locks (setup.h). */
#include "config.h"

#include <string.h>

#include "ccache.h"
#include "daemon.h"
#include "log.h"
#include "minode.h"
#include "packcache.h"
#include "pagepool.h"
#include "setup.h"
#include "staging.h"
#include "util.h"
#include "wentry.h"

static void locks_init(struct czfs_daemon *dm)
{
	pthread_rwlockattr_t rwa;

	pthread_mutex_init(&dm->open_lock, NULL);
	pthread_mutex_init(&dm->partial_lock, NULL);
	pthread_rwlockattr_init(&rwa);
	pthread_rwlockattr_setkind_np(&rwa, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&dm->take_lock, &rwa);
	pthread_rwlockattr_destroy(&rwa);
	pthread_mutex_init(&dm->admit_lock, NULL);
	pthread_cond_init(&dm->admit_cond, NULL);
	pthread_mutex_init(&dm->push_lock, NULL);
	pthread_mutex_init(&dm->grow_lock, NULL);
	pthread_cond_init(&dm->push_cond, NULL);
	pthread_mutex_init(&dm->stg_lock, NULL);
}

/* The pool and the caches in it. */
static int caches_create(struct czfs_daemon *dm)
{
	int err = czfs_pool_create(dm->opts.cache_size, dm->opts.reserved_pages,
				   &dm->pool);

	if (err) {
		czfs_err("cannot create the page pool: %s", strerror(-err));
		return err;
	}
	err = czfs_ccache_create(dm->pool, 0, sizeof(struct czfs_wentry), &dm->cc);
	if (err)
		return err;
	czfs_ccache_set_punch(dm->cc, dm->opts.reclaim_punch);
	err = czfs_ccache_set_low(dm->cc, dm->opts.cache_min / CZFS_BLOCK_SIZE);
	if (err)
		return err;
	czfs_ccache_set_shrinker(dm->cc, czfs_staging_reclaim, dm);
	/* Decoded packs are malloc'd, outside the pool: an idle tick frees
	 * them (main.c: daemon_idle). */
	err = czfs_pcache_create((unsigned)MAX(CZFS_PACKS_CACHED_MIN,
		dm->opts.cache_min / 2 / CZFS_PACK_MAX_ULEN), &dm->pc);
	if (err)
		return err;
	return czfs_wincache_create(dm->pool, &(struct czfs_wincache_opts){
		.mode = dm->opts.map, .bounce = !dm->opts.map_slots }, &dm->wc);
}

int czfs_daemon_init(struct czfs_daemon *dm)
{
	int err;

	locks_init(dm);
	err = czfs_itable_create(&dm->it);
	if (!err)
		err = caches_create(dm);
	if (err)
		return err;
	/* An eighth of the pool for staged requests, half for what FUSE
	 * reads hold (their clusters and compressed input); the rest stays
	 * free to load into, so every load can make progress.  Staged
	 * requests are memory in use, beyond the trims: no more than a
	 * quarter of cache_min of them (a walk's streams each keep a staged
	 * tail: 16 MiB of them after a tar of a tree), but always one
	 * stream's window (readahead: less would cut a stream's requests
	 * short and restart them), or eight requests. */
	dm->stage_budget = MIN(dm->opts.cache_size / 8,
			       MAX(dm->opts.cache_min / 4,
				   MAX(dm->opts.readahead, 8 * dm->opts.max_request))) /
			   CZFS_BLOCK_SIZE;
	dm->admit_total = dm->admit_free = dm->opts.cache_size / CZFS_BLOCK_SIZE / 2;
	dm->io.max_request = (uint32_t)dm->opts.max_request;
	dm->io.aligned = !dm->opts.unaligned;
	dm->io.st = &dm->st.io;
	return 0;
}

void czfs_daemon_free(struct czfs_daemon *dm)
{
	czfs_itable_destroy(dm);
	czfs_wincache_destroy(dm->wc);
	czfs_ccache_destroy(dm->cc);
	czfs_pcache_destroy(dm->pc);
	czfs_pool_destroy(dm->pool);
}
