// SPDX-License-Identifier: MIT
/* Readahead across files: storing the next files into the page cache. */
#include "config.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include "ccache.h"
#include "daemon.h"
#include "load.h"
#include "minode.h"
#include "ops.h"
#include "pagepool.h"
#include "push.h"
#include "util.h"
#include "writeback.h"

/* Inode numbers looked at after the one read; files stored at most. */
#define PUSH_SCAN	64
#define PUSH_FILES	32

/* The largest file stored whole: one read's worth, as the kernel asks. */
#define PUSH_FILE_MAX	(1u << 20)

/*
 * Store one file's data: its clusters from the cache (loaded here if
 * absent), handed to the kernel in one notification.  A cluster that holds
 * less than its part of the file (a hole) makes us leave the file to the
 * kernel's own reads.  Returns the bytes stored, 0 if left, or -errno.
 */
static long push_file(struct czfs_daemon *dm, const struct czfs_inode_info *ii)
{
	uint64_t cbytes = czfs_inode_cluster_bytes(ii);
	unsigned n = (unsigned)DIV_ROUND_UP(ii->size, cbytes);
	struct czfs_centry *ents[CZFS_BATCH_MAX];	/* n, checked below */
	struct fuse_bufvec *bv;
	long ret = 0;
	int err;

	if (n > CZFS_BATCH_MAX)
		return 0;
	bv = calloc(1, sizeof(*bv) + n * sizeof(bv->buf[0]));
	if (!bv)
		return -ENOMEM;
	err = czfs_load_get(dm, ii, NULL, 0, n, ents);
	if (err) {
		free(bv);
		return err;
	}
	bv->count = n;
	for (unsigned i = 0; i < n; i++) {
		uint64_t want = MIN(cbytes, ii->size - i * cbytes);

		if (ents[i]->page == CZFS_NO_PAGE || ents[i]->len < want)
			bv->count = 0;		/* a hole: the kernel reads it */
		if (!bv->count)
			break;
		bv->buf[i].mem = czfs_pool_addr(dm->pool, ents[i]->page);
		bv->buf[i].size = want;
	}
	if (bv->count && atomic_load(&dm->serving)) {
		err = fuse_lowlevel_notify_store(dm->se, ii->ino, 0, bv, 0);
		ret = err ? err : (long)ii->size;
	}
	/* the kernel holds the data now */
	for (unsigned i = 0; i < n; i++)
		czfs_ccache_put_used(dm->cc, ents[i]);
	free(bv);
	return ret;
}

/*
 * Whether mi is a file to store now, and if so mark it stored (so no
 * other thread stores it too) and pushing (so no writer changes it
 * meanwhile), and copy its attributes out.  A file whose next read would
 * update its access time is stored only where opens reach us: its
 * reader's open updates it then (ops_file.c), or, open already, the
 * store does.  Where opens are declined the kernel reads it itself, and
 * the READ does.
 */
static bool take(struct czfs_daemon *dm, struct czfs_minode *mi, uint64_t room,
		 time_t now, struct czfs_inode_info *ii)
{
	bool take, touched = false;

	pthread_mutex_lock(&mi->lock);
	take = !mi->pushed && S_ISREG(mi->ii.mode) && mi->ii.size &&
	       mi->ii.size <= MIN(room, PUSH_FILE_MAX) &&
	       (!dm->skip_opens || !czfs_fuse_atime_due(dm, &mi->ii, now)) &&
	       czfs_mi_push_begin(mi);
	if (take) {
		mi->pushed = true;
		touched = mi->readers && czfs_fuse_atime_touch(dm, mi);
		*ii = mi->ii;
	}
	pthread_mutex_unlock(&mi->lock);
	if (touched)
		czfs_writeback_notify_attrs(dm, mi->ino);
	return take;
}

/* Take one of the store slots, without waiting: false if none is free. */
static bool slot_take(struct czfs_daemon *dm)
{
	int n = atomic_load(&dm->push_slots);

	while (n > 0)
		if (atomic_compare_exchange_weak(&dm->push_slots, &n, n - 1))
			return true;
	return false;
}

/* ino was just read whole: the kernel holds its data, so a store started
 * after an earlier file's read must not load and store it again. */
static void mark_read(struct czfs_daemon *dm, uint64_t ino)
{
	struct czfs_minode *mi = czfs_mi_known(dm, ino);

	if (!mi)
		return;
	pthread_mutex_lock(&mi->lock);
	mi->pushed = true;
	pthread_mutex_unlock(&mi->lock);
	czfs_mi_put(dm, mi);
}

void czfs_push_after(struct czfs_daemon *dm, uint64_t ino)
{
	uint64_t budget = dm->opts.tree_readahead, done = 0;
	time_t now = time(NULL);
	unsigned files = 0;

	mark_read(dm, ino);
	if (!slot_take(dm))
		return;

	for (uint64_t j = ino + 1; j <= ino + PUSH_SCAN && done < budget &&
	     files < PUSH_FILES; j++) {
		struct czfs_minode *mi = czfs_mi_known(dm, j);
		struct czfs_inode_info ii;
		long got;

		if (!mi)
			continue;
		if (take(dm, mi, budget - done, now, &ii)) {
			got = push_file(dm, &ii);
			czfs_mi_push_end(dm, mi);
			if (got > 0) {
				done += (uint64_t)got;
				files++;
				atomic_fetch_add(&dm->st.push_files, 1);
				atomic_fetch_add(&dm->st.push_bytes, (uint64_t)got);
			} else if (got < 0) {
				atomic_fetch_add(&dm->st.push_errors, 1);
			}
		}
		czfs_mi_put(dm, mi);
	}
	atomic_fetch_add(&dm->push_slots, 1);
}
