// SPDX-License-Identifier: MIT
/* mkfs.czfs --tar: members to inodes, their data found in place or
 * spooled (tar.h). */
#include "config.h"

#include <archive.h>
#include <archive_entry.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acl.h"
#include "chattr.h"
#include "czfs_fs.h"
#include "pathtree.h"
#include "preenc.h"
#include "progress.h"
#include "scan.h"
#include "tar.h"
#include "unpack.h"
#include "util.h"
#include "xattr.h"

#define TAR_READ_BLOCK	(1u << 20)	/* libarchive's reads of the file */
#define WH_PREFIX	".wh."
#define WH_META		".wh..wh."	/* aufs's own: .wh..wh..opq and others */
#define WH_OPAQUE	".wh..wh..opq"
#define NOT_FILLING	UINT_MAX
#define SPOOL_BASE	(1ull << 62)	/* data_off of the spool beside a tar */

/* An uncompressed tar file, read into a buffer whose place in the file
 * is known: so is that of every data block libarchive hands out of it. */
struct tar_src {
	int fd;
	uint8_t *buf;
	size_t len;			/* bytes in buf */
	uint64_t at;			/* the file offset of buf[0] */
};

struct tar_ctx {
	struct mk_tree *t;
	const struct mk_tar_opts *o;
	const char *file;		/* for messages */
	struct archive *a;
	struct archive_entry *e;
	struct mk_pathtree *pt;
	const char *member;		/* the member being read */
	char *prev;			/* the one before, for header errors */
	uint64_t spool_end;
	struct tar_src src;		/* fd -1: the stream comes otherwise */
	struct mk_preenc *pe;		/* NULL: no encoding while reading */
	unsigned cbytes;		/* its cluster size */
	uint64_t cidx;			/* the member's cluster being filled */
	unsigned cfill;			/* its bytes so far, NOT_FILLING */
	uint64_t members;		/* read so far, for progress */
	bool warned_abs;
};

static int __attribute__((format(printf, 3, 4)))
fail(struct tar_ctx *c, int err, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mkfs.czfs: %s: member '%s': ", c->file, c->member);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return err;
}

/* libarchive's own message (a truncated stream, a bad checksum). */
static int archive_fail(struct tar_ctx *c, const char *where)
{
	int err = archive_errno(c->a) > 0 ? -archive_errno(c->a) : -EIO;

	fprintf(stderr, "mkfs.czfs: %s: %s'%s': %s (at byte %lld of the tar)\n",
		c->file, where, c->member ? c->member : c->prev,
		archive_error_string(c->a) ? archive_error_string(c->a) : "error",
		(long long)archive_read_header_position(c->a));
	return err;
}

/*
 * The path in the tree: no leading '/' (tar strips it too), no '.' or
 * empty component.  '..' is refused: the image must hold what the stream
 * means, and a path leading out of it means nothing.
 */
static int clean_path(struct tar_ctx *c, const char *what, const char *in,
		      char **out)
{
	char *p = malloc(strlen(in) + 1), *w = p;
	const char *s = in;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	if (*in == '/' && !c->warned_abs) {
		fprintf(stderr, "mkfs.czfs: %s: removing leading '/' from member names\n",
			c->file);
		c->warned_abs = true;
	}
	while (*s) {
		const char *e = strchrnul(s, '/');
		size_t len = (size_t)(e - s);

		if (len == 2 && s[0] == '.' && s[1] == '.') {
			free(p);
			return fail(c, -EPERM, "%s has a '..' component: refused",
				    what);
		}
		if (len > CZFS_NAME_MAX) {
			free(p);
			return fail(c, -ENAMETOOLONG, "a name in %s is longer than %d bytes",
				    what, CZFS_NAME_MAX);
		}
		if (len && !(len == 1 && *s == '.')) {
			if (w != p)
				*w++ = '/';
			memcpy(w, s, len);
			w += len;
		}
		s = *e ? e + 1 : e;
	}
	*w = 0;
	*out = p;
	return 0;
}

/* The spool could not take the member's bytes. */
static int spool_fail(struct tar_ctx *c, int err)
{
	return fail(c, err, "cannot spool its data: %s", strerror(-err));
}

static int link_fail(struct tar_ctx *c, int err, const char *path)
{
	switch (err) {
	case -ENOTDIR: return fail(c, err, "a parent of '%s' is not a directory", path);
	case -EISDIR: return fail(c, err, "an earlier member made '%s' a directory", path);
	case -EEXIST: return fail(c, err, "an earlier member made '%s' no directory", path);
	default: return fail(c, err, "%s", strerror(-err));
	}
}

