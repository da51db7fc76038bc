/* SPDX-License-Identifier: MIT */
/*
 * The source tree in memory: every inode of the image, numbered in
 * breadth-first order with each directory's entries sorted by name, so the
 * numbering does not depend on readdir order.  Two sources fill it: a
 * directory (mk_scan, its files read in place) and a tar stream (tar.h,
 * its file data spooled to one temporary file); mk_tree_open() hides which.
 */
#ifndef MKFS_SCAN_H
#define MKFS_SCAN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

struct mk_preenc;

struct mk_xattr {
	char *name;			/* NUL-terminated full name */
	unsigned name_len;
	void *value;
	uint32_t value_len;
};

struct mk_inode;

struct mk_dentry {
	char *name;			/* NUL-terminated */
	unsigned name_len;
	unsigned char type;		/* scan: readdir's d_type (DT_*) */
	struct mk_inode *inode;
};

struct mk_inode {
	uint64_t ino;
	uint32_t mode, nlink, uid, gid;
	uint64_t size;			/* reg: bytes; lnk: target length */
	struct timespec atime, mtime, ctime;
	uint32_t rdev_major, rdev_minor;
	uint32_t flags;			/* CZFS_INODE_* chattr flags */
	uint64_t parent;		/* directories */
	bool maybe_sparse;		/* fewer blocks allocated than size */
	/* copies.h: a file whose bytes equal an earlier one's, whose clusters
	 * it shares; and whether an earlier one has later copies */
	struct mk_inode *copy_of;
	bool has_copies;
	uint64_t data_off;		/* tar: where its bytes are (spool_base) */
	char *path;			/* dirs, regular files: relative path */
	char *target;			/* symlinks */
	struct mk_xattr *xattrs;
	unsigned nxattrs;
	struct mk_dentry *dents;	/* directories, sorted by name */
	unsigned ndents;
};

struct mk_tree {
	struct mk_inode **inodes;	/* inodes[i] has ino i + 1 */
	uint64_t count;
	uint64_t cap;
	int rootfd;			/* -1 for an empty tree or a tar */
	int datafd;			/* a tar's spooled file data, or -1 */
	int tarfd;			/* an uncompressed tar file, or -1 */
	uint64_t spool_base;		/* data_off below: in tarfd; from it
					 * on: in datafd (tar.h) */
	struct mk_preenc *pre;		/* a tar's clusters encoded, or NULL */
	const char *root;		/* the source directory, for messages */
	/* totals for progress and the summary */
	uint64_t nfiles, ndirs;
	uint64_t bytes;			/* sizes of files and symlink targets */
	uint64_t data_bytes;		/* bytes that will be read (no holes) */
};

struct mk_scan_opts {
	long long uid, gid;		/* forced owner, or -1 */
	bool exclude;			/* skip the inode below (the image) */
	dev_t exclude_dev;
	ino_t exclude_ino;
};

/*
 * Walk dir into t.  Returns 0, or -errno after printing a message naming
 * the path ("mkfs.czfs: DIR/x: Permission denied").
 */
int mk_scan(const char *dir, const struct mk_scan_opts *o, struct mk_tree *t);

/*
 * Open the bytes of regular file ip for pread: they start at *base in
 * the returned fd (close it after).  Returns the fd, or -errno.
 */
int mk_tree_open(const struct mk_tree *t, const struct mk_inode *ip,
		 uint64_t *base);

/* Give ip the next inode number of t.  0, -ENOMEM or -EOVERFLOW. */
int mk_tree_add(struct mk_tree *t, struct mk_inode *ip);

/*
 * Set xattr name of ip to a copy of value (len bytes, at most
 * CZFS_XATTR_SIZE_MAX), replacing one of that name.  0 or -ENOMEM.
 */
int mk_inode_set_xattr(struct mk_inode *ip, const char *name,
		       const void *value, uint32_t len);

/* Drop every xattr of ip. */
void mk_inode_clear_xattrs(struct mk_inode *ip);

/* Free ip and all it owns (not the inodes its entries name). */
void mk_inode_free(struct mk_inode *ip);

/* A tree holding only an empty root directory owned by uid:gid. */
int mk_tree_empty(uid_t uid, gid_t gid, struct mk_tree *t);

void mk_tree_free(struct mk_tree *t);

#endif /* MKFS_SCAN_H */
