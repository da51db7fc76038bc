// SPDX-License-Identifier: MIT
/*
 * Writing: write, truncate and other attribute changes, fallocate, fsync.
 * A write lands in the file's clusters in the cluster cache (a partial
 * overwrite of a stored cluster reads it first: read-modify-write) and
 * marks them dirty; writeback compresses them later (writeback.c).
 */
#include "config.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <sys/xattr.h>

#include "acl.h"
#include "caller.h"
#include "ccache.h"
#include "daemon.h"
#include "flusher.h"
#include "flushreq.h"
#include "killpriv.h"
#include "fs.h"
#include "load.h"
#include "log.h"
#include "minode.h"
#include "ops.h"
#include "pagepool.h"
#include "room.h"
#include "util.h"
#include "wentry.h"
#include "writeback.h"
#include "xattr.h"

/* A dirty inode with this many pages of dirty clusters asks the flusher
 * to write it back; twice as many, its writer does. */
#define DIRTY_LIMIT_PAGES(dm)	((dm)->opts.dirty_max / CZFS_BLOCK_SIZE / 2)

static void now(struct timespec *ts)
{
	clock_gettime(CLOCK_REALTIME, ts);
}

/*
 * The cache entry of cluster idx, ready to take [in, in + n): with pages.
 * Nothing is read when the write covers everything the cluster holds, nor
 * for whole blocks of a block-mapped cluster (czfs_load_blocks).
 */
static int cluster_for_write(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
			     uint64_t idx, uint64_t in, uint64_t n,
			     struct czfs_centry **out)
{
	uint64_t cbytes = czfs_inode_cluster_bytes(ii), start = idx * cbytes;
	bool fresh = start >= ii->size || (in == 0 && start + n >= ii->size) ||
		     (in == 0 && n == cbytes);
	struct czfs_centry *e;
	int ret;

	if (!fresh && !(in % CZFS_BLOCK_SIZE) && !(n % CZFS_BLOCK_SIZE)) {
		ret = czfs_load_blocks(dm, ii, idx, &e);
	} else if (!fresh) {
		ret = czfs_load_get(dm, ii, NULL, idx, 1, &e);
	} else {
		ret = czfs_ccache_get(dm->cc, ii->ino, idx, CZFS_CC_CREATE, &e);
		if (ret == 1) {		/* new: nothing of it needs reading */
			e->len = 0;
			ret = czfs_ccache_alloc_run(dm->cc, e, ii->cluster_shift, 0);
			czfs_ccache_loaded(dm->cc, e, ret);
			if (ret)
				czfs_ccache_put(dm->cc, e);
		}
	}
	if (ret < 0)
		return ret;
	if (e->page == CZFS_NO_PAGE) {	/* a hole becomes data */
		ret = czfs_ccache_fill_hole(dm->cc, e, ii->cluster_shift);
		if (ret) {
			czfs_ccache_put(dm->cc, e);
			return ret;
		}
	}
	*out = e;
	return 0;
}

static void fill_pages(struct czfs_daemon *dm, struct czfs_centry *e,
		       uint64_t in, const void *buf, uint64_t n)
{
	uint32_t pages[CZFS_MAX_CLUSTER_BLOCKS];
	static const uint8_t zeros[CZFS_BLOCK_SIZE];

	czfs_centry_pages(e, pages);
	czfs_writeback_written(e, MIN((uint64_t)e->len, in), in + n);
	for (uint64_t z = e->len; z < in; z += MIN(in - z, (uint64_t)CZFS_BLOCK_SIZE))
		czfs_memcpy_to_pages(dm->pool, pages, z, zeros,
				     MIN(in - z, (uint64_t)CZFS_BLOCK_SIZE));
	if (buf)
		czfs_memcpy_to_pages(dm->pool, pages, in, buf, n);
	e->len = (uint32_t)MAX((uint64_t)e->len, in + n);
}

/* Copy n bytes at in into e (mi->lock held); a gap after the old end is
 * zeroed, as the file reads it.  Into a partial entry, under
 * dm->partial_lock: its completion must not copy over these bytes. */