static void fill_meta(struct tar_ctx *c, struct mk_inode *ip, mode_t mode)
{
	struct archive_entry *e = c->e;

	ip->mode = mode;
	ip->uid = c->o->uid >= 0 ? (uint32_t)c->o->uid : (uint32_t)archive_entry_uid(e);
	ip->gid = c->o->gid >= 0 ? (uint32_t)c->o->gid : (uint32_t)archive_entry_gid(e);
	ip->mtime.tv_sec = archive_entry_mtime(e);
	ip->mtime.tv_nsec = archive_entry_mtime_nsec(e);
	ip->atime = ip->ctime = ip->mtime;
	if (archive_entry_atime_is_set(e)) {
		ip->atime.tv_sec = archive_entry_atime(e);
		ip->atime.tv_nsec = archive_entry_atime_nsec(e);
	}
	if (archive_entry_ctime_is_set(e)) {
		ip->ctime.tv_sec = archive_entry_ctime(e);
		ip->ctime.tv_nsec = archive_entry_ctime_nsec(e);
	}
	if (S_ISCHR(mode) || S_ISBLK(mode)) {
		ip->rdev_major = (uint32_t)archive_entry_rdevmajor(e);
		ip->rdev_minor = (uint32_t)archive_entry_rdevminor(e);
	}
}

static int check_owner(struct tar_ctx *c)
{
	la_int64_t uid = archive_entry_uid(c->e), gid = archive_entry_gid(c->e);

	if (uid < 0 || uid >= UINT32_MAX || gid < 0 || gid >= UINT32_MAX)
		return fail(c, -EOVERFLOW, "owner %lld:%lld out of range",
			    (long long)uid, (long long)gid);
	return 0;
}

static int read_xattrs(struct tar_ctx *c, struct mk_inode *ip)
{
	const char *name;
	const void *val;
	size_t len;
	int err = 0;

	archive_entry_xattr_reset(c->e);
	while (!err && archive_entry_xattr_next(c->e, &name, &val, &len) ==
	       ARCHIVE_OK) {
		if (!czfs_xattr_name_ok(name, strlen(name)) ||
		    len > CZFS_XATTR_SIZE_MAX) {
			fprintf(stderr, "mkfs.czfs: warning: %s: member '%s': xattr %s not supported, skipped\n",
				c->file, c->member, name);
			continue;
		}
		err = mk_inode_set_xattr(ip, name, val, (uint32_t)len);
	}
	return err;
}

/* libarchive's ACL tags and the kernel's (posix_acl_xattr.h). */
static const struct { int la; uint16_t tag; } acl_tags[] = {
	{ ARCHIVE_ENTRY_ACL_USER_OBJ, 0x01 }, { ARCHIVE_ENTRY_ACL_USER, 0x02 },
	{ ARCHIVE_ENTRY_ACL_GROUP_OBJ, 0x04 }, { ARCHIVE_ENTRY_ACL_GROUP, 0x08 },
	{ ARCHIVE_ENTRY_ACL_MASK, 0x10 }, { ARCHIVE_ENTRY_ACL_OTHER, 0x20 },
};

struct acl_ent {
	uint16_t tag, perm;
	uint32_t id;
};

