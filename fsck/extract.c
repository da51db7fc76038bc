// SPDX-License-Identifier: MIT
/*
 * The walk of --extract and --tar (extract.h), and --extract DIR: the
 * tree written out with its metadata (modes, owners, nanosecond times,
 * xattrs, chattr flags), hard links as hard links, holes as holes.
 * --tar FILE writes the same walk's inodes as members (extract_tar.c).
 * A damaged file or directory is reported and skipped (or left short);
 * the rest is written.  A directory met twice (two names, a cycle) is
 * written once.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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
#include "dir.h"
#include "extract.h"
#include "util.h"
#include "xattr.h"

/* A file or directory whose chattr flags are set at the end. */
struct xt_flags {
	char *path;
	uint32_t flags;			/* CZFS_INODE_* */
};

/* ---- the map of inodes written -------------------------------------------- */

static size_t map_slot(const struct xt_map *m, uint64_t ino)
{
	size_t i = (size_t)(ino * 0x9e3779b97f4a7c15ull) & (m->cap - 1);

	while (m->keys[i] && m->keys[i] != ino)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static char **map_find(struct xt_map *m, uint64_t ino)
{
	size_t i;

	if (!m->cap)
		return NULL;
	i = map_slot(m, ino);
	return m->keys[i] ? &m->paths[i] : NULL;
}

static int map_grow(struct xt_map *m)
{
	struct xt_map g = { .cap = m->cap ? m->cap * 2 : 1024 };

	g.keys = calloc(g.cap, sizeof(*g.keys));
	g.paths = calloc(g.cap, sizeof(*g.paths));
	if (!g.keys || !g.paths) {
		free(g.keys);
		free(g.paths);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (!m->keys[i])
			continue;
		j = map_slot(&g, m->keys[i]);
		g.keys[j] = m->keys[i];
		g.paths[j] = m->paths[i];
	}
	g.n = m->n;
	free(m->keys);
	free(m->paths);
	*m = g;
	return 0;
}

static int map_add(struct xt_map *m, uint64_t ino, const char *path)
{
	size_t i;

	if (2 * (m->n + 1) > m->cap && map_grow(m))
		return -ENOMEM;
	i = map_slot(m, ino);
	if (path && !(m->paths[i] = strdup(path)))
		return -ENOMEM;
	m->keys[i] = ino;
	m->n++;
	return 0;
}

static void map_free(struct xt_map *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->paths[i]);
	free(m->keys);
	free(m->paths);
}

/* ---- messages ---------------------------------------------------------- */

void xt_damaged(struct xt *x, uint64_t ino, const char *what, int err)
{
	x->damaged++;
	fsck_error(x->c, "extract: %s (inode %" PRIu64 "): %s: %s", x->path,
		   ino, what, strerror(-err));
}

/* A full or read-only output, or a cut stream, takes nothing more: the
 * walk stops there, said once (not once for each file left). */
void xt_out_error(struct xt *x, const char *what, int err)
{
	if (x->cut)
		return;
	if (!x->out_err)
		x->out_err = err;
	fprintf(stderr, "fsck.czfs: extract: %s: %s: %s\n", x->path, what,
		strerror(err));
	x->cut = x->ar || err == ENOSPC || err == EDQUOT || err == EROFS;
	if (x->cut && !x->ar)
		fprintf(stderr, "fsck.czfs: extract: stopped: the output takes nothing more\n");
}

/* ---- metadata ---------------------------------------------------------- */

void xt_xattrs(struct xt *x, uint64_t ino, struct archive_entry *e)
{
	char *names = NULL;
	int len, vlen;

	pthread_rwlock_rdlock(&x->fs->lock);
	len = czfs_xattr_list(x->fs, ino, NULL, 0);
	if (len > 0 && (names = malloc((size_t)len)))
		len = czfs_xattr_list(x->fs, ino, names, (size_t)len);
	for (int pos = 0; names && len > 0 && pos < len;
	     pos += (int)strlen(names + pos) + 1) {
		vlen = czfs_xattr_get(x->fs, ino, names + pos, x->buf,
				      CZFS_XATTR_SIZE_MAX);
		if (vlen < 0)
			xt_damaged(x, ino, names + pos, vlen);
		else if (e)
			xt_tar_xattr(e, names + pos, x->buf, (size_t)vlen);
		else if (lsetxattr(x->path, names + pos, x->buf, (size_t)vlen,
				   0))
			xt_out_error(x, names + pos, errno);
	}
	pthread_rwlock_unlock(&x->fs->lock);
	if (len < 0)
		xt_damaged(x, ino, "xattrs", len);
	free(names);
}

