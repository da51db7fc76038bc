/* SPDX-License-Identifier: MIT */
/*
 * Readahead across files, on read-only mounts (-o tree_readahead=SIZE).
 * When a reader has read a small file whole, the files that follow it in
 * inode order (mkfs.czfs numbers the files of a directory together) are
 * stored into the kernel's page cache with FUSE_NOTIFY_STORE, so that a
 * walk reading a tree (tar, cp -r, rsync, a build) finds most files there
 * and costs no request for them.  Only files the kernel knows (it has
 * their inode: a lookup count) are stored, each at most once while its
 * in-memory inode lives, up to SIZE bytes after each read.
 *
 * Threads: called by a FUSE thread after its reply is sent.  The kernel
 * may make a store wait for a page that a READ has locked until another
 * FUSE thread answers it, so a store holds no claim, and at most
 * dm->push_slots threads store at once: always fewer than the session
 * loop may run (none with -s), so a READ always finds a thread.
 */
#ifndef CZFS_FUSE_PUSH_H
#define CZFS_FUSE_PUSH_H

#include <stdint.h>

struct czfs_daemon;

/* The file ino has just been read whole: store the files after it. */
void czfs_push_after(struct czfs_daemon *dm, uint64_t ino);

#endif /* CZFS_FUSE_PUSH_H */
