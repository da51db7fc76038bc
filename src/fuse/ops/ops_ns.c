// SPDX-License-Identifier: MIT
/*
 * The namespace: create, mknod, mkdir, symlink, link, unlink, rmdir,
 * rename.  Each runs as one step of the running transaction under
 * fs->lock (exclusive) and stores every inode it changes.
 */
#include "config.h"

#include <dirent.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/sysmacros.h>

#include "acl.h"
#include "bdev.h"
#include "cluster.h"
#include "compress.h"
#include "daemon.h"
#include "dir.h"
#include "flushreq.h"
#include "fs.h"
#include "log.h"
#include "minode.h"
#include "ops.h"
#include "room.h"
#include "thread.h"
#include "util.h"
#include "xattr.h"

#define ACL_MAX		(4 + 8 * CZFS_ACL_MAX_ENTRIES)

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE	(1 << 0)
#define RENAME_EXCHANGE		(1 << 1)
#endif
#ifndef RENAME_WHITEOUT
#define RENAME_WHITEOUT		(1 << 2)
#endif

/* Inodes an operation took: put after fs->lock is dropped. */
struct held {
	struct czfs_minode *mi[4];
	unsigned n;
};

static int hold(struct czfs_daemon *dm, struct held *h, uint64_t ino,
		struct czfs_minode **out)
{
	int err = czfs_mi_get(dm, ino, true, out);

	if (!err)
		h->mi[h->n++] = *out;
	return err;
}

static void release(struct czfs_daemon *dm, struct held *h)
{
	for (unsigned i = 0; i < h->n; i++)
		czfs_mi_put(dm, h->mi[i]);
	h->n = 0;
}

static void touch(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
}

/* Store mi (fs->lock held exclusive). */
static int store(struct czfs_daemon *dm, struct czfs_minode *mi)
{
	int err;

	pthread_mutex_lock(&mi->lock);
	err = czfs_mi_store(dm->fs, mi, NULL);
	if (!err)
		mi->ii_dirty = false;
	pthread_mutex_unlock(&mi->lock);
	return err;
}

/* A parent gained or lost an entry (delta), a subdirectory (subdirs). */
static int parent_changed(struct czfs_daemon *dm, struct czfs_minode *p,
			  int delta, int subdirs)
{
	pthread_mutex_lock(&p->lock);
	p->ii.nentries = (uint64_t)((int64_t)p->ii.nentries + delta);
	p->ii.size = p->ii.nentries;
	p->ii.nlink = (uint32_t)((int32_t)p->ii.nlink + subdirs);
	touch(&p->ii.mtime);
	p->ii.ctime = p->ii.mtime;
	pthread_mutex_unlock(&p->lock);
	return store(dm, p);
}

/* One link of mi went away; the last one makes it an orphan. */
static int drop_link(struct czfs_daemon *dm, struct czfs_minode *mi)
{
	bool gone;

	pthread_mutex_lock(&mi->lock);
	if (S_ISDIR(mi->ii.mode) || mi->ii.nlink <= 1)
		mi->ii.nlink = 0;
	else
		mi->ii.nlink--;
	touch(&mi->ii.ctime);
	gone = !mi->ii.nlink;
	mi->unlinked = gone;
	pthread_mutex_unlock(&mi->lock);
	return (gone ? czfs_orphan_add(dm->fs, mi->ino) : 0) ?: store(dm, mi);
}

/* Take fs->lock for a change (end() gives it back, whatever this
 * returns): 0, -EROFS, or the transaction's error. */
static int begin(struct czfs_daemon *dm)
{
	pthread_rwlock_wrlock(&dm->fs->lock);
	return dm->opts.ro ? -EROFS : czfs_fs_begin(dm->fs);
}

static void end(struct czfs_daemon *dm, struct held *h)
{
	pthread_rwlock_unlock(&dm->fs->lock);
	czfs_flushreq_change(dm);
	release(dm, h);
}

static int get_dir(struct czfs_daemon *dm, struct held *h, uint64_t ino,
		   struct czfs_minode **out)
{
	int err = hold(dm, h, ino, out);

