// SPDX-License-Identifier: MIT
/*
 * Checksums recomputed over a mutated image, so that the fuzzer's changes
 * reach the decoders behind the crc checks instead of stopping at them:
 * cluster payloads (and the compressed header's copy), external xattr
 * values, every node, space-map bitmaps (in their index entries) and index
 * blocks, both checkpoints, the superblock.  The parsing here is its own
 * and bounded by the image: it must not crash on what it fixes.
 */
#include "config.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "crc32c.h"
#include "czfs_fs.h"
#include "fuzz.h"
#include "util.h"

#define BLK		CZFS_BLOCK_SIZE
#define HDR		sizeof(struct czfs_node_header)
#define ITEM		sizeof(struct czfs_item)

struct img {
	uint8_t *p;
	uint64_t nblocks;
};

static uint32_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return le16_to_cpu(v);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32_to_cpu(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64_to_cpu(v);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = cpu_to_le32(v);
	memcpy(p, &v, 4);
}

/* crc32c of a block whose first 4 bytes (the checksum) count as zero. */
static uint32_t csum_first(const uint8_t *blk, size_t len)
{
	static const uint8_t zero[4];

	return czfs_crc32c(czfs_crc32c(0, zero, 4), blk + 4, len - 4);
}

static bool extent_ok(const struct img *im, uint64_t a, uint64_t n)
{
	return a >= CZFS_FIRST_DATA_BLKADDR && a < im->nblocks &&
	       n <= im->nblocks - a;
}

/* ---- leaf items ----------------------------------------------------------- */

static void fix_cluster(struct img *im, uint8_t *val, unsigned len)
{
	struct czfs_cluster c;
	uint64_t a;
	uint32_t crc;

	if (len < sizeof(c))
		return;
	memcpy(&c, val, sizeof(c));
	a = le64_to_cpu(c.blkaddr);
	if (c.kind == CZFS_CLUSTER_BLOCKMAP) {	/* each entry's block */
		for (unsigned at = sizeof(c); at + 16 <= len; at += 16) {
			a = get64(val + at);
			if (extent_ok(im, a, 1))
				put32(val + at + 8, czfs_crc32c(0, im->p + a * BLK, BLK));
		}
		return;
	}
	if (c.kind == CZFS_CLUSTER_SLICE && len >= sizeof(c) + 16 &&
	    c.nblocks && extent_ok(im, a, c.nblocks)) {	/* payload at offset */
		uint32_t off = MIN(get32(val + sizeof(c)), (uint32_t)BLK - 1);
		uint32_t clen = MIN(get32(val + sizeof(c) + 4),
				    (uint32_t)(c.nblocks * BLK - off));

		crc = czfs_crc32c(0, im->p + a * BLK + off, clen);
		put32(val + offsetof(struct czfs_cluster, checksum), crc);
		return;
	}
	if (c.kind == CZFS_CLUSTER_PACKED && len >= sizeof(c) + 16 &&
	    get32(val + sizeof(c) + 8) && c.nblocks &&
	    extent_ok(im, a, c.nblocks)) {	/* a sliced pack: as a slice */
		uint32_t off = MIN(get16(val + sizeof(c) + 12), (uint32_t)BLK - 1);
		uint32_t clen = MIN(get32(val + sizeof(c) + 8),
				    (uint32_t)(c.nblocks * BLK - off));

		crc = czfs_crc32c(0, im->p + a * BLK + off, clen);
		put32(val + offsetof(struct czfs_cluster, checksum), crc);
		return;
	}
	if (c.kind == CZFS_CLUSTER_PACKED)	/* its pack: a raw or compressed extent */
		c.kind = c.alg ? CZFS_CLUSTER_COMPRESSED : CZFS_CLUSTER_RAW;
	if (c.kind == CZFS_CLUSTER_INLINE || c.kind == CZFS_CLUSTER_INLINE_COMPRESSED) {
		crc = czfs_crc32c(0, val + sizeof(c), len - sizeof(c));
	} else if (c.kind == CZFS_CLUSTER_RAW && extent_ok(im, a, c.nblocks)) {
		crc = czfs_crc32c(0, im->p + a * BLK, (size_t)c.nblocks * BLK);
	} else if (c.kind == CZFS_CLUSTER_COMPRESSED && c.nblocks &&
		   extent_ok(im, a, c.nblocks)) {
		uint8_t *h = im->p + a * BLK;
		uint32_t clen = MIN(get32(h + 4), (uint32_t)(c.nblocks * BLK - 16));

		crc = czfs_crc32c(0, h + 16, clen);
		put32(h + 12, crc);
	} else {
		return;
	}
	put32(val + offsetof(struct czfs_cluster, checksum), crc);
}

static void fix_value(struct img *im, uint8_t *ext, uint32_t vlen)
{
	uint64_t a = get64(ext);

	vlen = MIN(vlen, CZFS_XATTR_SIZE_MAX);
	if (extent_ok(im, a, DIV_ROUND_UP(vlen, BLK)))
		put32(ext + 8, czfs_crc32c(0, im->p + a * BLK, vlen));
}