static void fill(struct czfs_daemon *dm, struct czfs_centry *e, uint64_t in,
		 const void *buf, uint64_t n)
{
	bool partial = atomic_load(&czfs_wentry_of(e)->partial);

	if (partial)
		pthread_mutex_lock(&dm->partial_lock);
	fill_pages(dm, e, in, buf, n);
	if (partial)
		pthread_mutex_unlock(&dm->partial_lock);
}

/*
 * A write at in past the end of a partial entry zeroes the gap and marks
 * the gap's first block written: that block must hold its stored bytes
 * first when the end falls inside it and no write gave it data.
 */
static bool needs_head(struct czfs_centry *e, uint64_t start, uint64_t in,
		       uint64_t size)
{
	/* (the end as the write will see it: the file's, if shorter) */
	uint64_t len = MIN((uint64_t)e->len, size > start ? size - start : 0);

	struct czfs_wentry *we = czfs_wentry_of(e);

	return atomic_load(&we->partial) && in > len && len % CZFS_BLOCK_SIZE &&
	       !(we->wmask & (1ull << (len / CZFS_BLOCK_SIZE)));
}

static int write_cluster(struct czfs_daemon *dm, struct czfs_minode *mi,
			 const struct czfs_inode_info *ii, uint64_t pos,
			 const void *buf, uint64_t n)
{
	uint64_t cbytes = czfs_inode_cluster_bytes(ii), in = pos % cbytes;
	bool promised = czfs_room_promised(dm, ii, pos / cbytes);
	struct czfs_centry *e;
	int err;

again:
	err = cluster_for_write(dm, ii, pos / cbytes, in, n, &e);
	if (err)
		return err;
	for (;;) {	/* completed without mi->lock (it reads the image) */
		err = needs_head(e, pos - in, in, mi->ii.size) ?
		      czfs_load_complete(dm, ii, e) : 0;
		if (err) {
			czfs_ccache_put(dm->cc, e);
			return err;
		}
		pthread_mutex_lock(&mi->lock);
		/*
		 * A partial entry that writeback cleaned meanwhile left the
		 * cache (wb_finish, under mi->lock): written now, it would be
		 * a second dirty entry of the cluster beside the one the next
		 * write makes, and the two would undo each other's blocks at
		 * every writeback (ESTALE).  Take the cluster's entry again.
		 */
		if (!czfs_ccache_live(dm->cc, e)) {
			pthread_mutex_unlock(&mi->lock);
			czfs_ccache_put(dm->cc, e);
			goto again;
		}
		if (!needs_head(e, pos - in, in, mi->ii.size))
			break;
		pthread_mutex_unlock(&mi->lock);
	}
	err = czfs_writeback_mark_dirty(dm, mi, e, promised);
	if (!err) {
		/* bytes past the end of the file are not its data */
		if (mi->ii.size < pos - in + e->len)
			e->len = (uint32_t)(mi->ii.size > pos - in ?
					    mi->ii.size - (pos - in) : 0);
		fill(dm, e, in, buf, n);
		mi->ii.size = MAX(mi->ii.size, pos + n);
	}
	pthread_mutex_unlock(&mi->lock);
	if (err)
		czfs_ccache_put(dm->cc, e);
	return err;
}

