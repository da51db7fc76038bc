// SPDX-License-Identifier: MIT
/* Unit tests: how clusters are stored (kind, blocks, bytes on disk), item
 * encoding and validation, and decoding of damaged clusters. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "cluster.h"
#include "compress.h"
#include "crc32c.h"
#include "log.h"
#include "util.h"

#define BLK		CZFS_BLOCK_SIZE
#define HDR		((unsigned)sizeof(struct czfs_cluster_header))
#define ITEM		((unsigned)sizeof(struct czfs_cluster))
#define OUT_SIZE	(CZFS_MAX_CLUSTER_SIZE + CZFS_BLOCK_SIZE)
#define VAL_SIZE	(ITEM + CZFS_INLINE_MAX + 64)
#define MAX_BLOCKS	1000ull
#define BLKADDR		100ull

static struct czfs_codec *codec;
static uint8_t src[CZFS_MAX_CLUSTER_SIZE];
static uint8_t out[OUT_SIZE];
static uint8_t dst[CZFS_MAX_CLUSTER_SIZE + 64];
static uint8_t val[VAL_SIZE];
static char last_msg[512];
static unsigned nr_msgs;

static void capture(enum czfs_log_level level, const char *msg)
{
	snprintf(last_msg, sizeof(last_msg), "%s", msg);
	nr_msgs++;
}

static void setup(void)
{
	codec = czfs_codec_new();
	ck_assert_ptr_nonnull(codec);
	czfs_log_set_sink(capture, CZFS_LOG_DEBUG);
	last_msg[0] = 0;
	nr_msgs = 0;
}

static void teardown(void)
{
	czfs_codec_free(codec);
	codec = NULL;
}

static uint64_t rng_state;

static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

enum pattern {
	P_ZERO,		/* all zero */
	P_RANDOM,	/* incompressible */
	P_REPEAT,	/* a 64-byte sequence over and over: tiny when compressed */
	P_QUARTER,	/* random first quarter, zeros after */
	P_ONE,		/* zeros but the last byte */
};

/* len bytes: the first nrandom random, the rest zero. */
static void fill_mix(uint8_t *buf, unsigned len, unsigned nrandom, uint64_t seed)
{
	rng_state = seed | 1;
	for (unsigned i = 0; i < nrandom; i++)
		buf[i] = (uint8_t)rng();
	memset(buf + nrandom, 0, len - nrandom);
}

static void fill(uint8_t *buf, unsigned len, enum pattern pat)
{
	switch (pat) {
	case P_RANDOM:
		fill_mix(buf, len, len, len);
		break;
	case P_REPEAT:
		for (unsigned i = 0; i < len; i++)
			buf[i] = (uint8_t)("0123456789abcdefghijklmnopqrstuvwxyz"
					   "ABCDEFGHIJKLMNOPQRSTUVWXYZ!?"[i % 64]);
		break;
	case P_QUARTER:
		fill_mix(buf, len, len / 4, len);
		break;
	case P_ONE:
		memset(buf, 0, len);
		buf[len - 1] = 1;
		break;
	default:
		memset(buf, 0, len);
	}
}

/* The smallest cluster size that holds ulen bytes. */
static unsigned cluster_bytes_for(unsigned ulen)
{
	unsigned cb = BLK;

	while (cb < ulen)
		cb <<= 1;
	return cb;
}

static struct czfs_cluster_policy policy(unsigned alg, int level, bool zd,
					 bool inl)
{
	return (struct czfs_cluster_policy){
		.alg = alg, .level = level, .zero_detect = zd,
		.allow_inline = inl,
	};
}

static void encode(const struct czfs_cluster_policy *pol, unsigned ulen,
		   struct czfs_cluster_info *ci, unsigned *out_len)
{
	ck_assert_int_eq(czfs_cluster_encode(codec, pol, src, ulen, out, ci,
					     out_len), 0);
	if (ci->kind == CZFS_CLUSTER_RAW || ci->kind == CZFS_CLUSTER_COMPRESSED)
		ci->blkaddr = BLKADDR;
}

/* Decode into dst (prefilled with garbage) for a cluster of cb bytes. */
static int decode(const struct czfs_cluster_info *ci, unsigned cb)
{
	memset(dst, 0xaa, sizeof(dst));
	return czfs_cluster_decode(codec, ci, out, dst, cb);
}

/* ---- the decision table ------------------------------------------------- */

struct kind_case {
	unsigned ulen;
	enum pattern pat;
	unsigned alg;
	int level;
	bool zero_detect, allow_inline;
	unsigned kind;
	unsigned nblocks;	/* extent kinds */
	unsigned inline_len;	/* INLINE; INLINE_COMPRESSED: upper bound */
};

#define Z true
#define I true
#define NO false

