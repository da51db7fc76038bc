// SPDX-License-Identifier: MIT
/* In-memory inodes: a hash of what the kernel and open files hold. */
#include "config.h"

#include <stdlib.h>
#include <sys/stat.h>

#include "ccache.h"
#include "daemon.h"
#include "fs.h"
#include "log.h"
#include "lookups.h"
#include "minode.h"
#include "stream.h"
#include "util.h"

/* a tree walk keeps every inode it met: enough buckets for short chains */
#define ITABLE_BITS	16
#define ITABLE_BUCKETS	(1u << ITABLE_BITS)

/*
 * An inode only the kernel holds (a lookup count; no reference, open,
 * stream or change of ours) needs nothing but that count: a walk of a
 * tree leaves the kernel holding every inode it met, 162,000 for /usr,
 * and full in-memory inodes (400 bytes) took 58 MiB for them.  Such an
 * inode is kept compact (lookups.h); its attributes are read from the
 * tree again when a request needs them.
 */
struct czfs_itable {
	pthread_mutex_t lock;
	struct czfs_minode *hash[ITABLE_BUCKETS];
	struct czfs_lookups compact;
	uint64_t nfull;
	uint32_t seq;		/* compact records made (wraps) */
	/* inodes that may hold dirty clusters or attributes
	 * (czfs_itable_note_dirty); an inode leaves it with the table (no
	 * reference of its own, so a deleted file is destroyed at once):
	 * writeback's passes and checkpoints visit them, not the whole table
	 * (a cp -a of 14,600 files walked it 1,900 times; an fsync after a
	 * tree walk, every inode the walk met) */
	struct czfs_minode *dirty, *dirty_tail;
};

static unsigned bucket(uint64_t ino)
{
	return (unsigned)((ino * 0x9e3779b97f4a7c15ull) >> (64 - ITABLE_BITS));
}

int czfs_itable_create(struct czfs_itable **out)
{
	struct czfs_itable *it = calloc(1, sizeof(*it));

	if (!it)
		return -ENOMEM;
	pthread_mutex_init(&it->lock, NULL);
	*out = it;
	return 0;
}

static void mi_free(struct czfs_daemon *dm, struct czfs_minode *mi)
{
	if (mi->stream)
		czfs_stream_close(dm, mi->stream);
	pthread_mutex_destroy(&mi->lock);
	pthread_mutex_destroy(&mi->wb_lock);
	free(mi->dirty);
	free(mi);
}

void czfs_itable_destroy(struct czfs_daemon *dm)
{
	struct czfs_itable *it = dm->it;

	if (!it)
		return;
	for (unsigned b = 0; b < ITABLE_BUCKETS; b++)
		while (it->hash[b]) {
			struct czfs_minode *mi = it->hash[b];

			it->hash[b] = mi->hnext;
			mi_free(dm, mi);
		}
	czfs_lookups_free(&it->compact);
	pthread_mutex_destroy(&it->lock);
	free(it);
}

static struct czfs_minode *find(struct czfs_itable *it, uint64_t ino)
{
	struct czfs_minode *mi = it->hash[bucket(ino)];

	while (mi && mi->ino != ino)
		mi = mi->hnext;
	return mi;
}

static void insert(struct czfs_itable *it, struct czfs_minode *mi)
{
	mi->hnext = it->hash[bucket(mi->ino)];
	it->hash[bucket(mi->ino)] = mi;
	it->nfull++;
}

/* A fresh mi takes over its compact record c, if any (it->lock held). */
static void expand(struct czfs_itable *it, struct czfs_minode *mi,
		   struct czfs_lookup *c)
{
	if (!c)
		return;
	mi->nlookup = c->nlookup;
	mi->pushed = c->flags & CZFS_LOOKUP_PUSHED;
	mi->no_caps = c->flags & CZFS_LOOKUP_NO_CAPS;
	mi->direct_written = c->flags & CZFS_LOOKUP_DIRECT;
	atomic_store(&mi->fsynced, c->flags & CZFS_LOOKUP_FSYNCED);
	czfs_lookups_del(&it->compact, c);
}

