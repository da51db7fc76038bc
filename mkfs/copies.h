/* SPDX-License-Identifier: MIT */
/*
 * Whole copies: regular files of at least one cluster whose bytes equal
 * an earlier file's (as squashfs finds duplicates).  Files of one size are
 * hashed, and those whose hashes agree are compared byte for byte.  The
 * first of each set keeps its clusters in packs of one cluster each, which
 * the later ones share (packing.h); the later ones are never read again.
 */
#ifndef MKFS_COPIES_H
#define MKFS_COPIES_H

#include <stdint.h>

struct mk_tree;

struct mk_copies_stats {
	uint64_t files, bytes;		/* copies found, their sizes */
};

/*
 * Set copy_of and has_copies in t's regular files of cbytes or more that
 * are not sparse.  Returns 0, or -errno after printing a message naming
 * the file that could not be read.
 */
int mk_find_copies(struct mk_tree *t, unsigned cbytes,
		   struct mk_copies_stats *st);

#endif /* MKFS_COPIES_H */
