/* SPDX-License-Identifier: MIT */
/*
 * czfs-fuse: state shared by the FUSE operations.  Every operation reaches
 * it through fuse_req_userdata(); there are no mutable globals but the
 * per-thread scratch state (thread.c) and killpriv.c's four atomics and
 * per-thread flag (the state of FUSE_HANDLE_KILLPRIV_V2's negotiation).
 */
#ifndef CZFS_DAEMON_H
#define CZFS_DAEMON_H

#define FUSE_USE_VERSION 312

#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "iobatch.h"
#include "latency.h"
#include "rdplus.h"
#include "remote.h"
#include "window.h"

struct czfs_fs;
struct czfs_pool;
struct czfs_ccache;
struct czfs_pcache;
struct czfs_codec;
struct czfs_prefetch;
struct czfs_stream;
struct czfs_itable;
struct czfs_minode;
struct czfs_flusher;
struct czfs_flushreq;
struct czfs_recomp;
struct czfs_wbpool;
struct czfs_coldmap;
struct czfs_remount;

/* Decoded packs kept (packcache.h), 256 KiB each at most: half of
 * cache_min (memory that follows use, not the pool's ceiling), and no
 * fewer than this.  A walk of a tree in depth-first order keeps the packs
 * of every directory on its path in use (mkfs numbers inodes
 * breadth-first), so too few are decoded again and again. */
#define CZFS_PACKS_CACHED_MIN	8

/* Per-file compression chosen by name (f2fs's compress_extension). */
#define CZFS_MAX_EXTENSIONS	16

enum { CZFS_ATIME_RELATIME, CZFS_ATIME_NOATIME, CZFS_ATIME_STRICT };

struct czfs_mount_opts {
	char *image;			/* a path, or a URL (may hold secrets) */
	char *image_shown;		/* the same for logs and the mount table */
	struct czfs_remote_opts remote;	/* a URL's: -o remote_*, cafile, s3_* */
	uint64_t cache_size;		/* page pool cap, bytes */
	uint64_t cache_min;		/* what it keeps of clean clusters
					 * not read again (ccache_set_low) */
	unsigned reserved_pages;	/* erofs-style reserve */
	unsigned workers;		/* prefetch threads, 0 = online CPUs */
	unsigned write_threads;		/* writeback's encoders, 0 = online CPUs */
	uint64_t dirty_max;		/* dirty data a writer may leave behind,
					 * bytes (czfs_opts_settle sets it) */
	uint64_t readahead;		/* max prefetch window, bytes */
	uint64_t kernel_readahead;	/* the mount's bdi readahead, 0 = as is */
	/* fuse_opt stores an int through the flags it sets (CZFS_OPT) */
	int direct_io;			/* O_DIRECT on the image */
	int direct_reads;		/* large data reads with O_DIRECT */
	enum czfs_map_mode map;		/* window strategy */
	bool map_slots;			/* map scattered pages into slots,
					 * do not copy them through a buffer */
	uint64_t max_request;		/* backing request size, bytes */
	int unaligned;			/* cut requests from each run's start */
	int sync_prefetch;		/* a reader runs its stream's window
					 * itself, before its reply (tests) */
	int no_zero_detect;		/* all-zero clusters are stored too */
	int nodiscard;			/* freed blocks stay allocated on the host */
	int nopack;			/* small files written back alone */
	char *log_writes;		/* testing: record every change to the
					 * image to this file (wlog.h) */
	bool reclaim_punch;		/* low-memory mode: evicting frees memory */
	bool ro;			/* read-only mount */
	bool send_opens;		/* ro: ask for every open and close */
	bool random_pages;		/* random reads store no cluster's rest */
	uint64_t tree_readahead;	/* ro: bytes of the next files to
					 * store after a small file is read */
	int atime;			/* CZFS_ATIME_* */
	unsigned commit;		/* seconds between checkpoints */
	unsigned recompress;		/* seconds a block-mapped cluster stays
					 * unwritten before it is compressed
					 * again; 0 = never */
	int alg, level;			/* compression of new files, -1 = image's */
	char *compress_ext[CZFS_MAX_EXTENSIONS];	/* always compress */
	char *nocompress_ext[CZFS_MAX_EXTENSIONS];	/* never compress */
	unsigned n_compress_ext, n_nocompress_ext;
	bool show_help, show_version;
};

