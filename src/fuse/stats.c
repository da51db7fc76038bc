// SPDX-License-Identifier: MIT
/*
 * Live counters of a mount, as "name value" lines: what czfs-stat prints
 * (it reads them from the user.czfs.stats xattr of the mount root).
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "bdev.h"
#include "btree.h"
#include "ccache.h"
#include "packcache.h"
#include "coldmap.h"
#include "daemon.h"
#include "killpriv.h"
#include "minode.h"
#include "fs.h"
#include "pagepool.h"
#include "remote.h"
#include "spacemap.h"
#include "stats.h"
#include "window.h"

struct out {
	char *buf;
	size_t size, len;
};

__attribute__((format(printf, 2, 3)))
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, o->len < o->size ? o->size - o->len : 0,
		      fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += (size_t)n;
}

static unsigned long long ld(atomic_ullong *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

static void fuse_stats(struct out *o, struct czfs_daemon *dm)
{
	struct czfs_daemon_stats *s = &dm->st;

	put(o, "fuse.read_requests %llu\n", ld(&s->read_reqs));
	put(o, "fuse.read_bytes %llu\n", ld(&s->read_bytes));
	put(o, "fuse.write_requests %llu\n", ld(&s->write_reqs));
	put(o, "fuse.write_bytes %llu\n", ld(&s->write_bytes));
	put(o, "checkpoint.written %llu\n", ld(&s->checkpoints));
	put(o, "checkpoint.skipped %llu\n", ld(&s->checkpoints_skipped));
	put(o, "checkpoint.one_flush %llu\n", ld(&s->checkpoints_one_flush));
	put(o, "space.grows %llu\n", ld(&s->grows));
	put(o, "writeback.clusters %llu\n", ld(&s->wb_clusters));
	put(o, "writeback.hot %llu\n", ld(&s->wb_hot));
	put(o, "writeback.hot_written %llu\n", ld(&s->wb_hot_fresh));
	put(o, "writeback.hot_kept %llu\n", ld(&s->wb_hot_kept));
	put(o, "writeback.runs %llu\n", ld(&s->wb_runs));
	put(o, "writeback.slices %llu\n", ld(&s->wb_slices));
	put(o, "writeback.encoded_ahead %llu\n", ld(&s->wb_ahead));
	put(o, "writeback.inode_visits %llu\n", ld(&s->wb_visits));
	put(o, "writeback.encoded_by_workers %llu\n", ld(&s->wb_by_workers));
	put(o, "writeback.encoders_max %llu\n", ld(&s->wb_encoders_max));
	put(o, "recompress.pending %llu\n",
	    dm->cold ? (unsigned long long)czfs_cold_count(dm->cold) : 0ull);
	put(o, "recompress.clusters %llu\n", ld(&s->recomp_clusters));
	put(o, "recompress.bytes_saved %llu\n", ld(&s->recomp_saved));
	put(o, "recompress.scans %llu\n", ld(&s->recomp_scans));
	put(o, "cluster.partial_writes %llu\n", ld(&s->partial_writes));
	put(o, "cluster.partial_completed %llu\n", ld(&s->partial_completed));
	put(o, "cluster.loads_reader %llu\n", ld(&s->loads_reader));
	put(o, "cluster.loads_prefetch %llu\n", ld(&s->loads_prefetch));
	put(o, "cluster.prefetch_nomem %llu\n", ld(&s->prefetch_nomem));
	put(o, "cluster.load_errors %llu\n", ld(&s->load_errors));
	put(o, "decompress.bytes %llu\n", ld(&s->decomp_bytes));
	put(o, "decompress.seconds %.6f\n", ld(&s->decomp_ns) / 1e9);
	put(o, "pack.decodes %llu\n", ld(&s->pack_decodes));
	put(o, "pack.written %llu\n", ld(&s->packs_written));
	put(o, "pack.files %llu\n", ld(&s->packed_files));
	put(o, "dir.entries_attrs %llu\n", ld(&s->list_attrs));
	put(o, "dir.entries_bare %llu\n", ld(&s->list_bare));
	put(o, "fuse.loop_handoffs %llu\n", ld(&s->loop_handoffs));
	put(o, "fuse.loop_threads %llu\n", ld(&s->loop_threads));
	put(o, "fuse.attr_notifies %llu\n", ld(&s->attr_notifies));
	put(o, "fuse.getxattr_requests %llu\n", ld(&s->getxattr_reqs));
	put(o, "fuse.killpriv_v2 %d\n", czfs_killpriv_on());
}

static void cache_stats(struct out *o, struct czfs_daemon *dm)
{
	struct czfs_ccache_stats cs;
	struct czfs_pool_stats ps;
	struct czfs_nodecache_stats ns;
	struct czfs_pcache_stats pcs;
	uint64_t full, compact;

	czfs_ccache_get_stats(dm->cc, &cs);
	czfs_pcache_get_stats(dm->pc, &pcs);
	put(o, "pcache.hits %llu\npcache.misses %llu\npcache.waits %llu\n"
	    "pcache.consumed %llu\npcache.bytes %llu\n",
	    (unsigned long long)pcs.hits, (unsigned long long)pcs.misses,
	    (unsigned long long)pcs.waits, (unsigned long long)pcs.consumed,
	    (unsigned long long)pcs.bytes);
	put(o, "ccache.hits %llu\nccache.misses %llu\nccache.waits %llu\n"
	    "ccache.evictions %llu\nccache.recycled %llu\nccache.entries %llu\n",
	    (unsigned long long)cs.hits, (unsigned long long)cs.misses,
	    (unsigned long long)cs.waits, (unsigned long long)cs.evictions,
	    (unsigned long long)cs.recycled, (unsigned long long)cs.entries);
	put(o, "ccache.refaults %llu\nccache.lru_pages %llu\nccache.target_pages %llu\n"
	    "ccache.wakes %llu\n",
	    (unsigned long long)cs.refaults, (unsigned long long)cs.lru_pages,
	    (unsigned long long)cs.target, (unsigned long long)cs.wakes);
	czfs_pool_get_stats(dm->pool, &ps);
	put(o, "pool.pages %llu\npool.used %llu\npool.used_max %llu\n"
	    "pool.resident_pages %llu\npool.alloc_failures %llu\n"
	    "pool.reserve_size %llu\npool.reserve_fill %llu\npool.reserve_hits %llu\n",
	    (unsigned long long)ps.pages, (unsigned long long)ps.used,
	    (unsigned long long)ps.used_max, (unsigned long long)ps.resident,
	    (unsigned long long)ps.alloc_fail, (unsigned long long)ps.reserve_size,
	    (unsigned long long)ps.reserve_fill, (unsigned long long)ps.reserve_hits);
	czfs_nodecache_stats(dm->fs->nc, &ns);
	put(o, "nodecache.hits %llu\nnodecache.misses %llu\nnodecache.nodes %llu\n"
	    "nodecache.readahead %llu\nnodecache.refaults %llu\n"
	    "nodecache.limit %llu\n", ns.hits, ns.misses, ns.nodes,
	    ns.readahead, ns.refaults, ns.limit);
	czfs_itable_counts(dm, &full, &compact);
	put(o, "inodes.full %llu\ninodes.compact %llu\n",
	    (unsigned long long)full, (unsigned long long)compact);
}

static void backing_stats(struct out *o, struct czfs_daemon *dm)
{
	struct czfs_bdev_stats *b = &dm->fs->bdev->stats;

	put(o, "backing.max_request %u\nbacking.aligned %d\n",
	    dm->io.max_request, dm->io.aligned);
	put(o, "backing.data_requests %llu\nbacking.data_whole_requests %llu\n"
	    "backing.data_bytes %llu\n", ld(&dm->st.io.requests),
	    ld(&dm->st.io.whole), ld(&dm->st.io.bytes));
	put(o, "staging.streams %llu\nstaging.restarts %llu\n"
	    "staging.private_clusters %llu\nstaging.pages %llu\n"
	    "staging.reclaimed_pages %llu\n", ld(&dm->st.streams),
	    ld(&dm->st.stage_restarts), ld(&dm->st.stage_private),
	    ld(&dm->staged_pages), ld(&dm->st.stage_reclaimed));
	put(o, "push.files %llu\npush.bytes %llu\npush.errors %llu\n"
	    "push.cluster_rests %llu\npush.cluster_rest_bytes %llu\n",
	    ld(&dm->st.push_files), ld(&dm->st.push_bytes),
	    ld(&dm->st.push_errors), ld(&dm->st.push_rests),
	    ld(&dm->st.push_rest_bytes));
	put(o, "backing.reads %llu\nbacking.read_bytes %llu\nbacking.direct_reads %llu\n",
	    ld(&b->reads), ld(&b->read_bytes), ld(&b->direct_reads));
	/* over fuse.write_bytes: the write amplification */
	put(o, "backing.writes %llu\nbacking.write_bytes %llu\n",
	    ld(&b->writes), ld(&b->write_bytes));
	put(o, "backing.flushes %llu\n", ld(&b->flushes));
	put(o, "backing.punches %llu\nbacking.punch_bytes %llu\n",
	    ld(&b->punches), ld(&b->punch_bytes));
	put(o, "backing.unpunched_blocks %llu\n",
	    (unsigned long long)czfs_smap_unpunched(&dm->fs->smap));
	for (unsigned i = 0; i < CZFS_BDEV_HIST_BUCKETS; i++)
		put(o, "backing.read_size.%s%uk %llu\n",
		    i == CZFS_BDEV_HIST_BUCKETS - 1 ? ">" : "<=",
		    4u << (i == CZFS_BDEV_HIST_BUCKETS - 1 ? i - 1 : i),
		    ld(&b->read_hist[i]));
}

