// SPDX-License-Identifier: MIT
/*
 * Every leaf item, in key order: an inode's INODE item comes first, then
 * its XATTR, DENTRY and CLUSTER items, so each item is checked against
 * the inode it belongs to.  What needs the whole tree (links, who names
 * whom) is collected here and checked in links.c.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl.h"
#include "bdev.h"
#include "cluster.h"
#include "crc32c.h"
#include "dir.h"
#include "fsck.h"
#include "hash.h"
#include "inode.h"
#include "super.h"
#include "util.h"
#include "xattr.h"

/* Messages said once per inode (fsck_ctx.cur_said). */
#define SAID_NO_INODE	0x01
#define SAID_NOT_DIR	0x02
#define SAID_NOT_FILE	0x04

static int ino_cmp(const void *key, const void *elem)
{
	uint64_t ino = *(const uint64_t *)key;
	const struct fsck_inode *fi = elem;

	return ino < fi->ino ? -1 : ino > fi->ino;
}

struct fsck_inode *fsck_inode_find(struct fsck_ctx *c, uint64_t ino)
{
	if (!c->inodes.n)	/* bsearch wants a base even for none */
		return NULL;
	return bsearch(&ino, c->inodes.v, c->inodes.n, sizeof(struct fsck_inode),
		       ino_cmp);
}


/* ---- orphan and inode items -------------------------------------------- */

static int item_orphan(struct fsck_ctx *c, const struct czfs_key *key,
		       unsigned len)
{
	uint64_t ino = key->offset;

	if (key->objectid != CZFS_ORPHAN_OBJECTID ||
	    key->type != CZFS_ITEM_ORPHAN) {
		fsck_error(c, "item (%" PRIu64 ", %u, %" PRIu64 "): %s",
			   key->objectid, key->type, key->offset,
			   key->objectid ? "orphan item outside objectid 0" :
			   "objectid 0 holds only orphan items");
		return 0;
	}
	if (len)
		fsck_error(c, "orphan item for inode %" PRIu64 ": %u bytes, expected none",
			   ino, len);
	return fsck_vec_push(&c->orphans, &ino) ? 0 : -ENOMEM;
}

static int item_inode(struct fsck_ctx *c, const struct czfs_key *key,
		      const void *val, unsigned len)
{
	struct fsck_inode fi = { .ino = key->objectid };
	struct czfs_inode_info *ii = &c->cur_ii;

	if (key->offset)
		fsck_error(c, "inode %" PRIu64 ": INODE item at offset %" PRIu64
			   ", expected 0", fi.ino, key->offset);
	if (fi.ino > CZFS_MAX_INO)
		fsck_error(c, "inode %" PRIu64 ": number too large", fi.ino);
	c->cur_ok = !czfs_inode_decode(val, len, fi.ino, ii);
	if (!c->cur_ok) {
		fsck_error(c, "inode %" PRIu64 ": damaged INODE item", fi.ino);
		fi.flags = FI_BAD;
	} else {
		fi.mode = ii->mode;
		fi.nlink = ii->nlink;
		fi.parent = ii->parent;
		fi.nentries = ii->nentries;
		fi.blocks = ii->blocks;
		fi.inline_bytes = ii->inline_bytes;
		fi.prealloc = ii->prealloc;
		if (ii->flags & CZFS_INODE_ATTR_FLAGS)
			c->incompat_used |= CZFS_FEATURE_INCOMPAT_ATTR_FLAGS;
	}
	c->cur = fsck_vec_push(&c->inodes, &fi);
	return c->cur ? 0 : -ENOMEM;
}

/* ---- extended attributes ------------------------------------------------ */

