/* SPDX-License-Identifier: MIT */
/*
 * The image open of the front ends that take URLs (czfs-fuse, fsck.czfs,
 * dump.czfs): a path is the library's czfs_fs_open; a URL (url.h) is a
 * remote device (remote.h), opened read-only whatever the flags ask, and
 * without a lock.  So the format library knows nothing of HTTP.
 */
#ifndef CZFS_REMOTE_IMAGE_H
#define CZFS_REMOTE_IMAGE_H

#include "fs.h"
#include "remote.h"

/*
 * Open path or URL with opts (ropts: a URL's options, NULL = defaults).
 * Returns czfs_fs_open's errors, or czfs_bdev_open_remote's for a URL;
 * a failure is logged with the URL's credentials left out.
 */
int czfs_image_open(const char *path, const struct czfs_fs_opts *opts,
		    const struct czfs_remote_opts *ropts, struct czfs_fs **out);

#endif /* CZFS_REMOTE_IMAGE_H */
