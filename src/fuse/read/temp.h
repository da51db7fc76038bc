/* SPDX-License-Identifier: MIT */
/*
 * Temporary pages: pool pages a load or a staged request holds only while
 * it runs (a cluster's compressed input, a backing request, a writeback's
 * bounce pages).  They come as one run when the pool has one, else as
 * single pages (the reserve may serve them), else after evicting clusters
 * from the cache or waiting for a free.
 *
 * Threads: safe to call concurrently (the pool and the cache lock).
 */
#ifndef CZFS_FUSE_TEMP_H
#define CZFS_FUSE_TEMP_H

#include <stdbool.h>
#include <stdint.h>

struct czfs_daemon;
struct czfs_latency;

#define CZFS_TEMP_MAX	256	/* pages: a 1 MiB request */

struct czfs_temp {
	unsigned n;			/* pages */
	uint32_t pages[CZFS_TEMP_MAX];	/* in order */
	unsigned nruns;
	struct {
		uint32_t page;
		uint8_t order;
		bool single;		/* from czfs_pool_alloc_temp */
	} runs[CZFS_TEMP_MAX];
};

#define CZFS_TEMP_NOWAIT	0x01	/* a prefetch: fail rather than wait */

/*
 * Take n pages (n <= CZFS_TEMP_MAX) into *tp, reclaiming as needed; the
 * time it took is recorded in lat.  A caller that must wait holds none of
 * them meanwhile: several partial takes could otherwise hold the whole
 * pool between them.  Returns 0, -EINVAL (n too large) or -ENOMEM (nothing
 * came free in time: logged, *tp empty; with CZFS_TEMP_NOWAIT, nothing
 * free now, not logged).
 */
int czfs_temp_alloc(struct czfs_daemon *dm, unsigned n, struct czfs_temp *tp,
		    struct czfs_latency *lat, unsigned flags);
/* Give back all of *tp (empty after; an empty *tp is fine). */
void czfs_temp_free(struct czfs_daemon *dm, struct czfs_temp *tp);

#endif /* CZFS_FUSE_TEMP_H */
