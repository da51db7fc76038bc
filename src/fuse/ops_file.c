// SPDX-License-Identifier: MIT
/*
 * File operations: open, read, release.  A read is answered straight from
 * the cluster cache's pool pages with fuse_reply_iov (the kernel copies
 * once, from our pages into its page cache); holes point at a shared zero
 * buffer.
 */
#include "config.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/uio.h>

#include "ccache.h"
#include "daemon.h"
#include "fs.h"
#include "pagepool.h"
#include "util.h"

#define MAX_READ_CLUSTERS	(1024 * 1024 / CZFS_BLOCK_SIZE + 2)

static const uint8_t zero_cluster[CZFS_MAX_CLUSTER_SIZE];

static int do_open(struct czfs_daemon *dm, fuse_ino_t ino,
		   struct fuse_file_info *fi)
{
	struct czfs_open_file *of;
	int err;

	if ((fi->flags & O_ACCMODE) != O_RDONLY && !dm->opts.rw)
		return -EROFS;
	of = calloc(1, sizeof(*of));
	if (!of)
		return -ENOMEM;
	pthread_rwlock_rdlock(&dm->fs->lock);
	err = czfs_inode_read(&dm->fs->tree, ino, &of->ii);
	pthread_rwlock_unlock(&dm->fs->lock);
	if (!err && !S_ISREG(of->ii.mode))
		err = S_ISDIR(of->ii.mode) ? -EISDIR : -EINVAL;
	if (!err && !(of->stream = czfs_stream_new(&of->ii)))
		err = -ENOMEM;
	if (err) {
		free(of);
		return err;
	}
	fi->fh = (uintptr_t)of;
	fi->keep_cache = !dm->opts.rw;
	return 0;
}

static void czfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int err;

	czfs_set_kernel_readahead(req_daemon(req));
	err = do_open(req_daemon(req), ino, fi);

	if (err)
		fuse_reply_err(req, czfs_reply_errno(err));
	else
		fuse_reply_open(req, fi);
}

static void czfs_release(fuse_req_t req, fuse_ino_t ino,
			 struct fuse_file_info *fi)
{
	struct czfs_open_file *of = (struct czfs_open_file *)(uintptr_t)fi->fh;

	czfs_stream_close(req_daemon(req), of->stream);
	free(of);
	fuse_reply_err(req, 0);
}

uint64_t czfs_admit(struct czfs_daemon *dm, uint64_t n)
{
	n = MIN(n, dm->admit_total);
	pthread_mutex_lock(&dm->admit_lock);
	while (dm->admit_free < n)
		pthread_cond_wait(&dm->admit_cond, &dm->admit_lock);
	dm->admit_free -= n;
	pthread_mutex_unlock(&dm->admit_lock);
	return n;
}

void czfs_admit_release(struct czfs_daemon *dm, uint64_t n)
{
	pthread_mutex_lock(&dm->admit_lock);
	dm->admit_free += n;
	pthread_cond_broadcast(&dm->admit_cond);
	pthread_mutex_unlock(&dm->admit_lock);
}

struct read_batch {
	struct czfs_centry *ent[MAX_READ_CLUSTERS];
	struct iovec iov[MAX_READ_CLUSTERS];
	unsigned n;
};

static int gather(struct czfs_daemon *dm, struct czfs_open_file *of,
		  uint64_t off, uint64_t end, struct read_batch *rb)
{
	uint64_t cbytes = czfs_inode_cluster_bytes(&of->ii);
	uint64_t first = off / cbytes, last = (end - 1) / cbytes;

	if (last - first + 1 > MAX_READ_CLUSTERS)
		return -EINVAL;
	for (uint64_t idx = first; idx <= last;) {
		unsigned n = (unsigned)MIN(last - idx + 1, CZFS_BATCH_MAX);
		int err = czfs_read_clusters(dm, &of->ii, of->stream, idx, n,
					     rb->ent + rb->n);

		if (err)
			return err;
		for (unsigned i = 0; i < n; i++, rb->n++) {
			struct czfs_centry *e = rb->ent[rb->n];
			uint64_t start = e->idx * cbytes, pos = MAX(off, start);
			size_t in = pos - start;

			rb->iov[rb->n].iov_len = MIN(end - pos, e->len - MIN(in, e->len));
			rb->iov[rb->n].iov_base = e->page == CZFS_NO_PAGE ?
				(void *)(zero_cluster + in) :
				(char *)czfs_pool_addr(dm->pool, e->page) + in;
		}
		idx += n;
	}
	return 0;
}

static void czfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	struct czfs_daemon *dm = req_daemon(req);
	struct czfs_open_file *of = (struct czfs_open_file *)(uintptr_t)fi->fh;
	uint64_t end = MIN((uint64_t)off + size, of->ii.size);
	uint64_t cbytes = czfs_inode_cluster_bytes(&of->ii), admitted;
	struct read_batch *rb;
	int err;

	if ((uint64_t)off >= of->ii.size) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	rb = malloc(sizeof(*rb));
	if (!rb) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	rb->n = 0;
	czfs_stream_note_read(dm, of->stream, (uint64_t)off, end);
	/* the pages this read may hold until its reply is sent: its
	 * clusters, and as much again for their compressed input */
	admitted = czfs_admit(dm, ((end - 1) / cbytes - (uint64_t)off / cbytes + 1) <<
			      (of->ii.cluster_shift + 1));
	err = gather(dm, of, (uint64_t)off, end, rb);
	if (err)
		fuse_reply_err(req, czfs_reply_errno(err));
	else
		fuse_reply_iov(req, rb->iov, (int)rb->n);
	atomic_fetch_add(&dm->st.read_reqs, 1);
	atomic_fetch_add(&dm->st.read_bytes, err ? 0 : end - (uint64_t)off);
	/* After the reply the file may be released: of is not touched.
	 * A cluster read to its end is likely done with (the kernel keeps
	 * the data): recycle its pages first. */
	for (unsigned i = 0; i < rb->n; i++) {
		if (i < rb->n - 1 ||
		    end == rb->ent[i]->idx * cbytes + rb->ent[i]->len)
			czfs_ccache_put_used(dm->cc, rb->ent[i]);
		else
			czfs_ccache_put(dm->cc, rb->ent[i]);
	}
	czfs_admit_release(dm, admitted);
	free(rb);
}

void czfs_ops_file(struct fuse_lowlevel_ops *ops)
{
	ops->open = czfs_open;
	ops->read = czfs_read;
	ops->release = czfs_release;
}