long czfs_fuse_do_write(struct czfs_daemon *dm, struct czfs_minode *mi,
			const void *data, size_t size, uint64_t off)
{
	const char *buf = data;
	struct czfs_inode_info ii;
	uint64_t t0 = czfs_now_ns(), t1;
	size_t done = 0;
	bool held;
	int err = 0;

	if (off + size > CZFS_MAX_FILE_SIZE)
		return -EFBIG;
	czfs_mi_attr(mi, &ii);
	/* an fd opened before chattr +i or +a: as ext4_write_checks */
	err = czfs_fuse_flags_deny(ii.flags, off == ii.size);
	if (err)
		return err;
	while (done < size && !err) {
		uint64_t pos = off + done, cbytes = czfs_inode_cluster_bytes(&ii);
		uint64_t n = MIN(size - done, cbytes - pos % cbytes);

		err = write_cluster(dm, mi, &ii, pos, buf + done, n);
		/* no room: an image without a fixed limit may take more */
		if (err == -ENOSPC && !czfs_room_grow(dm, 1ull << ii.cluster_shift))
			err = write_cluster(dm, mi, &ii, pos, buf + done, n);
		if (!err) {
			done += n;
			ii.size = MAX(ii.size, pos + n);
		}
	}
	if (done) {
		pthread_mutex_lock(&mi->lock);
		now(&mi->ii.mtime);
		mi->ii.ctime = mi->ii.mtime;
		czfs_mi_attrs_changed(dm, mi);
		pthread_mutex_unlock(&mi->lock);
	}
	/* Past the limit the flusher writes the inode back beside the
	 * writer; past twice the limit, it cannot keep up: the writer too. */
	if (mi->ndirty << ii.cluster_shift > DIRTY_LIMIT_PAGES(dm))
		czfs_flushreq_kick(dm);
	t1 = czfs_now_ns();
	held = mi->ndirty << ii.cluster_shift > 2 * DIRTY_LIMIT_PAGES(dm);
	if (held)
		czfs_writeback_some(dm, mi);
	held |= czfs_flusher_throttling(dm);
	czfs_flusher_balance(dm);
	if (held)
		czfs_latency_add(&dm->st.write_throttle, czfs_now_ns() - t1);
	czfs_latency_add(&dm->st.write_req, czfs_now_ns() - t0);
	return done ? (long)done : err;
}

/* The mode bits kill dropped from mi: part of the change that asks it,
 * whose ctime is its own, which every caller has just set (a truncate's
 * mtime stays equal to it).  0 or -errno. */
static int drop_bits(struct czfs_daemon *dm, struct czfs_minode *mi,
		     uint32_t kill)
{
	if (!kill)
		return 0;
	pthread_mutex_lock(&mi->lock);
	mi->ii.mode &= ~kill;
	pthread_mutex_unlock(&mi->lock);
	return czfs_writeback_attr(dm, mi);
}

int czfs_fuse_drop_suidgid(struct czfs_daemon *dm, fuse_req_t req,
			   struct czfs_minode *mi, bool asked)
{
	struct czfs_inode_info ii;
	uint32_t kill;

	czfs_mi_attr(mi, &ii);
	if (!(ii.mode & (S_ISUID | S_ISGID)))
		return 0;
	kill = asked ? czfs_caller_kill_suidgid(req, ii.mode, ii.gid) :
		       czfs_caller_kill_priv(req, ii.mode, ii.gid);
	return drop_bits(dm, mi, kill);
}

static void czfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		       size_t size, off_t off, struct fuse_file_info *fi)
{
	struct czfs_open_file *of = (struct czfs_open_file *)(uintptr_t)fi->fh;
	struct czfs_daemon *dm = req_daemon(req);
	long n = czfs_fuse_do_write(dm, of->mi, buf, size, (uint64_t)off);

	atomic_fetch_add(&dm->st.write_reqs, 1);
	if (n > 0)
		atomic_fetch_add(&dm->st.write_bytes, (uint64_t)n);
	if (n > 0 && of->direct) {	/* see do_open: keep_cache */
		pthread_mutex_lock(&of->mi->lock);
		of->mi->direct_written = true;
		pthread_mutex_unlock(&of->mi->lock);
	}
	if (n > 0 && czfs_killpriv_asked()) {
		int err = czfs_fuse_drop_suidgid(dm, req, of->mi, true);

		if (err)
			n = err;
	}
	if (n < 0)
		fuse_reply_err(req, czfs_fuse_errno((int)n));
	else
		fuse_reply_write(req, (size_t)n);
}

/* ---- truncate and holes -------------------------------------------------- */

