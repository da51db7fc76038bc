/* SPDX-License-Identifier: MIT */
/* Inode items: decoded at the boundary, validated per field. */
#ifndef CZFS_INODE_H
#define CZFS_INODE_H

#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "czfs_fs.h"

struct czfs_btree;
struct czfs_btree_hint;

struct czfs_inode_info {
	uint64_t ino;
	uint32_t mode, nlink, uid, gid;
	uint64_t size, blocks;
	struct timespec atime, mtime, ctime, btime;
	uint32_t rdev_major, rdev_minor;
	uint64_t parent;		/* directories */
	uint64_t generation;
	uint32_t flags;			/* CZFS_INODE_* */
	unsigned alg;
	int level;
	unsigned cluster_shift;
	uint64_t nentries;		/* directories */
	uint64_t inline_bytes;		/* inline cluster payload bytes */
	uint64_t prealloc;		/* blocks its clusters are promised */
};

/*
 * What a change did to the room an inode takes: blocks outside the tree,
 * payload bytes of inline clusters, blocks promised by fallocate.
 * Cluster updates add to one.
 */
struct czfs_stored {
	int64_t blocks;
	int64_t inline_bytes;
	int64_t prealloc;
	/* not the inode's: runs a replaced slice left less than half live
	 * (czfs_run_underused), for recompression to move their slices */
	unsigned underused;
};

/* Apply d to ii's counters, neither going below zero. */
void czfs_inode_add_stored(struct czfs_inode_info *ii,
			   const struct czfs_stored *d);

/*
 * Decode an INODE item of len bytes for inode ino.  Checks: len, file type
 * (reg, dir, lnk, chr, blk, fifo, sock), nanoseconds < 1e9, cluster_shift
 * <= 6, alg <= CZFS_ALG_MAX, known flags, size <= CZFS_MAX_FILE_SIZE
 * (symlinks: 1..CZFS_SYMLINK_MAX), directories have a parent.
 * Returns 0 or -EFSCORRUPTED with a log line.
 */
int czfs_inode_decode(const void *val, unsigned len, uint64_t ino,
		      struct czfs_inode_info *ii);
void czfs_inode_encode(const struct czfs_inode_info *ii, struct czfs_inode *di);

/* Read inode ino from the tree: 0, -ENOENT, -EFSCORRUPTED or -EIO;
 * _near through a leaf hint (czfs_btree_lookup_near; NULL: none). */
int czfs_inode_read(struct czfs_btree *t, uint64_t ino,
		    struct czfs_inode_info *ii);
int czfs_inode_read_near(struct czfs_btree *t, uint64_t ino,
			 struct czfs_inode_info *ii, struct czfs_btree_hint *h);

/*
 * st_blocks counts the blocks, those fallocate set aside (as ext4 counts
 * unwritten extents) and the inline payload rounded up to 512-byte
 * sectors (as ext4 counts inline data), so a file with data never shows 0.
 */
void czfs_inode_to_stat(const struct czfs_inode_info *ii, struct stat *st);
/* Its st_blocks alone. */
blkcnt_t czfs_inode_stat_blocks(const struct czfs_inode_info *ii);

/* "regular file", "directory", ... for messages; "unknown" if none. */
const char *czfs_inode_type_name(uint32_t mode);

/*
 * Changes, inside a transaction (czfs_fs_begin; fs->lock held exclusive).
 *
 * czfs_inode_store: write ii as the INODE item of ii->ino.
 * czfs_inode_insert: the same for a new inode whose number the caller
 *   chose (fsck's lost+found): -EEXIST when an item has that number.
 * czfs_inode_create: give ii the next inode number and generation, store
 *   it, count it; -ENOSPC when numbers ran out.
 * czfs_inode_destroy: delete every item of ino and free the blocks they
 *   own (clusters, xattr values); uncount it.
 * czfs_orphan_add/del: the ORPHAN item of an inode unlinked while open
 *   (mount and fsck finish destroying it).
 * (Deleting items with the blocks they own: item_free.h.)
 * All return 0 or -errno (-ENOSPC, -EFSCORRUPTED, I/O errors).
 */
struct czfs_fs;
struct czfs_key;
int czfs_inode_store(struct czfs_fs *fs, const struct czfs_inode_info *ii);
int czfs_inode_insert(struct czfs_fs *fs, const struct czfs_inode_info *ii);
int czfs_inode_create(struct czfs_fs *fs, struct czfs_inode_info *ii);
int czfs_inode_destroy(struct czfs_fs *fs, uint64_t ino);
int czfs_orphan_add(struct czfs_fs *fs, uint64_t ino);
int czfs_orphan_del(struct czfs_fs *fs, uint64_t ino);
/* Destroy every orphan (after a crash; mount and fsck do it): *count. */
int czfs_orphans_reap(struct czfs_fs *fs, unsigned *count);

/* Bytes per cluster of this inode. */
static inline uint32_t czfs_inode_cluster_bytes(const struct czfs_inode_info *ii)
{
	return CZFS_BLOCK_SIZE << ii->cluster_shift;
}

/* DT_* type for a mode. */
unsigned czfs_mode_to_dtype(uint32_t mode);

#endif /* CZFS_INODE_H */
