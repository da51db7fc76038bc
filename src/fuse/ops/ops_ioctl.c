// SPDX-License-Identifier: MIT
/*
 * chattr and lsattr: FS_IOC_GETFLAGS and FS_IOC_SETFLAGS (and their
 * xfs twins FS_IOC_FSGETXATTR, FS_IOC_FSSETXATTR), which the kernel sends
 * as FUSE_IOCTL requests (its fileattr_get/fileattr_set, on a file or
 * directory it opens for the purpose).
 * The flags map on the inode's CZFS_INODE_* bits (src/lib/chattr.c); the
 * checks that enforce immutable and append-only live with the operations
 * they forbid, through czfs_fuse_flags_deny (ops_inode.c).
 */
#include "config.h"

#include <errno.h>
#include <linux/fs.h>
#include <string.h>
#include <time.h>

#include "caller.h"
#include "chattr.h"
#include "daemon.h"
#include "fs.h"
#include "minode.h"
#include "ops.h"
#include "writeback.h"

#define FS_IOC32_GETFLAGS_	_IOR('f', 1, int)
#define FS_IOC32_SETFLAGS_	_IOW('f', 2, int)

#define CHATTR_FLAGS	(CZFS_INODE_ATTR_FLAGS | CZFS_INODE_COMPRESS | \
			 CZFS_INODE_NOCOMPRESS)

/* An fsxattr to CZFS_INODE_* attribute flags (the compression flags are
 * the inode's, old): no extent size hints, no project ids. */
static int from_fsxattr(const struct fsxattr *fa, uint32_t old, uint32_t *flags)
{
	int err = czfs_chattr_from_xfs(fa->fsx_xflags, flags);

	*flags |= old & (CZFS_INODE_COMPRESS | CZFS_INODE_NOCOMPRESS);
	if (err)
		return err;
	return fa->fsx_extsize || fa->fsx_projid || fa->fsx_cowextsize ? -EINVAL : 0;
}

/*
 * As ext4: the owner or CAP_FOWNER may change the flags; immutable and
 * append-only need CAP_LINUX_IMMUTABLE to set or clear; an inode that
 * stays immutable keeps its other flags.  +c and +m exclude each other
 * (EINVAL, as btrfs).  The first inode to carry a chattr flag announces
 * INCOMPAT_ATTR_FLAGS in the superblock, before the inode reaches the
 * image.
 */
static int check_setflags(fuse_req_t req, const struct czfs_inode_info *ii,
			  uint32_t want)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	uint32_t old = ii->flags & CHATTR_FLAGS;

	if ((want & CZFS_INODE_COMPRESS) && (want & CZFS_INODE_NOCOMPRESS))
		return -EINVAL;
	if (ctx->uid != ii->uid && !czfs_caller_has_cap(req, CZFS_CAP_FOWNER))
		return -EPERM;
	if (((old ^ want) & (CZFS_INODE_IMMUTABLE | CZFS_INODE_APPEND)) &&
	    !czfs_caller_has_cap(req, CZFS_CAP_LINUX_IMMUTABLE))
		return -EPERM;
	if ((old & want & CZFS_INODE_IMMUTABLE) && old != want)
		return -EPERM;
	return 0;
}

