/* SPDX-License-Identifier: MIT */
/*
 * Backing device: the one interface through which libczfs reads and writes
 * the image.  Two implementations: a file or block device (optionally
 * O_DIRECT) and an in-memory device that records every request, so tests
 * can assert request sizes and alignment.
 */
#ifndef CZFS_BDEV_H
#define CZFS_BDEV_H

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "blockcrc.h"

#define CZFS_BDEV_RDONLY	0x01	/* open read-only */
#define CZFS_BDEV_DIRECT	0x02	/* O_DIRECT: 4 KiB-aligned buffers,
					 * offsets and lengths only */
#define CZFS_BDEV_CREATE	0x04	/* create or truncate the file */
/*
 * Large data reads (readv of at least CZFS_BDEV_DIRECT_MIN bytes, all
 * 4 KiB-aligned) with O_DIRECT, through a second descriptor of the same
 * file: straight into the caller's pages, with none of the host page
 * cache's insertion, copy and reclaim.  Metadata and small reads stay
 * buffered, where the host's readahead serves them, and so do writes:
 * the kernel writes back a range's dirty pages before a direct read of
 * it, so what was written is what is read.  Where the file's filesystem
 * refuses O_DIRECT, every read stays buffered.  (czfs-fuse -o direct_reads.)
 */
#define CZFS_BDEV_DIRECT_DATA	0x08
#define CZFS_BDEV_DIRECT_MIN	(128u << 10)

/* The block of czfs_bdev_write_blocks (CZFS_BLOCK_SIZE). */
#define CZFS_BDEV_BLOCK		4096u

/* Request-size histogram buckets: <=4K, <=8K, ... <=2M, >2M. */
#define CZFS_BDEV_HIST_BUCKETS	11

struct czfs_bdev_stats {
	atomic_ullong reads, read_bytes;
	atomic_ullong direct_reads;	/* of them, by CZFS_BDEV_DIRECT_DATA */
	atomic_ullong writes, write_bytes;
	atomic_ullong flushes;
	atomic_ullong punches, punch_bytes;	/* ranges given back */
	atomic_ullong read_hist[CZFS_BDEV_HIST_BUCKETS];
};

struct czfs_bdev;

struct czfs_bdev_ops {
	/* Read len bytes at off: 0, or -EIO (past the end, short read) or -errno. */
	int (*read)(struct czfs_bdev *b, void *buf, size_t len, uint64_t off);
	/* One request filling iov[0..cnt) from off (cnt <= IOV_MAX); as read.
	 * The data path: CZFS_BDEV_DIRECT_DATA applies here. */
	int (*readv)(struct czfs_bdev *b, const struct iovec *iov, int cnt,
		     uint64_t off);
	/* Write len bytes at off, growing the device if it is a file. */
	int (*write)(struct czfs_bdev *b, const void *buf, size_t len, uint64_t off);
	/* Make every completed write durable (fdatasync). */
	int (*flush)(struct czfs_bdev *b);
	/* Set the size of a file device; -EOPNOTSUPP for block devices. */
	int (*resize)(struct czfs_bdev *b, uint64_t size);
	/*
	 * Give [off, off + len) back to the host (fallocate PUNCH_HOLE |
	 * KEEP_SIZE): it reads as zeros afterwards, the size is unchanged.
	 * 0, -EOPNOTSUPP where the host cannot, -EROFS, or -errno.
	 */
	int (*punch)(struct czfs_bdev *b, uint64_t off, uint64_t len);
	void (*destroy)(struct czfs_bdev *b);
};

struct czfs_bdev {
	const struct czfs_bdev_ops *ops;
	uint64_t size;			/* bytes, updated by writes and resize */
	unsigned flags;			/* CZFS_BDEV_* */
	struct czfs_bdev_stats stats;
	/* Set by the owner before any write (czfs_fs_cover): the blocks
	 * every write brings, whole, with their crc32c (blockcrc.h). */
	struct czfs_blockcrc *written;
	/* A wrapper's device underneath (bdev_log.c), or NULL: its
	 * descriptor is the one czfs_bdev_fd gives (the image's flock). */
	struct czfs_bdev *inner;
};

/* Open a file or block device.  Returns 0 or -errno (the open(2) errno). */
int czfs_bdev_open(const char *path, unsigned flags, struct czfs_bdev **out);

/* The file descriptor of a file device (for flock), or of the file
 * device a wrapper wraps, or -1. */
