// SPDX-License-Identifier: MIT
/*
 * Clusters: choose how file data is stored (hole, raw, compressed, inline)
 * and turn stored bytes back into data.  This is the hot path of every read:
 * no allocation, one crc32c pass, decompression straight into dst.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "cluster_int.h"
#include "compress.h"
#include "crc32c.h"
#include "log.h"
#include "util.h"

#define HDR_SIZE	((unsigned)sizeof(struct czfs_cluster_header))
#define ITEM_SIZE	((unsigned)sizeof(struct czfs_cluster))
#define PACKED_SIZE	(ITEM_SIZE + (unsigned)sizeof(struct czfs_cluster_packed))

static bool kind_is_extent(unsigned kind)
{
	return kind == CZFS_CLUSTER_RAW || kind == CZFS_CLUSTER_COMPRESSED;
}

static bool kind_is_compressed(unsigned kind)
{
	return kind == CZFS_CLUSTER_COMPRESSED ||
	       kind == CZFS_CLUSTER_INLINE_COMPRESSED ||
	       kind == CZFS_CLUSTER_SLICE;
}

/* ---- item ---------------------------------------------------------------- */

static int item_check_alg(const struct czfs_cluster_info *ci)
{
	if (ci->kind == CZFS_CLUSTER_PACKED) {	/* 0: a raw pack */
		if (ci->alg <= CZFS_ALG_MAX)
			return 0;
		czfs_err("cluster item: packed cluster with bad algorithm %u",
			 ci->alg);
	} else if (kind_is_compressed(ci->kind)) {
		if (ci->alg >= 1 && ci->alg <= CZFS_ALG_MAX)
			return 0;
		czfs_err("cluster item: %s cluster with bad algorithm %u",
			 czfs_cluster_kind_name(ci->kind), ci->alg);
	} else {
		if (ci->alg == CZFS_ALG_NONE)
			return 0;
		czfs_err("cluster item: %s cluster with algorithm %u, expected 0",
			 czfs_cluster_kind_name(ci->kind), ci->alg);
	}
	return -EFSCORRUPTED;
}

/* Extent and reserved items are the bare struct. */
static int item_check_size(const struct czfs_cluster_info *ci, unsigned len)
{
	if (len == ITEM_SIZE)
		return 0;
	czfs_err("cluster item: %s item has %u bytes, expected %u",
		 czfs_cluster_kind_name(ci->kind), len, ITEM_SIZE);
	return -EFSCORRUPTED;
}

static int item_check_extent(const struct czfs_cluster_info *ci, unsigned len,
			     unsigned cluster_bytes, uint64_t max_blocks)
{
	unsigned raw_blocks = DIV_ROUND_UP(ci->ulen, CZFS_BLOCK_SIZE);
	unsigned max_nblocks = cluster_bytes >> CZFS_BLOCK_SHIFT;

	if (item_check_size(ci, len))
		return -EFSCORRUPTED;
	if (ci->nblocks < 1 || ci->nblocks > max_nblocks) {
		czfs_err("cluster item: nblocks %u outside 1..%u",
			 ci->nblocks, max_nblocks);
		return -EFSCORRUPTED;
	}
	if (ci->kind == CZFS_CLUSTER_RAW && ci->nblocks != raw_blocks) {
		czfs_err("cluster item: raw cluster of %u bytes in %u blocks, expected %u",
			 ci->ulen, ci->nblocks, raw_blocks);
		return -EFSCORRUPTED;
	}
	/* Compression must have saved a block, or it would be stored raw. */
	if (ci->kind == CZFS_CLUSTER_COMPRESSED && ci->nblocks >= raw_blocks) {
		czfs_err("cluster item: compressed cluster of %u bytes in %u blocks, expected fewer than %u",
			 ci->ulen, ci->nblocks, raw_blocks);
		return -EFSCORRUPTED;
	}
	if (ci->blkaddr < CZFS_FIRST_DATA_BLKADDR || max_blocks < ci->nblocks ||
	    ci->blkaddr > max_blocks - ci->nblocks) {
		czfs_err("cluster item: blocks %llu+%u outside the image (%llu blocks)",
			 (unsigned long long)ci->blkaddr, ci->nblocks,
			 (unsigned long long)max_blocks);
		return -EFSCORRUPTED;
	}
	return 0;
}