static int acl_cmp(const void *a, const void *b)
{
	const struct acl_ent *x = a, *y = b;

	if (x->tag != y->tag)
		return x->tag < y->tag ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* The entries of one ACL type, sorted as the kernel wants them. */
static int acl_entries(struct tar_ctx *c, int type, struct acl_ent *ents)
{
	int n = 0, t, perm, tag, id;
	const char *name;

	archive_entry_acl_reset(c->e, type);
	while (archive_entry_acl_next(c->e, type, &t, &perm, &tag, &id,
				      &name) == ARCHIVE_OK) {
		unsigned k = 0;

		while (k < ARRAY_SIZE(acl_tags) && acl_tags[k].la != tag)
			k++;
		if (k == ARRAY_SIZE(acl_tags) || n == CZFS_ACL_MAX_ENTRIES)
			return -EINVAL;
		if ((tag == ARCHIVE_ENTRY_ACL_USER ||
		     tag == ARCHIVE_ENTRY_ACL_GROUP) && id < 0)
			return -EINVAL;
		ents[n].tag = acl_tags[k].tag;
		ents[n].perm = (uint16_t)(perm & 7);
		ents[n++].id = tag == ARCHIVE_ENTRY_ACL_USER ||
			       tag == ARCHIVE_ENTRY_ACL_GROUP ? (uint32_t)id :
			       UINT32_MAX;
	}
	qsort(ents, (size_t)n, sizeof(*ents), acl_cmp);
	return n;
}

/* A POSIX ACL (SCHILY.acl.*) as czfs keeps it: the xattr the kernel uses. */
static int read_acl(struct tar_ctx *c, struct mk_inode *ip, int type,
		    const char *xname)
{
	struct acl_ent ents[CZFS_ACL_MAX_ENTRIES];
	uint8_t buf[4 + 8 * CZFS_ACL_MAX_ENTRIES], *p = buf + 4;
	uint32_t v = htole32(2);
	mode_t perm;
	int n = acl_entries(c, type, ents);

	if (!n)
		return 0;
	memcpy(buf, &v, 4);
	for (int i = 0; i < n; i++, p += 8) {
		uint16_t tag = htole16(ents[i].tag), pm = htole16(ents[i].perm);
		uint32_t id = htole32(ents[i].id);

		memcpy(p, &tag, 2);
		memcpy(p + 2, &pm, 2);
		memcpy(p + 4, &id, 4);
	}
	if (n < 0 || !czfs_acl_valid(buf, (size_t)(p - buf))) {
		fprintf(stderr, "mkfs.czfs: warning: %s: member '%s': ACL %s not valid, skipped\n",
			c->file, c->member, xname);
		return 0;
	}
	if (type == ARCHIVE_ENTRY_ACL_TYPE_ACCESS) {
		if (czfs_acl_mode(buf, (size_t)(p - buf), &perm) == 1)
			return 0;	/* the mode says it all */
		/* libarchive's mode took GROUP_OBJ's bits: the group
		 * bits of a mode with an ACL are the mask's */
		ip->mode = (ip->mode & ~(mode_t)0777) | perm;
	}
	return mk_inode_set_xattr(ip, xname, buf, (uint32_t)(p - buf));
}

/*
 * Hand the member's full clusters but its last (which may go inline) to
 * the encoders: len bytes at off of a member of size bytes spooled at
 * base.  A cluster the data does not fill in order (a sparse member's
 * hole), or that starts while the encoders are all busy, is left to the
 * pipeline: the stream is never held up.
 */
static void preenc_feed(struct tar_ctx *c, uint64_t base, uint64_t size,
			const uint8_t *buf, size_t len, uint64_t off)
{
	while (len) {
		uint64_t idx = off / c->cbytes;
		unsigned in = (unsigned)(off % c->cbytes);
		size_t n = MIN(len, c->cbytes - in);
		uint8_t *dst;

		if (idx != c->cidx || in != c->cfill) {
			c->cidx = idx;
			c->cfill = in ? NOT_FILLING : 0;
		}
		dst = c->cfill != NOT_FILLING && (idx + 1) * c->cbytes < size ?
		      mk_preenc_buf(c->pe, false) : NULL;
		if (!dst) {
			c->cfill = NOT_FILLING;
		} else {
			memcpy(dst + in, buf, n);
			c->cfill += (unsigned)n;
			if (c->cfill == c->cbytes) {
				mk_preenc_submit(c->pe, base + idx * c->cbytes);
				c->cfill = NOT_FILLING;
			}
		}
		buf += n;
		off += n;
		len -= n;
	}
}

/* Where a data block of len bytes lies in the tar file: false when it is
 * not in the buffer read from it (libarchive copied it elsewhere). */
static bool locate(const struct tar_ctx *c, const void *buf, size_t len,
		   uint64_t *at)
{
	const uint8_t *b = buf;

	if (c->t->tarfd < 0 || b < c->src.buf || b + len > c->src.buf + c->src.len)
		return false;
	*at = c->src.at + (uint64_t)(b - c->src.buf);
	return true;
}

/* Give the member a place in the spool, block-aligned so that the holes
 * of a sparse member stay holes there too (the pipeline finds them with
 * SEEK_DATA, as in a sparse source file); the len bytes it had in place
 * at tar offset from go there first. */
static int to_spool(struct tar_ctx *c, struct mk_inode *ip, uint64_t from,
		    uint64_t len)
{
	uint64_t base = ROUND_UP(c->spool_end, CZFS_BLOCK_SIZE);
	uint8_t buf[16384];
	ssize_t r;
	int err = 0;

	ip->data_off = c->t->spool_base + base;
	for (uint64_t done = 0; !err && done < len; done += (uint64_t)r) {
		r = pread(c->t->tarfd, buf, (size_t)MIN(len - done, sizeof(buf)),
			  (off_t)(from + done));
		if (r < 0 && errno == EINTR)
			r = 0;
		else if (r <= 0)
			err = r ? -errno : -EIO;
		else
			err = czfs_pwrite_full(c->t->datafd, buf, (size_t)r,
					       base + done);
	}
	return err ? spool_fail(c, err) : 0;
}

/*
 * The member's bytes: in an uncompressed tar file they stay where they
 * are, as long as they come in order from where the first block lay;
 * otherwise (a compressed stream, a sparse member, a block libarchive
 * copied) what came so far is copied to the spool and the rest follows
 * it there.  The encoders get the clusters of a member in place, or of
 * any member when nothing is in place (their offsets must grow).
 */
static int spool(struct tar_ctx *c, struct mk_inode *ip)
{
	bool in_tar = c->t->tarfd >= 0, feed = c->pe != NULL;
	uint64_t next = 0, at;
	const void *buf;
	size_t len;
	la_int64_t off;
	int r, err;

	ip->size = (uint64_t)archive_entry_size(c->e);
	ip->data_off = c->t->spool_base + ROUND_UP(c->spool_end, CZFS_BLOCK_SIZE);
	c->cidx = UINT64_MAX;		/* no cluster being filled */
	while ((r = archive_read_data_block(c->a, &buf, &len, &off)) !=
	       ARCHIVE_EOF) {
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
			return archive_fail(c, "member ");
		if (off < 0 || (uint64_t)off + len > ip->size)
			return fail(c, -EFBIG, "more data than the size its header gives (%llu bytes)",
				    (unsigned long long)ip->size);
		if ((uint64_t)off != next)
			ip->maybe_sparse = true;
		if (in_tar && !next && !off && locate(c, buf, len, &at))
			ip->data_off = at;	/* the first block */
		else if (in_tar && (!locate(c, buf, len, &at) ||
			 (uint64_t)off != next || at != ip->data_off + next)) {
			in_tar = feed = false;
			if ((err = to_spool(c, ip, ip->data_off, next)))
				return err;
		}
		if (!in_tar && (err = czfs_pwrite_full(c->t->datafd, buf, len,
				ip->data_off - c->t->spool_base + (uint64_t)off)))
			return spool_fail(c, err);
		if (feed)
			preenc_feed(c, ip->data_off, ip->size, buf, len,
				    (uint64_t)off);
		next = (uint64_t)off + len;
		c->t->data_bytes += len;
	}
	if (in_tar && next < ip->size) {	/* a hole at the end */
		if ((err = to_spool(c, ip, ip->data_off, next)))
			return err;
		in_tar = false;
	}
	if (in_tar)
		return 0;
	c->spool_end = ip->data_off - c->t->spool_base + ip->size;
	if (next < ip->size) {		/* a hole at the end: the spool */
		ip->maybe_sparse = true;	/* reaches it, should it be last */
		if (ftruncate(c->t->datafd, (off_t)c->spool_end))
			return spool_fail(c, -errno);
	}
	return 0;
}

static int read_target(struct tar_ctx *c, struct mk_inode *ip)
{
	const char *target = archive_entry_symlink(c->e);
	size_t len = target ? strlen(target) : 0;

	if (!len || len > CZFS_SYMLINK_MAX)
		return fail(c, -ENAMETOOLONG, "symlink target of %zu bytes (1..%d)",
			    len, CZFS_SYMLINK_MAX);
	free(ip->target);
	ip->target = strdup(target);
	ip->size = len;
	return ip->target ? 0 : -ENOMEM;
}

/* SCHILY.fflags: the chattr flags czfs keeps; the others, named. */
static void read_fflags(struct tar_ctx *c, struct mk_inode *ip)
{
	const char *text = archive_entry_fflags_text(c->e);
	char rest[128];

	ip->flags = 0;
	if (text && !czfs_chattr_parse(text, &ip->flags, rest, sizeof(rest)))
		fprintf(stderr, "mkfs.czfs: warning: %s: member '%s': file flags %s not kept\n",
			c->file, c->member, rest);
}

/* Type, metadata, xattrs, ACLs, file flags, then what the type holds. */
static int fill(struct tar_ctx *c, struct mk_inode *ip, mode_t mode,
		const char *path)
{
	int err = check_owner(c);

	fill_meta(c, ip, mode);
	if (!err)
		err = read_xattrs(c, ip);
	if (!err)
		err = read_acl(c, ip, ARCHIVE_ENTRY_ACL_TYPE_ACCESS, CZFS_ACL_ACCESS);
	if (!err && S_ISDIR(mode))
		err = read_acl(c, ip, ARCHIVE_ENTRY_ACL_TYPE_DEFAULT, CZFS_ACL_DEFAULT);
	read_fflags(c, ip);
	if (!err && S_ISLNK(mode))
		err = read_target(c, ip);
	if (!err && S_ISREG(mode))
		err = spool(c, ip);
	if (!err && (S_ISREG(mode) || S_ISDIR(mode)) && !ip->path)
		ip->path = strdup(*path ? path : ".");
	return err;
}

/* A member of its own (not a hard link) at path. */
static int add_member(struct tar_ctx *c, const char *path, mode_t mode)
{
	struct mk_inode *ip, *at;
	int err;

	if (!S_ISREG(mode) && !S_ISDIR(mode) && !S_ISLNK(mode) &&
	    !S_ISCHR(mode) && !S_ISBLK(mode) && !S_ISFIFO(mode) &&
	    !S_ISSOCK(mode))
		return fail(c, -EINVAL, "unknown type (mode %o)", (unsigned)mode);
	if (!*path) {
		at = mk_pt_get(c->pt, "");
		if (!S_ISDIR(mode))
			return fail(c, -ENOTDIR, "the root is not a directory");
	} else {
		ip = mk_pt_inode(c->pt);
		if (!ip)
			return -ENOMEM;
		ip->mode = mode;
		err = mk_pt_link(c->pt, path, ip, &at);
		if (err)
			return link_fail(c, err, path);
	}
	mk_inode_clear_xattrs(at);	/* a directory again: the last member's */
	return fill(c, at, mode, path);
}

static int add_hardlink(struct tar_ctx *c, const char *path, const char *to)
{
	struct mk_inode *ip, *at;
	char *target, what[64];
	int err;

	snprintf(what, sizeof(what), "its hard link target '%.40s'", to);
	err = clean_path(c, what, to, &target);
	if (err)
		return err;
	ip = mk_pt_get(c->pt, target);
	if (!ip)
		err = fail(c, -ENOENT, "hard link to '%s', which no member before it names",
			   to);
	else if (S_ISDIR(ip->mode))
		err = fail(c, -EPERM, "hard link to directory '%s'", to);
	else if (!*path)
		err = fail(c, -EPERM, "hard link as the root");
	else if ((err = mk_pt_link(c->pt, path, ip, &at)))
		err = link_fail(c, err, path);
	free(target);
	return err;
}

/*
 * overlayfs's form of a container layer's whiteouts: .wh.NAME becomes
 * NAME, a character device 0/0; .wh..wh..opq marks its directory opaque.
 * Returns 1 when the member is done with.
 */
static int whiteout(struct tar_ctx *c, char *path, mode_t *mode)
{
	char *base = strrchr(path, '/');
	struct mk_inode *dir;
	int err;

	base = base ? base + 1 : path;
	if (strncmp(base, WH_PREFIX, strlen(WH_PREFIX)))
		return 0;
	if (!strcmp(base, WH_OPAQUE)) {
		base[base == path ? 0 : -1] = 0;
		err = mk_pt_dir(c->pt, path, &dir);
		if (!err)
			err = mk_inode_set_xattr(dir, "trusted.overlay.opaque",
						 "y", 1);
		return err ? link_fail(c, err, path) : 1;
	}
	if (!strncmp(base, WH_META, strlen(WH_META)))
		return 1;		/* aufs's hard-link dirs and such */
	if (!base[strlen(WH_PREFIX)])
		return fail(c, -EINVAL, "a whiteout of no name");
	memmove(base, base + strlen(WH_PREFIX),
		strlen(base + strlen(WH_PREFIX)) + 1);
	*mode = S_IFCHR;		/* as overlayfs makes them: 0/0, 0000 */
	return 2;
}

static int read_member(struct tar_ctx *c)
{
	const char *hard = archive_entry_hardlink(c->e);
	mode_t mode = archive_entry_mode(c->e);
	char *path;
	int err = clean_path(c, "its path", c->member, &path);

	if (!err && c->o->whiteouts == MK_WH_OVERLAY)
		err = whiteout(c, path, &mode);
	if (err == 2) {
		err = add_member(c, path, mode);
		if (!err) {	/* the member's rdev, uid... are a file's */
			struct mk_inode *ip = mk_pt_get(c->pt, path);

			ip->rdev_major = ip->rdev_minor = 0;
		}
	} else if (!err && hard) {
		err = add_hardlink(c, path, hard);
	} else if (!err) {
		err = add_member(c, path, mode);
	}
	free(path);
	return err < 0 ? err : 0;
}

static int read_members(struct tar_ctx *c)
{
	int r, err = 0;

	while (!err) {
		c->member = NULL;
		r = archive_read_next_header(c->a, &c->e);
		if (r == ARCHIVE_EOF)
			break;
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
			return archive_fail(c, c->prev ? "the member after " :
					    "the first member");
		c->member = archive_entry_pathname(c->e);
		if (!c->member)
			c->member = "";
		if (r == ARCHIVE_WARN)
			fprintf(stderr, "mkfs.czfs: warning: %s: member '%s': %s\n",
				c->file, c->member, archive_error_string(c->a));
		err = read_member(c);
		c->members++;
		if (c->o->pr)
			mk_progress_reading(c->o->pr, c->members,
					    c->t->data_bytes);
		free(c->prev);
		c->prev = strdup(c->member);
		if (!err && !c->prev)
			err = -ENOMEM;
	}
	return err;
}

/* An unlinked file next to the image (tmpfs could not hold a big tar). */
static int spool_open(const char *dir)
{
	char tmpl[4096];
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR))
		return fd < 0 ? -errno : fd;
	snprintf(tmpl, sizeof(tmpl), "%s/.mkfs.czfs-spool.XXXXXX", dir);
	fd = mkostemp(tmpl, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	unlink(tmpl);
	return fd;
}

