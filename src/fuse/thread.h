/* SPDX-License-Identifier: MIT */
/* Per-thread scratch state of the daemon's threads (thread.c). */
#ifndef CZFS_FUSE_THREAD_H
#define CZFS_FUSE_THREAD_H

struct czfs_codec;

/* Per-thread scratch: one codec, one buffer for stored blocks, the
 * loader's claims (load.c) and writeback's run buffer (wbrun.c): too big
 * to allocate at every read or writeback batch. */
struct czfs_thread {
	struct czfs_codec *codec;
	void *scratch;			/* CZFS_MAX_CLUSTER_SIZE, aligned */
	void *load;			/* load.c's, made at its first use */
	void *run;			/* wbrun.c's open run, made at its first
					 * use (a batch's, reused by the next) */
};

/* The calling thread's scratch state, created on first use (NULL: ENOMEM). */
struct czfs_thread *czfs_fuse_thread(void);

#endif /* CZFS_FUSE_THREAD_H */
