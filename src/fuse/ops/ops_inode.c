// SPDX-License-Identifier: MIT
/* Inode operations: lookup, getattr, readlink, statfs, xattrs, access. */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/statvfs.h>

#include "acl.h"
#include "caller.h"
#include "compress.h"
#include "daemon.h"
#include "dir.h"
#include "flushreq.h"
#include "fs.h"
#include "log.h"
#include "minode.h"
#include "recompress.h"
#include "remount.h"
#include "ops.h"
#include "room.h"
#include "stats.h"
#include "thread.h"
#include "util.h"
#include "writeback.h"
#include "xattr.h"

int czfs_fuse_errno(int err)
{
	err = -err;
	/* Damage is reported as EIO; the log line names what is damaged. */
	return err == EFSCORRUPTED ? EIO : err;
}

int czfs_fuse_flags_deny(uint32_t flags, bool appending)
{
	if (flags & CZFS_INODE_IMMUTABLE)
		return -EPERM;
	if ((flags & CZFS_INODE_APPEND) && !appending)
		return -EPERM;
	return 0;
}

int czfs_fuse_read_inode(struct czfs_daemon *dm, uint64_t ino,
			 struct czfs_inode_info *ii)
{
	struct czfs_minode *mi;
	int err = czfs_mi_get(dm, ino, false, &mi);

	if (err)
		return err;
	czfs_mi_attr_shown(mi, ii);
	czfs_mi_put(dm, mi);
	return 0;
}

void czfs_fuse_fill_entry(struct czfs_daemon *dm,
			  const struct czfs_inode_info *ii,
			  struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = ii->ino;
	e->generation = ii->generation;
	czfs_inode_to_stat(ii, &e->attr);
	e->attr_timeout = dm->attr_timeout;
	e->entry_timeout = dm->attr_timeout;
}

static int do_lookup(struct czfs_daemon *dm, fuse_ino_t parent,
		     const char *name, struct fuse_entry_param *e)
{
	struct czfs_inode_info dir, ii;
	struct czfs_minode *mi;
	uint64_t ino;
	unsigned type;
	int err;

	err = czfs_fuse_read_inode(dm, parent, &dir);
	if (!err && !strcmp(name, ".")) {
		/* file handles (export support): the kernel finds an inode it
		 * no longer caches by its number, any type */
		ino = parent;
	} else if (!err && !S_ISDIR(dir.mode)) {
		err = -ENOTDIR;
	} else if (!err && !strcmp(name, "..")) {
		ino = parent == FUSE_ROOT_ID ? parent : dir.parent;	/* get_parent */
	} else if (!err) {
		pthread_rwlock_rdlock(&dm->fs->lock);
		err = czfs_dir_lookup(dm->fs, parent, name, strlen(name), &ino, &type);
		pthread_rwlock_unlock(&dm->fs->lock);
		/* a file's: a walk that stats may want listings' attributes */
		if (!err && type != DT_DIR)
			czfs_rdplus_lookup(&dm->rdp, parent, ino);
	}
	if (!err) {
		err = czfs_mi_get(dm, ino, false, &mi);
		if (err == -ENOENT) {
			czfs_err("directory %llu: entry '%s' names missing inode %llu",
				 (unsigned long long)parent, name,
				 (unsigned long long)ino);
			err = -EFSCORRUPTED;
		}
	}
	if (err)
		return err;
	czfs_mi_attr_shown(mi, &ii);
	czfs_fuse_fill_entry(dm, &ii, e);
	czfs_mi_lookup(dm, mi, 1);	/* the reply gives the kernel one */
	czfs_mi_put(dm, mi);
	return 0;
}

static void czfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct czfs_daemon *dm = req_daemon(req);
	struct fuse_entry_param e;
	int err = strlen(name) > CZFS_NAME_MAX ? -ENAMETOOLONG :
		  do_lookup(dm, parent, name, &e);

	if (err == -ENOENT) {
		/* A negative entry lets the kernel cache the miss. */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = dm->attr_timeout;
		fuse_reply_entry(req, &e);
	} else if (err) {
		fuse_reply_err(req, czfs_fuse_errno(err));
	} else {
		fuse_reply_entry(req, &e);
	}
}

static void czfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	czfs_mi_forget(req_daemon(req), ino, nlookup);
	fuse_reply_none(req);
}