	if (!err && !S_ISDIR((*out)->ii.mode))
		err = -ENOTDIR;
	if (!err && (*out)->unlinked)
		err = -ENOENT;
	return err;
}

/* begin() a change of a name of len bytes in directory parent, held in
 * *p; end() after it. */
static int begin_in(struct czfs_daemon *dm, struct held *h, uint64_t parent,
		    size_t len, struct czfs_minode **p)
{
	int err = begin(dm);

	if (!err && len > CZFS_NAME_MAX)
		err = -ENAMETOOLONG;
	return err ?: get_dir(dm, h, parent, p);
}

/* The reply for a new name: attributes, and the kernel's reference. */
static int reply_entry(struct czfs_daemon *dm, uint64_t ino,
		       struct fuse_entry_param *e)
{
	struct czfs_inode_info ii;
	struct czfs_minode *mi;
	int err = czfs_mi_get(dm, ino, false, &mi);

	if (err)
		return err;
	czfs_mi_attr(mi, &ii);
	czfs_fuse_fill_entry(dm, &ii, e);
	czfs_mi_lookup(dm, mi, 1);
	czfs_mi_put(dm, mi);
	return 0;
}

/* ---- new inodes ------------------------------------------------------------ */

static bool has_extension(const char *name, char *const *list, unsigned n)
{
	const char *dot = strrchr(name, '.');

	for (unsigned i = 0; dot && i < n; i++)
		if (!strcasecmp(dot + 1, list[i]))
			return true;
	return false;
}

static void new_inode(struct czfs_daemon *dm, fuse_req_t req,
		      const struct czfs_inode_info *parent, const char *name,
		      mode_t mode, dev_t rdev, struct czfs_inode_info *ii)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	const struct czfs_sb_info *sb = &dm->fs->sb;

	memset(ii, 0, sizeof(*ii));
	ii->mode = mode;
	ii->uid = ctx->uid;
	ii->gid = ctx->gid;
	if (parent->mode & S_ISGID) {	/* setgid directories pass on their group */
		ii->gid = parent->gid;
		if (S_ISDIR(mode))
			ii->mode |= S_ISGID;
	}
	ii->nlink = S_ISDIR(mode) ? 2 : 1;
	ii->rdev_major = major(rdev);
	ii->rdev_minor = minor(rdev);
	ii->parent = S_ISDIR(mode) ? parent->ino : 0;
	ii->alg = dm->opts.alg >= 0 ? (unsigned)dm->opts.alg : sb->default_alg;
	ii->level = dm->opts.alg >= 0 ? dm->opts.level : sb->default_level;
	ii->cluster_shift = sb->cluster_shift;
	/* as ext4's inherited flags: chattr +A and +d of the directory */
	ii->flags = parent->flags & (CZFS_INODE_NOATIME | CZFS_INODE_NODUMP);
	/* f2fs semantics: nocompress_extension wins over compress_extension */
	if (has_extension(name, dm->opts.nocompress_ext, dm->opts.n_nocompress_ext))
		ii->flags |= CZFS_INODE_NOCOMPRESS;
	else if (has_extension(name, dm->opts.compress_ext, dm->opts.n_compress_ext))
		ii->flags |= CZFS_INODE_COMPRESS;
	touch(&ii->mtime);
	ii->atime = ii->ctime = ii->btime = ii->mtime;
}

