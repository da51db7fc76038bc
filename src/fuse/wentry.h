/* SPDX-License-Identifier: MIT */
/*
 * A cluster-cache entry as the daemon holds it: the cache's entry
 * (ccache.h), then the write state the cache never reads, allocated with
 * it (czfs_ccache_create's entry_size: no allocation of its own).  The
 * write wing owns it: writes set wmask (czfs_writeback_written) and mark
 * the entry dirty, writeback clears both (write/writeback.h); the loader
 * reads wmask and partial only to complete a partial entry (read/load.h:
 * czfs_load_blocks, czfs_load_complete).
 */
#ifndef CZFS_FUSE_WENTRY_H
#define CZFS_FUSE_WENTRY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ccache.h"

struct czfs_wentry {
	struct czfs_centry ce;		/* first */
	/* newer than the image (the owner's dirty list holds a reference,
	 * so it is never evicted), and a count of its writes */
	bool dirty;
	uint32_t wseq;
	uint64_t wmask;			/* bit i: block i written since it was
					 * loaded or last written back */
	bool recompress;		/* wmask set whole by the recompression,
					 * not by a write since: encoded, never
					 * block by block */
	atomic_bool partial;		/* only the wmask blocks hold data: a
					 * write of whole blocks did not load
					 * it */
};

/* The write state of an entry of the daemon's cluster cache. */
static inline struct czfs_wentry *czfs_wentry_of(const struct czfs_centry *e)
{
	return (struct czfs_wentry *)e;
}

#endif /* CZFS_FUSE_WENTRY_H */
