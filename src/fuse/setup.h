/* SPDX-License-Identifier: MIT */
/*
 * The daemon's memory and locks, set up and torn down: what main.c's
 * mount and the daemon's unit tests build over an open image alike.
 */
#ifndef CZFS_FUSE_SETUP_H
#define CZFS_FUSE_SETUP_H

struct czfs_daemon;

/*
 * The locks, the inode table, the page pool (dm->opts.cache_size,
 * reserved_pages), the cluster cache (cache_min), the pack cache, the
 * window cache (map, map_slots) and the budgets of staging and
 * admission, for dm->fs.  Starts no thread.  0 or -errno (a message
 * logged); czfs_daemon_free undoes what was done.
 */
int czfs_daemon_init(struct czfs_daemon *dm);
/* Free what czfs_daemon_init made (not dm->fs); after every thread of
 * the daemon has stopped. */
void czfs_daemon_free(struct czfs_daemon *dm);

#endif /* CZFS_FUSE_SETUP_H */