static void czfs_forget_multi(fuse_req_t req, size_t count,
			      struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		czfs_mi_forget(req_daemon(req), forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void czfs_getattr(fuse_req_t req, fuse_ino_t ino,
			 struct fuse_file_info *fi)
{
	struct czfs_daemon *dm = req_daemon(req);
	struct czfs_inode_info ii;
	struct stat st;
	int err = czfs_fuse_read_inode(dm, ino, &ii);

	if (err) {
		fuse_reply_err(req, czfs_fuse_errno(err));
		return;
	}
	czfs_inode_to_stat(&ii, &st);
	fuse_reply_attr(req, &st, dm->attr_timeout);
}

static int do_readlink(struct czfs_daemon *dm, fuse_ino_t ino, char *buf)
{
	struct czfs_inode_info ii;
	struct czfs_thread *t;
	long n;
	int err;

	err = czfs_fuse_read_inode(dm, ino, &ii);
	if (err)
		return err;
	if (!S_ISLNK(ii.mode))
		return -EINVAL;
	t = czfs_fuse_thread();
	if (!t)
		return -ENOMEM;
	n = czfs_file_pread(dm->fs, t->codec, &ii, buf, ii.size, 0);
	if (n < 0)
		return (int)n;
	if ((uint64_t)n != ii.size || memchr(buf, 0, (size_t)n)) {
		czfs_err("symlink %llu: bad target", (unsigned long long)ino);
		return -EFSCORRUPTED;
	}
	buf[n] = '\0';
	return 0;
}

static void czfs_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[CZFS_SYMLINK_MAX + 1];
	int err = do_readlink(req_daemon(req), ino, buf);

	if (err)
		fuse_reply_err(req, czfs_fuse_errno(err));
	else
		fuse_reply_readlink(req, buf);
}

static int ts_cmp(const struct timespec *a, const struct timespec *b)
{
	if (a->tv_sec != b->tv_sec)
		return a->tv_sec < b->tv_sec ? -1 : 1;
	return a->tv_nsec < b->tv_nsec ? -1 : a->tv_nsec > b->tv_nsec;
}

/* Access time as relatime updates it: when older than the last change or
 * than a day (ops.h). */
bool czfs_fuse_atime_due(struct czfs_daemon *dm,
			 const struct czfs_inode_info *ii, time_t now)
{
	if (dm->opts.ro || dm->opts.atime == CZFS_ATIME_NOATIME ||
	    czfs_remount_is_ro(dm) || (ii->flags & CZFS_INODE_NOATIME))
		return false;		/* chattr +A */
	/* to the nanosecond, as the kernel's relatime_need_update: a read in
	 * the second of a change is not due again after it */
	return dm->opts.atime == CZFS_ATIME_STRICT ||
	       ts_cmp(&ii->atime, &ii->mtime) <= 0 ||
	       ts_cmp(&ii->atime, &ii->ctime) <= 0 ||
	       now - ii->atime.tv_sec >= 24 * 3600;
}

bool czfs_fuse_atime_touch(struct czfs_daemon *dm, struct czfs_minode *mi)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	if (!czfs_fuse_atime_due(dm, &mi->ii, now.tv_sec))
		return false;
	mi->ii.atime = now;
	czfs_mi_attrs_changed(dm, mi);
	return true;
}

#define INODE_COST	256

static void czfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct czfs_daemon *dm = req_daemon(req);
	const struct czfs_cp_info *cp = &dm->fs->cp;	/* fixed when ro */
	uint64_t max, used, avail, beyond;
	struct statvfs sv = { 0 };

	if (dm->opts.ro) {
		max = cp->max_blocks;
		used = MIN(max, cp->used_blocks + cp->prealloc_blocks);
	} else {		/* the live map, less what writes hold */
		czfs_room_usage(dm, &max, &used);
	}
	avail = dm->opts.ro ? max - used : czfs_room_free(dm);
	/* an image without a fixed limit: as far as the host lets it grow */
	beyond = dm->opts.ro ? 0 : czfs_room_beyond(dm);
	sv.f_bsize = sv.f_frsize = CZFS_BLOCK_SIZE;
	sv.f_blocks = max + beyond;
	sv.f_bfree = max - used + beyond;
	sv.f_bavail = avail + beyond;
	/* Inodes are tree items, not a table: report as many as the image
	 * could hold if it held nothing else (an inode item and its directory
	 * entry take about INODE_COST bytes), so that df -i shows use. */
	sv.f_files = MIN(max * (CZFS_BLOCK_SIZE / INODE_COST),
			 CZFS_MAX_INO - CZFS_FIRST_INO + 1);
	sv.f_files = MAX(sv.f_files, cp->inode_count);
	sv.f_ffree = sv.f_favail = sv.f_files - cp->inode_count;
	sv.f_namemax = CZFS_NAME_MAX;
	fuse_reply_statfs(req, &sv);
}

