/* SPDX-License-Identifier: MIT */
/*
 * Remote images: a read-only backing device over HTTP(S) or S3, through
 * libcurl.  czfs_bdev_open_remote() opens a URL with the caller's options
 * (the daemon's -o; NULL: the defaults below); the front ends reach it
 * through czfs_image_open (image.h).  The library's czfs_bdev_open opens
 * files only.
 */
#ifndef CZFS_REMOTE_H
#define CZFS_REMOTE_H

#include <stdatomic.h>
#include <stdint.h>

#include "bdev.h"
#include "url.h"

#define CZFS_REMOTE_TIMEOUT	30	/* seconds a request may take */
#define CZFS_REMOTE_RETRIES	3	/* tries after the first */

struct czfs_remote_opts {
	unsigned timeout;		/* seconds per request, 0 = default */
	int retries;			/* -1 = default */
	const char *cafile;		/* CA bundle for https (NULL: the system's) */
	const char *cache_dir;		/* on-disk range cache, NULL = none */
	uint64_t cache_limit;		/* its size, bytes (0 = 1 GiB) */
	/* s3:// (NULL: AWS_ENDPOINT_URL_S3/AWS_ENDPOINT_URL, AWS_REGION/
	 * AWS_DEFAULT_REGION, "us-east-1") */
	const char *s3_endpoint, *s3_region;
	enum czfs_s3_style s3_style;
};

/* Request latency histogram: bucket i counts latencies < 2^i microseconds. */
#define CZFS_REMOTE_LAT_BUCKETS	26

struct czfs_remote_stats {
	atomic_ullong requests;		/* range GETs sent (retries included) */
	atomic_ullong bytes;		/* body bytes they brought */
	atomic_ullong retries;		/* tries after a failure */
	atomic_ullong errors;		/* reads that failed after all tries */
	atomic_ullong waits;		/* fetches of a chunk another thread
					 * was fetching: waited for instead */
	atomic_ullong cache_hits, cache_misses;	/* range cache, in chunks */
	atomic_ullong cache_bytes;	/* bytes served from the cache */
	atomic_ullong lat[CZFS_REMOTE_LAT_BUCKETS];
};

/*
 * Open url (http://, https:// or s3://bucket/key) read-only: the object's
 * size and identity (ETag or Last-Modified) are fetched once; every later
 * read is a range request that must match that identity.  Writes, punches
 * and resizes return -EROFS; flush is a no-op.  opts may be NULL (the
 * defaults).  Returns 0, -EINVAL (a bad URL or option), -ENOENT (404),
 * -EACCES (401/403, or no S3 credentials), -EIO (the server failed, with
 * a czfs_log line naming the URL without its credentials), -ENOMEM.
 * Safe from several threads: each request takes its own connection.
 */
int czfs_bdev_open_remote(const char *url, unsigned flags,
			  const struct czfs_remote_opts *opts,
			  struct czfs_bdev **out);

/* The counters of a remote device, NULL for any other. */
const struct czfs_remote_stats *czfs_bdev_remote_stats(const struct czfs_bdev *b);

/* The latency (microseconds, bucket upper bound) below which pct% of
 * the requests fell; 0 when none was made. */
uint64_t czfs_remote_latency_pct(const struct czfs_remote_stats *s, unsigned pct);

#endif /* CZFS_REMOTE_H */