static int item_check_inline(const struct czfs_cluster_info *ci)
{
	if (ci->blkaddr || ci->nblocks) {
		czfs_err("cluster item: %s cluster with blkaddr %llu nblocks %u, expected 0",
			 czfs_cluster_kind_name(ci->kind), (unsigned long long)ci->blkaddr,
			 ci->nblocks);
		return -EFSCORRUPTED;
	}
	if (ci->inline_len < 1 || ci->inline_len > CZFS_INLINE_MAX) {
		czfs_err("cluster item: inline payload of %u bytes, expected 1..%u",
			 ci->inline_len, CZFS_INLINE_MAX);
		return -EFSCORRUPTED;
	}
	if (ci->kind == CZFS_CLUSTER_INLINE && ci->inline_len != ci->ulen) {
		czfs_err("cluster item: inline payload of %u bytes for ulen %u",
			 ci->inline_len, ci->ulen);
		return -EFSCORRUPTED;
	}
	return 0;
}

/* Space set aside, nothing else: the promise is the only field. */
static int item_check_reserved(const struct czfs_cluster_info *ci, unsigned len,
			       unsigned cluster_bytes)
{
	unsigned max_nblocks = cluster_bytes >> CZFS_BLOCK_SHIFT;

	if (item_check_size(ci, len))
		return -EFSCORRUPTED;
	if (ci->alg || ci->nblocks || ci->checksum || ci->blkaddr || ci->ulen) {
		czfs_err("cluster item: reserved cluster with alg %u nblocks %u checksum 0x%08x blkaddr %llu ulen %u, expected 0",
			 ci->alg, ci->nblocks, ci->checksum,
			 (unsigned long long)ci->blkaddr, ci->ulen);
		return -EFSCORRUPTED;
	}
	if (ci->prealloc < 1 || ci->prealloc > max_nblocks) {
		czfs_err("cluster item: reserved cluster promising %u blocks, expected 1..%u",
			 ci->prealloc, max_nblocks);
		return -EFSCORRUPTED;
	}
	return 0;
}

/* A data cluster may promise room only for what it does not fill. */
static int item_check_prealloc(const struct czfs_cluster_info *ci,
			       unsigned cluster_bytes)
{
	unsigned max_nblocks = cluster_bytes >> CZFS_BLOCK_SHIFT;

	if (!ci->prealloc ||
	    (ci->prealloc <= max_nblocks && ci->ulen < cluster_bytes))
		return 0;
	czfs_err("cluster item: %s cluster of %u bytes promising %u blocks, expected 0..%u for a partial cluster",
		 czfs_cluster_kind_name(ci->kind), ci->ulen, ci->prealloc, max_nblocks);
	return -EFSCORRUPTED;
}

static void item_unpack(const void *val, unsigned len,
			struct czfs_cluster_info *ci, struct czfs_cluster *raw)
{
	memcpy(raw, val, ITEM_SIZE);
	*ci = (struct czfs_cluster_info){
		.kind = raw->kind,
		.alg = raw->alg,
		.nblocks = raw->nblocks,
		.checksum = le32_to_cpu(raw->checksum),
		.blkaddr = le64_to_cpu(raw->blkaddr),
		.ulen = le32_to_cpu(raw->ulen),
		.prealloc = le32_to_cpu(raw->prealloc),
	};
	if (ci->kind == CZFS_CLUSTER_INLINE ||
	    ci->kind == CZFS_CLUSTER_INLINE_COMPRESSED) {
		ci->inline_data = (const char *)val + ITEM_SIZE;
		ci->inline_len = len - ITEM_SIZE;
	}
}

void czfs_cluster_pack_info(const struct czfs_cluster_info *ci,
			    struct czfs_cluster_info *pack)
{
	*pack = (struct czfs_cluster_info){
		.kind = ci->slice_len ? CZFS_CLUSTER_SLICE :
			ci->alg ? CZFS_CLUSTER_COMPRESSED : CZFS_CLUSTER_RAW,
		.alg = ci->alg,
		.nblocks = ci->nblocks,
		.checksum = ci->checksum,
		.blkaddr = ci->blkaddr,
		.ulen = ci->pack_ulen,
		.slice_off = ci->slice_off,
		.slice_len = ci->slice_len,
		.run = ci->run,
	};
}

