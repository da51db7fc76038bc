// SPDX-License-Identifier: MIT
/* Backing device shared code and the file implementation. */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <linux/fs.h>

#include "bdev.h"
#include "util.h"

struct file_bdev {
	struct czfs_bdev b;
	int fd;
	int dfd;		/* O_DIRECT, for data reads: -1 if none */
	int is_blockdev;
};

void czfs_bdev_account(struct czfs_bdev *b, char op, size_t len)
{
	unsigned bucket = 0;

	switch (op) {
	case 'r':
		atomic_fetch_add_explicit(&b->stats.reads, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&b->stats.read_bytes, len, memory_order_relaxed);
		while (bucket < CZFS_BDEV_HIST_BUCKETS - 1 &&
		       len > (4096ull << bucket))
			bucket++;
		atomic_fetch_add_explicit(&b->stats.read_hist[bucket], 1,
					  memory_order_relaxed);
		break;
	case 'w':
		atomic_fetch_add_explicit(&b->stats.writes, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&b->stats.write_bytes, len, memory_order_relaxed);
		break;
	case 'p':
		atomic_fetch_add_explicit(&b->stats.punches, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&b->stats.punch_bytes, len, memory_order_relaxed);
		break;
	default:
		atomic_fetch_add_explicit(&b->stats.flushes, 1, memory_order_relaxed);
		break;
	}
}

static int fd_readv(int fd, const struct iovec *iov, int cnt, uint64_t off)
{
	struct iovec local[IOV_MAX];
	int i = 0;

	if (cnt > IOV_MAX)
		return -EINVAL;
	memcpy(local, iov, (size_t)cnt * sizeof(*iov));
	while (i < cnt) {
		ssize_t n = preadv(fd, local + i, cnt - i, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;	/* past the end: truncated image */
		off += (uint64_t)n;
		/* a short read: step over what arrived, read the rest */
		while (i < cnt && (size_t)n >= local[i].iov_len)
			n -= (ssize_t)local[i++].iov_len;
		if (i < cnt) {
			local[i].iov_base = (char *)local[i].iov_base + n;
			local[i].iov_len -= (size_t)n;
		}
	}
	return 0;
}

/* Whether a read of len bytes in iov at off may go by dfd. */
static bool direct_ok(const struct iovec *iov, int cnt, size_t len, uint64_t off)
{
	const uint64_t mask = CZFS_BDEV_BLOCK - 1;

	if (len < CZFS_BDEV_DIRECT_MIN || (off & mask))
		return false;
	for (int k = 0; k < cnt; k++)
		if (((uintptr_t)iov[k].iov_base | iov[k].iov_len) & mask)
			return false;
	return true;
}

static int file_readv(struct czfs_bdev *bd, const struct iovec *iov, int cnt,
		      uint64_t off)
{
	struct file_bdev *fb = container_of(bd, struct file_bdev, b);
	size_t len = 0;
	int err;

	for (int k = 0; k < cnt; k++)
		len += iov[k].iov_len;
	czfs_bdev_account(bd, 'r', len);
	if (fb->dfd >= 0 && direct_ok(iov, cnt, len, off)) {
		err = fd_readv(fb->dfd, iov, cnt, off);
		if (!err)
			atomic_fetch_add_explicit(&bd->stats.direct_reads, 1,
						  memory_order_relaxed);
		/* refused after all (a device's larger sector): buffered */
		if (err != -EINVAL)
			return err;
	}
	return fd_readv(fb->fd, iov, cnt, off);
}

static int file_read(struct czfs_bdev *bd, void *buf, size_t len, uint64_t off)
{
	struct file_bdev *fb = container_of(bd, struct file_bdev, b);
	struct iovec iov = { buf, len };

	czfs_bdev_account(bd, 'r', len);
	return fd_readv(fb->fd, &iov, 1, off);
}

static int file_write(struct czfs_bdev *bd, const void *buf, size_t len,
		      uint64_t off)
{
	struct file_bdev *fb = container_of(bd, struct file_bdev, b);
	int err;

	if (bd->flags & CZFS_BDEV_RDONLY)
		return -EROFS;
	czfs_bdev_account(bd, 'w', len);
	err = czfs_pwrite_full(fb->fd, buf, len, off);
	if (err)
		return err;
	if (off + len > bd->size)
		bd->size = off + len;
	return 0;
}

static int file_flush(struct czfs_bdev *bd)
{
	struct file_bdev *fb = container_of(bd, struct file_bdev, b);

	czfs_bdev_account(bd, 'f', 0);
	return fdatasync(fb->fd) ? -errno : 0;
}

static int file_resize(struct czfs_bdev *bd, uint64_t size)
{
	struct file_bdev *fb = container_of(bd, struct file_bdev, b);

	if (fb->is_blockdev)
		return size <= bd->size ? 0 : -EOPNOTSUPP;
	if (ftruncate(fb->fd, (off_t)size))
		return -errno;
	bd->size = size;
	return 0;
}

static int file_punch(struct czfs_bdev *bd, uint64_t off, uint64_t len)
{
	struct file_bdev *fb = container_of(bd, struct file_bdev, b);

	if (bd->flags & CZFS_BDEV_RDONLY)
		return -EROFS;
	czfs_bdev_account(bd, 'p', len);
	if (fallocate(fb->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)off, (off_t)len))
		return errno == ENOSYS ? -EOPNOTSUPP : -errno;
	return 0;
}

