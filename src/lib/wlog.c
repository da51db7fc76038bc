// SPDX-License-Identifier: MIT
/*
 * Write logs read back (wlog.h): the records of a log, the durable image
 * at a cut, and the image a power cut may leave there, as a device.
 */
#include "config.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"
#include "log.h"
#include "util.h"
#include "wlog.h"

/* ---- reading a log ----------------------------------------------------- */

static int parse_header(const uint8_t *buf, size_t len, uint64_t *initial)
{
	struct czfs_wlog_header h;

	if (len < sizeof(h)) {
		czfs_err("write log: %zu bytes, shorter than its header", len);
		return -EINVAL;
	}
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, CZFS_WLOG_MAGIC, sizeof(h.magic))) {
		czfs_err("write log: bad magic (not a czfs-fuse -o log_writes file)");
		return -EINVAL;
	}
	if (le32_to_cpu(h.version) != CZFS_WLOG_VERSION ||
	    le32_to_cpu(h.header_size) != sizeof(h)) {
		czfs_err("write log: version %u (header %u bytes), this reader "
			 "knows %u (%zu)", le32_to_cpu(h.version),
			 le32_to_cpu(h.header_size), CZFS_WLOG_VERSION, sizeof(h));
		return -EINVAL;
	}
	*initial = le64_to_cpu(h.initial_size);
	return 0;
}

/* The record at pos (index i) into *e; 1 if the log ends in it (torn). */
static int parse_rec(const uint8_t *buf, size_t len, size_t pos, size_t i,
		     struct czfs_wlog_entry *e)
{
	struct czfs_wlog_rec r;
	uint32_t crc;
	uint64_t dlen;

	if (len - pos < sizeof(r))
		return 1;
	memcpy(&r, buf + pos, sizeof(r));
	crc = le32_to_cpu(r.crc);
	r.crc = 0;
	if (le32_to_cpu(r.magic) != CZFS_WLOG_REC_MAGIC ||
	    crc != czfs_crc32c(0, &r, sizeof(r))) {
		czfs_err("write log: record %zu at byte %zu: bad magic or crc",
			 i, pos);
		return -EINVAL;
	}
	if (le64_to_cpu(r.seq) != i || !strchr("wfpr", r.op) || !r.op) {
		czfs_err("write log: record %zu at byte %zu: sequence %llu, "
			 "operation 0x%02x", i, pos,
			 (unsigned long long)le64_to_cpu(r.seq), r.op);
		return -EINVAL;
	}
	*e = (struct czfs_wlog_entry){
		.op = (char)r.op, .off = le64_to_cpu(r.off),
		.len = le64_to_cpu(r.len), .arg = le64_to_cpu(r.arg),
	};
	dlen = e->op == CZFS_WLOG_WRITE ? e->len : 0;
	if (dlen > len - pos - sizeof(r))
		return 1;
	e->data = buf + pos + sizeof(r);
	e->end = pos + sizeof(r) + dlen;
	if (dlen && le32_to_cpu(r.data_crc) != czfs_crc32c(0, e->data, dlen)) {
		czfs_err("write log: record %zu at byte %zu: data crc", i, pos);
		return -EINVAL;
	}
	if (e->op == CZFS_WLOG_FLUSH && e->arg > i) {
		czfs_err("write log: record %zu: a flush covering %llu records",
			 i, (unsigned long long)e->arg);
		return -EINVAL;
	}
	return 0;
}

int czfs_wlog_parse(const void *buf, size_t len, struct czfs_wlog **out)
{
	struct czfs_wlog *log = calloc(1, sizeof(*log));
	size_t pos = sizeof(struct czfs_wlog_header), cap = 0;
	int err;

	if (!log)
		return -ENOMEM;
	err = parse_header(buf, len, &log->initial_size);
	while (!err && pos < len) {
		err = CZFS_GROW(log->e, log->n, cap, 1024);
		if (err)
			break;
		err = parse_rec(buf, len, pos, log->n, &log->e[log->n]);
		if (err == 1) {		/* the writer died appending it */
			log->torn_tail = 1;
			err = 0;
			break;
		}
		if (!err)
			pos = log->e[log->n++].end;
	}
	if (err) {
		czfs_wlog_free(log);
		return err;
	}
	*out = log;
	return 0;
}

int czfs_wlog_map_file(const char *path, void **map, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	int err = 0;

	*map = NULL;
	*len = 0;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		err = -errno;
	if (!err && st.st_size > 0) {
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE,
			       fd, 0);

		if (m == MAP_FAILED) {
			err = -errno;
		} else {
			*map = m;
			*len = (size_t)st.st_size;
		}
	}
	close(fd);
	return err;
}