static void xattr_external(struct fsck_ctx *c, uint64_t ino,
			   const struct czfs_xattr *x, const char *name)
{
	uint64_t blocks = DIV_ROUND_UP(x->value_len, CZFS_BLOCK_SIZE);
	int err;

	if (!blocks)
		return;
	if (c->cur)
		c->cur->blocks_found += blocks;
	if (!fsck_ref(c, x->blkaddr, blocks, "xattr value", ino))
		return;
	err = czfs_bdev_read(c->fs->bdev, c->scratch, blocks * CZFS_BLOCK_SIZE,
			     x->blkaddr * CZFS_BLOCK_SIZE);
	if (err)
		fsck_error(c, "inode %" PRIu64 ": xattr '%s': value at block %"
			   PRIu64 ": read error", ino, name, x->blkaddr);
	else if (czfs_crc32c(0, c->scratch, x->value_len) != x->checksum)
		fsck_error(c, "inode %" PRIu64 ": xattr '%s': value at block %"
			   PRIu64 ": checksum mismatch", ino, name, x->blkaddr);
	fsck_progress(c, blocks);
}

/* Is record name the same as one before pos in the item? */
static bool xattr_dup(const void *val, unsigned pos, const struct czfs_xattr *x)
{
	struct czfs_xattr y;
	unsigned p = 0;

	while (p < pos && czfs_xattr_next(val, pos, &p, &y) > 0)
		if (y.name_len == x->name_len && !memcmp(y.name, x->name, x->name_len))
			return true;
	return false;
}

/* An ACL is well formed, and an access ACL agrees with the mode. */
static void xattr_acl(struct fsck_ctx *c, uint64_t ino,
		      const struct czfs_xattr *x, const char *name)
{
	bool access = !strcmp(name, CZFS_ACL_ACCESS);
	mode_t perm;
	int ret;

	if (!x->value || (!access && strcmp(name, CZFS_ACL_DEFAULT)))
		return;
	ret = czfs_acl_mode(x->value, x->value_len, &perm);
	if (ret < 0)
		fsck_error(c, "inode %" PRIu64 ": xattr '%s': malformed ACL",
			   ino, name);
	else if (access && c->cur && c->cur->ino == ino && c->cur_ok &&
		 perm != (c->cur->mode & 0777))
		fsck_error(c, "inode %" PRIu64 ": access ACL gives mode %04o, the inode has %04o",
			   ino, (unsigned)perm, c->cur->mode & 0777);
}

static void item_xattr(struct fsck_ctx *c, const struct czfs_key *key,
		       const void *val, unsigned len)
{
	char name[CZFS_NAME_MAX + 1];
	struct czfs_xattr x;
	unsigned pos = 0, at = 0;
	int ret;

	while ((ret = czfs_xattr_next(val, len, &pos, &x)) > 0) {
		fsck_name(x.name, x.name_len, name);
		if (czfs_name_hash(c->fs->sb.hash_seed, x.name, x.name_len) !=
		    key->offset)
			fsck_error(c, "inode %" PRIu64 ": xattr '%s' stored under another name's hash",
				   key->objectid, name);
		if (!czfs_xattr_name_ok(x.name, x.name_len))
			fsck_error(c, "inode %" PRIu64 ": xattr '%s' outside the supported namespaces",
				   key->objectid, name);
		if (xattr_dup(val, at, &x))
			fsck_error(c, "inode %" PRIu64 ": xattr '%s' stored twice",
				   key->objectid, name);
		if (!x.value)
			xattr_external(c, key->objectid, &x, name);
		xattr_acl(c, key->objectid, &x, name);
		at = pos;
	}
	if (ret < 0) {
		fsck_error(c, "inode %" PRIu64 ": malformed xattr item (hash %" PRIu64 ")",
			   key->objectid, key->offset);
		c->refs_incomplete = true;	/* its value blocks are unknown */
	}
}

/* ---- directory entries ------------------------------------------------- */

static bool dentry_dup(const void *val, unsigned pos, const struct czfs_dirent *de)
{
	struct czfs_dirent d;
	unsigned p = 0;

	while (p < pos && czfs_dentry_next(val, pos, &p, &d) > 0)
		if (d.name_len == de->name_len && !memcmp(d.name, de->name, de->name_len))
			return true;
	return false;
}

