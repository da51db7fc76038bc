// SPDX-License-Identifier: MIT
/*
 * Source tree scan.  Directories are read in inode order, which is also the
 * order they were numbered in: walking the inode array while appending to
 * it is a breadth-first walk, with no queue of its own.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "chattr.h"
#include "czfs_fs.h"
#include "preenc.h"
#include "scan.h"
#include "util.h"
#include "xattr.h"

/* Hard links: (st_dev, st_ino) -> inode, open addressing. */
struct link_slot {
	dev_t dev;
	ino_t ino;
	struct mk_inode *inode;
};

struct scan_ctx {
	struct mk_tree *t;
	const struct mk_scan_opts *o;
	struct link_slot *links;
	size_t nlinks, links_cap;	/* cap is a power of two */
	char full[PATH_MAX];		/* root/rel, for messages and xattrs */
};

static const char *full_path(struct scan_ctx *c, const char *rel)
{
	const char *root = c->t->root;
	size_t n = strlen(root);
	const char *sep = n && root[n - 1] == '/' ? "" : "/";

	if (!strcmp(rel, "."))
		snprintf(c->full, sizeof(c->full), "%s", root);
	else
		snprintf(c->full, sizeof(c->full), "%s%s%s", root, sep, rel);
	return c->full;
}

static int scan_fail(struct scan_ctx *c, const char *rel, int err)
{
	fprintf(stderr, "mkfs.czfs: cannot read %s: %s\n", full_path(c, rel),
		strerror(-err));
	return err;
}

int mk_tree_add(struct mk_tree *t, struct mk_inode *ip)
{
	if (CZFS_GROW(t->inodes, t->count, t->cap, 1024))
		return -ENOMEM;
	if (t->count >= CZFS_MAX_INO)
		return -EOVERFLOW;
	t->inodes[t->count++] = ip;
	ip->ino = t->count;
	return 0;
}

static size_t link_hash(dev_t dev, ino_t ino, size_t cap)
{
	uint64_t h = ((uint64_t)dev * 0x9e3779b97f4a7c15ull) ^ (uint64_t)ino;

	h *= 0xff51afd7ed558ccdull;
	return (size_t)(h >> 17) & (cap - 1);
}

static struct link_slot *link_find(struct scan_ctx *c, dev_t dev, ino_t ino)
{
	size_t i = link_hash(dev, ino, c->links_cap);

	while (c->links[i].inode) {
		if (c->links[i].dev == dev && c->links[i].ino == ino)
			break;
		i = (i + 1) & (c->links_cap - 1);
	}
	return &c->links[i];
}

static int link_grow(struct scan_ctx *c)
{
	size_t old_cap = c->links_cap;
	struct link_slot *old = c->links;

	c->links_cap = old_cap ? old_cap * 2 : 256;
	c->links = calloc(c->links_cap, sizeof(*c->links));
	if (!c->links) {
		c->links = old;
		c->links_cap = old_cap;
		return -ENOMEM;
	}
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].inode)
			*link_find(c, old[i].dev, old[i].ino) = old[i];
	free(old);
	return 0;
}

/* The inode already seen for a hard-linked file, or NULL (and remember ip). */
static int link_lookup(struct scan_ctx *c, const struct stat *st,
		       struct mk_inode *ip, struct mk_inode **seen)
{
	struct link_slot *s;
	int err;

	*seen = NULL;
	if (2 * (c->nlinks + 1) > c->links_cap) {
		err = link_grow(c);
		if (err)
			return err;
	}
	s = link_find(c, st->st_dev, st->st_ino);
	if (s->inode) {
		*seen = s->inode;
		return 0;
	}
	s->dev = st->st_dev;
	s->ino = st->st_ino;
	s->inode = ip;
	c->nlinks++;
	return 0;
}

