// SPDX-License-Identifier: MIT
/* Unit tests: SipHash-2-4 reference vectors and the name hash. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "czfs_fs.h"
#include "hash.h"
#include "util.h"

/* Key 00 01 .. 0f, read as two little-endian words. */
static const uint64_t ref_key[2] = {
	0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull,
};

/*
 * vectors_sip64 of the reference implementation (vectors.h): the output
 * bytes of SipHash-2-4 for message 00 01 .. (len - 1), len = 0..31.
 */
static const uint8_t ref_out[32][8] = {
	{ 0x31, 0x0e, 0x0e, 0xdd, 0x47, 0xdb, 0x6f, 0x72 },
	{ 0xfd, 0x67, 0xdc, 0x93, 0xc5, 0x39, 0xf8, 0x74 },
	{ 0x5a, 0x4f, 0xa9, 0xd9, 0x09, 0x80, 0x6c, 0x0d },
	{ 0x2d, 0x7e, 0xfb, 0xd7, 0x96, 0x66, 0x67, 0x85 },
	{ 0xb7, 0x87, 0x71, 0x27, 0xe0, 0x94, 0x27, 0xcf },
	{ 0x8d, 0xa6, 0x99, 0xcd, 0x64, 0x55, 0x76, 0x18 },
	{ 0xce, 0xe3, 0xfe, 0x58, 0x6e, 0x46, 0xc9, 0xcb },
	{ 0x37, 0xd1, 0x01, 0x8b, 0xf5, 0x00, 0x02, 0xab },
	{ 0x62, 0x24, 0x93, 0x9a, 0x79, 0xf5, 0xf5, 0x93 },
	{ 0xb0, 0xe4, 0xa9, 0x0b, 0xdf, 0x82, 0x00, 0x9e },
	{ 0xf3, 0xb9, 0xdd, 0x94, 0xc5, 0xbb, 0x5d, 0x7a },
	{ 0xa7, 0xad, 0x6b, 0x22, 0x46, 0x2f, 0xb3, 0xf4 },
	{ 0xfb, 0xe5, 0x0e, 0x86, 0xbc, 0x8f, 0x1e, 0x75 },
	{ 0x90, 0x3d, 0x84, 0xc0, 0x27, 0x56, 0xea, 0x14 },
	{ 0xee, 0xf2, 0x7a, 0x8e, 0x90, 0xca, 0x23, 0xf7 },
	{ 0xe5, 0x45, 0xbe, 0x49, 0x61, 0xca, 0x29, 0xa1 },
	{ 0xdb, 0x9b, 0xc2, 0x57, 0x7f, 0xcc, 0x2a, 0x3f },
	{ 0x94, 0x47, 0xbe, 0x2c, 0xf5, 0xe9, 0x9a, 0x69 },
	{ 0x9c, 0xd3, 0x8d, 0x96, 0xf0, 0xb3, 0xc1, 0x4b },
	{ 0xbd, 0x61, 0x79, 0xa7, 0x1d, 0xc9, 0x6d, 0xbb },
	{ 0x98, 0xee, 0xa2, 0x1a, 0xf2, 0x5c, 0xd6, 0xbe },
	{ 0xc7, 0x67, 0x3b, 0x2e, 0xb0, 0xcb, 0xf2, 0xd0 },
	{ 0x88, 0x3e, 0xa3, 0xe3, 0x95, 0x67, 0x53, 0x93 },
	{ 0xc8, 0xce, 0x5c, 0xcd, 0x8c, 0x03, 0x0c, 0xa8 },
	{ 0x94, 0xaf, 0x49, 0xf6, 0xc6, 0x50, 0xad, 0xb8 },
	{ 0xea, 0xb8, 0x85, 0x8a, 0xde, 0x92, 0xe1, 0xbc },
	{ 0xf3, 0x15, 0xbb, 0x5b, 0xb8, 0x35, 0xd8, 0x17 },
	{ 0xad, 0xcf, 0x6b, 0x07, 0x63, 0x61, 0x2e, 0x2f },
	{ 0xa5, 0xc9, 0x1d, 0xa7, 0xac, 0xaa, 0x4d, 0xde },
	{ 0x71, 0x65, 0x95, 0x87, 0x66, 0x50, 0xa2, 0xa6 },
	{ 0x28, 0xef, 0x49, 0x5c, 0x53, 0xa3, 0x87, 0xad },
	{ 0x42, 0xc3, 0x41, 0xd8, 0xfa, 0x92, 0xd8, 0x32 },
};

