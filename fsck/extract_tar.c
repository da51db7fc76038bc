// SPDX-License-Identifier: MIT
/*
 * --tar FILE: the walk's inodes (extract.h) as the members of a PAX
 * stream written through libarchive: xattrs as SCHILY.xattr and
 * LIBARCHIVE.xattr, POSIX ACLs as SCHILY.acl, chattr flags as
 * SCHILY.fflags, holes as sparse maps, a damaged file's unreadable bytes
 * as zeros.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <archive.h>
#include <archive_entry.h>

#include "acl.h"
#include "chattr.h"
#include "extract.h"
#include "util.h"

static const struct { uint16_t tag; int la; } tar_acl_tags[] = {
	{ 0x01, ARCHIVE_ENTRY_ACL_USER_OBJ }, { 0x02, ARCHIVE_ENTRY_ACL_USER },
	{ 0x04, ARCHIVE_ENTRY_ACL_GROUP_OBJ }, { 0x08, ARCHIVE_ENTRY_ACL_GROUP },
	{ 0x10, ARCHIVE_ENTRY_ACL_MASK }, { 0x20, ARCHIVE_ENTRY_ACL_OTHER },
};

/*
 * A POSIX ACL's xattr (acl.h) as libarchive's entries, written as
 * SCHILY.acl.*, which GNU tar --acls and bsdtar restore.  libarchive keeps
 * GROUP_OBJ's bits in the header's mode, as bsdtar's own archives have
 * them, where the kernel shows the mask's: tar --acls puts both right.
 * Returns false for anything else (an xattr to store as it is).
 */
static bool tar_acl(struct archive_entry *e, const char *name,
		    const uint8_t *v, size_t len)
{
	int type = !strcmp(name, CZFS_ACL_ACCESS) ? ARCHIVE_ENTRY_ACL_TYPE_ACCESS :
		   !strcmp(name, CZFS_ACL_DEFAULT) ? ARCHIVE_ENTRY_ACL_TYPE_DEFAULT : 0;

	if (!type || !czfs_acl_valid(v, len))
		return false;
	for (size_t off = 4; off + 8 <= len; off += 8) {
		uint16_t tag, perm;
		uint32_t id;
		unsigned k = 0;

		memcpy(&tag, v + off, 2);
		memcpy(&perm, v + off + 2, 2);
		memcpy(&id, v + off + 4, 4);
		while (k < ARRAY_SIZE(tar_acl_tags) &&
		       tar_acl_tags[k].tag != le16_to_cpu(tag))
			k++;
		if (k < ARRAY_SIZE(tar_acl_tags))
			archive_entry_acl_add_entry(e, type, le16_to_cpu(perm) & 7,
						    tar_acl_tags[k].la,
						    (int)le32_to_cpu(id), NULL);
	}
	return true;
}

void xt_tar_xattr(struct archive_entry *e, const char *name,
		  const uint8_t *v, size_t len)
{
	if (!tar_acl(e, name, v, len))
		archive_entry_xattr_add_entry(e, name, v, len);
}

/*
 * The clusters a regular file has, as its member's sparse map (GNU's
 * 1.0 in PAX records): none when they cover the whole file, or when it
 * has none at all.  The writer then drops the zeros of the holes.
 */
static void tar_run(struct archive_entry *e, const struct czfs_inode_info *ii,
		    uint64_t start, uint64_t end)
{
	uint64_t cbytes = czfs_inode_cluster_bytes(ii);

	archive_entry_sparse_add_entry(e, (la_int64_t)(start * cbytes),
		(la_int64_t)(MIN(end * cbytes, ii->size) - start * cbytes));
}

static void tar_sparse(struct xt *x, const struct czfs_inode_info *ii,
		       struct archive_entry *e)
{
	uint64_t count = DIV_ROUND_UP(ii->size, czfs_inode_cluster_bytes(ii));
	uint64_t next = 0, start = 0, end = 0;	/* the run met last */
	unsigned runs = 0;
	struct idx_batch b;
	int err;

	do {
		err = xt_next_clusters(x, ii->ino, next, &b);
		for (unsigned i = 0; !err && i < b.n && b.idx[i] < count; i++) {
			if (runs && b.idx[i] == end) {
				end++;
				continue;
			}
			if (runs)
				tar_run(e, ii, start, end);
			start = b.idx[i];
			end = start + 1;
			runs++;
		}
		if (b.n)
			next = b.idx[b.n - 1] + 1;
	} while (!err && b.n == XT_BATCH && next < count);
	if (runs)
		tar_run(e, ii, start, end);
	else if (ii->size)	/* all hole: an empty run at the end */
		archive_entry_sparse_add_entry(e, (la_int64_t)ii->size, 0);
	if (err || (runs == 1 && start == 0 && end >= count))
		archive_entry_sparse_clear(e);	/* damage: the data decides */
}

/* libarchive's write error, with its errno (ENOSPC...). */
static void tar_error(struct xt *x)
{
	xt_out_error(x, archive_error_string(x->ar),
		     archive_errno(x->ar) > 0 ? archive_errno(x->ar) : EIO);
}