#define CAPS_XATTR	"security.capability"

/*
 * The kernel asks for security.capability before every write to a file
 * (to drop it), and keeps no answer: SQLite's transactions asked 48 times
 * each.  An inode remembers that it has none until its xattrs change.
 */
static int do_getxattr(struct czfs_daemon *dm, fuse_ino_t ino,
		       const char *name, void *buf, size_t size)
{
	bool caps = !strcmp(name, CAPS_XATTR);
	struct czfs_minode *mi;
	unsigned gen;
	int ret = czfs_mi_get(dm, ino, false, &mi);

	if (ret)
		return ret;
	pthread_mutex_lock(&mi->lock);
	gen = mi->xattr_gen;
	ret = caps && mi->no_caps ? -ENODATA : 0;
	pthread_mutex_unlock(&mi->lock);
	if (!ret) {
		pthread_rwlock_rdlock(&dm->fs->lock);
		ret = czfs_xattr_get(dm->fs, ino, name, buf, size);
		pthread_rwlock_unlock(&dm->fs->lock);
		pthread_mutex_lock(&mi->lock);
		if (caps && ret == -ENODATA && gen == mi->xattr_gen)
			mi->no_caps = true;
		pthread_mutex_unlock(&mi->lock);
	}
	czfs_mi_put(dm, mi);
	return ret;
}

/* The counters of the mount, as a virtual xattr of the root (czfs-stat). */
static void reply_stats(fuse_req_t req, size_t size)
{
	char buf[16384];
	size_t len = czfs_fuse_stats_format(req_daemon(req), buf, sizeof(buf));

	if (!size)
		fuse_reply_xattr(req, len);
	else if (size < len)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, len);
}

/* user.czfs.compress: a file's algorithm for new clusters, "none" when
 * it is not compressed. */
static int compress_attr(struct czfs_daemon *dm, fuse_ino_t ino, char *buf,
			 size_t cap)
{
	struct czfs_inode_info ii;
	int err = czfs_fuse_read_inode(dm, ino, &ii);

	if (err)
		return err;
	if (ii.flags & CZFS_INODE_NOCOMPRESS || ii.alg == CZFS_ALG_NONE)
		return snprintf(buf, cap, "none");
	if (ii.level)
		return snprintf(buf, cap, "%s:%d", czfs_alg_name((int)ii.alg), ii.level);
	return snprintf(buf, cap, "%s", czfs_alg_name((int)ii.alg));
}

static void reply_small(fuse_req_t req, int len, const char *buf, size_t size)
{
	if (len < 0)
		fuse_reply_err(req, czfs_fuse_errno(len));
	else if (!size)
		fuse_reply_xattr(req, (size_t)len);
	else if (size < (size_t)len)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, (size_t)len);
}

