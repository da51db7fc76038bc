// SPDX-License-Identifier: MIT
/*
 * The safe repairs, all in one transaction: nothing is changed in place,
 * and a crash before the commit leaves the image as it was.  In order:
 * the space map (leaked blocks freed, used blocks marked: before any tree
 * change can allocate), the inodes' counters, lost+found and the entries
 * of lost inodes, the checkpoint's counters.  A step that fails aborts the
 * whole: the transaction is then not committed.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>

#include "bdev.h"
#include "dir.h"
#include "fsck.h"
#include "super.h"
#include "util.h"

#define LOST_FOUND	"lost+found"

struct repair {
	struct fsck_ctx *c;
	struct czfs_fs *fs;
	uint64_t lf;			/* lost+found, 0 if unusable */
	bool lf_created;
	unsigned long attach;		/* inodes to link into it */
};

/* ---- space map -------------------------------------------------------- */

static int repair_space(struct repair *r)
{
	struct fsck_ctx *c = r->c;
	int err = 0;

	for (size_t i = 0; i < c->leaked.n; i++) {
		const struct fsck_range *x = fsck_vec_at(&c->leaked, struct fsck_range, i);

		czfs_smap_free(&r->fs->smap, x->start, x->n);
	}
	for (size_t i = 0; i < c->unmarked.n && !err; i++) {
		const struct fsck_range *x = fsck_vec_at(&c->unmarked, struct fsck_range, i);

		err = czfs_smap_set_used(&r->fs->smap, x->start, x->n);
	}
	/* the promise counted from the items, before a repair gives any back */
	if (c->fix_prealloc)
		czfs_smap_prealloc_add(&r->fs->smap, (int64_t)c->want_prealloc -
				       (int64_t)r->fs->cp.prealloc_blocks);
	return err;
}

/* ---- lost+found ------------------------------------------------------- */

static int create_lost_found(struct repair *r)
{
	struct czfs_fs *fs = r->fs;
	struct czfs_inode_info ii = { 0 }, root;
	uint64_t ino = MAX(fs->cp.next_ino, r->c->fix_next_ino ?
			   r->c->want_next_ino : 0);
	int err;

	clock_gettime(CLOCK_REALTIME, &ii.mtime);
	ii.ino = ino;
	ii.mode = S_IFDIR | 0700;
	ii.nlink = 2;
	ii.atime = ii.ctime = ii.btime = ii.mtime;
	ii.parent = CZFS_ROOT_INO;
	ii.cluster_shift = fs->sb.cluster_shift;
	ii.alg = fs->sb.default_alg;
	ii.level = fs->sb.default_level;
	err = czfs_inode_read(&fs->tree, CZFS_ROOT_INO, &root);
	if (!err)
		err = czfs_inode_insert(fs, &ii);
	if (!err)
		err = czfs_dir_link(fs, CZFS_ROOT_INO, LOST_FOUND,
				    strlen(LOST_FOUND), ino, DT_DIR);
	if (err)
		return err;
	root.nlink++;
	root.nentries++;
	root.size++;
	r->c->fix_next_ino = true;
	r->c->want_next_ino = ino + 1;
	r->lf = ino;
	r->lf_created = true;
	return czfs_inode_store(fs, &root);
}

/* lost+found, made if missing; r->lf stays 0 if the name is taken. */
static int find_lost_found(struct repair *r)
{
	struct czfs_inode_info ii;
	unsigned type;
	uint64_t ino;
	int err;

	err = czfs_dir_lookup(r->fs, CZFS_ROOT_INO, LOST_FOUND,
			      strlen(LOST_FOUND), &ino, &type);
	if (err == -ENOENT)
		return create_lost_found(r);
	if (!err)
		err = czfs_inode_read(&r->fs->tree, ino, &ii);
	if (err)
		return err;
	if (S_ISDIR(ii.mode))
		r->lf = ino;
	else
		fsck_error(r->c, "/" LOST_FOUND " is not a directory: %lu lost inodes stay lost",
			   r->attach);
	return 0;
}

/* ---- inodes ------------------------------------------------------------ */

