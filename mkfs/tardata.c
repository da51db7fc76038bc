// SPDX-License-Identifier: MIT
/* mkfs.czfs --tar: members' bytes found in place or spooled, their
 * clusters encoded meanwhile (tardata.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "czfs_fs.h"
#include "preenc.h"
#include "scan.h"
#include "tar.h"
#include "tardata.h"
#include "util.h"

#define TAR_READ_BLOCK	(1u << 20)	/* libarchive's reads of the file */
#define NOT_FILLING	UINT_MAX
#define SPOOL_BASE	(1ull << 62)	/* data_off of the spool beside a tar */

/* An uncompressed tar file, read into a buffer whose place in the file
 * is known: so is that of every data block libarchive hands out of it. */
struct tar_src {
	int fd;
	uint8_t *buf;
	size_t len;			/* bytes in buf */
	uint64_t at;			/* the file offset of buf[0] */
};

struct mk_tardata {
	struct mk_tree *t;
	const struct mk_tar_opts *o;
	const char *name;		/* the tar, for messages */
	struct tar_src src;		/* fd -1: the stream comes otherwise */
	uint64_t spool_end;
	struct mk_preenc *pe;		/* NULL: no encoding while reading */
	unsigned cbytes;		/* its cluster size */
	uint64_t cidx;			/* the member's cluster being filled */
	unsigned cfill;			/* its bytes so far, NOT_FILLING */
	char why[1024];			/* why a member failed */
};

static int __attribute__((format(printf, 3, 4)))
member_why(struct mk_tardata *d, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d->why, sizeof(d->why), fmt, ap);
	va_end(ap);
	return err;
}

static int spool_fail(struct mk_tardata *d, int err)
{
	return member_why(d, err, "cannot spool its data: %s", strerror(-err));
}

int mk_tardata_archive_why(struct archive *a, char *msg, size_t len)
{
	const char *what = archive_error_string(a);
	la_int64_t at = archive_read_header_position(a);

	/* no message: a header cut short (a PAX record's data); no place:
	 * libarchive's ARCHIVE_FATAL, not a byte */
	if (!what)
		what = archive_errno(a) > 0 ? strerror(archive_errno(a)) :
		       "cannot be read (cut short or damaged)";
	if (at >= 0)
		snprintf(msg, len, "%s (at byte %lld of the tar)", what,
			 (long long)at);
	else
		snprintf(msg, len, "%s", what);
	return archive_errno(a) > 0 ? -archive_errno(a) : -EIO;
}

/*
 * Hand the member's full clusters but its last (which may go inline) to
 * the encoders: len bytes at off of a member of size bytes spooled at
 * base.  A cluster the data does not fill in order (a sparse member's
 * hole), or that starts while the encoders are all busy, is left to the
 * pipeline: the stream is never held up.
 */
static void preenc_feed(struct mk_tardata *d, uint64_t base, uint64_t size,
			const uint8_t *buf, size_t len, uint64_t off)
{
	while (len) {
		uint64_t idx = off / d->cbytes;
		unsigned in = (unsigned)(off % d->cbytes);
		size_t n = MIN(len, d->cbytes - in);
		uint8_t *dst;

		if (idx != d->cidx || in != d->cfill) {
			d->cidx = idx;
			d->cfill = in ? NOT_FILLING : 0;
		}
		dst = d->cfill != NOT_FILLING && (idx + 1) * d->cbytes < size ?
		      mk_preenc_buf(d->pe, false) : NULL;
		if (!dst) {
			d->cfill = NOT_FILLING;
		} else {
			memcpy(dst + in, buf, n);
			d->cfill += (unsigned)n;
			if (d->cfill == d->cbytes) {
				mk_preenc_submit(d->pe, base + idx * d->cbytes);
				d->cfill = NOT_FILLING;
			}
		}
		buf += n;
		off += n;
		len -= n;
	}
}

/* Where a data block of len bytes lies in the tar file: false when it is
 * not in the buffer read from it (libarchive copied it elsewhere). */
