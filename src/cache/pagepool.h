/* SPDX-License-Identifier: MIT */
/*
 * Page pool: the 4 KiB pages that hold decompressed (and, with the write
 * path, dirty) cluster data.  The pages live in one memfd mapped once for
 * the life of the pool, so a page's address never changes and a naturally
 * aligned run of pages is contiguous in that mapping: a cluster whose pages
 * are one run needs no further mapping to be decompressed into.
 *
 * Allocation is a buddy allocator over page numbers, orders 0..8 (1 to 256
 * pages: a cluster, or a staged backing request), so runs are naturally
 * aligned.  The pool has a hard cap; when it
 * is exhausted the caller reclaims (the cluster cache evicts) and retries.
 *
 * Reserved pages (the erofs reserved buffer pool): N single pages set aside
 * at creation.  Temporary pages (compressed input, bounce pages) may take
 * from the reserve when the main pool is empty, before anyone reclaims;
 * freed temporary pages refill the reserve first.
 *
 * Threads: all functions are safe to call concurrently.
 */
#ifndef CZFS_PAGEPOOL_H
#define CZFS_PAGEPOOL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "czfs_fs.h"

#define CZFS_PAGE_SIZE		CZFS_BLOCK_SIZE
#define CZFS_POOL_MAX_ORDER	8	/* 1 MiB: a staged backing request */
#define CZFS_NO_PAGE		UINT32_MAX

struct czfs_pool;

struct czfs_pool_stats {
	uint64_t pages;			/* capacity */
	uint64_t used;			/* allocated, reserve excluded */
	uint64_t used_max;		/* the most used at once */
	uint64_t resident;		/* holding memory: allocated since
					 * created or last punched */
	uint64_t reserve_size, reserve_fill;
	uint64_t reserve_hits;		/* temp pages served by the reserve */
	uint64_t alloc_fail;		/* allocations that found no page */
	uint64_t waits;			/* czfs_pool_wait calls */
};

/*
 * A pool of cap_bytes (rounded down to whole 64-page runs, at least one),
 * reserved pages taken out of it.  Returns 0, -EINVAL (cap too small for
 * the reserve), or -errno from memfd_create/ftruncate/mmap.
 */
int czfs_pool_create(size_t cap_bytes, unsigned reserved, struct czfs_pool **out);
void czfs_pool_destroy(struct czfs_pool *pool);	/* accepts NULL */

/* Allocate 2^order contiguous pages: 0 and *page, or -ENOMEM. */
int czfs_pool_alloc(struct czfs_pool *pool, unsigned order, uint32_t *page);
void czfs_pool_free(struct czfs_pool *pool, uint32_t page, unsigned order);

/*
 * One temporary page: from the main pool, else from the reserve.  Returns
 * 0, or -ENOMEM when both are empty (the caller reclaims and retries).
 */
int czfs_pool_alloc_temp(struct czfs_pool *pool, uint32_t *page);
/* Give back a temporary page: refills the reserve first. */
void czfs_pool_free_temp(struct czfs_pool *pool, uint32_t page);

/*
 * Sleep until some page is freed or timeout_ms passes.  Returns 0 when a
 * page came back, -ETIMEDOUT otherwise.  For allocators that found the
 * pool empty and nothing to evict.
 */
int czfs_pool_wait(struct czfs_pool *pool, unsigned timeout_ms);

/* The pool's long-lived mapping of a page. */
void *czfs_pool_addr(const struct czfs_pool *pool, uint32_t page);

/* The memfd (for splice) and the mapping base. */
int czfs_pool_fd(const struct czfs_pool *pool);

/*
 * Give the memory of free pages back to the kernel (punch the memfd) until
 * at most keep pages are resident, or all that are free were given back;
 * at most a batch of pages a call, the lock held meanwhile.  Returns the
 * pages given back: call again while it gives some and more should go.
 */
uint32_t czfs_pool_trim(struct czfs_pool *pool, uint32_t keep);

/*
 * Give the memory of 2^order pages at page back to the kernel; their next
 * use faults in zeroed pages.  For reclaim in the low-memory mode.
 */
void czfs_pool_punch(struct czfs_pool *pool, uint32_t page, unsigned order);

/* A snapshot of the counters (each read atomically, not all at once). */
void czfs_pool_get_stats(struct czfs_pool *pool, struct czfs_pool_stats *st);

/*
 * Page copy helpers, as brd's memcpy_to_page()/memcpy_from_page(): the
 * only way code copies into and out of pool pages.  pages[] lists the
 * pages of a cluster in order; off/len address bytes across them.  A page
 * number CZFS_NO_PAGE stands for a page that is not allocated: copying
 * from it yields zeros, copying to it is a bug (asserted).
 */
void czfs_memcpy_to_pages(struct czfs_pool *pool, const uint32_t *pages,
			  size_t off, const void *src, size_t len);
void czfs_memcpy_from_pages(struct czfs_pool *pool, const uint32_t *pages,
			    size_t off, void *dst, size_t len);

#endif /* CZFS_PAGEPOOL_H */