static int dentry_one(struct fsck_ctx *c, const struct czfs_key *key,
		      const void *val, unsigned at, const struct czfs_dirent *de)
{
	struct fsck_edge e = { key->objectid, de->ino, de->type };
	char name[CZFS_NAME_MAX + 1];

	fsck_name(de->name, de->name_len, name);
	if (czfs_name_hash(c->fs->sb.hash_seed, de->name, de->name_len) !=
	    key->offset)
		fsck_error(c, "directory %" PRIu64 ": entry '%s' stored under another name's hash",
			   key->objectid, name);
	if ((de->name_len == 1 && de->name[0] == '.') ||
	    (de->name_len == 2 && !memcmp(de->name, "..", 2)))
		fsck_error(c, "directory %" PRIu64 ": entry named '%s'",
			   key->objectid, name);
	if (dentry_dup(val, at, de))
		fsck_error(c, "directory %" PRIu64 ": entry '%s' stored twice",
			   key->objectid, name);
	if (!c->cur_ok || !S_ISDIR(c->cur_ii.mode))
		return 0;
	c->cur->entries++;
	return fsck_vec_push(&c->edges, &e) ? 0 : -ENOMEM;
}

static int item_dentry(struct fsck_ctx *c, const struct czfs_key *key,
		       const void *val, unsigned len)
{
	struct czfs_dirent de;
	unsigned pos = 0, at = 0;
	int ret, err = 0;

	if (c->cur_ok && !S_ISDIR(c->cur_ii.mode) &&
	    !(c->cur_said & SAID_NOT_DIR)) {
		c->cur_said |= SAID_NOT_DIR;
		fsck_error(c, "inode %" PRIu64 ": directory entries in a %s",
			   key->objectid, czfs_inode_type_name(c->cur_ii.mode));
	}
	while (!err && (ret = czfs_dentry_next(val, len, &pos, &de)) > 0) {
		err = dentry_one(c, key, val, at, &de);
		at = pos;
	}
	if (!err && ret < 0) {
		fsck_error(c, "directory %" PRIu64 ": malformed entry item (hash %" PRIu64 ")",
			   key->objectid, key->offset);
		if (c->cur)
			c->cur->flags |= FI_BAD_ENTRIES;
	}
	return err;
}

/* ---- clusters and their data --------------------------------------------- */


/* Bytes of the file cluster idx stands for; 0 if past EOF. */
static uint32_t cluster_span(const struct czfs_inode_info *ii, uint64_t idx)
{
	uint32_t cbytes = czfs_inode_cluster_bytes(ii);

	if (idx >= DIV_ROUND_UP(ii->size, cbytes))
		return 0;
	return (uint32_t)MIN((uint64_t)cbytes, ii->size - idx * cbytes);
}

static int check_data(struct fsck_ctx *c, uint64_t ino, uint64_t idx,
		      const struct czfs_cluster_info *ci, uint32_t span)
{
	int err = czfs_cluster_read(c->fs, c->codec, ci, c->scratch, c->data,
				    span);

	fsck_progress(c, ci->nblocks);
	if ((err == -EFSCORRUPTED || err == -EIO) &&
	    ci->kind == CZFS_CLUSTER_BLOCKMAP) {
		fsck_error(c, "inode %" PRIu64 ": cluster %" PRIu64
			   " (block-mapped): data damaged", ino, idx);
		return 0;
	}
	if (err == -EFSCORRUPTED || err == -EIO) {
		fsck_error(c, "inode %" PRIu64 ": cluster %" PRIu64 " (block %"
			   PRIu64 "): data damaged", ino, idx, ci->blkaddr);
		return 0;
	}
	return err;
}

static bool cluster_owner_ok(struct fsck_ctx *c, uint64_t ino)
{
	uint32_t mode = c->cur_ii.mode;

	if (S_ISREG(mode) || S_ISLNK(mode))
		return true;
	if (!(c->cur_said & SAID_NOT_FILE)) {
		c->cur_said |= SAID_NOT_FILE;
		fsck_error(c, "inode %" PRIu64 ": cluster items in a %s", ino,
			   czfs_inode_type_name(mode));
	}
	return false;
}

/*
 * A cluster item that does not decode may still name its blocks right:
 * keep them referenced if they look like an extent, so that they are not
 * taken for leaked and freed; if not, leaks are not looked for at all.
 */