/* A symlink's target is its data: cluster 0, inline when small. */
static int store_target(struct czfs_daemon *dm, struct czfs_inode_info *ii,
			const char *target, size_t len)
{
	/* written as it is: aligned for -o direct_io's O_DIRECT */
	uint8_t out[CZFS_MAX_CLUSTER_SIZE + CZFS_BLOCK_SIZE]
		__attribute__((aligned(CZFS_BLOCK_SIZE)));
	struct czfs_cluster_policy pol = { .alg = CZFS_ALG_NONE,
					   .allow_inline = true };
	struct czfs_thread *t = czfs_fuse_thread();
	struct czfs_cluster_info ci;
	struct czfs_stored delta = { 0 };
	unsigned out_len;
	uint64_t blk;
	int err;

	if (!t)
		return -ENOMEM;
	err = czfs_cluster_encode(t->codec, &pol, target, (unsigned)len, out, &ci,
				  &out_len);
	if (!err && ci.nblocks) {
		err = czfs_room_write(dm, out, out_len, ci.nblocks, &blk);
		ci.blkaddr = blk;
	}
	if (!err) {
		err = czfs_cluster_set(dm->fs, ii->ino, 0, &ci, &delta);
		if (err && ci.nblocks)	/* nothing links them */
			czfs_room_give_back(dm, blk, ci.nblocks);
	}
	ii->blocks = 0;
	ii->inline_bytes = 0;
	czfs_inode_add_stored(ii, &delta);
	ii->size = len;
	return err ?: czfs_inode_store(dm->fs, ii);
}

/*
 * Mode and ACLs of a new inode: the parent's default ACL when it has one
 * (posix_acl_create: no umask then), else the umask.  acl/acl_len: the
 * access ACL to store, if any.
 */
static int inherit_acl(struct czfs_daemon *dm, fuse_req_t req, uint64_t parent,
		       struct czfs_inode_info *ii, uint8_t *dflt, int *dlen,
		       uint8_t *acl, size_t *acl_len)
{
	mode_t mode = ii->mode & 07777;
	int err;

	*acl_len = 0;
	*dlen = S_ISLNK(ii->mode) ? -ENODATA :
		czfs_xattr_get(dm->fs, parent, CZFS_ACL_DEFAULT, dflt, ACL_MAX);
	if (*dlen == -ENODATA) {
		if (!S_ISLNK(ii->mode))
			mode &= ~fuse_req_ctx(req)->umask;
	} else if (*dlen < 0) {
		return *dlen;
	} else {
		err = czfs_acl_inherit(dflt, (size_t)*dlen, &mode, acl, ACL_MAX, acl_len);
		if (err)
			return err == -EINVAL ? -EFSCORRUPTED : err;
	}
	ii->mode = (ii->mode & S_IFMT) | mode;
	return 0;
}

/* Store the inherited ACLs of a new inode (its default, for directories). */
static int store_acls(struct czfs_daemon *dm, struct czfs_inode_info *ii,
		      const uint8_t *dflt, int dlen, const uint8_t *acl,
		      size_t acl_len)
{
	int64_t delta = 0;
	int err = 0;

	if (acl_len)
		err = czfs_xattr_set(dm->fs, ii->ino, CZFS_ACL_ACCESS, acl, acl_len,
				     0, &delta);
	if (!err && dlen > 0 && S_ISDIR(ii->mode))
		err = czfs_xattr_set(dm->fs, ii->ino, CZFS_ACL_DEFAULT, dflt,
				     (size_t)dlen, 0, &delta);
	ii->blocks += (uint64_t)MAX(delta, 0);
	return err;
}

/* Create the new inode ii, not linked yet, with the mode and ACLs that
 * parent's default ACL or the caller's umask give it (ext4_init_acl). */
static int create_inode(struct czfs_daemon *dm, fuse_req_t req,
			uint64_t parent, struct czfs_inode_info *ii)
{
	uint8_t dflt[ACL_MAX], acl[ACL_MAX];
	size_t acl_len;
	int err, dlen;

	err = inherit_acl(dm, req, parent, ii, dflt, &dlen, acl, &acl_len) ?:
	      czfs_inode_create(dm->fs, ii);
	if (!err && (acl_len || (dlen > 0 && S_ISDIR(ii->mode))))
		err = store_acls(dm, ii, dflt, dlen, acl, acl_len) ?:
		      czfs_inode_store(dm->fs, ii);
	return err;
}

