// SPDX-License-Identifier: MIT
/* Unit tests: how clusters are stored (kind, blocks, bytes on disk): the
 * encode decisions, their boundaries, the lengths encode refuses.  Items
 * and damaged clusters: check_cluster_item.c. */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_testlib.h"
#include "crc32c.h"
#include "util.h"

/* ---- the decision table ------------------------------------------------- */

/* The smallest cluster size that holds ulen bytes. */
static unsigned cluster_bytes_for(unsigned ulen)
{
	unsigned cb = BLK;

	while (cb < ulen)
		cb <<= 1;
	return cb;
}

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
	const struct boundary_case *bc = &boundary_cases[_i / ARRAY_SIZE(comp_algs)];
	unsigned alg = comp_algs[_i % ARRAY_SIZE(comp_algs)], k;
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

	tcase_add_checked_fixture(tc, cluster_test_setup, cluster_test_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, encode_decision_table, 0, ARRAY_SIZE(kind_cases));
	tcase_add_loop_test(tc, decision_boundaries, 0,
			    ARRAY_SIZE(boundary_cases) * ARRAY_SIZE(comp_algs));
	tcase_add_test(tc, encode_rejects_bad_length);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
