// SPDX-License-Identifier: MIT
/*
 * Leaf packs (czfs_fs.h, "Leaf packs"): mkfs compresses the leaves under
 * one level-1 node in groups, so that the metadata of a tree of small
 * files takes a third of its blocks; the node cache decodes a pack at the
 * first miss of one of its leaves and keeps them all.  Writers never make
 * packs: when btree_cow.c copies a level-1 node, the unpacking below stores
 * its packed leaves plain.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "btree_int.h"
#include "compress.h"
#include "crc32c.h"
#include "log.h"
#include "util.h"

#define HDR ((unsigned)sizeof(struct czfs_leafpack))

static uint32_t pack_crc(const uint8_t *pack, unsigned clen)
{
	struct czfs_leafpack h;

	memcpy(&h, pack, HDR);
	h.checksum = 0;
	return czfs_crc32c(czfs_crc32c(0, &h, HDR), pack + HDR, clen);
}

int czfs_leafpack_encode(struct czfs_codec *codec, int alg, int level,
			 const uint8_t *leaves, unsigned n, uint64_t gen,
			 uint8_t *dst)
{
	const struct czfs_compressor *c = czfs_compressor_get(alg);
	unsigned cap = (n - 1) * CZFS_BLOCK_SIZE - HDR;
	struct czfs_leafpack h = { 0 };
	int clen;

	if (!c || n < 2 || n > CZFS_LEAFPACK_MAX)
		return -EINVAL;
	clen = c->compress(codec, level, leaves, n * CZFS_BLOCK_SIZE,
			   dst + HDR, cap);
	if (clen <= 0)
		return clen;		/* 0: it would not save a block */
	h.magic = cpu_to_le32(CZFS_LEAFPACK_MAGIC);
	h.generation = cpu_to_le64(gen);
	h.clen = cpu_to_le32((uint32_t)clen);
	h.alg = (uint8_t)alg;
	h.nleaves = (uint8_t)n;
	memcpy(dst, &h, HDR);
	/* The tail of the last block is zero, not what the buffer held. */
	memset(dst + HDR + clen, 0,
	       ROUND_UP(HDR + (unsigned)clen, CZFS_BLOCK_SIZE) - HDR - (unsigned)clen);
	return (int)DIV_ROUND_UP(HDR + (unsigned)clen, CZFS_BLOCK_SIZE);
}

void czfs_leafpack_seal(uint8_t *pack, uint64_t base)
{
	struct czfs_leafpack h;

	memcpy(&h, pack, HDR);
	h.blkaddr = cpu_to_le64(base);
	memcpy(pack, &h, HDR);
	h.checksum = cpu_to_le32(pack_crc(pack, le32_to_cpu(h.clen)));
	memcpy(pack, &h, HDR);
}

static int pack_bad(uint64_t ptr, const char *what)
{
	czfs_err("leaf pack at %llu: %s", (unsigned long long)czfs_leafpack_base(ptr),
		 what);
	return -EFSCORRUPTED;
}

int czfs_leafpack_decode(const uint8_t *pack, uint64_t ptr,
			 struct czfs_codec *codec, uint8_t *out,
			 unsigned *nleaves)
{
	unsigned nblocks = czfs_leafpack_nblocks(ptr), clen;
	const struct czfs_compressor *c;
	struct czfs_leafpack h;
	int err;

	memcpy(&h, pack, HDR);
	clen = le32_to_cpu(h.clen);
	if (le32_to_cpu(h.magic) != CZFS_LEAFPACK_MAGIC)
		return pack_bad(ptr, "bad magic");
	if (le64_to_cpu(h.blkaddr) != czfs_leafpack_base(ptr))
		return pack_bad(ptr, "header names another block");
	if (!clen || DIV_ROUND_UP(HDR + (uint64_t)clen, CZFS_BLOCK_SIZE) != nblocks)
		return pack_bad(ptr, "payload length does not fill its blocks");
	if (h.reserved || h.nleaves < 2 || h.nleaves > CZFS_LEAFPACK_MAX)
		return pack_bad(ptr, "bad leaf count or reserved field");
	if (czfs_leafpack_index(ptr) >= h.nleaves)
		return pack_bad(ptr, "pointer to a leaf past the pack's last");
	if (le32_to_cpu(h.checksum) != pack_crc(pack, clen))
		return pack_bad(ptr, "bad checksum");
	c = czfs_compressor_get(h.alg);
	if (!c)
		return pack_bad(ptr, "unknown algorithm");
	err = c->decompress(codec, pack + HDR, clen, out,
			    (unsigned)h.nleaves * CZFS_BLOCK_SIZE);
	if (err == -ENOMEM)
		return err;
	if (err)
		return pack_bad(ptr, "payload does not decode");
	*nleaves = h.nleaves;
	return 0;
}