static bool locate(const struct mk_tardata *d, const void *buf, size_t len,
		   uint64_t *at)
{
	const uint8_t *b = buf;

	if (d->t->tarfd < 0 || b < d->src.buf || b + len > d->src.buf + d->src.len)
		return false;
	*at = d->src.at + (uint64_t)(b - d->src.buf);
	return true;
}

/* Give the member a place in the spool, block-aligned so that the holes
 * of a sparse member stay holes there too (the pipeline finds them with
 * SEEK_DATA, as in a sparse source file); the len bytes it had in place
 * at tar offset from go there first. */
static int to_spool(struct mk_tardata *d, struct mk_inode *ip, uint64_t from,
		    uint64_t len)
{
	uint64_t base = ROUND_UP(d->spool_end, CZFS_BLOCK_SIZE);
	uint8_t buf[16384];
	ssize_t r;
	int err = 0;

	ip->data_off = d->t->spool_base + base;
	for (uint64_t done = 0; !err && done < len; done += (uint64_t)r) {
		r = pread(d->t->tarfd, buf, (size_t)MIN(len - done, sizeof(buf)),
			  (off_t)(from + done));
		if (r < 0 && errno == EINTR)
			r = 0;
		else if (r <= 0)
			err = r ? -errno : -EIO;
		else
			err = czfs_pwrite_full(d->t->datafd, buf, (size_t)r,
					       base + done);
	}
	return err ? spool_fail(d, err) : 0;
}

/*
 * The member's bytes: in an uncompressed tar file they stay where they
 * are, as long as they come in order from where the first block lay;
 * otherwise (a compressed stream, a sparse member, a block libarchive
 * copied) what came so far is copied to the spool and the rest follows
 * it there.  The encoders get the clusters of a member in place, or of
 * any member when nothing is in place (their offsets must grow).
 */
int mk_tardata_member(struct mk_tardata *d, struct archive *a,
		      struct mk_inode *ip, const char **why)
{
	bool in_tar = d->t->tarfd >= 0, feed = d->pe != NULL;
	uint64_t next = 0, at;
	const void *buf;
	size_t len;
	la_int64_t off;
	int r, err;

	*why = d->why;
	ip->data_off = d->t->spool_base + ROUND_UP(d->spool_end, CZFS_BLOCK_SIZE);
	d->cidx = UINT64_MAX;		/* no cluster being filled */
	while ((r = archive_read_data_block(a, &buf, &len, &off)) !=
	       ARCHIVE_EOF) {
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
			return mk_tardata_archive_why(a, d->why, sizeof(d->why));
		if (off < 0 || (uint64_t)off + len > ip->size)
			return member_why(d, -EFBIG, "more data than the size its header gives (%llu bytes)",
					  (unsigned long long)ip->size);
		if ((uint64_t)off != next)
			ip->maybe_sparse = true;
		if (in_tar && !next && !off && locate(d, buf, len, &at))
			ip->data_off = at;	/* the first block */
		else if (in_tar && (!locate(d, buf, len, &at) ||
			 (uint64_t)off != next || at != ip->data_off + next)) {
			in_tar = feed = false;
			if ((err = to_spool(d, ip, ip->data_off, next)))
				return err;
		}
		if (!in_tar && (err = czfs_pwrite_full(d->t->datafd, buf, len,
				ip->data_off - d->t->spool_base + (uint64_t)off)))
			return spool_fail(d, err);
		if (feed)
			preenc_feed(d, ip->data_off, ip->size, buf, len,
				    (uint64_t)off);
		next = (uint64_t)off + len;
		d->t->data_bytes += len;
	}
	if (in_tar && next < ip->size) {	/* a hole at the end */
		if ((err = to_spool(d, ip, ip->data_off, next)))
			return err;
		in_tar = false;
	}
	if (in_tar)
		return 0;
	d->spool_end = ip->data_off - d->t->spool_base + ip->size;
	if (next < ip->size) {		/* a hole at the end: the spool */
		ip->maybe_sparse = true;	/* reaches it, should it be last */
		if (ftruncate(d->t->datafd, (off_t)d->spool_end))
			return spool_fail(d, -errno);
	}
	return 0;
}

