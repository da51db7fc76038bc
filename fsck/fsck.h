/* SPDX-License-Identifier: MIT */
/*
 * fsck.czfs: the state of one check.
 *
 *   main.c      options, exit codes
 *   check.c     the passes in order, the context's life
 *   open.c      opening the image whatever state its space map is in
 *   walk.c      every node of the B-tree, with key bounds and generations
 *   items.c     every item: inodes, entries, xattrs, clusters and data
 *   links.c     link counts, reachability, directory structure, counters
 *   space.c     blocks referenced against the space map
 *   packs.c     shared packs: PACKED clusters against PACK items
 *   repair.c    the safe repairs, in one transaction
 *   extract.c   --extract, --tar: the tree written out with its metadata
 *   extract_tar.c  --tar: the walk's inodes as PAX members
 *   report.c    problem messages and counts; progress line
 */
#ifndef FSCK_FSCK_H
#define FSCK_FSCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "btree.h"
#include "fs.h"
#include "inode.h"
#include "log.h"
#include "spacemap.h"

struct czfs_codec;

/* e2fsck's exit codes. */
#define FSCK_OK			0
#define FSCK_FIXED		1
#define FSCK_UNCORRECTED	4
#define FSCK_OPERATIONAL	8

struct fsck_opts {
	const char *image;
	const char *extract;		/* --extract DIR, or NULL */
	const char *tar;		/* --tar FILE ("-": stdout), or NULL */
	int tar_fd;			/* where --tar writes */
	bool repair;			/* -y / -p */
	bool trim;			/* --trim: punch the free ranges */
	uint64_t grow_blocks;		/* --grow: the new limit, 0 = none */
	bool fast;			/* --fast: no cluster data */
	bool quiet;			/* no summary */
	bool silent;			/* no messages at all (fuzzing) */
	bool progress;			/* stderr is a terminal */
};

/* fsck_inode.flags */
#define FI_BAD		0x01	/* its INODE item does not decode */
#define FI_ORPHAN	0x02	/* an ORPHAN item names it */
#define FI_REACHED	0x04	/* reachable from the root */
#define FI_ATTACH	0x08	/* goes into lost+found */
#define FI_BAD_ENTRIES	0x10	/* an entry item of it does not parse */
#define FI_TAIL		0x20	/* clusters wholly past its end (tail_*) */
#define FI_BAD_CLUSTER	0x40	/* a cluster item damaged or its blocks shared */

/* What the walk learned about one inode (one per INODE item, by ino). */
struct fsck_inode {
	uint64_t ino;
	uint64_t parent;		/* dirs: the field */
	uint64_t named_by;		/* the first directory naming it */
	uint64_t nentries;		/* dirs: the field */
	uint64_t entries;		/* dirs: records found */
	uint64_t blocks;		/* the field */
	uint64_t blocks_found;		/* cluster and xattr value blocks */
	uint64_t inline_bytes;		/* the field */
	uint64_t inline_found;		/* inline cluster payload bytes */
	uint64_t prealloc;		/* the field */
	uint64_t prealloc_found;	/* blocks its RESERVED clusters promise */
	uint32_t mode, nlink;
	uint32_t links;			/* entries naming it */
	uint32_t subdirs;		/* dirs: entries naming directories */
	uint32_t tail_count;		/* clusters wholly past the end */
	uint64_t tail_from;		/* the first of them */
	uint8_t flags;
};

/* One directory entry: dir names ino (with DT_* type). */
struct fsck_edge {
	uint64_t dir, ino;
	unsigned type;
};

/* Inode fields a repair rewrites (fsck_fix.what). */
#define FIX_NLINK	0x01
#define FIX_PARENT	0x02	/* parent 0: the lost+found directory */
#define FIX_NENTRIES	0x04
#define FIX_BLOCKS	0x08
#define FIX_ATTACH	0x10	/* link into lost+found as "#ino" */
#define FIX_UNORPHAN	0x20	/* delete its ORPHAN item */
#define FIX_TAIL	0x40	/* drop its clusters from tail_from on */

struct fsck_fix {
	uint64_t ino;
	unsigned what;
	uint32_t nlink;
	uint64_t parent, nentries, blocks, inline_bytes, prealloc;
	uint64_t tail_from;
	bool is_dir;
};

struct fsck_range {
	uint64_t start, n;
};

/* A growable array of fixed-size elements. */
struct fsck_vec {
	void *v;
	size_t n, cap, size;
};