static void damaged_cluster_refs(struct fsck_ctx *c, const void *val,
				 unsigned len)
{
	struct czfs_cluster raw;
	uint64_t blkaddr;

	c->prealloc_unknown = true;	/* it may have been a promise */
	if (len < sizeof(raw)) {
		c->refs_incomplete = true;
		return;
	}
	memcpy(&raw, val, sizeof(raw));
	blkaddr = le64_to_cpu(raw.blkaddr);
	if (!raw.nblocks && !blkaddr)
		return;		/* an inline or reserved cluster: no blocks */
	if (raw.nblocks > CZFS_MAX_CLUSTER_BLOCKS ||
	    blkaddr < CZFS_FIRST_DATA_BLKADDR || blkaddr >= c->image_blocks ||
	    raw.nblocks > c->image_blocks - blkaddr || !raw.nblocks) {
		c->refs_incomplete = true;
		return;
	}
	if (c->cur)
		c->cur->blocks_found += raw.nblocks;
	fsck_ref(c, blkaddr, raw.nblocks, "damaged cluster", c->cur_objectid);
}

/* The blocks of a block-mapped cluster's entries, each its own
 * reference: false if one is shared (fsck_ref said so). */
static bool blockmap_refs(struct fsck_ctx *c, uint64_t ino,
			  const struct czfs_cluster_info *ci)
{
	bool ok = true;

	if (c->cur)
		c->cur->blocks_found += ci->nblocks;
	for (unsigned i = 0; i < czfs_blockmap_entries(ci); i++) {
		uint64_t a;
		uint32_t crc;

		czfs_blockmap_get(ci, i, &a, &crc);
		if (a && !fsck_ref(c, a, 1, "cluster", ino))
			ok = false;
	}
	if (ok)
		c->data_blocks += ci->nblocks;
	return ok;
}

/* Clusters wholly past the end (a truncate that raced a writeback) hold
 * nothing a reader sees: fsck -y drops them, unless some cluster of the
 * file is damaged or shares blocks (dropping frees every block from the
 * first one on). */
static void cluster_past_end(struct fsck_ctx *c, uint64_t ino, uint64_t idx,
			     const struct czfs_cluster_info *ci)
{
	fsck_fixable(c, "inode %" PRIu64 ": cluster %" PRIu64 " (%u bytes) past the end of the file (%" PRIu64 " bytes)",
		     ino, idx, ci->ulen, c->cur_ii.size);
	if (!(c->cur->flags & FI_TAIL))
		c->cur->tail_from = idx;
	c->cur->flags |= FI_TAIL;
	c->cur->tail_count++;
}

/* fallocate's promise (a RESERVED cluster's, or a tail's): it must be
 * for the whole cluster, as the daemon makes it, in a regular file. */
static void item_promise(struct fsck_ctx *c, uint64_t ino, uint64_t idx,
			 const struct czfs_cluster_info *ci)
{
	unsigned want;

	if (!ci->prealloc)
		return;
	c->incompat_used |= CZFS_FEATURE_INCOMPAT_PREALLOC;
	c->prealloc_found += ci->prealloc;
	if (c->cur)
		c->cur->prealloc_found += ci->prealloc;
	if (!c->cur_ok)
		return;
	want = 1u << c->cur_ii.cluster_shift;
	if (!S_ISREG(c->cur_ii.mode) || ci->prealloc != want)
		fsck_error(c, "inode %" PRIu64 ": %s cluster %" PRIu64
			   " promises %u blocks, expected %u in a regular file",
			   ino, ci->kind == CZFS_CLUSTER_RESERVED ? "reserved" : "data",
			   idx, ci->prealloc, want);
}