/* Forget dirty clusters idx >= from of mi (truncated away). */
static void drop_dirty(struct czfs_daemon *dm, struct czfs_minode *mi,
		       uint64_t from, uint64_t to)
{
	uint64_t per = 1ull << mi->ii.cluster_shift;
	struct czfs_centry *gone[64];
	unsigned keep = 0, n = 0;
	bool more = true;

	while (more) {
		more = false;
		n = keep = 0;
		pthread_mutex_lock(&mi->lock);
		for (unsigned i = 0; i < mi->ndirty; i++) {
			struct czfs_centry *e = mi->dirty[i];

			if (e->idx >= from && e->idx < to && n < 64) {
				czfs_wentry_of(e)->dirty = false;
				gone[n++] = e;
			} else {
				more |= e->idx >= from && e->idx < to;
				mi->dirty[keep++] = e;
			}
		}
		mi->ndirty = keep;
		mi->reserved -= n * per;
		pthread_mutex_unlock(&mi->lock);
		czfs_room_unreserve(dm, n * per);
		for (unsigned i = 0; i < n; i++)
			czfs_ccache_put(dm->cc, gone[i]);
		if (n && !keep)
			czfs_mi_put(dm, mi);	/* the dirty list's hold */
	}
}

/* Clusters [from, to) become holes: cache, dirty data, and items. */
static int make_holes(struct czfs_daemon *dm, struct czfs_minode *mi,
		      uint64_t from, uint64_t to)
{
	struct czfs_fs *fs = dm->fs;
	struct czfs_stored delta = { 0 };
	int err;

	if (from >= to)
		return 0;
	pthread_mutex_lock(&mi->wb_lock);	/* no writeback in flight */
	drop_dirty(dm, mi, from, to);
	pthread_rwlock_wrlock(&fs->lock);
	err = czfs_fs_begin(fs);
	if (!err)
		err = czfs_clusters_delete(fs, mi->ino, from, to, &delta);
	atomic_fetch_add(&dm->items_version, 1);
	pthread_mutex_lock(&mi->lock);
	czfs_inode_add_stored(&mi->ii, &delta);
	pthread_mutex_unlock(&mi->lock);
	pthread_rwlock_unlock(&fs->lock);
	czfs_ccache_invalidate_range(dm->cc, mi->ino, from, to);
	pthread_mutex_unlock(&mi->wb_lock);
	return err;
}

/*
 * Zero [pos, pos + n) inside one cluster, read-modify-write; with cut, the
 * cluster ends at pos (a truncated tail).  The length changes with the
 * dirty mark, under mi->lock, so a writeback that took the cluster before
 * sees a new write count and writes it again.
 */
static int zero_in_cluster(struct czfs_daemon *dm, struct czfs_minode *mi,
			   uint64_t pos, uint64_t n, bool cut)
{
	struct czfs_inode_info ii;
	uint64_t cbytes, in;
	struct czfs_centry *e;
	uint32_t pages[CZFS_MAX_CLUSTER_BLOCKS];
	static const uint8_t zeros[CZFS_MAX_CLUSTER_SIZE];
	int err;

	czfs_mi_attr(mi, &ii);
	cbytes = czfs_inode_cluster_bytes(&ii);
	in = pos % cbytes;
	if (pos >= ii.size)
		return 0;
	err = czfs_load_get(dm, &ii, NULL, pos / cbytes, 1, &e);
	if (err)
		return err;
	if (e->page == CZFS_NO_PAGE) {	/* a hole already */
		czfs_ccache_put(dm->cc, e);
		return 0;
	}
	pthread_mutex_lock(&mi->lock);
	err = czfs_writeback_mark_dirty(dm, mi, e, false);
	if (!err && in < e->len) {
		czfs_writeback_written(e, in, MIN(in + n, (uint64_t)e->len));
		czfs_centry_pages(e, pages);
		czfs_memcpy_to_pages(dm->pool, pages, in, zeros,
				     MIN(n, (uint64_t)e->len - in));
		if (cut)
			e->len = (uint32_t)in;
	}
	pthread_mutex_unlock(&mi->lock);
	if (err)
		czfs_ccache_put(dm->cc, e);
	return err;
}

