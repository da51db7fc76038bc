/* SPDX-License-Identifier: MIT */
/*
 * The block-mapped clusters the daemon knows of, and when each was last
 * written: what background recompression (recompress.h) picks cold ones
 * from.  Writeback notes a cluster each time it writes one block by
 * block; the mount's scan of the tree notes those an earlier mount left.
 * A table in memory, bounded: past CZFS_COLD_MAX entries a note is
 * dropped and the map says so (czfs_cold_overflowed), and the worker
 * scans the tree again once the map has room: the tree is the truth,
 * this only its index.
 *
 * Threads: any; one mutex.
 */
#ifndef CZFS_FUSE_COLDMAP_H
#define CZFS_FUSE_COLDMAP_H

#include <stdbool.h>
#include <stdint.h>

#define CZFS_COLD_MAX	(1u << 20)	/* entries: 24 MiB */
/* Not a cluster: the file's slices in runs less than half live are to be
 * moved out (a rewrite left a run so: czfs_run_underused).  Sorts after
 * the file's clusters. */
#define CZFS_COLD_RUNS	UINT64_MAX

struct czfs_coldmap;

struct czfs_cold_ref {
	uint64_t ino, idx;
	uint32_t when;			/* seconds of czfs_cold_now */
};

/* The map's clock: monotonic seconds, from 1. */
uint32_t czfs_cold_now(void);

int czfs_cold_create(struct czfs_coldmap **out);
void czfs_cold_destroy(struct czfs_coldmap *cm);	/* accepts NULL */

/* Cluster idx of ino was written block by block at when (again: the
 * later time counts). */
void czfs_cold_note(struct czfs_coldmap *cm, uint64_t ino, uint64_t idx,
		    uint32_t when);

/*
 * Take out up to max entries last written before `before` into out,
 * sorted by inode and index: how many.  The caller notes again those it
 * could not recompress, and says when it is done with them.
 */
unsigned czfs_cold_take(struct czfs_coldmap *cm, uint32_t before,
			struct czfs_cold_ref *out, unsigned max);
void czfs_cold_done(struct czfs_coldmap *cm, unsigned n);

/* Entries in the map, and those taken and not yet done: what is pending
 * (recompress.pending is 0 only once the last batch is written back). */
uint64_t czfs_cold_count(struct czfs_coldmap *cm);

/* Whether a note was dropped since the last call (which clears it). */
bool czfs_cold_overflowed(struct czfs_coldmap *cm);

#endif /* CZFS_FUSE_COLDMAP_H */
