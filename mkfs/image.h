/* SPDX-License-Identifier: MIT */
/*
 * Writing the image.  Layout, in allocation order (so reads are sequential
 * and two runs give the same bytes): file data and large xattr values in
 * inode order from block 3, then the B-tree (leaves, then upper levels),
 * then the space map; checkpoint 1 in slot 1; the superblock last.
 */
#ifndef MKFS_IMAGE_H
#define MKFS_IMAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "btree.h"
#include "packing.h"
#include "runs.h"

struct czfs_bdev;
struct mk_pipe;
struct mk_progress;
struct mk_tree;

struct mk_image_opts {
	unsigned alg;			/* CZFS_ALG_* for every inode */
	int level;
	unsigned cluster_shift;
	uint64_t size_blocks;		/* the size limit, 0 = content size */
	bool sparse;			/* file length = size_blocks (no -d) */
	bool grow;			/* no fixed limit: COMPAT_GROW */
	bool slices;			/* compressed clusters in runs (runs.h) */
	bool leaf_packs;		/* leaves compressed in leaf packs */
	uint8_t uuid[16];
	char label[65];
	bool fixed_time;		/* every time = create_time */
	struct timespec create_time;
};

struct mk_image_stats {
	uint64_t image_blocks;		/* the image file's length in blocks */
	uint64_t need_blocks;		/* -ENOSPC: what the content needs */
	uint64_t read_bytes;		/* read from the files (mk_pipe) */
	bool reported;			/* the error's message was printed */
	struct mk_pack_stats pack;	/* what packing did */
	struct mk_run_stats runs;	/* what runs of slices did */
	struct czfs_btree_build_stats tree;	/* leaves and leaf packs */
};

/*
 * Write the image of t to bdev, consuming the chunks of p, and stop p
 * (always).  Returns 0; -ENOSPC when the content does not fit
 * o->size_blocks (st->need_blocks tells how much it needs); or -errno
 * (an I/O error, a reader error already printed by p, -ENOMEM).
 */
int mk_image_write(struct czfs_bdev *bdev, const struct mk_tree *t,
		   struct mk_pipe *p, const struct mk_image_opts *o,
		   struct mk_progress *pr, struct mk_image_stats *st);

#endif /* MKFS_IMAGE_H */
