/* SPDX-License-Identifier: MIT */
/*
 * Packing small files at writeback: the dirty small files of many inodes
 * (each one partial cluster 0, the rule mkfs packs by, czfs_pack_tail)
 * are concatenated in inode order, compressed together into one pack,
 * and linked in one transaction: each file's cluster item PACKED into it,
 * the PACK item with one reference per file.  The same format mkfs
 * writes.  writeback.c gathers the candidates, writes the pack's blocks
 * and finishes the members' dirty clusters; this file takes members,
 * encodes and links.
 */
#ifndef CZFS_WBPACK_H
#define CZFS_WBPACK_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"

struct czfs_daemon;
struct czfs_minode;
struct czfs_centry;

/* A file that may be packed, as it was when gathered. */
struct czfs_wbpack_cand {
	struct czfs_minode *mi;		/* held */
	uint64_t ino;
	unsigned alg;
	int level;
	uint32_t size;
};

/* A file taken into a pack: its wb_lock held, its dirty list ours. */
struct czfs_wbpack_member {
	struct czfs_minode *mi;
	struct czfs_centry *e;		/* its one dirty cluster */
	uint32_t seq;			/* e's write count when taken */
	uint32_t off, len;		/* its bytes in the pack */
	bool done;			/* its item points into the pack */
};

/* Members of one pack at most: files of 64 bytes on average fill it. */
#define CZFS_WBPACK_MEMBERS	(CZFS_PACK_MAX_ULEN / 64)

struct czfs_wbpack {
	struct czfs_wbpack_member m[CZFS_WBPACK_MEMBERS];
	unsigned n;
	unsigned alg;			/* the members' compression */
	int level;
	uint8_t *in, *out;		/* the members' bytes, the encoded pack */
	struct czfs_cluster_info stored;	/* the pack as stored */
	unsigned out_len;
};

/*
 * Whether mi's dirty data may go into a pack (mi->lock held): a regular
 * file, linked, with one dirty cluster, 0, holding all its 1..cbytes-1
 * bytes, compressed (not nocompress), without promised room, not written
 * with O_DIRECT since its open, and not all zeros (a hole takes no
 * space: unless zero detection is off); fills *c (c->mi not held).
 */
bool czfs_wbpack_fits(struct czfs_daemon *dm, struct czfs_minode *mi,
		      struct czfs_wbpack_cand *c);

/* Order candidates: by compression (one pack has one), then inode. */
int czfs_wbpack_cmp(const void *a, const void *b);

/* Buffers of a pack: 0 or -ENOMEM; free accepts a pack never set up. */
int czfs_wbpack_init(struct czfs_wbpack *pk);
void czfs_wbpack_free(struct czfs_wbpack *pk);

/*
 * Take members into pk from c[*i] on (pk emptied first), as many as one
 * pack holds, of c[*i]'s compression: each one's wb_lock is tried (a
 * file in writeback elsewhere is skipped), it is checked again, and its
 * dirty cluster taken off its list (the list's hold on mi comes with it).
 * *i moves past those looked at.
 */
void czfs_wbpack_take(struct czfs_daemon *dm, const struct czfs_wbpack_cand *c,
		      unsigned n, unsigned *i, struct czfs_wbpack *pk);

/* Concatenate the members' bytes and encode the pack into pk->out (no
 * lock held): 0 or -ENOMEM. */
int czfs_wbpack_encode(struct czfs_daemon *dm, struct czfs_wbpack *pk);

/*
 * In one transaction (takes fs->lock): the PACK item at pk->stored.blkaddr,
 * each member's cluster item PACKED into it (m->done) and its inode
 * stored.  On a failure the PACK item counts the members linked, and the
 * pack's blocks are freed when none is.  0 or -errno.
 */
int czfs_wbpack_link(struct czfs_daemon *dm, struct czfs_wbpack *pk);

#endif /* CZFS_WBPACK_H */
