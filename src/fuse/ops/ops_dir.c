// SPDX-License-Identifier: MIT
/* Directory operations: opendir, readdir, readdirplus. */
#include "config.h"

#include <dirent.h>
#include <stdlib.h>

#include "daemon.h"
#include "dir.h"
#include "fs.h"
#include "log.h"
#include "minode.h"
#include "ops.h"
#include "rdplus.h"
#include "util.h"

struct rd_ctx {
	struct czfs_daemon *dm;
	fuse_req_t req;
	char *buf;
	size_t size, pos;
	bool plus;
	enum czfs_rdplus_mode mode;	/* a READDIRPLUS: which entries carry
					 * attributes (rdplus.h) */
	uint64_t dir;
	struct czfs_btree_hint hint;	/* the entries' inodes are together */
	int err;
	struct czfs_minode *unused;	/* put once fs->lock is dropped */
};

/* Whether an entry of a READDIRPLUS goes with its attributes: always a
 * directory's (every walk looks it up to descend into it). */
static bool rd_with_attrs(enum czfs_rdplus_mode mode, unsigned dtype)
{
	return mode == CZFS_RDPLUS_ATTRS || dtype == DT_DIR;
}

/* Add one entry; returns 1 when the buffer is full. */
static int rd_add(struct rd_ctx *rc, const char *name, uint64_t ino,
		  unsigned dtype, uint64_t next)
{
	struct fuse_entry_param e = { 0 };
	struct czfs_minode *mi = NULL;
	bool entry = rc->plus && strcmp(name, ".") && strcmp(name, "..");
	size_t need;

	if (entry && rd_with_attrs(rc->mode, dtype)) {
		struct czfs_inode_info ii;

		rc->err = czfs_mi_get_near(rc->dm, ino, &rc->hint, &mi);
		if (rc->err)
			return 1;
		czfs_mi_attr_shown(mi, &ii);	/* with its dirty data */
		czfs_fuse_fill_entry(rc->dm, &ii, &e);
	} else {
		e.attr.st_ino = ino;
		e.attr.st_mode = dtype << 12;
	}
	if (rc->plus)
		need = fuse_add_direntry_plus(rc->req, rc->buf + rc->pos,
					      rc->size - rc->pos, name, &e,
					      (off_t)next);
	else
		need = fuse_add_direntry(rc->req, rc->buf + rc->pos,
					 rc->size - rc->pos, name, &e.attr,
					 (off_t)next);
	if (need > rc->size - rc->pos) {
		rc->unused = mi;	/* not sent: no reference for the kernel */
		return 1;
	}
	rc->pos += need;
	if (mi) {
		/* the kernel holds the entry now: this put cannot free it */
		czfs_mi_lookup(rc->dm, mi, 1);
		czfs_mi_put(rc->dm, mi);
		atomic_fetch_add_explicit(&rc->dm->st.list_attrs, 1,
					  memory_order_relaxed);
	} else if (entry) {
		atomic_fetch_add_explicit(&rc->dm->st.list_bare, 1,
					  memory_order_relaxed);
		if (rc->mode == CZFS_RDPLUS_PROBE) {
			czfs_rdplus_probe_sent(&rc->dm->rdp, rc->dir, ino);
			rc->mode = CZFS_RDPLUS_ATTRS;	/* one probe */
		}
	}
	return 0;
}

static int rd_fill(void *arg, const struct czfs_dirent *de, uint64_t next)
{
	char name[CZFS_NAME_MAX + 1];

	memcpy(name, de->name, de->name_len);
	name[de->name_len] = '\0';
	return rd_add(arg, name, de->ino, de->type, next);
}

static int do_readdir(struct rd_ctx *rc, fuse_ino_t ino, off_t off)
{
	struct czfs_inode_info dir;
	int err;

	/* the kernel holds the directory: its in-memory inode, no tree walk */
	err = czfs_fuse_read_inode(rc->dm, ino, &dir);
	if (err)
		return err;
	if (!S_ISDIR(dir.mode))
		return -ENOTDIR;
	pthread_rwlock_rdlock(&rc->dm->fs->lock);
	if (off < CZFS_DIR_COOKIE_DOT &&
	    rd_add(rc, ".", ino, DT_DIR, CZFS_DIR_COOKIE_DOT))
		err = rc->err;
	else if (off < CZFS_DIR_COOKIE_DOTDOT &&
		 rd_add(rc, "..", dir.parent, DT_DIR, CZFS_DIR_COOKIE_DOTDOT))
		err = rc->err;
	else
		err = czfs_dir_iterate(rc->dm->fs, ino, (uint64_t)off, rd_fill, rc) ?:
		      rc->err;
	czfs_btree_hint_release(&rc->dm->fs->tree, &rc->hint);
	pthread_rwlock_unlock(&rc->dm->fs->lock);
	return err;
}

static void readdir_common(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, bool plus)
{
	struct rd_ctx rc = {
		.dm = req_daemon(req), .req = req, .size = size, .plus = plus,
		.mode = CZFS_RDPLUS_ATTRS, .dir = ino,
	};
	int err;

	if (plus)
		rc.mode = czfs_rdplus_listing(&rc.dm->rdp, ino);

	rc.buf = malloc(size);
	if (!rc.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	err = do_readdir(&rc, ino, off);
	if (rc.unused)
		czfs_mi_put(rc.dm, rc.unused);
	/* Entries already added are valid even if a later one failed. */
	if (err && !rc.pos)
		fuse_reply_err(req, czfs_fuse_errno(err));
	else
		fuse_reply_buf(req, rc.buf, rc.pos);
	free(rc.buf);
}

static void czfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
			 off_t off, struct fuse_file_info *fi)
{
	readdir_common(req, ino, size, off, false);
}

static void czfs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			     off_t off, struct fuse_file_info *fi)
{
	readdir_common(req, ino, size, off, true);
}

static void czfs_opendir(fuse_req_t req, fuse_ino_t ino,
			 struct fuse_file_info *fi)
{
	struct czfs_daemon *dm = req_daemon(req);

	if (dm->skip_opendirs) {	/* the kernel caches listings by itself */
		fuse_reply_err(req, ENOSYS);
		return;
	}
	/* An unchanging directory: let the kernel cache its listing. */
	fi->cache_readdir = dm->opts.ro;
	fi->keep_cache = dm->opts.ro;
	fuse_reply_open(req, fi);
}

void czfs_fuse_ops_dir(struct fuse_lowlevel_ops *ops)
{
	ops->opendir = czfs_opendir;
	ops->readdir = czfs_readdir;
	ops->readdirplus = czfs_readdirplus;
}