static const struct kind_case kind_cases[] = {
	/* zero detection on and off */
	{ 65536, P_ZERO, CZFS_ALG_LZ4, 0, Z, NO, CZFS_CLUSTER_HOLE },
	{ 65536, P_ZERO, CZFS_ALG_NONE, 0, Z, I, CZFS_CLUSTER_HOLE },
	{ 65536, P_ZERO, CZFS_ALG_LZ4, 0, NO, NO, CZFS_CLUSTER_COMPRESSED, 1 },
	{ 65536, P_ZERO, CZFS_ALG_ZSTD, 0, NO, I, CZFS_CLUSTER_INLINE_COMPRESSED, 0, 200 },
	{ 65536, P_ZERO, CZFS_ALG_NONE, 0, NO, NO, CZFS_CLUSTER_RAW, 16 },
	{ 65536, P_ONE, CZFS_ALG_LZ4HC, 0, Z, NO, CZFS_CLUSTER_COMPRESSED, 1 },
	{ 1, P_ZERO, CZFS_ALG_LZ4, 0, Z, I, CZFS_CLUSTER_HOLE },
	/* incompressible data is stored raw, inline or not */
	{ 65536, P_RANDOM, CZFS_ALG_LZ4, 0, Z, NO, CZFS_CLUSTER_RAW, 16 },
	{ 65536, P_RANDOM, CZFS_ALG_ZSTD, 0, Z, I, CZFS_CLUSTER_RAW, 16 },
	{ 262144, P_RANDOM, CZFS_ALG_LZ4HC, 12, Z, I, CZFS_CLUSTER_RAW, 64 },
	{ 4096, P_RANDOM, CZFS_ALG_LZ4, 0, Z, I, CZFS_CLUSTER_RAW, 1 },
	/* a quarter of random data needs one block more than that quarter */
	{ 65536, P_QUARTER, CZFS_ALG_LZ4, 0, Z, I, CZFS_CLUSTER_COMPRESSED, 5 },
	{ 65536, P_QUARTER, CZFS_ALG_LZ4HC, 0, Z, NO, CZFS_CLUSTER_COMPRESSED, 5 },
	{ 65536, P_QUARTER, CZFS_ALG_ZSTD, 0, Z, NO, CZFS_CLUSTER_COMPRESSED, 5 },
	{ 16384, P_QUARTER, CZFS_ALG_ZSTD, 0, Z, NO, CZFS_CLUSTER_COMPRESSED, 2 },
	{ 8192, P_QUARTER, CZFS_ALG_LZ4, 0, Z, NO, CZFS_CLUSTER_COMPRESSED, 1 },
	{ 65536, P_QUARTER, CZFS_ALG_NONE, 0, Z, I, CZFS_CLUSTER_RAW, 16 },
	/* the one-block rule: a one-block cluster is never a compressed extent */
	{ 4096, P_REPEAT, CZFS_ALG_LZ4, 0, Z, NO, CZFS_CLUSTER_RAW, 1 },
	{ 4096, P_ZERO, CZFS_ALG_ZSTD, 19, NO, NO, CZFS_CLUSTER_RAW, 1 },
	{ 4096, P_REPEAT, CZFS_ALG_LZ4, 0, Z, I, CZFS_CLUSTER_INLINE_COMPRESSED, 0, 200 },
	{ 262144, P_REPEAT, CZFS_ALG_ZSTD, 19, Z, NO, CZFS_CLUSTER_COMPRESSED, 1 },
	{ 262144, P_REPEAT, CZFS_ALG_LZ4HC, 12, Z, NO, CZFS_CLUSTER_COMPRESSED, 1 },
	{ 262144, P_REPEAT, CZFS_ALG_LZ4, 0, Z, I, CZFS_CLUSTER_INLINE_COMPRESSED, 0, 2048 },
	/* partial last clusters */
	{ 5000, P_RANDOM, CZFS_ALG_LZ4, 0, Z, NO, CZFS_CLUSTER_RAW, 2 },
	{ 5000, P_ZERO, CZFS_ALG_LZ4, 0, NO, NO, CZFS_CLUSTER_COMPRESSED, 1 },
	{ 5000, P_ZERO, CZFS_ALG_LZ4, 0, Z, NO, CZFS_CLUSTER_HOLE },
	{ 12289, P_RANDOM, CZFS_ALG_ZSTD, 0, Z, NO, CZFS_CLUSTER_RAW, 4 },
	{ 65436, P_QUARTER, CZFS_ALG_LZ4, 0, Z, NO, CZFS_CLUSTER_COMPRESSED, 5 },
	{ 100, P_REPEAT, CZFS_ALG_LZ4, 0, Z, I, CZFS_CLUSTER_INLINE_COMPRESSED, 0, 99 },
	{ 100, P_RANDOM, CZFS_ALG_LZ4, 0, Z, I, CZFS_CLUSTER_INLINE, 0, 100 },
	{ 100, P_RANDOM, CZFS_ALG_LZ4, 0, Z, NO, CZFS_CLUSTER_RAW, 1 },
	{ 100, P_REPEAT, CZFS_ALG_NONE, 0, Z, I, CZFS_CLUSTER_INLINE, 0, 100 },
	{ 2048, P_RANDOM, CZFS_ALG_ZSTD, 0, Z, I, CZFS_CLUSTER_INLINE, 0, 2048 },
	{ 2049, P_RANDOM, CZFS_ALG_ZSTD, 0, Z, I, CZFS_CLUSTER_RAW, 1 },
	{ 1, P_RANDOM, CZFS_ALG_LZ4, 0, Z, I, CZFS_CLUSTER_INLINE, 0, 1 },
	{ 1, P_RANDOM, CZFS_ALG_ZSTD, 0, Z, NO, CZFS_CLUSTER_RAW, 1 },
	/* alg NONE never compresses */
	{ 262144, P_REPEAT, CZFS_ALG_NONE, 0, Z, NO, CZFS_CLUSTER_RAW, 64 },
	{ 262144, P_REPEAT, CZFS_ALG_NONE, 0, Z, I, CZFS_CLUSTER_RAW, 64 },
};

