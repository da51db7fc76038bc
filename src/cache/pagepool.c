// SPDX-License-Identifier: MIT
/* The memfd-backed page pool: buddy allocator, reserve, copy helpers. */
#include "config.h"

#include <assert.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "pagepool.h"
#include "util.h"

#define NO_LINK		UINT32_MAX

struct czfs_pool {
	pthread_mutex_t lock;
	pthread_cond_t freed;		/* signalled by every free */
	uint64_t frees;
	int fd;
	uint8_t *base;
	uint32_t npages;
	uint32_t used, used_max;
	/* free_order[p] = order + 1 when p heads a free run, else 0 */
	uint8_t *free_order;
	uint32_t *next, *prev;		/* free-list links, by page */
	/* hole[p]: p's memory was given back (or never touched): a page is
	 * resident from its allocation until it is punched */
	uint8_t *hole;
	uint32_t resident;
	uint32_t head[CZFS_POOL_MAX_ORDER + 1], tail[CZFS_POOL_MAX_ORDER + 1];
	/* reserve: a stack of single pages */
	uint32_t *reserve;
	uint32_t reserve_size, reserve_fill;
	uint64_t reserve_hits, alloc_fail, waits;
};

static bool any_resident(const struct czfs_pool *p, uint32_t page, unsigned order)
{
	for (uint32_t i = page; i < page + (1u << order); i++)
		if (!p->hole[i])
			return true;
	return false;
}

/*
 * A free run joins its list: at the head when it holds memory, at the
 * tail when it was given back, so that allocations reuse resident pages
 * and do not fault in fresh ones while resident ones lie free.
 */
static void list_push(struct czfs_pool *p, uint32_t page, unsigned order)
{
	bool tail = p->head[order] != NO_LINK && !any_resident(p, page, order);

	p->free_order[page] = (uint8_t)(order + 1);
	if (tail) {
		p->next[page] = NO_LINK;
		p->prev[page] = p->tail[order];
		p->next[p->tail[order]] = page;
		p->tail[order] = page;
		return;
	}
	p->prev[page] = NO_LINK;
	p->next[page] = p->head[order];
	if (p->head[order] != NO_LINK)
		p->prev[p->head[order]] = page;
	else
		p->tail[order] = page;
	p->head[order] = page;
}

static void list_del(struct czfs_pool *p, uint32_t page, unsigned order)
{
	p->free_order[page] = 0;
	if (p->prev[page] != NO_LINK)
		p->next[p->prev[page]] = p->next[page];
	else
		p->head[order] = p->next[page];
	if (p->next[page] != NO_LINK)
		p->prev[p->next[page]] = p->prev[page];
	else
		p->tail[order] = p->prev[page];
}

/* Pages of a run about to be used count as resident from now on. */
static void mark_resident(struct czfs_pool *p, uint32_t page, unsigned order)
{
	for (uint32_t i = page; i < page + (1u << order); i++) {
		p->resident += p->hole[i];
		p->hole[i] = 0;
	}
}

/* The run's memory is going back: its pages become holes.  Returns how
 * many were resident. */
static uint32_t mark_holes(struct czfs_pool *p, uint32_t page, unsigned order)
{
	uint32_t n = 0;

	for (uint32_t i = page; i < page + (1u << order); i++) {
		n += !p->hole[i];
		p->hole[i] = 1;
	}
	p->resident -= n;
	return n;
}

static int buddy_alloc(struct czfs_pool *p, unsigned order, uint32_t *page)
{
	unsigned k, first = CZFS_POOL_MAX_ORDER + 1;
	uint32_t pg;

	/* The smallest run that holds memory, else the smallest run. */
	for (k = order; k <= CZFS_POOL_MAX_ORDER; k++) {
		if (p->head[k] == NO_LINK)
			continue;
		first = MIN(first, k);
		if (!p->hole[p->head[k]])
			break;
	}
	if (k > CZFS_POOL_MAX_ORDER)
		k = first;
	if (k > CZFS_POOL_MAX_ORDER)
		return -ENOMEM;
	pg = p->head[k];
	list_del(p, pg, k);
	while (k > order) {		/* split, keep the half with memory */
		uint32_t hi = pg + (1u << --k);

		if (!any_resident(p, pg, k) && any_resident(p, hi, k)) {
			list_push(p, pg, k);
			pg = hi;
		} else {
			list_push(p, hi, k);
		}
	}
	p->used += 1u << order;
	p->used_max = MAX(p->used_max, p->used);
	mark_resident(p, pg, order);
	*page = pg;
	return 0;
}

