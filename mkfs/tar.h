/* SPDX-License-Identifier: MIT */
/*
 * The tree from a tar stream (mkfs.czfs --tar), read once, in order,
 * through libarchive: ustar, GNU and PAX members (long names, xattrs,
 * POSIX ACLs, sparse files), gzip, xz, zstd or bzip2 found by magic.
 *
 * The image numbers inodes as it does a directory's (scan.h), breadth-
 * first by name, not in stream order, so file data cannot go straight to
 * the compressors: the pipeline reads it later, as it reads a directory's
 * files.  An uncompressed tar file holds each member's bytes in one piece
 * already: they are read where they lie (t->tarfd), not copied (that copy
 * was a fifth of the time of a tree's tarball).  Any other member's bytes
 * (a compressed stream or stdin, a sparse member) are spooled once to an
 * unlinked file (holes left as holes).  Memory holds only the metadata,
 * whatever the size of the members.  Meanwhile the members' full clusters
 * are encoded on the other cores (preenc.h): the pipeline takes those
 * encodings, and the stream's reading overlaps compression.
 *
 * Paths lose a leading '/' and '.' components, as tar extracts them; a
 * '..' component is refused.  A later member of the same path replaces
 * the earlier one, as extraction would; directories a member implies are
 * made with mode 0755, owned by root (or the forced owner).
 */
#ifndef MKFS_TAR_H
#define MKFS_TAR_H

#include <stdbool.h>
#include <sys/types.h>

struct mk_preenc_opts;
struct mk_progress;
struct mk_tree;

enum mk_whiteouts {
	MK_WH_KEEP,			/* .wh.* members are plain files */
	MK_WH_OVERLAY,			/* overlayfs whiteouts, opaque dirs */
};

struct mk_tar_opts {
	long long uid, gid;		/* forced owner, or -1 */
	enum mk_whiteouts whiteouts;
	const char *spool_dir;		/* where the spool file goes */
	struct mk_progress *pr;		/* its line, or NULL */
	/* the clusters' encoding as they are read (preenc.h), or NULL */
	const struct mk_preenc_opts *pre;
	/* decompress on a thread (unpack.h); stdin always is */
	bool unpack_thread;
	/* the image, when it exists: a tar file that is the image itself
	 * (mkfs.czfs -f --tar=x.tar x.tar) is spooled, not read in place,
	 * since the image overwrites it */
	bool exclude;
	dev_t exclude_dev;
	ino_t exclude_ino;
};

/*
 * Read the tar file (or stdin for "-") into t.  Returns 0, or -errno
 * after printing a message naming the member ("mkfs.czfs: x.tar: member
 * 'a/../b': ...").
 */
int mk_tar_read(const char *file, const struct mk_tar_opts *o,
		struct mk_tree *t);

#endif /* MKFS_TAR_H */
