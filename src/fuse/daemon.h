/* SPDX-License-Identifier: MIT */
/*
 * czfs-fuse: state shared by the FUSE operations.  Every operation reaches
 * it through fuse_req_userdata(); there are no globals but the per-thread
 * scratch state (thread.c).
 */
#ifndef CZFS_DAEMON_H
#define CZFS_DAEMON_H

#define FUSE_USE_VERSION 34

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "inode.h"

struct czfs_fs;
struct czfs_pool;
struct czfs_ccache;
struct czfs_codec;
struct czfs_prefetch;

struct czfs_mount_opts {
	char *image;
	uint64_t cache_size;		/* page pool cap, bytes */
	unsigned reserved_pages;	/* erofs-style reserve */
	unsigned workers;		/* prefetch threads, 0 = online CPUs */
	uint64_t readahead;		/* max prefetch window, bytes */
	bool direct_io;			/* O_DIRECT on the image */
	bool rw;			/* read-write was asked for */
	bool show_help, show_version;
};

/* Live counters, read with czfs-stat (the user.czfs.stats xattr). */
struct czfs_daemon_stats {
	atomic_ullong read_reqs, read_bytes;
	atomic_ullong loads_reader;	/* clusters a FUSE thread loaded itself */
	atomic_ullong loads_prefetch;	/* clusters the prefetch workers loaded */
	atomic_ullong load_errors;
	atomic_ullong decomp_bytes;	/* bytes produced by decompression */
	atomic_ullong decomp_ns;	/* time spent in the codecs */
};

struct czfs_daemon {
	struct czfs_fs *fs;
	struct czfs_pool *pool;
	struct czfs_ccache *cc;
	struct czfs_prefetch *pf;
	struct czfs_mount_opts opts;
	double attr_timeout;		/* long while read-only */
	struct czfs_daemon_stats st;
};

/* The name of the virtual xattr on the mount root that holds the counters. */
#define CZFS_STATS_XATTR	"user.czfs.stats"

/* Format every counter as "name value" lines; returns the length. */
size_t czfs_stats_format(struct czfs_daemon *dm, char *buf, size_t size);

/* An open regular file. */
struct czfs_open_file {
	struct czfs_inode_info ii;	/* as of open (read-only mount) */
	pthread_mutex_t lock;		/* protects the readahead state */
	uint64_t ra_next;		/* offset a sequential read would ask */
	uint64_t ra_window;		/* current prefetch window, bytes */
	uint64_t ra_done;		/* prefetch queued up to this offset */
};

/* Per-thread scratch: one codec and one buffer for stored blocks. */
struct czfs_thread {
	struct czfs_codec *codec;
	void *scratch;			/* CZFS_MAX_CLUSTER_SIZE, aligned */
};

/* The calling thread's scratch state, created on first use (NULL: ENOMEM). */
struct czfs_thread *czfs_thread_get(void);

static inline struct czfs_daemon *req_daemon(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* Map a library error to the errno a FUSE reply carries. */
int czfs_reply_errno(int err);

/* Operation tables, filled by each ops_*.c file. */
void czfs_ops_inode(struct fuse_lowlevel_ops *ops);
void czfs_ops_dir(struct fuse_lowlevel_ops *ops);
void czfs_ops_file(struct fuse_lowlevel_ops *ops);

/* ---- the read path (readpath.c) ----------------------------------------- */

/*
 * Get cluster idx of the file, loading it into the cluster cache when
 * needed (in this thread).  Returns 0 with a referenced entry, or -errno.
 */
struct czfs_centry;
int czfs_read_cluster(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		      uint64_t idx, bool prefetch, struct czfs_centry **out);

/* Prefetch workers: decompress ahead of sequential readers. */
int czfs_prefetch_start(struct czfs_daemon *dm, unsigned nthreads);
void czfs_prefetch_stop(struct czfs_daemon *dm);
/* Queue clusters [first, first + count) of ii for loading; drops if busy. */
void czfs_prefetch_queue(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
			 uint64_t first, uint64_t count);

#endif /* CZFS_DAEMON_H */