static void set_meta(struct xt *x, const struct czfs_inode_info *ii)
{
	struct timespec ts[2] = { ii->atime, ii->mtime };

	if (lchown(x->path, ii->uid, ii->gid))
		xt_out_error(x, "chown", errno);
	/* after chown, which clears the set-id bits */
	if (!S_ISLNK(ii->mode) && chmod(x->path, ii->mode & 07777))
		xt_out_error(x, "chmod", errno);
	xt_xattrs(x, ii->ino, NULL);
	if (utimensat(AT_FDCWD, x->path, ts, AT_SYMLINK_NOFOLLOW))
		xt_out_error(x, "utimensat", errno);
}

/* ---- chattr flags ---------------------------------------------------- */

/*
 * Remember ii's flags for the end of the walk: +i and +a then forbid
 * nothing still to come (a hard link to the file, a directory's
 * entries, its times), and setting flags changes no time but ctime.
 */
static void keep_flags(struct xt *x, const struct czfs_inode_info *ii)
{
	struct xt_flags f = { NULL, ii->flags & CZFS_INODE_FLAGS_KNOWN };

	if (!f.flags)
		return;
	f.path = strdup(x->path);
	if (!f.path || !fsck_vec_push(&x->flagged, &f)) {
		free(f.path);
		xt_out_error(x, "memory", ENOMEM);
	}
}

/* Set the flags czfs keeps of fd (now old) to flags, the others as they
 * are (ext4's extents); 0 or -errno. */
static int apply_flags(int fd, int old, uint32_t flags)
{
	unsigned ours = czfs_chattr_to_fs(CZFS_INODE_FLAGS_KNOWN);
	int want = (int)(((unsigned)old & ~ours) | czfs_chattr_to_fs(flags));

	return want == old || !ioctl(fd, FS_IOC_SETFLAGS, &want) ? 0 : -errno;
}

/* Whether err says that the output takes no such flags (or not from us:
 * not root). */
static bool no_flags(int err)
{
	return czfs_chattr_unsupported(err) || err == -EPERM;
}

/* flags to path; 0 or -errno. */
static int put_flags(const char *path, uint32_t flags)
{
	uint32_t hints = CZFS_INODE_COMPRESS | CZFS_INODE_NOCOMPRESS;
	int fd, old, err;
	bool got;

	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY |
		  O_CLOEXEC);
	if (fd < 0)
		return -errno;
	got = !ioctl(fd, FS_IOC_GETFLAGS, &old);
	err = got ? apply_flags(fd, old, flags) : -errno;
	/* +c and +m (the daemon sets them by file name) are hints to a
	 * filesystem that compresses: where refused, the rest alone */
	if (no_flags(err) && (flags & hints)) {
		flags &= ~hints;
		if (!flags)
			err = 0;
		else if (got)
			err = apply_flags(fd, old, flags);
	}
	close(fd);
	return err;
}

/*
 * Every flag kept for the end.  An output that takes no flags (no
 * FS_IOC_SETFLAGS, or not root) is said once, not per file; like an
 * xattr or owner it cannot take, it makes the extraction's exit 8.
 */
static void set_flags(struct xt *x)
{
	unsigned long refused = 0;
	const char *first = NULL;
	int why = 0;

	for (size_t i = 0; i < x->flagged.n; i++) {
		struct xt_flags *f = fsck_vec_at(&x->flagged, struct xt_flags, i);
		int err = put_flags(f->path, f->flags);

		if (no_flags(err)) {
			if (!refused++) {
				first = f->path;
				why = -err;
			}
		} else if (err) {
			snprintf(x->path, sizeof(x->path), "%s", f->path);
			xt_out_error(x, "chattr flags", -err);
		}
	}
	if (!refused)
		return;
	fprintf(stderr, "fsck.czfs: extract: chattr flags of %lu file%s not set (%s: %s)\n",
		refused, refused == 1 ? "" : "s", first, strerror(why));
	if (!x->out_err)
		x->out_err = why;
}

/* ---- regular files and symlinks ------------------------------------- */

static int collect_idx(void *arg, const struct czfs_key *key, const void *val,
		       unsigned size)
{
	struct idx_batch *b = arg;

	b->idx[b->n++] = key->offset;
	return b->n == XT_BATCH;
}

int xt_next_clusters(struct xt *x, uint64_t ino, uint64_t next,
		     struct idx_batch *b)
{
	struct czfs_key first = { ino, CZFS_ITEM_CLUSTER, next };
	struct czfs_key last = { ino, CZFS_ITEM_CLUSTER, CZFS_KEY_OFFSET_MASK };
	int ret;

