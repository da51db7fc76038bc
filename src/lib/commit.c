// SPDX-License-Identifier: MIT
/* Transactions: copy-on-write changes made durable by a checkpoint. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bdev.h"
#include "fs.h"
#include "log.h"
#include "super.h"
#include "util.h"

int czfs_fs_begin(struct czfs_fs *fs)
{
	if (fs->rdonly || !fs->smap.max_blocks)
		return -EROFS;
	if (!fs->tree.trans_gen)
		czfs_btree_begin(&fs->tree, &fs->smap.alloc, fs->bdev,
				 fs->cp.generation + 1);
	return 0;
}

bool czfs_fs_changed(const struct czfs_fs *fs)
{
	return fs->tree.trans_gen != 0;
}

/* The image file must hold every block the new checkpoint counts. */
static int grow_image(struct czfs_fs *fs, const struct czfs_cp_info *cp)
{
	uint64_t need = cp->image_blocks * CZFS_BLOCK_SIZE;

	if (fs->bdev->size >= need)
		return 0;
	return fs->bdev->ops->resize(fs->bdev, need);
}

static void fill_checkpoint(struct czfs_fs *fs, struct czfs_cp_info *cp)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	cp->generation = fs->cp.generation + 1;
	cp->root_blkaddr = fs->tree.root_blkaddr;
	cp->root_generation = fs->tree.root_generation;
	cp->root_level = fs->tree.root_level;
	cp->commit_time = now.tv_sec;
	cp->commit_nsec = (uint32_t)now.tv_nsec;
}

int czfs_fs_write_super(struct czfs_fs *fs, const struct czfs_sb_info *sb)
{
	int err = czfs_super_write(fs->bdev, sb);

	if (!err)
		fs->sb = *sb;
	return err;
}

int czfs_fs_add_features(struct czfs_fs *fs, uint32_t incompat)
{
	struct czfs_sb_info sb = fs->sb;

	if (!(incompat & ~fs->sb.feature_incompat))
		return 0;
	sb.feature_incompat |= incompat;
	return czfs_fs_write_super(fs, &sb);
}

int czfs_fs_add_ro_compat(struct czfs_fs *fs, uint32_t ro_compat)
{
	struct czfs_sb_info sb = fs->sb;
	int err;

	if (!(ro_compat & ~fs->sb.feature_ro_compat))
		return 0;
	sb.feature_ro_compat |= ro_compat;
	err = czfs_fs_write_super(fs, &sb);
	return err ?: czfs_bdev_flush(fs->bdev);
}

int czfs_fs_commit(struct czfs_fs *fs)
{
	struct czfs_cp_info cp = fs->cp;
	int err;

	err = czfs_fs_begin(fs);
	if (!err)
		err = czfs_btree_commit(&fs->tree);
	if (!err)
		err = czfs_smap_write(&fs->smap, fs->bdev, fs->cp.generation + 1, &cp);
	if (!err)
		err = grow_image(fs, &cp);
	if (!err)
		err = czfs_bdev_flush(fs->bdev);
	if (!err) {
		fill_checkpoint(fs, &cp);
		err = czfs_cp_write(fs->bdev, &fs->sb, &cp);
	}
	if (!err)
		err = czfs_bdev_flush(fs->bdev);
	if (err) {
		czfs_err("commit of generation %llu failed: %s",
			 (unsigned long long)(fs->cp.generation + 1), strerror(-err));
		return err;
	}
	if (fs->discard)	/* punched before they are reused */
		czfs_smap_hold_freed(&fs->smap);
	czfs_smap_committed(&fs->smap);
	fs->cp = cp;
	if (!fs->defer_discard)
		czfs_fs_discard_held(fs);
	return 0;
}

int czfs_fs_commit_mount(struct czfs_fs *fs)
{
	fs->cp.mount_count++;
	fs->cp.flags &= ~CZFS_CP_CLEAN_UMOUNT;
	return czfs_fs_commit(fs);
}

int czfs_fs_commit_unmount(struct czfs_fs *fs)
{
	int err;

	fs->cp.flags |= CZFS_CP_CLEAN_UMOUNT;
	err = czfs_fs_commit(fs);
	fs->cp.flags &= ~CZFS_CP_CLEAN_UMOUNT;
	return err;
}
