// SPDX-License-Identifier: MIT
/*
 * Recording device: a wrapper that passes every request to the device
 * underneath and appends each completed change and flush to a log file
 * (wlog.h), so that a test can rebuild the image a power cut may leave.
 */
#include "config.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bdev.h"
#include "crc32c.h"
#include "util.h"
#include "wlog.h"

struct log_bdev {
	struct czfs_bdev b;
	struct czfs_bdev *in;
	pthread_mutex_t lock;		/* the log's order: one append at a time */
	int fd;
	uint64_t nrec;
	int err;			/* the first failed append: later ones too */
};

static struct log_bdev *to_log(struct czfs_bdev *b)
{
	return container_of(b, struct log_bdev, b);
}

static int write_all(int fd, struct iovec *iov, int cnt)
{
	while (cnt) {
		ssize_t n = writev(fd, iov, cnt);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		while (cnt && (size_t)n >= iov->iov_len) {
			n -= (ssize_t)iov->iov_len;
			iov++;
			cnt--;
		}
		if (cnt) {
			iov->iov_base = (char *)iov->iov_base + n;
			iov->iov_len -= (size_t)n;
		}
	}
	return 0;
}

/* Append one record (a write's data after it).  A log that failed once
 * stays failed: a record missing in the middle would make every replay
 * after it wrong. */
static int log_append(struct log_bdev *lb, char op, uint64_t off,
		      uint64_t len, uint64_t arg, const void *data)
{
	struct czfs_wlog_rec r = {
		.magic = cpu_to_le32(CZFS_WLOG_REC_MAGIC),
		.op = (uint8_t)op,
		.off = cpu_to_le64(off),
		.len = cpu_to_le64(len),
		.arg = cpu_to_le64(arg),
		.data_crc = cpu_to_le32(data ? czfs_crc32c(0, data, len) : 0),
	};
	struct iovec iov[2] = { { &r, sizeof(r) }, { (void *)data, data ? len : 0 } };
	int err;

	pthread_mutex_lock(&lb->lock);
	r.seq = cpu_to_le64(lb->nrec);
	r.crc = cpu_to_le32(czfs_crc32c(0, &r, sizeof(r)));
	err = lb->err ?: write_all(lb->fd, iov, data ? 2 : 1);
	if (!err)
		lb->nrec++;
	else
		lb->err = err;
	pthread_mutex_unlock(&lb->lock);
	return err;
}

/* Reads are not logged: they change nothing.  They are counted here too,
 * as the owner reads this device's statistics. */
static int log_read(struct czfs_bdev *b, void *buf, size_t len, uint64_t off)
{
	czfs_bdev_account(b, 'r', len);
	return czfs_bdev_read(to_log(b)->in, buf, len, off);
}

static int log_readv(struct czfs_bdev *b, const struct iovec *iov, int cnt,
		     uint64_t off)
{
	size_t len = 0;

	for (int k = 0; k < cnt; k++)
		len += iov[k].iov_len;
	czfs_bdev_account(b, 'r', len);
	return czfs_bdev_readv(to_log(b)->in, iov, cnt, off);
}

/* Logged once done: a write that failed may have landed in part, which
 * the log cannot say; the caller sees the error and the image is suspect
 * either way. */
static int log_write(struct czfs_bdev *b, const void *buf, size_t len,
		     uint64_t off)
{
	struct log_bdev *lb = to_log(b);
	int err = lb->in->ops->write(lb->in, buf, len, off);

	czfs_bdev_account(b, 'w', len);
	if (!err)
		err = log_append(lb, CZFS_WLOG_WRITE, off, len, 0, buf);
	b->size = lb->in->size;
	return err;
}

static int log_flush(struct czfs_bdev *b)
{
	struct log_bdev *lb = to_log(b);
	uint64_t covers;
	int err;

	pthread_mutex_lock(&lb->lock);
	covers = lb->nrec;	/* the writes completed before it began */
	pthread_mutex_unlock(&lb->lock);
	czfs_bdev_account(b, 'f', 0);
	err = czfs_bdev_flush(lb->in);
	/* the log itself is not fsync'd: a test reads it after the daemon,
	 * on a host that does not lose power */
	if (!err)
		err = log_append(lb, CZFS_WLOG_FLUSH, 0, 0, covers, NULL);
	return err;
}

static int log_resize(struct czfs_bdev *b, uint64_t size)
{
	struct log_bdev *lb = to_log(b);
	int err = lb->in->ops->resize(lb->in, size);

	if (!err)
		err = log_append(lb, CZFS_WLOG_RESIZE, size, 0, 0, NULL);
	b->size = lb->in->size;
	return err;
}

static int log_punch(struct czfs_bdev *b, uint64_t off, uint64_t len)
{
	struct log_bdev *lb = to_log(b);
	int err = czfs_bdev_punch(lb->in, off, len);

	if (!err) {
		czfs_bdev_account(b, 'p', len);
		err = log_append(lb, CZFS_WLOG_PUNCH, off, len, 0, NULL);
	}
	return err;
}

static void log_destroy(struct czfs_bdev *b)
{
	struct log_bdev *lb = to_log(b);

	czfs_bdev_close(lb->in);
	if (lb->fd >= 0)
		close(lb->fd);
	pthread_mutex_destroy(&lb->lock);
	free(lb);
}

static const struct czfs_bdev_ops log_ops = {
	.read = log_read,
	.readv = log_readv,
	.write = log_write,
	.flush = log_flush,
	.resize = log_resize,
	.punch = log_punch,
	.destroy = log_destroy,
};

static int log_start(struct log_bdev *lb, const char *path)
{
	struct czfs_wlog_header h = {
		.magic = CZFS_WLOG_MAGIC,
		.version = cpu_to_le32(CZFS_WLOG_VERSION),
		.header_size = cpu_to_le32(sizeof(h)),
		.initial_size = cpu_to_le64(lb->in->size),
	};
	struct iovec iov = { &h, sizeof(h) };

	lb->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC,
		      0644);
	if (lb->fd < 0)
		return -errno;
	return write_all(lb->fd, &iov, 1);
}

int czfs_bdev_log_create(struct czfs_bdev *inner, const char *path,
			 struct czfs_bdev **out)
{
	struct log_bdev *lb = calloc(1, sizeof(*lb));
	int err;

	if (!lb) {
		czfs_bdev_close(inner);
		return -ENOMEM;
	}
	lb->in = inner;
	lb->fd = -1;
	pthread_mutex_init(&lb->lock, NULL);
	lb->b.ops = &log_ops;
	lb->b.size = inner->size;
	lb->b.flags = inner->flags;
	lb->b.inner = inner;
	err = log_start(lb, path);
	if (err) {
		log_destroy(&lb->b);
		return err;
	}
	*out = &lb->b;
	return 0;
}
