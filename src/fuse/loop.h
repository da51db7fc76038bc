/* SPDX-License-Identifier: MIT */
/*
 * The session loop of a mount of a local image.  libfuse's multi-threaded
 * loop keeps every idle thread blocked reading the device, and the kernel
 * hands each request to the one that has waited longest: a walk that
 * sends one request at a time (find, du) has each answered by another
 * thread, cold, often on the other CPU.  Measured on a cold find of
 * 18,941 files: 73 ms of daemon CPU and 0.19 s, against 25 ms and 0.07 s
 * single-threaded (-s), squashfuse_ll's figures (medians of 9).  A
 * database does the same on a writable mount: SQLite with a rollback
 * journal sends about 110 requests a transaction, one at a time
 * (writes, and a getxattr of security.capability before each): 266-299
 * transactions a second with libfuse's loop, 512-552 with this one.
 *
 * Here one thread at a time reads the device (it holds the token).  It
 * answers the requests that never wait on another request or on data
 * (lookups, attributes, listings, links, xattrs, forgets: the metadata of
 * a read-only image; on a writable one also small writes while no writer
 * throttles itself, opens, closes and the namespace) itself and reads on;
 * before any other (a READ: loads, readahead across files; an fsync: a
 * checkpoint and a flush; a large write, a truncate, fallocate) it passes
 * the token to an idle thread, or a new one up to max_threads, so that
 * requests are still answered in parallel.
 * A remote image keeps libfuse's loop: a node it misses may take a round
 * trip over the network, and no request should wait behind it.
 *
 * Threads: the caller's runs this until the session ends (unmount, a
 * signal: fuse_session_exit); the workers block every signal.
 */
#ifndef CZFS_FUSE_LOOP_H
#define CZFS_FUSE_LOOP_H

struct czfs_daemon;

/* Serve dm->se with at most max_threads threads (0: 10, libfuse's
 * default), counting in dm->st.loop_*.  Returns 0 when the session
 * ended, or -errno (reading the device). */
int czfs_loop_run(struct czfs_daemon *dm, unsigned max_threads);

#endif /* CZFS_FUSE_LOOP_H */
