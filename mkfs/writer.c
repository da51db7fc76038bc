// SPDX-License-Identifier: MIT
/*
 * The block writer.  The real space map is built at the end, when the
 * final size is known (a fresh map cannot shrink, and without -s its size
 * is the content's): until then the bump allocator's next block is all
 * there is to know.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "bdev.h"
#include "czfs_fs.h"
#include "spacemap.h"
#include "util.h"
#include "writer.h"

#define MK_BATCH_BYTES	(4u << 20)	/* one pwrite(2) */
#define MK_FLUSH_STEP	(64ull << 20)	/* data flushed while writing */

/* ---- allocation ------------------------------------------------------------ */

static int bump_alloc(struct czfs_allocator *a, uint64_t n, uint64_t *blkaddr)
{
	struct mk_writer *w = container_of(a, struct mk_writer, alloc);

	if (!n || n > (UINT64_MAX >> CZFS_BLOCK_SHIFT) - w->next)
		return -ENOSPC;
	*blkaddr = w->next;
	w->next += n;
	if (w->limit && w->next > w->limit)
		w->discard = true;
	return 0;
}

/* The builder never frees, but keep the map exact if it ever does. */
static void bump_free(struct czfs_allocator *a, uint64_t blkaddr, uint64_t n)
{
	struct mk_writer *w = container_of(a, struct mk_writer, alloc);

	if (blkaddr + n == w->next) {
		w->next = blkaddr;
		return;
	}
	if (CZFS_GROW(w->freed, w->nfreed, w->freed_cap, 16))
		return;		/* the blocks merely stay marked used */
	w->freed[w->nfreed++] = (struct mk_range){ blkaddr, n };
}

int mk_writer_alloc(struct mk_writer *w, uint64_t n, uint64_t *blkaddr)
{
	return w->alloc.alloc(&w->alloc, n, blkaddr);
}

int mk_writer_mark_used(const struct mk_writer *w, struct czfs_smap *sm)
{
	int err = czfs_smap_set_used(sm, CZFS_FIRST_DATA_BLKADDR,
				     w->next - CZFS_FIRST_DATA_BLKADDR);

	for (unsigned i = 0; !err && i < w->nfreed; i++)
		czfs_smap_free(sm, w->freed[i].blkaddr, w->freed[i].n);
	return err;
}

/* ---- the I/O threads ------------------------------------------------------- */

/*
 * Batched writes go through an I/O thread with two buffers: one is filled
 * while the other is written, so the writer never waits for a write unless
 * the disk is slower than compression.  Writeback of each batch starts at
 * once.  (O_DIRECT measured slower: it makes each write wait for the disk.)
 */
static void *io_main(void *arg)
{
	struct mk_io *io = arg;
	int err;

	pthread_mutex_lock(&io->lock);
	for (;;) {
		while (!io->busy && !io->quit)
			pthread_cond_wait(&io->cv, &io->lock);
		if (!io->busy)
			break;
		pthread_mutex_unlock(&io->lock);
		err = czfs_bdev_write(io->bdev, io->wbuf, io->wlen, io->woff);
		if (!err && io->fd >= 0)
			sync_file_range(io->fd, (off_t)io->woff, (off_t)io->wlen,
					SYNC_FILE_RANGE_WRITE);
		pthread_mutex_lock(&io->lock);
		if (err && !io->err)
			io->err = err;
		io->written += io->wlen;
		io->busy = false;
		pthread_cond_broadcast(&io->cv);
	}
	pthread_mutex_unlock(&io->lock);
	return NULL;
}

/*
 * Flush the data written so far every MK_FLUSH_STEP bytes, beside the
 * writes: the device's cache then empties while we still compress, and
 * the flushes that order checkpoint and superblock find little to do.
 */
static void *flush_main(void *arg)
{
	struct mk_io *io = arg;
	uint64_t done = 0;
	int err;

	pthread_mutex_lock(&io->lock);
	for (;;) {
		while (io->written - done < MK_FLUSH_STEP && !io->quit)
			pthread_cond_wait(&io->cv, &io->lock);
		if (io->quit)
			break;
		done = io->written;
		pthread_mutex_unlock(&io->lock);
		err = czfs_bdev_flush(io->bdev);
		pthread_mutex_lock(&io->lock);
		if (err && !io->err)
			io->err = err;
	}
	pthread_mutex_unlock(&io->lock);
	return NULL;
}

/* Wait for the write in flight; returns the first write error. */
static int io_wait(struct mk_io *io)
{
	int err;

	pthread_mutex_lock(&io->lock);
	while (io->busy)
		pthread_cond_wait(&io->cv, &io->lock);
	err = io->err;
	pthread_mutex_unlock(&io->lock);
	return err;
}