int mk_inode_set_xattr(struct mk_inode *ip, const char *name,
		       const void *value, uint32_t len)
{
	struct mk_xattr *x = NULL, *n;
	void *v = malloc(len ? len : 1);
	unsigned i;

	if (!v)
		return -ENOMEM;
	memcpy(v, value, len);
	for (i = 0; i < ip->nxattrs && !x; i++)
		if (!strcmp(ip->xattrs[i].name, name))
			x = &ip->xattrs[i];
	if (!x) {
		n = realloc(ip->xattrs, (ip->nxattrs + 1) * sizeof(*n));
		if (n)
			ip->xattrs = n;
		x = n ? &n[ip->nxattrs] : NULL;
		if (x && !(x->name = strdup(name)))
			x = NULL;
		if (!x) {
			free(v);
			return -ENOMEM;
		}
		x->name_len = (unsigned)strlen(name);
		ip->nxattrs++;
	} else {
		free(x->value);
	}
	x->value = v;
	x->value_len = len;
	return 0;
}

/* fd's xattr calls when it is open (no walk from the root), else path's. */
static ssize_t list_names(int fd, const char *path, char *buf, size_t len)
{
	return fd >= 0 ? flistxattr(fd, buf, len) : llistxattr(path, buf, len);
}

static ssize_t get_value(int fd, const char *path, const char *name,
			 void *val, size_t len)
{
	return fd >= 0 ? fgetxattr(fd, name, val, len) :
			 lgetxattr(path, name, val, len);
}

static int xattr_add(struct mk_inode *ip, const char *name, int fd,
		     const char *path)
{
	ssize_t len;
	void *val;
	int err;

	len = get_value(fd, path, name, NULL, 0);
	if (len < 0)
		return errno == ENODATA ? 0 : -errno;
	if (len > CZFS_XATTR_SIZE_MAX) {
		fprintf(stderr, "mkfs.czfs: warning: %s: xattr %s too large, skipped\n",
			path, name);
		return 0;
	}
	val = malloc(len ? (size_t)len : 1);
	if (!val)
		return -ENOMEM;
	len = get_value(fd, path, name, val, (size_t)len);
	if (len < 0)
		err = errno == ERANGE ? -EAGAIN : -errno;
	else
		err = mk_inode_set_xattr(ip, name, val, (uint32_t)len);
	free(val);
	return err;
}

static int read_xattr_names(int fd, const char *path, char **out,
			    ssize_t *out_len)
{
	ssize_t len;
	char *buf;

	for (;;) {
		len = list_names(fd, path, NULL, 0);
		if (len < 0)
			return errno == ENOTSUP ? 0 : -errno;
		if (len == 0)
			return 0;
		buf = malloc((size_t)len);
		if (!buf)
			return -ENOMEM;
		*out_len = list_names(fd, path, buf, (size_t)len);
		if (*out_len >= 0) {
			*out = buf;
			return 0;
		}
		free(buf);
		if (errno != ERANGE)	/* ERANGE: an xattr was added, retry */
			return -errno;
	}
}

/* The xattrs of ip at rel, through fd when it is open (or -1). */
static int scan_xattrs(struct scan_ctx *c, struct mk_inode *ip, int fd,
		       const char *rel)
{
	const char *path = full_path(c, rel);
	char *names = NULL, *p;
	ssize_t len = 0;
	int err;

	if (strlen(path) >= sizeof(c->full) - 1)
		return -ENAMETOOLONG;
	err = read_xattr_names(fd, path, &names, &len);
	for (p = names; !err && p && p < names + len; p += strlen(p) + 1) {
		if (!czfs_xattr_name_ok(p, strlen(p))) {
			fprintf(stderr, "mkfs.czfs: warning: %s: xattr %s not supported, skipped\n",
				path, p);
			continue;
		}
		do {
			err = xattr_add(ip, p, fd, path);
		} while (err == -EAGAIN);
	}
	free(names);
	return err;
}

/*
 * The chattr flags czfs keeps, through fd (or -errno of its open): a
 * filesystem without FS_IOC_GETFLAGS has none, and the flags czfs lacks
 * are dropped silently, as ext4 reports extents (+e) on every file.
 */
static void scan_flags(struct scan_ctx *c, struct mk_inode *ip, int fd,
		       const char *rel)
{
	int fl = 0, err = fd < 0 ? -fd : 0;

	if (!err && ioctl(fd, FS_IOC_GETFLAGS, &fl))
		err = errno;
	if (!err)
		czfs_chattr_from_fs((unsigned)fl, &ip->flags);
	else if (!czfs_chattr_unsupported(-err))
		fprintf(stderr, "mkfs.czfs: warning: %s: chattr flags not read: %s\n",
			full_path(c, rel), strerror(err));
}

