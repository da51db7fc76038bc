/* SPDX-License-Identifier: MIT */
/* The daemon's counters as text, and the virtual xattrs (stats.c). */
#ifndef CZFS_FUSE_STATS_H
#define CZFS_FUSE_STATS_H

#include <stddef.h>

struct czfs_daemon;

/* The name of the virtual xattr on the mount root that holds the counters. */
#define CZFS_STATS_XATTR	"user.czfs.stats"
/* The virtual xattr that reads and sets a file's compression. */
#define CZFS_COMPRESS_XATTR	"user.czfs.compress"

/* Format every counter as "name value" lines; returns the length. */
size_t czfs_fuse_stats_format(struct czfs_daemon *dm, char *buf, size_t size);

#endif /* CZFS_FUSE_STATS_H */
