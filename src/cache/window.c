// SPDX-License-Identifier: MIT
/*
 * Window cache: contiguous views of page-pool pages, vmap-style (fresh
 * mapping each time) or vm_map_ram-style (per-thread slots, lazy unmap,
 * purge and retry).  See window.h.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "pagepool.h"
#include "util.h"
#include "window.h"

enum { MAP_IDENTITY = 1, MAP_SLOT, MAP_FRESH, MAP_BOUNCE };
enum { SLOT_CLEAN, SLOT_INUSE, SLOT_DIRTY };

struct slot {
	uint8_t state;
	unsigned n;
	uint32_t *pages;		/* what the slot maps (slot_pages entries) */
};

/* A per-thread window: the analog of a per-CPU vmap_block. */
struct window {
	struct czfs_wincache *wc;
	uint8_t *base;
	void *bounce;
	struct window *next;		/* every window, for destroy */
	struct window *next_spare;	/* windows of threads that exited */
	struct slot slots[];
};

struct czfs_wincache {
	struct czfs_pool *pool;
	struct czfs_wincache_opts opts;
	size_t slot_bytes;
	pthread_key_t key;
	pthread_mutex_t lock;		/* the window lists */
	struct window *all, *spare;
	struct czfs_window_stats st;
};

static void count(atomic_ullong *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static void window_free(struct czfs_wincache *wc, struct window *w)
{
	for (unsigned i = 0; i < wc->opts.slots; i++)
		free(w->slots[i].pages);
	free(w->bounce);
	if (w->base && w->base != MAP_FAILED)
		munmap(w->base, wc->opts.slots * wc->slot_bytes);
	free(w);
}

static struct window *window_new(struct czfs_wincache *wc)
{
	unsigned ns = wc->opts.slots;
	struct window *w = calloc(1, sizeof(*w) + ns * sizeof(struct slot));

	if (!w)
		return NULL;
	w->wc = wc;
	w->base = mmap(NULL, ns * wc->slot_bytes, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (w->base == MAP_FAILED ||
	    posix_memalign(&w->bounce, CZFS_PAGE_SIZE, wc->slot_bytes))
		goto fail;
	for (unsigned i = 0; i < ns; i++) {
		w->slots[i].pages = calloc(wc->opts.slot_pages, sizeof(uint32_t));
		if (!w->slots[i].pages)
			goto fail;
	}
	return w;
fail:
	window_free(wc, w);
	return NULL;
}

/* Thread exit: the window (with its still-mapped dirty slots) is kept for
 * the next thread, as a CPU's vmap_block outlives any one task. */
static void window_release(void *arg)
{
	struct window *w = arg;

	pthread_mutex_lock(&w->wc->lock);
	w->next_spare = w->wc->spare;
	w->wc->spare = w;
	pthread_mutex_unlock(&w->wc->lock);
}

static struct window *thread_window(struct czfs_wincache *wc)
{
	struct window *w = pthread_getspecific(wc->key);

	if (likely(w))
		return w;
	pthread_mutex_lock(&wc->lock);
	w = wc->spare;
	if (w) {
		wc->spare = w->next_spare;
	} else {
		w = window_new(wc);
		if (w) {
			w->next = wc->all;
			wc->all = w;
		}
	}
	pthread_mutex_unlock(&wc->lock);
	if (w)
		pthread_setspecific(wc->key, w);
	return w;
}

int czfs_wincache_create(struct czfs_pool *pool,
			 const struct czfs_wincache_opts *opts,
			 struct czfs_wincache **out)
{
	struct czfs_wincache *wc = calloc(1, sizeof(*wc));
	int err;

	if (!wc)
		return -ENOMEM;
	wc->pool = pool;
	wc->opts = *opts;
	if (!wc->opts.slots)
		wc->opts.slots = 16;
	if (!wc->opts.slot_pages)
		wc->opts.slot_pages = CZFS_MAX_CLUSTER_BLOCKS;
	wc->slot_bytes = (size_t)wc->opts.slot_pages * CZFS_PAGE_SIZE;
	err = -pthread_key_create(&wc->key, window_release);
	if (err) {
		free(wc);
		return err;
	}
	pthread_mutex_init(&wc->lock, NULL);
	*out = wc;
	return 0;
}

void czfs_wincache_destroy(struct czfs_wincache *wc)
{
	if (!wc)
		return;
	pthread_key_delete(wc->key);
	while (wc->all) {
		struct window *w = wc->all;

		wc->all = w->next;
		window_free(wc, w);
	}
	pthread_mutex_destroy(&wc->lock);
	free(wc);
}

static bool pages_contiguous(const uint32_t *pages, unsigned n)
{
	for (unsigned i = 1; i < n; i++)
		if (pages[i] != pages[0] + i)
			return false;
	return true;
}

/* mmap each run of consecutive pool pages at addr; fresh: populate now, as
 * vmap() fills the page tables at once. */
static int map_runs(struct czfs_wincache *wc, uint8_t *addr,
		    const uint32_t *pages, unsigned n, bool fresh)
{
	int fd = czfs_pool_fd(wc->pool);
	int flags = MAP_SHARED | MAP_FIXED | (fresh ? MAP_POPULATE : 0);

	for (unsigned i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && pages[j] == pages[j - 1] + 1; j++)
			;
		count(&wc->st.syscalls);
		if (mmap(addr + (size_t)i * CZFS_PAGE_SIZE,
			 (size_t)(j - i) * CZFS_PAGE_SIZE, PROT_READ | PROT_WRITE,
			 flags, fd, (off_t)pages[i] * CZFS_PAGE_SIZE) == MAP_FAILED)
			return -ENOMEM;
	}
	return 0;
}

/* vmap(): reserve a range, map the pages, unmapped again at unmap. */
static int map_fresh(struct czfs_wincache *wc, const uint32_t *pages,
		     unsigned n, struct czfs_mapping *m)
{
	size_t len = (size_t)n * CZFS_PAGE_SIZE;
	uint8_t *addr;

	count(&wc->st.syscalls);
	addr = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (addr == MAP_FAILED)
		return -ENOMEM;
	if (map_runs(wc, addr, pages, n, true)) {
		munmap(addr, len);
		return -ENOMEM;
	}
	count(&wc->st.vmaps);
	m->addr = addr;
	m->type = MAP_FRESH;
	return 0;
}

static int find_slot(struct window *w, unsigned nslots, const uint32_t *pages,
		     unsigned n, int *clean)
{
	*clean = -1;
	for (unsigned i = 0; i < nslots; i++) {
		struct slot *s = &w->slots[i];

		if (s->state == SLOT_DIRTY && s->n == n &&
		    !memcmp(s->pages, pages, n * sizeof(*pages)))
			return (int)i;
		if (s->state == SLOT_CLEAN && *clean < 0)
			*clean = (int)i;
	}
	return -1;
}

/* vm_unmap_aliases(): drop every lazily kept mapping, one call per range. */
static void purge(struct czfs_wincache *wc, struct window *w)
{
	unsigned ns = wc->opts.slots;

	count(&wc->st.purges);
	for (unsigned i = 0, j; i < ns; i = j + 1) {
		for (j = i; j < ns && w->slots[j].state == SLOT_DIRTY; j++)
			w->slots[j].state = SLOT_CLEAN;
		if (j == i)
			continue;
		count(&wc->st.syscalls);
		mmap(w->base + i * wc->slot_bytes, (j - i) * wc->slot_bytes,
		     PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED |
		     MAP_NORESERVE, -1, 0);
	}
}

static int map_slot(struct czfs_wincache *wc, struct window *w,
		    const uint32_t *pages, unsigned n, struct czfs_mapping *m)
{
	for (unsigned try = 0; try < CZFS_WIN_MAX_RETRIES; try++) {
		int clean, s = find_slot(w, wc->opts.slots, pages, n, &clean);

		if (s >= 0) {
			count(&wc->st.slot_reuse);
		} else if (clean >= 0) {
			s = clean;
			if (map_runs(wc, w->base + s * wc->slot_bytes, pages, n, false))
				return -ENOMEM;
			memcpy(w->slots[s].pages, pages, n * sizeof(*pages));
			w->slots[s].n = n;
			count(&wc->st.slot_maps);
		} else {
			count(&wc->st.retries);
			purge(wc, w);
			continue;
		}
		w->slots[s].state = SLOT_INUSE;
		m->addr = w->base + s * wc->slot_bytes;
		m->type = MAP_SLOT;
		m->slot = s;
		return 0;
	}
	count(&wc->st.failures);
	return -ENOMEM;
}

int czfs_win_map(struct czfs_wincache *wc, const uint32_t *pages, unsigned n,
		 bool for_write, struct czfs_mapping *m)
{
	struct window *w;

	if (!n || n > wc->opts.slot_pages)
		return -EINVAL;
	count(&wc->st.maps);
	m->npages = n;
	m->pages = pages;
	m->copy_back = false;
	if (wc->opts.mode == CZFS_MAP_VMAP)
		return map_fresh(wc, pages, n, m);
	if (pages_contiguous(pages, n)) {
		count(&wc->st.identity);
		m->addr = czfs_pool_addr(wc->pool, pages[0]);
		m->type = MAP_IDENTITY;
		return 0;
	}
	w = thread_window(wc);
	if (!w)
		return -ENOMEM;
	if (!wc->opts.bounce)
		return map_slot(wc, w, pages, n, m);
	count(&wc->st.bounce);
	czfs_memcpy_from_pages(wc->pool, pages, 0, w->bounce,
			       (size_t)n * CZFS_PAGE_SIZE);
	m->addr = w->bounce;
	m->type = MAP_BOUNCE;
	m->copy_back = for_write;
	return 0;
}

void czfs_win_unmap(struct czfs_wincache *wc, struct czfs_mapping *m)
{
	switch (m->type) {
	case MAP_FRESH:
		count(&wc->st.syscalls);
		munmap(m->addr, (size_t)m->npages * CZFS_PAGE_SIZE);
		break;
	case MAP_SLOT:
		/* Lazy: keep the mapping, it may serve the same pages again. */
		thread_window(wc)->slots[m->slot].state = SLOT_DIRTY;
		break;
	case MAP_BOUNCE:
		if (m->copy_back)
			czfs_memcpy_to_pages(wc->pool, m->pages, 0, m->addr,
					     (size_t)m->npages * CZFS_PAGE_SIZE);
		break;
	default:
		break;
	}
	m->type = 0;
}

const struct czfs_window_stats *czfs_win_stats(struct czfs_wincache *wc)
{
	return &wc->st;
}

int czfs_map_mode_parse(const char *s, enum czfs_map_mode *mode)
{
	if (!strcmp(s, "vmap"))
		*mode = CZFS_MAP_VMAP;
	else if (!strcmp(s, "vm_map_ram"))
		*mode = CZFS_MAP_VM_MAP_RAM;
	else
		return -EINVAL;
	return 0;
}