/* Live counters, read with czfs-stat (the user.czfs.stats xattr). */
struct czfs_daemon_stats {
	atomic_ullong read_reqs, read_bytes;
	atomic_ullong write_reqs, write_bytes;	/* WRITE requests, bytes taken */
	atomic_ullong checkpoints, checkpoints_skipped;	/* flusher.c's */
	atomic_ullong checkpoints_one_flush;	/* of them, COVERED */
	atomic_ullong grows;		/* size limit raised (room.h) */
	atomic_ullong loads_reader;	/* clusters a FUSE thread loaded itself */
	atomic_ullong loads_prefetch;	/* clusters the prefetch workers loaded */
	atomic_ullong load_errors;
	atomic_ullong decomp_bytes;	/* bytes produced by decompression */
	atomic_ullong decomp_ns;	/* time spent in the codecs */
	atomic_ullong reclaims;		/* clusters evicted to find temp pages */
	atomic_ullong temp_waits;	/* temp allocations that had to sleep */
	struct czfs_latency temp_alloc;	/* a cluster's compressed input pages */
	struct czfs_latency stage_alloc;	/* a staged request's pages */
	/* what holds a writer back (issue 34): a WRITE request, the part of
	 * it spent writing back (the throttle), a checkpoint's wait for the
	 * room and fs->lock, and how long it holds them */
	struct czfs_latency write_req, write_throttle, cp_wait, cp_hold;
	struct czfs_iobatch_stats io;	/* data requests to the image */
	atomic_ullong streams;		/* made: one a file read beyond a
					 * cluster, an open or the inode's */
	atomic_ullong stage_restarts;	/* a stream's cursor moved elsewhere */
	atomic_ullong stage_private;	/* clusters read apart from a stream */
	atomic_ullong stage_reclaimed;	/* staged pages dropped: pool empty */
	atomic_ullong prefetch_nomem;	/* prefetch loads that found no page */
	atomic_ullong push_files, push_bytes;	/* stored into the page cache */
	atomic_ullong push_errors;		/* stores that failed */
	atomic_ullong push_rests, push_rest_bytes;	/* random reads'
							 * clusters stored */
	atomic_ullong pack_decodes;	/* whole packs decoded (load.c): into the
					 * pack cache, once however many threads
					 * miss it, or for one cluster when no
					 * slot is free */
	atomic_ullong wb_clusters;	/* clusters written back (writeback.c) */
	atomic_ullong wb_hot;		/* of them block by block (wbblocks.h) */
	atomic_ullong wb_hot_fresh;	/* blocks those wrote */
	atomic_ullong wb_hot_kept;	/* blocks they kept where they were */
	atomic_ullong wb_runs;		/* runs of slices written (wbrun.h) */
	atomic_ullong wb_slices;	/* compressed clusters laid in them */
	atomic_ullong wb_ahead;		/* clusters encoded ahead of their
					 * batch's order (wb_pre) */
	atomic_ullong wb_by_workers;	/* of them by the pool's workers */
	atomic_ullong wb_encoders_max;	/* most encoding at once */
	atomic_ullong partial_writes;	/* clusters written without a load */
	atomic_ullong partial_completed;	/* and loaded after all */
	atomic_ullong recomp_clusters;	/* rewritten by recompression */
	atomic_ullong recomp_saved;	/* bytes of the image that saved */
	atomic_ullong recomp_scans;	/* scans of the tree for them done */
	atomic_ullong packs_written;	/* packs of small files (wbpack.c) */
	atomic_ullong wb_visits;	/* inodes writeback's passes looked at */
	atomic_ullong packed_files;	/* files written back into them */
	atomic_ullong list_attrs;	/* READDIRPLUS entries with attributes */
	atomic_ullong list_bare;	/* and without (rdplus.h) */
	atomic_ullong loop_handoffs;	/* requests the reader passed the
					 * device on for (loop.h) */
	atomic_ullong loop_threads;	/* threads of that loop */
	atomic_ullong attr_notifies;	/* attributes the kernel was told to
					 * drop after a writeback */
	atomic_ullong getxattr_reqs;	/* GETXATTR requests */
};