struct fsck_ctx {
	struct fsck_opts o;
	struct czfs_fs *fs;
	struct czfs_smap *smap;		/* &fs->smap, &own_smap or NULL */
	struct czfs_smap own_smap;
	struct czfs_codec *codec;
	void *scratch, *data;		/* CZFS_MAX_CLUSTER_SIZE each */
	uint64_t max_blocks, image_blocks;

	/* the walk */
	struct fsck_vec inodes;		/* struct fsck_inode, by ino */
	struct fsck_vec edges;		/* struct fsck_edge, by dir */
	struct fsck_vec orphans;	/* uint64_t inos of ORPHAN items */
	uint64_t *ref;			/* a bit per block referenced */
	uint64_t nodes, leaves;
	/* Leaf packs: the one the walk is in (its leaves come in a row
	 * under one parent) and the index its next leaf must have. */
	uint64_t lp_base;
	unsigned lp_next;
	uint64_t leaf_packs, packed_leaves;
	uint64_t items, clusters, data_blocks;
	uint64_t cur_objectid;		/* of the item before */
	struct fsck_inode *cur;		/* its inode, NULL if none */
	struct czfs_inode_info cur_ii;	/* valid when cur_ok */
	bool cur_ok;
	unsigned cur_said;		/* messages given for it (items.c) */
	uint32_t incompat_used;		/* features clusters and inodes need */
	uint64_t prealloc_found;	/* blocks all RESERVED clusters promise */
	bool prealloc_unknown;		/* a damaged cluster item may be one */
	struct fsck_pack *packs;	/* packs.c: a table by blkaddr */
	size_t packs_cap, packs_n;
	struct fsck_vec pack_fixes;	/* packs.c: PACK items to write */

	/* problems found, and the plan to repair them */
	unsigned long errors;		/* cannot be repaired */
	unsigned long fixable;
	unsigned long fixed;
	unsigned long unfixed;		/* fixable, but the repair could not */
	unsigned long shown;		/* messages printed */
	bool walk_incomplete;		/* a subtree could not be read */
	bool refs_incomplete;		/* an item's blocks are unknown */
	bool refs_shared;		/* a block has two owners */
	struct fsck_vec fixes;		/* struct fsck_fix */
	struct fsck_vec leaked;		/* struct fsck_range */
	struct fsck_vec unmarked;	/* struct fsck_range */
	bool fix_inode_count, fix_next_ino, fix_prealloc;
	uint64_t want_inode_count, want_next_ino, want_prealloc;
	bool used_count_fixed;		/* rewritten at open */
	unsigned long inline_upgrade;	/* -y sets their inline_bytes (an
					 * image without INLINE_BYTES) */

	/* progress */
	bool pr_drawn;
	uint64_t pr_done;
	struct timespec pr_last;
};

/* ---- check.c ----------------------------------------------------------- */

/* Buffers and arrays for a check of c->fs (opened by the caller). */
int fsck_ctx_init(struct fsck_ctx *c);
void fsck_ctx_free(struct fsck_ctx *c);

/*
 * Check c->fs (c->smap may be NULL: no space-map cross-check): the walk,
 * then links and directories, then space.  Problems are counted in c.
 * Returns 0 or -errno for an operational error (I/O, memory).
 */
int fsck_check(struct fsck_ctx *c);

/* ---- report.c ---------------------------------------------------------- */