static int make_node(struct czfs_daemon *dm, fuse_req_t req, fuse_ino_t parent,
		     const char *name, mode_t mode, dev_t rdev,
		     const char *target, uint64_t *ino)
{
	size_t len = strlen(name), tlen = target ? strlen(target) : 0;
	struct czfs_inode_info ii;
	struct czfs_minode *p;
	struct held h = { .n = 0 };
	unsigned type;
	int err;

	if (tlen > CZFS_SYMLINK_MAX)
		return -ENAMETOOLONG;
	if (czfs_room_free(dm) < 4)	/* before fs->lock: it may commit */
		czfs_room_grow(dm, 4);
	err = begin_in(dm, &h, parent, len, &p);
	if (!err)	/* an append-only directory takes new names */
		err = czfs_fuse_flags_deny(p->ii.flags, true);
	if (!err && czfs_dir_lookup(dm->fs, parent, name, len, ino, &type) == 0)
		err = -EEXIST;
	if (!err && czfs_room_free(dm) < 4)
		err = -ENOSPC;
	if (!err) {
		new_inode(dm, req, &p->ii, name, mode, rdev, &ii);
		err = create_inode(dm, req, parent, &ii);
	}
	if (!err && target)
		err = store_target(dm, &ii, target, tlen);
	if (!err)
		err = czfs_dir_link(dm->fs, parent, name, len, ii.ino,
				    czfs_mode_to_dtype(mode));
	if (!err)
		err = parent_changed(dm, p, 1, S_ISDIR(mode) ? 1 : 0);
	*ino = ii.ino;
	end(dm, &h);
	return err;
}

static void reply_new(fuse_req_t req, int err, uint64_t ino,
		      struct fuse_file_info *fi)
{
	struct czfs_daemon *dm = req_daemon(req);
	struct fuse_entry_param e;

	if (!err)
		err = reply_entry(dm, ino, &e);
	if (err && fi && fi->fh)		/* created and opened, no entry */
		czfs_fuse_release_file(dm, (struct czfs_open_file *)(uintptr_t)fi->fh);
	if (err)
		fuse_reply_err(req, czfs_fuse_errno(err));
	else if (fi && fuse_reply_create(req, &e, fi))	/* interrupted */
		czfs_fuse_release_file(dm, (struct czfs_open_file *)(uintptr_t)fi->fh);
	else if (!fi)
		fuse_reply_entry(req, &e);
}

static void czfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		       mode_t mode, dev_t rdev)
{
	uint64_t ino = 0;
	int err = make_node(req_daemon(req), req, parent, name, mode, rdev, NULL, &ino);

	reply_new(req, err, ino, NULL);
}

static void czfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		       mode_t mode)
{
	uint64_t ino = 0;
	int err = make_node(req_daemon(req), req, parent, name,
			    S_IFDIR | (mode & 07777), 0, NULL, &ino);

	reply_new(req, err, ino, NULL);
}

static void czfs_symlink(fuse_req_t req, const char *target, fuse_ino_t parent,
			 const char *name)
{
	uint64_t ino = 0;
	int err = make_node(req_daemon(req), req, parent, name, S_IFLNK | 0777, 0,
			    target, &ino);

	reply_new(req, err, ino, NULL);
}

static void czfs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
			mode_t mode, struct fuse_file_info *fi)
{
	struct czfs_daemon *dm = req_daemon(req);
	uint64_t ino = 0;
	int err = make_node(dm, req, parent, name, S_IFREG | (mode & 07777), 0,
			    NULL, &ino);

	if (!err)
		err = czfs_fuse_open_created(dm, ino, fi);
	reply_new(req, err, ino, fi);
}

/* ---- links ------------------------------------------------------------------ */