/* A new inode read from the tree (through h, if any), not in the table
 * yet. */
static int mi_load(struct czfs_daemon *dm, uint64_t ino, bool fs_locked,
		   struct czfs_btree_hint *h, struct czfs_minode **out)
{
	struct czfs_minode *mi = calloc(1, sizeof(*mi));
	int err;

	if (!mi)
		return -ENOMEM;
	if (!fs_locked)
		pthread_rwlock_rdlock(&dm->fs->lock);
	err = czfs_inode_read_near(&dm->fs->tree, ino, &mi->ii, h);
	if (!fs_locked)
		pthread_rwlock_unlock(&dm->fs->lock);
	if (err) {
		free(mi);
		return err;
	}
	mi->ino = ino;
	mi->stored_size = mi->ii.size;
	mi->wb_pending = UINT64_MAX;
	pthread_mutex_init(&mi->lock, NULL);
	pthread_mutex_init(&mi->wb_lock, NULL);
	*out = mi;
	return 0;
}

static int get(struct czfs_daemon *dm, uint64_t ino, bool fs_locked,
	       struct czfs_btree_hint *h, struct czfs_minode **out)
{
	struct czfs_itable *it = dm->it;
	struct czfs_minode *mi, *fresh;
	struct czfs_lookup *c;
	uint32_t seen;
	int err;

again:
	pthread_mutex_lock(&it->lock);
	mi = find(it, ino);
	if (mi)
		mi->refs++;
	seen = it->seq;
	pthread_mutex_unlock(&it->lock);
	if (mi) {
		*out = mi;
		return 0;
	}
	err = mi_load(dm, ino, fs_locked, h, &fresh);
	if (err)
		return err;
	pthread_mutex_lock(&it->lock);
	mi = find(it, ino);		/* another thread may have won */
	c = mi ? NULL : czfs_lookups_find(&it->compact, ino);
	if (c && (int32_t)(c->seq - seen) > 0) {
		/* made full, changed and stored, and compact again since we
		 * looked: what we read of the tree may be older */
		pthread_mutex_unlock(&it->lock);
		mi_free(dm, fresh);
		goto again;
	}
	if (!mi) {
		mi = fresh;
		expand(it, mi, c);
		insert(it, mi);
		fresh = NULL;
	}
	mi->refs++;
	pthread_mutex_unlock(&it->lock);
	if (fresh)
		mi_free(dm, fresh);
	*out = mi;
	return 0;
}

int czfs_mi_get(struct czfs_daemon *dm, uint64_t ino, bool fs_locked,
		struct czfs_minode **out)
{
	return get(dm, ino, fs_locked, NULL, out);
}

int czfs_mi_get_near(struct czfs_daemon *dm, uint64_t ino,
		     struct czfs_btree_hint *h, struct czfs_minode **out)
{
	return get(dm, ino, true, h, out);
}

struct czfs_minode *czfs_mi_to_push(struct czfs_daemon *dm, uint64_t ino)
{
	struct czfs_itable *it = dm->it;
	struct czfs_minode *mi;
	struct czfs_lookup *c;
	bool load;

	pthread_mutex_lock(&it->lock);
	mi = find(it, ino);
	c = mi ? NULL : czfs_lookups_find(&it->compact, ino);
	if (mi && mi->nlookup)		/* take() looks at pushed */
		mi->refs++;
	else
		mi = NULL;
	load = c && (c->flags & (CZFS_LOOKUP_PUSHABLE | CZFS_LOOKUP_PUSHED)) ==
		    CZFS_LOOKUP_PUSHABLE;
	pthread_mutex_unlock(&it->lock);
	if (load && get(dm, ino, false, NULL, &mi))
		mi = NULL;
	return mi;
}

