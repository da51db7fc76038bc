/* SPDX-License-Identifier: MIT */
/*
 * Writeback's encoders (-o write_threads=N): threads that run the calls
 * of a parallel loop beside its caller, so that a batch's clusters are
 * compressed on every core while writeback places, writes and links them
 * in order, on one thread, as before (writeback.c).
 *
 * Threads: any number of callers at once, each waiting only for its own
 * loop; the caller runs calls of its loop itself, so a loop ends even
 * while the workers serve others.
 */
#ifndef CZFS_FUSE_WBPOOL_H
#define CZFS_FUSE_WBPOOL_H

#include <stdatomic.h>

struct czfs_wbpool;

/*
 * A pool for loops run on `threads` threads: threads - 1 workers beside
 * each caller.  threads <= 1 makes no pool (*out NULL): loops run on
 * their caller alone.  Calls the workers run are counted in *by_workers.
 * Returns 0 or -errno (no thread left running).
 */
int czfs_wbpool_start(unsigned threads, atomic_ullong *by_workers,
		      struct czfs_wbpool **out);
/* Stop and free the pool (NULL: nothing); no loop may be running. */
void czfs_wbpool_stop(struct czfs_wbpool *p);

/*
 * Call fn(arg, i) once for each i in [0, n), on the caller and idle
 * workers (p NULL: the caller alone, in order), and return once every
 * call has returned.  fn must not fail the loop: it records its own
 * outcome in arg.
 */
void czfs_wbpool_for(struct czfs_wbpool *p, unsigned n,
		     void (*fn)(void *arg, unsigned i), void *arg);

#endif /* CZFS_FUSE_WBPOOL_H */
