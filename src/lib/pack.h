/* SPDX-License-Identifier: MIT */
/*
 * Packs: the shared blobs of small files and tails that PACKED clusters
 * point into (INCOMPAT_PACKED), and the PACK items that own their blocks
 * and count the clusters that use them.
 */
#ifndef CZFS_PACK_H
#define CZFS_PACK_H

#include <stdbool.h>
#include <stdint.h>

#include "czfs_fs.h"

struct czfs_cluster_info;
struct czfs_fs;

/* A decoded, validated PACK item. */
struct czfs_pack_info {
	uint64_t blkaddr;		/* the key's offset */
	uint32_t refs;			/* PACKED items pointing at it */
	unsigned alg;
	unsigned nblocks;
	uint32_t ulen;
	uint32_t checksum;
};

/*
 * Decode the PACK item at blkaddr (len bytes of val).  Checks its size,
 * refs >= 1, alg <= CZFS_ALG_MAX, nblocks 1..64 inside max_blocks from
 * CZFS_FIRST_DATA_BLKADDR, ulen 1..CZFS_PACK_MAX_ULEN, reserved fields.
 * Returns 0 or -EFSCORRUPTED with a log line.
 */
int czfs_pack_item_decode(uint64_t blkaddr, const void *val, unsigned len,
			  uint64_t max_blocks, struct czfs_pack_info *p);

/* Encode p into val (sizeof(struct czfs_pack) bytes); returns the size. */
unsigned czfs_pack_item_encode(const struct czfs_pack_info *p, void *val);

/* The pack a PACKED cluster describes, with refs = 1. */
void czfs_pack_of_cluster(const struct czfs_cluster_info *ci,
			  struct czfs_pack_info *p);

/* Whether a PACKED cluster's description of its pack agrees with p. */
bool czfs_pack_matches(const struct czfs_pack_info *p,
		       const struct czfs_cluster_info *ci);

/*
 * Drop one reference of the pack at blkaddr (inside a transaction,
 * fs->lock held exclusive): the last one deletes the PACK item and frees
 * its blocks, adding them to *freed_blocks.  Returns 0, -EFSCORRUPTED when
 * there is no such pack (logged), or -errno of the tree.
 */
int czfs_pack_unref(struct czfs_fs *fs, uint64_t blkaddr,
		    uint64_t *freed_blocks);

/* The pack a CLUSTER item value points into, or 0 (not PACKED, damaged). */
uint64_t czfs_cluster_item_pack(const void *val, unsigned len);

#endif /* CZFS_PACK_H */
