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
struct czfs_cluster_policy;
struct czfs_codec;
struct czfs_fs;

/* A decoded, validated PACK item. */
struct czfs_pack_info {
	uint64_t blkaddr;		/* the key's offset; a sliced pack's:
					 * its first block */
	uint32_t refs;			/* PACKED items pointing at it */
	unsigned alg;
	unsigned nblocks;
	uint32_t ulen;			/* a run's: bytes its slices use */
	uint32_t checksum;
	bool run;			/* CZFS_PACK_RUN: of SLICE clusters */
	uint32_t live;			/* a run's: payload bytes still in it */
	bool sliced;			/* CZFS_PACK_SLICED: a slice of a run */
	unsigned slice_off;		/* a sliced pack's: start in blkaddr */
	uint32_t clen;			/* a sliced pack's payload bytes */
	uint64_t run_at;		/* a sliced pack's run */
};

/* The key offset of p's PACK item. */
static inline uint64_t czfs_pack_key(const struct czfs_pack_info *p)
{
	return p->sliced ? CZFS_PACK_SLICED_KEY(p->blkaddr, p->slice_off) :
	       p->blkaddr;
}

/* A run less than half live: recompression moves its slices out. */
static inline bool czfs_run_underused(const struct czfs_pack_info *p)
{
	return p->run && (uint64_t)p->live * 2 < p->ulen;
}

/*
 * Decode the PACK item at key offset key (len bytes of val).  Checks its
 * size, refs >= 1, alg <= CZFS_ALG_MAX, nblocks 1..64 inside max_blocks
 * from CZFS_FIRST_DATA_BLKADDR, ulen 1..CZFS_PACK_MAX_ULEN, reserved
 * fields; a run: alg 0, nblocks 1..255 = the blocks ulen takes, live
 * 1..ulen; a sliced pack (a key with CZFS_PACK_SLICED_BIT, and only
 * then the flag): alg 1.., clen 1.., nblocks the blocks it touches, its
 * run inside the image and CZFS_RUN_MAX_BLOCKS.  Returns 0 or
 * -EFSCORRUPTED with a log line.
 */
int czfs_pack_item_decode(uint64_t key, const void *val, unsigned len,
			  uint64_t max_blocks, struct czfs_pack_info *p);

/* Encode p into val (sizeof(struct czfs_pack) bytes); returns the size. */
unsigned czfs_pack_item_encode(const struct czfs_pack_info *p, void *val);

/* The pack a PACKED cluster describes, with refs = 1 (sliced or not). */
void czfs_pack_of_cluster(const struct czfs_cluster_info *ci,
			  struct czfs_pack_info *p);

/* Whether a PACKED cluster's description of its pack agrees with p; a
 * SLICE's: p is its run and holds its payload. */
bool czfs_pack_matches(const struct czfs_pack_info *p,
		       const struct czfs_cluster_info *ci);

/*
 * The PACK item at key offset key, decoded into *p (fs->lock held, either
 * way).  Returns 0, -ENOENT when there is none, -EFSCORRUPTED when it does
 * not decode, or -errno of the tree.
 */
int czfs_pack_get(struct czfs_fs *fs, uint64_t key, struct czfs_pack_info *p);

/*
 * Drop one reference of the pack or run at key offset key (inside a
 * transaction, fs->lock held exclusive), a run's live bytes by bytes (the
 * slice's payload): the last one deletes the PACK item and frees its
 * blocks, adding them to *freed_blocks; a sliced pack's last drops its
 * reference of its run instead.  Returns 0, 1 when a run is left less
 * than half live (czfs_run_underused), -EFSCORRUPTED when there is no
 * such pack (logged), or -errno of the tree.
 */
int czfs_pack_unref(struct czfs_fs *fs, uint64_t key, uint32_t bytes,
		    uint64_t *freed_blocks);

/*
 * The rule both mkfs and the daemon pack by: the bytes of a file of size
 * bytes (clusters of cbytes) that go into a pack, its partial last
 * cluster, or 0 when it has none or it is longer than pack_max.
 */
unsigned czfs_pack_tail(uint64_t size, unsigned cbytes, unsigned pack_max);

/*
 * Encode a pack: len (1..CZFS_PACK_MAX_ULEN) bytes of its members' data
 * at src, as czfs_cluster_encode does under pol, but never a hole nor
 * inline (a pack is always an extent).  Same returns and buffers.
 */
int czfs_pack_encode(struct czfs_codec *codec,
		     const struct czfs_cluster_policy *pol, const void *src,
		     unsigned len, void *out, struct czfs_cluster_info *ci,
		     unsigned *out_len);

/* The PACK item of the pack czfs_pack_encode stored as stored (its
 * blkaddr set; a SLICE in a run: a sliced pack), with refs references. */
void czfs_pack_of_stored(const struct czfs_cluster_info *stored,
			 uint32_t refs, struct czfs_pack_info *p);

/*
 * Insert the PACK item p, or replace the one at p->blkaddr (inside a
 * transaction, fs->lock held exclusive).  0 or -errno of the tree.
 */
int czfs_pack_put(struct czfs_fs *fs, const struct czfs_pack_info *p);

/*
 * A link of p's clusters failed part way (inside the transaction that put
 * p): its item counts the linked ones, or goes when there is none (its
 * blocks are the caller's to free then).  0 or -errno, logged.
 */
int czfs_pack_settle(struct czfs_fs *fs, struct czfs_pack_info *p,
		     unsigned linked);

/* The key offset of the pack or run a CLUSTER item value points into, or
 * 0 (not PACKED nor SLICE, damaged); *bytes: a slice's payload bytes,
 * else 0. */
uint64_t czfs_cluster_item_pack(const void *val, unsigned len,
				uint32_t *bytes);

#endif /* CZFS_PACK_H */