void czfs_cluster_packed_make(const struct czfs_cluster_info *pack,
			      uint32_t off, uint32_t len,
			      struct czfs_cluster_info *ci)
{
	bool sliced = pack->kind == CZFS_CLUSTER_SLICE;

	*ci = (struct czfs_cluster_info){
		.kind = CZFS_CLUSTER_PACKED,
		.alg = pack->kind == CZFS_CLUSTER_COMPRESSED || sliced ?
		       pack->alg : 0,
		.nblocks = pack->nblocks,
		.checksum = pack->checksum,
		.blkaddr = pack->blkaddr,
		.ulen = len,
		.pack_off = off,
		.pack_ulen = pack->ulen,
		.slice_off = sliced ? pack->slice_off : 0,
		.slice_len = sliced ? pack->slice_len : 0,
		.run = sliced ? pack->run : 0,
	};
}

/* The pack must check as the extent it is stored as; the range in it. */
static int item_check_packed(const void *val, unsigned len,
			     struct czfs_cluster_info *ci, uint64_t max_blocks)
{
	struct czfs_cluster_packed ext;
	struct czfs_cluster_info pack;
	uint8_t fake[ITEM_SIZE + sizeof(struct czfs_cluster_slice)];
	unsigned fake_len;

	if (len != PACKED_SIZE) {
		czfs_err("cluster item: packed item has %u bytes, expected %u",
			 len, PACKED_SIZE);
		return -EFSCORRUPTED;
	}
	memcpy(&ext, (const char *)val + ITEM_SIZE, sizeof(ext));
	ci->pack_off = le32_to_cpu(ext.offset);
	ci->pack_ulen = le32_to_cpu(ext.pack_ulen);
	ci->slice_len = le32_to_cpu(ext.slice_clen);
	ci->slice_off = le16_to_cpu(ext.slice_off);
	/* a sliced pack's run lies run_back blocks before it (an
	 * underflow is caught by the slice check below) */
	ci->run = ci->slice_len ? ci->blkaddr - ext.run_back : 0;
	if (ext.reserved ||
	    (!ci->slice_len && (ext.slice_off || ext.run_back))) {
		czfs_err("cluster item: packed item's reserved field not zero");
		return -EFSCORRUPTED;
	}
	if (ci->slice_len && ci->blkaddr >= CZFS_PACK_SLICED_MAX_BLKADDR) {
		czfs_err("cluster item: sliced pack at block %llu, past 2^43",
			 (unsigned long long)ci->blkaddr);
		return -EFSCORRUPTED;
	}
	if (ci->pack_ulen > CZFS_PACK_MAX_ULEN ||
	    ci->pack_off > ci->pack_ulen ||
	    ci->ulen > ci->pack_ulen - ci->pack_off) {
		czfs_err("cluster item: %u bytes at %u of a pack of %u bytes (at most %u)",
			 ci->ulen, ci->pack_off, ci->pack_ulen,
			 CZFS_PACK_MAX_ULEN);
		return -EFSCORRUPTED;
	}
	czfs_cluster_pack_info(ci, &pack);
	fake_len = czfs_cluster_item_encode(&pack, fake);
	return czfs_cluster_item_decode(fake, fake_len, CZFS_PACK_MAX_ULEN,
					max_blocks, &pack);
}

int czfs_cluster_item_decode(const void *val, unsigned len,
			     unsigned cluster_bytes, uint64_t max_blocks,
			     struct czfs_cluster_info *ci)
{
	struct czfs_cluster raw;
	int err;

