/* SPDX-License-Identifier: MIT */
/*
 * Window cache: a contiguous view of page-pool pages for the codecs, which
 * need one flat input and one flat output buffer (the f2fs cbuf/rbuf).
 *
 * Two strategies, selectable per mount (-o map=...), so the f2fs patch's
 * before/after can be measured through a real filesystem:
 *
 *   CZFS_MAP_VMAP        the "before" baseline, like vmap(): every map
 *                        reserves a fresh address range, maps each run of
 *                        pages into it with mmap(MAP_FIXED), and every unmap
 *                        munmaps it at once.  No reuse.
 *
 *   CZFS_MAP_VM_MAP_RAM  the "after" path, built like vm_map_ram(): per-thread
 *                        windows (the per-CPU vmap_block) split into slots.
 *                        In order of preference (as erofs picks its buffers):
 *                          - pages that are one run are already contiguous
 *                            in the pool's mapping: no mapping at all;
 *                          - a slot that still maps exactly these pages is
 *                            reused as is;
 *                          - (bounce) scattered pages are copied through a
 *                            per-thread buffer, when that was chosen;
 *                          - a clean slot gets the pages mmap()ed in.
 *                        Unmapping is lazy: the slot is only marked dirty.
 *                        With no clean slot left, all dirty slots are purged
 *                        in one go (vm_unmap_aliases) and the map retried, at
 *                        most 3 times, then it fails with -ENOMEM.
 *
 * Threads: a window belongs to the thread that created it (no locking on the
 * hot path); the statistics are atomic.  Mappings must be unmapped by the
 * thread that mapped them.
 */
#ifndef CZFS_WINDOW_H
#define CZFS_WINDOW_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct czfs_pool;

enum czfs_map_mode {
	CZFS_MAP_VMAP,
	CZFS_MAP_VM_MAP_RAM,
};

#define CZFS_WIN_MAX_RETRIES	3

struct czfs_window_stats {
	atomic_ullong maps;		/* czfs_win_map calls */
	atomic_ullong identity;		/* served by the pool's own mapping */
	atomic_ullong slot_reuse;	/* a dirty slot still mapped the pages */
	atomic_ullong slot_maps;	/* pages mapped into a clean slot */
	atomic_ullong bounce;		/* copied through the bounce buffer */
	atomic_ullong vmaps;		/* fresh mappings (vmap mode) */
	atomic_ullong syscalls;		/* mmap/munmap calls made for mapping */
	atomic_ullong purges, retries, failures;
};

struct czfs_wincache_opts {
	enum czfs_map_mode mode;
	unsigned slots;			/* per thread (default 16) */
	unsigned slot_pages;		/* pages per slot (default: a 256 KiB cluster) */
	bool bounce;			/* copy scattered pages, do not map */
};

struct czfs_wincache;

/* A live mapping; pass it back to czfs_win_unmap. */
struct czfs_mapping {
	void *addr;
	unsigned npages;
	/* private */
	uint8_t type;
	bool copy_back;
	int slot;
	const uint32_t *pages;
};

/* A window cache over pool, as opts says (0: defaults): 0 or -errno. */
int czfs_wincache_create(struct czfs_pool *pool,
			 const struct czfs_wincache_opts *opts,
			 struct czfs_wincache **out);
void czfs_wincache_destroy(struct czfs_wincache *wc);	/* accepts NULL */

/*
 * Map n pool pages (pages[0..n), n <= slot_pages) as one contiguous buffer.
 * for_write: the caller writes the buffer (a bounce copy is written back to
 * the pages on unmap).  pages must stay valid until unmap.  Returns 0,
 * -ENOMEM (no slot after the retries; address space), or -EINVAL.
 */
int czfs_win_map(struct czfs_wincache *wc, const uint32_t *pages, unsigned n,
		 bool for_write, struct czfs_mapping *m);
void czfs_win_unmap(struct czfs_wincache *wc, struct czfs_mapping *m);

/* The live counters (atomics: read them with atomic_load). */
const struct czfs_window_stats *czfs_win_stats(struct czfs_wincache *wc);

/* Parse "vmap" / "vm_map_ram": 0 or -EINVAL. */
int czfs_map_mode_parse(const char *s, enum czfs_map_mode *mode);

#endif /* CZFS_WINDOW_H */
