// SPDX-License-Identifier: MIT
/*
 * Shared packs and runs: every PACKED cluster is counted against its
 * pack's key, every SLICE against its run's, and each sliced pack once
 * against its run (found with its first PACKED cluster); each PACK item's
 * blocks are referenced once (a sliced pack's are its run's) and its refs
 * must equal the clusters (and sliced packs) found pointing at it, which
 * must all describe it as the item does (slices: lie inside the run).
 * A wrong count, or a PACK item missing for a pack its clusters agree on,
 * is repaired (-y) when every cluster item decoded; the blocks of a pack
 * without its item stay referenced meanwhile, so that they are never
 * taken for leaked and freed under its files.
 */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>

#include "cluster.h"
#include "fsck.h"
#include "pack.h"
#include "util.h"

struct fsck_pack {
	uint64_t blkaddr;		/* its key offset; 0: a free slot */
	struct czfs_pack_info desc;	/* as its first cluster says */
	uint32_t found;			/* PACKED clusters pointing at it */
	uint64_t live;			/* a run's: its slices' payload bytes */
	bool item_seen;
	bool differ;			/* its clusters describe it otherwise */
};

enum fsck_pack_op {
	PACK_FIX_UPDATE,		/* its count */
	PACK_FIX_INSERT,		/* there is none */
	PACK_FIX_DELETE,		/* no cluster uses it */
};

/* A planned repair: the PACK item to write or delete. */
struct fsck_pack_fix {
	struct czfs_pack_info pi;
	enum fsck_pack_op op;
};

static int plan(struct fsck_ctx *c, const struct czfs_pack_info *pi,
		enum fsck_pack_op op)
{
	struct fsck_pack_fix f = { *pi, op };

	return fsck_vec_push(&c->pack_fixes, &f) ? 0 : -ENOMEM;
}

static uint64_t slot_of(uint64_t blkaddr, size_t cap)
{
	return (blkaddr * 0x9e3779b97f4a7c15ull) & (cap - 1);
}

static int grow(struct fsck_ctx *c)
{
	size_t cap = c->packs_cap ? c->packs_cap * 2 : 1024;
	struct fsck_pack *t = calloc(cap, sizeof(*t)), *old = c->packs;

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < c->packs_cap; i++) {
		uint64_t k;

		if (!old[i].blkaddr)
			continue;
		for (k = slot_of(old[i].blkaddr, cap); t[k].blkaddr;
		     k = (k + 1) & (cap - 1))
			;
		t[k] = old[i];
	}
	free(old);
	c->packs = t;
	c->packs_cap = cap;
	return 0;
}

/* The entry of blkaddr, made if add; NULL if none (or no memory). */
static struct fsck_pack *find(struct fsck_ctx *c, uint64_t blkaddr, bool add)
{
	uint64_t k;

	if (add && (c->packs_n + 1) * 2 > c->packs_cap && grow(c))
		return NULL;
	if (!c->packs_cap)
		return NULL;
	for (k = slot_of(blkaddr, c->packs_cap); c->packs[k].blkaddr;
	     k = (k + 1) & (c->packs_cap - 1))
		if (c->packs[k].blkaddr == blkaddr)
			return &c->packs[k];
	if (!add)
		return NULL;
	c->packs_n++;
	c->packs[k].blkaddr = blkaddr;
	return &c->packs[k];
}

/* A SLICE, or a sliced pack, counted against its run: the run as far as
 * its slices reach. */
static int slice_cluster(struct fsck_ctx *c, uint64_t ino, uint64_t idx,
			 const struct czfs_cluster_info *ci)
{
	uint64_t end = (ci->blkaddr - ci->run) * CZFS_BLOCK_SIZE +
		       ci->slice_off + ci->slice_len;
	struct fsck_pack *p = find(c, ci->run, true);

	if (!p)
		return -ENOMEM;
	c->incompat_used |= CZFS_FEATURE_INCOMPAT_SLICED;
	if (ci->kind == CZFS_CLUSTER_PACKED)
		c->incompat_used |= CZFS_FEATURE_INCOMPAT_SLICED_PACKS;
	p->live += ci->slice_len;
	if (!p->found++ || (p->desc.run && end > p->desc.ulen))
		p->desc = (struct czfs_pack_info){
			.blkaddr = ci->run, .refs = 1, .run = true,
			.ulen = (uint32_t)end,
			.nblocks = DIV_ROUND_UP(end, CZFS_BLOCK_SIZE),
		};
	if (p->desc.run)
		return 0;
	p->differ = true;
	fsck_error(c, "inode %" PRIu64 ": cluster %" PRIu64
		   " is a slice of the run at block %" PRIu64
		   ", which another cluster takes for a pack", ino, idx, ci->run);
	return 0;
}