	if (len < ITEM_SIZE) {
		czfs_err("cluster item: %u bytes, expected at least %u",
			 len, ITEM_SIZE);
		return -EFSCORRUPTED;
	}
	cluster_bytes = MIN(cluster_bytes, CZFS_MAX_CLUSTER_SIZE);
	item_unpack(val, len, ci, &raw);
	if (ci->kind < CZFS_CLUSTER_RAW || ci->kind > CZFS_CLUSTER_SLICE) {
		czfs_err("cluster item: unknown kind %u", ci->kind);
		return -EFSCORRUPTED;
	}
	if (raw.reserved0) {
		czfs_err("cluster item: reserved fields not zero");
		return -EFSCORRUPTED;
	}
	if (ci->kind == CZFS_CLUSTER_RESERVED)
		return item_check_reserved(ci, len, cluster_bytes);
	if (ci->ulen < 1 || ci->ulen > cluster_bytes) {
		czfs_err("cluster item: ulen %u outside 1..%u",
			 ci->ulen, cluster_bytes);
		return -EFSCORRUPTED;
	}
	err = item_check_alg(ci);
	if (!err)
		err = item_check_prealloc(ci, cluster_bytes);
	if (err)
		return err;
	if (ci->kind == CZFS_CLUSTER_PACKED)
		return item_check_packed(val, len, ci, max_blocks);
	if (ci->kind == CZFS_CLUSTER_SLICE)
		return czfs_slice_item_check(val, len, max_blocks, ci);
	if (ci->kind == CZFS_CLUSTER_BLOCKMAP)
		return czfs_blockmap_item_check(val, len, max_blocks, ci);
	if (kind_is_extent(ci->kind))
		return item_check_extent(ci, len, cluster_bytes, max_blocks);
	return item_check_inline(ci);
}

unsigned czfs_cluster_item_encode(const struct czfs_cluster_info *ci, void *val)
{
	struct czfs_cluster raw = {
		.kind = (uint8_t)ci->kind,
		.alg = (uint8_t)ci->alg,
		.nblocks = (uint8_t)ci->nblocks,
		.checksum = cpu_to_le32(ci->checksum),
		.blkaddr = cpu_to_le64(ci->blkaddr),
		.ulen = cpu_to_le32(ci->ulen),
		.prealloc = cpu_to_le32(ci->prealloc),
	};
	unsigned len = ITEM_SIZE;

	memcpy(val, &raw, ITEM_SIZE);
	if (ci->kind == CZFS_CLUSTER_INLINE ||
	    ci->kind == CZFS_CLUSTER_INLINE_COMPRESSED ||
	    ci->kind == CZFS_CLUSTER_BLOCKMAP) {	/* payload or entries */
		unsigned n = MIN(ci->inline_len, CZFS_INLINE_MAX);

		memcpy((char *)val + ITEM_SIZE, ci->inline_data, n);
		len += n;
	} else if (ci->kind == CZFS_CLUSTER_PACKED) {
		struct czfs_cluster_packed ext = {
			.offset = cpu_to_le32(ci->pack_off),
			.pack_ulen = cpu_to_le32(ci->pack_ulen),
			.slice_clen = cpu_to_le32(ci->slice_len),
			.slice_off = cpu_to_le16((uint16_t)ci->slice_off),
			.run_back = ci->slice_len ?
				    (uint8_t)(ci->blkaddr - ci->run) : 0,
		};

		memcpy((char *)val + ITEM_SIZE, &ext, sizeof(ext));
		len += sizeof(ext);
	} else if (ci->kind == CZFS_CLUSTER_SLICE) {
		struct czfs_cluster_slice ext = {
			.offset = cpu_to_le32(ci->slice_off),
			.clen = cpu_to_le32(ci->slice_len),
			.run = cpu_to_le64(ci->run),
		};

		memcpy((char *)val + ITEM_SIZE, &ext, sizeof(ext));
		len += sizeof(ext);
	}
	return len;
}

/* ---- encode -------------------------------------------------------------- */

/*
 * Room for the compressed payload: what still saves a block as an extent
 * (the one-block rule, as f2fs), or what fits inline when that is allowed.
 */
static unsigned compress_cap(const struct czfs_cluster_policy *pol,
			     unsigned ulen, unsigned raw_blocks)
{
	unsigned cap = 0;

	if (raw_blocks > 1)
		cap = (raw_blocks - 1) * CZFS_BLOCK_SIZE - HDR_SIZE;
	if (pol->allow_inline)
		cap = MAX(cap, MIN(CZFS_INLINE_MAX, ulen - 1));
	return cap;
}