/* SETFLAGS (fs_flags) or FSSETXATTR (fsx) */
static int do_setflags(fuse_req_t req, fuse_ino_t ino, unsigned fs_flags,
		       const struct fsxattr *fsx)
{
	struct czfs_daemon *dm = req_daemon(req);
	struct czfs_inode_info ii;
	struct czfs_minode *mi;
	uint32_t want;
	int err;

	err = dm->opts.ro ? -EROFS : czfs_mi_get(dm, ino, false, &mi);
	if (err)
		return err;
	czfs_mi_attr(mi, &ii);
	err = fsx ? from_fsxattr(fsx, ii.flags, &want) : czfs_chattr_from_fs(fs_flags, &want);
	if (!err)
		err = check_setflags(req, &ii, want);
	if (!err && (want & CZFS_INODE_ATTR_FLAGS)) {
		pthread_rwlock_wrlock(&dm->fs->lock);
		err = czfs_fs_begin(dm->fs) ?:
		      czfs_fs_add_features(dm->fs, CZFS_FEATURE_INCOMPAT_ATTR_FLAGS);
		pthread_rwlock_unlock(&dm->fs->lock);
	}
	if (!err) {
		pthread_mutex_lock(&mi->lock);
		mi->ii.flags = (mi->ii.flags & ~CHATTR_FLAGS) | want;
		clock_gettime(CLOCK_REALTIME, &mi->ii.ctime);
		pthread_mutex_unlock(&mi->lock);
		err = czfs_writeback_attr(dm, mi);
	}
	czfs_mi_put(dm, mi);
	if (!err)	/* the ioctl's reply carries no attributes */
		czfs_writeback_notify_attrs(dm, ino);
	return err;
}

/* Reply to a GETFLAGS or FSGETXATTR. */
static void reply_get(fuse_req_t req, fuse_ino_t ino, bool xattr, size_t out_bufsz)
{
	struct fsxattr fsx;
	struct czfs_inode_info ii;
	unsigned val;
	int err;

	if (out_bufsz < (xattr ? sizeof(fsx) : sizeof(val))) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	err = czfs_fuse_read_inode(req_daemon(req), ino, &ii);
	if (err) {
		fuse_reply_err(req, czfs_fuse_errno(err));
	} else if (xattr) {
		memset(&fsx, 0, sizeof(fsx));
		fsx.fsx_xflags = czfs_chattr_to_xfs(ii.flags);
		fuse_reply_ioctl(req, 0, &fsx, sizeof(fsx));
	} else {
		val = czfs_chattr_to_fs(ii.flags);
		fuse_reply_ioctl(req, 0, &val, sizeof(val));
	}
}

/*
 * The kernel sends these four (fuse_fileattr_get/set) whatever the
 * program called: chattr's SETFLAGS comes after an FSGETXATTR (the old
 * flags, vfs_fileattr_set), lsattr's GETFLAGS alone.  GETFLAGS is
 * encoded with a long but carries an int (4 bytes), as everywhere.
 */
static void czfs_ioctl(fuse_req_t req, fuse_ino_t ino, unsigned int cmd,
		       void *arg, struct fuse_file_info *fi, unsigned flags,
		       const void *in_buf, size_t in_bufsz, size_t out_bufsz)
{
	struct fsxattr fsx;
	unsigned val;
	int err;

	if (cmd == FS_IOC_GETFLAGS || cmd == FS_IOC32_GETFLAGS_ ||
	    cmd == FS_IOC_FSGETXATTR) {
		reply_get(req, ino, cmd == FS_IOC_FSGETXATTR, out_bufsz);
		return;
	}
	if (cmd == FS_IOC_SETFLAGS || cmd == FS_IOC32_SETFLAGS_) {
		if (in_bufsz < sizeof(val)) {
			fuse_reply_err(req, EINVAL);
			return;
		}
		memcpy(&val, in_buf, sizeof(val));
		err = do_setflags(req, ino, val, NULL);
	} else if (cmd == FS_IOC_FSSETXATTR) {
		if (in_bufsz < sizeof(fsx)) {
			fuse_reply_err(req, EINVAL);
			return;
		}
		memcpy(&fsx, in_buf, sizeof(fsx));
		err = do_setflags(req, ino, 0, &fsx);
	} else {
		fuse_reply_err(req, ENOTTY);
		return;
	}
	if (err)
		fuse_reply_err(req, czfs_fuse_errno(err));
	else
		fuse_reply_ioctl(req, 0, NULL, 0);
}

void czfs_fuse_ops_ioctl(struct fuse_lowlevel_ops *ops)
{
	ops->ioctl = czfs_ioctl;
}