static void buddy_free(struct czfs_pool *p, uint32_t page, unsigned order)
{
	p->used -= 1u << order;
	p->frees++;
	pthread_cond_broadcast(&p->freed);
	while (order < CZFS_POOL_MAX_ORDER) {
		uint32_t buddy = page ^ (1u << order);

		if (buddy >= p->npages || p->free_order[buddy] != order + 1)
			break;
		list_del(p, buddy, order);
		page = MIN(page, buddy);
		order++;
	}
	list_push(p, page, order);
}

static int pool_init_memory(struct czfs_pool *p)
{
	size_t bytes = (size_t)p->npages * CZFS_PAGE_SIZE;

	p->fd = memfd_create("czfs-pagepool", MFD_CLOEXEC);
	if (p->fd < 0)
		return -errno;
	if (ftruncate(p->fd, (off_t)bytes))
		return -errno;
	p->base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, p->fd, 0);
	if (p->base == MAP_FAILED) {
		p->base = NULL;
		return -errno;
	}
	return 0;
}

int czfs_pool_create(size_t cap_bytes, unsigned reserved, struct czfs_pool **out)
{
	const uint32_t run = 1u << CZFS_MAX_CLUSTER_SHIFT;
	struct czfs_pool *p;
	int err = -ENOMEM;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->freed, NULL);
	p->fd = -1;
	p->npages = (uint32_t)MIN(cap_bytes / CZFS_PAGE_SIZE, (size_t)1 << 30);
	p->npages = MAX(p->npages - p->npages % run, run);
	if (reserved > p->npages / 2) {
		err = -EINVAL;
		goto fail;
	}
	p->free_order = calloc(p->npages, 1);
	p->hole = malloc(p->npages);
	p->next = malloc(p->npages * sizeof(uint32_t));
	p->prev = malloc(p->npages * sizeof(uint32_t));
	p->reserve = malloc((reserved + 1) * sizeof(uint32_t));
	if (!p->free_order || !p->hole || !p->next || !p->prev || !p->reserve)
		goto fail;
	memset(p->hole, 1, p->npages);	/* a fresh memfd holds no memory */
	err = pool_init_memory(p);
	if (err)
		goto fail;
	for (unsigned k = 0; k <= CZFS_POOL_MAX_ORDER; k++)
		p->head[k] = p->tail[k] = NO_LINK;
	/* Free runs as large as alignment allows, lowest pages first out
	 * (runs holding no memory join at the tail). */
	for (uint32_t pg = 0; pg < p->npages;) {
		unsigned k = CZFS_POOL_MAX_ORDER;

		while ((pg & ((1u << k) - 1)) || pg + (1u << k) > p->npages)
			k--;
		list_push(p, pg, k);
		pg += 1u << k;
	}
	/* Set the reserve aside; its pages do not count as used. */
	for (p->reserve_size = 0; p->reserve_size < reserved; p->reserve_size++) {
		uint32_t pg;

		buddy_alloc(p, 0, &pg);
		p->reserve[p->reserve_fill++] = pg;
	}
	p->used -= reserved;
	*out = p;
	return 0;
fail:
	czfs_pool_destroy(p);
	return err;
}

void czfs_pool_destroy(struct czfs_pool *p)
{
	if (!p)
		return;
	if (p->base)
		munmap(p->base, (size_t)p->npages * CZFS_PAGE_SIZE);
	if (p->fd >= 0)
		close(p->fd);
	free(p->free_order);
	free(p->hole);
	free(p->next);
	free(p->prev);
	free(p->reserve);
	pthread_cond_destroy(&p->freed);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

int czfs_pool_alloc(struct czfs_pool *p, unsigned order, uint32_t *page)
{
	int err;

	if (order > CZFS_POOL_MAX_ORDER)
		return -EINVAL;
	pthread_mutex_lock(&p->lock);
	err = buddy_alloc(p, order, page);
	if (err)
		p->alloc_fail++;
	pthread_mutex_unlock(&p->lock);
	return err;
}

void czfs_pool_free(struct czfs_pool *p, uint32_t page, unsigned order)
{
	assert(page < p->npages && !(page & ((1u << order) - 1)));
	pthread_mutex_lock(&p->lock);
	buddy_free(p, page, order);
	pthread_mutex_unlock(&p->lock);
}

int czfs_pool_alloc_temp(struct czfs_pool *p, uint32_t *page)
{
	int err;

	pthread_mutex_lock(&p->lock);
	err = buddy_alloc(p, 0, page);
	if (err && p->reserve_fill) {
		*page = p->reserve[--p->reserve_fill];
		p->reserve_hits++;
		p->used++;
		err = 0;
	}
	if (err)
		p->alloc_fail++;
	pthread_mutex_unlock(&p->lock);
	return err;
}

void czfs_pool_free_temp(struct czfs_pool *p, uint32_t page)
{
	pthread_mutex_lock(&p->lock);
	if (p->reserve_fill < p->reserve_size) {
		p->reserve[p->reserve_fill++] = page;
		p->used--;
		p->frees++;
		pthread_cond_broadcast(&p->freed);
	} else {
		buddy_free(p, page, 0);
	}
	pthread_mutex_unlock(&p->lock);
}

int czfs_pool_wait(struct czfs_pool *p, unsigned timeout_ms)
{
	struct timespec until;
	uint64_t seen;
	int err = 0;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&p->lock);
	p->waits++;
	seen = p->frees;
	while (p->frees == seen && !err)
		err = pthread_cond_timedwait(&p->freed, &p->lock, &until);
	pthread_mutex_unlock(&p->lock);
	return p->frees == seen ? -ETIMEDOUT : 0;
}