static void emit_compressed(const struct czfs_cluster_policy *pol,
			    unsigned ulen, unsigned clen, unsigned char *out,
			    struct czfs_cluster_info *ci, unsigned *out_len)
{
	uint32_t crc = czfs_crc32c(0, out + HDR_SIZE, clen);
	struct czfs_cluster_header hdr = {
		.magic = cpu_to_le32(CZFS_CLUSTER_MAGIC),
		.clen = cpu_to_le32(clen),
		.ulen = cpu_to_le32(ulen),
		.checksum = cpu_to_le32(crc),
	};
	unsigned nblocks = DIV_ROUND_UP(HDR_SIZE + clen, CZFS_BLOCK_SIZE);

	memcpy(out, &hdr, HDR_SIZE);
	memset(out + HDR_SIZE + clen, 0,
	       nblocks * CZFS_BLOCK_SIZE - HDR_SIZE - clen);
	ci->kind = CZFS_CLUSTER_COMPRESSED;
	ci->alg = pol->alg;
	ci->nblocks = nblocks;
	ci->checksum = crc;
	ci->clen = clen;
	*out_len = nblocks * CZFS_BLOCK_SIZE;
}

static void emit_raw(const void *src, unsigned ulen, unsigned char *out,
		     struct czfs_cluster_info *ci, unsigned *out_len)
{
	unsigned nblocks = DIV_ROUND_UP(ulen, CZFS_BLOCK_SIZE);
	unsigned len = nblocks * CZFS_BLOCK_SIZE;

	memcpy(out, src, ulen);
	memset(out + ulen, 0, len - ulen);
	ci->kind = CZFS_CLUSTER_RAW;
	ci->nblocks = nblocks;
	ci->checksum = czfs_crc32c(0, out, len);
	*out_len = len;
}

/* The payload is already at out (inline raw) or out + HDR (compressed). */
static void emit_inline(unsigned kind, unsigned alg, unsigned len,
			unsigned char *out, struct czfs_cluster_info *ci,
			unsigned *out_len)
{
	if (kind == CZFS_CLUSTER_INLINE_COMPRESSED)
		memmove(out, out + HDR_SIZE, len);
	ci->kind = kind;
	ci->alg = alg;
	ci->checksum = czfs_crc32c(0, out, len);
	ci->inline_data = out;
	ci->inline_len = len;
	*out_len = len;
}

static int try_compress(struct czfs_codec *codec,
			const struct czfs_cluster_policy *pol,
			const void *src, unsigned ulen, unsigned char *out)
{
	const struct czfs_compressor *comp = NULL;
	unsigned cap = compress_cap(pol, ulen, DIV_ROUND_UP(ulen, CZFS_BLOCK_SIZE));

	if (pol->alg != CZFS_ALG_NONE)
		comp = czfs_compressor_get((int)pol->alg);
	if (!comp || !cap)
		return 0;
	return comp->compress(codec, pol->level, src, ulen, out + HDR_SIZE, cap);
}

int czfs_cluster_encode(struct czfs_codec *codec,
			const struct czfs_cluster_policy *pol,
			const void *src, unsigned ulen, void *out,
			struct czfs_cluster_info *ci, unsigned *out_len)
{
	unsigned raw_blocks = DIV_ROUND_UP(ulen, CZFS_BLOCK_SIZE);
	unsigned char *o = out;
	int clen;

	if (ulen < 1 || ulen > CZFS_MAX_CLUSTER_SIZE)
		return -EINVAL;
	*ci = (struct czfs_cluster_info){ .ulen = ulen };
	*out_len = 0;
	if (pol->zero_detect && czfs_is_zero(src, ulen)) {
		ci->kind = CZFS_CLUSTER_HOLE;
		return 0;
	}
	clen = try_compress(codec, pol, src, ulen, o);
	if (clen < 0)
		return clen;
	if (pol->allow_inline) {
		if (clen > 0 && clen <= CZFS_INLINE_MAX && (unsigned)clen < ulen) {
			emit_inline(CZFS_CLUSTER_INLINE_COMPRESSED, pol->alg,
				    clen, o, ci, out_len);
			return 0;
		}
		if (ulen <= CZFS_INLINE_MAX) {
			memcpy(o, src, ulen);
			emit_inline(CZFS_CLUSTER_INLINE, CZFS_ALG_NONE, ulen,
				    o, ci, out_len);
			return 0;
		}
	}
	if (clen > 0 &&
	    HDR_SIZE + (unsigned)clen <= (raw_blocks - 1) * CZFS_BLOCK_SIZE)
		emit_compressed(pol, ulen, clen, o, ci, out_len);
	else
		emit_raw(src, ulen, o, ci, out_len);
	return 0;
}