int czfs_bdev_fd(const struct czfs_bdev *b);

/* The most a file device (or the one a wrapper wraps) can hold on its
 * host: the bytes it takes there and the filesystem's free space for
 * it.  0, -EOPNOTSUPP (a block device, memory, a URL), or -errno. */
int czfs_bdev_host_room(const struct czfs_bdev *b, uint64_t *bytes);

/*
 * In-memory device of size bytes (grows on write).  It keeps a log of every
 * request; with CZFS_BDEV_DIRECT it rejects unaligned requests with -EINVAL
 * as O_DIRECT would.
 */
struct czfs_bdev_req {
	char op;			/* 'r', 'w', 'f' or 'p' (punch) */
	uint64_t off;
	uint64_t len;
};
int czfs_bdev_mem_create(uint64_t size, unsigned flags, struct czfs_bdev **out);
/* The device's bytes (valid until the next write that grows it). */
uint8_t *czfs_bdev_mem_data(struct czfs_bdev *b);
/* The request log; czfs_bdev_mem_clear_log() empties it. */
const struct czfs_bdev_req *czfs_bdev_mem_log(struct czfs_bdev *b, size_t *n);
void czfs_bdev_mem_clear_log(struct czfs_bdev *b);
/* Make the next nth read/write (1 = next) fail with err; 0 disarms. */
void czfs_bdev_mem_fail_after(struct czfs_bdev *b, unsigned nth, int err);

/*
 * Recording device (bdev_log.c, czfs-fuse -o log_writes): every request
 * goes to inner, and each completed write (with its data), punch, resize
 * and flush is appended to a new log file at path (wlog.h), which a
 * replay turns into the images a power cut may leave.  Safe from several
 * threads, as inner is; the appends are serialized.  Takes ownership of
 * inner, even on failure.  0, -ENOMEM, or the errno of creating or
 * writing the log; a write, punch, resize or flush whose record cannot be
 * appended fails with that errno (done on inner, missing from the log).
 */
int czfs_bdev_log_create(struct czfs_bdev *inner, const char *path,
			 struct czfs_bdev **out);

/* Close the device and free it (accepts NULL); no flush of its own. */
void czfs_bdev_close(struct czfs_bdev *b);

/*
 * The device's operations (struct czfs_bdev_ops says each one's returns).
 * Safe from several threads at once on one device: each request is one
 * positioned call, with no shared offset.
 */
static inline int czfs_bdev_read(struct czfs_bdev *b, void *buf, size_t len,
				 uint64_t off)
{
	return b->ops->read(b, buf, len, off);
}

static inline int czfs_bdev_readv(struct czfs_bdev *b, const struct iovec *iov,
				  int cnt, uint64_t off)
{
	return b->ops->readv(b, iov, cnt, off);
}

static inline int czfs_bdev_write(struct czfs_bdev *b, const void *buf,
				  size_t len, uint64_t off)
{
	int err = b->ops->write(b, buf, len, off);

	if (b->written)		/* a failed write: its blocks are unknown */
		czfs_blockcrc_note(b->written, err ? NULL : buf, len, off);
	return err;
}

/* The same for n whole blocks at block blk whose crc32c (czfs_crc32c(0,
 * block)) the caller computed: crcs[i] of block blk + i. */
static inline int czfs_bdev_write_blocks(struct czfs_bdev *b, const void *buf,
					 unsigned n, uint64_t blk,
					 const uint32_t *crcs)
{
	size_t len = (size_t)n * CZFS_BDEV_BLOCK;
	int err = b->ops->write(b, buf, len, blk * CZFS_BDEV_BLOCK);

	if (b->written && !err)
		czfs_blockcrc_note_known(b->written, blk, n, crcs);
	else if (b->written)
		czfs_blockcrc_note(b->written, NULL, len, blk * CZFS_BDEV_BLOCK);
	return err;
}

static inline int czfs_bdev_flush(struct czfs_bdev *b)
{
	return b->ops->flush(b);
}

static inline int czfs_bdev_punch(struct czfs_bdev *b, uint64_t off,
				  uint64_t len)
{
	return b->ops->punch ? b->ops->punch(b, off, len) : -EOPNOTSUPP;
}

/* Account one request in the statistics (used by the implementations). */
void czfs_bdev_account(struct czfs_bdev *b, char op, size_t len);

#endif /* CZFS_BDEV_H */