/* A member for ii at x->path ("." is the root), its header written. */
void xt_tar_member(struct xt *x, const struct czfs_inode_info *ii,
		   const char *target, const char *hardlink)
{
	struct archive_entry *e = archive_entry_new();
	char fflags[CZFS_CHATTR_TEXT_MAX];

	if (!e) {
		xt_out_error(x, "memory", ENOMEM);
		return;
	}
	archive_entry_set_pathname(e, x->path);
	archive_entry_set_mode(e, ii->mode);
	archive_entry_set_uid(e, ii->uid);
	archive_entry_set_gid(e, ii->gid);
	archive_entry_set_atime(e, ii->atime.tv_sec, ii->atime.tv_nsec);
	archive_entry_set_mtime(e, ii->mtime.tv_sec, ii->mtime.tv_nsec);
	archive_entry_set_ctime(e, ii->ctime.tv_sec, ii->ctime.tv_nsec);
	if (hardlink) {
		archive_entry_set_hardlink(e, hardlink);
		archive_entry_set_size(e, 0);
	} else {
		archive_entry_set_size(e, S_ISREG(ii->mode) ? (la_int64_t)ii->size : 0);
		archive_entry_set_rdevmajor(e, ii->rdev_major);
		archive_entry_set_rdevminor(e, ii->rdev_minor);
		if (target)
			archive_entry_set_symlink(e, target);
		if (S_ISREG(ii->mode))
			tar_sparse(x, ii, e);
		xt_xattrs(x, ii->ino, e);
		czfs_chattr_text(ii->flags, fflags, sizeof(fflags));
		if (*fflags)
			archive_entry_copy_fflags_text(e, fflags);
	}
	/* after a failed write the stream is cut: nothing more to it */
	if (!x->out_err && archive_write_header(x->ar, e) < ARCHIVE_WARN)
		tar_error(x);
	archive_entry_free(e);
}

/* Bytes to the member, in order. */
static void tar_write(struct xt *x, const void *buf, size_t len)
{
	if (!x->out_err && archive_write_data(x->ar, buf, len) != (la_ssize_t)len)
		tar_error(x);
}

/* Zeros from *pos to end: holes, and what damage left unreadable. */
static void tar_zeros(struct xt *x, uint64_t *pos, uint64_t end)
{
	for (; *pos < end; *pos += MIN(CZFS_MAX_CLUSTER_SIZE, end - *pos))
		tar_write(x, x->zeros, MIN(CZFS_MAX_CLUSTER_SIZE, end - *pos));
}

/* A regular file: the header, then every byte, holes as zeros, which
 * the writer drops where the sparse map says holes. */
void xt_tar_file(struct xt *x, const struct czfs_inode_info *ii)
{
	uint32_t cbytes = czfs_inode_cluster_bytes(ii);
	uint64_t count = DIV_ROUND_UP(ii->size, cbytes), next = 0, pos = 0;
	struct idx_batch b;
	int err;

	xt_tar_member(x, ii, NULL, NULL);
	do {
		err = xt_next_clusters(x, ii->ino, next, &b);
		for (unsigned i = 0; !err && i < b.n && b.idx[i] < count; i++) {
			uint64_t off = b.idx[i] * cbytes;
			long n;

			if (off < pos)
				continue;	/* out of order: damage */
			tar_zeros(x, &pos, off);
			n = czfs_file_pread(x->fs, x->c->codec, ii, x->buf,
					    MIN(cbytes, ii->size - off), off);
			if (n < 0) {
				xt_damaged(x, ii->ino, "data", (int)n);
				n = 0;
			}
			tar_write(x, x->buf, (size_t)n);
			pos = off + (uint64_t)n;
		}
		if (b.n)
			next = b.idx[b.n - 1] + 1;
	} while (!err && b.n == XT_BATCH && next < count);
	if (err)
		xt_damaged(x, ii->ino, "cluster map", err);
	tar_zeros(x, &pos, ii->size);
}

int fsck_tar(struct fsck_ctx *c, int fd)
{
	struct archive *ar = archive_write_new();
	int ret;

	if (!ar)
		return -ENOMEM;
	/* SCHILY.xattr too, the records GNU tar reads */
	if (archive_write_set_format_pax(ar) != ARCHIVE_OK ||
	    archive_write_set_format_option(ar, "pax", "xattrheader", "ALL") <
	    ARCHIVE_WARN || archive_write_open_fd(ar, fd) != ARCHIVE_OK) {
		fprintf(stderr, "fsck.czfs: tar: %s\n", archive_error_string(ar));
		archive_write_free(ar);
		return -EIO;
	}
	ret = xt_walk(c, ".", ar);
	if (archive_write_close(ar) != ARCHIVE_OK && ret >= 0) {
		fprintf(stderr, "fsck.czfs: tar: %s\n", archive_error_string(ar));
		ret = -EIO;
	}
	archive_write_free(ar);
	return ret;
}