static unsigned long long rld(const atomic_ullong *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

/* A remote image's requests (none for a file); the URL without secrets. */
static void remote_stats(struct out *o, struct czfs_daemon *dm)
{
	const struct czfs_remote_stats *r = czfs_bdev_remote_stats(dm->fs->bdev);
	unsigned long long reqs;

	if (!r)
		return;
	reqs = rld(&r->requests);
	put(o, "remote.url %s\n", dm->opts.image_shown);
	put(o, "remote.requests %llu\nremote.bytes %llu\n"
	    "remote.bytes_per_request %llu\nremote.retries %llu\n"
	    "remote.errors %llu\nremote.waits %llu\n", reqs, rld(&r->bytes),
	    reqs ? rld(&r->bytes) / reqs : 0,
	    rld(&r->retries), rld(&r->errors), rld(&r->waits));
	put(o, "remote.cache_hits %llu\nremote.cache_misses %llu\n"
	    "remote.cache_bytes %llu\n", rld(&r->cache_hits),
	    rld(&r->cache_misses),
	    rld(&r->cache_bytes));
	put(o, "remote.latency_p50_us %llu\nremote.latency_p90_us %llu\n"
	    "remote.latency_p99_us %llu\n",
	    (unsigned long long)czfs_remote_latency_pct(r, 50),
	    (unsigned long long)czfs_remote_latency_pct(r, 90),
	    (unsigned long long)czfs_remote_latency_pct(r, 99));
}

/* NAME_count, _avg_ns, _p99_ns, _max_ns of a latency recorder */
static void put_latency(struct out *o, const char *name, struct czfs_latency *l)
{
	uint64_t avg, p99, max;

	czfs_latency_summary(l, &avg, &p99, &max);
	put(o, "%s_count %llu\n%s_avg_ns %llu\n%s_p99_ns %llu\n%s_max_ns %llu\n",
	    name, ld(&l->count), name, (unsigned long long)avg,
	    name, (unsigned long long)p99, name, (unsigned long long)max);
}

static void window_stats(struct out *o, struct czfs_daemon *dm)
{
	struct czfs_window_stats *w = (struct czfs_window_stats *)czfs_win_stats(dm->wc);
	put(o, "window.mode %s%s\n", dm->opts.map == CZFS_MAP_VMAP ? "vmap" :
	    "vm_map_ram", dm->opts.map_slots ? "+slots" : "+bounce");
	put(o, "window.maps %llu\nwindow.identity %llu\nwindow.slot_reuse %llu\n"
	    "window.slot_maps %llu\nwindow.bounce %llu\nwindow.vmaps %llu\n"
	    "window.syscalls %llu\nwindow.purges %llu\nwindow.retries %llu\n"
	    "window.failures %llu\n", ld(&w->maps), ld(&w->identity),
	    ld(&w->slot_reuse), ld(&w->slot_maps), ld(&w->bounce), ld(&w->vmaps),
	    ld(&w->syscalls), ld(&w->purges), ld(&w->retries), ld(&w->failures));
	put_latency(o, "alloc.temp", &dm->st.temp_alloc);
	put_latency(o, "alloc.stage", &dm->st.stage_alloc);
	put(o, "alloc.reclaims %llu\nalloc.waits %llu\n",
	    ld(&dm->st.reclaims), ld(&dm->st.temp_waits));
	put_latency(o, "write.request", &dm->st.write_req);
	put_latency(o, "write.throttle", &dm->st.write_throttle);
	put_latency(o, "checkpoint.wait", &dm->st.cp_wait);
	put_latency(o, "checkpoint.hold", &dm->st.cp_hold);
}

/* What the mount helpers read: whom to wait for at umount, the state a
 * remount reached (remount.h). */
static void daemon_stats(struct out *o, struct czfs_daemon *dm)
{
	put(o, "daemon.pid %ld\ndaemon.writable %d\ndaemon.readonly %d\n",
	    (long)getpid(), !dm->opts.ro,
	    dm->opts.ro || atomic_load(&dm->remounted_ro));
}

size_t czfs_fuse_stats_format(struct czfs_daemon *dm, char *buf, size_t size)
{
	struct out o = { buf, size, 0 };

	daemon_stats(&o, dm);
	fuse_stats(&o, dm);
	window_stats(&o, dm);
	cache_stats(&o, dm);
	backing_stats(&o, dm);
	remote_stats(&o, dm);
	return o.len;
}
