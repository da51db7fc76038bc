/* SPDX-License-Identifier: MIT */
/*
 * Directories.  Entries live in DENTRY items keyed (dir, DENTRY,
 * name_hash): a lookup is one B-tree search, whatever the directory size.
 * readdir walks the items in hash order; a position (cookie) is
 * ((hash + 1) << 8 | index within the item), so it survives inserts and
 * deletes of other names.  Cookies 1 and 2 are "." and "..".
 */
#ifndef CZFS_DIR_H
#define CZFS_DIR_H

#include <stddef.h>
#include <stdint.h>

struct czfs_fs;

struct czfs_dirent {
	uint64_t ino;
	unsigned type;			/* DT_* */
	unsigned name_len;
	const char *name;		/* not NUL-terminated, borrowed */
};

/*
 * Walk the records of one DENTRY item: *pos starts at 0.  Returns 1 with
 * *de filled, 0 at the end, -EFSCORRUPTED for a malformed record (name_len
 * 0 or > 255, record past the end, ino 0 or > CZFS_MAX_INO, type > 15).
 */
int czfs_dentry_next(const void *val, unsigned len, unsigned *pos,
		     struct czfs_dirent *de);
/* The same for czfs_rec_find (hash.h): records of struct czfs_dirent. */
struct czfs_rec_kind;
extern const struct czfs_rec_kind czfs_dentry_recs;

/* Append one record to dst; returns its size (12 + name_len). */
unsigned czfs_dentry_encode(void *dst, uint64_t ino, unsigned type,
			    const char *name, unsigned name_len);

/*
 * Look name up in directory dir (whose inode the caller has checked is a
 * directory).  Returns 0 with *ino and *type, -ENOENT, -ENAMETOOLONG,
 * -EFSCORRUPTED, or -EIO.  Caller holds fs->lock shared.
 */
int czfs_dir_lookup(struct czfs_fs *fs, uint64_t dir, const char *name,
		    size_t name_len, uint64_t *ino, unsigned *type);

/*
 * Call fn for each entry of dir (not "." or "..") from position cookie
 * (0, 1 or 2: from the start).  next is the cookie of the entry after this
 * one.  fn returns 0 to go on or non-zero to stop.  Returns 0 or -errno.
 */
typedef int (*czfs_filldir_fn)(void *ctx, const struct czfs_dirent *de,
			       uint64_t next);
int czfs_dir_iterate(struct czfs_fs *fs, uint64_t dir, uint64_t cookie,
		     czfs_filldir_fn fn, void *ctx);

/*
 * Changes, inside a transaction (czfs_fs_begin; fs->lock held exclusive).
 * They change the entries only: link counts, sizes and times of the
 * inodes are the caller's.
 *
 * czfs_dir_link: add name -> ino; -EEXIST, -ENAMETOOLONG, -EINVAL (empty,
 * '/' or NUL in it), -ENOSPC.  czfs_dir_unlink: remove name, returning
 * what it named; -ENOENT.  czfs_dir_is_empty: 1, 0 or -errno.
 */
int czfs_dir_link(struct czfs_fs *fs, uint64_t dir, const char *name,
		  size_t len, uint64_t ino, unsigned type);
int czfs_dir_unlink(struct czfs_fs *fs, uint64_t dir, const char *name,
		    size_t len, uint64_t *ino, unsigned *type);
int czfs_dir_is_empty(struct czfs_fs *fs, uint64_t dir);

#define CZFS_DIR_COOKIE_DOT	1
#define CZFS_DIR_COOKIE_DOTDOT	2
#define CZFS_DIR_COOKIE_FIRST	3

#endif /* CZFS_DIR_H */
