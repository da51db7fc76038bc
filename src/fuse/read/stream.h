/* SPDX-License-Identifier: MIT */
/*
 * Prefetch streams.  Each open file read past its first cluster has one
 * (ops_file.c); a sequential reader keeps it
 * a window ahead (the window grows as the kernel's readahead does), and
 * one worker at a time runs it through the loader (load.h).  The stream
 * owns the file's staging, the one read cursor that its prefetch worker
 * and its readers share.
 *
 * Threads: every function is safe to call concurrently.
 */
#ifndef CZFS_FUSE_STREAM_H
#define CZFS_FUSE_STREAM_H

#include <stdbool.h>
#include <stdint.h>

struct czfs_daemon;
struct czfs_inode_info;
struct czfs_staging;
struct czfs_stream;

/* Start nthreads prefetch workers: 0 or -errno (none left running). */
int czfs_prefetch_start(struct czfs_daemon *dm, unsigned nthreads);
/* Stop and join the workers; streams queued but not run are let go. */
void czfs_prefetch_stop(struct czfs_daemon *dm);

/* A stream for a file: NULL when out of memory. */
struct czfs_stream *czfs_stream_new(struct czfs_daemon *dm,
				    const struct czfs_inode_info *ii);
/* The file is closed: the stream stops and goes when its worker lets go. */
void czfs_stream_close(struct czfs_daemon *dm, struct czfs_stream *s);
/*
 * A read of [off, end) happened: grow or reset the readahead window (as
 * the kernel's on-demand readahead does) and queue the stream when it has
 * fallen behind its window.  Returns whether the read was sequential.
 */
bool czfs_stream_note_read(struct czfs_daemon *dm, struct czfs_stream *s,
			   const struct czfs_inode_info *ii, uint64_t off,
			   uint64_t end);
/*
 * With -o sync_prefetch: run the window czfs_stream_note_read opened, in
 * the caller's thread (a reader, after loading its own clusters); one
 * caller at a time, the others return.  Without it, nothing.
 */
void czfs_stream_run_sync(struct czfs_daemon *dm, struct czfs_stream *s);

/*
 * The staging a reader of the stream loads through: the stream's own while
 * its reader is sequential (its readahead window open), else NULL.
 */
struct czfs_staging *czfs_stream_staging(struct czfs_stream *s);

#endif /* CZFS_FUSE_STREAM_H */