static int do_truncate(struct czfs_daemon *dm, struct czfs_minode *mi,
		       uint64_t size)
{
	struct czfs_inode_info ii;
	uint64_t cbytes;
	int err = 0;

	if (size > CZFS_MAX_FILE_SIZE)
		return -EFBIG;
	czfs_mi_attr(mi, &ii);
	cbytes = czfs_inode_cluster_bytes(&ii);
	if (size < ii.size) {
		err = make_holes(dm, mi, DIV_ROUND_UP(size, cbytes), UINT64_MAX);
		if (!err && size % cbytes)
			err = zero_in_cluster(dm, mi, size,
					      cbytes - size % cbytes, true);
	}
	if (err)
		return err;
	pthread_mutex_lock(&mi->lock);
	mi->ii.size = size;
	pthread_mutex_unlock(&mi->lock);
	return 0;
}

int czfs_fuse_truncate_open(struct czfs_daemon *dm, struct czfs_minode *mi)
{
	int err = do_truncate(dm, mi, 0);

	if (err)
		return err;
	pthread_mutex_lock(&mi->lock);
	now(&mi->ii.ctime);
	mi->ii.mtime = mi->ii.ctime;
	pthread_mutex_unlock(&mi->lock);
	return czfs_writeback_attr(dm, mi);
}

/* ---- setattr ------------------------------------------------------------- */

/* Apply the attributes (mi->lock held).  One clock reading for every
 * time set to now: a truncate's or utimensat(NULL)'s times are equal, as
 * the kernel's filesystems make them. */
static void apply_attr(struct czfs_inode_info *ii, const struct stat *attr,
		       int to_set)
{
	struct timespec t;

	now(&t);
	if (to_set & FUSE_SET_ATTR_MODE)
		ii->mode = (ii->mode & S_IFMT) | (attr->st_mode & 07777);
	if (to_set & FUSE_SET_ATTR_UID)
		ii->uid = attr->st_uid;
	if (to_set & FUSE_SET_ATTR_GID)
		ii->gid = attr->st_gid;
	if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW))
		ii->atime = to_set & FUSE_SET_ATTR_ATIME_NOW ? t : attr->st_atim;
	if (to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW))
		ii->mtime = to_set & FUSE_SET_ATTR_MTIME_NOW ? t : attr->st_mtim;
	ii->ctime = to_set & FUSE_SET_ATTR_CTIME ? attr->st_ctim : t;
	if ((to_set & FUSE_SET_ATTR_SIZE) && !(to_set & FUSE_SET_ATTR_MTIME))
		ii->mtime = ii->ctime;
}

/* A chmod changes the access ACL's base entries too (FUSE_CAP_POSIX_ACL). */
static int chmod_acl(struct czfs_daemon *dm, uint64_t ino, mode_t mode)
{
	uint8_t acl[4 + 8 * CZFS_ACL_MAX_ENTRIES];
	int64_t delta = 0;
	int len, err;

	pthread_rwlock_wrlock(&dm->fs->lock);
	len = czfs_xattr_get(dm->fs, ino, CZFS_ACL_ACCESS, acl, sizeof(acl));
	if (len == -ENODATA)
		err = 0;
	else if (len < 0)
		err = len;
	else
		err = czfs_acl_chmod(acl, (size_t)len, mode) ?:
		      czfs_fs_begin(dm->fs) ?:
		      czfs_xattr_set(dm->fs, ino, CZFS_ACL_ACCESS, acl, (size_t)len,
				     XATTR_REPLACE, &delta);
	pthread_rwlock_unlock(&dm->fs->lock);
	if (len >= 0)
		czfs_flushreq_change(dm);
	return err;
}

/*
 * chattr +i forbids every setattr; +a a truncate, chmod, chown and times
 * given explicitly, but lets touch set them to now (may_setattr).
 */
static int setattr_flags_deny(struct czfs_minode *mi, int to_set)
{
	const int now_only = FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW |
			     FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
			     FUSE_SET_ATTR_CTIME | FUSE_SET_ATTR_TOUCH;
	const int times = FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW |
			  FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW;
	struct czfs_inode_info ii;
	bool touch;

	czfs_mi_attr(mi, &ii);
	/* utimensat(NULL), the one change of times an append-only file
	 * takes, sets both to now (utimensat(now, now) comes the same way);
	 * (omit, now) or (now, omit) is refused, as ext4 does.  A
	 * chown(-1, -1) sets nothing (ctime only): allowed. */
	touch = !(to_set & ~now_only) && !(to_set & FUSE_SET_ATTR_TIMES_SET) &&
		((to_set & times) == 0 || (to_set & times) == times);
	return czfs_fuse_flags_deny(ii.flags, touch);
}