	b->n = 0;
	pthread_rwlock_rdlock(&x->fs->lock);
	ret = czfs_btree_iterate(&x->fs->tree, &first, &last, collect_idx, b);
	pthread_rwlock_unlock(&x->fs->lock);
	return ret < 0 ? ret : 0;
}

/* Write the clusters that exist; holes stay holes. */
static void write_data(struct xt *x, const struct czfs_inode_info *ii, int fd)
{
	uint32_t cbytes = czfs_inode_cluster_bytes(ii);
	uint64_t count = DIV_ROUND_UP(ii->size, cbytes), next = 0;
	struct idx_batch b;
	int err, e;

	do {
		err = xt_next_clusters(x, ii->ino, next, &b);
		for (unsigned i = 0; !err && i < b.n && b.idx[i] < count; i++) {
			uint64_t off = b.idx[i] * cbytes;
			long n = czfs_file_pread(x->fs, x->c->codec, ii, x->buf,
						 MIN(cbytes, ii->size - off), off);

			if (n < 0)
				xt_damaged(x, ii->ino, "data", (int)n);
			else if ((e = czfs_pwrite_full(fd, x->buf, (size_t)n, off)))
				xt_out_error(x, "write", -e);
		}
		if (b.n)
			next = b.idx[b.n - 1] + 1;
	} while (!err && b.n == XT_BATCH && next < count);
	if (err)
		xt_damaged(x, ii->ino, "cluster map", err);
}

static void extract_file(struct xt *x, const struct czfs_inode_info *ii)
{
	int fd;

	if (x->ar) {
		xt_tar_file(x, ii);
		return;
	}
	fd = open(x->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd < 0) {
		xt_out_error(x, "create", errno);
		return;
	}
	write_data(x, ii, fd);
	if (ftruncate(fd, (off_t)ii->size))
		xt_out_error(x, "truncate", errno);
	if (close(fd))
		xt_out_error(x, "close", errno);
	set_meta(x, ii);
	keep_flags(x, ii);
}

static void extract_symlink(struct xt *x, const struct czfs_inode_info *ii)
{
	char target[CZFS_SYMLINK_MAX + 1];
	long n = czfs_file_pread(x->fs, x->c->codec, ii, target,
				 CZFS_SYMLINK_MAX, 0);

	if (n < 0 || (size_t)n != ii->size || memchr(target, 0, (size_t)n)) {
		xt_damaged(x, ii->ino, "symlink target", n < 0 ? (int)n : -EFSCORRUPTED);
		return;
	}
	target[n] = '\0';
	if (x->ar)
		xt_tar_member(x, ii, target, NULL);
	else if (symlink(target, x->path))
		xt_out_error(x, "symlink", errno);
	else
		set_meta(x, ii);
}

static void extract_node(struct xt *x, const struct czfs_inode_info *ii)
{
	dev_t dev = makedev(ii->rdev_major, ii->rdev_minor);

	if (x->ar) {
		xt_tar_member(x, ii, NULL, NULL);
		return;
	}
	if (mknod(x->path, (ii->mode & S_IFMT) | 0600, dev)) {
		if (S_ISSOCK(ii->mode)) {
			fsck_note(x->c, "extract: %s: socket not created: %s",
				  x->path, strerror(errno));
			return;
		}
		xt_out_error(x, "mknod", errno);
		return;
	}
	set_meta(x, ii);
}

/* ---- directories --------------------------------------------------------- */

struct xt_entry {
	uint64_t ino;
	size_t name;			/* offset in the names buffer */
};

struct xt_list {
	struct fsck_vec entries;	/* struct xt_entry */
	struct fsck_vec names;		/* NUL-terminated names */
};

static int collect_entry(void *arg, const struct czfs_dirent *de, uint64_t next)
{
	struct xt_list *l = arg;
	struct xt_entry e = { de->ino, l->names.n };
	static const char nul;

	for (unsigned i = 0; i < de->name_len; i++)
		if (!fsck_vec_push(&l->names, &de->name[i]))
			return -ENOMEM;
	if (!fsck_vec_push(&l->names, &nul) || !fsck_vec_push(&l->entries, &e))
		return -ENOMEM;
	return 0;
}

static void extract_inode(struct xt *x, uint64_t ino);