static la_ssize_t src_read(struct archive *a, void *arg, const void **out)
{
	struct tar_src *s = arg;
	ssize_t n;

	s->at += s->len;
	s->len = 0;
	do
		n = read(s->fd, s->buf, TAR_READ_BLOCK);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		archive_set_error(a, errno, "%s", strerror(errno));
		return -1;
	}
	s->len = (size_t)n;
	*out = s->buf;
	return n;
}

static int src_close(struct archive *a, void *arg)
{
	struct tar_src *s = arg;

	(void)a;
	close(s->fd);
	s->fd = -1;
	return ARCHIVE_OK;
}

/* A file by name (stdin comes through unpack.h), whose stat is st: read
 * through src, its members kept in place (tarfd) when it is a regular
 * file. */
static int src_open(struct tar_ctx *c, const char *file,
		    const struct stat *st)
{
	c->src.fd = open(file, O_RDONLY | O_CLOEXEC);
	c->src.buf = malloc(TAR_READ_BLOCK);
	if (c->src.fd < 0 || !c->src.buf) {
		int err = c->src.fd < 0 ? -errno : -ENOMEM;

		fprintf(stderr, "mkfs.czfs: %s: %s\n", c->file, strerror(-err));
		return err;
	}
	if (S_ISREG(st->st_mode) &&
	    !(c->o->exclude && st->st_dev == c->o->exclude_dev &&
	      st->st_ino == c->o->exclude_ino))
		c->t->tarfd = fcntl(c->src.fd, F_DUPFD_CLOEXEC, 0);
	return 0;
}