static int do_link(struct czfs_daemon *dm, uint64_t ino, uint64_t parent,
		   const char *name)
{
	size_t len = strlen(name);
	struct czfs_minode *p, *mi;
	struct held h = { .n = 0 };
	int err;

	err = begin_in(dm, &h, parent, len, &p);
	if (!err)
		err = hold(dm, &h, ino, &mi);
	if (!err)	/* vfs_link: nor a name for an immutable or append-only inode */
		err = czfs_fuse_flags_deny(p->ii.flags, true) ?:
		      czfs_fuse_flags_deny(mi->ii.flags, false);
	if (!err && S_ISDIR(mi->ii.mode))
		err = -EPERM;
	if (!err && (mi->unlinked || !mi->ii.nlink))
		err = -ENOENT;
	if (!err && mi->ii.nlink == UINT32_MAX)
		err = -EMLINK;
	if (!err)
		err = czfs_dir_link(dm->fs, parent, name, len, ino,
				    czfs_mode_to_dtype(mi->ii.mode));
	if (!err) {
		pthread_mutex_lock(&mi->lock);
		mi->ii.nlink++;
		touch(&mi->ii.ctime);
		pthread_mutex_unlock(&mi->lock);
		err = store(dm, mi) ?: parent_changed(dm, p, 1, 0);
	}
	end(dm, &h);
	return err;
}

static void czfs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t parent,
		      const char *name)
{
	reply_new(req, do_link(req_daemon(req), ino, parent, name), ino, NULL);
}

static int do_remove(struct czfs_daemon *dm, uint64_t parent, const char *name,
		     bool dir)
{
	size_t len = strlen(name);
	struct czfs_minode *p, *mi;
	struct held h = { .n = 0 };
	uint64_t ino;
	unsigned type;
	int err;

	err = begin_in(dm, &h, parent, len, &p);
	if (!err)
		err = czfs_dir_lookup(dm->fs, parent, name, len, &ino, &type);
	if (!err)
		err = hold(dm, &h, ino, &mi);
	if (!err)	/* may_delete */
		err = czfs_fuse_flags_deny(p->ii.flags, false) ?:
		      czfs_fuse_flags_deny(mi->ii.flags, false);
	if (!err && dir != !!S_ISDIR(mi->ii.mode))
		err = dir ? -ENOTDIR : -EISDIR;
	if (!err && dir) {
		err = czfs_dir_is_empty(dm->fs, ino);
		err = err < 0 ? err : err ? 0 : -ENOTEMPTY;
	}
	if (!err)
		err = czfs_dir_unlink(dm->fs, parent, name, len, &ino, &type);
	if (!err)
		err = drop_link(dm, mi) ?: parent_changed(dm, p, -1, dir ? -1 : 0);
	end(dm, &h);
	return err;
}

static void czfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, czfs_fuse_errno(do_remove(req_daemon(req), parent,
						      name, false)));
}

static void czfs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, czfs_fuse_errno(do_remove(req_daemon(req), parent,
						      name, true)));
}

/* ---- rename ------------------------------------------------------------------ */

/* Is dir ino inside the tree of directory top (or top itself)? */
static int inside(struct czfs_daemon *dm, uint64_t ino, uint64_t top)
{
	struct czfs_inode_info ii;

	for (unsigned depth = 0; depth < 65536; depth++) {
		int err;

		if (ino == top)
			return 1;
		if (ino == CZFS_ROOT_INO)
			return 0;
		err = czfs_inode_read(&dm->fs->tree, ino, &ii);
		if (err)
			return err;
		ino = ii.parent;
	}
	return -EFSCORRUPTED;	/* a loop in the parents */
}

struct rename_op {
	fuse_req_t req;			/* who asks: the whiteout is theirs */
	uint64_t from_dir, to_dir;
	const char *from, *to;
	size_t from_len, to_len;
	unsigned flags;
	struct czfs_minode *fp, *tp, *src, *dst;	/* dst NULL: no target */
};

/* A directory changing parents: its ".." and both link counts. */
static int moved_dir(struct czfs_daemon *dm, struct czfs_minode *mi,
		     struct czfs_minode *from, struct czfs_minode *to)
{
	if (!S_ISDIR(mi->ii.mode) || from == to)
		return 0;
	pthread_mutex_lock(&mi->lock);
	mi->ii.parent = to->ino;
	pthread_mutex_unlock(&mi->lock);
	pthread_mutex_lock(&from->lock);
	from->ii.nlink--;
	pthread_mutex_unlock(&from->lock);
	pthread_mutex_lock(&to->lock);
	to->ii.nlink++;
	pthread_mutex_unlock(&to->lock);
	return 0;
}

