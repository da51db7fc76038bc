/* SPDX-License-Identifier: MIT */
/*
 * The range cache of remote images on a local disk: whole, aligned
 * chunks of an object, one file each below DIR/KEY/, where KEY names the
 * image's UUID and the object's identity (ETag or Last-Modified) and
 * size, so a changed object never meets old chunks.  Each chunk file
 * ends with the CRC32C of its bytes, checked on every read: a damaged or
 * cut chunk is a miss (and removed), never wrong data.  Kept across
 * mounts; the whole of DIR is held under a size limit by evicting the
 * least recently used chunks (their mtime is the use time, within a
 * second while a mount uses them, exact once it closes).  Several
 * mounts may share DIR: each reads DIR again once it has stored an
 * eighth of the limit, so that the others' chunks count too.
 */
#ifndef CZFS_RCACHE_H
#define CZFS_RCACHE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define CZFS_RCACHE_CHUNK	(1u << 20)	/* bytes; the last may be less */

struct czfs_rcache;

/*
 * Open (creating what is missing) the cache of the object named by key
 * (a string of [A-Za-z0-9._-], czfs_rcache_key) in dir, with the
 * chunks already in dir counted against limit bytes.  Returns 0,
 * -EINVAL (a bad key), or the errno of mkdir/opendir.
 */
int czfs_rcache_open(const char *dir, uint64_t limit, const char *key,
		     struct czfs_rcache **out);

/*
 * Make the key of an object: its image's UUID (16 bytes), its identity
 * string and its size, written into out (cap >= 96).
 */
void czfs_rcache_key(const uint8_t uuid[16], const char *identity,
		     uint64_t size, char *out, size_t cap);

/*
 * The chunk at off (a multiple of CZFS_RCACHE_CHUNK) of len bytes into
 * buf: 0 on a hit, -ENOENT on a miss (absent, or failing its CRC: then
 * removed), -ENOMEM.  Thread-safe, as are the functions below.
 */
int czfs_rcache_get(struct czfs_rcache *rc, uint64_t off, void *buf,
		    size_t len);
/* The same into the cnt pieces of iov, which hold the chunk's length: a
 * whole chunk read straight into the caller's pages. */
int czfs_rcache_getv(struct czfs_rcache *rc, uint64_t off,
		     const struct iovec *iov, int cnt);

/* Start reading the chunk at off from the disk, if present, without
 * waiting (a sequential reader's next chunks). */
void czfs_rcache_willneed(struct czfs_rcache *rc, uint64_t off);

/* Is the chunk at off present (not checked)? */
int czfs_rcache_has(struct czfs_rcache *rc, uint64_t off);

/* Store a chunk (best effort: a full disk leaves it out), evicting the
 * least recently used chunks of dir past the limit. */
void czfs_rcache_put(struct czfs_rcache *rc, uint64_t off, const void *buf,
		     size_t len);
/* The same from the cnt pieces of iov (the chunk's bytes, in order). */
void czfs_rcache_putv(struct czfs_rcache *rc, uint64_t off,
		      const struct iovec *iov, int cnt);

/* Close (accepts NULL); the chunks stay for the next mount. */
void czfs_rcache_close(struct czfs_rcache *rc);

#endif /* CZFS_RCACHE_H */
