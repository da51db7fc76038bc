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

/* Name the blocks cp brings into use, when they fit (0 either way). */
static int cover(struct czfs_fs *fs, struct czfs_cp_info *cp)
{
	int n = czfs_smap_fresh(&fs->smap, cp->covered,
				ARRAY_SIZE(cp->covered) - cp->nr_smap_index,
				fs->cover_blocks);
	int err;

	if (n <= 0)		/* too many, or none: nothing to save */
		return 0;
	cp->nr_covered = (unsigned)n;
	/* known as they were written, or read back */
	err = fs->bdev->written ? czfs_blockcrc_covered(fs->bdev->written,
							cp->covered, cp->nr_covered,
							&cp->covered_crc) : -ENOENT;
	if (err)
		err = czfs_cp_covered_crc(fs->bdev, cp, &cp->covered_crc);
	if (err) {
		cp->nr_covered = 0;
		return err;
	}
	cp->flags |= CZFS_CP_COVERED;
	return 0;
}

static void fill_checkpoint(struct czfs_fs *fs, struct czfs_cp_info *cp)
{
	struct timespec now = { .tv_sec = fs->fixed_time };

	if (!fs->fixed_time)
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

	fs->super_unflushed = true;	/* even a failed write may land */
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

int czfs_fs_cover(struct czfs_fs *fs, uint64_t blocks)
{
	fs->cover_blocks = blocks;
	if (!blocks || fs->bdev->written)
		return 0;
	/* room for the blocks a commit names and those written meanwhile
	 * that it will not (freed again, checkpoint slots) */
	fs->bdev->written = czfs_blockcrc_new((unsigned)MIN(blocks, 1u << 20) * 2);
	return fs->bdev->written ? 0 : -ENOMEM;
}

int czfs_fs_commit(struct czfs_fs *fs)
{
	struct czfs_cp_info cp = fs->cp;
	int err;

	cp.flags &= ~CZFS_CP_COVERED;
	cp.nr_covered = 0;
	cp.covered_crc = 0;
	err = czfs_fs_begin(fs);
	if (!err)
		err = czfs_btree_commit(&fs->tree);
	if (!err)
		err = czfs_smap_write(&fs->smap, fs->bdev, fs->cp.generation + 1, &cp);
	if (!err)
		err = grow_image(fs, &cp);
	/* Small enough, the checkpoint names what it commits and one flush
	 * does (czfs_fs.h, COVERED); else flush what it names before it.
	 * Not after a superblock write: not a block it could name.  Not at
	 * a clean unmount: an image at rest never hangs on one (a block of
	 * it damaged later would make the reader take the one before, whose
	 * freed blocks may have been reused since).  A file grown meanwhile
	 * needs nothing more: the flush makes the size durable with the
	 * blocks, and a block past a size that was not is a block that
	 * cannot be read, which makes the checkpoint refused. */
	if (!err && fs->cover_blocks && !fs->super_unflushed &&
	    !(cp.flags & CZFS_CP_CLEAN_UMOUNT))
		err = cover(fs, &cp);
	if (!err && !(cp.flags & CZFS_CP_COVERED))
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
	fs->super_unflushed = false;
	if (fs->discard)	/* punched before they are reused */
		czfs_smap_note_freed(&fs->smap);
	czfs_smap_committed(&fs->smap);
	if (fs->bdev->written)	/* the next commit's blocks from now */
		czfs_blockcrc_reset(fs->bdev->written);
	fs->cp = cp;
	atomic_store_explicit(&fs->cp_image_blocks, cp.image_blocks,
			      memory_order_release);
	if (!fs->defer_discard)
		czfs_fs_discard_freed(fs, 1);
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
