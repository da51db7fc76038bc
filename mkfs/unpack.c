// SPDX-License-Identifier: MIT
/*
 * The ring: the thread fills buffer n % UP_BUFS from the raw reader's
 * blocks and marks it full; the tar reader takes them in order, each
 * given back when it asks for the next (libarchive keeps a buffer only
 * until its next read).  An error or the end stops the thread; the tar
 * reader sees it after the buffers before it.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unpack.h"
#include "util.h"

#define UP_BUFS		4
#define UP_BUF_BYTES	(1u << 20)
#define UP_READ_BLOCK	(1u << 20)	/* libarchive's reads of the file */

struct mk_unpack {
	struct archive *raw;		/* filters + the raw format */
	uint8_t *buf[UP_BUFS];
	size_t len[UP_BUFS];
	uint64_t filled, taken;		/* buffers, counted from the start */
	bool held;			/* the tar reader holds buffer taken-1 */
	bool done, stop;		/* the thread's end / asked to stop */
	int err;			/* its errno, with msg */
	char msg[256];
	pthread_mutex_t lock;
	pthread_cond_t cv;
	pthread_t thread;
};

/* The raw reader's error, or the end of its data, ends the ring. */
static void up_end(struct mk_unpack *up, int err)
{
	pthread_mutex_lock(&up->lock);
	up->err = err;
	if (err)
		snprintf(up->msg, sizeof(up->msg), "%s",
			 archive_error_string(up->raw) ?
			 archive_error_string(up->raw) : strerror(err));
	up->done = true;
	pthread_cond_broadcast(&up->cv);
	pthread_mutex_unlock(&up->lock);
}

/* A free buffer, waited for; NULL when asked to stop. */
static uint8_t *free_buf(struct mk_unpack *up)
{
	uint8_t *b = NULL;

	pthread_mutex_lock(&up->lock);
	while (!up->stop && up->filled - up->taken + up->held >= UP_BUFS)
		pthread_cond_wait(&up->cv, &up->lock);
	if (!up->stop)
		b = up->buf[up->filled % UP_BUFS];
	pthread_mutex_unlock(&up->lock);
	return b;
}

static void fill_done(struct mk_unpack *up, size_t len)
{
	pthread_mutex_lock(&up->lock);
	up->len[up->filled % UP_BUFS] = len;
	up->filled++;
	pthread_cond_broadcast(&up->cv);
	pthread_mutex_unlock(&up->lock);
}

static void *unpack_main(void *arg)
{
	struct mk_unpack *up = arg;
	const void *blk;
	size_t blen, used = 0, n;
	la_int64_t off;
	uint8_t *b = free_buf(up);
	int r = ARCHIVE_EOF;

	while (b && (r = archive_read_data_block(up->raw, &blk, &blen, &off)) ==
	       ARCHIVE_OK) {
		while (b && blen) {
			n = MIN(blen, UP_BUF_BYTES - used);
			memcpy(b + used, blk, n);
			blk = (const uint8_t *)blk + n;
			blen -= n;
			used += n;
			if (used == UP_BUF_BYTES) {
				fill_done(up, used);
				used = 0;
				b = free_buf(up);
			}
		}
	}
	if (b && used)
		fill_done(up, used);
	up_end(up, !b || r == ARCHIVE_EOF ? 0 :
		   archive_errno(up->raw) > 0 ? archive_errno(up->raw) : EIO);
	return NULL;
}

la_ssize_t mk_unpack_read(struct archive *a, void *arg, const void **buf)
{
	struct mk_unpack *up = arg;
	la_ssize_t n = 0;

	pthread_mutex_lock(&up->lock);
	if (up->held)
		up->held = false;	/* libarchive is done with it */
	pthread_cond_broadcast(&up->cv);
	while (up->taken == up->filled && !up->done)
		pthread_cond_wait(&up->cv, &up->lock);
	if (up->taken < up->filled) {
		*buf = up->buf[up->taken % UP_BUFS];
		n = (la_ssize_t)up->len[up->taken % UP_BUFS];
		up->taken++;
		up->held = true;
	} else if (up->err) {
		archive_set_error(a, up->err, "%s", up->msg);
		n = -1;
	}
	pthread_mutex_unlock(&up->lock);
	return n;
}

static void up_free(struct mk_unpack *up)
{
	for (unsigned i = 0; i < UP_BUFS; i++)
		free(up->buf[i]);
	archive_read_free(up->raw);
	pthread_mutex_destroy(&up->lock);
	pthread_cond_destroy(&up->cv);
	free(up);
}

int mk_unpack_close(struct archive *a, void *arg)
{
	struct mk_unpack *up = arg;

	pthread_mutex_lock(&up->lock);
	up->stop = true;
	pthread_cond_broadcast(&up->cv);
	pthread_mutex_unlock(&up->lock);
	pthread_join(up->thread, NULL);
	up_free(up);
	return ARCHIVE_OK;
}

/* The raw reader open on file, its one entry's header read. */
static int open_raw(struct mk_unpack *up, const char *file, char *msg,
		    size_t len)
{
	struct archive_entry *e;

	up->raw = archive_read_new();
	if (!up->raw)
		return -ENOMEM;
	archive_read_support_filter_all(up->raw);
	archive_read_support_format_raw(up->raw);
	if (archive_read_open_filename(up->raw, strcmp(file, "-") ? file : NULL,
				       UP_READ_BLOCK) == ARCHIVE_OK &&
	    archive_read_next_header(up->raw, &e) == ARCHIVE_OK)
		return 0;
	snprintf(msg, len, "%s", archive_error_string(up->raw) ?
		 archive_error_string(up->raw) : "cannot read it");
	return archive_errno(up->raw) > 0 ? -archive_errno(up->raw) : -EIO;
}

int mk_unpack_start(const char *file, bool regular, struct mk_unpack **out,
		    char *msg, size_t len)
{
	struct mk_unpack *up = calloc(1, sizeof(*up));
	int err;

	*out = NULL;
	snprintf(msg, len, "%s", strerror(ENOMEM));	/* unless said below */
	if (!up)
		return -ENOMEM;
	pthread_mutex_init(&up->lock, NULL);
	pthread_cond_init(&up->cv, NULL);
	err = open_raw(up, file, msg, len);
	/* filter 0 is the format's input; more are decompressors.  Only a
	 * regular file can be opened again from its start: what the look
	 * took of a pipe's (--tar=<(...), a fifo) is gone, as of stdin's. */
	if (!err && archive_filter_count(up->raw) <= 1 && regular) {
		up_free(up);
		return 0;
	}
	for (unsigned i = 0; !err && i < UP_BUFS; i++)
		if (!(up->buf[i] = malloc(UP_BUF_BYTES)))
			err = -ENOMEM;
	if (!err && (err = -pthread_create(&up->thread, NULL, unpack_main, up)))
		snprintf(msg, len, "%s", strerror(-err));
	if (err) {
		up_free(up);
		return err;
	}
	*out = up;
	return 0;
}
