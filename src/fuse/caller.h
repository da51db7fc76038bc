/* SPDX-License-Identifier: MIT */
/*
 * Who sent a request, beyond the uid and gid FUSE passes: the kernel's
 * setgid rules (in_group_or_capable) need the caller's groups and
 * CAP_FSETID, chattr CAP_FOWNER and CAP_LINUX_IMMUTABLE, all read from
 * /proc/PID/status of the caller.
 */
#ifndef CZFS_CALLER_H
#define CZFS_CALLER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "daemon.h"		/* fuse_lowlevel.h at the daemon's API version */

/*
 * True when the caller of req is in group gid (its fs gid or one of its
 * supplementary groups) or has CAP_FSETID, as the kernel's
 * in_group_or_capable: then a change keeps a file's setgid bit.  A caller
 * that cannot be read (it exited) counts as neither.
 */
bool czfs_caller_in_group_or_capable(fuse_req_t req, gid_t gid);

/* Capability numbers (linux/capability.h) the daemon asks about. */
#define CZFS_CAP_FOWNER			3
#define CZFS_CAP_FSETID			4
#define CZFS_CAP_LINUX_IMMUTABLE	9

/* True when the caller has CAP_FSETID. */
bool czfs_caller_capable(fuse_req_t req);
/* True when the caller has capability cap in its effective set. */
bool czfs_caller_has_cap(fuse_req_t req, int cap);

/*
 * The bits a change of a file's data or owner by this caller drops from
 * mode (as the kernel's setattr_should_drop_suidgid): setuid, and setgid
 * when the file is group-executable or the caller is not in its group
 * (gid); none from a directory, none for a caller with CAP_FSETID.
 */
uint32_t czfs_caller_kill_priv(fuse_req_t req, uint32_t mode, gid_t gid);
/* The same bits whatever the caller's capabilities: a chown drops them
 * so, and where the kernel asks it (killpriv.h) it has ruled already. */
uint32_t czfs_caller_kill_suidgid(fuse_req_t req, uint32_t mode, gid_t gid);

#endif /* CZFS_CALLER_H */
