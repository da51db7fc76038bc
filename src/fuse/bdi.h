/* SPDX-License-Identifier: MIT */
/* The mount's kernel readahead (bdi.c). */
#ifndef CZFS_FUSE_BDI_H
#define CZFS_FUSE_BDI_H

struct czfs_daemon;

/*
 * Set the mount's kernel readahead (bdi.c), once, best effort.  Called from
 * an operation: FUSE_INIT has been answered by then, and the kernel resets
 * the readahead when it processes that answer.
 */
void czfs_bdi_set_readahead(struct czfs_daemon *dm);

#endif /* CZFS_FUSE_BDI_H */