static void czfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			  size_t size)
{
	char *buf = NULL;
	int ret;

	atomic_fetch_add(&req_daemon(req)->st.getxattr_reqs, 1);
	if (ino == FUSE_ROOT_ID && !strcmp(name, CZFS_STATS_XATTR)) {
		reply_stats(req, size);
		return;
	}
	if (!strcmp(name, CZFS_COMPRESS_XATTR)) {
		char small[64];

		reply_small(req, compress_attr(req_daemon(req), ino, small,
					       sizeof(small)), small, size);
		return;
	}
	if (size && !(buf = malloc(size))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ret = do_getxattr(req_daemon(req), ino, name, buf, size);
	if (ret < 0)
		fuse_reply_err(req, czfs_fuse_errno(ret));
	else if (!size)
		fuse_reply_xattr(req, (size_t)ret);
	else
		fuse_reply_buf(req, buf, (size_t)ret);
	free(buf);
}

/*
 * Only CAP_SYS_ADMIN sees trusted.* names; the kernel checks get and set
 * but leaves listing to the filesystem.  Root stands in for the capability.
 */
static size_t drop_trusted(char *list, size_t len)
{
	static const char prefix[] = "trusted.";
	size_t in = 0, out = 0;

	while (in < len) {
		size_t n = strnlen(list + in, len - in) + 1;

		if (strncmp(list + in, prefix, sizeof(prefix) - 1)) {
			memmove(list + out, list + in, n);
			out += n;
		}
		in += n;
	}
	return out;
}

static int list_xattrs(struct czfs_daemon *dm, fuse_ino_t ino, char **list)
{
	int len;

	pthread_rwlock_rdlock(&dm->fs->lock);
	len = czfs_xattr_list(dm->fs, ino, NULL, 0);
	if (len > 0) {
		*list = malloc((size_t)len);
		len = *list ? czfs_xattr_list(dm->fs, ino, *list, (size_t)len)
			    : -ENOMEM;
	}
	pthread_rwlock_unlock(&dm->fs->lock);
	return len;
}

static void czfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct czfs_daemon *dm = req_daemon(req);
	struct czfs_inode_info ii;
	char *list = NULL;
	int ret;

	ret = czfs_fuse_read_inode(dm, ino, &ii);
	if (!ret)
		ret = list_xattrs(dm, ino, &list);
	if (ret > 0 && fuse_req_ctx(req)->uid != 0)
		ret = (int)drop_trusted(list, (size_t)ret);
	if (ret < 0)
		fuse_reply_err(req, czfs_fuse_errno(ret));
	else if (!size)
		fuse_reply_xattr(req, (size_t)ret);
	else if ((size_t)ret > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, list, (size_t)ret);
	free(list);
}

/* Setting user.czfs.compress: "none", or "ALG[:LEVEL]" (forced); a
 * regular file's data is rewritten so at once (recompress.h). */
static int set_compress(struct czfs_daemon *dm, fuse_ino_t ino,
			const char *value, size_t size)
{
	char spec[64];
	enum czfs_alg alg;
	int level, err;
	struct czfs_minode *mi;
	bool data;

	if (!value || size >= sizeof(spec))
		return value ? -EINVAL : -EPERM;
	memcpy(spec, value, size);
	spec[size] = '\0';
	err = czfs_alg_parse(spec, &alg, &level);
	if (err)
		return -EINVAL;
	err = czfs_mi_get(dm, ino, false, &mi);
	if (err)
		return err;
	pthread_mutex_lock(&mi->lock);
	if (!S_ISREG(mi->ii.mode) && !S_ISDIR(mi->ii.mode)) {
		err = -EINVAL;
	} else if (alg == CZFS_ALG_NONE) {
		mi->ii.flags = (mi->ii.flags & ~CZFS_INODE_COMPRESS) | CZFS_INODE_NOCOMPRESS;
	} else {
		mi->ii.alg = alg;
		mi->ii.level = level;
		mi->ii.flags = (mi->ii.flags & ~CZFS_INODE_NOCOMPRESS) | CZFS_INODE_COMPRESS;
	}
	data = S_ISREG(mi->ii.mode) && mi->ii.size;
	pthread_mutex_unlock(&mi->lock);
	if (!err)
		err = czfs_writeback_attr(dm, mi);
	/* as btrfs filesystem defragment -c: the data it has, now */
	if (!err && data)
		err = czfs_recomp_file(dm, mi);
	czfs_mi_put(dm, mi);
	return err;
}

/*
 * set (value != NULL) or remove an xattr, and touch ctime.  An access ACL
 * sets the permission bits too, and is not stored when they say it all.
 */
