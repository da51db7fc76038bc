/* SPDX-License-Identifier: MIT */
/*
 * Read-ahead across the source files.  On a cold page cache each pread of
 * a small file waits for the disk, one file at a time.  A thread asks the
 * kernel for the pages of the next files (POSIX_FADV_WILLNEED) in inode
 * order, the order the reader takes them, staying at most `ahead` bytes of
 * advice past the inode the reader is on, so the reads find their pages
 * cached.  It only hints: what mkfs reads, and so the image, does not
 * depend on it.
 */
#ifndef MKFS_PREFETCH_H
#define MKFS_PREFETCH_H

#include <stdint.h>

struct mk_tree;
struct mk_prefetch;

/*
 * Start the thread over tree t (which must outlive it).  0 or -errno
 * (-ENOMEM, or pthread_create's); a caller may go on without it.
 */
int mk_prefetch_start(const struct mk_tree *t, uint64_t ahead,
		      struct mk_prefetch **out);

/*
 * The reader is on inode t->inodes[i]: the ones before are read.  Called
 * from one thread, with i never going back; pf may be NULL.
 */
void mk_prefetch_at(struct mk_prefetch *pf, uint64_t i);

/*
 * Wait until the thread is quiet: waiting for the reader to move on, or
 * past the last inode.  Returns the files advised so far.  For tests (a
 * quiescent point instead of a sleep); from the reader's thread.
 */
uint64_t mk_prefetch_settle(struct mk_prefetch *pf);

/* Stop the thread, wait for it, free pf (NULL is fine). */
void mk_prefetch_stop(struct mk_prefetch *pf);

#endif /* MKFS_PREFETCH_H */
