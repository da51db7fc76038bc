/* SPDX-License-Identifier: MIT */
/*
 * Extended attributes: XATTR items keyed (ino, XATTR, name_hash), values
 * up to 1 KiB inline, larger ones (to 64 KiB) in their own blocks.
 * Supported namespaces: user., trusted., security., system.
 */
#ifndef CZFS_XATTR_H
#define CZFS_XATTR_H

#include <stddef.h>
#include <stdint.h>

struct czfs_fs;

struct czfs_xattr {
	unsigned name_len;
	const char *name;		/* borrowed, not NUL-terminated */
	uint32_t value_len;
	const void *value;		/* inline value, or NULL if external */
	uint64_t blkaddr;		/* external value */
	uint32_t checksum;		/* external value */
};

/*
 * Walk the records of one XATTR item: *pos starts at 0.  Returns 1 with *x
 * filled, 0 at the end, -EFSCORRUPTED for a malformed record.
 */
int czfs_xattr_next(const void *val, unsigned len, unsigned *pos,
		    struct czfs_xattr *x);
/* The same for czfs_rec_find (hash.h): records of struct czfs_xattr. */
struct czfs_rec_kind;
extern const struct czfs_rec_kind czfs_xattr_recs;

/*
 * Append one record to dst: inline value if value_len <=
 * CZFS_XATTR_INLINE_MAX and blkaddr == 0, else an extent record.
 * Returns its size.
 */
unsigned czfs_xattr_encode(void *dst, const char *name, unsigned name_len,
			   const void *value, uint32_t value_len,
			   uint64_t blkaddr, uint32_t checksum);

/* True for names in a namespace czfs stores. */
int czfs_xattr_name_ok(const char *name, size_t len);

/*
 * getxattr: copy the value into buf when size > 0.  Returns the value
 * length, -ENODATA, -ERANGE (size > 0 but too small), -EFSCORRUPTED, -EIO.
 * Caller holds fs->lock shared.
 */
int czfs_xattr_get(struct czfs_fs *fs, uint64_t ino, const char *name,
		   void *buf, size_t size);

/*
 * listxattr: NUL-separated names into buf when size > 0.  Returns the
 * total length, -ERANGE, -EFSCORRUPTED, -EIO.  Caller holds fs->lock shared.
 */
int czfs_xattr_list(struct czfs_fs *fs, uint64_t ino, char *buf, size_t size);

/*
 * Changes, inside a transaction (fs->lock held exclusive).  flags:
 * XATTR_CREATE (-EEXIST if set), XATTR_REPLACE (-ENODATA if not).  A value
 * over CZFS_XATTR_INLINE_MAX goes to blocks of its own, written here.
 * Errors: -EOPNOTSUPP (namespace), -ERANGE (name too long), -E2BIG (value
 * over 64 KiB), -ENODATA, -EEXIST, -ENOSPC.  *blocks_delta gets the change
 * of the inode's block count.
 */
int czfs_xattr_set(struct czfs_fs *fs, uint64_t ino, const char *name,
		   const void *value, size_t size, int flags, int64_t *blocks_delta);
int czfs_xattr_remove(struct czfs_fs *fs, uint64_t ino, const char *name,
		      int64_t *blocks_delta);

#endif /* CZFS_XATTR_H */
