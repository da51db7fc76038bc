/* SPDX-License-Identifier: MIT */
/*
 * Image names that are URLs: which kind, the form safe to show (no
 * credentials), and the HTTPS address of an s3:// object.  Pure string
 * work, no I/O, so every tool and the tests share one reading of a name.
 */
#ifndef CZFS_URL_H
#define CZFS_URL_H

#include <stdbool.h>

enum czfs_url_kind {
	CZFS_URL_NONE,			/* a path */
	CZFS_URL_HTTP,			/* http:// or https:// */
	CZFS_URL_S3,			/* s3://bucket/key */
};

/* The kind of name: a URL by its scheme (case-insensitive), else a path. */
enum czfs_url_kind czfs_url_kind(const char *name);

/*
 * A copy of name fit for logs, process titles and the mount table: the
 * user:password@ of a URL and its ?query (presigned signatures) are cut.
 * A path is copied as it is.  Returns NULL only when out of memory.
 */
char *czfs_url_redact(const char *name);

/*
 * Overwrite name in place with its redacted form (for argv, whose bytes
 * are the process title), padding with NULs.  True when it changed.
 */
bool czfs_url_redact_inplace(char *name);

/* How an s3:// object is addressed at its endpoint. */
enum czfs_s3_style {
	CZFS_S3_STYLE_AUTO,		/* virtual host on AWS, path elsewhere */
	CZFS_S3_STYLE_PATH,		/* ENDPOINT/bucket/key */
	CZFS_S3_STYLE_VIRTUAL,		/* SCHEME://bucket.HOST/key */
};

/*
 * The HTTP(S) URL of s3://bucket/key at endpoint ("https://host[:port]",
 * NULL: https://s3.REGION.amazonaws.com), region as given.  Returns 0 and
 * a malloc'd *out, -EINVAL for a name without bucket or key or a bad
 * endpoint (a virtual-host bucket must be a valid host label), -ENOMEM.
 */
int czfs_s3_url(const char *s3name, const char *endpoint, const char *region,
		enum czfs_s3_style style, char **out);

#endif /* CZFS_URL_H */