/*
 * Setuid and setgid dropped by a setattr, before it applies: by the group
 * the file had (the kernel's setattr_should_drop_sgid rules before the
 * change).  With FUSE_HANDLE_KILLPRIV_V2 the kernel asks it of a chown
 * and a truncate.  On a chown the drop is a change of mode, which the
 * kernel allows only the owner or CAP_FOWNER (setattr_prepare) but
 * leaves to us: anyone else gets EPERM.
 *
 * chown(-1, -1) drops them too on a local filesystem (chown_common), but
 * reaches us as a SETATTR that sets nothing and does not ask: so does a
 * writer's file_remove_privs, whose WRITE then asks.  From the owner or
 * CAP_FOWNER such a SETATTR drops them; from anyone else it is taken for
 * a writer's, and the WRITE drops them (a stranger's chown(-1, -1), which
 * ext4 refuses with EPERM, then changes nothing: posix_oracle.py).
 */
static int setattr_drop(struct czfs_daemon *dm, fuse_req_t req,
			struct czfs_minode *mi, int to_set, gid_t gid)
{
	bool chown = to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID);
	struct czfs_inode_info ii;
	uint32_t kill;
	bool owner;

	czfs_mi_attr(mi, &ii);
	if (!(ii.mode & (S_ISUID | S_ISGID)) || S_ISDIR(ii.mode) ||
	    !czfs_killpriv_on())
		return 0;
	owner = fuse_req_ctx(req)->uid == ii.uid ||
		czfs_caller_has_cap(req, CZFS_CAP_FOWNER);
	if (!czfs_killpriv_asked()) {	/* an empty SETATTR */
		if ((to_set & ~FUSE_SET_ATTR_CTIME) || !owner)
			return 0;
	}
	kill = czfs_caller_kill_suidgid(req, ii.mode, ii.gid);
	if (kill && chown && !owner)
		return -EPERM;
	/* a chown whose drop changes the mode: setgid judged by the new
	 * group too, as setattr_prepare judges a mode change's */
	if (kill && (to_set & FUSE_SET_ATTR_GID) && (ii.mode & S_ISGID) &&
	    !czfs_caller_in_group_or_capable(req, gid))
		kill |= S_ISGID;
	return drop_bits(dm, mi, kill);
}

static int do_setattr(struct czfs_daemon *dm, fuse_req_t req, fuse_ino_t ino,
		      struct stat *attr, int to_set, struct czfs_inode_info *out)
{
	struct czfs_minode *mi;
	int err;

	if (dm->opts.ro)
		return -EROFS;
	err = czfs_mi_get(dm, ino, false, &mi);
	if (err)
		return err;
	err = setattr_flags_deny(mi, to_set);
	if (!err && (to_set & FUSE_SET_ATTR_SIZE)) {
		if (S_ISDIR(mi->ii.mode))
			err = -EISDIR;
		else if (!S_ISREG(mi->ii.mode))
			err = -EINVAL;
		else {		/* no push stores the old size meanwhile */
			czfs_mi_writer_begin(dm, mi);
			err = do_truncate(dm, mi, (uint64_t)attr->st_size);
			czfs_mi_writer_end(mi);
		}
	}
	if (!err)
		err = setattr_drop(dm, req, mi, to_set, attr->st_gid);
	if (!err) {
		pthread_mutex_lock(&mi->lock);
		apply_attr(&mi->ii, attr, to_set);
		pthread_mutex_unlock(&mi->lock);
		err = czfs_writeback_attr(dm, mi);
	}
	if (!err && (to_set & FUSE_SET_ATTR_MODE))
		err = chmod_acl(dm, ino, attr->st_mode);
	czfs_mi_attr(mi, out);
	czfs_mi_put(dm, mi);
	return err;
}

