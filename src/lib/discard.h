/* SPDX-License-Identifier: MIT */
/*
 * Giving free blocks back to the host file (fallocate PUNCH_HOLE), so the
 * image takes on the host about what it holds, as a thin-provisioned disk
 * that is trimmed.
 *
 * Online, the blocks a checkpoint freed are punched once it is durable:
 * before, the previous checkpoint may still need them.  The commit notes
 * them unpunched (czfs_smap_note_freed), allocatable at once: a block
 * reused before the next discard pass is never punched, so a database
 * that frees and takes the same blocks at every transaction costs the
 * host neither punches nor allocations.  A discard pass holds the ones
 * still free (no allocation takes them), punches and then releases them,
 * chunk by chunk, without the map's lock or the fs's: the daemon runs it
 * after it lets go of fs->lock, so readers and writers never wait for the
 * host's punches.
 * One pass runs at a time (fs->discard_lock): a block one pass released
 * and an allocation reused is never punched by another.  A crash before
 * the punch loses nothing: the blocks are free on disk, merely not given
 * back (the next writable open, or fsck.czfs --trim, gives them back).
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
 * Punch the unpunched blocks still free (czfs_smap_note_freed) that lie in
 * runs of min_run blocks or more (1: all; shorter runs stay unpunched,
 * allocatable), adjacent ones in one request, holding them meanwhile, and
 * release them for allocation, a bitmap chunk at a time.
 * With bdev NULL, or after a punch error, they are released unpunched.
 * The caller runs one pass at a time.  Adds to *st.  Returns 0 or the
 * first punch error (-EOPNOTSUPP: the host cannot punch holes).
 */
int czfs_smap_discard_freed(struct czfs_smap *sm, struct czfs_bdev *bdev,
			    unsigned min_run, struct czfs_discard_stats *st);

/*
 * Punch every range free in both maps inside the device (offline trim of
 * an image: nothing may allocate meanwhile).  Adds to *st.  0 or the first
 * punch error.
 */
int czfs_smap_discard_all(struct czfs_smap *sm, struct czfs_bdev *bdev,
			  struct czfs_discard_stats *st);

/*
 * The unpunched free blocks punched, those in runs of min_run blocks or
 * more (when fs->discard is on): a commit's last step (all of them), run
 * by czfs_fs_commit itself unless fs->defer_discard, when its caller
 * runs it after fs->lock, and may leave the short runs to the writes to
 * come.  A host that cannot punch holes is found out once: a log line,
 * and discard stays off for this open image.  Never fails.
 */
void czfs_fs_discard_freed(struct czfs_fs *fs, unsigned min_run);

/*
 * At a writable open with discard: punch every free range, so blocks a
 * crash left unpunched (freed by the last checkpoint, killed before its
 * punch) go back too.  Nothing allocates yet.  As czfs_fs_discard_freed
 * for errors.
 */
void czfs_fs_discard_free(struct czfs_fs *fs);

#endif /* CZFS_DISCARD_H */
