/* SPDX-License-Identifier: MIT */
/*
 * The blocks items own, freed with them: a cluster's extent or block-map
 * entries, external xattr values, a pack's or run's reference.  Below
 * both cluster_update.c and inode_update.c, which call it and not each
 * other.  Every function runs in a transaction, fs->lock exclusive.
 */
#ifndef CZFS_ITEM_FREE_H
#define CZFS_ITEM_FREE_H

#include "fs.h"
#include "inode.h"

struct czfs_cluster_info;
struct czfs_key;

/*
 * Free the blocks of cluster old (an extent's, a BLOCKMAP's entries'; not
 * a pack's), but those that keep, a BLOCKMAP replacing it, keeps (its
 * entries not fresh); adds them to freed->blocks.
 */
void czfs_cluster_free_blocks(struct czfs_fs *fs,
			      const struct czfs_cluster_info *old,
			      const struct czfs_cluster_info *keep,
			      struct czfs_stored *freed);

/*
 * czfs_item_free_blocks: free the blocks one item owns, give back its
 *   promise (fallocate's room); adds the blocks freed, the inline bytes
 *   dropped and the promise given back to *freed.
 * czfs_items_delete: delete the items in [first, last], each freed so,
 *   and drop their packs' and runs' references.
 * Both return 0 or -errno (-ENOSPC, -EFSCORRUPTED, I/O errors).
 */
int czfs_item_free_blocks(struct czfs_fs *fs, const struct czfs_key *key,
			  const void *val, unsigned size,
			  struct czfs_stored *freed);
int czfs_items_delete(struct czfs_fs *fs, const struct czfs_key *first,
		      const struct czfs_key *last, struct czfs_stored *freed);

#endif /* CZFS_ITEM_FREE_H */
