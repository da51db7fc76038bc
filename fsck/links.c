// SPDX-License-Identifier: MIT
/*
 * What needs every item at once: who names whom.  Entries are resolved to
 * inodes (link counts, subdirectories), the tree is walked from the root
 * (reachability), and each inode's counters are compared with what was
 * found.  Repairs are planned as fsck_fix records, one per inode.
 *
 * A directory must be named by exactly one entry (the root by none), and
 * its parent field must be that entry's directory; with every directory
 * reachable from the root, that rules out cycles.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "fsck.h"
#include "inode.h"
#include "util.h"

/* ---- entries to inodes ---------------------------------------------------- */

static void resolve_edge(struct fsck_ctx *c, const struct fsck_edge *e)
{
	struct fsck_inode *child = fsck_inode_find(c, e->ino);
	struct fsck_inode *dir = fsck_inode_find(c, e->dir);

	if (!child) {
		fsck_error(c, "directory %" PRIu64 ": an entry names inode %"
			   PRIu64 ", which does not exist", e->dir, e->ino);
		return;
	}
	if (child->flags & FI_BAD)
		return;
	if (e->type != czfs_mode_to_dtype(child->mode))
		fsck_error(c, "directory %" PRIu64 ": entry for inode %" PRIu64
			   " has type %u, the inode is of type %u", e->dir,
			   e->ino, e->type, czfs_mode_to_dtype(child->mode));
	if (e->ino == CZFS_ROOT_INO)
		fsck_error(c, "directory %" PRIu64 ": an entry names the root directory",
			   e->dir);
	child->links++;
	if (!child->named_by)
		child->named_by = e->dir;
	if (S_ISDIR(child->mode) && dir)
		dir->subdirs++;
}

/* ---- reachability --------------------------------------------------------- */

