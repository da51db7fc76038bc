/* SPDX-License-Identifier: MIT */
/*
 * Clusters: the unit of compression.  This module decides how a cluster is
 * stored (hole, raw, compressed, inline; block-mapped when hot, in
 * cluster_blockmap.c; slices of shared runs, in cluster_slice.c) and turns
 * stored bytes back into file data.  It does no I/O.
 */
#ifndef CZFS_CLUSTER_H
#define CZFS_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>

#include "czfs_fs.h"

struct czfs_codec;

#define CZFS_CLUSTER_HOLE	0	/* in-memory kind: no item, no blocks */

/* A decoded, validated cluster item. */
struct czfs_cluster_info {
	unsigned kind;			/* CZFS_CLUSTER_HOLE or czfs_cluster_kind */
	unsigned alg;			/* compressed kinds */
	unsigned nblocks;		/* extent kinds: 1..64; else 0 */
	unsigned prealloc;		/* blocks promised for its next write */
	uint32_t checksum;
	uint64_t blkaddr;		/* extent kinds */
	uint32_t ulen;			/* bytes of file data it holds */
	const void *inline_data;	/* inline kinds: payload; BLOCKMAP: its
					 * struct czfs_cluster_block entries
					 * (borrowed) */
	unsigned inline_len;
	/* PACKED: alg, nblocks, checksum, blkaddr are the pack's (a sliced
	 * pack's slice_off, slice_len and run too) */
	uint32_t pack_off;		/* of its ulen bytes in the pack */
	uint32_t pack_ulen;		/* the decoded pack's bytes */
	/* SLICE: blkaddr, nblocks are the blocks its payload touches */
	uint32_t slice_off;		/* payload start in block blkaddr */
	uint32_t slice_len;		/* payload bytes */
	uint64_t run;			/* its run's first block */
	/* COMPRESSED as czfs_cluster_encode made it: the payload's bytes
	 * after the header (not in the item: 0 when decoded) */
	uint32_t clen;
	/* BLOCKMAP being written: bit i set when entry i is a block written
	 * now (else kept from the item it replaces); not stored */
	uint64_t fresh;
};

/*
 * Bytes of a cluster its inode's inline_bytes counts: an inline payload,
 * or a packed cluster's share of its pack's blocks (its part of the
 * decoded pack, rounded up), so that st_blocks shows what the file's data
 * takes on disk.
 */
static inline unsigned czfs_cluster_shared_bytes(const struct czfs_cluster_info *ci)
{
	uint64_t stored = ci->slice_len ? ci->slice_len :
			  (uint64_t)ci->nblocks << CZFS_BLOCK_SHIFT;

	if (ci->kind == CZFS_CLUSTER_BLOCKMAP)	/* entries, not data */
		return 0;
	if (ci->kind == CZFS_CLUSTER_SLICE)	/* its bytes of the run */
		return ci->slice_len;
	if (ci->kind != CZFS_CLUSTER_PACKED)
		return ci->inline_len;
	return ci->pack_ulen ? (unsigned)((ci->ulen * stored + ci->pack_ulen - 1) /
					  ci->pack_ulen) : 0;
}

/* Kinds whose blocks are read from blkaddr (nblocks of them); a BLOCKMAP
 * cluster's blocks are its entries'.  A SLICE's first and last block may
 * be its neighbours' too. */
static inline bool czfs_cluster_has_extent(unsigned kind)
{
	return kind == CZFS_CLUSTER_RAW || kind == CZFS_CLUSTER_COMPRESSED ||
	       kind == CZFS_CLUSTER_PACKED || kind == CZFS_CLUSTER_SLICE;
}

/* Kinds whose blocks belong to a PACK item, not to the file. */
static inline bool czfs_cluster_is_shared(unsigned kind)
{
	return kind == CZFS_CLUSTER_PACKED || kind == CZFS_CLUSTER_SLICE;
}

/* A PACKED cluster whose pack is a slice of a run. */
static inline bool czfs_cluster_pack_sliced(const struct czfs_cluster_info *ci)
{
	return ci->kind == CZFS_CLUSTER_PACKED && ci->slice_len;
}

/* The key offset of the PACK item of a PACKED ci's pack: what names the
 * pack (two sliced packs may start in one block). */
static inline uint64_t czfs_cluster_pack_key(const struct czfs_cluster_info *ci)
{
	return czfs_cluster_pack_sliced(ci) ?
	       CZFS_PACK_SLICED_KEY(ci->blkaddr, ci->slice_off) : ci->blkaddr;
}

/*
 * The pack a PACKED ci points into, as the RAW (alg 0), COMPRESSED or
 * (a sliced pack) SLICE cluster of pack_ulen bytes it is stored as: what
 * the stored blocks decode as.
 */
void czfs_cluster_pack_info(const struct czfs_cluster_info *ci,
			    struct czfs_cluster_info *pack);

/*
 * The reverse: the PACKED cluster of len bytes at off of the pack, which
 * czfs_cluster_encode stored as the RAW or COMPRESSED cluster pack (its
 * blkaddr set), or which lies in a run as the SLICE cluster pack.
 */