/* ---- decode -------------------------------------------------------------- */

static int decode_raw(const struct czfs_cluster_info *ci, const void *stored,
		      void *dst)
{
	unsigned len = ci->nblocks * CZFS_BLOCK_SIZE;
	int err = czfs_cluster_check_nblocks(ci);

	if (err)
		return err;
	if (ci->ulen > len) {
		cluster_err(ci, "%u blocks cannot hold it", ci->nblocks);
		return -EFSCORRUPTED;
	}
	err = czfs_cluster_verify_crc(ci, stored, len);
	if (!err && stored != dst)	/* read in place: nothing to move */
		memcpy(dst, stored, ci->ulen);
	return err;
}

void czfs_cluster_header_decode(const void *stored,
				struct czfs_cluster_header_info *h)
{
	struct czfs_cluster_header raw;

	memcpy(&raw, stored, HDR_SIZE);
	*h = (struct czfs_cluster_header_info){
		.magic = le32_to_cpu(raw.magic),
		.clen = le32_to_cpu(raw.clen),
		.ulen = le32_to_cpu(raw.ulen),
		.checksum = le32_to_cpu(raw.checksum),
	};
}

static int check_header(const struct czfs_cluster_info *ci,
			const struct czfs_cluster_header_info *h)
{
	if (h->magic != CZFS_CLUSTER_MAGIC) {
		cluster_err(ci, "bad header magic %08x", h->magic);
		return -EFSCORRUPTED;
	}
	if (h->checksum != ci->checksum) {
		cluster_err(ci, "header checksum %08x differs from the item's %08x",
			    h->checksum, ci->checksum);
		return -EFSCORRUPTED;
	}
	if (h->ulen != ci->ulen) {
		cluster_err(ci, "header ulen %u differs from the item's", h->ulen);
		return -EFSCORRUPTED;
	}
	if (DIV_ROUND_UP(HDR_SIZE + h->clen, CZFS_BLOCK_SIZE) != ci->nblocks) {
		cluster_err(ci, "header clen %u does not end in block %u",
			    h->clen, ci->nblocks);
		return -EFSCORRUPTED;
	}
	return 0;
}

static int decode_compressed(struct czfs_codec *codec,
			     const struct czfs_cluster_info *ci,
			     const unsigned char *stored, void *dst)
{
	struct czfs_cluster_header_info h;
	int err = czfs_cluster_check_nblocks(ci);

	if (err)
		return err;
	czfs_cluster_header_decode(stored, &h);
	/* Bound clen before the crc reads the payload it names. */
	if (h.clen > ci->nblocks * CZFS_BLOCK_SIZE - HDR_SIZE) {
		cluster_err(ci, "header clen %u exceeds its %u blocks",
			    h.clen, ci->nblocks);
		return -EFSCORRUPTED;
	}
	err = czfs_cluster_verify_crc(ci, stored + HDR_SIZE, h.clen);
	if (!err)
		err = check_header(ci, &h);
	if (!err)
		err = czfs_cluster_expand(codec, ci, stored + HDR_SIZE, h.clen,
					  dst);
	return err;
}

static int decode_inline(struct czfs_codec *codec,
			 const struct czfs_cluster_info *ci, void *dst)
{
	int err;

	if (!ci->inline_data || ci->inline_len < 1 ||
	    ci->inline_len > CZFS_INLINE_MAX) {
		cluster_err(ci, "inline payload of %u bytes", ci->inline_len);
		return -EFSCORRUPTED;
	}
	err = czfs_cluster_verify_crc(ci, ci->inline_data, ci->inline_len);
	if (err)
		return err;
	if (ci->kind == CZFS_CLUSTER_INLINE_COMPRESSED)
		return czfs_cluster_expand(codec, ci, ci->inline_data,
					   ci->inline_len, dst);
	if (ci->inline_len != ci->ulen) {
		cluster_err(ci, "inline payload of %u bytes", ci->inline_len);
		return -EFSCORRUPTED;
	}
	memcpy(dst, ci->inline_data, ci->ulen);
	return 0;
}