static int tar_open(struct tar_ctx *c, const char *file)
{
	struct mk_unpack *up = NULL;
	bool is_stdin = !strcmp(file, "-");
	struct stat st = { 0 };		/* the one stat of file; stdin: none */
	char msg[256];
	int err, r;

	/* libarchive says only "Failed to open" or "Error reading" */
	err = is_stdin ? 0 : stat(file, &st) ? -errno :
	      S_ISDIR(st.st_mode) ? -EISDIR : access(file, R_OK) ? -errno : 0;
	if (err) {
		fprintf(stderr, "mkfs.czfs: %s: %s\n", c->file, strerror(-err));
		return err;
	}
	c->a = archive_read_new();
	if (!c->a)
		return -ENOMEM;
	archive_read_support_filter_all(c->a);
	archive_read_support_format_tar(c->a);
	if ((c->o->unpack_thread || is_stdin) &&
	    (err = mk_unpack_start(file, S_ISREG(st.st_mode), &up, msg,
				   sizeof(msg)))) {
		fprintf(stderr, "mkfs.czfs: %s: %s\n", c->file, msg);
		return err;
	}
	if (up)
		r = archive_read_open(c->a, up, NULL, mk_unpack_read, mk_unpack_close);
	else if ((err = src_open(c, file, &st)))
		return err;
	else
		r = archive_read_open(c->a, &c->src, NULL, src_read, src_close);
	if (r == ARCHIVE_OK && c->t->tarfd >= 0 &&
	    archive_filter_code(c->a, 0) != ARCHIVE_FILTER_NONE) {
		close(c->t->tarfd);	/* a filter without a thread: spooled */
		c->t->tarfd = -1;
	}
	c->t->spool_base = c->t->tarfd >= 0 ? SPOOL_BASE : 0;
	if (r == ARCHIVE_OK)
		return 0;
	fprintf(stderr, "mkfs.czfs: %s: %s\n", c->file,
		archive_error_string(c->a));
	return archive_errno(c->a) > 0 ? -archive_errno(c->a) : -EIO;
}