static int apply_fix(struct repair *r, const struct fsck_fix *f)
{
	struct czfs_key okey = { CZFS_ORPHAN_OBJECTID, CZFS_ITEM_ORPHAN, f->ino };
	struct czfs_inode_info ii;
	struct czfs_stored delta = { 0 };
	int err = 0;

	if (f->what & FIX_UNORPHAN)
		err = czfs_btree_delete(&r->fs->tree, &okey);
	if (err || !(f->what & (FIX_NLINK | FIX_PARENT | FIX_NENTRIES | FIX_BLOCKS |
				FIX_TAIL)))
		return err;
	err = czfs_inode_read(&r->fs->tree, f->ino, &ii);
	if (!err && (f->what & FIX_TAIL))
		err = czfs_clusters_drop(r->fs, f->ino, f->tail_from, &delta);
	if (err)
		return err;
	if (f->what & FIX_NLINK)
		ii.nlink = f->nlink;
	if ((f->what & FIX_PARENT) && f->parent)
		ii.parent = f->parent;	/* 0: lost+found, set by attach() */
	if (f->what & FIX_NENTRIES)
		ii.nentries = f->nentries;
	if (f->what & FIX_BLOCKS) {
		ii.blocks = f->blocks;
		ii.inline_bytes = f->inline_bytes;
		ii.prealloc = f->prealloc;
	}
	czfs_inode_add_stored(&ii, &delta);
	return czfs_inode_store(r->fs, &ii);
}

/* Link a lost inode into lost+found as "#ino". */
static int attach(struct repair *r, const struct fsck_fix *f,
		  struct czfs_inode_info *lf)
{
	struct czfs_inode_info ii;
	char name[32];
	int err;

	snprintf(name, sizeof(name), "#%" PRIu64, f->ino);
	err = czfs_inode_read(&r->fs->tree, f->ino, &ii);
	if (!err)
		err = czfs_dir_link(r->fs, r->lf, name, strlen(name), f->ino,
				    czfs_mode_to_dtype(ii.mode));
	if (err == -EEXIST || err == -ENOSPC) {
		fsck_error(r->c, "inode %" PRIu64 ": cannot add /" LOST_FOUND "/%s: %s",
			   f->ino, name, strerror(-err));
		r->c->unfixed++;
		return 0;
	}
	if (err)
		return err;
	lf->nentries++;
	lf->size++;
	if (S_ISDIR(ii.mode)) {
		lf->nlink++;
		ii.parent = r->lf;
		err = czfs_inode_store(r->fs, &ii);
	}
	fsck_note(r->c, "inode %" PRIu64 " is now /" LOST_FOUND "/%s", f->ino, name);
	return err;
}

static int repair_inodes(struct repair *r)
{
	const struct fsck_vec *fixes = &r->c->fixes;

	for (size_t i = 0; i < fixes->n; i++) {
		int err = apply_fix(r, fsck_vec_at(fixes, struct fsck_fix, i));

		if (err)
			return err;
	}
	return 0;
}

/* After the inodes' own fixes: lost+found (and the root) counts on them. */
static int repair_attach(struct repair *r)
{
	const struct fsck_vec *fixes = &r->c->fixes;
	struct czfs_inode_info lf;
	int err = find_lost_found(r);

	if (!err && !r->lf) {
		r->c->unfixed += r->attach;	/* said by find_lost_found */
		return 0;
	}
	if (!err)
		err = czfs_inode_read(&r->fs->tree, r->lf, &lf);
	for (size_t i = 0; i < fixes->n && !err; i++) {
		const struct fsck_fix *f = fsck_vec_at(fixes, struct fsck_fix, i);

		if (f->what & FIX_ATTACH)
			err = attach(r, f, &lf);
	}
	return err ? err : czfs_inode_store(r->fs, &lf);
}

/* ---- the transaction ------------------------------------------------------ */

static void repair_counters(struct repair *r)
{
	struct czfs_cp_info *cp = &r->fs->cp;

	if (r->c->fix_inode_count)
		cp->inode_count = r->c->want_inode_count;
	if (r->lf_created)
		cp->inode_count++;
	if (r->c->fix_next_ino)
		cp->next_ino = MAX(cp->next_ino, r->c->want_next_ino);
}

