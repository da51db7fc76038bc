/* SPDX-License-Identifier: MIT */
/*
 * umount(8) runs a filesystem's umount helper only for mounts whose
 * userspace options (libmount's utab) name one; the kernel keeps none for
 * FUSE.  So a daemon mounted by root records helper=fuse.czfs there, as
 * libfuse records mtab entries, when umount.fuse.czfs is installed: then
 * `umount MNT` waits for this daemon's last checkpoint (mount/umount_czfs.c).
 */
#ifndef CZFS_UTAB_H
#define CZFS_UTAB_H

/* Best effort: a failure is logged and changes nothing else. */
void czfs_utab_register(const char *image, const char *mountpoint);

#endif /* CZFS_UTAB_H */
