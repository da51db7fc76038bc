/* SPDX-License-Identifier: MIT */
/*
 * czfs-fuse: state shared by the FUSE operations.  Every operation reaches
 * it through fuse_req_userdata(); there are no globals but the per-thread
 * scratch state (thread.c).
 */
#ifndef CZFS_DAEMON_H
#define CZFS_DAEMON_H

#define FUSE_USE_VERSION 312

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "inode.h"
#include "iobatch.h"
#include "latency.h"
#include "window.h"

struct czfs_fs;
struct czfs_pool;
struct czfs_ccache;
struct czfs_codec;
struct czfs_prefetch;
struct czfs_stream;
struct czfs_itable;
struct czfs_minode;
struct czfs_flusher;

/* Per-file compression chosen by name (f2fs's compress_extension). */
#define CZFS_MAX_EXTENSIONS	16

enum { CZFS_ATIME_RELATIME, CZFS_ATIME_NOATIME, CZFS_ATIME_STRICT };

struct czfs_mount_opts {
	char *image;
	uint64_t cache_size;		/* page pool cap, bytes */
	unsigned reserved_pages;	/* erofs-style reserve */
	unsigned workers;		/* prefetch threads, 0 = online CPUs */
	uint64_t readahead;		/* max prefetch window, bytes */
	uint64_t kernel_readahead;	/* the mount's bdi readahead, 0 = as is */
	/* fuse_opt stores an int through the flags it sets (CZFS_OPT) */
	int direct_io;			/* O_DIRECT on the image */
	enum czfs_map_mode map;		/* window strategy */
	bool map_slots;			/* map scattered pages into slots,
					 * do not copy them through a buffer */
	uint64_t max_request;		/* backing request size, bytes */
	int unaligned;			/* cut requests from each run's start */
	int no_zero_detect;		/* all-zero clusters are stored too */
	int nodiscard;			/* freed blocks stay allocated on the host */
	bool reclaim_punch;		/* low-memory mode: evicting frees memory */
	bool ro;			/* read-only mount */
	int atime;			/* CZFS_ATIME_* */
	unsigned commit;		/* seconds between checkpoints */
	int alg, level;			/* compression of new files, -1 = image's */
	char *compress_ext[CZFS_MAX_EXTENSIONS];	/* always compress */
	char *nocompress_ext[CZFS_MAX_EXTENSIONS];	/* never compress */
	unsigned n_compress_ext, n_nocompress_ext;
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
	atomic_ullong reclaims;		/* clusters evicted to find temp pages */
	atomic_ullong temp_waits;	/* temp allocations that had to sleep */
	struct czfs_latency temp_alloc;	/* a cluster's compressed input pages */
	struct czfs_latency stage_alloc;	/* a staged request's pages */
	struct czfs_iobatch_stats io;	/* data requests to the image */
	atomic_ullong stage_restarts;	/* a stream's cursor moved elsewhere */
	atomic_ullong stage_private;	/* clusters read apart from a stream */
};

struct czfs_daemon {
	struct czfs_fs *fs;
	struct czfs_pool *pool;
	struct czfs_ccache *cc;
	struct czfs_prefetch *pf;
	struct czfs_wincache *wc;
	struct czfs_itable *it;		/* in-memory inodes */
	struct czfs_flusher *fl;	/* writeback and checkpoints */
	struct czfs_iobatch_opts io;
	struct czfs_mount_opts opts;
	double attr_timeout;		/* long while read-only */
	atomic_ullong reserved_blocks;	/* promised to dirty data */
	atomic_ullong items_version;	/* bumped by every cluster item change */
	char *mountpoint;		/* absolute */
	struct fuse_session *se;	/* for notifications to the kernel */
	atomic_bool serving;		/* the session loop runs: notify */
	/* files the kernel has open: those it never released (a release
	 * lost with the connection) are closed at unmount */
	pthread_mutex_t open_lock;
	struct czfs_open_file *open_files;
	/* Staged pages of all streams, kept under a quarter of the pool so
	 * that they never starve the cluster cache (staging.c). */
	atomic_ullong staged_pages;
	uint64_t stage_budget;
	/* Pages FUSE reads may hold at once (admission), so that what they
	 * hold never starves the loads they wait for. */
	pthread_mutex_t admit_lock;
	pthread_cond_t admit_cond;
	uint64_t admit_free, admit_total;
	atomic_bool ra_set;		/* kernel readahead applied */
	struct czfs_daemon_stats st;
};

/* The name of the virtual xattr on the mount root that holds the counters. */
#define CZFS_STATS_XATTR	"user.czfs.stats"
/* The virtual xattr that reads and sets a file's compression. */
#define CZFS_COMPRESS_XATTR	"user.czfs.compress"

/* Format every counter as "name value" lines; returns the length. */
size_t czfs_stats_format(struct czfs_daemon *dm, char *buf, size_t size);