struct czfs_daemon {
	struct czfs_fs *fs;
	struct czfs_pool *pool;
	struct czfs_ccache *cc;
	struct czfs_pcache *pc;		/* decoded packs (packcache.h) */
	struct czfs_prefetch *pf;
	struct czfs_wincache *wc;
	struct czfs_itable *it;		/* in-memory inodes */
	struct czfs_flusher *fl;	/* writeback and checkpoints */
	struct czfs_flushreq *fr;	/* what is asked of it (in fl) */
	struct czfs_coldmap *cold;	/* block-mapped clusters, when
					 * recompression is on (coldmap.h) */
	struct czfs_recomp *rc;		/* its worker (recompress.h) */
	struct czfs_wbpool *wp;		/* writeback's encoders (wbpool.h) */
	atomic_uint wb_encoding;	/* clusters being encoded ahead now */
	struct czfs_iobatch_opts io;
	struct czfs_mount_opts opts;
	double attr_timeout;		/* long while read-only */
	bool skip_opens;		/* the kernel opens files without
					 * asking us (set once, at FUSE init) */
	bool skip_opendirs;		/* and directories (the same) */
	atomic_int push_slots[2];	/* FUSE threads that may store at once,
					 * walks' and random reads' (push.c) */
	pthread_mutex_t grow_lock;	/* one raise of the limit at a time */
	/* the end of a store, for writers that wait for it (minode.h) */
	pthread_mutex_t push_lock;
	pthread_cond_t push_cond;
	atomic_ullong reserved_blocks;	/* promised to dirty data */
	atomic_ullong items_version;	/* bumped by every cluster item change */
	char *mountpoint;		/* absolute */
	struct fuse_session *se;	/* for notifications to the kernel */
	atomic_bool serving;		/* the session loop runs: notify */
	/* files the kernel has open: those it never released (a release
	 * lost with the connection) are closed at unmount */
	pthread_mutex_t open_lock;
	struct czfs_open_file *open_files;
	/* Serialises the completion of a partial cache entry with the
	 * writes into it (load.h: czfs_load_complete). */
	pthread_mutex_t partial_lock;
	/* Writeback's blocks against commits (room.h: czfs_room_take_begin);
	 * writer-preferring, so a stream of writebacks cannot starve a
	 * checkpoint. */
	pthread_rwlock_t take_lock;
	/* Staged pages of all streams, kept under an eighth of the pool
	 * while they can be (main.c), so that they never starve the cluster
	 * cache; unreferenced ones are dropped when the pool is empty
	 * (staging.c: czfs_staging_reclaim). */
	atomic_ullong staged_pages;
	uint64_t stage_budget;
	/* Every stream's staging, for reclaim when the pool is empty. */
	pthread_mutex_t stg_lock;
	struct czfs_staging *stagings;
	/* Pages FUSE reads may hold at once (admission), so that what they
	 * hold never starves the loads they wait for. */
	pthread_mutex_t admit_lock;
	pthread_cond_t admit_cond;
	uint64_t admit_free, admit_total;
	atomic_bool ra_set;		/* kernel readahead applied */
	struct czfs_remount *rm;	/* follows remount ro/rw (remount.c) */
	struct czfs_rdplus rdp;		/* read-only: listings' attributes */
	atomic_bool remounted_ro;	/* the kernel mount is read-only now */
	struct czfs_daemon_stats st;
};

/* An open regular file. */
struct czfs_open_file {
	struct czfs_minode *mi;
	struct czfs_stream *stream;	/* its prefetch state, made by its
					 * first read of more than a cluster
					 * (ops_file.c) (mi->lock) */
	bool direct;			/* opened O_DIRECT */
	bool writer;			/* for writing (czfs_mi_writer_begin) */
	bool reader;			/* for reading (mi->readers) */
	struct czfs_open_file *prev, *next;	/* dm->open_files */
};

static inline struct czfs_daemon *req_daemon(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

#endif /* CZFS_DAEMON_H */
