/* SPDX-License-Identifier: MIT */
/*
 * Data stored into the kernel's page cache before it is asked for.
 * Readahead across files (-o tree_readahead=SIZE).
 * When a reader has read a small file whole, the files that follow it in
 * inode order (mkfs.czfs numbers the files of a directory together) are
 * stored into the kernel's page cache with FUSE_NOTIFY_STORE, so that a
 * walk reading a tree (tar, cp -r, rsync, a build) finds most files there
 * and costs no request for them.  Only files the kernel knows (it has
 * their inode: a lookup count) are stored, each at most once while its
 * in-memory inode lives, up to SIZE bytes after each read.
 * And the rest of a cluster a random read decoded (czfs_push_rest).
 *
 * Threads: called by a FUSE thread after its reply is sent.  The kernel
 * may make a store wait for a page that a READ has locked until another
 * FUSE thread answers it, so a store holds no read's admission, and at most
 * dm->push_slots threads store at once (czfs_push_init): always fewer than
 * the session loop may run (none with -s), so a READ always finds a thread.
 */
#ifndef CZFS_FUSE_PUSH_H
#define CZFS_FUSE_PUSH_H

#include <stdbool.h>
#include <stdint.h>

struct czfs_centry;
struct czfs_daemon;
struct czfs_inode_info;
struct czfs_minode;

/* The store slots of a daemon whose session runs threads FUSE threads
 * (0 or 1: none). */
void czfs_push_init(struct czfs_daemon *dm, unsigned threads);

/* The file ino has just been read whole: store the files after it. */
void czfs_push_after(struct czfs_daemon *dm, uint64_t ino);

/*
 * The rest of a random read's clusters.  Decoding a cluster costs the
 * same for 4 KiB of it as for all of it, and a random reader is likely to
 * come back near where it read (a database, a binary's pages): then the
 * kernel has it, as the kernel's own compressed filesystems keep whole
 * decompressed clusters.  In two steps, because the store may wait for a
 * READ in flight (above).  Before the reply, while the read holds its n
 * clusters ents (referenced, loaded whole), czfs_push_rest_plan says
 * whether to store the rest around [off, end): there is some, and a
 * random read's store slot is free (then taken).  After the reply,
 * czfs_push_rest_copy copies it out of the pool (NULL: no memory); once
 * the read has given back its clusters and its admission, czfs_push_rest
 * stores the copy and frees it.
 */
struct czfs_rest;
struct czfs_rest_plan {
	const struct czfs_centry *e[2];	/* the first and last clusters */
	uint64_t from[2], len[2];	/* their rest before and after */
};
bool czfs_push_rest_plan(struct czfs_daemon *dm,
			 const struct czfs_inode_info *ii,
			 struct czfs_centry *const *ents, unsigned n,
			 uint64_t off, uint64_t end, struct czfs_rest_plan *p);
struct czfs_rest *czfs_push_rest_copy(struct czfs_daemon *dm,
				      const struct czfs_inode_info *ii,
				      const struct czfs_rest_plan *p);
void czfs_push_rest(struct czfs_daemon *dm, struct czfs_minode *mi,
		    struct czfs_rest *r);

#endif /* CZFS_FUSE_PUSH_H */
