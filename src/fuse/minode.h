/* SPDX-License-Identifier: MIT */
/*
 * In-memory inodes.  While the kernel knows an inode (lookup count), a file
 * is open, or it has dirty data, czfs-fuse keeps it here: its attributes
 * are authoritative (they reach the tree at writeback and checkpoints), and
 * it lists its dirty clusters.
 *
 * Locks: the table has a mutex for its hash; each inode has a mutex for
 * its fields.  Order: fs->lock, then an inode's lock, never the reverse.
 * An inode's lock is held across I/O in one case only: to store that
 * inode's attributes (czfs_inode_store, a B-tree change that may read
 * nodes), with fs->lock held exclusive, so that what reaches the tree and
 * ii_dirty agree (czfs_writeback_attr, the writeback of its clusters, an
 * xattr change, a namespace change).  Under it only leaf locks are taken
 * (the space map's mutex, the cluster cache's lock: czfs_room_reserve and
 * czfs_ccache_live in a write), never wb_lock, take_lock or fs->lock;
 * whoever reads the attributes meanwhile (czfs_mi_attr) waits.
 */
#ifndef CZFS_MINODE_H
#define CZFS_MINODE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "inode.h"

struct czfs_daemon;
struct czfs_centry;
struct czfs_fs;
struct czfs_itable;
struct czfs_stream;

struct czfs_minode {
	uint64_t ino;
	pthread_mutex_t lock;
	/* held through a writeback of the inode, and by a truncate or hole
	 * punch while it drops clusters: a writeback that took them before
	 * cannot link them back afterwards (before lock, fs->lock) */
	pthread_mutex_t wb_lock;
	struct czfs_inode_info ii;	/* current attributes */
	bool ii_dirty;			/* not stored in the tree yet */
	bool unlinked;			/* nlink 0: destroyed once let go */
	uint64_t nlookup;		/* the kernel's references (table lock) */
	unsigned opens;			/* (table lock) */
	/* dirty clusters, each holding a cluster-cache reference; while
	 * there are any, the inode holds a reference of its own */
	struct czfs_centry **dirty;
	unsigned ndirty, dirty_cap;
	uint64_t reserved;		/* blocks reserved for the dirty data */
	/* The size its item holds (czfs_mi_store), and the first byte of
	 * the clusters a writeback took and has not linked yet (its batch,
	 * or a pack's member; UINT64_MAX: none) (lock) */
	uint64_t stored_size;
	uint64_t wb_pending;
	/* written with O_DIRECT since the last open: pages a buffered reader
	 * cached meanwhile may be stale, the next open drops them (lock) */
	bool direct_written;
	/* the prefetch stream of the reads that come without an open (a
	 * read-only mount declines opens: ops_file.c); made, as an open's
	 * is, by the first read past a cluster (lock); closed with the inode */
	struct czfs_stream *stream;
	/* its data was stored into the kernel's page cache (push.c) (lock) */
	bool pushed;
	/* opens for reading: the access time of data stored ahead moves at
	 * an open, or at the store if one is open (ops_file.c) (lock) */
	unsigned readers;
	/* push.c stores its data now: set under lock while no writer holds
	 * it, cleared under dm->push_lock */
	atomic_bool pushing;
	/* changes of its data or size from the kernel's side under way: opens
	 * for writing, a truncate (czfs_mi_writer_begin) (lock) */
	unsigned writers;
	/* a writer fsyncs it: its partial last cluster is written back
	 * block by block (czfs_cluster_hot's log_tail) */
	atomic_bool fsynced;
	/* security.capability is known absent: the kernel asks before every
	 * write (ops_inode.c).  xattr_gen counts the inode's xattr changes,
	 * so that a lookup that raced one does not set it (lock) */
	bool no_caps;
	unsigned xattr_gen;
	/* private to minode.c */
	unsigned refs;
	struct czfs_minode *hnext;
	bool on_dirty;			/* on the table's dirty list */
	struct czfs_minode *dprev, *dnext;
};

/* An empty inode table: 0 or -ENOMEM. */
int czfs_itable_create(struct czfs_itable **out);
/* Free dm->it (NULL accepted) and what its inodes hold; after the
 * prefetch workers have stopped. */
void czfs_itable_destroy(struct czfs_daemon *dm);

/*
 * The in-memory inode of ino, read from the tree if needed (taking
 * fs->lock shared, unless the caller holds fs->lock: fs_locked).  Returns
 * 0 with a reference, -ENOENT, -EFSCORRUPTED, -EIO, -ENOMEM.
 */
int czfs_mi_get(struct czfs_daemon *dm, uint64_t ino, bool fs_locked,
		struct czfs_minode **out);
/* The same under fs->lock, reading the tree through the caller's leaf
 * hint (czfs_btree_lookup_near): a listing's entries. */
int czfs_mi_get_near(struct czfs_daemon *dm, uint64_t ino,
		     struct czfs_btree_hint *h, struct czfs_minode **out);
