/* SPDX-License-Identifier: MIT */
/*
 * The FUSE operations (ops_*.c): the table each file fills, and the few
 * helpers one file of them lends the others.  Each operation is a do_*
 * worker returning an errno and a wrapper that replies exactly once.
 */
#ifndef CZFS_FUSE_OPS_H
#define CZFS_FUSE_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon.h"

struct czfs_inode_info;
struct czfs_minode;

/* Operation tables, filled by each ops_*.c file. */
void czfs_fuse_ops_inode(struct fuse_lowlevel_ops *ops);
void czfs_fuse_ops_dir(struct fuse_lowlevel_ops *ops);
void czfs_fuse_ops_file(struct fuse_lowlevel_ops *ops);
void czfs_fuse_ops_write(struct fuse_lowlevel_ops *ops);
void czfs_fuse_ops_copy(struct fuse_lowlevel_ops *ops);
void czfs_fuse_ops_ns(struct fuse_lowlevel_ops *ops);
void czfs_fuse_ops_ioctl(struct fuse_lowlevel_ops *ops);

/* ---- ops_inode.c ---- */

/* Whether a read of ii now updates its access time (relatime, or as
 * -o atime= says; never on a read-only mount or with chattr +A). */
bool czfs_fuse_atime_due(struct czfs_daemon *dm,
			 const struct czfs_inode_info *ii, time_t now);
/* Move mi's access time to now if a read now would (mi->lock held);
 * stored with the next writeback or checkpoint.  True if it moved. */
bool czfs_fuse_atime_touch(struct czfs_daemon *dm, struct czfs_minode *mi);

/* Map a library error to the errno a FUSE reply carries. */
int czfs_fuse_errno(int err);

/* Current attributes: the in-memory inode's (it may be dirty), as shown
 * to the kernel. */
int czfs_fuse_read_inode(struct czfs_daemon *dm, uint64_t ino,
			 struct czfs_inode_info *ii);

/* Attributes a reply carries (entry and attr timeouts from the mount). */
void czfs_fuse_fill_entry(struct czfs_daemon *dm,
			  const struct czfs_inode_info *ii,
			  struct fuse_entry_param *e);

/*
 * chattr's immutable and append-only flags (CZFS_INODE_*) against a
 * change: -EPERM when flags forbid it, else 0.  Immutable forbids every
 * change (data, attributes, xattrs, names in a directory, the inode's own
 * names); append-only too, but appending data (to a directory: adding
 * names), and touching the times to now: the caller passes appending true
 * for those, false for everything else.
 */
int czfs_fuse_flags_deny(uint32_t flags, bool appending);

/* ---- ops_file.c ---- */

/* Open a file create() just made. */
int czfs_fuse_open_created(struct czfs_daemon *dm, uint64_t ino,
			   struct fuse_file_info *fi);
/* Close an open file: a release, or an open whose reply failed. */
void czfs_fuse_release_file(struct czfs_daemon *dm, struct czfs_open_file *of);
/* Close what the kernel left open (after the session ended). */
void czfs_fuse_release_all(struct czfs_daemon *dm);

/* ---- ops_write.c ---- */

/*
 * A change of mi's data drops setuid, and setgid where the kernel would
 * (czfs_caller_kill_priv: not for a caller with CAP_FSETID); asked: the
 * request said so itself (killpriv.h), whoever the caller.  0 or -errno.
 */
int czfs_fuse_drop_suidgid(struct czfs_daemon *dm, fuse_req_t req,
			   struct czfs_minode *mi, bool asked);
/* open(O_TRUNC) of an existing file: size 0, mtime and ctime now. */
int czfs_fuse_truncate_open(struct czfs_daemon *dm, struct czfs_minode *mi);
/* Write size bytes at off into mi's clusters: bytes written (short only on
 * an error after some were) or -errno. */
long czfs_fuse_do_write(struct czfs_daemon *dm, struct czfs_minode *mi,
			const void *buf, size_t size, uint64_t off);

#endif /* CZFS_FUSE_OPS_H */
