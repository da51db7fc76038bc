/* SPDX-License-Identifier: MIT */
/*
 * The chattr flags czfs keeps, in one table: the inode's CZFS_INODE_*
 * bit, the kernel's FS_*_FL (FS_IOC_GETFLAGS) and FS_XFLAG_*
 * (FS_IOC_FSGETXATTR), and the names tar gives them in SCHILY.fflags
 * (libarchive's Linux names, then the BSD ones that mean the same).
 * Pure functions, no state: any thread.
 */
#ifndef CZFS_CHATTR_H
#define CZFS_CHATTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* FS_*_FL of flags (CZFS_INODE_*). */
unsigned czfs_chattr_to_fs(uint32_t flags);

/* FS_*_FL to CZFS_INODE_* in *flags: 0, or -EOPNOTSUPP for a flag czfs
 * lacks (*flags then holds the others). */
int czfs_chattr_from_fs(unsigned fs, uint32_t *flags);

/* Whether err (-errno of FS_IOC_GETFLAGS or FS_IOC_SETFLAGS) says that the
 * filesystem keeps no such flags (mkfs.czfs -d, fsck.czfs --extract). */
bool czfs_chattr_unsupported(int err);

/* FS_XFLAG_* of flags; none for the compression flags. */
unsigned czfs_chattr_to_xfs(uint32_t flags);

/* FS_XFLAG_* to CZFS_INODE_* in *flags: 0, or -EOPNOTSUPP. */
int czfs_chattr_from_xfs(unsigned xfs, uint32_t *flags);

/*
 * tar's SCHILY.fflags text (names split by ',' or ' ') to CZFS_INODE_*
 * in *flags.  Names that clear a flag ("nosappnd", "dump") are no-ops;
 * names of flags czfs does not keep are copied, ','-separated, to rest
 * (cut at len, always terminated).  Returns whether rest is empty.
 */
int czfs_chattr_parse(const char *text, uint32_t *flags, char *rest,
		      size_t len);

/* flags as SCHILY.fflags text in buf (len >= CZFS_CHATTR_TEXT_MAX), ""
 * for none: the flags without a tar name (nocompress) are left out. */
#define CZFS_CHATTR_TEXT_MAX	64
void czfs_chattr_text(uint32_t flags, char *buf, size_t len);

#endif