static int io_start(struct mk_io *io, struct czfs_bdev *bdev)
{
	int err;

	io->bdev = bdev;
	io->fd = czfs_bdev_fd(bdev);
	io->buf[0] = aligned_alloc(CZFS_BLOCK_SIZE, MK_BATCH_BYTES);
	io->buf[1] = aligned_alloc(CZFS_BLOCK_SIZE, MK_BATCH_BYTES);
	if (!io->buf[0] || !io->buf[1])
		return -ENOMEM;
	pthread_mutex_init(&io->lock, NULL);
	pthread_cond_init(&io->cv, NULL);
	io->inited = true;
	err = pthread_create(&io->thread, NULL, io_main, io);
	if (err)
		return -err;
	io->started = true;
	err = pthread_create(&io->flusher, NULL, flush_main, io);
	if (err)
		return -err;
	io->fstarted = true;
	return 0;
}

/* Wait for the write in flight and stop the threads. */
static int io_stop(struct mk_io *io)
{
	io_wait(io);
	pthread_mutex_lock(&io->lock);
	io->quit = true;
	pthread_cond_broadcast(&io->cv);
	pthread_mutex_unlock(&io->lock);
	pthread_join(io->thread, NULL);
	if (io->fstarted)
		pthread_join(io->flusher, NULL);
	io->started = io->fstarted = false;
	return io->err;
}

/* ---- batches --------------------------------------------------------------- */

/* Hand the batch to the I/O thread (dropped when discarding). */
static int batch_flush(struct mk_writer *w)
{
	struct mk_io *io = &w->io;
	int err;

	if (!w->batch_len || w->discard) {
		w->batch_len = 0;
		return 0;
	}
	err = io_wait(io);
	if (err)
		return err;
	pthread_mutex_lock(&io->lock);
	io->wbuf = w->batch;
	io->wlen = w->batch_len;
	io->woff = w->batch_blk << CZFS_BLOCK_SHIFT;
	io->busy = true;
	pthread_cond_broadcast(&io->cv);
	pthread_mutex_unlock(&io->lock);
	w->batch = w->batch == io->buf[0] ? io->buf[1] : io->buf[0];
	w->batch_len = 0;
	return 0;
}

int mk_writer_add(struct mk_writer *w, uint64_t blkaddr, const void *data,
		  size_t len)
{
	uint64_t end = w->batch_blk + (w->batch_len >> CZFS_BLOCK_SHIFT);
	int err;

	if (w->batch_len &&
	    (blkaddr != end || w->batch_len + len > MK_BATCH_BYTES)) {
		err = batch_flush(w);
		if (err)
			return err;
	}
	if (!w->batch_len)
		w->batch_blk = blkaddr;
	memcpy(w->batch + w->batch_len, data, len);
	w->batch_len += len;
	return 0;
}

int mk_writer_value(struct mk_writer *w, const void *data, size_t len,
		    uint64_t *blkaddr)
{
	size_t whole = len & ~(size_t)(CZFS_BLOCK_SIZE - 1);
	uint64_t n = DIV_ROUND_UP(len, CZFS_BLOCK_SIZE);
	int err;

	err = mk_writer_alloc(w, n, blkaddr);
	if (!err && whole)
		err = mk_writer_add(w, *blkaddr, data, whole);
	if (!err && whole < len) {
		memset(w->pad, 0, CZFS_BLOCK_SIZE);
		memcpy(w->pad, (const uint8_t *)data + whole, len - whole);
		err = mk_writer_add(w, *blkaddr + n - 1, w->pad, CZFS_BLOCK_SIZE);
	}
	return err;
}

/* ---- start and stop -------------------------------------------------------- */

int mk_writer_start(struct mk_writer *w, struct czfs_bdev *bdev,
		    uint64_t limit)
{
	int err;

	memset(w, 0, sizeof(*w));
	w->alloc.alloc = bump_alloc;
	w->alloc.free = bump_free;
	w->next = CZFS_FIRST_DATA_BLKADDR;
	w->limit = limit;
	w->pad = aligned_alloc(CZFS_BLOCK_SIZE, CZFS_BLOCK_SIZE);
	if (!w->pad)
		return -ENOMEM;
	err = io_start(&w->io, bdev);
	w->batch = w->io.buf[0];
	return err;
}

int mk_writer_stop(struct mk_writer *w)
{
	int err, ioerr;

	if (!w->io.started)
		return 0;
	err = batch_flush(w);
	ioerr = io_stop(&w->io);
	return err ? err : ioerr;
}

void mk_writer_free(struct mk_writer *w)
{
	struct mk_io *io = &w->io;

	if (io->started)
		io_stop(io);
	if (io->inited) {
		pthread_mutex_destroy(&io->lock);
		pthread_cond_destroy(&io->cv);
	}
	free(io->buf[0]);
	free(io->buf[1]);
	free(w->freed);
	free(w->pad);
}