/* Drop a reference; an inode nobody needs any more leaves the table (one
 * unlinked is destroyed in the tree first).  Takes fs->lock itself when it
 * must: never call it holding fs->lock. */
void czfs_mi_put(struct czfs_daemon *dm, struct czfs_minode *mi);
/* The in-memory inode of ino with a reference if the kernel knows it (a
 * lookup count) and its data was not stored into the kernel's page cache
 * (pushed), else NULL.  Reads the tree only for an inode the kernel holds
 * that may be stored (a regular file with data); not under fs->lock. */
struct czfs_minode *czfs_mi_to_push(struct czfs_daemon *dm, uint64_t ino);
/* ino's data is in the kernel's page cache (pushed), if we know ino. */
void czfs_mi_mark_pushed(struct czfs_daemon *dm, uint64_t ino);
/* Inodes held in full, and kept as the kernel's lookup count only. */
void czfs_itable_counts(struct czfs_daemon *dm, uint64_t *full,
			uint64_t *compact);
/* The kernel took n more references (lookup replies) / forgot n. */
void czfs_mi_lookup(struct czfs_daemon *dm, struct czfs_minode *mi, uint64_t n);
void czfs_mi_forget(struct czfs_daemon *dm, uint64_t ino, uint64_t n);
/* An open file holds its inode (open takes a reference, close drops it). */
void czfs_mi_open(struct czfs_daemon *dm, struct czfs_minode *mi);
void czfs_mi_close(struct czfs_daemon *dm, struct czfs_minode *mi);
/* One more reference (a dirty inode holds one for its dirty data). */
void czfs_mi_hold(struct czfs_daemon *dm, struct czfs_minode *mi);

/*
 * A change of mi's data or size from the kernel's side begins (an open
 * for writing, a truncate): no push (push.c) stores mi's data until it
 * ends, and one under way is waited for, because a store after the
 * kernel's write would put the old data back into its page cache.
 */
void czfs_mi_writer_begin(struct czfs_daemon *dm, struct czfs_minode *mi);
void czfs_mi_writer_end(struct czfs_minode *mi);
/* push.c: mi's data may be stored (no writer): marked pushing, true; the
 * end of the store.  (Under mi->lock: czfs_mi_push_begin only.) */
bool czfs_mi_push_begin(struct czfs_minode *mi);
void czfs_mi_push_end(struct czfs_daemon *dm, struct czfs_minode *mi);

/* A copy of the attributes, under the inode's lock. */
void czfs_mi_attr(struct czfs_minode *mi, struct czfs_inode_info *ii);
/* The same as the kernel is shown it: dirty data not written back yet
 * counts in blocks for the room set aside for it (as ext4's delayed
 * allocation does), so that du and cp see a new file's data at once. */
void czfs_mi_attr_shown(struct czfs_minode *mi, struct czfs_inode_info *ii);

/*
 * What a writeback links in the transaction of its store: items that end
 * at end (the size must cover them: fsck's rule), and from pending on
 * (UINT64_MAX: nowhere) data it took but did not link (a cluster written
 * again while it was encoded, one that failed).
 */
struct czfs_mi_link {
	uint64_t end, pending;
};

/*
 * Store mi's attributes in the tree (fs->lock held exclusive, mi->lock
 * held; 0 or the store's error).  The size stored is mi's, but never
 * past data that is not linked yet (dirty clusters, the clusters of a
 * writeback in flight, link->pending) beyond what the item held: the
 * checkpoint that commits the size must not find the data missing, or a
 * crash leaves zeros nobody wrote where a write was (an append that came
 * after the checkpoint wrote its file back, stored with a chmod).  The
 * writeback that links that data stores the size again.  link: the
 * caller's own writeback (its pending data instead of mi->wb_pending);
 * NULL for any other store.
 */
int czfs_mi_store(struct czfs_fs *fs, struct czfs_minode *mi,
		  const struct czfs_mi_link *link);

/*
 * mi (mi->lock held) has dirty clusters or attributes now:
 * czfs_itable_each_dirty will visit it.  Writeback calls it as a cluster
 * makes mi's list non-empty, czfs_mi_attrs_changed as its attributes
 * change.
 */
void czfs_itable_note_dirty(struct czfs_daemon *dm, struct czfs_minode *mi);
/* mi's attributes (mi->lock held) changed, to be stored by a writeback or
 * checkpoint: ii_dirty, and mi noted dirty. */
void czfs_mi_attrs_changed(struct czfs_daemon *dm, struct czfs_minode *mi);
/* Call fn for every inode noted dirty, with a reference held; those that
 * hold neither dirty clusters nor attributes after it leave the list.
 * 0 or -ENOMEM (fn called for none). */
int czfs_itable_each_dirty(struct czfs_daemon *dm,
			   void (*fn)(struct czfs_daemon *dm,
				      struct czfs_minode *mi, void *arg),
			   void *arg);

#endif /* CZFS_MINODE_H */