/* Bytes on disk as the format describes them. */
static void check_stored(const struct czfs_cluster_info *ci, unsigned out_len)
{
	struct czfs_cluster_header hdr;
	unsigned clen;

	ck_assert_uint_eq(out_len, ci->nblocks * BLK);
	if (ci->kind == CZFS_CLUSTER_RAW) {
		ck_assert(!memcmp(out, src, ci->ulen));
		ck_assert(czfs_is_zero(out + ci->ulen, out_len - ci->ulen));
		ck_assert_uint_eq(ci->checksum, czfs_crc32c(0, out, out_len));
		return;
	}
	memcpy(&hdr, out, HDR);
	clen = le32_to_cpu(hdr.clen);
	ck_assert_uint_eq(le32_to_cpu(hdr.magic), CZFS_CLUSTER_MAGIC);
	ck_assert_uint_eq(le32_to_cpu(hdr.ulen), ci->ulen);
	ck_assert_uint_eq(DIV_ROUND_UP(HDR + clen, BLK), ci->nblocks);
	ck_assert_uint_eq(le32_to_cpu(hdr.checksum), ci->checksum);
	ck_assert_uint_eq(ci->checksum, czfs_crc32c(0, out + HDR, clen));
	ck_assert(czfs_is_zero(out + HDR + clen, out_len - HDR - clen));
}

/* An inline result: the payload at the start of out, no blocks. */
static void check_inline(const struct czfs_cluster_info *ci, unsigned out_len)
{
	ck_assert_uint_eq(out_len, ci->inline_len);
	ck_assert_ptr_eq(ci->inline_data, out);
	ck_assert_uint_eq(ci->nblocks, 0);
	ck_assert_uint_eq(ci->checksum,
			  czfs_crc32c(0, ci->inline_data, ci->inline_len));
}

START_TEST(encode_decision_table)
{
	const struct kind_case *kc = &kind_cases[_i];
	struct czfs_cluster_policy pol = policy(kc->alg, kc->level,
						kc->zero_detect, kc->allow_inline);
	unsigned cb = cluster_bytes_for(kc->ulen), out_len, len;
	struct czfs_cluster_info ci, back;

	/* given ulen bytes of the pattern, when encoded under the policy */
	fill(src, kc->ulen, kc->pat);
	memset(out, 0xee, sizeof(out));
	encode(&pol, kc->ulen, &ci, &out_len);
	/* then the kind and size are the expected ones */
	ck_assert_msg(ci.kind == kc->kind, "case %d: kind %u, expected %u",
		      _i, ci.kind, kc->kind);
	ck_assert_uint_eq(ci.ulen, kc->ulen);
	switch (ci.kind) {
	case CZFS_CLUSTER_HOLE:
		ck_assert_uint_eq(out_len, 0);
		ck_assert_int_eq(decode(&ci, cb), 0);
		ck_assert(czfs_is_zero(dst, cb));
		return;
	case CZFS_CLUSTER_RAW:
	case CZFS_CLUSTER_COMPRESSED:
		ck_assert_msg(ci.nblocks == kc->nblocks,
			      "case %d: %u blocks, expected %u", _i, ci.nblocks,
			      kc->nblocks);
		ck_assert_uint_eq(ci.alg, ci.kind == CZFS_CLUSTER_RAW ?
				  CZFS_ALG_NONE : kc->alg);
		check_stored(&ci, out_len);
		break;
	case CZFS_CLUSTER_INLINE:
		ck_assert_uint_eq(ci.inline_len, kc->inline_len);
		ck_assert(!memcmp(ci.inline_data, src, kc->ulen));
		ck_assert_uint_eq(ci.alg, CZFS_ALG_NONE);
		check_inline(&ci, out_len);
		break;
	default:
		ck_assert_uint_le(ci.inline_len, kc->inline_len);
		ck_assert_uint_lt(ci.inline_len, ci.ulen);
		ck_assert_uint_eq(ci.alg, kc->alg);
		check_inline(&ci, out_len);
	}
	/* and the item survives encode and decode */
	len = czfs_cluster_item_encode(&ci, val);
	ck_assert_uint_eq(len, ITEM + (ci.nblocks ? 0 : ci.inline_len));
	ck_assert_int_eq(czfs_cluster_item_decode(val, len, cb, MAX_BLOCKS,
						  &back), 0);
	ck_assert_uint_eq(back.kind, ci.kind);
	ck_assert_uint_eq(back.alg, ci.alg);
	ck_assert_uint_eq(back.nblocks, ci.nblocks);
	ck_assert_uint_eq(back.checksum, ci.checksum);
	ck_assert_uint_eq(back.blkaddr, ci.blkaddr);
	ck_assert_uint_eq(back.ulen, ci.ulen);
	ck_assert_uint_eq(back.inline_len, ci.inline_len);
	if (back.inline_len)
		ck_assert_ptr_eq(back.inline_data, val + ITEM);
	/* and the data decodes back, zero-filled to the cluster end */
	ck_assert_int_eq(decode(&back, cb), 0);
	ck_assert(!memcmp(dst, src, kc->ulen));
	ck_assert(czfs_is_zero(dst + kc->ulen, cb - kc->ulen));
	ck_assert_uint_eq(dst[cb], 0xaa);
	ck_assert_uint_eq(nr_msgs, 0);
}
END_TEST

/* ---- boundaries ------------------------------------------------------------ */

/* Encode ulen bytes of which the first k are random. */
static void encode_mix(const struct czfs_cluster_policy *pol, unsigned ulen,
		       unsigned k, struct czfs_cluster_info *ci)
{
	unsigned out_len;

	fill_mix(src, ulen, k, 4242);
	encode(pol, ulen, ci, &out_len);
}

typedef bool (*side_fn)(const struct czfs_cluster_info *ci);

/*
 * Bisect the number of random bytes k between lo (left(ci) holds) and hi
 * (it does not) down to two neighbours; returns that lo.
 */