static pthread_key_t pack_key;
static pthread_once_t pack_once = PTHREAD_ONCE_INIT;
static int pack_key_err;

static void pack_key_init(void)
{
	pack_key_err = pthread_key_create(&pack_key, free);
}

/* The calling thread's buffer for a pack that dst cannot hold. */
static void *pack_buffer(void)
{
	void *buf;

	pthread_once(&pack_once, pack_key_init);
	if (pack_key_err)
		return NULL;
	buf = pthread_getspecific(pack_key);
	if (!buf) {
		buf = malloc(CZFS_PACK_MAX_ULEN);
		if (buf && pthread_setspecific(pack_key, buf)) {
			free(buf);
			buf = NULL;
		}
	}
	return buf;
}

/* The whole pack is checked and decoded, then the range taken. */
static int decode_packed(struct czfs_codec *codec,
			 const struct czfs_cluster_info *ci,
			 const void *stored, void *dst, unsigned dst_len)
{
	struct czfs_cluster_info pack;
	uint8_t *buf = dst;
	int err;

	if (ci->pack_ulen > CZFS_PACK_MAX_ULEN || ci->pack_off > ci->pack_ulen ||
	    ci->ulen > ci->pack_ulen - ci->pack_off) {
		cluster_err(ci, "range %u+%u outside its pack of %u bytes",
			    ci->pack_off, ci->ulen, ci->pack_ulen);
		return -EFSCORRUPTED;
	}
	czfs_cluster_pack_info(ci, &pack);
	if (pack.kind == CZFS_CLUSTER_RAW) {	/* checked where it lies */
		err = czfs_cluster_check_nblocks(&pack);
		if (!err && pack.ulen > pack.nblocks * CZFS_BLOCK_SIZE) {
			cluster_err(ci, "%u blocks cannot hold its pack",
				    pack.nblocks);
			err = -EFSCORRUPTED;
		}
		if (!err)
			err = czfs_cluster_verify_crc(&pack, stored,
					 pack.nblocks * CZFS_BLOCK_SIZE);
		if (!err)
			memmove(dst, (const char *)stored + ci->pack_off, ci->ulen);
		return err;
	}
	if (dst_len < pack.ulen)
		buf = pack_buffer();
	if (!buf)
		return -ENOMEM;
	err = pack.kind == CZFS_CLUSTER_SLICE ?
	      czfs_slice_decode(codec, &pack, stored, buf) :
	      decode_compressed(codec, &pack, stored, buf);
	if (!err)
		memmove(dst, buf + ci->pack_off, ci->ulen);
	return err;
}

int czfs_cluster_decode(struct czfs_codec *codec,
			const struct czfs_cluster_info *ci,
			const void *stored, void *dst, unsigned dst_len)
{
	int err;

	if (ci->ulen > dst_len) {
		cluster_err(ci, "does not fit a %u-byte buffer", dst_len);
		return -EFSCORRUPTED;
	}
	switch (ci->kind) {
	case CZFS_CLUSTER_HOLE:
	case CZFS_CLUSTER_RESERVED:	/* no data yet: zeros */
		err = 0;
		break;
	case CZFS_CLUSTER_RAW:
		err = decode_raw(ci, stored, dst);
		break;
	case CZFS_CLUSTER_COMPRESSED:
		err = decode_compressed(codec, ci, stored, dst);
		break;
	case CZFS_CLUSTER_INLINE:
	case CZFS_CLUSTER_INLINE_COMPRESSED:
		err = decode_inline(codec, ci, dst);
		break;
	case CZFS_CLUSTER_BLOCKMAP:
		err = czfs_blockmap_decode(ci, stored, dst);
		break;
	case CZFS_CLUSTER_PACKED:
		err = decode_packed(codec, ci, stored, dst, dst_len);
		break;
	case CZFS_CLUSTER_SLICE:
		err = czfs_slice_decode(codec, ci, stored, dst);
		break;
	default:
		cluster_err(ci, "unknown kind %u", ci->kind);
		return -EFSCORRUPTED;
	}
	if (err)
		return err;
	if (ci->kind == CZFS_CLUSTER_HOLE)
		memset(dst, 0, dst_len);
	else
		memset((char *)dst + ci->ulen, 0, dst_len - ci->ulen);
	return 0;
}