void czfs_wlog_unmap_file(void *map, size_t len)
{
	if (len)
		munmap(map, len);
}

int czfs_wlog_load(const char *path, struct czfs_wlog **out)
{
	size_t len;
	void *map;
	int err = czfs_wlog_map_file(path, &map, &len);

	if (!err)
		err = czfs_wlog_parse(len ? map : "", len, out);
	if (err) {
		czfs_wlog_unmap_file(map, len);
	} else if (len) {
		(*out)->map = map;
		(*out)->map_len = len;
	}
	return err;
}

void czfs_wlog_free(struct czfs_wlog *log)
{
	if (!log)
		return;
	if (log->map)
		munmap(log->map, log->map_len);
	free(log->e);
	free(log);
}

size_t czfs_wlog_records_at(const struct czfs_wlog *log, uint64_t pos)
{
	size_t lo = 0, hi = log->n;

	while (lo < hi) {	/* the first record that ends past pos */
		size_t mid = lo + (hi - lo) / 2;

		if (log->e[mid].end <= pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* ---- the durable image -------------------------------------------------- */

static int img_size(struct czfs_replay *r, uint64_t size)
{
	if (CZFS_RESERVE(r->img, size, r->cap, 0))
		return -ENOMEM;
	if (size > r->size)	/* a file grows with zeros */
		memset(r->img + r->size, 0, size - r->size);
	r->size = size;
	return 0;
}

/* Apply record e to the durable image, as the file would hold it. */
static int img_apply(struct czfs_replay *r, const struct czfs_wlog_entry *e)
{
	int err = 0;

	switch (e->op) {
	case CZFS_WLOG_WRITE:
		if (e->off + e->len > r->size)
			err = img_size(r, e->off + e->len);
		if (!err)
			memcpy(r->img + e->off, e->data, e->len);
		break;
	case CZFS_WLOG_PUNCH:	/* KEEP_SIZE: inside the file only */
		if (e->off < r->size)
			memset(r->img + e->off, 0, MIN(e->len, r->size - e->off));
		break;
	case CZFS_WLOG_RESIZE:
		err = img_size(r, e->off);
		break;
	}
	return err;
}

int czfs_replay_init(struct czfs_replay *r, const struct czfs_wlog *log,
		     const void *image, uint64_t size)
{
	int err;

	*r = (struct czfs_replay){ .log = log };
	if (size != log->initial_size) {
		czfs_err("write log: it began on an image of %llu bytes, not %llu "
			 "(the image must be copied before the mount)",
			 (unsigned long long)log->initial_size,
			 (unsigned long long)size);
		return -EINVAL;
	}
	err = img_size(r, size);
	if (!err && size)
		memcpy(r->img, image, size);
	return err;
}

void czfs_replay_destroy(struct czfs_replay *r)
{
	free(r->img);
	r->img = NULL;
}

int czfs_replay_advance(struct czfs_replay *r, size_t n)
{
	size_t durable = r->applied;
	int err = 0;

	if (n < r->cut || n > r->log->n)
		return -EINVAL;
	/* the furthest any flush of the cut covers: two flushes may
	 * complete out of the order they began in */
	for (size_t i = r->cut; i < n; i++)
		if (r->log->e[i].op == CZFS_WLOG_FLUSH)
			durable = MAX(durable, r->log->e[i].arg);
	for (; !err && r->applied < durable; r->applied++)
		err = img_apply(r, &r->log->e[r->applied]);
	if (!err)
		r->cut = n;
	return err;
}

/* ---- the image after a power cut, as a device -------------------------- */

/* A range laid over the durable image: data, or zeros (data NULL). */
struct overlay {
	uint64_t off, len;
	const uint8_t *data;
	uint8_t *own;			/* data written to the device itself */
};

struct replay_bdev {
	struct czfs_bdev b;
	const uint8_t *base;		/* the durable image, not ours */
	uint64_t base_size;
	struct overlay *ov;
	size_t nov, cap;
};

static struct replay_bdev *to_rb(struct czfs_bdev *b)
{
	return container_of(b, struct replay_bdev, b);
}

static int rb_add(struct replay_bdev *rb, uint64_t off, uint64_t len,
		  const uint8_t *data)
{
	if (CZFS_GROW(rb->ov, rb->nov, rb->cap, 32))
		return -ENOMEM;
	rb->ov[rb->nov++] = (struct overlay){ off, len, data, NULL };
	return 0;
}

/* A shrink zeroes what lies past the new end, as a file's would read
 * after it grows again. */
static int rb_resize(struct czfs_bdev *b, uint64_t size)
{
	struct replay_bdev *rb = to_rb(b);
	int err = 0;

	if (size < b->size)
		err = rb_add(rb, size, b->size - size, NULL);
	if (!err)
		b->size = size;
	return err;
}

static int rb_read(struct czfs_bdev *b, void *buf, size_t len, uint64_t off)
{
	struct replay_bdev *rb = to_rb(b);
	uint8_t *dst = buf;

	czfs_bdev_account(b, 'r', len);
	if (off > b->size || len > b->size - off)
		return -EIO;
	memset(dst, 0, len);
	if (off < rb->base_size)
		memcpy(dst, rb->base + off, MIN(len, rb->base_size - off));
	for (size_t i = 0; i < rb->nov; i++) {
		const struct overlay *o = &rb->ov[i];
		uint64_t from = MAX(off, o->off);
		uint64_t to = MIN(off + len, o->off + o->len);

		if (from >= to)
			continue;
		if (o->data)
			memcpy(dst + (from - off), o->data + (from - o->off), to - from);
		else
			memset(dst + (from - off), 0, to - from);
	}
	return 0;
}

static int rb_readv(struct czfs_bdev *b, const struct iovec *iov, int cnt,
		    uint64_t off)
{
	int err = 0;

	for (int k = 0; !err && k < cnt; k++) {
		err = rb_read(b, iov[k].iov_base, iov[k].iov_len, off);
		off += iov[k].iov_len;
	}
	return err;
}

static int rb_write(struct czfs_bdev *b, const void *buf, size_t len,
		    uint64_t off)
{
	struct replay_bdev *rb = to_rb(b);
	uint8_t *copy;
	int err;

	czfs_bdev_account(b, 'w', len);
	copy = malloc(len ? len : 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, buf, len);
	err = rb_add(rb, off, len, copy);
	if (err) {
		free(copy);
		return err;
	}
	rb->ov[rb->nov - 1].own = copy;
	b->size = MAX(b->size, off + len);
	return 0;
}

static int rb_flush(struct czfs_bdev *b)
{
	czfs_bdev_account(b, 'f', 0);
	return 0;
}

static int rb_punch(struct czfs_bdev *b, uint64_t off, uint64_t len)
{
	czfs_bdev_account(b, 'p', len);
	if (off >= b->size)
		return 0;
	return rb_add(to_rb(b), off, MIN(len, b->size - off), NULL);
}

static void rb_destroy(struct czfs_bdev *b)
{
	struct replay_bdev *rb = to_rb(b);

	for (size_t i = 0; i < rb->nov; i++)
		free(rb->ov[i].own);
	free(rb->ov);
	free(rb);
}

static const struct czfs_bdev_ops replay_ops = {
	.read = rb_read,
	.readv = rb_readv,
	.write = rb_write,
	.flush = rb_flush,
	.resize = rb_resize,
	.punch = rb_punch,
	.destroy = rb_destroy,
};

/* Lay record e over the device, kept as pick says. */
static int rb_keep(struct replay_bdev *rb, const struct czfs_wlog_entry *e,
		   uint32_t pick)
{
	uint64_t len = e->len;

	if (!pick)
		return 0;
	switch (e->op) {
	case CZFS_WLOG_WRITE:
		if (pick != CZFS_REPLAY_WHOLE)
			len = MIN(len, (uint64_t)pick * CZFS_BDEV_BLOCK);
		rb->b.size = MAX(rb->b.size, e->off + len);
		return rb_add(rb, e->off, len, e->data);
	case CZFS_WLOG_PUNCH:
		return rb_punch(&rb->b, e->off, len);
	case CZFS_WLOG_RESIZE:
		return rb_resize(&rb->b, e->off);
	}
	return 0;
}

int czfs_replay_bdev(struct czfs_replay *r, const uint32_t *pick,
		     struct czfs_bdev **out)
{
	struct replay_bdev *rb = calloc(1, sizeof(*rb));
	int err = 0;

	if (!rb)
		return -ENOMEM;
	rb->b.ops = &replay_ops;
	rb->base = r->img;
	rb->base_size = r->size;
	rb->b.size = r->size;
	for (size_t i = r->applied; !err && i < r->cut; i++)
		err = rb_keep(rb, &r->log->e[i], pick[i - r->applied]);
	if (err) {
		rb_destroy(&rb->b);
		return err;
	}
	*out = &rb->b;
	return 0;
}
