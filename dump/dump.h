/* SPDX-License-Identifier: MIT */
/*
 * dump.czfs: show what an image holds.
 *
 *   main.c    options, opening, which parts to show
 *   show.c    superblock and both checkpoint slots
 *   inode.c   one inode: its fields, xattrs, cluster map, entries
 *   stats.c   image-wide statistics (compsize's table, metadata blocks)
 *   out.c     the same calls as text or JSON
 */
#ifndef DUMP_DUMP_H
#define DUMP_DUMP_H

#include <stdbool.h>
#include <stdint.h>

#include "fs.h"
#include "out.h"

struct dump_ctx {
	struct czfs_fs *fs;
	struct dout out;
	bool smap_loaded;		/* else the map's blocks are not known */
	unsigned long damage;		/* damaged structures met */
};

void dump_super(struct dump_ctx *d);
void dump_checkpoints(struct dump_ctx *d);

/* Inode ino with its xattrs, clusters or entries.  0 or -errno. */
int dump_inode(struct dump_ctx *d, uint64_t ino);

/* Walk every node and item; print the statistics.  0 or -errno. */
int dump_stats(struct dump_ctx *d);

#endif /* DUMP_DUMP_H */