/* ---- unpacking under a copied parent ---------------------------------- */

/*
 * A level-1 node that is copied takes its packed children out of their
 * leaf packs (czfs_fs.h): each becomes a plain leaf on a new block, and
 * each pack is freed, so that no node written after mkfs points into a
 * pack.  The leaves are read and the blocks taken before any edit.
 */

static bool in_list(const uint64_t *list, unsigned n, uint64_t v)
{
	for (unsigned i = 0; i < n; i++)
		if (list[i] == v)
			return true;
	return false;
}

void czfs_unpack_release(struct czfs_btree *t, struct czfs_unpack *u)
{
	for (unsigned k = 0; k < u->n; k++) {
		czfs_btree_retire(t, u->copy[k]);
		czfs_node_put(t->nc, u->copy[k]);
		czfs_node_put(t->nc, u->old[k]);
	}
	u->n = 0;
}

int czfs_unpack_prepare(struct czfs_btree *t, const struct czfs_node *parent,
			struct czfs_unpack *u)
{
	unsigned n = czfs_node_nritems(parent->data);
	int err = 0;

	u->n = u->nkept = 0;
	for (unsigned i = 0; i < n && !err; i++) {
		uint64_t addr, gen;

		czfs_node_child(parent->data, i, &addr, &gen);
		if (!czfs_leafpack_is(addr))
			continue;
		err = czfs_node_get(t->nc, addr, gen, 0, &u->old[u->n]);
		if (err == -EFSCORRUPTED || err == -EIO) {
			u->kept[u->nkept++] = czfs_leafpack_base(addr);
			err = 0;
			continue;
		}
		if (err)
			break;
		err = czfs_btree_new_node(t, &u->copy[u->n]);
		if (err) {
			czfs_node_put(t->nc, u->old[u->n]);
			break;
		}
		u->slot[u->n++] = i;
	}
	if (err)
		czfs_unpack_release(t, u);
	return err;
}

void czfs_unpack_apply(struct czfs_btree *t, struct czfs_btree_path *path,
		       struct czfs_node *parent, struct czfs_unpack *u)
{
	uint64_t freed[CZFS_NODE_MAX_PTRS];
	unsigned nfreed = 0;

	for (unsigned k = 0; k < u->n; k++) {
		struct czfs_node *old = u->old[k], *copy = u->copy[k];
		uint64_t base = czfs_leafpack_base(old->blkaddr);

		memcpy(copy->data, old->data, CZFS_BLOCK_SIZE);
		czfs_node_set_addr(copy->data, copy->blkaddr, t->trans_gen);
		czfs_node_set_child(parent->data, u->slot[k], copy->blkaddr,
				    t->trans_gen);
		if (!in_list(freed, nfreed, base) &&
		    !in_list(u->kept, u->nkept, base)) {
			t->alloc->free(t->alloc, base,
				       czfs_leafpack_nblocks(old->blkaddr));
			freed[nfreed++] = base;
		}
		if (path->nodes[0] == old) {
			/* The path's leaf: the path holds the copy now. */
			czfs_node_put(t->nc, old);
			path->nodes[0] = copy;
		} else {
			czfs_node_put(t->nc, copy);
		}
		czfs_btree_retire(t, old);
		czfs_node_put(t->nc, old);
	}
	u->n = 0;
}

bool czfs_leafpack_has_packed(const struct czfs_node *node)
{
	unsigned n = czfs_node_nritems(node->data);

	if (czfs_node_level(node->data) != 1)
		return false;
	for (unsigned i = 0; i < n; i++) {
		uint64_t addr, gen;

		czfs_node_child(node->data, i, &addr, &gen);
		if (czfs_leafpack_is(addr))
			return true;
	}
	return false;
}