static void fix_xattrs(struct img *im, uint8_t *val, unsigned len)
{
	unsigned pos = 0;

	while (len - pos >= sizeof(struct czfs_xattr_entry)) {
		struct czfs_xattr_entry e;
		uint64_t need;

		memcpy(&e, val + pos, sizeof(e));
		need = sizeof(e) + e.name_len;
		if (e.flags & CZFS_XATTR_EXTERNAL)
			need += sizeof(struct czfs_xattr_extent);
		else
			need += le32_to_cpu(e.value_len);
		if (need > len - pos)
			return;
		if (e.flags & CZFS_XATTR_EXTERNAL)
			fix_value(im, val + pos + sizeof(e) + e.name_len,
				  le32_to_cpu(e.value_len));
		pos += (unsigned)need;
	}
}

static void fix_leaf(struct img *im, uint8_t *blk)
{
	unsigned n = (unsigned)blk[32] | (unsigned)blk[33] << 8;

	for (unsigned i = 0; i < n && HDR + (i + 1) * ITEM <= BLK; i++) {
		struct czfs_item it;
		unsigned off, size, type;

		memcpy(&it, blk + HDR + i * ITEM, ITEM);
		off = le16_to_cpu(it.offset);
		size = le16_to_cpu(it.size);
		type = (unsigned)(le64_to_cpu(it.key.type_offset) >> CZFS_KEY_OFFSET_BITS);
		if (off > BLK || size > BLK - off)
			continue;
		if (type == CZFS_ITEM_CLUSTER)
			fix_cluster(im, blk + off, size);
		else if (type == CZFS_ITEM_XATTR)
			fix_xattrs(im, blk + off, size);
	}
}

/* A leaf pack's checksum covers its header (checksum zeroed) and payload;
 * the leaves inside stay as mutated, for their own checks to find. */
static void fix_leafpack(struct img *im, uint64_t a)
{
	uint8_t *b = im->p + a * BLK, hdr[sizeof(struct czfs_leafpack)];
	uint64_t clen = get32(b + offsetof(struct czfs_leafpack, clen));

	if (sizeof(hdr) + clen > (im->nblocks - a) * BLK)
		return;
	memcpy(hdr, b, sizeof(hdr));
	memset(hdr + 4, 0, 4);
	put32(b + 4, czfs_crc32c(czfs_crc32c(0, hdr, sizeof(hdr)),
				 b + sizeof(hdr), (size_t)clen));
}

/* ---- space map ------------------------------------------------------------- */

static void fix_index(struct img *im, uint8_t *blk)
{
	struct czfs_smap_index *ix = (struct czfs_smap_index *)(void *)blk;

	for (unsigned i = 0; i < CZFS_SMAP_ENTRIES_PER_INDEX; i++) {
		uint8_t *e = (uint8_t *)&ix->entries[i];
		uint64_t a = get64(e);

		if (extent_ok(im, a, 1))
			put32(e + 8, czfs_crc32c(0, im->p + a * BLK, BLK));
	}
	put32(blk, csum_first(blk, BLK));
}

/* The superblock's checksum is its second word. */
static void fix_super(uint8_t *img)
{
	uint8_t sb[sizeof(struct czfs_super_block)];

	memcpy(sb, img, sizeof(sb));
	memset(sb + 4, 0, 4);
	put32(img + 4, czfs_crc32c(0, sb, sizeof(sb)));
}

void czfs_fuzz_fixup(uint8_t *img, size_t size)
{
	struct img im = { img, size / BLK };
	uint8_t *b;

	if (im.nblocks < CZFS_FIRST_DATA_BLKADDR)
		return;
	/* data first: nodes, then index blocks, then checkpoints cover it */
	for (uint64_t a = CZFS_FIRST_DATA_BLKADDR; a < im.nblocks; a++) {
		b = img + a * BLK;
		if (get32(b + 4) == CZFS_NODE_MAGIC && b[34] == 0)
			fix_leaf(&im, b);
	}
	for (uint64_t a = CZFS_FIRST_DATA_BLKADDR; a < im.nblocks; a++) {
		b = img + a * BLK;
		if (get32(b + 4) == CZFS_NODE_MAGIC)
			put32(b, csum_first(b, BLK));
		else if (get32(b) == CZFS_LEAFPACK_MAGIC)
			fix_leafpack(&im, a);
	}
	for (uint64_t a = CZFS_FIRST_DATA_BLKADDR; a < im.nblocks; a++) {
		b = img + a * BLK;
		if (get32(b + 4) == CZFS_SMAP_MAGIC)
			fix_index(&im, b);
	}
	for (uint64_t a = CZFS_CP_BLKADDR0; a <= CZFS_CP_BLKADDR1; a++) {
		b = img + a * BLK;
		if (get32(b + 4) == CZFS_CP_MAGIC)
			put32(b, csum_first(b, BLK));
	}
	fix_super(img);
}