static int item_cluster(struct fsck_ctx *c, const struct czfs_key *key,
			const void *val, unsigned len)
{
	uint32_t cbytes = c->cur_ok ? czfs_inode_cluster_bytes(&c->cur_ii) :
			  CZFS_MAX_CLUSTER_SIZE;
	uint64_t ino = key->objectid, idx = key->offset;
	struct czfs_cluster_info ci;
	uint32_t span;

	c->clusters++;
	if (czfs_cluster_item_decode(val, len, cbytes, c->max_blocks, &ci)) {
		fsck_error(c, "inode %" PRIu64 ": damaged cluster item %" PRIu64,
			   ino, idx);
		if (c->cur)
			c->cur->flags |= FI_BAD_CLUSTER;
		damaged_cluster_refs(c, val, len);
		return 0;
	}
	item_promise(c, ino, idx, &ci);
	/* nothing to read, and it may lie past the end (KEEP_SIZE) */
	if (ci.kind == CZFS_CLUSTER_RESERVED)
		return 0;
	c->incompat_used |= czfs_alg_feature(ci.alg);
	if (c->cur)
		c->cur->inline_found += czfs_cluster_shared_bytes(&ci);
	if (czfs_cluster_is_shared(ci.kind)) {	/* blocks: the PACK item's */
		int err = fsck_pack_cluster(c, ino, idx, &ci);

		if (err)
			return err;
	} else if (ci.kind == CZFS_CLUSTER_BLOCKMAP) {
		c->incompat_used |= CZFS_FEATURE_INCOMPAT_BLOCKMAP;
		if (!blockmap_refs(c, ino, &ci)) {
			if (c->cur)
				c->cur->flags |= FI_BAD_CLUSTER;
			return 0;
		}
	} else if (ci.nblocks) {
		if (c->cur)
			c->cur->blocks_found += ci.nblocks;
		if (!fsck_ref(c, ci.blkaddr, ci.nblocks, "cluster", ino)) {
			if (c->cur)
				c->cur->flags |= FI_BAD_CLUSTER;
			return 0;
		}
		c->data_blocks += ci.nblocks;
	}
	if (!c->cur_ok || !cluster_owner_ok(c, ino))
		return 0;
	span = cluster_span(&c->cur_ii, idx);
	if (!span && c->cur) {
		cluster_past_end(c, ino, idx, &ci);
		return 0;
	}
	if (!span || ci.ulen > span) {
		fsck_error(c, "inode %" PRIu64 ": cluster %" PRIu64 " (%u bytes) past the end of the file (%" PRIu64 " bytes)",
			   ino, idx, ci.ulen, c->cur_ii.size);
		return 0;
	}
	return c->o.fast ? 0 : check_data(c, ino, idx, &ci, span);
}

/* ---- dispatch ------------------------------------------------------------- */

/* A new objectid: its INODE item must come first. */
static void next_objectid(struct fsck_ctx *c, const struct czfs_key *key)
{
	c->cur_objectid = key->objectid;
	c->cur = NULL;
	c->cur_ok = false;
	c->cur_said = 0;
	if (key->type != CZFS_ITEM_INODE) {
		c->cur_said |= SAID_NO_INODE;
		fsck_error(c, "inode %" PRIu64 ": items but no INODE item",
			   key->objectid);
	}
}

int fsck_item(struct fsck_ctx *c, const struct czfs_key *key,
	      const void *val, unsigned len)
{
	c->items++;
	if (key->type < CZFS_ITEM_INODE || key->type > CZFS_ITEM_TYPE_MAX) {
		fsck_error(c, "item (%" PRIu64 ", %u, %" PRIu64 "): unknown type",
			   key->objectid, key->type, key->offset);
		return 0;
	}
	if (key->objectid == CZFS_ORPHAN_OBJECTID ||
	    key->type == CZFS_ITEM_ORPHAN)
		return item_orphan(c, key, len);
	if (key->objectid == CZFS_PACK_OBJECTID || key->type == CZFS_ITEM_PACK)
		return fsck_pack_item(c, key, val, len);
	if (key->objectid != c->cur_objectid)
		next_objectid(c, key);
	switch (key->type) {
	case CZFS_ITEM_INODE:
		return item_inode(c, key, val, len);
	case CZFS_ITEM_XATTR:
		item_xattr(c, key, val, len);
		return 0;
	case CZFS_ITEM_DENTRY:
		return item_dentry(c, key, val, len);
	default:
		return item_cluster(c, key, val, len);
	}
}
