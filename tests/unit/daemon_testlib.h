/* SPDX-License-Identifier: MIT */
/*
 * Unit test helpers for the daemon's middle (libczfsdaemon.a): a daemon
 * over a small image in memory (fs_testlib.h), writable, its memory set
 * up as main.c's (setup.h) but no thread started; and clusters stored
 * through the library, as mkfs would.
 */
#ifndef CZFS_DAEMON_TESTLIB_H
#define CZFS_DAEMON_TESTLIB_H

#include <stdint.h>

#include "daemon.h"
#include "fs_testlib.h"

#define POOL_BYTES	(16u << 20)

/* Open dm over make_image() (a transaction begun), a pool of POOL_BYTES:
 * no prefetch, flusher or encoder thread.  Asserts success. */
void daemon_open(struct czfs_daemon *dm);
void daemon_close(struct czfs_daemon *dm);

/* Blocks the space map counts as used. */
uint64_t daemon_used_blocks(struct czfs_daemon *dm);

/* Cluster idx of ino (64 KiB clusters) becomes len bytes of data stored
 * with alg (a hole when all zero), and its size covers it. */
void store_cluster(struct czfs_daemon *dm, uint64_t ino, uint64_t idx,
		   const void *data, unsigned len, unsigned alg);
/* Files ino[0..n) share one pack, lens[i] bytes of data each, one after
 * the other (data holds them all). */
void store_pack(struct czfs_daemon *dm, const uint64_t *ino, unsigned n,
		const unsigned *lens, const uint8_t *data, unsigned alg);

/* The cluster item of idx of ino, looked up as the loader does. */
struct czfs_cluster_info;
void item_of(struct czfs_daemon *dm, uint64_t ino, uint64_t idx,
	     struct czfs_cluster_info *ci);

/* len bytes: text-like (compresses) or random (does not). */
void fill_text(uint8_t *buf, unsigned len, unsigned seed);
void fill_random(uint8_t *buf, unsigned len, unsigned seed);

#endif /* CZFS_DAEMON_TESTLIB_H */
