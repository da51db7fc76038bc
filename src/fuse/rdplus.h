/* SPDX-License-Identifier: MIT */
/*
 * Whether listings carry attributes.  A mount is always sent
 * READDIRPLUS (main.c).  An entry with attributes
 * makes the kernel build an inode and a dentry for it, and us read its
 * inode: what a walk that stats every entry (du, tar, ls -l) saves a
 * LOOKUP with, and what one that only needs names and types (find,
 * which descends by d_type) pays for nothing, 3 to 4 us an entry on each
 * side.  An entry may come without (node id 0): only its name and type.
 * A directory's always comes with them: every walk descends into it.
 *
 * Which walk runs shows only in the LOOKUPs of files listed without
 * attributes, so the mode learns from them:
 *   - with attributes (the start), one file entry of a listing now and
 *     then goes without (the probe).  Looked up: a stat-ing walk; the next
 *     probe comes twice as many listings later.  Not looked up within
 *     CZFS_RDPLUS_PROBE_WAIT listings: names are enough, go without;
 *   - without, the last CZFS_RDPLUS_RECENT directories listed are kept;
 *     the first lookup of a file in them: back to attributes.  Not the
 *     second: a walk stats in listing order, and the directories between
 *     its first file and its second would be listed without meanwhile,
 *     each of their files one more LOOKUP.  (The files already listed
 *     without cost it a LOOKUP each all the same.)
 * Lookups of directories do not count: any walk descends into them.
 * Either mode lists the same entries; only the requests differ.
 *
 * Threads: any FUSE thread; one mutex.
 */
#ifndef CZFS_FUSE_RDPLUS_H
#define CZFS_FUSE_RDPLUS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define CZFS_RDPLUS_PROBE_WAIT	32	/* listings a probe may wait */
#define CZFS_RDPLUS_GAP_MIN	8	/* listings between probes, at first */
#define CZFS_RDPLUS_GAP_MAX	128	/* and at most */
#define CZFS_RDPLUS_RECENT	16	/* bare listings file lookups count in */

struct czfs_rdplus {
	pthread_mutex_t lock;
	bool bare;			/* listings without attributes */
	/* with attributes: the probe out (dir 0: none), listings since it
	 * was sent or since the last was answered, and between probes */
	uint64_t probe_dir, probe_ino;
	unsigned since, gap;
	/* without: the last directories listed */
	uint64_t recent[CZFS_RDPLUS_RECENT];
	unsigned next;
};

/* What a listing does with its entries. */
enum czfs_rdplus_mode {
	CZFS_RDPLUS_ATTRS,		/* every entry with attributes */
	CZFS_RDPLUS_PROBE,		/* the first file without (the probe) */
	CZFS_RDPLUS_BARE,		/* files: names and types only */
};

void czfs_rdplus_init(struct czfs_rdplus *rp);
void czfs_rdplus_destroy(struct czfs_rdplus *rp);

/* A READDIRPLUS of directory dir begins: how to list its entries. */
enum czfs_rdplus_mode czfs_rdplus_listing(struct czfs_rdplus *rp, uint64_t dir);

/* The listing of dir that was told CZFS_RDPLUS_PROBE sent file ino
 * without attributes (at most once a listing). */
void czfs_rdplus_probe_sent(struct czfs_rdplus *rp, uint64_t dir, uint64_t ino);

/* A LOOKUP found ino, not a directory, in directory dir. */
void czfs_rdplus_lookup(struct czfs_rdplus *rp, uint64_t dir, uint64_t ino);

#endif /* CZFS_FUSE_RDPLUS_H */
