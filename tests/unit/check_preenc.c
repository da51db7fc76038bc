// SPDX-License-Identifier: MIT
/*
 * Unit tests: mkfs's clusters encoded while a tar is read (mkfs/preenc.c)
 * give what czfs_cluster_encode gives, byte for byte, whatever the order
 * the workers finish in, or with no workers; a cluster never submitted
 * is not found.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compress.h"
#include "czfs_fs.h"
#include "preenc.h"

#define SHIFT		2	/* 16 KiB clusters */
#define CBYTES		(CZFS_BLOCK_SIZE << SHIFT)
#define NCLUSTERS	64

/* Cluster i: text, noise or zeros, so that every kind comes out. */
static void fill(uint8_t *buf, unsigned i)
{
	for (unsigned k = 0; k < CBYTES; k++)
		buf[k] = i % 3 == 0 ? (uint8_t)("czfs "[k % 5] + i) :
			 i % 3 == 1 ? (uint8_t)(rand() >> 7) : 0;
}

START_TEST(encodings_are_the_encoders)
{
	struct czfs_cluster_policy pol = { .alg = _i == 1 ? CZFS_ALG_ZSTD :
						   CZFS_ALG_LZ4,
					   .zero_detect = true,
					   .allow_inline = true };
	/* 3 workers, or none (each cluster encoded as it is submitted) */
	struct mk_preenc_opts o = { .jobs = _i == 2 ? 0 : 3,
				    .cluster_shift = SHIFT, .pol = pol };
	struct czfs_codec *codec = czfs_codec_new();
	static uint8_t in[NCLUSTERS][CBYTES];
	static uint8_t want[CZFS_MAX_CLUSTER_SIZE + CZFS_BLOCK_SIZE];
	static uint8_t got[CZFS_MAX_CLUSTER_SIZE + CZFS_BLOCK_SIZE];
	struct mk_preenc *pe;
	FILE *f = tmpfile();

	srand(1);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(mk_preenc_new(&o, dup(fileno(f)), &pe), 0);
	for (unsigned i = 0; i < NCLUSTERS; i++) {
		uint8_t *b = mk_preenc_buf(pe, true);

		ck_assert_ptr_nonnull(b);
		fill(in[i], i);
		memcpy(b, in[i], CBYTES);
		if (i % 7 != 5)		/* some left to the pipeline */
			mk_preenc_submit(pe, (uint64_t)i * 3 * CBYTES);
	}
	ck_assert_int_eq(mk_preenc_finish(pe), 0);
	pol.allow_inline = false;	/* never for these clusters */
	for (unsigned i = 0; i < NCLUSTERS; i++) {
		struct czfs_cluster_info wci, gci;
		unsigned wlen, glen;
		uint64_t off = (uint64_t)i * 3 * CBYTES;
		int r = mk_preenc_get(pe, off, got, &gci, &glen);

		ck_assert_int_eq(mk_preenc_has(pe, off), i % 7 != 5);
		ck_assert_int_eq(r, i % 7 != 5);
		ck_assert(!mk_preenc_has(pe, off + CBYTES));
		if (!r)
			continue;
		ck_assert_int_eq(czfs_cluster_encode(codec, &pol, in[i], CBYTES,
						     want, &wci, &wlen), 0);
		ck_assert_uint_eq(glen, wlen);
		ck_assert_uint_eq(gci.kind, wci.kind);
		ck_assert_uint_eq(gci.nblocks, wci.nblocks);
		ck_assert_uint_eq(gci.checksum, wci.checksum);
		ck_assert_uint_eq(gci.ulen, wci.ulen);
		ck_assert_mem_eq(got, want, wlen);
	}
	mk_preenc_free(pe);
	czfs_codec_free(codec);
	fclose(f);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("preenc");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, encodings_are_the_encoders, 0, 3);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