static void czfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
			 int to_set, struct fuse_file_info *fi)
{
	struct czfs_daemon *dm = req_daemon(req);
	struct czfs_inode_info ii;
	struct stat st;
	int err = do_setattr(dm, req, ino, attr, to_set, &ii);

	if (err) {
		fuse_reply_err(req, czfs_fuse_errno(err));
		return;
	}
	czfs_inode_to_stat(&ii, &st);
	fuse_reply_attr(req, &st, dm->attr_timeout);
}

/* ---- fallocate, fsync, flush ------------------------------------------- */

/* Whole clusters go, past the end too (fallocate's promises there);
 * the parts of clusters are zeroed where the file has data. */
static int punch(struct czfs_daemon *dm, struct czfs_minode *mi, uint64_t off,
		 uint64_t len)
{
	struct czfs_inode_info ii;
	uint64_t cbytes, end = off + len, first, last;
	int err = 0;

	czfs_mi_attr(mi, &ii);
	cbytes = czfs_inode_cluster_bytes(&ii);
	first = DIV_ROUND_UP(off, cbytes);
	last = end / cbytes;		/* clusters [first, last) go whole */
	if (first > last)		/* inside one cluster */
		return zero_in_cluster(dm, mi, off, len, false);
	if (off % cbytes)
		err = zero_in_cluster(dm, mi, off, first * cbytes - off, false);
	if (!err)
		err = make_holes(dm, mi, first, last);
	if (!err && end % cbytes)
		err = zero_in_cluster(dm, mi, last * cbytes, end - last * cbytes, false);
	return err;
}

/*
 * Set [off, off + len) aside: every hole among its clusters becomes a
 * RESERVED cluster promising the cluster's raw size (the data is not known
 * yet), a partial tail cluster promises it too, once the room for all of
 * them is there (-ENOSPC, nothing changed, otherwise).  The size grows to
 * size (mode 0) in the same transaction.
 */
static int preallocate(struct czfs_daemon *dm, struct czfs_minode *mi,
		       uint64_t off, uint64_t len, uint64_t size)
{
	struct czfs_fs *fs = dm->fs;
	struct czfs_stored delta = { 0 };
	struct czfs_inode_info ii;
	uint64_t cbytes, per, gaps = 0;
	int err, store_err = 0;

	czfs_mi_attr(mi, &ii);
	cbytes = czfs_inode_cluster_bytes(&ii);
	per = 1ull << ii.cluster_shift;
	pthread_rwlock_wrlock(&fs->lock);
	err = czfs_fs_begin(fs);
	if (!err)
		err = czfs_clusters_gaps(fs, mi->ino, off / cbytes,
					 DIV_ROUND_UP(off + len, cbytes),
					 (unsigned)per, &gaps);
	/* taken as dirty room first: atomic against writers, who do not
	 * hold fs->lock; the promise then holds it */
	if (!err && gaps)
		err = czfs_room_reserve(dm, gaps * per);
	if (!err && gaps) {
		err = czfs_clusters_reserve(fs, mi->ino, off / cbytes,
					    DIV_ROUND_UP(off + len, cbytes),
					    (unsigned)per, &delta);
		czfs_room_unreserve(dm, gaps * per);
		atomic_fetch_add(&dm->items_version, 1);
	}
	pthread_mutex_lock(&mi->lock);
	czfs_inode_add_stored(&mi->ii, &delta);
	if (!err && size > mi->ii.size)
		mi->ii.size = size;
	/* the promise and the items it counts go in one transaction */
	if (!mi->unlinked && (delta.prealloc || size > ii.size))
		store_err = czfs_mi_store(fs, mi, NULL);
	pthread_mutex_unlock(&mi->lock);
	pthread_rwlock_unlock(&fs->lock);
	czfs_flushreq_change(dm);
	return err ?: store_err;
}

