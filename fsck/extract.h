/* SPDX-License-Identifier: MIT */
/*
 * fsck.czfs --extract and --tar: one walk of the tree (extract.c) whose
 * inodes become files under a directory (extract.c) or the members of a
 * PAX stream (extract_tar.c).  Private to those two files.
 */
#ifndef FSCK_EXTRACT_H
#define FSCK_EXTRACT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fsck.h"

#define XT_BATCH	256	/* cluster indexes looked up at a time */

struct archive;
struct archive_entry;

/* Inode number -> the path it was first written to (hard links), or
 * NULL for directories (written once). */
struct xt_map {
	uint64_t *keys;
	char **paths;
	size_t cap, n;			/* cap: a power of two */
};

/* The walk's state. */
struct xt {
	struct fsck_ctx *c;
	struct czfs_fs *fs;
	char path[PATH_MAX];
	size_t plen;
	struct xt_map seen;
	unsigned long damaged;
	int out_err;			/* first error writing the output (errno) */
	bool cut;			/* the output takes nothing more */
	struct fsck_vec flagged;	/* struct xt_flags */
	uint8_t *buf;			/* a cluster, or an xattr value */
	struct archive *ar;		/* --tar: the stream, else NULL */
	uint8_t *zeros;			/* --tar: a cluster of them */
};

struct idx_batch {
	uint64_t idx[XT_BATCH];
	unsigned n;
};

/* ---- extract.c: the walk ---------------------------------------------- */

/* Walk the tree from the root into dir, or into the stream ar.  Returns
 * as fsck_extract. */
int xt_walk(struct fsck_ctx *c, const char *dir, struct archive *ar);

/* Damage met in the image: that file is skipped or incomplete. */
void xt_damaged(struct xt *x, uint64_t ino, const char *what, int err);

/* The output cannot be written as the image says (err: an errno). */
void xt_out_error(struct xt *x, const char *what, int err);

/* The next batch of ino's cluster indexes from next; 0 or -errno. */
int xt_next_clusters(struct xt *x, uint64_t ino, uint64_t next,
		     struct idx_batch *b);

/* Every xattr of ino to the output file at x->path, or to tar member e. */
void xt_xattrs(struct xt *x, uint64_t ino, struct archive_entry *e);

/* ---- extract_tar.c: the members --------------------------------------- */

/* A member for ii at x->path ("." is the root), its header written: a
 * symlink's target, or a hard link to an earlier member. */
void xt_tar_member(struct xt *x, const struct czfs_inode_info *ii,
		   const char *target, const char *hardlink);

/* A regular file's member: the header, then every byte. */
void xt_tar_file(struct xt *x, const struct czfs_inode_info *ii);

/* xattr name (len bytes at v) to member e: a POSIX ACL as SCHILY.acl,
 * any other as it is. */
void xt_tar_xattr(struct archive_entry *e, const char *name,
		  const uint8_t *v, size_t len);

#endif /* FSCK_EXTRACT_H */