void czfs_cluster_packed_make(const struct czfs_cluster_info *pack,
			      uint32_t off, uint32_t len,
			      struct czfs_cluster_info *ci);

/*
 * Decode a CLUSTER item value of len bytes for a file whose clusters hold
 * cluster_bytes.  inline_data points into val.  Checks kind, alg, nblocks
 * (extent kinds: 1..cluster blocks, a compressed cluster strictly fewer
 * blocks than its raw size), ulen <= cluster_bytes, blkaddr in
 * [CZFS_FIRST_DATA_BLKADDR, max_blocks - nblocks], inline payload size,
 * prealloc <= cluster blocks (and 0 when ulen fills the cluster); a
 * RESERVED item: its size, every field 0 but prealloc (1..cluster blocks);
 * a PACKED item: its size (24 + 16), the pack as a RAW, COMPRESSED or
 * (slice_clen != 0) SLICE item of pack_ulen <= CZFS_PACK_MAX_ULEN bytes
 * would be checked, and offset + ulen <= pack_ulen; a SLICE item: its size (24 + 16), alg,
 * offset < 4096, a payload that saved a block, nblocks the blocks it
 * touches, inside the image and inside CZFS_RUN_MAX_BLOCKS of run <=
 * blkaddr; a BLOCKMAP item: czfs_blockmap_item_check.
 * Returns 0 or -EFSCORRUPTED.
 */
int czfs_cluster_item_decode(const void *val, unsigned len,
			     unsigned cluster_bytes, uint64_t max_blocks,
			     struct czfs_cluster_info *ci);

/*
 * Encode ci (and for inline kinds ci->inline_data) as an item value into
 * val, which must hold sizeof(struct czfs_cluster) + CZFS_INLINE_MAX bytes.
 * Returns the item size.
 */
unsigned czfs_cluster_item_encode(const struct czfs_cluster_info *ci, void *val);

struct czfs_cluster_policy {
	unsigned alg;			/* CZFS_ALG_*; NONE stores raw */
	int level;			/* 0 = default */
	bool zero_detect;		/* all-zero data becomes a hole */
	bool allow_inline;		/* small results may go in the item */
};

/*
 * Encode ulen bytes of src (1 <= ulen <= CZFS_MAX_CLUSTER_SIZE; the part of
 * the cluster past ulen is beyond EOF) into out, which must hold
 * CZFS_MAX_CLUSTER_SIZE + CZFS_BLOCK_SIZE bytes.
 *
 * The decision:
 *   all zero and zero_detect                     -> HOLE, *out_len = 0
 *   compressed header + payload saves a block    -> COMPRESSED
 *   (inline allowed and the result <= CZFS_INLINE_MAX bytes
 *                                    -> INLINE_COMPRESSED or INLINE)
 *   otherwise                                    -> RAW, DIV_ROUND_UP(ulen)
 *                                                   blocks
 * For extent kinds out holds *out_len = nblocks * 4 KiB bytes to write,
 * padding zeroed; for inline kinds out holds the payload and *out_len its
 * length.  ci is filled except blkaddr (a compressed cluster's payload
 * length in ci->clen); ci->inline_data points into out.
 * Returns 0, -ENOMEM, or -EINVAL when ulen is out of range.
 */
int czfs_cluster_encode(struct czfs_codec *codec,
			const struct czfs_cluster_policy *pol,
			const void *src, unsigned ulen, void *out,
			struct czfs_cluster_info *ci, unsigned *out_len);

/* The header of a compressed cluster (struct czfs_cluster_header), decoded. */
struct czfs_cluster_header_info {
	uint32_t magic;			/* CZFS_CLUSTER_MAGIC when intact */
	uint32_t clen;			/* payload bytes */
	uint32_t ulen;			/* decompressed bytes */
	uint32_t checksum;		/* crc32c of the payload */
};

/*
 * Decode the header at the start of a compressed cluster's stored bytes
 * (at least sizeof(struct czfs_cluster_header) of them).  Checks nothing:
 * czfs_cluster_decode validates it against the item; a caller that only
 * shows it compares magic itself.
 */
void czfs_cluster_header_decode(const void *stored,
				struct czfs_cluster_header_info *h);

/*
 * Turn stored bytes back into data.  stored is the nblocks * 4 KiB read from
 * disk for extent kinds (ignored for inline kinds, which use
 * ci->inline_data; a RAW cluster may be read straight into dst and
 * passed with stored == dst).  Writes ci->ulen bytes to dst, then zeroes dst up to
 * dst_len (dst_len >= ci->ulen is required: -EFSCORRUPTED otherwise).
 * Verifies the checksum, the cluster header (magic, clen, ulen) and the
 * decoded length.  A PACKED cluster: stored is the pack's blocks; the whole
 * pack is checked and decoded (into dst when dst_len holds it, else into
 * a buffer of the calling thread, allocated at its first use) and the
 * cluster's range is moved to dst.  A SLICE: stored is the nblocks blocks
 * it touches; its payload at slice_off is checked and decoded.  Returns
 * 0, -EFSCORRUPTED, or -ENOMEM.
 */
