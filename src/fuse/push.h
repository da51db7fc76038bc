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
 * Threads: called by a FUSE thread after its reply is sent.  It holds no
 * claim while it stores: the kernel may wait in the store for a page
 * that another thread's reply unlocks.
 */
#ifndef CZFS_FUSE_PUSH_H
#define CZFS_FUSE_PUSH_H

#include <stdint.h>

struct czfs_daemon;

/* The file ino has just been read whole: store the files after it. */
void czfs_push_after(struct czfs_daemon *dm, uint64_t ino);

#endif /* CZFS_FUSE_PUSH_H */
