// SPDX-License-Identifier: MIT
/*
 * Shared by the cluster test programs (check_cluster: how clusters are
 * encoded; check_cluster_item: items and damaged clusters): the buffers,
 * the log capture, the data patterns and encode/decode with asserts.
 */
#ifndef CZFS_CLUSTER_TESTLIB_H
#define CZFS_CLUSTER_TESTLIB_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "compress.h"

#define BLK		CZFS_BLOCK_SIZE
#define HDR		((unsigned)sizeof(struct czfs_cluster_header))
#define ITEM		((unsigned)sizeof(struct czfs_cluster))
#define OUT_SIZE	(CZFS_MAX_CLUSTER_SIZE + CZFS_BLOCK_SIZE)
#define VAL_SIZE	(ITEM + CZFS_INLINE_MAX + 64)
#define MAX_BLOCKS	1000ull
#define BLKADDR		100ull

/* The fixture's codec, and the buffers a test encodes and decodes with:
 * src the data, out the stored bytes, dst the decoded ones, val an item. */
extern struct czfs_codec *codec;
extern uint8_t src[CZFS_MAX_CLUSTER_SIZE];
extern uint8_t out[OUT_SIZE];
extern uint8_t dst[CZFS_MAX_CLUSTER_SIZE + 64];
extern uint8_t val[VAL_SIZE];
/* The library's last message and how many came (cleared by the fixture). */
extern char last_msg[512];
extern unsigned nr_msgs;

/* The algorithms that compress: every one but NONE. */
#define NR_COMP_ALGS	3
extern const unsigned comp_algs[NR_COMP_ALGS];

/* Checked fixture: a fresh codec; the library's messages captured. */
void cluster_test_setup(void);
void cluster_test_teardown(void);

enum pattern {
	P_ZERO,		/* all zero */
	P_RANDOM,	/* incompressible */
	P_REPEAT,	/* a 64-byte sequence over and over: tiny when compressed */
	P_QUARTER,	/* random first quarter, zeros after */
	P_ONE,		/* zeros but the last byte */
};

/* len bytes: the first nrandom random (from seed), the rest zero. */
void fill_mix(uint8_t *buf, unsigned len, unsigned nrandom, uint64_t seed);
/* len bytes of the pattern. */
void fill(uint8_t *buf, unsigned len, enum pattern pat);

struct czfs_cluster_policy policy(unsigned alg, int level, bool zd, bool inl);
/* Encode ulen bytes of src into out, asserting success (and a compressed
 * cluster's clen: its header's); an extent gets BLKADDR. */
void encode(const struct czfs_cluster_policy *pol, unsigned ulen,
	    struct czfs_cluster_info *ci, unsigned *out_len);
/* Decode out into dst (prefilled with garbage) for a cluster of cb bytes. */
int decode(const struct czfs_cluster_info *ci, unsigned cb);

#endif /* CZFS_CLUSTER_TESTLIB_H */
