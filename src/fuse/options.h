/* SPDX-License-Identifier: MIT */
/*
 * czfs-fuse's command line: the -o options into struct czfs_mount_opts
 * (daemon.h), with their defaults, checks and usage text.  The session
 * (main.c) uses them; nothing else does.
 */
#ifndef CZFS_FUSE_OPTIONS_H
#define CZFS_FUSE_OPTIONS_H

#include <stdio.h>

#include "daemon.h"

/* The defaults, before any option. */
void czfs_opts_init(struct czfs_mount_opts *o);
/* Take czfs's options out of args (libfuse's and the kernel's stay):
 * 0, or -EINVAL (a message printed). */
int czfs_opts_parse(struct fuse_args *args, struct czfs_mount_opts *o);
/* What follows from the options once all are read (a remote image's
 * request size, readahead within the pool): 0, or -EINVAL (printed). */
int czfs_opts_settle(struct czfs_mount_opts *o);
/* The usage text, without libfuse's options. */
void czfs_opts_usage(FILE *f);
/* What parsing allocated (o itself stays). */
void czfs_opts_free(struct czfs_mount_opts *o);

#endif /* CZFS_FUSE_OPTIONS_H */
