/* SPDX-License-Identifier: MIT */
/*
 * Block allocator interface.  The B-tree and the mkfs writer get blocks
 * through it; the space map implements it (czfs_smap.alloc), tests plug in
 * a recording allocator.
 */
#ifndef CZFS_ALLOC_H
#define CZFS_ALLOC_H

#include <stdint.h>

struct czfs_allocator {
	/* n contiguous blocks: 0 and *blkaddr, or -ENOSPC. */
	int (*alloc)(struct czfs_allocator *a, uint64_t n, uint64_t *blkaddr);
	/* Give back blocks (reusable only after the next checkpoint). */
	void (*free)(struct czfs_allocator *a, uint64_t blkaddr, uint64_t n);
};

#endif /* CZFS_ALLOC_H */
