// SPDX-License-Identifier: MIT
/*
 * Leaf packs (czfs_fs.h, "Leaf packs"): mkfs compresses the leaves under
 * one level-1 node in groups, so that the metadata of a tree of small
 * files takes a third of its blocks; the node cache decodes a pack at the
 * first miss of one of its leaves and keeps them all.  Here the format:
 * encoding a pack (mkfs), and checking and decoding one (the node cache).
 * Writers never make packs: when btree_cow.c copies a level-1 node,
 * btree_unpack.c stores its packed leaves plain.
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
