/* SPDX-License-Identifier: MIT */
/*
 * The pack cache: decoded packs (the shared blobs of PACKED clusters),
 * so that the small files of one pack cost one read and one decode
 * between them, as squashfs's fragment cache does.  Entries are keyed by
 * the pack's address, checksum and length; a few dozen of them, least
 * recently used out first, each in a buffer of the largest pack's size,
 * reused.  A pack being decoded has a LOADING entry, as the cluster
 * cache's: a second thread that wants it waits for that decode instead of
 * reading and decoding it too.
 *
 * Why no invalidation: a pack is never changed once written, and the
 * daemon never writes one; a pack's blocks are freed only when no item
 * points at it any more, so no lookup can find a stale entry through a
 * live item.
 *
 * Threads: every function may be called from any thread; an entry taken
 * with claim stays valid until it is put (or its claim aborted).
 */
#ifndef CZFS_PACKCACHE_H
#define CZFS_PACKCACHE_H

#include <stdbool.h>
#include <stdint.h>

struct czfs_pcache;

struct czfs_pentry {
	uint64_t blkaddr;
	uint32_t checksum, ulen;
	void *data;			/* ulen decoded bytes; NULL: loading
					 * or a free slot */
	bool loading;			/* claimed: one thread decodes it */
	unsigned refs;			/* under the cache's lock */
	uint64_t used;			/* LRU stamp */
	uint32_t members;		/* clusters that use it, 0: unknown */
	uint32_t taken;			/* members copied out */
};

/* A cache of at most n entries (n >= 1).  0 or -ENOMEM. */
int czfs_pcache_create(unsigned n, struct czfs_pcache **out);
void czfs_pcache_destroy(struct czfs_pcache *pc);	/* accepts NULL */

#define CZFS_PC_NOWAIT	0x01	/* do not wait for another thread's decode */

/*
 * The pack with this key.  Cached: returns 0 with *e referenced (a hit).
 * Absent: takes a slot (evicting the least recently used entry nobody
 * holds) for a LOADING entry and returns 1 with it referenced: the
 * caller decodes the pack, then czfs_pcache_fill or czfs_pcache_abort
 * (a miss).  LOADING in another thread: waits until it is filled (0) or
 * aborted (then claims it: 1); with CZFS_PC_NOWAIT returns -EAGAIN.
 * Every slot held: -ENOSPC, the caller decodes without the cache.  *e is
 * NULL on errors.  A thread holding a claim must not wait for another's
 * (CZFS_PC_NOWAIT), or two decoders could wait for each other.
 */
int czfs_pcache_claim(struct czfs_pcache *pc, uint64_t blkaddr,
		      uint32_t checksum, uint32_t ulen, unsigned flags,
		      struct czfs_pentry **e);

/* A buffer of CZFS_PACK_MAX_ULEN bytes to decode a pack into (a freed
 * pack's, or new), or NULL; back with czfs_pcache_fill or _give. */
void *czfs_pcache_buffer(struct czfs_pcache *pc);
void czfs_pcache_give(struct czfs_pcache *pc, void *buf);
/* The claimed entry e decoded: data (ulen bytes, from czfs_pcache_buffer)
 * is the cache's from now; the waiters wake.  The caller's reference stays.
 * members: how many clusters use the pack (0: unknown, kept until
 * evicted or dropped; see czfs_pcache_took). */
void czfs_pcache_fill(struct czfs_pcache *pc, struct czfs_pentry *e,
		      void *data, uint32_t members);

/* The decode of the claimed entry e failed: its slot is freed with the
 * caller's reference, and a waiter claims the pack next. */
void czfs_pcache_abort(struct czfs_pcache *pc, struct czfs_pentry *e);

/* Drop a reference from claim (after fill); accepts NULL.  A pack that
 * has given out all its bytes is freed with its last reference. */
void czfs_pcache_put(struct czfs_pcache *pc, struct czfs_pentry *e);

/*
 * A member of the decoded entry e (referenced) was copied out.  A walk
 * takes each member of a pack once, and the kernel keeps what it read:
 * once as many were taken as the pack has members, it is unlikely to be
 * asked for again and waits in memory for nobody.
 */
void czfs_pcache_took(struct czfs_pcache *pc, struct czfs_pentry *e);

struct czfs_pcache_stats {
	uint64_t hits;			/* claims answered with a decoded pack */
	uint64_t misses;		/* claims that left the decode to the
					 * caller (a LOADING entry, or none) */
	uint64_t waits;			/* claims that waited for a decode */
	uint64_t consumed;		/* packs freed once all taken */
	uint64_t bytes;			/* decoded bytes held now */
};

/* The counts since creation. */
void czfs_pcache_get_stats(struct czfs_pcache *pc, struct czfs_pcache_stats *st);

/* Free the decoded packs nobody holds and the spare buffers (an idle
 * daemon's memory back). */
void czfs_pcache_drop(struct czfs_pcache *pc);

#endif /* CZFS_PACKCACHE_H */
