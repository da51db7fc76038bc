// SPDX-License-Identifier: MIT
/* mkfs.czfs --tar: members to inodes (tar.h); their data goes where
 * tardata.h puts it. */
#include "config.h"

#include <archive.h>
#include <archive_entry.h>
#include <endian.h>
#include <errno.h>
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
#include "progress.h"
#include "scan.h"
#include "tar.h"
#include "tardata.h"
#include "unpack.h"
#include "util.h"
#include "xattr.h"

#define WH_PREFIX	".wh."
#define WH_META		".wh..wh."	/* aufs's own: .wh..wh..opq and others */
#define WH_OPAQUE	".wh..wh..opq"

struct tar_ctx {
	struct mk_tree *t;
	const struct mk_tar_opts *o;
	const char *file;		/* for messages */
	struct archive *a;
	struct archive_entry *e;
	struct mk_pathtree *pt;
	const char *member;		/* the member being read */
	char *prev;			/* the one before, for header errors */
	struct mk_tardata *data;	/* where the members' bytes go */
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

/* libarchive's own message on the header after member prev. */
static int archive_fail(struct tar_ctx *c)
{
	char why[1024];
	int err = mk_tardata_archive_why(c->a, why, sizeof(why));

	if (c->prev)
		fprintf(stderr, "mkfs.czfs: %s: the member after '%s': %s\n",
			c->file, c->prev, why);
	else
		fprintf(stderr, "mkfs.czfs: %s: the first member: %s\n",
			c->file, why);
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

static int read_data(struct tar_ctx *c, struct mk_inode *ip)
{
	const char *why;
	int err;

	ip->size = (uint64_t)archive_entry_size(c->e);
	err = mk_tardata_member(c->data, c->a, ip, &why);
	return err ? fail(c, err, "%s", why) : 0;
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
		err = read_data(c, ip);
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
			return archive_fail(c);
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
	r = up ? archive_read_open(c->a, up, NULL, mk_unpack_read,
				   mk_unpack_close) :
	    mk_tardata_open(c->data, c->a, file, &st);
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

int mk_tar_read(const char *file, const struct mk_tar_opts *o,
		struct mk_tree *t)
{
	struct tar_ctx c = { .t = t, .o = o,
			     .file = strcmp(file, "-") ? file : "stdin" };
	struct mk_inode tmpl = { 0 };
	int err;

	memset(t, 0, sizeof(*t));
	t->rootfd = t->datafd = t->tarfd = -1;
	t->root = c.file;
	implied_dir(o, &tmpl);
	err = mk_tardata_new(t, o, c.file, &c.data);
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
	archive_read_free(c.a);		/* before d, which it reads */
	free(c.prev);
	return mk_tardata_end(c.data, err);
}