int fsck_pack_cluster(struct fsck_ctx *c, uint64_t ino, uint64_t idx,
		      const struct czfs_cluster_info *ci)
{
	struct fsck_pack *p;

	if (ci->kind == CZFS_CLUSTER_SLICE)
		return slice_cluster(c, ino, idx, ci);
	p = find(c, czfs_cluster_pack_key(ci), true);
	if (!p)
		return -ENOMEM;
	c->incompat_used |= CZFS_FEATURE_INCOMPAT_PACKED;
	if (!p->found++) {
		czfs_pack_of_cluster(ci, &p->desc);
		/* a sliced pack is one reference of its run */
		return czfs_cluster_pack_sliced(ci) ?
		       slice_cluster(c, ino, idx, ci) : 0;
	}
	if (czfs_pack_matches(&p->desc, ci))
		return 0;
	p->differ = true;
	fsck_error(c, "inode %" PRIu64 ": cluster %" PRIu64
		   " describes the pack at block %" PRIu64
		   " unlike another cluster", ino, idx, ci->blkaddr);
	return 0;
}

/* Whether the clusters found pointing at p agree with its item pi. */
static bool item_agrees(const struct fsck_pack *p,
			const struct czfs_pack_info *pi)
{
	if (pi->run || p->desc.run)	/* the slices lie inside the run */
		return pi->run && p->desc.run && !p->differ &&
		       p->desc.ulen <= pi->ulen;
	return czfs_pack_matches(pi, &(struct czfs_cluster_info){
		.kind = CZFS_CLUSTER_PACKED, .alg = p->desc.alg,
		.nblocks = p->desc.nblocks, .checksum = p->desc.checksum,
		.blkaddr = p->desc.blkaddr, .pack_ulen = p->desc.ulen,
		.slice_off = p->desc.slice_off, .slice_len = p->desc.clen,
		.run = p->desc.run_at });
}

/* The blocks an item owns: a sliced pack's are its run's. */
static bool own_blocks(struct fsck_ctx *c, const struct czfs_pack_info *pi,
		       const char *what)
{
	return !pi->sliced && fsck_ref(c, pi->blkaddr, pi->nblocks, what, 0);
}

int fsck_pack_item(struct fsck_ctx *c, const struct czfs_key *key,
		   const void *val, unsigned len)
{
	struct czfs_pack_info pi;
	struct fsck_pack *p;

	if (key->objectid != CZFS_PACK_OBJECTID) {
		fsck_error(c, "item (%" PRIu64 ", PACK, %" PRIu64
			   "): not under the pack objectid", key->objectid,
			   key->offset);
		return 0;
	}
	if (czfs_pack_item_decode(key->offset, val, len, c->max_blocks, &pi)) {
		fsck_error(c, "pack at block %" PRIu64 ": damaged PACK item",
			   key->offset);
		c->refs_incomplete = true;
		return 0;
	}
	c->incompat_used |= pi.run ? CZFS_FEATURE_INCOMPAT_SLICED :
			    CZFS_FEATURE_INCOMPAT_PACKED;
	if (pi.sliced)
		c->incompat_used |= CZFS_FEATURE_INCOMPAT_SLICED_PACKS;
	p = find(c, czfs_pack_key(&pi), false);
	if (!p) {	/* its blocks: referenced or not by fsck_packs_finish */
		fsck_fixable(c, "%s at block %" PRIu64 ": %u references, no cluster uses it",
			     pi.run ? "run" : "pack", pi.blkaddr, pi.refs);
		return plan(c, &pi, PACK_FIX_DELETE);
	}
	if (own_blocks(c, &pi, pi.run ? "run" : "pack"))
		c->data_blocks += pi.nblocks;
	p->item_seen = true;
	p->desc.refs = pi.refs;
	if (!item_agrees(p, &pi)) {
		fsck_error(c, "%s at block %" PRIu64 ": its clusters describe it otherwise",
			   pi.run ? "run" : "pack", pi.blkaddr);
		return 0;
	}
	if (pi.run && pi.live != p->live) {
		fsck_fixable(c, "run at block %" PRIu64 ": %u live bytes, its slices hold %" PRIu64,
			     pi.blkaddr, pi.live, p->live);
		if (pi.refs == p->found) {
			pi.live = (uint32_t)p->live;
			return plan(c, &pi, PACK_FIX_UPDATE);
		}
	}
	if (pi.refs == p->found)
		return 0;
	fsck_fixable(c, "%s at block %" PRIu64 ": %u references, %u clusters use it",
		     pi.run ? "run" : "pack", pi.blkaddr, pi.refs, p->found);
	pi.refs = p->found;
	if (pi.run)
		pi.live = (uint32_t)p->live;
	return plan(c, &pi, PACK_FIX_UPDATE);
}

