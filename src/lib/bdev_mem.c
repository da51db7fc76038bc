// SPDX-License-Identifier: MIT
/* In-memory backing device that records every request, for tests. */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>

#include "bdev.h"
#include "util.h"

struct mem_bdev {
	struct czfs_bdev b;
	pthread_mutex_t lock;
	uint8_t *data;
	uint64_t cap;
	struct czfs_bdev_req *log;
	size_t nlog, log_cap;
	unsigned fail_nth;
	int fail_err;
};

static struct mem_bdev *to_mem(struct czfs_bdev *b)
{
	return container_of(b, struct mem_bdev, b);
}

/* Log the request and decide whether it fails.  Called with lock held. */
static int mem_begin(struct mem_bdev *mb, char op, uint64_t off, uint64_t len)
{
	if (CZFS_GROW(mb->log, mb->nlog, mb->log_cap, 64))
		return -ENOMEM;
	mb->log[mb->nlog++] = (struct czfs_bdev_req){ op, off, len };
	czfs_bdev_account(&mb->b, op, len);
	if ((mb->b.flags & CZFS_BDEV_DIRECT) && op != 'f' &&
	    ((off | len) & (4096 - 1)))
		return -EINVAL;
	if (mb->fail_nth && op != 'f' && --mb->fail_nth == 0)
		return mb->fail_err;
	return 0;
}

static int mem_read(struct czfs_bdev *b, void *buf, size_t len, uint64_t off)
{
	struct mem_bdev *mb = to_mem(b);
	int err;

	if ((b->flags & CZFS_BDEV_DIRECT) && ((uintptr_t)buf & 4095))
		return -EINVAL;
	pthread_mutex_lock(&mb->lock);
	err = mem_begin(mb, 'r', off, len);
	if (!err && (off > b->size || len > b->size - off))
		err = -EIO;
	if (!err)
		memcpy(buf, mb->data + off, len);
	pthread_mutex_unlock(&mb->lock);
	return err;
}

static int mem_readv(struct czfs_bdev *b, const struct iovec *iov, int cnt,
		     uint64_t off)
{
	struct mem_bdev *mb = to_mem(b);
	uint64_t len = 0, pos = off;
	int err;

	for (int k = 0; k < cnt; k++) {
		len += iov[k].iov_len;
		if ((b->flags & CZFS_BDEV_DIRECT) &&
		    (((uintptr_t)iov[k].iov_base | iov[k].iov_len) & 4095))
			return -EINVAL;
	}
	pthread_mutex_lock(&mb->lock);
	err = mem_begin(mb, 'r', off, len);
	if (!err && (off > b->size || len > b->size - off))
		err = -EIO;
	for (int k = 0; !err && k < cnt; k++) {
		memcpy(iov[k].iov_base, mb->data + pos, iov[k].iov_len);
		pos += iov[k].iov_len;
	}
	pthread_mutex_unlock(&mb->lock);
	return err;
}

static int mem_grow(struct mem_bdev *mb, uint64_t size)
{
	uint64_t old = mb->cap;

	if (CZFS_RESERVE(mb->data, size, mb->cap, 0))
		return -ENOMEM;
	if (mb->cap > old)
		memset(mb->data + old, 0, mb->cap - old);
	if (size < mb->b.size)
		memset(mb->data + size, 0, mb->b.size - size);
	mb->b.size = size;
	return 0;
}

static int mem_write(struct czfs_bdev *b, const void *buf, size_t len,
		     uint64_t off)
{
	struct mem_bdev *mb = to_mem(b);
	int err;

	if (b->flags & CZFS_BDEV_RDONLY)
		return -EROFS;
	if ((b->flags & CZFS_BDEV_DIRECT) && ((uintptr_t)buf & 4095))
		return -EINVAL;
	pthread_mutex_lock(&mb->lock);
	err = mem_begin(mb, 'w', off, len);
	if (!err && off + len > b->size)
		err = mem_grow(mb, off + len);
	if (!err)
		memcpy(mb->data + off, buf, len);
	pthread_mutex_unlock(&mb->lock);
	return err;
}

static int mem_flush(struct czfs_bdev *b)
{
	struct mem_bdev *mb = to_mem(b);
	int err;

	pthread_mutex_lock(&mb->lock);
	err = mem_begin(mb, 'f', 0, 0);
	pthread_mutex_unlock(&mb->lock);
	return err;
}

static int mem_resize(struct czfs_bdev *b, uint64_t size)
{
	struct mem_bdev *mb = to_mem(b);
	int err;

	pthread_mutex_lock(&mb->lock);
	err = mem_grow(mb, size);
	pthread_mutex_unlock(&mb->lock);
	return err;
}

/* Zeroes the range (inside the device) as a punched hole reads. */
static int mem_punch(struct czfs_bdev *b, uint64_t off, uint64_t len)
{
	struct mem_bdev *mb = to_mem(b);
	int err;

	if (b->flags & CZFS_BDEV_RDONLY)
		return -EROFS;
	pthread_mutex_lock(&mb->lock);
	err = mem_begin(mb, 'p', off, len);
	if (!err && off < b->size)
		memset(mb->data + off, 0, MIN(len, b->size - off));
	pthread_mutex_unlock(&mb->lock);
	return err;
}

static void mem_destroy(struct czfs_bdev *b)
{
	struct mem_bdev *mb = to_mem(b);

	pthread_mutex_destroy(&mb->lock);
	free(mb->data);
	free(mb->log);
	free(mb);
}

static const struct czfs_bdev_ops mem_ops = {
	.read = mem_read,
	.readv = mem_readv,
	.write = mem_write,
	.flush = mem_flush,
	.resize = mem_resize,
	.punch = mem_punch,
	.destroy = mem_destroy,
};

int czfs_bdev_mem_create(uint64_t size, unsigned flags, struct czfs_bdev **out)
{
	struct mem_bdev *mb = calloc(1, sizeof(*mb));

	if (!mb)
		return -ENOMEM;
	pthread_mutex_init(&mb->lock, NULL);
	mb->b.ops = &mem_ops;
	mb->b.flags = flags & ~CZFS_BDEV_CREATE;
	if (mem_grow(mb, size)) {
		mem_destroy(&mb->b);
		return -ENOMEM;
	}
	*out = &mb->b;
	return 0;
}

uint8_t *czfs_bdev_mem_data(struct czfs_bdev *b)
{
	return to_mem(b)->data;
}

const struct czfs_bdev_req *czfs_bdev_mem_log(struct czfs_bdev *b, size_t *n)
{
	*n = to_mem(b)->nlog;
	return to_mem(b)->log;
}

void czfs_bdev_mem_clear_log(struct czfs_bdev *b)
{
	to_mem(b)->nlog = 0;
}

void czfs_bdev_mem_fail_after(struct czfs_bdev *b, unsigned nth, int err)
{
	struct mem_bdev *mb = to_mem(b);

	pthread_mutex_lock(&mb->lock);
	mb->fail_nth = nth;
	mb->fail_err = err;
	pthread_mutex_unlock(&mb->lock);
}
