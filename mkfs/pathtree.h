/* SPDX-License-Identifier: MIT */
/*
 * A tree (scan.h) built from paths in any order, as an archive names its
 * members: a map from each path to its entry, the directories a path
 * implies made on the way, a later name replacing an earlier one, and at
 * the end the same numbering as a scanned directory's (breadth-first,
 * entries sorted by name), so that the image does not depend on the order
 * of the members.
 */
#ifndef MKFS_PATHTREE_H
#define MKFS_PATHTREE_H

struct mk_tree;
struct mk_inode;
struct mk_pathtree;

/*
 * A path tree filling t (empty) whose root is a copy of tmpl's metadata,
 * as are the directories made on the way.  0 or -ENOMEM.
 */
int mk_pt_new(struct mk_tree *t, const struct mk_inode *tmpl,
	      struct mk_pathtree **out);

/* A new, zeroed inode the tree owns.  NULL when out of memory. */
struct mk_inode *mk_pt_inode(struct mk_pathtree *pt);

/*
 * The inode named by path ("" is the root; no '.', '..' or empty
 * components: callers clean paths), or NULL.
 */
struct mk_inode *mk_pt_get(struct mk_pathtree *pt, const char *path);

/*
 * The directory at path, made with its parents if missing.  Returns 0,
 * -ENOTDIR when path or a parent names something else, -ENOMEM.
 */
int mk_pt_dir(struct mk_pathtree *pt, const char *path,
	      struct mk_inode **out);

/*
 * Name ip at path (not ""), making missing parents; ip's mode must be set.
 * A non-directory already there is replaced (its inode dropped unless
 * named elsewhere); a directory stays, and *at is the inode path names
 * afterwards: ip, or the directory already there when ip is one too.
 * Returns 0, -ENOTDIR (a parent is not a directory), -EISDIR (a
 * directory there, ip is not one), -EEXIST (ip is a directory, something
 * else is there), -ENOMEM.
 */
int mk_pt_link(struct mk_pathtree *pt, const char *path,
	       struct mk_inode *ip, struct mk_inode **at);

/*
 * Number the tree's inodes into t (nlink, parent, totals), free the
 * inodes no path names, and free pt.  0, or -EOVERFLOW / -ENOMEM, and
 * then t holds nothing.
 */
int mk_pt_finish(struct mk_pathtree *pt);

/* Free pt and every inode it made (after a failure). */
void mk_pt_free(struct mk_pathtree *pt);

#endif /* MKFS_PATHTREE_H */