/* Its clusters name a pack that has no item: keep its blocks; plan one. */
static int pack_missing(struct fsck_ctx *c, struct fsck_pack *p)
{
	struct czfs_pack_info pi = p->desc;

	if ((!pi.sliced && !fsck_ref(c, pi.blkaddr, pi.nblocks, "pack", 0)) ||
	    p->differ) {
		fsck_error(c, "pack at block %" PRIu64 ": %u clusters use it, no PACK item",
			   pi.blkaddr, p->found);
		return 0;
	}
	if (!pi.sliced)
		c->data_blocks += pi.nblocks;
	fsck_fixable(c, "%s at block %" PRIu64 ": %u clusters use it, no PACK item",
		     pi.run ? "run" : "pack", pi.blkaddr, p->found);
	pi.refs = p->found;
	pi.live = (uint32_t)p->live;
	return plan(c, &pi, PACK_FIX_INSERT);
}

/* The fixes cannot be trusted: an unused item's blocks stay in use. */
static void keep_unused(struct fsck_ctx *c)
{
	for (size_t i = 0; i < c->pack_fixes.n; i++) {
		const struct fsck_pack_fix *f =
			fsck_vec_at(&c->pack_fixes, struct fsck_pack_fix, i);

		if (f->op == PACK_FIX_DELETE && own_blocks(c, &f->pi, "pack"))
			c->data_blocks += f->pi.nblocks;
	}
}

int fsck_packs_finish(struct fsck_ctx *c)
{
	int err = 0;

	for (size_t i = 0; !err && i < c->packs_cap; i++) {
		struct fsck_pack *p = &c->packs[i];

		if (p->blkaddr && !p->item_seen)
			err = pack_missing(c, p);
	}
	/* a count from damaged cluster items or a partial walk may be short:
	 * do not set it, nor delete an item that looks unused */
	if ((c->refs_incomplete || c->walk_incomplete) && c->pack_fixes.n) {
		keep_unused(c);
		c->unfixed += c->pack_fixes.n;
		c->pack_fixes.n = 0;
	}
	return err;
}

size_t fsck_pack_fix_size(void)
{
	return sizeof(struct fsck_pack_fix);
}

int fsck_repair_packs(struct fsck_ctx *c)
{
	uint8_t val[sizeof(struct czfs_pack)];
	int err = 0;

	for (size_t i = 0; !err && i < c->pack_fixes.n; i++) {
		const struct fsck_pack_fix *f =
			fsck_vec_at(&c->pack_fixes, struct fsck_pack_fix, i);
		struct czfs_key key = { CZFS_PACK_OBJECTID, CZFS_ITEM_PACK,
					czfs_pack_key(&f->pi) };
		unsigned len = czfs_pack_item_encode(&f->pi, val);

		if (f->op == PACK_FIX_INSERT)
			err = czfs_btree_insert(&c->fs->tree, &key, val, len);
		else if (f->op == PACK_FIX_UPDATE)
			err = czfs_btree_update(&c->fs->tree, &key, val, len);
		else	/* its blocks, unreferenced, are freed as leaked */
			err = czfs_btree_delete(&c->fs->tree, &key);
	}
	return err;
}
