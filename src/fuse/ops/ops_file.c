// SPDX-License-Identifier: MIT
/*
 * File operations: open, read, release.  A read is answered straight from
 * the cluster cache's pool pages with fuse_reply_iov (the kernel copies
 * once, from our pages into its page cache); holes point at a shared zero
 * buffer.  On read-only mounts the kernel opens files without asking
 * (dm->skip_opens): reads then come with no handle, and find the inode
 * and its stream by number.
 */
#include "config.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/uio.h>

#include "bdi.h"
#include "ccache.h"
#include "daemon.h"
#include "fs.h"
#include "load.h"
#include "minode.h"
#include "ops.h"
#include "pagepool.h"
#include "push.h"
#include "killpriv.h"
#include "stream.h"
#include "util.h"
#include "writeback.h"

#define MAX_READ_CLUSTERS	(1024 * 1024 / CZFS_BLOCK_SIZE + 2)

static const uint8_t zero_cluster[CZFS_MAX_CLUSTER_SIZE];

static int do_open(struct czfs_daemon *dm, fuse_ino_t ino,
		   struct fuse_file_info *fi)
{
	bool writer = (fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC);
	bool reader = (fi->flags & O_ACCMODE) != O_WRONLY;
	struct czfs_open_file *of = NULL;
	struct czfs_inode_info ii;
	bool touched = false;
	struct czfs_minode *mi;
	int err;

	if ((fi->flags & O_ACCMODE) != O_RDONLY && dm->opts.ro)
		return -EROFS;
	err = czfs_mi_get(dm, ino, false, &mi);
	if (err)
		return err;
	czfs_mi_attr(mi, &ii);
	if (!S_ISREG(ii.mode))
		err = S_ISDIR(ii.mode) ? -EISDIR : -EINVAL;
	else if (writer)	/* chattr +i: no writer; +a: only one that appends */
		err = czfs_fuse_flags_deny(ii.flags, (fi->flags & O_APPEND) &&
						     !(fi->flags & O_TRUNC));
	if (err)
		goto out_put;
	if (writer)		/* no push stores the file while it is open */
		czfs_mi_writer_begin(dm, mi);
	if (fi->flags & O_TRUNC)	/* FUSE_CAP_ATOMIC_O_TRUNC */
		err = czfs_fuse_truncate_open(dm, mi);
	czfs_mi_attr(mi, &ii);
	if (!err) {
		of = calloc(1, sizeof(*of));
		err = of ? 0 : -ENOMEM;
	}
	if (err) {
		free(of);
		if (writer)
			czfs_mi_writer_end(mi);
		goto out_put;
	}
	czfs_mi_open(dm, mi);
	czfs_mi_put(dm, mi);		/* the open holds it now */
	of->mi = mi;
	of->writer = writer;
	pthread_mutex_lock(&dm->open_lock);
	of->next = dm->open_files;
	if (of->next)
		of->next->prev = of;
	dm->open_files = of;
	pthread_mutex_unlock(&dm->open_lock);
	fi->fh = (uintptr_t)of;
	of->direct = fi->flags & O_DIRECT;
	of->reader = reader;
	/* Every change goes through this daemon and the kernel's page cache
	 * stays coherent with it: the cache is kept across opens, but for
	 * direct writes, which pass the page cache by while a buffered reader
	 * may be filling it: the first open after one drops it. */
	pthread_mutex_lock(&mi->lock);
	fi->keep_cache = !mi->direct_written;
	mi->direct_written = false;
	/* Data stored ahead (push.c) is read from the page cache without a
	 * READ: its reader's open is the access that moves the time (and
	 * the kernel, which caches it, is told).  Or the store does, if it
	 * comes while the file is open (push.c). */
	if (reader) {
		mi->readers++;
		touched = mi->pushed && czfs_fuse_atime_touch(dm, mi);
	}
	pthread_mutex_unlock(&mi->lock);
	if (touched)
		czfs_writeback_notify_attrs(dm, ino);
	return 0;
out_put:
	czfs_mi_put(dm, mi);
	return err;
}

int czfs_fuse_open_created(struct czfs_daemon *dm, uint64_t ino,
			   struct fuse_file_info *fi)
{
	return do_open(dm, ino, fi);
}

void czfs_fuse_release_file(struct czfs_daemon *dm, struct czfs_open_file *of)
{
	pthread_mutex_lock(&dm->open_lock);
	if (of->prev)
		of->prev->next = of->next;
	else
		dm->open_files = of->next;
	if (of->next)
		of->next->prev = of->prev;
	pthread_mutex_unlock(&dm->open_lock);
	if (of->stream)
		czfs_stream_close(dm, of->stream);
	if (of->reader) {
		pthread_mutex_lock(&of->mi->lock);
		of->mi->readers--;
		pthread_mutex_unlock(&of->mi->lock);
	}
	if (of->writer)
		czfs_mi_writer_end(of->mi);
	czfs_mi_close(dm, of->mi);
	free(of);
}