static int repair_all(struct repair *r)
{
	const struct fsck_vec *fixes = &r->c->fixes;
	int err;

	for (size_t i = 0; i < fixes->n; i++)
		if (fsck_vec_at(fixes, struct fsck_fix, i)->what & FIX_ATTACH)
			r->attach++;
	err = czfs_fs_begin(r->fs);
	if (!err)	/* announced before the commit, as the write path does */
		err = czfs_fs_add_features(r->fs, r->c->incompat_used);
	if (!err)
		err = repair_space(r);
	if (!err)
		err = fsck_repair_packs(r->c);
	if (!err)
		err = repair_inodes(r);
	if (!err && r->attach)
		err = repair_attach(r);
	if (err)
		return err;
	repair_counters(r);
	return czfs_fs_commit(r->fs);
}

int fsck_repair(struct fsck_ctx *c)
{
	struct repair r = { .c = c, .fs = c->fs };
	int err;

	if (c->fixable <= c->fixed && !c->inline_upgrade)
		return 0;
	if (c->fs->rdonly || c->smap != &c->fs->smap) {
		fsck_error(c, "no repairs: the space map did not load");
		c->unfixed = c->fixable - c->fixed;
		return 0;
	}
	pthread_rwlock_wrlock(&c->fs->lock);
	err = repair_all(&r);
	pthread_rwlock_unlock(&c->fs->lock);
	if (err) {
		if (!c->o.silent)
			fprintf(stderr, "fsck.czfs: repair failed, the image is unchanged: %s\n",
				strerror(-err));
		c->unfixed = c->fixable - c->fixed;
		return err;
	}
	c->fixed = c->fixable - c->unfixed;
	return 0;
}

int fsck_upgrade_inline(struct fsck_ctx *c)
{
	int err;

	if (!c->o.repair || c->fs->rdonly ||
	    (c->fs->sb.feature_ro_compat & CZFS_FEATURE_RO_COMPAT_INLINE_BYTES) ||
	    c->errors || c->fixable > c->fixed || c->walk_incomplete)
		return 0;
	err = czfs_fs_add_ro_compat(c->fs, CZFS_FEATURE_RO_COMPAT_INLINE_BYTES);
	if (err)
		fprintf(stderr, "fsck.czfs: %s: cannot set the INLINE_BYTES feature: %s\n",
			c->o.image, strerror(-err));
	else if (!c->o.quiet)
		printf("fsck.czfs: %s: INLINE_BYTES feature set, inline_bytes of %lu inodes counted\n",
		       c->o.image, c->inline_upgrade);
	return err;
}

/* ---- the used count, before the map can load -------------------------- */

static int rewrite_cp(struct czfs_bdev *b, uint64_t used)
{
	struct czfs_sb_info sb;
	struct czfs_cp_info cp;
	struct timespec now;
	int err = czfs_super_read(b, &sb, NULL);

	if (!err)
		err = czfs_cp_load(b, &sb, &cp);
	if (err)
		return err;
	/* As a commit does: the new checkpoint goes to the other slot. */
	clock_gettime(CLOCK_REALTIME, &now);
	cp.generation++;
	cp.used_blocks = used;
	/* flushed before it is written: it names no blocks (COVERED) */
	cp.flags &= ~CZFS_CP_COVERED;
	cp.nr_covered = 0;
	cp.covered_crc = 0;
	cp.commit_time = now.tv_sec;
	cp.commit_nsec = (uint32_t)now.tv_nsec;
	err = czfs_bdev_flush(b);
	if (!err)
		err = czfs_cp_write(b, &sb, &cp);
	return err ? err : czfs_bdev_flush(b);
}

int fsck_rewrite_used(const char *image, uint64_t used)
{
	struct czfs_bdev *b;
	int err = czfs_bdev_open(image, 0, &b);

	if (err)
		return err;
	if (flock(czfs_bdev_fd(b), LOCK_EX | LOCK_NB))
		err = -EBUSY;
	else
		err = rewrite_cp(b, used);
	czfs_bdev_close(b);
	return err;
}
