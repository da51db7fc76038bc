/* SPDX-License-Identifier: MIT */
/*
 * Giving free blocks back to the host file (fallocate PUNCH_HOLE), so the
 * image takes on the host about what it holds, as a thin-provisioned disk
 * that is trimmed.
 *
 * Online, a commit punches the blocks its checkpoint freed, once that
 * checkpoint is durable: before, the previous checkpoint may still need
 * them.  Those blocks are free in the current map and used in the
 * committed one, so no allocation can take them until
 * czfs_smap_committed(); they are punched without the map's lock.  A crash
 * before the punch loses nothing: the blocks are free on disk, merely not
 * given back (fsck.czfs --trim gives them back).
 */
#ifndef CZFS_DISCARD_H
#define CZFS_DISCARD_H

#include <stdint.h>

struct czfs_bdev;
struct czfs_fs;
struct czfs_smap;

/* What a discard pass gave back. */
struct czfs_discard_stats {
	uint64_t blocks;		/* blocks punched */
	uint64_t ranges;		/* punch requests */
};

/*
 * Punch the blocks freed since the last czfs_smap_committed() (free in
 * cur, used in committed), adjacent ones in one request.  Call after the
 * new checkpoint is durable and before czfs_smap_committed().  Adds to
 * *st.  Returns 0 or the first punch error (-EOPNOTSUPP: the host cannot
 * punch holes); the pass stops at an error.
 */
int czfs_smap_discard_freed(struct czfs_smap *sm, struct czfs_bdev *bdev,
			    struct czfs_discard_stats *st);

/*
 * Punch every range free in both maps inside the device (offline trim of
 * an image: nothing may allocate meanwhile).  Adds to *st.  0 or the first
 * punch error.
 */
int czfs_smap_discard_all(struct czfs_smap *sm, struct czfs_bdev *bdev,
			  struct czfs_discard_stats *st);

/*
 * The commit's step: czfs_smap_discard_freed() when fs->discard is on.  A
 * host that cannot punch holes is found out once: a log line, and discard
 * stays off for this open image.  Never fails the commit.
 */
void czfs_fs_discard_freed(struct czfs_fs *fs);

/*
 * At a writable open with discard: punch every free range, so blocks a
 * crash left unpunched (freed by the last checkpoint, killed before its
 * punch) go back too.  Nothing allocates yet.  As czfs_fs_discard_freed
 * for errors.
 */
void czfs_fs_discard_free(struct czfs_fs *fs);

#endif /* CZFS_DISCARD_H */
