// SPDX-License-Identifier: MIT
/* A path or a URL to an open image (image.h). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "image.h"
#include "log.h"
#include "url.h"

int czfs_image_open(const char *path, const struct czfs_fs_opts *opts,
		    const struct czfs_remote_opts *ropts, struct czfs_fs **out)
{
	struct czfs_fs_opts o = *opts;
	struct czfs_bdev *bdev;
	char *shown;
	int err;

	if (czfs_url_kind(path) == CZFS_URL_NONE)
		return czfs_fs_open(path, opts, out);
	/* a URL is read-only, whatever was asked */
	o.flags = (o.flags | CZFS_OPEN_RDONLY) & ~CZFS_OPEN_DIRECT;
	err = czfs_bdev_open_remote(path, czfs_fs_bdev_flags(o.flags), ropts,
				    &bdev);
	if (!err)
		return czfs_fs_open_bdev(bdev, &o, out);
	shown = czfs_url_redact(path);
	czfs_err("%s: %s", shown ? shown : "image", strerror(-err));
	free(shown);
	return err;
}