/*
 * Flags and xattrs of ip at rel, through fd: a regular file's open (or
 * -errno), else -1.  A directory's wait for scan_dir, which opens it.
 */
static int scan_meta(struct scan_ctx *c, struct mk_inode *ip, int fd,
		     const char *rel)
{
	if (S_ISDIR(ip->mode))
		return 0;
	if (S_ISREG(ip->mode))
		scan_flags(c, ip, fd, rel);
	return scan_xattrs(c, ip, fd, rel);
}

static int read_symlink(int dirfd, const char *name, struct mk_inode *ip)
{
	char buf[CZFS_SYMLINK_MAX + 1];
	ssize_t n = readlinkat(dirfd, name, buf, sizeof(buf));

	if (n < 0)
		return -errno;
	if (n == 0 || n > CZFS_SYMLINK_MAX)
		return -ENAMETOOLONG;
	ip->target = strndup(buf, (size_t)n);
	if (!ip->target)
		return -ENOMEM;
	ip->size = (uint64_t)n;
	return 0;
}

static void fill_stat(struct scan_ctx *c, struct mk_inode *ip,
		      const struct stat *st)
{
	ip->mode = st->st_mode;
	ip->nlink = 1;
	ip->uid = c->o->uid >= 0 ? (uint32_t)c->o->uid : st->st_uid;
	ip->gid = c->o->gid >= 0 ? (uint32_t)c->o->gid : st->st_gid;
	ip->atime = st->st_atim;
	ip->mtime = st->st_mtim;
	ip->ctime = st->st_ctim;
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) {
		ip->rdev_major = major(st->st_rdev);
		ip->rdev_minor = minor(st->st_rdev);
	}
	if (S_ISREG(st->st_mode)) {
		uint64_t alloc = (uint64_t)st->st_blocks * 512;

		ip->size = (uint64_t)st->st_size;
		ip->maybe_sparse = alloc < ip->size;
		c->t->data_bytes += MIN(alloc, ip->size);
	}
}

static char *join_path(const char *dir, const char *name)
{
	size_t dl = strlen(dir), nl = strlen(name);
	char *p;

	if (!strcmp(dir, "."))
		return strdup(name);
	p = malloc(dl + nl + 2);
	if (!p)
		return NULL;
	memcpy(p, dir, dl);
	p[dl] = '/';
	memcpy(p + dl + 1, name, nl + 1);
	return p;
}

/* Make the inode for one directory entry of stat st, fd as scan_meta's. */
static int add_entry(struct scan_ctx *c, struct mk_inode *dir, int dirfd,
		     struct mk_dentry *de, char *rel, const struct stat *st,
		     int fd)
{
	struct mk_inode *ip, *seen;
	int err;

	if (c->o->exclude && st->st_dev == c->o->exclude_dev &&
	    st->st_ino == c->o->exclude_ino)
		return 1;
	ip = calloc(1, sizeof(*ip));
	if (!ip)
		return -ENOMEM;
	if (!S_ISDIR(st->st_mode) && st->st_nlink > 1) {
		err = link_lookup(c, st, ip, &seen);
		if (err || seen) {
			free(ip);
			if (seen) {
				seen->nlink++;
				de->inode = seen;
			}
			return err;
		}
	}
	err = mk_tree_add(c->t, ip);
	if (err) {
		free(ip);
		return err;
	}
	de->inode = ip;
	fill_stat(c, ip, st);
	if (S_ISDIR(st->st_mode) || S_ISREG(st->st_mode))
		ip->path = rel;		/* the tree owns it now */
	if (S_ISDIR(st->st_mode)) {
		ip->nlink = 2;
		ip->parent = dir->ino;
		dir->nlink++;
		c->t->ndirs++;
	} else {
		c->t->nfiles++;
		c->t->bytes += ip->size;
	}
	if (S_ISLNK(st->st_mode)) {
		err = read_symlink(dirfd, de->name, ip);
		c->t->bytes += ip->size;
	}
	return err ? err : scan_meta(c, ip, fd, rel);
}