int czfs_cluster_decode(struct czfs_codec *codec,
			const struct czfs_cluster_info *ci,
			const void *stored, void *dst, unsigned dst_len);

/* ---- sliced clusters (cluster_slice.c) ---------------------------------- */

/*
 * The SLICE cluster of a compressed payload of clen bytes at byte off of
 * the run starting at block run (alg, checksum, ulen, prealloc from c, a
 * COMPRESSED cluster's info as czfs_cluster_encode gave it).
 */
void czfs_cluster_slice_make(const struct czfs_cluster_info *c, uint64_t run,
			     uint64_t off, uint32_t clen,
			     struct czfs_cluster_info *ci);

/*
 * czfs_cluster_item_decode's check of a SLICE item (ci unpacked, ulen and
 * alg checked): its size, offset < 4096, a payload that saved a block,
 * nblocks the blocks it touches, inside the image and inside
 * CZFS_RUN_MAX_BLOCKS of run <= blkaddr.  Sets slice_off, slice_len and
 * run.  Returns 0 or -EFSCORRUPTED.
 */
int czfs_slice_item_check(const void *val, unsigned len, uint64_t max_blocks,
			  struct czfs_cluster_info *ci);

/*
 * czfs_cluster_decode of a SLICE: stored holds the nblocks blocks it
 * touches; its payload at slice_off is checked (crc) and decompressed to
 * ci->ulen bytes at dst.  Returns 0, -EFSCORRUPTED or -ENOMEM.
 */
int czfs_slice_decode(struct czfs_codec *codec,
		      const struct czfs_cluster_info *ci, const void *stored,
		      void *dst);

/* ---- block-mapped clusters (cluster_blockmap.c) ------------------------- */

/* Entries of a BLOCKMAP cluster: one per block of its ulen bytes. */
unsigned czfs_blockmap_entries(const struct czfs_cluster_info *ci);
/* Entry i of ci's map (i < czfs_blockmap_entries): its block (0: zeros)
 * and the crc32c of the stored 4 KiB. */
void czfs_blockmap_get(const struct czfs_cluster_info *ci, unsigned i,
		       uint64_t *blkaddr, uint32_t *checksum);
/* Write entry i of the entries at map (16 bytes each). */
void czfs_blockmap_set(void *map, unsigned i, uint64_t blkaddr,
		       uint32_t checksum);

/*
 * czfs_cluster_item_decode's check of a BLOCKMAP item (ci unpacked, ulen
 * checked): alg, checksum and blkaddr 0, the size of its entries, each
 * entry's block inside [CZFS_FIRST_DATA_BLKADDR, max_blocks) or 0 (then
 * with checksum 0), reserved fields 0, nblocks = the entries with blocks.
 * Points ci->inline_data at the entries.  Returns 0 or -EFSCORRUPTED.
 */
int czfs_blockmap_item_check(const void *val, unsigned len,
			     uint64_t max_blocks, struct czfs_cluster_info *ci);

/*
 * czfs_cluster_decode of a BLOCKMAP cluster: stored holds block i at
 * i * 4 KiB (zero entries need not be read; stored may be dst, read in
 * place); each stored block's crc is checked, zero entries are zeroed.
 * Returns 0 or -EFSCORRUPTED.
 */
int czfs_blockmap_decode(const struct czfs_cluster_info *ci,
			 const void *stored, void *dst);

/* A kind's name, as messages, dump.czfs and fsck.czfs say it ("unknown"
 * for a bad one). */
const char *czfs_cluster_kind_name(unsigned kind);

/* Entries of a BLOCKMAP ci that name a block it does not write (kept
 * from the item it replaces): bit i for entry i; 0 for other kinds. */
uint64_t czfs_blockmap_kept(const struct czfs_cluster_info *ci);

/*
 * Whether block i of old (the item a BLOCKMAP replaces) may be kept as
 * entry i, unwritten: a RAW cluster's blocks and a BLOCKMAP's entries.
 * Gives its block (0: zeros) and, when *known, its checksum.
 */
bool czfs_blockmap_keeps(const struct czfs_cluster_info *old, unsigned i,
			 uint64_t *blkaddr, uint32_t *checksum, bool *known);

/*
 * The writeback rule: a cluster of len bytes whose dirty blocks (bit i:
 * block i written since old, its stored item, was loaded) overwrite part
 * of what old held is hot: stored BLOCKMAP.  Written whole, or only
 * appended to past old's full blocks, it is encoded as usual (compressed).
 * A log_tail, the partial last cluster of a file its writer fsyncs (a
 * log, a rollback journal, a database's write-ahead log), is hot however
 * it was written, if more than a block: the next append or rewrite then
 * writes its new blocks, not the cluster compressed again, and the
 * background recompression compresses it once it is cold.
 */
bool czfs_cluster_hot(const struct czfs_cluster_info *old, uint64_t dirty,
		      unsigned len, bool log_tail);

#endif /* CZFS_CLUSTER_H */