static void extract_entries(struct xt *x, uint64_t dir)
{
	struct xt_list l = { FSCK_VEC(struct xt_entry), FSCK_VEC(char) };
	size_t plen = x->plen;
	int err;

	pthread_rwlock_rdlock(&x->fs->lock);
	err = czfs_dir_iterate(x->fs, dir, 0, collect_entry, &l);
	pthread_rwlock_unlock(&x->fs->lock);
	if (err)
		xt_damaged(x, dir, "directory entries", err);
	for (size_t i = 0; i < l.entries.n; i++) {
		const struct xt_entry *e = fsck_vec_at(&l.entries, struct xt_entry, i);
		const char *name = (const char *)l.names.v + e->name;
		size_t nlen = strlen(name);

		if (plen + 1 + nlen >= sizeof(x->path)) {
			xt_out_error(x, "path too long", ENAMETOOLONG);
			continue;
		}
		x->path[plen] = '/';
		memcpy(x->path + plen + 1, name, nlen + 1);
		x->plen = plen + 1 + nlen;
		extract_inode(x, e->ino);
		x->path[plen] = '\0';
		x->plen = plen;
	}
	fsck_vec_free(&l.entries);
	fsck_vec_free(&l.names);
}

static void extract_dir(struct xt *x, const struct czfs_inode_info *ii,
			bool top)
{
	if (x->ar) {	/* the directory's member before its entries' */
		xt_tar_member(x, ii, NULL, NULL);
		extract_entries(x, ii->ino);
		return;
	}
	if (mkdir(x->path, 0700) && !(top && errno == EEXIST)) {
		xt_out_error(x, "mkdir", errno);
		return;
	}
	extract_entries(x, ii->ino);
	set_meta(x, ii);
	keep_flags(x, ii);
}

/* A hard link to a file written before? */
static bool link_again(struct xt *x, const struct czfs_inode_info *ii)
{
	char **first = map_find(&x->seen, ii->ino);

	if (!first)
		return false;
	if (S_ISDIR(ii->mode))
		fsck_error(x->c, "extract: %s: directory %" PRIu64 " met again, skipped",
			   x->path, ii->ino);
	else if (x->ar)
		xt_tar_member(x, ii, NULL, *first);
	else if (link(*first, x->path))
		xt_out_error(x, "link", errno);
	return true;
}

static void extract_inode(struct xt *x, uint64_t ino)
{
	struct czfs_inode_info ii;
	bool top = ino == CZFS_ROOT_INO;
	int err;

	if (x->cut)
		return;
	pthread_rwlock_rdlock(&x->fs->lock);
	err = czfs_inode_read(&x->fs->tree, ino, &ii);
	pthread_rwlock_unlock(&x->fs->lock);
	if (err) {
		xt_damaged(x, ino, "inode", err == -ENOENT ? -EFSCORRUPTED : err);
		return;
	}
	if (link_again(x, &ii))
		return;
	/* directories to meet them once, files with links to link them */
	if ((S_ISDIR(ii.mode) || ii.nlink > 1) &&
	    map_add(&x->seen, ino, S_ISDIR(ii.mode) ? NULL : x->path)) {
		xt_out_error(x, "memory", ENOMEM);
		return;
	}
	if (S_ISDIR(ii.mode))
		extract_dir(x, &ii, top);
	else if (S_ISREG(ii.mode))
		extract_file(x, &ii);
	else if (S_ISLNK(ii.mode))
		extract_symlink(x, &ii);
	else
		extract_node(x, &ii);
}

int xt_walk(struct fsck_ctx *c, const char *dir, struct archive *ar)
{
	struct xt *x = calloc(1, sizeof(*x));
	int ret;

	if (!x)
		return -ENOMEM;
	x->c = c;
	x->fs = c->fs;
	x->ar = ar;
	x->flagged = FSCK_VEC(struct xt_flags);
	x->buf = aligned_alloc(CZFS_BLOCK_SIZE, CZFS_MAX_CLUSTER_SIZE);
	x->zeros = ar ? calloc(1, CZFS_MAX_CLUSTER_SIZE) : NULL;
	if (!x->buf || (ar && !x->zeros) || strlen(dir) >= sizeof(x->path)) {
		ret = x->buf && (!ar || x->zeros) ? -ENAMETOOLONG : -ENOMEM;
		goto out;
	}
	strcpy(x->path, dir);
	x->plen = strlen(dir);
	while (x->plen > 1 && x->path[x->plen - 1] == '/')
		x->path[--x->plen] = '\0';
	extract_inode(x, CZFS_ROOT_INO);
	set_flags(x);
	ret = x->out_err ? -x->out_err : x->damaged ? 1 : 0;
out:
	for (size_t i = 0; i < x->flagged.n; i++)
		free(fsck_vec_at(&x->flagged, struct xt_flags, i)->path);
	fsck_vec_free(&x->flagged);
	map_free(&x->seen);
	free(x->buf);
	free(x->zeros);
	free(x);
	return ret;
}

int fsck_extract(struct fsck_ctx *c, const char *dir)
{
	return xt_walk(c, dir, NULL);
}