static void czfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct czfs_daemon *dm = req_daemon(req);
	int err;

	czfs_bdi_set_readahead(dm);
	if (dm->skip_opens) {
		/* the kernel opens by itself from now on (main.c) */
		fuse_reply_err(req, ENOSYS);
		return;
	}
	err = do_open(dm, ino, fi);
	if (!err && czfs_killpriv_asked()) {	/* O_TRUNC by a non-CAP_FSETID caller */
		struct czfs_open_file *of = (void *)(uintptr_t)fi->fh;

		err = czfs_fuse_drop_suidgid(dm, req, of->mi, true);
		if (err)
			czfs_fuse_release_file(dm, of);
	}
	if (err)
		fuse_reply_err(req, czfs_fuse_errno(err));
	else if (fuse_reply_open(req, fi))	/* interrupted: never released */
		czfs_fuse_release_file(dm, (struct czfs_open_file *)(uintptr_t)fi->fh);
}

static void czfs_release(fuse_req_t req, fuse_ino_t ino,
			 struct fuse_file_info *fi)
{
	czfs_fuse_release_file(req_daemon(req),
			       (struct czfs_open_file *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

void czfs_fuse_release_all(struct czfs_daemon *dm)
{
	while (dm->open_files)
		czfs_fuse_release_file(dm, dm->open_files);
}

/*
 * Take / give back n pages of read admission (n is capped at the total):
 * the pages FUSE reads may hold at once, so that what they hold never
 * starves the loads they wait for.
 */
static uint64_t admit(struct czfs_daemon *dm, uint64_t n)
{
	n = MIN(n, dm->admit_total);
	pthread_mutex_lock(&dm->admit_lock);
	while (dm->admit_free < n)
		pthread_cond_wait(&dm->admit_cond, &dm->admit_lock);
	dm->admit_free -= n;
	pthread_mutex_unlock(&dm->admit_lock);
	return n;
}

static void admit_release(struct czfs_daemon *dm, uint64_t n)
{
	pthread_mutex_lock(&dm->admit_lock);
	dm->admit_free += n;
	pthread_cond_broadcast(&dm->admit_cond);
	pthread_mutex_unlock(&dm->admit_lock);
}

struct read_batch {
	struct czfs_centry *ent[MAX_READ_CLUSTERS];
	unsigned n;
	struct iovec iov[2 * MAX_READ_CLUSTERS];
	unsigned niov;
};

static void add_iov(struct read_batch *rb, const void *base, uint64_t len)
{
	if (len)
		rb->iov[rb->niov++] = (struct iovec){ (void *)base, len };
}

/*
 * The part [in, in + want) of cluster e: what it holds, then zeros up to
 * the end (a hole, or a cluster the file has grown past since it was read).
 */
static void add_cluster(struct czfs_daemon *dm, struct read_batch *rb,
			const struct czfs_centry *e, uint64_t in, uint64_t want)
{
	uint64_t have = 0;

	if (e->page != CZFS_NO_PAGE && e->len > in)
		have = MIN(want, e->len - in);
	if (have)
		add_iov(rb, (char *)czfs_pool_addr(dm->pool, e->page) + in, have);
	add_iov(rb, zero_cluster, want - have);
}

static int gather(struct czfs_daemon *dm, struct czfs_stream *stream,
		  const struct czfs_inode_info *ii, uint64_t off, uint64_t end,
		  struct read_batch *rb)
{
	uint64_t cbytes = czfs_inode_cluster_bytes(ii);
	uint64_t first = off / cbytes, last = (end - 1) / cbytes;
	struct czfs_staging *stg = stream ? czfs_stream_staging(stream) : NULL;

	if (last - first + 1 > MAX_READ_CLUSTERS)
		return -EINVAL;
	for (uint64_t idx = first; idx <= last;) {
		unsigned n = (unsigned)MIN(last - idx + 1, CZFS_BATCH_MAX);
		int err = czfs_load_get(dm, ii, stg, idx, n, rb->ent + rb->n);

		if (err)
			return err;
		for (unsigned i = 0; i < n; i++, rb->n++) {
			uint64_t start = rb->ent[rb->n]->idx * cbytes;
			uint64_t pos = MAX(off, start);

			add_cluster(dm, rb, rb->ent[rb->n], pos - start,
				    MIN(end, start + cbytes) - pos);
		}
		idx += n;
	}
	return 0;
}

/* A read that came without an open (dm->skip_opens): the file's inode,
 * held for the read. */
static int implicit_open(struct czfs_daemon *dm, fuse_ino_t ino,
			 struct czfs_minode **mip)
{
	struct czfs_minode *mi;
	int err = czfs_mi_get(dm, ino, false, &mi);

	if (err)
		return err;
	pthread_mutex_lock(&mi->lock);
	if (!S_ISREG(mi->ii.mode))
		err = -EISDIR;
	pthread_mutex_unlock(&mi->lock);
	if (err) {
		czfs_mi_put(dm, mi);
		return err;
	}
	*mip = mi;
	return 0;
}

/*
 * Read [off, off + size) and reply; *whole: it was the whole file.  The
 * reads of an open (or, without opens, of the inode) share a stream, its
 * prefetch state, kept in *slot (under mi->lock): made at the first read
 * of a file of more than one cluster; a smaller one has nothing to
 * prefetch, and a walk of small files makes none.  A read that is not
 * sequential copies out the rest of its clusters, *rest, for the page
 * cache (push.h; mi held for it), unless direct (O_DIRECT: the kernel
 * keeps nothing).
 */
static int do_read(struct czfs_daemon *dm, fuse_req_t req,
		   struct czfs_minode *mi, struct czfs_stream **slot,
		   bool direct, uint64_t off, size_t size, bool *whole,
		   struct czfs_rest **rest)
{
	struct czfs_stream *stream;
	struct czfs_inode_info ii;
	uint64_t end, cbytes, admitted;
	struct czfs_rest_plan plan;
	struct read_batch *rb;
	bool sequential = false, quiet, keep;
	int err;

	czfs_mi_attr(mi, &ii);
	end = MIN(off + size, ii.size);
	cbytes = czfs_inode_cluster_bytes(&ii);
	if (off >= ii.size) {
		fuse_reply_buf(req, NULL, 0);
		return 0;
	}
	rb = malloc(sizeof(*rb));
	if (!rb)
		return -ENOMEM;
	rb->n = rb->niov = 0;
	pthread_mutex_lock(&mi->lock);
	czfs_fuse_atime_touch(dm, mi);
	quiet = !mi->writers && !atomic_load(&mi->pushing);
	if (!*slot && ii.size > cbytes)
		*slot = czfs_stream_new(dm, &ii);	/* none: no prefetch */
	stream = *slot;
	pthread_mutex_unlock(&mi->lock);
	if (stream)
		sequential = czfs_stream_note_read(dm, stream, &ii, off, end);
	/* the pages this read may hold until its reply is sent: its
	 * clusters, and as much again for their compressed input */
	admitted = admit(dm, ((end - 1) / cbytes - off / cbytes + 1) <<
			 (ii.cluster_shift + 1));
	err = gather(dm, stream, &ii, off, end, rb);
	if (!err && stream)
		czfs_stream_run_sync(dm, stream);	/* -o sync_prefetch */
	/* counted before the reply: the reader may look at them next */
	atomic_fetch_add(&dm->st.read_reqs, 1);
	atomic_fetch_add(&dm->st.read_bytes, err ? 0 : end - off);
	*whole = !err && !off && end == ii.size;
	/* a random read's clusters' rest, for a file that nobody writes
	 * or stores now (push.h) */
	keep = !err && !sequential && !direct && !*whole && quiet &&
	       !dm->opts.random_pages &&
	       czfs_push_rest_plan(dm, &ii, rb->ent, rb->n, off, end, &plan);
	if (keep)		/* the open may be released once replied */
		czfs_mi_hold(dm, mi);
	if (!err)
		fuse_reply_iov(req, rb->iov, (int)rb->niov);
	if (keep) {
		*rest = czfs_push_rest_copy(dm, &ii, &plan);
		if (!*rest)
			czfs_mi_put(dm, mi);
	}
	/* After the reply the file may be released: its open is not
	 * touched.  A cluster read to its end is likely done with (the
	 * kernel keeps the data): recycle its pages first. */
	for (unsigned i = 0; i < rb->n; i++) {
		if (i < rb->n - 1 ||
		    end == rb->ent[i]->idx * cbytes + rb->ent[i]->len)
			czfs_ccache_put_used(dm->cc, rb->ent[i]);
		else
			czfs_ccache_put(dm->cc, rb->ent[i]);
	}
	admit_release(dm, admitted);
	free(rb);
	return err;
}

static void czfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	struct czfs_daemon *dm = req_daemon(req);
	struct czfs_open_file *of = (struct czfs_open_file *)(uintptr_t)fi->fh;
	struct czfs_minode *mi = NULL;
	struct czfs_rest *rest = NULL;
	bool whole = false;
	int err = 0;

	if (of)
		mi = of->mi;
	else
		err = implicit_open(dm, ino, &mi);
	if (!err)
		err = do_read(dm, req, mi, of ? &of->stream : &mi->stream,
			      fi->flags & O_DIRECT, (uint64_t)off, size, &whole,
			      &rest);
	if (err)
		fuse_reply_err(req, czfs_fuse_errno(err));
	/* the read holds nothing now that another READ may wait for */
	if (rest) {
		czfs_push_rest(dm, mi, rest);
		czfs_mi_put(dm, mi);
	}
	if (!of && mi)
		czfs_mi_put(dm, mi);
	/* a walk reading small files whole: the next ones into the page
	 * cache, after the reply (push.h) */
	if (whole && dm->opts.tree_readahead)
		czfs_push_after(dm, ino);
}

void czfs_fuse_ops_file(struct fuse_lowlevel_ops *ops)
{
	ops->open = czfs_open;
	ops->read = czfs_read;
	ops->release = czfs_release;
}