/* A problem no repair touches (exit 4). */
void fsck_error(struct fsck_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A problem -y repairs (exit 4 with -n, 1 once repaired). */
void fsck_fixable(struct fsck_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Worth saying; not a problem. */
void fsck_warn(struct fsck_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void fsck_note(struct fsck_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The library's messages: "fsck.czfs: ..." on stderr, each said once;
 * muted while open.c probes a damaged space map. */
void fsck_log_sink(enum czfs_log_level level, const char *msg);
void fsck_log_mute(bool mute);

/* name as printable text in buf (CZFS_NAME_MAX + 1 bytes): '?' for the
 * bytes a terminal would not show. */
const char *fsck_name(const char *name, unsigned len, char *buf);

/* Count work done (blocks) and redraw the progress line now and then. */
void fsck_progress(struct fsck_ctx *c, uint64_t blocks);
void fsck_progress_end(struct fsck_ctx *c);

/* Append one element (copied from elem); NULL on ENOMEM. */
void *fsck_vec_push(struct fsck_vec *vec, const void *elem);
void fsck_vec_free(struct fsck_vec *vec);
#define FSCK_VEC(type)	((struct fsck_vec){ .size = sizeof(type) })
#define fsck_vec_at(vec, type, i)	(&((type *)(vec)->v)[i])

/* ---- open.c ------------------------------------------------------------ */

/*
 * Open o.image locked exclusively: writable with repair, else read-only.
 * A space map that does not load is diagnosed: a wrong used count alone
 * is a fixable problem (repaired here, before anything else, when
 * repairing); other damage leaves c->smap NULL.  Returns 0, or -errno
 * after a message (-EFSCORRUPTED: the image cannot be checked at all).
 */
int fsck_open(struct fsck_ctx *c);
void fsck_close(struct fsck_ctx *c);

/* Both checkpoint slots: a bad one beside the current is a warning. */
void fsck_check_slots(struct fsck_ctx *c);

/* ---- walk.c, items.c --------------------------------------------------- */

/* Walk the whole tree, checking every node and item.  0 or -errno (I/O). */
int fsck_walk(struct fsck_ctx *c);

/* One leaf item, in key order.  0 or -errno for an operational error. */
int fsck_item(struct fsck_ctx *c, const struct czfs_key *key,
	      const void *val, unsigned len);

/* The fsck_inode for ino, or NULL. */
struct fsck_inode *fsck_inode_find(struct fsck_ctx *c, uint64_t ino);

/* ---- links.c ----------------------------------------------------------- */

/* Links, reachability, directories, counters; plans repairs. */
int fsck_check_links(struct fsck_ctx *c);

/* ---- space.c ----------------------------------------------------------- */

/*
 * Mark n blocks from start referenced by what (of inode ino, 0 if none).
 * Out of the image or referenced before: an error.  Returns true if the
 * range was new and valid.
 */
bool fsck_ref(struct fsck_ctx *c, uint64_t start, uint64_t n,
	      const char *what, uint64_t ino);

/* Allocate the reference map and mark blocks 0-2 and the map's blocks. */
int fsck_space_init(struct fsck_ctx *c);

/* Compare references with the space map; plan leaked/unmarked repairs. */
void fsck_check_space(struct fsck_ctx *c);

/* ---- packs.c ----------------------------------------------------------- */

struct czfs_cluster_info;
/* A PACKED or SLICE cluster of ino: count it against its pack or run.
 * 0 or -ENOMEM. */
int fsck_pack_cluster(struct fsck_ctx *c, uint64_t ino, uint64_t idx,
		      const struct czfs_cluster_info *ci);
/* A PACK item (after every cluster, in key order).  0 or -ENOMEM. */
int fsck_pack_item(struct fsck_ctx *c, const struct czfs_key *key,
		   const void *val, unsigned len);
/* After the walk: packs used without a PACK item; the plan dropped (and
 * unused PACK items' blocks kept in use) if the counts are doubtful.
 * 0 or -ENOMEM. */
int fsck_packs_finish(struct fsck_ctx *c);
/* The size of a planned repair, for c->pack_fixes. */
size_t fsck_pack_fix_size(void);
/* -y: write or delete the planned PACK items (inside the repair's
 * transaction; a deleted item's blocks are freed as leaked before). */
int fsck_repair_packs(struct fsck_ctx *c);

/* ---- repair.c ---------------------------------------------------------- */

/* Apply the planned repairs in one transaction.  0 or -errno. */
int fsck_repair(struct fsck_ctx *c);

/* Write a checkpoint with the space map's true used count (open.c). */
int fsck_rewrite_used(const char *image, uint64_t used);

/* ---- extract.c --------------------------------------------------------- */

/* Write the tree out under dir.  Returns 0, 1 if some files were damaged,
 * or -errno for an error writing the output. */
int fsck_extract(struct fsck_ctx *c, const char *dir);

/* The tree as a PAX stream written to fd (left open), by the same walk
 * (extract_tar.c): xattrs, ACLs, hard links, sparse maps.  Returns as
 * fsck_extract. */
int fsck_tar(struct fsck_ctx *c, int fd);

/*
 * After the repairs (-y) of an image without the INLINE_BYTES feature and
 * with nothing left unrepaired: set the feature (every inode's
 * inline_bytes is exact now).  0 or -errno.
 */
int fsck_upgrade_inline(struct fsck_ctx *c);

/* ---- tune.c: after a clean check --------------------------------------- */

/* --trim: punch every free block range out of the image file. 0/-errno. */
int fsck_trim(struct fsck_ctx *c);
/* --grow: raise fs's size limit to c->o.grow_blocks.  0 or -errno. */
int fsck_grow(struct czfs_fs *fs, struct fsck_ctx *c);

#endif /* FSCK_FSCK_H */
