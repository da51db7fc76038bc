/* SPDX-License-Identifier: MIT */
/* Unit test helpers: a small image in memory, opened through the library. */
#ifndef CZFS_FS_TESTLIB_H
#define CZFS_FS_TESTLIB_H

#include <stdbool.h>

#include "bdev.h"
#include "fs.h"

#define MAX_BLOCKS	4096
#define BASE_INODES	300

/* An image with a root directory and inodes 2..BASE_INODES (empty files). */
struct czfs_bdev *make_image(void);
/* A copy of a device's bytes: what a crash would leave. */
struct czfs_bdev *copy_bdev(struct czfs_bdev *src);
/* Open (taking ownership of b), asserting success. */
struct czfs_fs *open_fs(struct czfs_bdev *b, bool rw);
/* make_image, opened read-write in a transaction, and a codec; undone by
 * close_fresh_fs (the fixtures of the cluster-kind tests). */
struct czfs_codec;
void open_fresh_fs(struct czfs_fs **fs, struct czfs_bdev **dev,
		   struct czfs_codec **codec);
void close_fresh_fs(struct czfs_fs *fs, struct czfs_codec *codec);
/* Commit *fs, reopen it read-write from a copy of *dev (checks the space
 * map), begin a transaction: both replaced. */
void commit_reopen(struct czfs_fs **fs, struct czfs_bdev **dev);
/* Flip a bit of the image's byte at (a byte address), asserting the I/O. */
void flip_image_byte(struct czfs_fs *fs, uint64_t at);

/* The change of a transaction (begun here): every inode 2..BASE_INODES +
 * added gets size, those past BASE_INODES are new.  0 or -errno. */
int change_sizes(struct czfs_fs *fs, uint64_t size, unsigned added);

#endif