START_TEST(siphash_reference_vectors)
{
	/* given message 00 01 .. (len - 1) at an odd address, so reads are
	 * unaligned */
	uint8_t buf[1 + 32];
	unsigned len = (unsigned)_i;
	uint64_t want, got;

	for (unsigned i = 0; i < len; i++)
		buf[1 + i] = (uint8_t)i;
	/* when hashed under key 00 .. 0f */
	got = czfs_siphash(ref_key, buf + 1, len);
	/* then the result equals the reference output (little-endian bytes) */
	memcpy(&want, ref_out[len], 8);
	want = le64_to_cpu(want);
	ck_assert_msg(got == want, "len %u: got %016llx want %016llx", len,
		      (unsigned long long)got, (unsigned long long)want);
}
END_TEST

START_TEST(siphash_paper_vector)
{
	/* given the example of the SipHash paper, appendix A (15 bytes) */
	static const uint8_t msg[15] = {
		0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
	};

	/* then the output is the published a129ca6149be45e5 */
	ck_assert_uint_eq(czfs_siphash(ref_key, msg, sizeof(msg)),
			  0xa129ca6149be45e5ull);
	/* and an empty message needs no data pointer */
	ck_assert_uint_eq(czfs_siphash(ref_key, NULL, 0), 0x726fdb47dd0e0e31ull);
}
END_TEST

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

START_TEST(name_hash_range_and_determinism)
{
	static const uint64_t seed[2] = { 0x0123456789abcdefull, 0xfedcba9876543210ull };
	static const uint64_t seed2[2] = { 0x0123456789abcdefull, 0xfedcba9876543211ull };
	const uint64_t limit = 1ull << CZFS_DIRHASH_BITS;
	uint64_t *seen = calloc(4096, sizeof(*seen));
	unsigned differ = 0, top_used = 0;
	char name[32];

	ck_assert_ptr_nonnull(seen);
	for (unsigned i = 0; i < 4096; i++) {
		int len = snprintf(name, sizeof(name), "file-%u.txt", i);
		uint64_t h = czfs_name_hash(seed, name, (size_t)len);

		/* then every hash fits the key offset */
		ck_assert_uint_lt(h, limit);
		/* and the same name under the same seed hashes the same */
		ck_assert_uint_eq(h, czfs_name_hash(seed, name, (size_t)len));
		/* and equals the siphash, masked */
		ck_assert_uint_eq(h, czfs_siphash(seed, name, (size_t)len) & (limit - 1));
		if (h != czfs_name_hash(seed2, name, (size_t)len))
			differ++;
		if (h >> (CZFS_DIRHASH_BITS - 1))
			top_used++;
		seen[i] = h;
	}
	/* and another seed gives other hashes */
	ck_assert_uint_ge(differ, 4090);
	/* and the top bit is used about half the time: the range is covered */
	ck_assert_uint_gt(top_used, 1800);
	ck_assert_uint_lt(top_used, 2300);
	/* and 4096 names do not collide in 52 bits */
	qsort(seen, 4096, sizeof(*seen), cmp_u64);
	for (unsigned i = 1; i < 4096; i++)
		ck_assert(seen[i - 1] != seen[i]);
	/* and names that differ in length only hash differently */
	ck_assert(czfs_name_hash(seed, "aaaaaaaa", 8) !=
		  czfs_name_hash(seed, "aaaaaaaa", 7));
	free(seen);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hash");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_loop_test(tc, siphash_reference_vectors, 0, 32);
	tcase_add_test(tc, siphash_paper_vector);
	tcase_add_test(tc, name_hash_range_and_determinism);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