/* The root's and the implied directories' metadata. */
static void implied_dir(const struct mk_tar_opts *o, struct mk_inode *d)
{
	d->mode = S_IFDIR | 0755;
	d->uid = o->uid >= 0 ? (uint32_t)o->uid : 0;
	d->gid = o->gid >= 0 ? (uint32_t)o->gid : 0;
	clock_gettime(CLOCK_REALTIME, &d->mtime);
	d->atime = d->ctime = d->mtime;
}

static int preenc_start(struct tar_ctx *c)
{
	int fd, err;

	if (!c->o->pre)
		return 0;
	fd = spool_open(c->o->spool_dir);
	if (fd < 0) {
		fprintf(stderr, "mkfs.czfs: cannot make a spool file in %s: %s\n",
			c->o->spool_dir, strerror(-fd));
		return fd;
	}
	c->cbytes = CZFS_BLOCK_SIZE << c->o->pre->cluster_shift;
	err = mk_preenc_new(c->o->pre, fd, &c->pe);
	if (err)
		fprintf(stderr, "mkfs.czfs: cannot start threads: %s\n",
			strerror(-err));
	return err;
}

/* The encodings made while reading go to the tree, if all went well. */
static int preenc_end(struct tar_ctx *c, int err)
{
	int e;

	if (!c->pe)
		return err;
	e = mk_preenc_finish(c->pe);
	if (!err && e)
		fprintf(stderr, "mkfs.czfs: %s: encoding clusters: %s\n",
			c->file, strerror(-e));
	if (!err && !e)
		c->t->pre = c->pe;
	else
		mk_preenc_free(c->pe);
	return err ? err : e;
}

