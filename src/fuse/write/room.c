// SPDX-License-Identifier: MIT
/* Room for data: reservations, promised clusters, writeback's blocks (room.h). */
#include "config.h"

#include "bdev.h"
#include "cluster.h"
#include "daemon.h"
#include "discard.h"
#include "fs.h"
#include "inode.h"
#include "load.h"
#include "log.h"
#include "room.h"
#include "util.h"

/* Kept free for what a commit itself takes; max as the space map has it. */
static uint64_t margin(uint64_t max)
{
	return MAX(256u, max / 100);
}

uint64_t czfs_room_free(struct czfs_daemon *dm)
{
	uint64_t max, used, taken;

	czfs_smap_usage(&dm->fs->smap, &max, &used);
	taken = used + atomic_load(&dm->reserved_blocks) + margin(max);
	return taken < max ? max - taken : 0;
}

void czfs_room_usage(struct czfs_daemon *dm, uint64_t *max, uint64_t *used)
{
	czfs_smap_usage(&dm->fs->smap, max, used);
	*used = MIN(*max, *used + atomic_load(&dm->reserved_blocks));
}

int czfs_room_reserve(struct czfs_daemon *dm, uint64_t blocks)
{
	unsigned long long old = atomic_load(&dm->reserved_blocks);

	do {
		uint64_t max, used;

		czfs_smap_usage(&dm->fs->smap, &max, &used);
		if (used + old + blocks + margin(max) > max)
			return -ENOSPC;
	} while (!atomic_compare_exchange_weak(&dm->reserved_blocks, &old,
					       old + blocks));
	return 0;
}

void czfs_room_unreserve(struct czfs_daemon *dm, uint64_t blocks)
{
	atomic_fetch_sub(&dm->reserved_blocks, blocks);
}

bool czfs_room_promised(struct czfs_daemon *dm,
			const struct czfs_inode_info *ii, uint64_t idx)
{
	uint8_t inl[CZFS_INLINE_MAX];
	struct czfs_cluster_info ci;
	int err;

	if (!ii->prealloc)
		return false;
	err = czfs_load_items(dm, ii, idx, 1, &ci, inl);
	return !err && ci.prealloc;
}

void czfs_room_take_begin(struct czfs_daemon *dm)
{
	pthread_rwlock_rdlock(&dm->take_lock);
}

void czfs_room_take_end(struct czfs_daemon *dm)
{
	pthread_rwlock_unlock(&dm->take_lock);
}

void czfs_room_commit_begin(struct czfs_daemon *dm)
{
	pthread_rwlock_wrlock(&dm->take_lock);
}

void czfs_room_commit_end(struct czfs_daemon *dm)
{
	pthread_rwlock_unlock(&dm->take_lock);
}

int czfs_room_alloc(struct czfs_daemon *dm, unsigned n, uint64_t *blk)
{
	return czfs_smap_alloc(&dm->fs->smap, n, blk);
}

int czfs_room_write(struct czfs_daemon *dm, const void *buf, size_t len,
		    unsigned n, uint64_t *blk)
{
	int err = czfs_room_alloc(dm, n, blk);

	if (err)
		return err;
	err = czfs_bdev_write(dm->fs->bdev, buf, len, *blk * CZFS_BLOCK_SIZE);
	if (err)
		czfs_room_give_back(dm, *blk, n);
	return err;
}

void czfs_room_give_back(struct czfs_daemon *dm, uint64_t blk, uint64_t n)
{
	czfs_smap_free(&dm->fs->smap, blk, n);
}

/* Steps of a raised limit: a quarter of it, at least 64 MiB. */
#define GROW_MIN_BLOCKS	((64u << 20) / CZFS_BLOCK_SIZE)

/*
 * The blocks an image that may grow can reach on its host: what the file
 * takes there and the host's free space, less a keep for the host's own
 * use and what the image takes there beyond its used blocks (freed,
 * not punched yet): 0, or -ENOSPC.
 */
static int growable(struct czfs_daemon *dm, uint64_t *reach)
{
	uint64_t bytes, keep;

	if (!(dm->fs->sb.feature_compat & CZFS_FEATURE_COMPAT_GROW) ||
	    dm->opts.ro || czfs_bdev_host_room(dm->fs->bdev, &bytes))
		return -ENOSPC;
	bytes /= CZFS_BLOCK_SIZE;
	keep = 256 + bytes / 64;
	*reach = bytes > keep ? bytes - keep : 0;
	return 0;
}

uint64_t czfs_room_beyond(struct czfs_daemon *dm)
{
	uint64_t max, used, reach;

	if (growable(dm, &reach))
		return 0;
	czfs_smap_usage(&dm->fs->smap, &max, &used);
	return reach > max ? reach - max : 0;
}

int czfs_room_grow(struct czfs_daemon *dm, uint64_t need)
{
	struct czfs_fs *fs = dm->fs;
	uint64_t max, used, reach, want;
	int err = -ENOSPC;

	if (growable(dm, &reach))
		return -ENOSPC;
	pthread_mutex_lock(&dm->grow_lock);
	if (czfs_room_free(dm) >= need) {	/* another thread raised it */
		err = 0;
		goto out;
	}
	czfs_smap_usage(&fs->smap, &max, &used);
	want = MIN(max + MAX(MAX(max / 4, GROW_MIN_BLOCKS), need + margin(max)),
		   reach);
	if (want <= max)
		goto out;
	czfs_room_commit_begin(dm);
	pthread_rwlock_wrlock(&fs->lock);
	err = czfs_fs_grow(fs, want);
	pthread_rwlock_unlock(&fs->lock);
	czfs_room_commit_end(dm);
	if (!err) {
		atomic_fetch_add(&dm->st.grows, 1);
		err = czfs_room_free(dm) >= need ? 0 : -ENOSPC;
	} else {
		czfs_warn("cannot raise the size limit to %llu blocks: %s",
			  (unsigned long long)want, strerror(-err));
		err = -ENOSPC;
	}
out:
	pthread_mutex_unlock(&dm->grow_lock);
	return err;
}

int czfs_room_reclaim(struct czfs_daemon *dm)
{
	int err;

	if (!czfs_smap_freed_pending(&dm->fs->smap)) {
		/* free, but a discard pass holds them for its punch */
		if (!czfs_smap_held(&dm->fs->smap))
			return czfs_room_grow(dm, 1);
		czfs_fs_discard_freed(dm->fs, 1);
		return 0;
	}
	czfs_room_commit_begin(dm);
	pthread_rwlock_wrlock(&dm->fs->lock);
	err = czfs_fs_commit(dm->fs);
	pthread_rwlock_unlock(&dm->fs->lock);
	czfs_room_commit_end(dm);
	return err;	/* the freed blocks are usable, unpunched */
}
