// SPDX-License-Identifier: MIT
/* Shared by the cluster test programs: buffers, log capture, patterns. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <string.h>

#include "cluster_testlib.h"
#include "log.h"
#include "util.h"

struct czfs_codec *codec;
uint8_t src[CZFS_MAX_CLUSTER_SIZE];
uint8_t out[OUT_SIZE];
uint8_t dst[CZFS_MAX_CLUSTER_SIZE + 64];
uint8_t val[VAL_SIZE];
char last_msg[512];
unsigned nr_msgs;

const unsigned comp_algs[NR_COMP_ALGS] = {
	CZFS_ALG_LZ4, CZFS_ALG_LZ4HC, CZFS_ALG_ZSTD,
};

static void capture(enum czfs_log_level level, const char *msg)
{
	snprintf(last_msg, sizeof(last_msg), "%s", msg);
	nr_msgs++;
}

void cluster_test_setup(void)
{
	codec = czfs_codec_new();
	ck_assert_ptr_nonnull(codec);
	czfs_log_set_sink(capture, CZFS_LOG_DEBUG);
	last_msg[0] = 0;
	nr_msgs = 0;
}

void cluster_test_teardown(void)
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

void fill_mix(uint8_t *buf, unsigned len, unsigned nrandom, uint64_t seed)
{
	rng_state = seed | 1;
	for (unsigned i = 0; i < nrandom; i++)
		buf[i] = (uint8_t)rng();
	memset(buf + nrandom, 0, len - nrandom);
}

void fill(uint8_t *buf, unsigned len, enum pattern pat)
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

struct czfs_cluster_policy policy(unsigned alg, int level, bool zd, bool inl)
{
	return (struct czfs_cluster_policy){
		.alg = alg, .level = level, .zero_detect = zd,
		.allow_inline = inl,
	};
}

void encode(const struct czfs_cluster_policy *pol, unsigned ulen,
	    struct czfs_cluster_info *ci, unsigned *out_len)
{
	ck_assert_int_eq(czfs_cluster_encode(codec, pol, src, ulen, out, ci,
					     out_len), 0);
	if (ci->kind == CZFS_CLUSTER_COMPRESSED) {	/* the payload it reports */
		struct czfs_cluster_header_info h;

		czfs_cluster_header_decode(out, &h);
		ck_assert_uint_eq(ci->clen, h.clen);
		ck_assert_uint_gt(ci->clen, 0);
	}
	if (ci->kind == CZFS_CLUSTER_RAW || ci->kind == CZFS_CLUSTER_COMPRESSED)
		ci->blkaddr = BLKADDR;
}

int decode(const struct czfs_cluster_info *ci, unsigned cb)
{
	memset(dst, 0xaa, sizeof(dst));
	return czfs_cluster_decode(codec, ci, out, dst, cb);
}