int mk_tar_read(const char *file, const struct mk_tar_opts *o,
		struct mk_tree *t)
{
	struct tar_ctx c = { .t = t, .o = o, .src = { .fd = -1 },
			     .file = strcmp(file, "-") ? file : "stdin" };
	struct mk_inode tmpl = { 0 };
	int err;

	memset(t, 0, sizeof(*t));
	t->rootfd = t->tarfd = -1;
	t->root = c.file;
	t->datafd = spool_open(o->spool_dir);
	if (t->datafd < 0) {
		err = t->datafd;
		fprintf(stderr, "mkfs.czfs: cannot make a spool file in %s: %s\n",
			o->spool_dir, strerror(-err));
		return err;
	}
	implied_dir(o, &tmpl);
	err = preenc_start(&c);
	if (!err)
		err = mk_pt_new(t, &tmpl, &c.pt);
	if (!err)
		err = tar_open(&c, file);
	if (!err)
		err = read_members(&c);
	if (!err) {
		err = mk_pt_finish(c.pt);
		c.pt = NULL;
		if (err)
			fprintf(stderr, "mkfs.czfs: %s: %s\n", c.file,
				strerror(-err));
	}
	mk_pt_free(c.pt);
	archive_read_free(c.a);
	if (c.src.fd >= 0)	/* not opened by libarchive: not closed */
		close(c.src.fd);
	free(c.src.buf);
	free(c.prev);
	return preenc_end(&c, err);
}