void czfs_mi_mark_pushed(struct czfs_daemon *dm, uint64_t ino)
{
	struct czfs_itable *it = dm->it;
	struct czfs_minode *mi;
	struct czfs_lookup *c = NULL;

	pthread_mutex_lock(&it->lock);
	mi = find(it, ino);
	if (mi)
		mi->refs++;
	else
		c = czfs_lookups_find(&it->compact, ino);
	if (c)
		c->flags |= CZFS_LOOKUP_PUSHED;
	pthread_mutex_unlock(&it->lock);
	if (!mi)
		return;
	pthread_mutex_lock(&mi->lock);
	mi->pushed = true;
	pthread_mutex_unlock(&mi->lock);
	czfs_mi_put(dm, mi);
}

void czfs_itable_counts(struct czfs_daemon *dm, uint64_t *full,
			uint64_t *compact)
{
	pthread_mutex_lock(&dm->it->lock);
	*full = dm->it->nfull;
	*compact = dm->it->compact.n;
	pthread_mutex_unlock(&dm->it->lock);
}

/* Under the table lock: refs, nlookup and opens live under it. */
static bool idle(const struct czfs_minode *mi)
{
	return !mi->refs && !mi->nlookup && !mi->opens;
}

/* Off the dirty list (it->lock held). */
static void dirty_unlink(struct czfs_itable *it, struct czfs_minode *mi)
{
	if (!mi->on_dirty)
		return;
	if (mi->dprev)
		mi->dprev->dnext = mi->dnext;
	else
		it->dirty = mi->dnext;
	if (mi->dnext)
		mi->dnext->dprev = mi->dprev;
	else
		it->dirty_tail = mi->dprev;
	mi->on_dirty = false;
}

static void unhash(struct czfs_itable *it, struct czfs_minode *mi)
{
	unsigned b = bucket(mi->ino);
	struct czfs_minode **pp = &it->hash[b];

	while (*pp != mi)
		pp = &(*pp)->hnext;
	*pp = mi->hnext;
	it->nfull--;
	dirty_unlink(it, mi);
}

/*
 * Under the table lock, for an inode nobody references: whether only the
 * kernel's lookup count is left to keep, all else stored in the tree.
 * No other thread can reach mi (no reference, not on the dirty list), so
 * its fields are read without its lock.
 */
static bool compactable(const struct czfs_minode *mi)
{
	return !mi->refs && !mi->opens && mi->nlookup && !mi->on_dirty &&
	       !mi->ii_dirty && !mi->unlinked && !mi->ndirty && !mi->stream &&
	       !mi->reserved && !mi->readers && !mi->writers &&
	       mi->wb_pending == UINT64_MAX && mi->stored_size == mi->ii.size;
}

/* mi leaves the table for a compact record (it->lock held): false when
 * there is no memory for one (mi stays). */
static bool compact(struct czfs_itable *it, struct czfs_minode *mi)
{
	struct czfs_lookup c = {
		.ino = mi->ino,
		.nlookup = mi->nlookup,
		.seq = it->seq + 1,
		.flags = (mi->pushed ? CZFS_LOOKUP_PUSHED : 0) |
			 (mi->no_caps ? CZFS_LOOKUP_NO_CAPS : 0) |
			 (mi->direct_written ? CZFS_LOOKUP_DIRECT : 0) |
			 (atomic_load(&mi->fsynced) ? CZFS_LOOKUP_FSYNCED : 0) |
			 (S_ISREG(mi->ii.mode) && mi->ii.size ?
			  CZFS_LOOKUP_PUSHABLE : 0),
	};

	if (czfs_lookups_add(&it->compact, &c))
		return false;
	it->seq++;
	unhash(it, mi);
	return true;
}

/*
 * An inode leaves the table: its last attributes are stored, or, unlinked,
 * it is destroyed with everything it owns.
 */
