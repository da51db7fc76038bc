/* SPDX-License-Identifier: MIT */
/*
 * The compact inodes' table (minode.c): for each inode only the kernel
 * holds, its lookup count and a few flags, 24 bytes in one open-addressed
 * array (linear probing, deletion by backward shift) that doubles past
 * three quarters full and halves below an eighth.  One array rather than
 * an allocation per inode: records made one by one in between the full
 * inodes they replace kept every page of those inodes resident.
 *
 * Not locked: the inode table's lock guards it.  A record's address holds
 * only until the next add or delete.
 */
#ifndef CZFS_FUSE_LOOKUPS_H
#define CZFS_FUSE_LOOKUPS_H

#include <stddef.h>
#include <stdint.h>

enum {
	CZFS_LOOKUP_PUSHED = 1 << 0,	/* czfs_minode's pushed */
	CZFS_LOOKUP_NO_CAPS = 1 << 1,	/* its no_caps */
	CZFS_LOOKUP_DIRECT = 1 << 2,	/* its direct_written */
	CZFS_LOOKUP_FSYNCED = 1 << 3,	/* its fsynced */
	CZFS_LOOKUP_PUSHABLE = 1 << 4,	/* a regular file with data */
};

struct czfs_lookup {
	uint64_t ino;			/* 0: a free slot */
	uint64_t nlookup;
	uint32_t seq;			/* when it was made (minode.c) */
	uint32_t flags;			/* CZFS_LOOKUP_* */
};

struct czfs_lookups {
	struct czfs_lookup *slot;
	size_t cap, n;			/* cap: 0 or a power of two */
};

/* ino's record, or NULL. */
struct czfs_lookup *czfs_lookups_find(struct czfs_lookups *t, uint64_t ino);
/* Add e (its ino not in t, not 0): 0 or -ENOMEM. */
int czfs_lookups_add(struct czfs_lookups *t, const struct czfs_lookup *e);
/* Remove the record e points to. */
void czfs_lookups_del(struct czfs_lookups *t, struct czfs_lookup *e);
void czfs_lookups_free(struct czfs_lookups *t);

#endif