/* An open regular file. */
struct czfs_open_file {
	struct czfs_minode *mi;
	struct czfs_stream *stream;	/* its prefetch state */
	struct czfs_open_file *prev, *next;	/* dm->open_files */
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

/*
 * Set the mount's kernel readahead (bdi.c), once, best effort.  Called from
 * an operation: FUSE_INIT has been answered by then, and the kernel resets
 * the readahead when it processes that answer.
 */
void czfs_set_kernel_readahead(struct czfs_daemon *dm);

/* Take / give back n pages of read admission (n is capped at the total). */
uint64_t czfs_admit(struct czfs_daemon *dm, uint64_t n);
void czfs_admit_release(struct czfs_daemon *dm, uint64_t n);

/* Map a library error to the errno a FUSE reply carries. */
int czfs_reply_errno(int err);

/* Operation tables, filled by each ops_*.c file. */
void czfs_ops_inode(struct fuse_lowlevel_ops *ops);
void czfs_ops_dir(struct fuse_lowlevel_ops *ops);
void czfs_ops_file(struct fuse_lowlevel_ops *ops);
void czfs_ops_write(struct fuse_lowlevel_ops *ops);
/* open(O_TRUNC) of an existing file: size 0, mtime and ctime now. */
int czfs_truncate_open(struct czfs_daemon *dm, struct czfs_minode *mi);
/* Write size bytes at off into mi's clusters: bytes written (short only on
 * an error after some were) or -errno. */
long czfs_do_write(struct czfs_daemon *dm, struct czfs_minode *mi,
		   const void *buf, size_t size, uint64_t off);
void czfs_ops_copy(struct fuse_lowlevel_ops *ops);
void czfs_ops_ns(struct fuse_lowlevel_ops *ops);

/* Close an open file: a release, or an open whose reply failed. */
void czfs_release_file(struct czfs_daemon *dm, struct czfs_open_file *of);
/* Close what the kernel left open (after the session ended). */
void czfs_release_all(struct czfs_daemon *dm);

/* Open a file create() just made (ops_file.c). */
int czfs_open_created(struct czfs_daemon *dm, uint64_t ino,
		      struct fuse_file_info *fi);

/* Attributes a reply carries (entry and attr timeouts from the mount). */
void czfs_fill_entry(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		     struct fuse_entry_param *e);

/* ---- the read path (readpath.c) ----------------------------------------- */

struct czfs_centry;
struct czfs_cluster_info;

/*
 * Temporary pages for compressed input or a staged request: n pages, as one
 * run when the pool has one, else single pages (the reserve may serve them),
 * else after evicting clusters or waiting for a free.  The time it took is
 * recorded in lat.
 */
#define CZFS_TEMP_MAX	256	/* pages: a 1 MiB request */

struct czfs_temp {
	unsigned n;			/* pages */
	uint32_t pages[CZFS_TEMP_MAX];	/* in order */
	unsigned nruns;
	struct {
		uint32_t page;
		uint8_t order;
		bool single;		/* from czfs_pool_alloc_temp */
	} runs[CZFS_TEMP_MAX];
};
int czfs_temp_alloc(struct czfs_daemon *dm, unsigned n, struct czfs_temp *tp,
		    struct czfs_latency *lat);
void czfs_temp_free(struct czfs_daemon *dm, struct czfs_temp *tp);

/*
 * Decode cluster ci into the LOADING entry e (pages allocated here).
 * cpages: the n = ci->nblocks pool pages holding the stored blocks (extent
 * kinds; NULL for holes and inline).  Maps both buffers through the window
 * cache.  Returns 0 or -errno.
 */
int czfs_decode_cluster(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
			const struct czfs_cluster_info *ci, const uint32_t *cpages,
			struct czfs_centry *e);

#define CZFS_BATCH_MAX	64	/* clusters loaded together */

/* Cluster items of [first, first + n), n <= CZFS_BATCH_MAX; absent = hole. */
struct czfs_cluster_batch {
	uint64_t first;
	unsigned n;
	unsigned long long version;	/* dm->items_version before the lookup */
	struct czfs_cluster_info ci[CZFS_BATCH_MAX];
	uint8_t inl[CZFS_BATCH_MAX][CZFS_INLINE_MAX];
};

/* End (image bytes) of the run of adjacent stored blocks from b->ci[i]. */
uint64_t czfs_batch_run_end(const struct czfs_cluster_batch *b, unsigned i);

/* Read the stored blocks of extent cluster ci on their own, decode into e. */
int czfs_load_apart(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		    const struct czfs_cluster_info *ci, struct czfs_centry *e);

/* Fill b->ci for b->first, b->n with one walk of the tree, and b->version:
 * 0 or -errno. */
int czfs_lookup_clusters(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
			 struct czfs_cluster_batch *b);

/*
 * Get clusters [first, first + n) of the file (n <= CZFS_BATCH_MAX) into
 * ents[], loading the missing ones in this thread together: one tree walk,
 * their stored blocks through the stream's staging while it is sequential,
 * else read together.  Returns 0 with n references, or -errno with none.
 */
int czfs_read_clusters(struct czfs_daemon *dm, const struct czfs_inode_info *ii,
		       struct czfs_stream *s, uint64_t first, unsigned n,
		       struct czfs_centry **ents);

/* ---- prefetch streams (stream.c) ------------------------------------------ */

/* Worker threads that run the streams' readahead. */
int czfs_prefetch_start(struct czfs_daemon *dm, unsigned nthreads);
void czfs_prefetch_stop(struct czfs_daemon *dm);

struct czfs_stream *czfs_stream_new(const struct czfs_inode_info *ii);
/* The file is closed: the stream stops and goes when its worker lets go. */
void czfs_stream_close(struct czfs_daemon *dm, struct czfs_stream *s);
/*
 * A read of [off, end) happened: grow or reset the readahead window (as
 * the kernel's on-demand readahead does) and queue the stream when it has
 * fallen behind its window.
 */
void czfs_stream_note_read(struct czfs_daemon *dm, struct czfs_stream *s,
			   const struct czfs_inode_info *ii, uint64_t off,
			   uint64_t end);
/* Is the stream's reader sequential (its readahead window open)? */
bool czfs_stream_sequential(struct czfs_stream *s);
struct czfs_staging *czfs_stream_staging(struct czfs_stream *s);

#endif /* CZFS_DAEMON_H */