static void mi_retire(struct czfs_daemon *dm, struct czfs_minode *mi)
{
	struct czfs_fs *fs = dm->fs;
	int err = 0;

	if (!mi->unlinked && !mi->ii_dirty)
		return;
	pthread_rwlock_wrlock(&fs->lock);
	err = czfs_fs_begin(fs);
	if (!err && mi->unlinked) {
		err = czfs_orphan_del(fs, mi->ino);
		if (!err)
			err = czfs_inode_destroy(fs, mi->ino);
	} else if (!err) {
		pthread_mutex_lock(&mi->lock);
		err = czfs_mi_store(fs, mi, NULL);
		pthread_mutex_unlock(&mi->lock);
	}
	pthread_rwlock_unlock(&fs->lock);
	if (err)
		czfs_err("inode %llu: cannot %s it: %s", (unsigned long long)mi->ino,
			 mi->unlinked ? "destroy" : "store", strerror(-err));
}

void czfs_mi_put(struct czfs_daemon *dm, struct czfs_minode *mi)
{
	struct czfs_itable *it = dm->it;
	bool gone, compacted = false;

	pthread_mutex_lock(&it->lock);
	mi->refs--;
	gone = idle(mi);
	if (gone)
		unhash(it, mi);
	else if (compactable(mi))
		compacted = compact(it, mi);
	pthread_mutex_unlock(&it->lock);
	if (compacted)
		mi_free(dm, mi);
	if (!gone)
		return;
	mi_retire(dm, mi);
	mi_free(dm, mi);
}

void czfs_mi_lookup(struct czfs_daemon *dm, struct czfs_minode *mi, uint64_t n)
{
	pthread_mutex_lock(&dm->it->lock);
	mi->nlookup += n;
	pthread_mutex_unlock(&dm->it->lock);
}

void czfs_mi_open(struct czfs_daemon *dm, struct czfs_minode *mi)
{
	pthread_mutex_lock(&dm->it->lock);
	mi->opens++;
	mi->refs++;
	pthread_mutex_unlock(&dm->it->lock);
}

void czfs_mi_close(struct czfs_daemon *dm, struct czfs_minode *mi)
{
	pthread_mutex_lock(&dm->it->lock);
	mi->opens--;
	pthread_mutex_unlock(&dm->it->lock);
	czfs_mi_put(dm, mi);
}

void czfs_mi_hold(struct czfs_daemon *dm, struct czfs_minode *mi)
{
	pthread_mutex_lock(&dm->it->lock);
	mi->refs++;
	pthread_mutex_unlock(&dm->it->lock);
}

void czfs_mi_forget(struct czfs_daemon *dm, uint64_t ino, uint64_t n)
{
	struct czfs_itable *it = dm->it;
	struct czfs_minode *mi;

	pthread_mutex_lock(&it->lock);
	mi = find(it, ino);
	if (mi) {
		mi->refs++;
		mi->nlookup -= MIN(n, mi->nlookup);
	} else {
		struct czfs_lookup *c = czfs_lookups_find(&it->compact, ino);

		if (c)
			c->nlookup -= MIN(n, c->nlookup);
		if (c && !c->nlookup)
			czfs_lookups_del(&it->compact, c);
	}
	pthread_mutex_unlock(&it->lock);
	if (mi)
		czfs_mi_put(dm, mi);
}

void czfs_mi_attr(struct czfs_minode *mi, struct czfs_inode_info *ii)
{
	pthread_mutex_lock(&mi->lock);
	*ii = mi->ii;
	pthread_mutex_unlock(&mi->lock);
}

void czfs_mi_attr_shown(struct czfs_minode *mi, struct czfs_inode_info *ii)
{
	pthread_mutex_lock(&mi->lock);
	*ii = mi->ii;
	ii->blocks += mi->reserved;
	pthread_mutex_unlock(&mi->lock);
}

int czfs_mi_store(struct czfs_fs *fs, struct czfs_minode *mi,
		  const struct czfs_mi_link *link)
{
	struct czfs_inode_info ii = mi->ii;
	int err;

	if (ii.size > mi->stored_size) {	/* grown: up to linked data */
		uint64_t cbytes = czfs_inode_cluster_bytes(&ii);
		uint64_t first = link ? link->pending : mi->wb_pending, bound;

		for (unsigned i = 0; i < mi->ndirty; i++)
			first = MIN(first, mi->dirty[i]->idx * cbytes);
		bound = MAX(mi->stored_size, first);
		if (link)
			bound = MAX(bound, link->end);
		ii.size = MIN(ii.size, bound);
	}
	err = czfs_inode_store(fs, &ii);
	if (!err)
		mi->stored_size = ii.size;
	return err;
}