/* The first edge of dir (edges are in directory order), or nedges. */
static size_t first_edge(const struct fsck_ctx *c, uint64_t dir)
{
	const struct fsck_edge *e = c->edges.v;
	size_t lo = 0, hi = c->edges.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (e[mid].dir < dir)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Mark everything reachable from start (a reached directory). */
static int reach_from(struct fsck_ctx *c, uint64_t start)
{
	struct fsck_vec queue = FSCK_VEC(uint64_t);
	const struct fsck_edge *e = c->edges.v;
	int err = fsck_vec_push(&queue, &start) ? 0 : -ENOMEM;

	for (size_t q = 0; !err && q < queue.n; q++) {
		uint64_t dir = *fsck_vec_at(&queue, uint64_t, q);

		for (size_t i = first_edge(c, dir); i < c->edges.n &&
		     e[i].dir == dir; i++) {
			struct fsck_inode *fi = fsck_inode_find(c, e[i].ino);

			if (!fi || (fi->flags & FI_REACHED))
				continue;
			fi->flags |= FI_REACHED;
			if (S_ISDIR(fi->mode) && !fsck_vec_push(&queue, &fi->ino)) {
				err = -ENOMEM;
				break;
			}
		}
	}
	fsck_vec_free(&queue);
	return err;
}

/* ---- per-inode checks ------------------------------------------------------ */

/* The fix record f, for inode fi. */
static struct fsck_fix *fix_for(struct fsck_fix *f, const struct fsck_inode *fi)
{
	if (!f->what) {
		f->ino = fi->ino;
		f->is_dir = S_ISDIR(fi->mode);
	}
	return f;
}

/* An inode no entry names: an orphan (unlinked while open) or lost. */
static void check_unnamed(struct fsck_ctx *c, struct fsck_inode *fi,
			  struct fsck_fix *f)
{
	if (fi->ino == CZFS_ROOT_INO)
		return;
	if (!fi->nlink && (fi->flags & FI_ORPHAN)) {
		fsck_note(c, "inode %" PRIu64 " is an orphan (unlinked while open): its space is freed when it is released",
			  fi->ino);
		return;
	}
	fsck_fixable(c, "inode %" PRIu64 " (%s) is not reachable from the root: into /lost+found",
		     fi->ino, S_ISDIR(fi->mode) ? "directory" : "file");
	fix_for(f, fi)->what |= FIX_ATTACH;
	fi->flags |= FI_ATTACH;
	if (fi->flags & FI_ORPHAN)
		f->what |= FIX_UNORPHAN;
}

/* The parent a directory's field should hold: 0 = lost+found. */
static void check_parent(struct fsck_ctx *c, struct fsck_inode *fi,
			 struct fsck_fix *f)
{
	uint64_t want = fi->ino == CZFS_ROOT_INO ? CZFS_ROOT_INO : fi->named_by;

	if (f->what & FIX_ATTACH) {
		f->what |= FIX_PARENT;
		f->parent = 0;
		return;
	}
	if (fi->parent == want)
		return;
	fsck_fixable(c, "directory %" PRIu64 ": parent %" PRIu64
		     ", but directory %" PRIu64 " names it",
		     fi->ino, fi->parent, want);
	fix_for(f, fi)->what |= FIX_PARENT;
	f->parent = want;
}

static void check_dir(struct fsck_ctx *c, struct fsck_inode *fi,
		      struct fsck_fix *f)
{
	uint32_t want_nlink = 2 + fi->subdirs;
	bool orphan = !fi->links && !(f->what & FIX_ATTACH) &&
		      fi->ino != CZFS_ROOT_INO;

	if (fi->links > 1)
		fsck_error(c, "directory %" PRIu64 " has %u names (a directory has one)",
			   fi->ino, fi->links);
	else if (!orphan)
		check_parent(c, fi, f);
	if (fi->flags & FI_BAD_ENTRIES)
		return;		/* its entries are not all known */
	if (fi->entries != fi->nentries) {
		fsck_fixable(c, "directory %" PRIu64 ": nentries %" PRIu64
			     ", it holds %" PRIu64, fi->ino, fi->nentries,
			     fi->entries);
		fix_for(f, fi)->what |= FIX_NENTRIES;
		f->nentries = fi->entries;
	}
	if (!orphan && fi->nlink != want_nlink) {
		fsck_fixable(c, "directory %" PRIu64 ": link count %u, expected %u (2 + %u subdirectories)",
			     fi->ino, fi->nlink, want_nlink, fi->subdirs);
		fix_for(f, fi)->what |= FIX_NLINK;
		f->nlink = want_nlink;
	}
}

static void check_nondir(struct fsck_ctx *c, struct fsck_inode *fi,
			 struct fsck_fix *f)
{
	uint32_t want = (f->what & FIX_ATTACH) ? 1 : fi->links;

	if (!fi->links && !(f->what & FIX_ATTACH))
		return;		/* an orphan keeps nlink 0 */
	if (fi->nlink != want) {
		fsck_fixable(c, "inode %" PRIu64 ": link count %u, %u %s name it",
			     fi->ino, fi->nlink, fi->links,
			     fi->links == 1 ? "entry" : "entries");
		fix_for(f, fi)->what |= FIX_NLINK;
		f->nlink = want;
	}
}

/* Dropping the clusters past the end frees their blocks: only when no
 * other owner can hold them (no shared or unknown references). */
static void check_tail(struct fsck_ctx *c, struct fsck_inode *fi,
		       struct fsck_fix *f)
{
	if (!(fi->flags & FI_BAD_CLUSTER) && !c->refs_shared &&
	    !c->refs_incomplete) {
		fix_for(f, fi)->what |= FIX_TAIL;
		f->tail_from = fi->tail_from;
		return;
	}
	fsck_note(c, "inode %" PRIu64 ": clusters past the end not dropped: some blocks are damaged, shared or of unknown owner",
		  fi->ino);
	c->unfixed += fi->tail_count;
}

/*
 * The blocks and prealloc fields, and inline_bytes where the image says it
 * is kept.  An image made before RO_COMPAT_INLINE_BYTES may hold anything
 * there (0, or what a newer daemon counted since): not a problem, but -y
 * sets the fields (and then the feature, fsck_upgrade_inline).
 */
static void check_stored(struct fsck_ctx *c, struct fsck_inode *fi,
			 struct fsck_fix *f)
{
	bool inl = c->fs->sb.feature_ro_compat &
		   CZFS_FEATURE_RO_COMPAT_INLINE_BYTES;
	bool inl_bad = fi->inline_bytes != fi->inline_found;
	bool upgrade = !inl && inl_bad && c->o.repair;
	/* a damaged cluster item may have been one of its promises */
	bool pre_bad = fi->prealloc != fi->prealloc_found &&
		       !(fi->flags & FI_BAD_CLUSTER);

	if (fi->blocks != fi->blocks_found)
		fsck_fixable(c, "inode %" PRIu64 ": blocks %" PRIu64 ", it stores %" PRIu64,
			     fi->ino, fi->blocks, fi->blocks_found);
	if (pre_bad)
		fsck_fixable(c, "inode %" PRIu64 ": prealloc %" PRIu64 ", its reserved clusters promise %" PRIu64,
			     fi->ino, fi->prealloc, fi->prealloc_found);
	if (inl && inl_bad)
		fsck_fixable(c, "inode %" PRIu64 ": inline_bytes %" PRIu64 ", it stores %" PRIu64,
			     fi->ino, fi->inline_bytes, fi->inline_found);
	if (fi->blocks == fi->blocks_found && !(inl && inl_bad) && !upgrade &&
	    !pre_bad)
		return;
	c->inline_upgrade += upgrade;
	fix_for(f, fi)->what |= FIX_BLOCKS;
	f->blocks = fi->blocks_found;
	f->prealloc = pre_bad ? fi->prealloc_found : fi->prealloc;
	f->inline_bytes = inl || upgrade ? fi->inline_found : fi->inline_bytes;
}

static int check_inode(struct fsck_ctx *c, struct fsck_inode *fi)
{
	struct fsck_fix f = { 0 };

	if (fi->flags & FI_BAD)
		return 0;
	if (!fi->links)
		check_unnamed(c, fi, &f);
	else if (fi->flags & FI_ORPHAN) {
		fsck_fixable(c, "inode %" PRIu64 ": orphan item, but it is linked",
			     fi->ino);
		fix_for(&f, fi)->what |= FIX_UNORPHAN;
	}
	if (S_ISDIR(fi->mode))
		check_dir(c, fi, &f);
	else
		check_nondir(c, fi, &f);
	if (fi->flags & FI_TAIL)
		check_tail(c, fi, &f);
	check_stored(c, fi, &f);
	if (f.what && !fsck_vec_push(&c->fixes, &f))
		return -ENOMEM;
	return 0;
}

/* ---- orphan items --------------------------------------------------------- */

static int check_orphans(struct fsck_ctx *c)
{
	struct fsck_fix f = { .what = FIX_UNORPHAN };

	for (size_t i = 0; i < c->orphans.n; i++) {
		uint64_t ino = *fsck_vec_at(&c->orphans, uint64_t, i);
		struct fsck_inode *fi = fsck_inode_find(c, ino);

		if (fi) {
			fi->flags |= FI_ORPHAN;
			continue;
		}
		fsck_fixable(c, "orphan item for inode %" PRIu64 ", which does not exist",
			     ino);
		f.ino = ino;
		if (!fsck_vec_push(&c->fixes, &f))
			return -ENOMEM;
	}
	return 0;
}

/* Inodes still unreached once lost+found holds the lost ones: cycles. */
static int check_cycles(struct fsck_ctx *c)
{
	struct fsck_inode *fi = c->inodes.v;
	int err = 0;

	for (size_t i = 0; i < c->inodes.n && !err; i++)
		if ((fi[i].flags & FI_ATTACH) && S_ISDIR(fi[i].mode))
			err = reach_from(c, fi[i].ino);
	for (size_t i = 0; i < c->inodes.n && !err; i++) {
		if (fi[i].flags & (FI_REACHED | FI_ATTACH | FI_BAD) ||
		    fi[i].ino == CZFS_ROOT_INO || !fi[i].links)
			continue;
		fsck_error(c, "inode %" PRIu64 " is unreachable: directory %"
			   PRIu64 " names it, but no path from the root leads there",
			   fi[i].ino, fi[i].named_by);
	}
	return err;
}

/* ---- the checkpoint's counters ------------------------------------------- */

static void check_counters(struct fsck_ctx *c)
{
	const struct czfs_cp_info *cp = &c->fs->cp;
	uint64_t last = 0;

	if (c->walk_incomplete)
		return;		/* the lost subtrees held inodes too */
	if (c->inodes.n)
		last = fsck_vec_at(&c->inodes, struct fsck_inode, c->inodes.n - 1)->ino;
	if (cp->inode_count != c->inodes.n) {
		fsck_fixable(c, "checkpoint: inode_count %" PRIu64 ", the tree holds %zu inodes",
			     cp->inode_count, c->inodes.n);
		c->fix_inode_count = true;
		c->want_inode_count = c->inodes.n;
	}
	if (!c->prealloc_unknown && cp->prealloc_blocks != c->prealloc_found) {
		fsck_fixable(c, "checkpoint: prealloc_blocks %" PRIu64 ", the reserved clusters promise %" PRIu64,
			     cp->prealloc_blocks, c->prealloc_found);
		c->fix_prealloc = true;
		c->want_prealloc = c->prealloc_found;
	}
	if (last >= cp->next_ino && last < CZFS_MAX_INO) {
		fsck_fixable(c, "checkpoint: next_ino %" PRIu64 ", but inode %" PRIu64 " exists",
			     cp->next_ino, last);
		c->fix_next_ino = true;
		c->want_next_ino = last + 1;
	}
}

int fsck_check_links(struct fsck_ctx *c)
{
	struct fsck_inode *root = fsck_inode_find(c, CZFS_ROOT_INO);
	int err;

	for (size_t i = 0; i < c->edges.n; i++)
		resolve_edge(c, fsck_vec_at(&c->edges, struct fsck_edge, i));
	err = check_orphans(c);
	if (err)
		return err;
	if (!root || (root->flags & FI_BAD) || !S_ISDIR(root->mode)) {
		fsck_error(c, "no root directory: links not checked");
		return 0;
	}
	root->flags |= FI_REACHED;
	err = reach_from(c, CZFS_ROOT_INO);
	for (size_t i = 0; i < c->inodes.n && !err; i++)
		err = check_inode(c, fsck_vec_at(&c->inodes, struct fsck_inode, i));
	if (!err)
		err = check_cycles(c);
	if (!err)
		check_counters(c);
	return err;
}
