/* SPDX-License-Identifier: MIT */
/*
 * The block writer: mkfs's blocks and the data written into them.  Blocks
 * come from a bump allocator (everything is written once and in order, so
 * "next free block" is the whole state and the image is as long as what it
 * holds); data is queued in whole blocks and written in large batches by
 * an I/O thread.  Past the size limit nothing more is written: the blocks
 * are still counted, so the caller can say how much the content needs.
 *
 * One thread uses a writer (the image's); its I/O threads are its own.
 */
#ifndef MKFS_WRITER_H
#define MKFS_WRITER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"

struct czfs_bdev;
struct czfs_smap;

struct mk_range {
	uint64_t blkaddr, n;
};

/* The I/O thread and its two batch buffers (private to writer.c). */
struct mk_io {
	struct czfs_bdev *bdev;
	int fd;				/* for sync_file_range, or -1 */
	uint8_t *buf[2];
	pthread_t thread;
	bool inited, started;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	bool busy, quit;		/* a write is in flight / stop */
	const uint8_t *wbuf;
	size_t wlen;
	uint64_t woff;
	uint64_t written;		/* bytes written so far */
	int err;
	pthread_t flusher;
	bool fstarted;
};

struct mk_writer {
	struct czfs_allocator alloc;	/* the bump allocator, also the B-tree's */
	uint64_t next;			/* next free block */
	uint64_t limit;			/* the size limit in blocks, 0 = none */
	bool discard;			/* past limit: writes are dropped */
	/* private to writer.c */
	struct mk_range *freed;
	unsigned nfreed, freed_cap;
	struct mk_io io;
	uint8_t *batch;			/* the io buffer being filled */
	uint64_t batch_blk;
	size_t batch_len;
	uint8_t *pad;			/* one block */
};

/*
 * Start a writer to bdev whose blocks may not pass limit (0: no limit):
 * the first block handed out is CZFS_FIRST_DATA_BLKADDR.  Returns 0,
 * -ENOMEM or -errno of pthread_create; mk_writer_free is due either way.
 */
int mk_writer_start(struct mk_writer *w, struct czfs_bdev *bdev,
		    uint64_t limit);

/* n fresh contiguous blocks at *blkaddr: 0, or -ENOSPC (n = 0, or past
 * 2^64 bytes; past the limit is not an error: see discard). */
int mk_writer_alloc(struct mk_writer *w, uint64_t n, uint64_t *blkaddr);

/*
 * Queue len bytes (whole blocks, at most 4 MiB) for blkaddr.  Returns 0
 * or the first error of an earlier write.
 */
int mk_writer_add(struct mk_writer *w, uint64_t blkaddr, const void *data,
		  size_t len);

/*
 * Store len bytes in fresh blocks, the last one zero-padded; *blkaddr is
 * the first.  Returns 0 or -errno as mk_writer_alloc and mk_writer_add.
 */
int mk_writer_value(struct mk_writer *w, const void *data, size_t len,
		    uint64_t *blkaddr);

/*
 * Write what is queued, wait for it and stop the I/O threads.  Returns
 * 0 or the first write or flush error; 0 when already stopped.
 */
int mk_writer_stop(struct mk_writer *w);

/* Mark in sm the blocks handed out and kept.  Returns 0 or -errno. */
int mk_writer_mark_used(const struct mk_writer *w, struct czfs_smap *sm);

/* Stop the I/O threads if they run (what is queued is dropped) and free. */
void mk_writer_free(struct mk_writer *w);

#endif /* MKFS_WRITER_H */
