// SPDX-License-Identifier: MIT
/*
 * copy_file_range inside the daemon: the data goes from the source's
 * clusters (cache or image) into the destination's, one cluster of the
 * source at a time, without two trips through the kernel.  Blocks are not
 * shared (the format has no reference counts): the copy is compressed
 * again at writeback, and all-zero ranges become holes there.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "ccache.h"
#include "daemon.h"
#include "load.h"
#include "minode.h"
#include "ops.h"
#include "pagepool.h"
#include "util.h"

/* At most this much per request: cp asks again for the rest. */
#define COPY_MAX	(64ull << 20)

/* Read [off, off + n) of one cluster of the file into buf; past what the
 * cluster holds (a hole, a grown file) it reads zeros. */
static int read_in_cluster(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
			   uint64_t off, uint64_t n, uint8_t *buf)
{
	uint64_t cbytes = czfs_inode_cluster_bytes(ii), in = off % cbytes, have = 0;
	uint32_t pages[CZFS_MAX_CLUSTER_BLOCKS];
	struct czfs_centry *e;
	int err;

	err = czfs_load_get(dm, ii, NULL, off / cbytes, 1, &e);
	if (err)
		return err;
	if (e->page != CZFS_NO_PAGE && e->len > in) {
		czfs_centry_pages(e, pages);
		have = MIN(n, (uint64_t)e->len - in);
		czfs_memcpy_from_pages(dm->pool, pages, in, buf, have);
	}
	memset(buf + have, 0, n - have);
	czfs_ccache_put(dm->cc, e);
	return 0;
}

static long do_copy(struct czfs_daemon *dm, struct czfs_minode *src,
		    uint64_t off_in, struct czfs_minode *dst, uint64_t off_out,
		    uint64_t len)
{
	struct czfs_inode_info ii;
	uint64_t done = 0, cbytes;
	uint8_t *buf;
	long n = 0;

	czfs_mi_attr(src, &ii);
	if (off_in >= ii.size)
		return 0;
	len = MIN(MIN(len, ii.size - off_in), COPY_MAX);
	cbytes = czfs_inode_cluster_bytes(&ii);
	buf = malloc(cbytes);
	if (!buf)
		return -ENOMEM;
	while (done < len) {
		uint64_t pos = off_in + done;
		uint64_t k = MIN(len - done, cbytes - pos % cbytes);
		int err = read_in_cluster(dm, &ii, pos, k, buf);

		n = err ?: czfs_fuse_do_write(dm, dst, buf, k, off_out + done);
		if (n <= 0)
			break;
		done += (uint64_t)n;
		if ((uint64_t)n < k)
			break;
	}
	free(buf);
	return done ? (long)done : n;
}

static void czfs_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
				 struct fuse_file_info *fi_in, fuse_ino_t ino_out,
				 off_t off_out, struct fuse_file_info *fi_out,
				 size_t len, int flags)
{
	struct czfs_open_file *in = (struct czfs_open_file *)(uintptr_t)fi_in->fh;
	struct czfs_open_file *out = (struct czfs_open_file *)(uintptr_t)fi_out->fh;
	long n;

	if (flags) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	n = do_copy(req_daemon(req), in->mi, (uint64_t)off_in, out->mi,
		    (uint64_t)off_out, len);
	if (n < 0)
		fuse_reply_err(req, czfs_fuse_errno((int)n));
	else
		fuse_reply_write(req, (size_t)n);
}

void czfs_fuse_ops_copy(struct fuse_lowlevel_ops *ops)
{
	ops->copy_file_range = czfs_copy_file_range;
}