static int do_fallocate(struct czfs_daemon *dm, struct czfs_minode *mi, int mode,
			uint64_t off, uint64_t len)
{
	bool keep = mode & FALLOC_FL_KEEP_SIZE;
	struct czfs_inode_info ii;
	int err = 0;

	/* COLLAPSE_RANGE and INSERT_RANGE never come: the kernel's FUSE
	 * refuses them itself */
	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE |
		     FALLOC_FL_ZERO_RANGE))
		return -EOPNOTSUPP;
	if ((mode & FALLOC_FL_PUNCH_HOLE) && (mode & FALLOC_FL_ZERO_RANGE))
		return -EOPNOTSUPP;
	if (off + len > CZFS_MAX_FILE_SIZE)
		return -EFBIG;
	/* as vfs_fallocate: append-only lets the size grow, no more */
	czfs_mi_attr(mi, &ii);
	err = czfs_fuse_flags_deny(ii.flags, !(mode & ~FALLOC_FL_KEEP_SIZE));
	if (err)
		return err;
	if (mode & FALLOC_FL_PUNCH_HOLE) {
		if (!keep)
			return -EOPNOTSUPP;
		err = punch(dm, mi, off, len);
	} else if (mode & FALLOC_FL_ZERO_RANGE) {
		/* as ext4: the range reads as zeros and is set aside */
		err = punch(dm, mi, off, len);
		if (!err)
			err = preallocate(dm, mi, off, len, keep ? 0 : off + len);
	} else {
		err = preallocate(dm, mi, off, len, keep ? 0 : off + len);
	}
	if (!err) {
		pthread_mutex_lock(&mi->lock);
		/* file_modified(), as ext4 and xfs: every mode, KEEP_SIZE
		 * too, changes mtime with ctime */
		now(&mi->ii.ctime);
		mi->ii.mtime = mi->ii.ctime;
		pthread_mutex_unlock(&mi->lock);
		err = czfs_writeback_attr(dm, mi);
	}
	return err;
}

static void czfs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off,
			   off_t len, struct fuse_file_info *fi)
{
	struct czfs_open_file *of = (struct czfs_open_file *)(uintptr_t)fi->fh;
	struct czfs_daemon *dm = req_daemon(req);
	struct czfs_minode *mi = of->mi;
	int err = do_fallocate(dm, mi, mode, (uint64_t)off, (uint64_t)len);

	/* refused before anything changed: an image without a fixed limit
	 * may take more (the promise's size: at most len, rounded) */
	if (err == -ENOSPC &&
	    !czfs_room_grow(dm, DIV_ROUND_UP((uint64_t)len, CZFS_BLOCK_SIZE) +
				(2ull << mi->ii.cluster_shift)))
		err = do_fallocate(dm, mi, mode, (uint64_t)off, (uint64_t)len);

	/* It changes data as a write does, and the kernel leaves the setuid
	 * and setgid rules of a write to us here (file_remove_privs). */
	if (!err)
		err = czfs_fuse_drop_suidgid(dm, req, mi, czfs_killpriv_asked());
	fuse_reply_err(req, czfs_fuse_errno(err));
}

/* fsync means durable: write everything back and commit a checkpoint. */
static void czfs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		       struct fuse_file_info *fi)
{
	const struct czfs_open_file *of = (const void *)(uintptr_t)fi->fh;

	if (of)		/* before its writeback: its tail is a log's (minode.h) */
		atomic_store(&of->mi->fsynced, true);
	fuse_reply_err(req, czfs_fuse_errno(czfs_flusher_checkpoint(req_daemon(req))));
}

static void czfs_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
			  struct fuse_file_info *fi)
{
	fuse_reply_err(req, czfs_fuse_errno(czfs_flusher_checkpoint(req_daemon(req))));
}

void czfs_fuse_ops_write(struct fuse_lowlevel_ops *ops)
{
	ops->write = czfs_write;
	ops->setattr = czfs_setattr;
	ops->fallocate = czfs_fallocate;
	ops->fsync = czfs_fsync;
	ops->fsyncdir = czfs_fsyncdir;
	/* No flush: there is nothing to do at a close (data is written
	 * back by checkpoints, errors reported by fsync), and without the
	 * operation the kernel stops sending FLUSH at every close. */
}