/* A regular file's open for its flags and xattrs: fd or -errno. */
static int open_file(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW |
			O_NOCTTY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/*
 * One directory entry: a new inode, or a hard link.  A regular file
 * (as readdir says) is opened before its stat: fstat on the fd costs
 * less than fstatat, which pays for much of the open.
 */
static int scan_entry(struct scan_ctx *c, struct mk_inode *dir, int dirfd,
		      struct mk_dentry *de, char *rel)
{
	int fd = -1, err;
	struct stat st;

	if (de->name_len > CZFS_NAME_MAX)
		return -ENAMETOOLONG;
	if (de->type == DT_REG)
		fd = open_file(dirfd, de->name);
	if (fd >= 0 ? fstat(fd, &st) :
	    fstatat(dirfd, de->name, &st, AT_SYMLINK_NOFOLLOW)) {
		err = -errno;
	} else {
		if (S_ISREG(st.st_mode) && de->type != DT_REG)
			fd = open_file(dirfd, de->name);
		err = add_entry(c, dir, dirfd, de, rel, &st, fd);
	}
	if (fd >= 0)
		close(fd);
	return err;
}

static int dentry_cmp(const void *a, const void *b)
{
	const struct mk_dentry *x = a, *y = b;

	return strcmp(x->name, y->name);	/* bytewise, as unsigned char */
}

static int read_names(struct mk_inode *dir, DIR *d)
{
	unsigned cap = 0;
	struct dirent *e;

	for (;;) {
		errno = 0;
		e = readdir(d);
		if (!e)
			return -errno;
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (CZFS_GROW(dir->dents, dir->ndents, cap, 16))
			return -ENOMEM;
		dir->dents[dir->ndents].name = strdup(e->d_name);
		if (!dir->dents[dir->ndents].name)
			return -ENOMEM;
		dir->dents[dir->ndents].name_len = (unsigned)strlen(e->d_name);
		dir->dents[dir->ndents].type = e->d_type;
		dir->dents[dir->ndents++].inode = NULL;
	}
}

/* Scan the sorted entries of dir; drops the excluded one (the image). */
static int scan_entries(struct scan_ctx *c, struct mk_inode *dir, int dirfd)
{
	unsigned i, j = 0;
	int err = 0;

	for (i = 0; i < dir->ndents && err <= 0; i++) {
		struct mk_dentry *de = &dir->dents[i];
		char *rel = join_path(dir->path, de->name);

		err = rel ? scan_entry(c, dir, dirfd, de, rel) : -ENOMEM;
		if (err == -ENAMETOOLONG)
			fprintf(stderr, "mkfs.czfs: %s: name too long\n",
				full_path(c, rel));
		else if (err < 0)
			scan_fail(c, rel ? rel : dir->path, err);
		if (!de->inode || de->inode->path != rel)
			free(rel);
		if (err > 0) {
			free(de->name);
			err = 0;
			continue;
		}
		dir->dents[j++] = *de;
	}
	for (; i < dir->ndents; i++)
		dir->dents[j++] = dir->dents[i];
	dir->ndents = j;
	return err;
}

static int scan_dir(struct scan_ctx *c, struct mk_inode *dir)
{
	int fd, err;
	DIR *d;

	fd = openat(c->t->rootfd, dir->path, O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return scan_fail(c, dir->path, -errno);
	scan_flags(c, dir, fd, dir->path);
	err = scan_xattrs(c, dir, fd, dir->path);
	if (err) {
		close(fd);
		return scan_fail(c, dir->path, err);
	}
	d = fdopendir(fd);
	if (!d) {
		err = -errno;
		close(fd);
		return scan_fail(c, dir->path, err);
	}
	err = read_names(dir, d);
	if (err) {
		closedir(d);
		return scan_fail(c, dir->path, err);
	}
	if (dir->ndents)	/* an empty directory has no array */
		qsort(dir->dents, dir->ndents, sizeof(*dir->dents), dentry_cmp);
	err = scan_entries(c, dir, dirfd(d));
	closedir(d);
	return err;
}

static int scan_root(struct scan_ctx *c, const char *dir)
{
	struct mk_inode *root;
	struct stat st;
	int err;

	c->t->rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->t->rootfd < 0 || fstat(c->t->rootfd, &st)) {
		err = -errno;
		fprintf(stderr, "mkfs.czfs: %s: %s\n", dir, strerror(errno));
		return err;
	}
	root = calloc(1, sizeof(*root));
	if (!root || !(root->path = strdup("."))) {
		free(root);
		return -ENOMEM;
	}
	err = mk_tree_add(c->t, root);
	if (err) {
		free(root->path);
		free(root);
		return err;
	}
	fill_stat(c, root, &st);
	root->nlink = 2;
	root->parent = CZFS_ROOT_INO;
	c->t->ndirs = 1;
	return 0;		/* its flags and xattrs: scan_dir */
}

int mk_scan(const char *dir, const struct mk_scan_opts *o, struct mk_tree *t)
{
	struct scan_ctx c = { .t = t, .o = o };
	int err;

	memset(t, 0, sizeof(*t));
	t->datafd = t->tarfd = -1;
	t->root = dir;
	err = scan_root(&c, dir);
	/* Walking the array while appending to it: breadth-first order. */
	for (uint64_t i = 0; !err && i < t->count; i++)
		if (S_ISDIR(t->inodes[i]->mode))
			err = scan_dir(&c, t->inodes[i]);
	free(c.links);
	return err;
}

int mk_tree_empty(uid_t uid, gid_t gid, struct mk_tree *t)
{
	struct mk_inode *root;
	struct timespec now;

	memset(t, 0, sizeof(*t));
	t->rootfd = t->datafd = t->tarfd = -1;
	t->root = "";
	root = calloc(1, sizeof(*root));
	if (!root)
		return -ENOMEM;
	clock_gettime(CLOCK_REALTIME, &now);
	root->mode = S_IFDIR | 0755;
	root->nlink = 2;
	root->uid = uid;
	root->gid = gid;
	root->atime = root->mtime = root->ctime = now;
	root->parent = CZFS_ROOT_INO;
	t->ndirs = 1;
	if (mk_tree_add(t, root)) {
		free(root);
		return -ENOMEM;
	}
	return 0;
}

int mk_tree_open(const struct mk_tree *t, const struct mk_inode *ip,
		 uint64_t *base)
{
	int fd;

	*base = 0;
	if (t->datafd >= 0 && ip->data_off < t->spool_base) {
		*base = ip->data_off;
		fd = fcntl(t->tarfd, F_DUPFD_CLOEXEC, 0);
	} else if (t->datafd >= 0) {
		*base = ip->data_off - t->spool_base;
		fd = fcntl(t->datafd, F_DUPFD_CLOEXEC, 0);
	} else
		fd = openat(t->rootfd, ip->path, O_RDONLY | O_NOFOLLOW |
			    O_NOCTTY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

void mk_inode_clear_xattrs(struct mk_inode *ip)
{
	for (unsigned i = 0; i < ip->nxattrs; i++) {
		free(ip->xattrs[i].name);
		free(ip->xattrs[i].value);
	}
	free(ip->xattrs);
	ip->xattrs = NULL;
	ip->nxattrs = 0;
}

void mk_inode_free(struct mk_inode *ip)
{
	mk_inode_clear_xattrs(ip);
	for (unsigned i = 0; i < ip->ndents; i++)
		free(ip->dents[i].name);
	free(ip->dents);
	free(ip->path);
	free(ip->target);
	free(ip);
}

void mk_tree_free(struct mk_tree *t)
{
	for (uint64_t i = 0; i < t->count; i++)
		mk_inode_free(t->inodes[i]);
	free(t->inodes);
	if (t->rootfd >= 0)
		close(t->rootfd);
	if (t->datafd >= 0)
		close(t->datafd);
	if (t->tarfd >= 0)
		close(t->tarfd);
	mk_preenc_free(t->pre);
	memset(t, 0, sizeof(*t));
	t->rootfd = t->datafd = t->tarfd = -1;
}
