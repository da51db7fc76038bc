/* SPDX-License-Identifier: MIT */
/*
 * The pack cache: decoded packs (the shared blobs of PACKED clusters),
 * so that the small files of one pack cost one read and one decode
 * between them, as squashfs's fragment cache does.  Entries are keyed by
 * the pack's address, checksum and length; a few dozen of them, least
 * recently used out first, each a malloc'd buffer.
 *
 * Why no invalidation: a pack is never changed once written, and the
 * daemon never writes one; a pack's blocks are freed only when no item
 * points at it any more, so no lookup can find a stale entry through a
 * live item.
 *
 * Threads: every function may be called from any thread; an entry taken
 * with get or insert stays valid until it is put.
 */
#ifndef CZFS_PACKCACHE_H
#define CZFS_PACKCACHE_H

#include <stdint.h>

struct czfs_pcache;

struct czfs_pentry {
	uint64_t blkaddr;
	uint32_t checksum, ulen;
	void *data;			/* ulen decoded bytes */
	unsigned refs;			/* under the cache's lock */
	uint64_t used;			/* LRU stamp */
};

/* A cache of at most n entries (n >= 1).  0 or -ENOMEM. */
int czfs_pcache_create(unsigned n, struct czfs_pcache **out);
void czfs_pcache_destroy(struct czfs_pcache *pc);	/* accepts NULL */

/* The cached pack with this key, referenced, or NULL. */
struct czfs_pentry *czfs_pcache_get(struct czfs_pcache *pc, uint64_t blkaddr,
				    uint32_t checksum, uint32_t ulen);

/*
 * Cache data (ulen bytes, malloc'd: the cache owns it from now, even on
 * failure) as the pack with this key, evicting the least recently used
 * unreferenced entry if full.  Returns the entry, referenced: an entry
 * another thread inserted first (data is freed), or NULL when every
 * entry is in use (data is freed; the caller decodes without the cache).
 */
struct czfs_pentry *czfs_pcache_insert(struct czfs_pcache *pc, uint64_t blkaddr,
				       uint32_t checksum, uint32_t ulen,
				       void *data);

/* Drop a reference from get or insert; accepts NULL. */
void czfs_pcache_put(struct czfs_pcache *pc, struct czfs_pentry *e);

/* Lookups that hit and missed, since creation. */
void czfs_pcache_counts(struct czfs_pcache *pc, uint64_t *hits,
			uint64_t *misses);

#endif /* CZFS_PACKCACHE_H */
