// SPDX-License-Identifier: MIT
/*
 * The read path: a cluster is looked up in the tree, its stored blocks
 * read, and decoded straight into a run of page-pool pages held by the
 * cluster cache.  Holes get an entry without pages.
 */
#include "config.h"

#include "ccache.h"
#include "cluster.h"
#include "daemon.h"
#include "fs.h"
#include "latency.h"
#include "log.h"
#include "pagepool.h"
#include "util.h"

static int load_cluster(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
			struct czfs_centry *e)
{
	uint64_t cbytes = czfs_inode_cluster_bytes(ii);
	uint8_t inl[CZFS_INLINE_MAX];
	struct czfs_cluster_info ci;
	struct czfs_thread *t;
	uint64_t t0;
	int err;

	t = czfs_thread_get();
	if (!t)
		return -ENOMEM;
	pthread_rwlock_rdlock(&dm->fs->lock);
	err = czfs_cluster_lookup(dm->fs, ii, e->idx, &ci, inl);
	pthread_rwlock_unlock(&dm->fs->lock);
	if (err)
		return err;
	e->len = (uint32_t)MIN(cbytes, ii->size - e->idx * cbytes);
	if (ci.kind == CZFS_CLUSTER_HOLE)
		return 0;
	err = czfs_ccache_alloc_run(dm->cc, e, ii->cluster_shift);
	if (err) {
		czfs_err("page pool exhausted: raise cache_size");
		return err;
	}
	t0 = czfs_now_ns();
	err = czfs_cluster_read(dm->fs, t->codec, &ci, t->scratch,
				czfs_pool_addr(dm->pool, e->page), e->len);
	if (ci.kind == CZFS_CLUSTER_COMPRESSED ||
	    ci.kind == CZFS_CLUSTER_INLINE_COMPRESSED) {
		atomic_fetch_add(&dm->st.decomp_ns, czfs_now_ns() - t0);
		atomic_fetch_add(&dm->st.decomp_bytes, ci.ulen);
	}
	if (err)
		czfs_err("inode %llu cluster %llu: %s", (unsigned long long)ii->ino,
			 (unsigned long long)e->idx, strerror(-err));
	return err;
}

int czfs_read_cluster(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		      uint64_t idx, bool prefetch, struct czfs_centry **out)
{
	struct czfs_centry *e;
	int ret;

	ret = czfs_ccache_get(dm->cc, ii->ino, idx, true, &e);
	if (ret < 0)
		return ret;
	if (ret == 1) {
		ret = load_cluster(dm, ii, e);
		atomic_fetch_add(prefetch ? &dm->st.loads_prefetch :
				 &dm->st.loads_reader, 1);
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
