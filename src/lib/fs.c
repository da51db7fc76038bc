// SPDX-License-Identifier: MIT
/* Opening an image: every structure checked before anything is served. */
#include "config.h"

#include <stdlib.h>

#include "bdev.h"
#include "fs.h"
#include "imagelock.h"
#include "inode.h"
#include "log.h"
#include "util.h"

#define CZFS_DEFAULT_NODE_CACHE	16384	/* nodes: 64 MiB */

static int fs_read_super(struct czfs_fs *fs)
{
	bool ro_only = false;
	int err;

	if (fs->bdev->size < CZFS_BLOCK_SIZE * CZFS_FIRST_DATA_BLKADDR) {
		czfs_err("image too small (%llu bytes) to be a czfs image",
			 (unsigned long long)fs->bdev->size);
		return -EINVAL;
	}
	err = czfs_super_read(fs->bdev, &fs->sb, &ro_only);
	if (!err && ro_only && !fs->rdonly) {
		czfs_err("image has read-only compatible features this version "
			 "does not know: open it read-only");
		err = -EROFS;
	}
	return err;
}

/* The image must hold every block the checkpoint says it has. */
static int fs_check_size(struct czfs_fs *fs)
{
	uint64_t need = fs->cp.image_blocks * CZFS_BLOCK_SIZE;

	if (fs->bdev->size >= need)
		return 0;
	czfs_err("image truncated: %llu bytes, the checkpoint needs %llu",
		 (unsigned long long)fs->bdev->size, (unsigned long long)need);
	return -EFSCORRUPTED;
}

static int fs_open_tree(struct czfs_fs *fs, unsigned cache_nodes)
{
	struct czfs_node *root;
	int err;

	err = czfs_nodecache_create(fs->bdev, fs->cp.max_blocks,
				    cache_nodes ?: CZFS_DEFAULT_NODE_CACHE,
				    &fs->nc);
	if (err)
		return err;
	/* nothing changes a read-only image under us (see the contract) */
	if (fs->rdonly)
		czfs_nodecache_set_readahead(fs->nc, CZFS_NODE_READAHEAD);
	fs->tree = (struct czfs_btree){
		.nc = fs->nc,
		.root_blkaddr = fs->cp.root_blkaddr,
		.root_generation = fs->cp.root_generation,
		.root_level = fs->cp.root_level,
		.max_blocks = fs->cp.max_blocks,
		.bdev = fs->bdev,
	};
	err = czfs_node_get(fs->nc, fs->cp.root_blkaddr, fs->cp.root_generation,
			    (int)fs->cp.root_level, &root);
	if (err)
		return err;
	czfs_node_put(fs->nc, root);
	return 0;
}

static int fs_check_root(struct czfs_fs *fs)
{
	struct czfs_inode_info root;
	int err;

	err = czfs_inode_read(&fs->tree, CZFS_ROOT_INO, &root);
	if (err == -ENOENT) {
		czfs_err("root directory missing");
		return -EFSCORRUPTED;
	}
	if (!err && !S_ISDIR(root.mode)) {
		czfs_err("root inode is not a directory");
		err = -EFSCORRUPTED;
	}
	return err;
}

/* One writer or many readers per image, across processes (fsck too). */
static int fs_lock_image(struct czfs_fs *fs, unsigned flags)
{
	int fd = czfs_bdev_fd(fs->bdev);
	bool shared = fs->rdonly && !(flags & CZFS_OPEN_EXCL);

	if (fd < 0)
		return 0;
	return czfs_image_lock(fd, shared, CZFS_LOCK_WAIT_SECONDS);
}

int czfs_fs_open_bdev(struct czfs_bdev *bdev, const struct czfs_fs_opts *opts,
		      struct czfs_fs **out)
{
	struct czfs_fs *fs;
	int err;

	fs = calloc(1, sizeof(*fs));
	if (!fs) {
		czfs_bdev_close(bdev);
		return -ENOMEM;
	}
	fs->bdev = bdev;
	fs->rdonly = opts->flags & CZFS_OPEN_RDONLY;
	fs->discard = !fs->rdonly && (opts->flags & CZFS_OPEN_DISCARD);
	fs->fixed_time = opts->fixed_time;
	pthread_rwlock_init(&fs->lock, NULL);
	pthread_mutex_init(&fs->discard_lock, NULL);
	err = fs_lock_image(fs, opts->flags);
	if (!err)
		err = fs_read_super(fs);
	if (!err)
		err = czfs_cp_load(bdev, &fs->sb, &fs->cp);
	if (!err) {
		fs->cp_image_blocks = fs->cp.image_blocks;
		err = fs_check_size(fs);
	}
	if (!err)
		err = fs_open_tree(fs, opts->node_cache_nodes);
	if (!err && !(fs->rdonly && (opts->flags & CZFS_OPEN_NOSMAP)))
		err = czfs_smap_load(&fs->smap, bdev, &fs->cp);
	if (!err)
		err = fs_check_root(fs);
	if (err) {
		czfs_fs_close(fs);
		return err;
	}
	czfs_fs_discard_free(fs);
	*out = fs;
	return 0;
}

unsigned czfs_fs_bdev_flags(unsigned open_flags)
{
	unsigned flags = 0;

	if (open_flags & CZFS_OPEN_RDONLY)
		flags |= CZFS_BDEV_RDONLY;
	if (open_flags & CZFS_OPEN_DIRECT)
		flags |= CZFS_BDEV_DIRECT;
	if (open_flags & CZFS_OPEN_DIRECT_DATA)
		flags |= CZFS_BDEV_DIRECT_DATA;
	return flags;
}

int czfs_fs_open(const char *path, const struct czfs_fs_opts *opts,
		 struct czfs_fs **out)
{
	struct czfs_bdev *bdev;
	int err = czfs_bdev_open(path, czfs_fs_bdev_flags(opts->flags), &bdev);

	if (!err && opts->log_writes) {
		err = czfs_bdev_log_create(bdev, opts->log_writes, &bdev);
		if (err)
			path = opts->log_writes;	/* the one the message names */
	}
	if (err) {
		czfs_err("%s: %s", path, strerror(-err));
		return err;
	}
	return czfs_fs_open_bdev(bdev, opts, out);
}

void czfs_fs_close(struct czfs_fs *fs)
{
	if (!fs)
		return;
	czfs_smap_destroy(&fs->smap);
	czfs_nodecache_destroy(fs->nc);
	if (fs->bdev) {
		czfs_blockcrc_free(fs->bdev->written);
		fs->bdev->written = NULL;
	}
	czfs_bdev_close(fs->bdev);
	pthread_rwlock_destroy(&fs->lock);
	pthread_mutex_destroy(&fs->discard_lock);
	free(fs);
}
