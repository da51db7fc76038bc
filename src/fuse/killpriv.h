/* SPDX-License-Identifier: MIT */
/*
 * FUSE_HANDLE_KILLPRIV_V2, which libfuse 3.14 does not know: negotiated
 * here, on the device's reads and writes (libfuse's custom I/O).  With it
 * the kernel marks a file it found without setuid, setgid or
 * security.capability S_NOSEC and stops asking for security.capability
 * before every write (a GETXATTR round trip each: 47 of the 120 requests
 * of a SQLite transaction); in exchange the daemon drops setuid and
 * setgid where a request says so (FUSE_WRITE_KILL_SUIDGID,
 * FUSE_OPEN_KILL_SUIDGID, FATTR_KILL_SUIDGID: flags libfuse does not pass
 * on, read here from the request itself).
 */
#ifndef CZFS_KILLPRIV_H
#define CZFS_KILLPRIV_H

#include <stdbool.h>

#include "daemon.h"

/*
 * Offer it on dm's session, mounted and not serving yet: the kernel's
 * INIT reply then carries the flag when the kernel offered it.  0 or
 * -errno (the session then stays as it was).
 */
int czfs_killpriv_setup(struct czfs_daemon *dm);

/* Whether the kernel took it (after INIT). */
bool czfs_killpriv_on(void);

/* Whether the request this thread is serving asks the daemon to drop
 * setuid and setgid (one of the three flags above). */
bool czfs_killpriv_asked(void);

#endif /* CZFS_KILLPRIV_H */
