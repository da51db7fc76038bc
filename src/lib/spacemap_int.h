/* SPDX-License-Identifier: MIT */
/* Space map internals shared by spacemap.c (bits) and spacemap_io.c (disk). */
#ifndef CZFS_SPACEMAP_INT_H
#define CZFS_SPACEMAP_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "czfs_fs.h"
#include "spacemap.h"
#include "super.h"
#include "util.h"

#define SMAP_BITS	((uint64_t)CZFS_SMAP_BITS_PER_BLOCK)
#define SMAP_WORDS	(CZFS_SMAP_BITS_PER_BLOCK / 64)
#define SMAP_PER_INDEX	CZFS_SMAP_ENTRIES_PER_INDEX
#define SMAP_MAX_INDEX	ARRAY_SIZE(((struct czfs_cp_info *)0)->smap_index)

#define BM_DIRTY	0x01
#define BM_PENDING	0x02
#define BM_MOVED	0x04
#define BM_HELD		0x08	/* some of its blocks are held */
#define BM_UNPUNCHED	0x10	/* some of its blocks are unpunched */

/* Per index block during a write. */
#define IX_NEED		0x01	/* one of its bitmap blocks moved */
#define IX_MOVED	0x02	/* old location freed */

#define NO_RUN		UINT64_MAX
#define BATCH_BLOCKS	32u	/* map blocks per write request, at most */

/* Bits set in map[start, end). */
uint64_t smap_bits_count(const uint64_t *map, uint64_t start, uint64_t end);
/* The words of bitmap block k. */
uint64_t *smap_chunk(uint64_t *map, uint64_t k);
/* Allocation and freeing with sm->lock held. */
int smap_alloc_locked(struct czfs_smap *sm, uint64_t n, uint64_t *blkaddr);
void smap_free_locked(struct czfs_smap *sm, uint64_t start, uint64_t n);
/* Hold chunk k's unpunched blocks that are still free and lie in runs of
 * min_run or more, for a discard pass: copied into words (SMAP_WORDS),
 * with those held already.  False if there are none. */
bool smap_take_unpunched(struct czfs_smap *sm, uint64_t k, uint64_t *words,
			 unsigned min_run);
/* Give back the held blocks of chunk k that words (SMAP_WORDS) names:
 * allocatable again. */
void smap_release_held(struct czfs_smap *sm, uint64_t k, const uint64_t *words);
/* Size a map for max_blocks (arrays, allocator callbacks). */
int smap_setup(struct czfs_smap *sm, uint64_t max_blocks);

#endif /* CZFS_SPACEMAP_INT_H */