static int do_xattr_change(fuse_req_t req, fuse_ino_t ino, const char *name,
			   const char *value, size_t size, int flags)
{
	struct czfs_daemon *dm = req_daemon(req);
	struct czfs_inode_info ii;
	struct czfs_minode *mi;
	bool kill_sgid;
	int64_t delta = 0;
	mode_t perm = 0;
	int equiv = -1, err;

	if (dm->opts.ro)
		return -EROFS;
	if (!strcmp(name, CZFS_STATS_XATTR))
		return -EPERM;
	/* xattr_permission: chattr +i and +a forbid xattr changes, ACLs and
	 * user.czfs.compress included */
	err = czfs_fuse_read_inode(dm, ino, &ii) ?:
	      czfs_fuse_flags_deny(ii.flags, false);
	if (err)
		return err;
	if (!strcmp(name, CZFS_COMPRESS_XATTR))
		return set_compress(dm, ino, value, size);
	/* The kernel sends a new access ACL alone: its mode is ours to set. */
	if (value && !strcmp(name, CZFS_ACL_ACCESS)) {
		equiv = czfs_acl_mode(value, size, &perm);
		if (equiv < 0)
			return equiv;
	}
	err = czfs_mi_get(dm, ino, false, &mi);
	if (err)
		return err;
	/* posix_acl_update_mode: an ACL set by someone outside the file's
	 * group (and without CAP_FSETID) clears setgid, as chmod does */
	kill_sgid = equiv >= 0 && (mi->ii.mode & S_ISGID) &&
		    !czfs_caller_in_group_or_capable(req, mi->ii.gid);
	pthread_rwlock_wrlock(&dm->fs->lock);
	err = czfs_fs_begin(dm->fs);
	if (!err && value && equiv != 1) {
		err = czfs_xattr_set(dm->fs, ino, name, value, size, flags, &delta);
	} else if (!err) {
		err = czfs_xattr_remove(dm->fs, ino, name, &delta);
		/* As the kernel's filesystems (ext4_set_acl): an ACL the mode
		 * says all of, with none stored, changes the mode, or nothing
		 * (1) when that stays; removing an ACL that is not there
		 * succeeds and changes nothing. */
		if (err == -ENODATA && equiv == 1)
			err = (mi->ii.mode & 0777) == perm && !kill_sgid;
		else if (err == -ENODATA && !value &&
			 (!strcmp(name, CZFS_ACL_ACCESS) ||
			  !strcmp(name, CZFS_ACL_DEFAULT)))
			err = 1;
	}
	pthread_mutex_lock(&mi->lock);
	mi->xattr_gen++;	/* what do_getxattr knew is stale */
	mi->no_caps = false;
	pthread_mutex_unlock(&mi->lock);
	if (!err) {
		pthread_mutex_lock(&mi->lock);
		if (equiv >= 0)
			mi->ii.mode = (mi->ii.mode & ~0777u) | perm;
		if (kill_sgid)
			mi->ii.mode &= ~(uint32_t)S_ISGID;
		mi->ii.blocks = (uint64_t)MAX((int64_t)mi->ii.blocks + delta, 0);
		clock_gettime(CLOCK_REALTIME, &mi->ii.ctime);
		err = czfs_mi_store(dm->fs, mi, NULL);
		pthread_mutex_unlock(&mi->lock);
	}
	pthread_rwlock_unlock(&dm->fs->lock);
	czfs_flushreq_change(dm);
	czfs_mi_put(dm, mi);
	return err > 0 ? 0 : err;
}

static void czfs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			  const char *value, size_t size, int flags)
{
	int err = do_xattr_change(req, ino, name, value ? value : "", size, flags);

	fuse_reply_err(req, czfs_fuse_errno(err));
}

static void czfs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	int err = do_xattr_change(req, ino, name, NULL, 0, 0);

	fuse_reply_err(req, czfs_fuse_errno(err));
}

/* Permission bits are checked by the kernel (default_permissions). */
static void czfs_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct czfs_daemon *dm = req_daemon(req);

	fuse_reply_err(req, (mask & W_OK) && dm->opts.ro ? EROFS : 0);
}

void czfs_fuse_ops_inode(struct fuse_lowlevel_ops *ops)
{
	ops->lookup = czfs_lookup;
	ops->forget = czfs_forget;
	ops->forget_multi = czfs_forget_multi;
	ops->getattr = czfs_getattr;
	ops->readlink = czfs_readlink;
	ops->statfs = czfs_statfs;
	ops->getxattr = czfs_getxattr;
	ops->listxattr = czfs_listxattr;
	ops->setxattr = czfs_setxattr;
	ops->removexattr = czfs_removexattr;
	ops->access = czfs_access;
}
