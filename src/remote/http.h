/* SPDX-License-Identifier: MIT */
/*
 * The HTTP(S) transport of remote images, through libcurl: range GETs of
 * one object (an s3:// one signed by libcurl's SigV4) over a pool of
 * kept-alive connections.  Every request has a timeout and is retried
 * with backoff a bounded number of times; after czfs_http_probe each must
 * match the object's identity (If-Match on its ETag, or
 * If-Unmodified-Since), so a changed object is never mixed with what was
 * read before.  Failures are logged with the URL stripped of credentials.
 */
#ifndef CZFS_HTTP_H
#define CZFS_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "remote.h"

struct czfs_http;

/*
 * Make the transport for url (http://, https:// or s3://bucket/key) with
 * o's timeout, retries, CA bundle and S3 settings (o is not kept); each
 * request is counted in stats (requests, bytes, retries, errors,
 * latency), which must outlive it.  Sends nothing.  Returns 0, -EINVAL
 * (a bad s3:// address), -EACCES (no S3 credentials), -ENOMEM; each
 * failure but -ENOMEM with a czfs_log line.
 */
int czfs_http_open(const char *url, const struct czfs_remote_opts *o,
		   struct czfs_remote_stats *stats, struct czfs_http **out);

/* Close the idle connections and wipe the secrets; h may be NULL. */
void czfs_http_close(struct czfs_http *h);

/* The URL without its credentials, for log lines. */
const char *czfs_http_shown(const struct czfs_http *h);

/*
 * A HEAD of the object: its size into *size and its identity (the ETag,
 * or else Last-Modified, or "" when it has neither) into identity (cap
 * bytes); every later request must match that identity.  Call once,
 * before any czfs_http_get_range, from one thread.  Returns 0, -ENOENT
 * (404), -EACCES (401/403), -EIO (the server failed, or gave no size),
 * -ENOMEM; each failure but -ENOMEM with a czfs_log line.
 */
int czfs_http_probe(struct czfs_http *h, uint64_t *size, char *identity,
		    size_t cap);

/*
 * Bytes [off, off + len) of the object into the cnt pieces of iov, which
 * hold len bytes, with one range request and its retries.  Returns 0,
 * -ENOENT, -EACCES, -EIO (a failure retries did not cure, the object
 * changed, or a server that ignores ranges), -ENOMEM; each failure but
 * -ENOMEM with a czfs_log line.  Thread-safe: each call takes a
 * connection of its own from the pool.
 */
int czfs_http_get_range(struct czfs_http *h, const struct iovec *iov, int cnt,
			uint64_t off, size_t len);

#endif /* CZFS_HTTP_H */
