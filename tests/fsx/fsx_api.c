// SPDX-License-Identifier: MIT
/*
 * czfs_fsx operations of the Linux file API beyond POSIX: reopening the
 * file through its file handle (name_to_handle_at, open_by_handle_at),
 * and a moment of chattr +i, during which a write and a truncate must fail
 * with EPERM.  Neither changes the data: the model stays as it is.  A
 * target without them skips them (counted, never a failure).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "fsx.h"

static bool skipped(struct fsx *f, struct fsx_op *op, int err)
{
	if (err != EOPNOTSUPP && err != ENOTTY && err != ENOSYS)
		return false;
	op->result = err;
	f->unsupported[op->type] = true;
	return true;
}

void fsx_handle_reopen(struct fsx *f)
{
	struct fsx_op *op = fsx_log_new(f, FSX_HANDLE_REOPEN, 0, 0);
	struct file_handle *fh = calloc(1, sizeof(*fh) + MAX_HANDLE_SZ);
	char *dir = strdup(f->path), *slash;
	int mid, mfd, fd;

	if (!fh || !dir)
		fsx_die(f, "out of memory");
	fh->handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(AT_FDCWD, f->path, fh, &mid, 0)) {
		if (skipped(f, op, errno))
			goto out;
		fsx_die(f, "name_to_handle_at: %s", strerror(errno));
	}
	slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	mfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY);
	if (mfd < 0)
		fsx_die(f, "open the file's directory: %s", strerror(errno));
	fd = open_by_handle_at(mfd, fh, O_RDWR);
	if (fd < 0)
		fsx_die(f, "open_by_handle_at: %s", strerror(errno));
	close(mfd);
	if (close(f->fd))
		fsx_die(f, "close: %s", strerror(errno));
	f->fd = fd;		/* the O_DIRECT twin, if any, stays open */
out:
	free(fh);
	free(dir);
}

static int set_flags(int fd, int flags)
{
	return ioctl(fd, FS_IOC_SETFLAGS, &flags);
}

void fsx_immutable_moment(struct fsx *f)
{
	struct fsx_op *op = fsx_log_new(f, FSX_IMMUTABLE, 0, 0);
	int flags, err;

	if (ioctl(f->fd, FS_IOC_GETFLAGS, &flags) ||
	    set_flags(f->fd, flags | FS_IMMUTABLE_FL)) {
		if (skipped(f, op, errno))
			return;
		fsx_die(f, "chattr +i: %s", strerror(errno));
	}
	err = pwrite(f->fd, "x", 1, 0) < 0 ? errno : 0;
	if (err != EPERM) {
		set_flags(f->fd, flags);
		fsx_die(f, "a write to an immutable file: %s",
			err ? strerror(err) : "it worked");
	}
	err = ftruncate(f->fd, 0) ? errno : 0;
	if (set_flags(f->fd, flags))
		fsx_die(f, "chattr -i: %s", strerror(errno));
	if (err != EPERM)
		fsx_die(f, "a truncate of an immutable file: %s",
			err ? strerror(err) : "it worked");
}