static int rename_checks(struct czfs_daemon *dm, struct rename_op *r)
{
	bool sdir = S_ISDIR(r->src->ii.mode);
	int err;

	/* may_delete of each name that goes, may_create of one that comes */
	err = czfs_fuse_flags_deny(r->fp->ii.flags, false) ?:
	      czfs_fuse_flags_deny(r->src->ii.flags, false) ?:
	      czfs_fuse_flags_deny(r->tp->ii.flags, !r->dst) ?:
	      (r->dst ? czfs_fuse_flags_deny(r->dst->ii.flags, false) : 0);
	if (err)
		return err;

	if (sdir && r->to_dir != r->from_dir) {
		err = inside(dm, r->to_dir, r->src->ino);
		if (err)
			return err < 0 ? err : -EINVAL;
	}
	if (!r->dst)
		return r->flags & RENAME_EXCHANGE ? -ENOENT : 0;
	if (r->flags & RENAME_NOREPLACE)
		return -EEXIST;
	if (r->flags & RENAME_EXCHANGE) {
		if (S_ISDIR(r->dst->ii.mode) && r->to_dir != r->from_dir) {
			err = inside(dm, r->from_dir, r->dst->ino);
			if (err)
				return err < 0 ? err : -EINVAL;
		}
		return 0;
	}
	if (sdir && !S_ISDIR(r->dst->ii.mode))
		return -ENOTDIR;
	if (!sdir && S_ISDIR(r->dst->ii.mode))
		return -EISDIR;
	if (S_ISDIR(r->dst->ii.mode)) {
		err = czfs_dir_is_empty(dm->fs, r->dst->ino);
		return err < 0 ? err : err ? 0 : -ENOTEMPTY;
	}
	return 0;
}

static int rename_names(struct czfs_daemon *dm, struct rename_op *r)
{
	struct czfs_fs *fs = dm->fs;
	unsigned stype = czfs_mode_to_dtype(r->src->ii.mode), type;
	uint64_t ino;
	int err;

	err = czfs_dir_unlink(fs, r->from_dir, r->from, r->from_len, &ino, &type);
	if (!err && r->dst)
		err = czfs_dir_unlink(fs, r->to_dir, r->to, r->to_len, &ino, &type);
	if (!err)
		err = czfs_dir_link(fs, r->to_dir, r->to, r->to_len, r->src->ino, stype);
	if (!err && r->dst && (r->flags & RENAME_EXCHANGE))
		err = czfs_dir_link(fs, r->from_dir, r->from, r->from_len,
				    r->dst->ino, czfs_mode_to_dtype(r->dst->ii.mode));
	return err;
}

static int rename_inodes(struct czfs_daemon *dm, struct rename_op *r)
{
	bool exchange = r->dst && (r->flags & RENAME_EXCHANGE);
	struct timespec now;
	int moved = 1, err;

	moved_dir(dm, r->src, r->fp, r->tp);
	if (exchange) {
		moved_dir(dm, r->dst, r->tp, r->fp);
		moved = 0;
	} else if (r->dst) {
		err = drop_link(dm, r->dst);
		if (err)
			return err;
		if (S_ISDIR(r->dst->ii.mode)) {
			pthread_mutex_lock(&r->tp->lock);
			r->tp->ii.nlink--;
			pthread_mutex_unlock(&r->tp->lock);
		}
		moved = 0;		/* a name replaced, none added */
	}
	touch(&now);
	pthread_mutex_lock(&r->src->lock);
	r->src->ii.ctime = now;
	pthread_mutex_unlock(&r->src->lock);
	if (exchange) {		/* both move, as in ext4_cross_rename */
		pthread_mutex_lock(&r->dst->lock);
		r->dst->ii.ctime = now;
		pthread_mutex_unlock(&r->dst->lock);
	}
	err = store(dm, r->src);
	if (!err && exchange)
		err = store(dm, r->dst);
	if (!err && r->fp != r->tp)
		err = parent_changed(dm, r->fp, exchange ? 0 : -1, 0) ?:
		      parent_changed(dm, r->tp, moved, 0);
	else if (!err)		/* one directory: a replaced name is one less */
		err = parent_changed(dm, r->fp, moved - 1 + exchange, 0);
	return err;
}