static void file_destroy(struct czfs_bdev *bd)
{
	struct file_bdev *fb = container_of(bd, struct file_bdev, b);

	close(fb->fd);
	if (fb->dfd >= 0)
		close(fb->dfd);
	free(fb);
}

static const struct czfs_bdev_ops file_ops = {
	.read = file_read,
	.readv = file_readv,
	.write = file_write,
	.flush = file_flush,
	.resize = file_resize,
	.punch = file_punch,
	.destroy = file_destroy,
};

/* The file of fd opened again, read-only with O_DIRECT (the same file,
 * whatever its path names now): the descriptor, or -1 if refused. */
static int open_direct(int fd)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	return open(proc, O_RDONLY | O_DIRECT | O_CLOEXEC);
}

int czfs_bdev_open(const char *path, unsigned flags, struct czfs_bdev **out)
{
	int oflags = O_CLOEXEC | (flags & CZFS_BDEV_RDONLY ? O_RDONLY : O_RDWR);
	struct file_bdev *fb;
	struct stat st;
	int err;

	if (flags & CZFS_BDEV_DIRECT)
		oflags |= O_DIRECT;
	if (flags & CZFS_BDEV_CREATE)
		oflags |= O_CREAT | O_TRUNC;
	fb = calloc(1, sizeof(*fb));
	if (!fb)
		return -ENOMEM;
	fb->dfd = -1;
	fb->fd = open(path, oflags, 0644);
	if (fb->fd < 0) {
		err = -errno;
		goto out_free;
	}
	if (fstat(fb->fd, &st)) {
		err = -errno;
		goto out_close;
	}
	if (S_ISBLK(st.st_mode)) {
		uint64_t bytes;

		if (ioctl(fb->fd, BLKGETSIZE64, &bytes)) {
			err = -errno;
			goto out_close;
		}
		fb->is_blockdev = 1;
		fb->b.size = bytes;
	} else if (S_ISREG(st.st_mode)) {
		fb->b.size = (uint64_t)st.st_size;
	} else {
		err = -EINVAL;
		goto out_close;
	}
	if ((flags & CZFS_BDEV_DIRECT_DATA) && !(flags & CZFS_BDEV_DIRECT))
		fb->dfd = open_direct(fb->fd);
	fb->b.ops = &file_ops;
	fb->b.flags = flags;
	*out = &fb->b;
	return 0;

out_close:
	close(fb->fd);
out_free:
	free(fb);
	return err;
}

int czfs_bdev_fd(const struct czfs_bdev *b)
{
	if (b->inner)
		return czfs_bdev_fd(b->inner);
	if (b->ops != &file_ops)
		return -1;
	return container_of(b, const struct file_bdev, b)->fd;
}

int czfs_bdev_host_room(const struct czfs_bdev *b, uint64_t *bytes)
{
	const struct czfs_bdev *f = b->inner ? b->inner : b;
	int fd = czfs_bdev_fd(b);
	struct statvfs sv;
	struct stat st;

	if (fd < 0 || f->ops != &file_ops ||
	    container_of(f, const struct file_bdev, b)->is_blockdev)
		return -EOPNOTSUPP;
	if (fstatvfs(fd, &sv) || fstat(fd, &st))
		return -errno;
	*bytes = (uint64_t)sv.f_bavail * sv.f_frsize + (uint64_t)st.st_blocks * 512;
	return 0;
}

void czfs_bdev_close(struct czfs_bdev *b)
{
	if (b)
		b->ops->destroy(b);
}