void *czfs_pool_addr(const struct czfs_pool *p, uint32_t page)
{
	return p->base + (size_t)page * CZFS_PAGE_SIZE;
}

int czfs_pool_fd(const struct czfs_pool *p)
{
	return p->fd;
}

static void punch(struct czfs_pool *p, uint32_t page, unsigned order)
{
	fallocate(p->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		  (off_t)page * CZFS_PAGE_SIZE, (off_t)CZFS_PAGE_SIZE << order);
}

/* Release at most this much per call: the lock is held while punching. */
#define TRIM_BATCH	1024u

uint32_t czfs_pool_trim(struct czfs_pool *p, uint32_t keep)
{
	uint32_t done = 0;

	pthread_mutex_lock(&p->lock);
	keep = MAX(keep, p->used + p->reserve_fill);
	/* Smaller runs first: fragments, while larger runs serve clusters
	 * and staged requests.  A run given back goes to its list's tail,
	 * past which nothing resident lies: the walk stops there. */
	for (unsigned k = 0; k <= CZFS_POOL_MAX_ORDER && p->resident > keep &&
	     done < TRIM_BATCH; k++) {
		uint32_t pg = p->head[k], next;

		for (; pg != NO_LINK && p->resident > keep && done < TRIM_BATCH;
		     pg = next) {
			next = p->next[pg];
			if (!any_resident(p, pg, k))
				break;
			punch(p, pg, k);
			done += mark_holes(p, pg, k);
			list_del(p, pg, k);
			list_push(p, pg, k);
		}
	}
	pthread_mutex_unlock(&p->lock);
	return done;
}

void czfs_pool_punch(struct czfs_pool *p, uint32_t page, unsigned order)
{
	pthread_mutex_lock(&p->lock);
	mark_holes(p, page, order);
	pthread_mutex_unlock(&p->lock);
	punch(p, page, order);
}

void czfs_pool_get_stats(struct czfs_pool *p, struct czfs_pool_stats *st)
{
	pthread_mutex_lock(&p->lock);
	st->pages = p->npages;
	st->used = p->used;
	st->used_max = p->used_max;
	st->resident = p->resident;
	st->reserve_size = p->reserve_size;
	st->reserve_fill = p->reserve_fill;
	st->reserve_hits = p->reserve_hits;
	st->alloc_fail = p->alloc_fail;
	st->waits = p->waits;
	pthread_mutex_unlock(&p->lock);
}

void czfs_memcpy_to_pages(struct czfs_pool *p, const uint32_t *pages,
			  size_t off, const void *src, size_t len)
{
	const char *s = src;

	while (len) {
		size_t in = off % CZFS_PAGE_SIZE;
		size_t n = MIN(len, CZFS_PAGE_SIZE - in);
		uint32_t pg = pages[off / CZFS_PAGE_SIZE];

		assert(pg != CZFS_NO_PAGE);
		memcpy((char *)czfs_pool_addr(p, pg) + in, s, n);
		s += n;
		off += n;
		len -= n;
	}
}

void czfs_memcpy_from_pages(struct czfs_pool *p, const uint32_t *pages,
			    size_t off, void *dst, size_t len)
{
	char *d = dst;

	while (len) {
		size_t in = off % CZFS_PAGE_SIZE;
		size_t n = MIN(len, CZFS_PAGE_SIZE - in);
		uint32_t pg = pages[off / CZFS_PAGE_SIZE];

		if (pg == CZFS_NO_PAGE)
			memset(d, 0, n);
		else
			memcpy(d, (char *)czfs_pool_addr(p, pg) + in, n);
		d += n;
		off += n;
		len -= n;
	}
}