/*
 * RENAME_WHITEOUT (overlayfs on an upper layer): the source name becomes
 * a whiteout, a character device 0:0 with mode 0, as vfs_whiteout makes,
 * and the access ACL that the directory's default gives it, as ext4's.
 */
static int leave_whiteout(struct czfs_daemon *dm, struct rename_op *r)
{
	struct czfs_inode_info ii;
	int err;

	new_inode(dm, r->req, &r->fp->ii, r->from, S_IFCHR, makedev(0, 0), &ii);
	err = create_inode(dm, r->req, r->from_dir, &ii);
	if (!err)
		err = czfs_dir_link(dm->fs, r->from_dir, r->from, r->from_len,
				    ii.ino, DT_CHR);
	return err ?: parent_changed(dm, r->fp, 1, 0);
}

static int do_rename(struct czfs_daemon *dm, struct rename_op *r)
{
	const unsigned known = RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT;
	struct held h = { .n = 0 };
	uint64_t ino;
	unsigned type;
	int err;

	if (r->flags & ~known ||
	    (r->flags & RENAME_NOREPLACE && r->flags & RENAME_EXCHANGE) ||
	    (r->flags & RENAME_WHITEOUT && r->flags & RENAME_EXCHANGE))
		return -EINVAL;
	if (r->from_len > CZFS_NAME_MAX || r->to_len > CZFS_NAME_MAX)
		return -ENAMETOOLONG;
	err = begin(dm);
	if (!err)
		err = get_dir(dm, &h, r->from_dir, &r->fp);
	if (!err)
		err = r->to_dir == r->from_dir ? (r->tp = r->fp, 0) :
		      get_dir(dm, &h, r->to_dir, &r->tp);
	if (!err)
		err = czfs_dir_lookup(dm->fs, r->from_dir, r->from, r->from_len,
				      &ino, &type);
	if (!err)
		err = hold(dm, &h, ino, &r->src);
	r->dst = NULL;
	if (!err && !czfs_dir_lookup(dm->fs, r->to_dir, r->to, r->to_len, &ino, &type)) {
		if (ino == r->src->ino)
			goto out;	/* two names of one inode: nothing to do */
		err = hold(dm, &h, ino, &r->dst);
	}
	if (!err)
		err = rename_checks(dm, r);
	if (!err && r->flags & RENAME_WHITEOUT && czfs_room_free(dm) < 4)
		err = -ENOSPC;		/* before anything changes */
	if (!err)
		err = rename_names(dm, r);
	if (!err)
		err = rename_inodes(dm, r);
	if (!err && r->flags & RENAME_WHITEOUT)
		err = leave_whiteout(dm, r);
out:
	end(dm, &h);
	return err;
}

static void czfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
			fuse_ino_t newparent, const char *newname, unsigned flags)
{
	struct rename_op r = {
		.req = req,
		.from_dir = parent, .to_dir = newparent, .from = name, .to = newname,
		.from_len = strlen(name), .to_len = strlen(newname), .flags = flags,
	};

	fuse_reply_err(req, czfs_fuse_errno(do_rename(req_daemon(req), &r)));
}

void czfs_fuse_ops_ns(struct fuse_lowlevel_ops *ops)
{
	ops->create = czfs_create;
	ops->mknod = czfs_mknod;
	ops->mkdir = czfs_mkdir;
	ops->symlink = czfs_symlink;
	ops->link = czfs_link;
	ops->unlink = czfs_unlink;
	ops->rmdir = czfs_rmdir;
	ops->rename = czfs_rename;
}
