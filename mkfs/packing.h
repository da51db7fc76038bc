/* SPDX-License-Identifier: MIT */
/*
 * Packing small files and tails (INCOMPAT_PACKED).  The reader takes the
 * inodes in windows: every regular file whose last cluster is partial (a
 * small file, or a bigger file's tail) is a member; the members' tails are
 * read, in --sort order, into packs of up to pack_max bytes, each a ring
 * chunk of its own, sent before any other chunk of the window's inodes.
 * A tail equal to one packed before (a SipHash-128 of its bytes, taken
 * only of tails whose length another member has) points at that one's
 * range instead.  The consumer writes each pack once and
 * gives each member inode its PACKED cluster item; the PACK items, with
 * the references counted, go last.
 */
#ifndef MKFS_PACKING_H
#define MKFS_PACKING_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "pack.h"

struct mk_inode;
struct mk_tree;

enum mk_sort {
	MK_SORT_PATH,			/* inode order: directory by directory */
	MK_SORT_EXT,			/* by extension, then path, in windows */
};

struct mk_pack_opts {
	bool enabled;
	enum mk_sort sort;
	unsigned pack_max;		/* decoded bytes per pack, <= 256 KiB */
	bool dedup;
};

/* One member's tail: where it lies (pack seq, offset), its cluster. */
struct mk_member {
	uint64_t ino;
	uint64_t index;			/* its cluster number */
	uint64_t seq;			/* the pack holding its bytes */
	uint32_t off, len;
	bool copy;			/* of bytes placed before */
};

/* ---- the reader's side ---------------------------------------------------- */

struct mk_packer;

/*
 * A packer for the members of tree t (which it reads only here, to learn
 * which tail lengths repeat).  0 or -ENOMEM.
 */
int mk_packer_new(const struct mk_pack_opts *o, unsigned cbytes,
		  const struct mk_tree *t, struct mk_packer **out);
void mk_packer_free(struct mk_packer *pk);

/* Bytes of ip's tail that a pack takes, 0 if it is no member. */
unsigned mk_pack_tail(const struct mk_packer *pk, const struct mk_inode *ip);

/*
 * The window starting at t->inodes[first] (a member): *end is the index
 * one past its last inode; *members its members in pack order.  0 or
 * -ENOMEM.  The array is the packer's, valid until the next call.
 */
int mk_pack_window(struct mk_packer *pk, const struct mk_tree *t,
		   uint64_t first, uint64_t *end, const struct mk_inode ***members,
		   unsigned *n);

/*
 * Place len bytes (at data) of a member: a copy of bytes placed before
 * returns 1 and sets m's seq and off to theirs; new bytes return 0 (the
 * caller appends them to pack seq at off, as it set m).
 */
int mk_pack_place(struct mk_packer *pk, const void *data, struct mk_member *m);

/* ---- the consumer's side -------------------------------------------------- */

struct mk_packs;

struct mk_pack_stats {
	uint64_t packs, blocks, bytes;	/* packs written (blocks: of those
					 * stored on their own) */
	uint64_t sliced, slice_bytes;	/* of which in runs, their payload */
	uint64_t members, member_bytes;	/* clusters packed */
	uint64_t dedup, dedup_bytes;	/* of which copies */
	uint64_t alone_blocks;		/* what the members would take as
					 * extents on their own, at most */
	uint64_t copies, copy_bytes;	/* whole files shared (copies.h) */
};

int mk_packs_new(struct mk_packs **out);
void mk_packs_free(struct mk_packs *ps);

/*
 * A pack written at ci->blkaddr (stored as ci: RAW or COMPRESSED; NULL for
 * a chunk holding only copies), or placed in a run (a SLICE; tag != 0
 * while its addresses are relative to a run not yet written, which
 * mk_packs_resolve makes absolute), with its members; a new window drops
 * the members of the one before.  0 or -ENOMEM.
 */
int mk_packs_add(struct mk_packs *ps, uint64_t seq,
		 const struct czfs_cluster_info *ci, uint64_t tag,
		 const struct mk_member *m, unsigned n, bool new_window);

/*
 * The PACKED cluster of inode ino, if it is a member of the window:
 * returns true and fills *index and *ci, counting the reference; *tag is
 * its pack's (its addresses then relative to that run).
 */
bool mk_packs_member(struct mk_packs *ps, uint64_t ino, uint64_t *index,
		     struct czfs_cluster_info *ci, uint64_t *tag);

/*
 * Once every run is written: each sliced pack's addresses made absolute,
 * base_of giving its tag's run (false: none, -EINVAL).  0 or -EINVAL.
 */
int mk_packs_resolve(struct mk_packs *ps,
		     bool (*base_of)(void *arg, uint64_t tag, uint64_t *base),
		     void *arg);

/*
 * Whole copies (copies.h): cluster index of the copied file ino, stored
 * (RAW or COMPRESSED at ci->blkaddr), becomes a pack of its own; *packed
 * is the PACKED cluster that ino (and each copy) has instead.  Calls must
 * come in inode and index order.  0 or -ENOMEM.
 */
int mk_packs_share(struct mk_packs *ps, uint64_t ino, uint64_t index,
		   const struct czfs_cluster_info *ci,
		   struct czfs_cluster_info *packed);

/*
 * The clusters a copy of the copied file ino shares, in index order,
 * through add (each counted as a reference).  0 or the first error.
 */
int mk_packs_copy(struct mk_packs *ps, uint64_t ino,
		  int (*add)(void *arg, uint64_t index,
			     const struct czfs_cluster_info *ci), void *arg);

/* A run of slices written (runs.h), its PACK item as it is.  0 or
 * -ENOMEM. */
int mk_packs_run(struct mk_packs *ps, const struct czfs_pack_info *run);

/* Each pack's and run's PACK item in key order (sliced packs last),
 * through add (0 or -errno). */
int mk_packs_emit(struct mk_packs *ps,
		  int (*add)(void *arg, uint64_t key, const void *val,
			     unsigned len), void *arg);

void mk_packs_stats(const struct mk_packs *ps, struct mk_pack_stats *st);

#endif /* MKFS_PACKING_H */