/* Append mi to the list (grown as needed), holding it: 0 or -ENOMEM. */
static int list_add(struct czfs_minode ***list, size_t *n, size_t *cap,
		    struct czfs_minode *mi)
{
	if (CZFS_GROW(*list, *n, *cap, 256))
		return -ENOMEM;
	mi->refs++;
	(*list)[(*n)++] = mi;
	return 0;
}

void czfs_mi_attrs_changed(struct czfs_daemon *dm, struct czfs_minode *mi)
{
	mi->ii_dirty = true;
	if (!mi->ndirty)	/* else on the list already (dirty clusters) */
		czfs_itable_note_dirty(dm, mi);
}

void czfs_itable_note_dirty(struct czfs_daemon *dm, struct czfs_minode *mi)
{
	struct czfs_itable *it = dm->it;

	pthread_mutex_lock(&it->lock);
	if (!mi->on_dirty) {	/* last: passes take the oldest first */
		mi->on_dirty = true;
		mi->dnext = NULL;
		mi->dprev = it->dirty_tail;
		if (it->dirty_tail)
			it->dirty_tail->dnext = mi;
		else
			it->dirty = mi;
		it->dirty_tail = mi;
	}
	pthread_mutex_unlock(&it->lock);
}

int czfs_itable_each_dirty(struct czfs_daemon *dm,
			   void (*fn)(struct czfs_daemon *dm,
				      struct czfs_minode *mi, void *arg),
			   void *arg)
{
	struct czfs_itable *it = dm->it;
	struct czfs_minode **list = NULL;
	size_t n = 0, cap = 0;
	int err = 0;

	pthread_mutex_lock(&it->lock);
	for (struct czfs_minode *mi = it->dirty; mi && !err; mi = mi->dnext)
		err = list_add(&list, &n, &cap, mi);
	pthread_mutex_unlock(&it->lock);
	for (size_t i = 0; i < n; i++) {
		struct czfs_minode *mi = list[i];

		if (!err)
			fn(dm, mi, arg);
		pthread_mutex_lock(&mi->lock);
		/* all stored, or dropped (an unlinked file's attributes are
		 * not stored) */
		if (!mi->ndirty && (!mi->ii_dirty || mi->unlinked)) {
			pthread_mutex_lock(&it->lock);
			dirty_unlink(it, mi);
			pthread_mutex_unlock(&it->lock);
		}
		pthread_mutex_unlock(&mi->lock);
		czfs_mi_put(dm, mi);
	}
	free(list);
	return err;
}


void czfs_mi_writer_begin(struct czfs_daemon *dm, struct czfs_minode *mi)
{
	pthread_mutex_lock(&mi->lock);
	mi->writers++;
	pthread_mutex_unlock(&mi->lock);
	/* no push starts now; wait for one that did (it holds no lock a
	 * writer's request holds: push.h) */
	pthread_mutex_lock(&dm->push_lock);
	while (atomic_load(&mi->pushing))
		pthread_cond_wait(&dm->push_cond, &dm->push_lock);
	pthread_mutex_unlock(&dm->push_lock);
}

void czfs_mi_writer_end(struct czfs_minode *mi)
{
	pthread_mutex_lock(&mi->lock);
	mi->writers--;
	pthread_mutex_unlock(&mi->lock);
}

bool czfs_mi_push_begin(struct czfs_minode *mi)
{
	if (mi->writers)
		return false;
	atomic_store(&mi->pushing, true);
	return true;
}

void czfs_mi_push_end(struct czfs_daemon *dm, struct czfs_minode *mi)
{
	pthread_mutex_lock(&dm->push_lock);
	atomic_store(&mi->pushing, false);
	pthread_cond_broadcast(&dm->push_cond);
	pthread_mutex_unlock(&dm->push_lock);
}