static unsigned bisect(const struct czfs_cluster_policy *pol, unsigned ulen,
		       unsigned lo, unsigned hi, side_fn left)
{
	struct czfs_cluster_info ci;

	encode_mix(pol, ulen, lo, &ci);
	ck_assert(left(&ci));
	encode_mix(pol, ulen, hi, &ci);
	ck_assert(!left(&ci));
	while (hi - lo > 1) {
		unsigned mid = lo + (hi - lo) / 2;

		encode_mix(pol, ulen, mid, &ci);
		if (left(&ci))
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static bool is_compressed(const struct czfs_cluster_info *ci)
{
	return ci->kind == CZFS_CLUSTER_COMPRESSED;
}

static bool fits_two_blocks(const struct czfs_cluster_info *ci)
{
	return ci->kind == CZFS_CLUSTER_COMPRESSED && ci->nblocks <= 2;
}

static bool is_inline(const struct czfs_cluster_info *ci)
{
	return ci->kind == CZFS_CLUSTER_INLINE_COMPRESSED;
}

/* Compressed payload size of the current src with unlimited room. */
static unsigned payload_len(unsigned alg, unsigned ulen)
{
	const struct czfs_compressor *comp = czfs_compressor_get((int)alg);
	static uint8_t z[OUT_SIZE * 2];
	int n = comp->compress(codec, 0, src, ulen, z, sizeof(z));

	ck_assert_int_gt(n, 0);
	return (unsigned)n;
}

static const unsigned boundary_algs[] = {
	CZFS_ALG_LZ4, CZFS_ALG_LZ4HC, CZFS_ALG_ZSTD,
};

/*
 * A boundary of the decision, found by bisecting the share of random bytes
 * in a cluster: below it the result is kind_below in nblocks_below blocks,
 * above it kind_above, because (header +) payload passes limit bytes.
 */
struct boundary_case {
	const char *what;
	unsigned ulen;
	bool allow_inline;
	unsigned lo, hi;		/* bisection range of random bytes */
	side_fn below;
	unsigned kind_below, nblocks_below;
	unsigned kind_above, nblocks_above;
	unsigned hdr, limit;		/* hdr + payload vs limit */
};

static const struct boundary_case boundary_cases[] = {
	/* the one-block rule: compressed only if it saves a block */
	{ "one-block rule", 16384, false, 8192, 16384, is_compressed,
	  CZFS_CLUSTER_COMPRESSED, 3, CZFS_CLUSTER_RAW, 4, HDR, 3 * BLK },
	/* the header counts in the blocks a compressed cluster takes */
	{ "block count", 16384, false, 2048, 3 * BLK - 1024, fits_two_blocks,
	  CZFS_CLUSTER_COMPRESSED, 2, CZFS_CLUSTER_COMPRESSED, 3, HDR, 2 * BLK },
	/* inline holds up to CZFS_INLINE_MAX payload bytes, no header */
	{ "inline limit", 65536, true, 0, 4096, is_inline,
	  CZFS_CLUSTER_INLINE_COMPRESSED, 0, CZFS_CLUSTER_COMPRESSED, 1,
	  0, CZFS_INLINE_MAX },
};

static void check_side(const struct boundary_case *bc, unsigned alg,
		       unsigned k, unsigned kind, unsigned nblocks, bool fits)
{
	struct czfs_cluster_policy pol = policy(alg, 0, false, bc->allow_inline);
	struct czfs_cluster_info ci;
	unsigned need;

	encode_mix(&pol, bc->ulen, k, &ci);
	ck_assert_msg(ci.kind == kind && ci.nblocks == nblocks,
		      "%s, %s, %u random bytes: kind %u in %u blocks",
		      bc->what, czfs_alg_name((int)alg), k, ci.kind, ci.nblocks);
	/* the reason, from the compressor on its own */
	need = bc->hdr + payload_len(alg, bc->ulen);
	ck_assert_msg(fits ? need <= bc->limit : need > bc->limit,
		      "%s: %u bytes needed for limit %u", bc->what, need,
		      bc->limit);
	ck_assert_int_eq(decode(&ci, bc->ulen), 0);
	ck_assert(!memcmp(dst, src, bc->ulen));
}

START_TEST(decision_boundaries)
{
	const struct boundary_case *bc = &boundary_cases[_i / ARRAY_SIZE(boundary_algs)];
	unsigned alg = boundary_algs[_i % ARRAY_SIZE(boundary_algs)], k;
	struct czfs_cluster_policy pol = policy(alg, 0, false, bc->allow_inline);

	/* given k random bytes then zeros, when k crosses the boundary */
	k = bisect(&pol, bc->ulen, bc->lo, bc->hi, bc->below);
	/* then just below it is stored the one way, and fits the limit */
	check_side(bc, alg, k, bc->kind_below, bc->nblocks_below, true);
	/* and one random byte more is stored the other way, past the limit */
	check_side(bc, alg, k + 1, bc->kind_above, bc->nblocks_above, false);
	/* and the boundary sits near the limit: a few bytes of overhead */
	ck_assert_uint_gt(k + 512, bc->limit);
}
END_TEST

/* ---- item validation -------------------------------------------------------- */

enum base { B_RAW, B_COMPRESSED, B_INLINE, B_INLINE_COMPRESSED, B_RESERVED };

/* Encode a known cluster of each kind (64 KiB clusters) into val. */
static unsigned make_base(enum base b, struct czfs_cluster_info *ci)
{
	static const struct { unsigned ulen; enum pattern pat; bool inl; unsigned kind; } bases[] = {
		[B_RAW] = { 65536, P_RANDOM, false, CZFS_CLUSTER_RAW },
		[B_COMPRESSED] = { 65536, P_QUARTER, false, CZFS_CLUSTER_COMPRESSED },
		[B_INLINE] = { 100, P_RANDOM, true, CZFS_CLUSTER_INLINE },
		[B_INLINE_COMPRESSED] = { 4096, P_REPEAT, true, CZFS_CLUSTER_INLINE_COMPRESSED },
	};
	struct czfs_cluster_policy pol;
	unsigned out_len;

	if (b == B_RESERVED) {	/* fallocate's: the whole 64 KiB cluster */
		*ci = (struct czfs_cluster_info){ .kind = CZFS_CLUSTER_RESERVED,
						  .prealloc = 16 };
		memset(val, 0, sizeof(val));
		return czfs_cluster_item_encode(ci, val);
	}
	pol = policy(CZFS_ALG_ZSTD, 0, true, bases[b].inl);
	fill(src, bases[b].ulen, bases[b].pat);
	encode(&pol, bases[b].ulen, ci, &out_len);
	ck_assert_uint_eq(ci->kind, bases[b].kind);
	memset(val, 0, sizeof(val));
	return czfs_cluster_item_encode(ci, val);
}

enum mutation {
	M_NONE, M_KIND0, M_KIND6, M_KIND_FF, M_ALG_BAD, M_ALG_NONE, M_ALG_ON_RAW,
	M_NBLOCKS0, M_NBLOCKS_BIG, M_NBLOCKS_RAW, M_NBLOCKS_COMP, M_BLKADDR0,
	M_BLKADDR2, M_BLKADDR_END, M_BLKADDR_HUGE, M_ULEN0, M_ULEN_BIG,
	M_RES0, M_RES1, M_LEN23, M_LEN0, M_LEN25, M_INLINE_BLKADDR,
	M_INLINE_NBLOCKS, M_INLINE_EMPTY, M_INLINE_BIG, M_INLINE_ULEN,
	M_BLKADDR_FIRST, M_BLKADDR_LAST, M_ULEN1, M_CHECKSUM, M_NBLOCKS1,
	M_PREALLOC0, M_PREALLOC1, M_PREALLOC16, M_PREALLOC17,
};

struct item_case {
	enum base base;
	enum mutation m;
	int err;
};

static const struct item_case item_cases[] = {
	/* the bases themselves and the edges of the valid range */
	{ B_RAW, M_NONE, 0 }, { B_COMPRESSED, M_NONE, 0 },
	{ B_INLINE, M_NONE, 0 }, { B_INLINE_COMPRESSED, M_NONE, 0 },
	{ B_RAW, M_BLKADDR_FIRST, 0 }, { B_RAW, M_BLKADDR_LAST, 0 },
	{ B_COMPRESSED, M_BLKADDR_LAST, 0 },
	/* every field made invalid */
	{ B_RESERVED, M_NONE, 0 }, { B_RESERVED, M_PREALLOC1, 0 },
	/* a partial cluster may promise room for the rest of it */
	{ B_INLINE, M_PREALLOC16, 0 }, { B_INLINE_COMPRESSED, M_PREALLOC1, 0 },
	{ B_RAW, M_KIND0, -EFSCORRUPTED }, { B_RAW, M_KIND6, -EFSCORRUPTED },
	/* a reserved item holds its promise and nothing else */
	{ B_RESERVED, M_PREALLOC0, -EFSCORRUPTED },
	{ B_RESERVED, M_PREALLOC17, -EFSCORRUPTED },
	{ B_RESERVED, M_NBLOCKS1, -EFSCORRUPTED },
	{ B_RESERVED, M_ULEN1, -EFSCORRUPTED },
	{ B_RESERVED, M_CHECKSUM, -EFSCORRUPTED },
	{ B_RESERVED, M_BLKADDR2, -EFSCORRUPTED },
	{ B_RESERVED, M_ALG_ON_RAW, -EFSCORRUPTED },
	{ B_RESERVED, M_RES0, -EFSCORRUPTED },
	{ B_RESERVED, M_LEN25, -EFSCORRUPTED },
	/* a full cluster has nothing left to promise; no more than a cluster */
	{ B_RAW, M_PREALLOC1, -EFSCORRUPTED },
	{ B_COMPRESSED, M_PREALLOC1, -EFSCORRUPTED },
	{ B_INLINE, M_PREALLOC17, -EFSCORRUPTED },
	{ B_INLINE, M_KIND_FF, -EFSCORRUPTED },
	{ B_COMPRESSED, M_ALG_BAD, -EFSCORRUPTED },
	{ B_COMPRESSED, M_ALG_NONE, -EFSCORRUPTED },
	{ B_INLINE_COMPRESSED, M_ALG_BAD, -EFSCORRUPTED },
	{ B_INLINE_COMPRESSED, M_ALG_NONE, -EFSCORRUPTED },
	{ B_RAW, M_ALG_ON_RAW, -EFSCORRUPTED },
	{ B_INLINE, M_ALG_ON_RAW, -EFSCORRUPTED },
	{ B_RAW, M_NBLOCKS0, -EFSCORRUPTED },
	{ B_COMPRESSED, M_NBLOCKS0, -EFSCORRUPTED },
	{ B_RAW, M_NBLOCKS_BIG, -EFSCORRUPTED },
	{ B_COMPRESSED, M_NBLOCKS_BIG, -EFSCORRUPTED },
	{ B_RAW, M_NBLOCKS_RAW, -EFSCORRUPTED },
	{ B_COMPRESSED, M_NBLOCKS_COMP, -EFSCORRUPTED },
	{ B_RAW, M_BLKADDR0, -EFSCORRUPTED },
	{ B_COMPRESSED, M_BLKADDR2, -EFSCORRUPTED },
	{ B_RAW, M_BLKADDR_END, -EFSCORRUPTED },
	{ B_COMPRESSED, M_BLKADDR_END, -EFSCORRUPTED },
	{ B_COMPRESSED, M_BLKADDR_HUGE, -EFSCORRUPTED },
	{ B_RAW, M_ULEN0, -EFSCORRUPTED }, { B_INLINE, M_ULEN0, -EFSCORRUPTED },
	{ B_RAW, M_ULEN_BIG, -EFSCORRUPTED },
	{ B_INLINE_COMPRESSED, M_ULEN_BIG, -EFSCORRUPTED },
	{ B_RAW, M_RES0, -EFSCORRUPTED }, { B_INLINE, M_RES1, -EFSCORRUPTED },
	{ B_COMPRESSED, M_RES1, -EFSCORRUPTED },
	{ B_RAW, M_LEN23, -EFSCORRUPTED }, { B_INLINE, M_LEN0, -EFSCORRUPTED },
	{ B_RAW, M_LEN25, -EFSCORRUPTED }, { B_COMPRESSED, M_LEN25, -EFSCORRUPTED },
	{ B_INLINE, M_INLINE_BLKADDR, -EFSCORRUPTED },
	{ B_INLINE_COMPRESSED, M_INLINE_BLKADDR, -EFSCORRUPTED },
	{ B_INLINE, M_INLINE_NBLOCKS, -EFSCORRUPTED },
	{ B_INLINE_COMPRESSED, M_INLINE_NBLOCKS, -EFSCORRUPTED },
	{ B_INLINE, M_INLINE_EMPTY, -EFSCORRUPTED },
	{ B_INLINE_COMPRESSED, M_INLINE_EMPTY, -EFSCORRUPTED },
	{ B_INLINE_COMPRESSED, M_INLINE_BIG, -EFSCORRUPTED },
	{ B_INLINE, M_INLINE_ULEN, -EFSCORRUPTED },
};

/* Apply m to the item in val; returns its new length. */
static unsigned mutate(enum mutation m, unsigned len)
{
	struct czfs_cluster c;

	memcpy(&c, val, ITEM);
	switch (m) {
	case M_KIND0: c.kind = 0; break;
	case M_KIND6: c.kind = 6; break;
	case M_ULEN1: c.ulen = cpu_to_le32(1); break;
	case M_CHECKSUM: c.checksum = cpu_to_le32(1); break;
	case M_NBLOCKS1: c.nblocks = 1; break;
	case M_PREALLOC0: c.prealloc = 0; break;
	case M_PREALLOC1: c.prealloc = cpu_to_le32(1); break;
	case M_PREALLOC16: c.prealloc = cpu_to_le32(16); break;
	case M_PREALLOC17: c.prealloc = cpu_to_le32(17); break;
	case M_KIND_FF: c.kind = 0xff; break;
	case M_ALG_BAD: c.alg = CZFS_ALG_MAX + 1; break;
	case M_ALG_NONE: c.alg = CZFS_ALG_NONE; break;
	case M_ALG_ON_RAW: c.alg = CZFS_ALG_LZ4; break;
	case M_NBLOCKS0: c.nblocks = 0; break;
	case M_NBLOCKS_BIG: c.nblocks = 17; break;
	case M_NBLOCKS_RAW: c.nblocks = 15; break;
	case M_NBLOCKS_COMP: c.nblocks = 16; break;
	case M_BLKADDR0: c.blkaddr = 0; break;
	case M_BLKADDR2: c.blkaddr = cpu_to_le64(2); break;
	case M_BLKADDR_END:
		c.blkaddr = cpu_to_le64(MAX_BLOCKS - c.nblocks + 1);
		break;
	case M_BLKADDR_LAST:
		c.blkaddr = cpu_to_le64(MAX_BLOCKS - c.nblocks);
		break;
	case M_BLKADDR_FIRST:
		c.blkaddr = cpu_to_le64(CZFS_FIRST_DATA_BLKADDR);
		break;
	case M_BLKADDR_HUGE: c.blkaddr = UINT64_MAX; break;
	case M_ULEN0: c.ulen = 0; break;
	case M_ULEN_BIG: c.ulen = cpu_to_le32(65537); break;
	case M_RES0: c.reserved0 = 1; break;
	case M_RES1: c.prealloc = cpu_to_le32(0x80000000u); break;
	case M_LEN23: len = ITEM - 1; break;
	case M_LEN0: len = 0; break;
	case M_LEN25: len = ITEM + 1; break;
	case M_INLINE_BLKADDR: c.blkaddr = cpu_to_le64(BLKADDR); break;
	case M_INLINE_NBLOCKS: c.nblocks = 1; break;
	case M_INLINE_EMPTY: len = ITEM; break;
	case M_INLINE_BIG: len = ITEM + CZFS_INLINE_MAX + 1; break;
	case M_INLINE_ULEN: c.ulen = cpu_to_le32(le32_to_cpu(c.ulen) + 1); break;
	default: break;
	}
	memcpy(val, &c, ITEM);
	return len;
}

START_TEST(item_validation_table)
{
	const struct item_case *ic = &item_cases[_i];
	struct czfs_cluster_info ci, back;
	unsigned len = make_base(ic->base, &ci);
	int err;

	/* given a valid item with one field made invalid */
	len = mutate(ic->m, len);
	/* when decoded, then the error is the expected one */
	err = czfs_cluster_item_decode(val, len, 65536, MAX_BLOCKS, &back);
	ck_assert_msg(err == ic->err, "case %d (base %d, mutation %d): %d",
		      _i, ic->base, ic->m, err);
	/* and each rejection says why */
	if (err)
		ck_assert_msg(strstr(last_msg, "cluster item") != NULL,
			      "message: %s", last_msg);
	else
		ck_assert_uint_eq(nr_msgs, 0);
}
END_TEST

/* A reserved item decodes to its promise, owns no blocks, reads as zeros. */
START_TEST(item_reserved_reads_as_zeros)
{
	struct czfs_cluster_info ci, back;
	unsigned len = make_base(B_RESERVED, &ci);

	ck_assert_uint_eq(len, ITEM);
	ck_assert_uint_eq(val[20], 16);		/* the promise, le32 at 20 */
	ck_assert_uint_eq(val[2], 0);		/* no blocks */
	ck_assert_int_eq(czfs_cluster_item_decode(val, len, 65536, MAX_BLOCKS,
						  &back), 0);
	ck_assert_uint_eq(back.kind, CZFS_CLUSTER_RESERVED);
	ck_assert_uint_eq(back.prealloc, 16);
	ck_assert_uint_eq(back.nblocks, 0);
	ck_assert_int_eq(decode(&back, 65536), 0);
	ck_assert(czfs_is_zero(dst, 65536));
	/* a promise larger than the file's cluster is refused */
	ck_assert_int_eq(czfs_cluster_item_decode(val, len, 16384, MAX_BLOCKS,
						  &back), -EFSCORRUPTED);
}
END_TEST

START_TEST(item_unaligned)
{
	struct czfs_cluster_info ci, back;
	static uint8_t buf[VAL_SIZE + 8];
	unsigned len = make_base(B_INLINE, &ci);

	/* given an item at an odd offset, as inside a leaf, then it decodes */
	memcpy(buf + 3, val, len);
	ck_assert_int_eq(czfs_cluster_item_decode(buf + 3, len, 4096, MAX_BLOCKS,
						  &back), 0);
	ck_assert_ptr_eq(back.inline_data, buf + 3 + ITEM);
	ck_assert_uint_eq(back.checksum, ci.checksum);
	/* and a cluster size smaller than the ulen is refused */
	len = make_base(B_COMPRESSED, &ci);
	ck_assert_int_eq(czfs_cluster_item_decode(val, len, 32768, MAX_BLOCKS,
						  &back), -EFSCORRUPTED);
	/* and an image too small for the blocks is refused */
	ck_assert_int_eq(czfs_cluster_item_decode(val, len, 65536, 4, &back),
			 -EFSCORRUPTED);
}
END_TEST

/* ---- damaged stored data ---------------------------------------------------- */

enum damage {
	D_PAYLOAD, D_MAGIC, D_CLEN_BIG, D_CLEN_HUGE, D_CLEN_SHORT, D_HDR_ULEN,
	D_HDR_CRC, D_CLEN_FEW_BLOCKS, D_ITEM_ALG, D_ITEM_ULEN, D_DST_SMALL,
	D_RAW_DATA, D_RAW_PADDING, D_INLINE_BYTE, D_INLINE_GARBAGE,
	D_INLINE_ULEN, D_KIND,
};

struct damage_case {
	enum base base;
	enum damage d;
	const char *msg;	/* expected in the log */
};

static const struct damage_case damage_cases[] = {
	{ B_COMPRESSED, D_PAYLOAD, "checksum mismatch" },
	{ B_COMPRESSED, D_MAGIC, "magic" },
	{ B_COMPRESSED, D_CLEN_BIG, "clen" },
	{ B_COMPRESSED, D_CLEN_HUGE, "clen" },
	{ B_COMPRESSED, D_CLEN_SHORT, "checksum mismatch" },
	{ B_COMPRESSED, D_HDR_ULEN, "ulen" },
	{ B_COMPRESSED, D_HDR_CRC, "header checksum" },
	{ B_COMPRESSED, D_CLEN_FEW_BLOCKS, "clen" },
	{ B_COMPRESSED, D_ITEM_ALG, "decode" },
	{ B_COMPRESSED, D_ITEM_ULEN, "decode" },
	{ B_COMPRESSED, D_DST_SMALL, "buffer" },
	{ B_COMPRESSED, D_KIND, "unknown kind" },
	{ B_RAW, D_RAW_DATA, "checksum mismatch" },
	{ B_RAW, D_RAW_PADDING, "checksum mismatch" },
	{ B_INLINE, D_INLINE_BYTE, "checksum mismatch" },
	{ B_INLINE_COMPRESSED, D_INLINE_BYTE, "checksum mismatch" },
	{ B_INLINE_COMPRESSED, D_INLINE_GARBAGE, "decode" },
	{ B_INLINE, D_INLINE_ULEN, "inline payload" },
};

/* Set clen in the stored header and keep the crc in step, as an attacker
 * (or a confused writer) could. */
static void forge_clen(struct czfs_cluster_info *ci, unsigned clen)
{
	struct czfs_cluster_header hdr;

	memcpy(&hdr, out, HDR);
	hdr.clen = cpu_to_le32(clen);
	ci->checksum = czfs_crc32c(0, out + HDR, clen);
	hdr.checksum = cpu_to_le32(ci->checksum);
	memcpy(out, &hdr, HDR);
}

static void header_set(unsigned field, uint32_t v)
{
	memcpy(out + field * 4, &(uint32_t){ cpu_to_le32(v) }, 4);
}

static uint32_t header_get(unsigned field)
{
	uint32_t v;

	memcpy(&v, out + field * 4, 4);
	return le32_to_cpu(v);
}

START_TEST(stored_damage_table)
{
	const struct damage_case *dc = &damage_cases[_i];
	struct czfs_cluster_info ci;
	static uint8_t payload[CZFS_INLINE_MAX];
	unsigned dst_len = 65536, clen;

	make_base(dc->base, &ci);
	clen = header_get(1);
	/* given a stored cluster damaged one way */
	switch (dc->d) {
	case D_PAYLOAD: out[HDR + 100] ^= 0x10; break;
	case D_MAGIC: header_set(0, CZFS_CLUSTER_MAGIC ^ 1); break;
	case D_CLEN_BIG: header_set(1, ci.nblocks * BLK - HDR + 1); break;
	case D_CLEN_HUGE: header_set(1, UINT32_MAX); break;
	case D_CLEN_SHORT: header_set(1, clen - 1); break;
	case D_HDR_ULEN: header_set(2, ci.ulen - 1); break;
	case D_HDR_CRC: header_set(3, ci.checksum ^ 4); break;
	case D_CLEN_FEW_BLOCKS: forge_clen(&ci, 100); break;
	case D_ITEM_ALG: ci.alg = CZFS_ALG_LZ4; break;
	case D_ITEM_ULEN: ci.ulen--; header_set(2, ci.ulen); break;
	case D_DST_SMALL: dst_len = ci.ulen - 1; break;
	case D_KIND: ci.kind = 9; break;
	case D_RAW_DATA: out[12345] ^= 1; break;
	case D_RAW_PADDING:
		/* a raw cluster's crc covers its padding too */
		ck_assert_int_eq(czfs_cluster_encode(codec, &(struct czfs_cluster_policy){ 0 },
						     src, 5000, out, &ci, &clen), 0);
		out[4096 + 4000] ^= 0x80;
		break;
	case D_INLINE_BYTE:
		memcpy(payload, ci.inline_data, ci.inline_len);
		payload[ci.inline_len / 2] ^= 0x01;
		ci.inline_data = payload;
		break;
	case D_INLINE_GARBAGE:
		memset(payload, 0x37, ci.inline_len);
		ci.inline_data = payload;
		ci.checksum = czfs_crc32c(0, payload, ci.inline_len);
		break;
	case D_INLINE_ULEN: ci.ulen++; break;
	}
	/* when decoded, then it is reported corrupt, with the reason */
	memset(dst, 0xaa, sizeof(dst));
	ck_assert_int_eq(czfs_cluster_decode(codec, &ci, out, dst, dst_len),
			 -EFSCORRUPTED);
	ck_assert_msg(strstr(last_msg, dc->msg) != NULL, "case %d: \"%s\"",
		      _i, last_msg);
	/* and nothing was written past the buffer */
	ck_assert_uint_eq(dst[dst_len], 0xaa);
}
END_TEST

START_TEST(every_bit_flip_is_caught)
{
	unsigned alg = boundary_algs[_i], ulen = 8192, clen, used;
	struct czfs_cluster_policy pol = policy(alg, 0, true, false);
	struct czfs_cluster_info ci;
	unsigned out_len, caught = 0;

	/* given a small compressed cluster (1 block for 8 KiB) */
	fill(src, ulen, P_QUARTER);
	encode(&pol, ulen, &ci, &out_len);
	ck_assert_uint_eq(ci.kind, CZFS_CLUSTER_COMPRESSED);
	clen = header_get(1);
	used = HDR + clen;
	for (unsigned bit = 0; bit < out_len * 8; bit++) {
		int err;

		/* when any one bit of the stored block is flipped */
		out[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		memset(dst, 0xaa, ulen + 1);
		err = czfs_cluster_decode(codec, &ci, out, dst, ulen);
		out[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		if (bit / 8 < used) {
			/* then in the header or payload it is caught */
			ck_assert_msg(err == -EFSCORRUPTED, "bit %u: %d", bit, err);
			caught++;
		} else {
			/* and in the zero padding it changes nothing */
			ck_assert_msg(err == 0 && !memcmp(dst, src, ulen),
				      "padding bit %u: %d", bit, err);
		}
		ck_assert_uint_eq(dst[ulen], 0xaa);
	}
	ck_assert_uint_eq(caught, used * 8);
	/* and the original still decodes */
	ck_assert_int_eq(decode(&ci, ulen), 0);
	ck_assert(!memcmp(dst, src, ulen));
}
END_TEST

START_TEST(encode_rejects_bad_length)
{
	struct czfs_cluster_policy pol = policy(CZFS_ALG_LZ4, 0, true, true);
	struct czfs_cluster_info ci;
	unsigned out_len;

	/* given a length outside 1..CZFS_MAX_CLUSTER_SIZE, then -EINVAL */
	ck_assert_int_eq(czfs_cluster_encode(codec, &pol, src, 0, out, &ci,
					     &out_len), -EINVAL);
	ck_assert_int_eq(czfs_cluster_encode(codec, &pol, src,
					     CZFS_MAX_CLUSTER_SIZE + 1, out,
					     &ci, &out_len), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, encode_decision_table, 0, ARRAY_SIZE(kind_cases));
	tcase_add_loop_test(tc, decision_boundaries, 0,
			    ARRAY_SIZE(boundary_cases) * ARRAY_SIZE(boundary_algs));
	tcase_add_loop_test(tc, item_validation_table, 0, ARRAY_SIZE(item_cases));
	tcase_add_test(tc, item_unaligned);
	tcase_add_test(tc, item_reserved_reads_as_zeros);
	tcase_add_loop_test(tc, stored_damage_table, 0, ARRAY_SIZE(damage_cases));
	tcase_add_loop_test(tc, every_bit_flip_is_caught, 0, ARRAY_SIZE(boundary_algs));
	tcase_add_test(tc, encode_rejects_bad_length);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