static la_ssize_t src_read(struct archive *a, void *arg, const void **out)
{
	struct tar_src *s = arg;
	ssize_t n;

	s->at += s->len;
	s->len = 0;
	do
		n = read(s->fd, s->buf, TAR_READ_BLOCK);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		archive_set_error(a, errno, "%s", strerror(errno));
		return -1;
	}
	s->len = (size_t)n;
	*out = s->buf;
	return n;
}

static int src_close(struct archive *a, void *arg)
{
	struct tar_src *s = arg;

	(void)a;
	close(s->fd);
	s->fd = -1;
	return ARCHIVE_OK;
}

int mk_tardata_open(struct mk_tardata *d, struct archive *a,
		    const char *file, const struct stat *st)
{
	const struct mk_tar_opts *o = d->o;
	int r;

	d->src.fd = open(file, O_RDONLY | O_CLOEXEC);
	d->src.buf = malloc(TAR_READ_BLOCK);
	if (d->src.fd < 0 || !d->src.buf) {
		int err = d->src.fd < 0 ? errno : ENOMEM;

		archive_set_error(a, err, "%s", strerror(err));
		return ARCHIVE_FATAL;
	}
	r = archive_read_open(a, &d->src, NULL, src_read, src_close);
	/* not the image, which overwrites it, nor compressed (without the
	 * unpack thread): those are spooled */
	if (r == ARCHIVE_OK && S_ISREG(st->st_mode) &&
	    !(o->exclude && st->st_dev == o->exclude_dev &&
	      st->st_ino == o->exclude_ino) &&
	    archive_filter_code(a, 0) == ARCHIVE_FILTER_NONE) {
		d->t->tarfd = fcntl(d->src.fd, F_DUPFD_CLOEXEC, 0);
		d->t->spool_base = d->t->tarfd >= 0 ? SPOOL_BASE : 0;
	}
	return r;
}

/* An unlinked file next to the image (tmpfs could not hold a big tar). */
static int spool_open(const char *dir)
{
	char tmpl[4096];
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR))
		return fd < 0 ? -errno : fd;
	snprintf(tmpl, sizeof(tmpl), "%s/.mkfs.czfs-spool.XXXXXX", dir);
	fd = mkostemp(tmpl, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	unlink(tmpl);
	return fd;
}

/* The same, said when it cannot be made. */
static int spool_make(const char *dir)
{
	int fd = spool_open(dir);

	if (fd < 0)
		fprintf(stderr, "mkfs.czfs: cannot make a spool file in %s: %s\n",
			dir, strerror(-fd));
	return fd;
}

static int preenc_start(struct mk_tardata *d)
{
	int fd, err;

	if (!d->o->pre)
		return 0;
	fd = spool_make(d->o->spool_dir);
	if (fd < 0)
		return fd;
	d->cbytes = CZFS_BLOCK_SIZE << d->o->pre->cluster_shift;
	err = mk_preenc_new(d->o->pre, fd, &d->pe);
	if (err)
		fprintf(stderr, "mkfs.czfs: cannot start threads: %s\n",
			strerror(-err));
	return err;
}

int mk_tardata_new(struct mk_tree *t, const struct mk_tar_opts *o,
		   const char *name, struct mk_tardata **out)
{
	struct mk_tardata *d = malloc(sizeof(*d));
	int err;

	*out = NULL;
	if (!d)
		return -ENOMEM;
	*d = (struct mk_tardata){ .t = t, .o = o, .name = name,
				  .src = { .fd = -1 } };
	t->datafd = spool_make(o->spool_dir);
	err = t->datafd < 0 ? t->datafd : preenc_start(d);
	if (err) {
		free(d);
		return err;
	}
	*out = d;
	return 0;
}

int mk_tardata_end(struct mk_tardata *d, int err)
{
	int e = 0;

	if (!d)
		return err;
	if (d->src.fd >= 0)	/* not opened by libarchive: not closed */
		close(d->src.fd);
	free(d->src.buf);
	if (d->pe)
		e = mk_preenc_finish(d->pe);
	if (!err && e)
		fprintf(stderr, "mkfs.czfs: %s: encoding clusters: %s\n",
			d->name, strerror(-e));
	if (!err && !e)
		d->t->pre = d->pe;
	else
		mk_preenc_free(d->pe);
	free(d);
	return err ? err : e;
}
