// SPDX-License-Identifier: MIT
/* Unit tests: superblock layout, encode/decode, validation of each field. */
#include "config.h"

#include <check.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "compress.h"
#include "crc32c.h"
#include "log.h"
#include "super.h"
#include "util.h"

static char last_err[512];

static void capture_sink(enum czfs_log_level level, const char *msg)
{
	if (level <= CZFS_LOG_ERR)
		snprintf(last_err, sizeof(last_err), "%s", msg);
}

static void setup(void)
{
	last_err[0] = '\0';
	czfs_log_set_sink(capture_sink, CZFS_LOG_DEBUG);
}

static void teardown(void)
{
	czfs_log_set_sink(NULL, CZFS_LOG_INFO);
}

/* A superblock with a distinct value in every field. */
static void sample_sb(struct czfs_sb_info *sb)
{
	czfs_super_init(sb);
	sb->version_minor = 3;
	sb->feature_compat = 0;
	sb->feature_incompat = CZFS_FEATURE_INCOMPAT_LZ4 |
			       CZFS_FEATURE_INCOMPAT_ZSTD;
	sb->feature_ro_compat = 0;
	sb->cluster_shift = 6;
	sb->default_alg = CZFS_ALG_ZSTD;
	sb->default_level = 19;
	sb->max_blocks = 123456789;
	sb->create_time = -1234567890123ll;
	sb->create_nsec = 999999999;
	for (unsigned i = 0; i < 16; i++)
		sb->uuid[i] = (uint8_t)(0xa0 + i);
	sb->hash_seed[0] = 0x0123456789abcdefull;
	sb->hash_seed[1] = 0xfedcba9876543210ull;
	snprintf(sb->label, sizeof(sb->label), "backup-volume");
}

/* The test's own checksum: crc32c of the 256 bytes with bytes 4..7 zero. */
static void reseal(uint8_t *blk)
{
	uint8_t copy[256];
	uint32_t crc;

	memcpy(copy, blk, sizeof(copy));
	memset(copy + 4, 0, 4);
	crc = czfs_crc32c(0, copy, sizeof(copy));
	for (unsigned i = 0; i < 4; i++)
		blk[4 + i] = (uint8_t)(crc >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

static void put_le(uint8_t *p, unsigned n, uint64_t v)
{
	for (unsigned i = 0; i < n; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

START_TEST(roundtrip_every_field)
{
	struct czfs_sb_info in, out;
	uint8_t blk[CZFS_BLOCK_SIZE] = { 0 };
	bool ro = true;

	/* given a superblock with every field set */
	sample_sb(&in);
	/* when it is encoded and decoded */
	czfs_super_encode(&in, blk);
	ck_assert_int_eq(czfs_super_decode(blk, &out, &ro), 0);
	/* then every field comes back */
	ck_assert(!ro);
	ck_assert_uint_eq(out.version_major, 1);
	ck_assert_uint_eq(out.version_minor, 3);
	ck_assert_uint_eq(out.feature_compat, in.feature_compat);
	ck_assert_uint_eq(out.feature_incompat, in.feature_incompat);
	ck_assert_uint_eq(out.feature_ro_compat, in.feature_ro_compat);
	ck_assert_uint_eq(out.cluster_shift, 6);
	ck_assert_uint_eq(out.default_alg, CZFS_ALG_ZSTD);
	ck_assert_int_eq(out.default_level, 19);
	ck_assert_uint_eq(out.max_blocks, 123456789);
	ck_assert_uint_eq(out.cp_blkaddr[0], 1);
	ck_assert_uint_eq(out.cp_blkaddr[1], 2);
	ck_assert_int_eq(out.create_time, -1234567890123ll);
	ck_assert_uint_eq(out.create_nsec, 999999999);
	ck_assert_mem_eq(out.uuid, in.uuid, 16);
	ck_assert_uint_eq(out.hash_seed[0], in.hash_seed[0]);
	ck_assert_uint_eq(out.hash_seed[1], in.hash_seed[1]);
	ck_assert_str_eq(out.label, "backup-volume");
	/* and nothing past the 256-byte struct was written */
	ck_assert(czfs_is_zero(blk + 256, sizeof(blk) - 256));
}
END_TEST

START_TEST(full_length_label)
{
	struct czfs_sb_info in, out;
	uint8_t blk[CZFS_BLOCK_SIZE] = { 0 };

	/* given a label of 64 characters: no room for a NUL on disk */
	sample_sb(&in);
	memset(in.label, 'x', 64);
	in.label[64] = '\0';
	czfs_super_encode(&in, blk);
	ck_assert_uint_eq(blk[104 + 63], 'x');
	ck_assert_uint_eq(blk[168], 0);
	/* then decode gives it back NUL-terminated */
	ck_assert_int_eq(czfs_super_decode(blk, &out, NULL), 0);
	ck_assert_uint_eq(strlen(out.label), 64);
	ck_assert_int_eq(memcmp(out.label, in.label, 65), 0);
}
END_TEST

START_TEST(layout_offsets)
{
	struct czfs_sb_info sb;
	uint8_t blk[CZFS_BLOCK_SIZE] = { 0 }, zeroed[256];

	/* the struct offsets are those of the format */
	ck_assert_uint_eq(offsetof(struct czfs_super_block, magic), 0);
	ck_assert_uint_eq(offsetof(struct czfs_super_block, checksum), 4);
	ck_assert_uint_eq(offsetof(struct czfs_super_block, version_major), 8);
	ck_assert_uint_eq(offsetof(struct czfs_super_block, feature_incompat), 16);
	ck_assert_uint_eq(offsetof(struct czfs_super_block, block_shift), 24);
	ck_assert_uint_eq(offsetof(struct czfs_super_block, default_level), 27);
	ck_assert_uint_eq(offsetof(struct czfs_super_block, max_blocks), 32);
	ck_assert_uint_eq(offsetof(struct czfs_super_block, cp_blkaddr), 40);
	ck_assert_uint_eq(offsetof(struct czfs_super_block, create_time), 56);
	ck_assert_uint_eq(offsetof(struct czfs_super_block, uuid), 72);
	ck_assert_uint_eq(offsetof(struct czfs_super_block, hash_seed), 88);
	ck_assert_uint_eq(offsetof(struct czfs_super_block, label), 104);
	ck_assert_uint_eq(offsetof(struct czfs_super_block, reserved), 168);

	/* and the encoded bytes sit there, little-endian */
	sample_sb(&sb);
	czfs_super_encode(&sb, blk);
	ck_assert_mem_eq(blk, "CZFS", 4);
	ck_assert_uint_eq(get_le(blk + 8, 2), 1);
	ck_assert_uint_eq(get_le(blk + 10, 2), 3);
	ck_assert_uint_eq(get_le(blk + 16, 4), 3);
	ck_assert_uint_eq(blk[24], CZFS_BLOCK_SHIFT);
	ck_assert_uint_eq(blk[25], 6);
	ck_assert_uint_eq(blk[26], CZFS_ALG_ZSTD);
	ck_assert_uint_eq(blk[27], 19);
	ck_assert_uint_eq(get_le(blk + 32, 8), 123456789);
	ck_assert_uint_eq(get_le(blk + 40, 8), 1);
	ck_assert_uint_eq(get_le(blk + 48, 8), 2);
	ck_assert_uint_eq(get_le(blk + 56, 8), (uint64_t)-1234567890123ll);
	ck_assert_uint_eq(get_le(blk + 64, 4), 999999999);
	ck_assert_uint_eq(blk[72], 0xa0);
	ck_assert_uint_eq(blk[87], 0xaf);
	ck_assert_uint_eq(get_le(blk + 88, 8), 0x0123456789abcdefull);
	ck_assert_mem_eq(blk + 104, "backup-volume", 14);
	ck_assert(czfs_is_zero(blk + 168, 88));
	/* the checksum covers the struct with the field zeroed */
	memcpy(zeroed, blk, sizeof(zeroed));
	memset(zeroed + 4, 0, 4);
	ck_assert_uint_eq(get_le(blk + 4, 4),
			  czfs_crc32c(0, zeroed, sizeof(zeroed)));
}
END_TEST

START_TEST(init_defaults)
{
	struct czfs_sb_info sb, out;
	uint8_t blk[CZFS_BLOCK_SIZE] = { 0 };

	czfs_super_init(&sb);
	ck_assert_uint_eq(sb.version_major, 1);
	ck_assert_uint_eq(sb.version_minor, 0);
	ck_assert_uint_eq(sb.cp_blkaddr[0], CZFS_CP_BLKADDR0);
	ck_assert_uint_eq(sb.cp_blkaddr[1], CZFS_CP_BLKADDR1);
	ck_assert_uint_eq(sb.cluster_shift, 4);
	ck_assert_uint_eq(sb.default_alg, CZFS_ALG_LZ4);
	ck_assert_int_eq(sb.default_level, 0);
	ck_assert(sb.feature_incompat & CZFS_FEATURE_INCOMPAT_LZ4);
	/* with only a size added, it is a valid superblock */
	sb.max_blocks = 1024;
	czfs_super_encode(&sb, blk);
	ck_assert_int_eq(czfs_super_decode(blk, &out, NULL), 0);
	ck_assert_uint_eq(out.max_blocks, 1024);
}
END_TEST

/* The largest max_blocks 496 index blocks can describe. */
#define LIMIT_BLOCKS	(496ull * CZFS_SMAP_ENTRIES_PER_INDEX * \
			 CZFS_SMAP_BITS_PER_BLOCK)

static const struct corrupt_case {
	const char *name;
	unsigned off, len;	/* field to overwrite */
	uint64_t val;
	bool reseal;		/* recompute the checksum afterwards */
	int err;
	bool ro_only;
	const char *msg;	/* expected in the error line */
} corrupt_cases[] = {
	{ "magic", 0, 4, 0x12345678, true, -EINVAL, false, "magic" },
	{ "checksum", 110, 1, 'X', false, -EFSCORRUPTED, false,
	  "bad superblock checksum" },
	{ "checksum field", 4, 1, 0x55, false, -EFSCORRUPTED, false,
	  "bad superblock checksum" },
	{ "major 2", 8, 2, 2, true, -EOPNOTSUPP, false, "version 2" },
	{ "major 0", 8, 2, 0, true, -EOPNOTSUPP, false, "version 0" },
	{ "minor 9", 10, 2, 9, true, 0, false, NULL },
	{ "incompat", 16, 4, 0x1u | 0x200u, true, -EOPNOTSUPP, false,
	  "unsupported incompatible features 0x200" },
	{ "ro_compat", 20, 4, 0x4, true, 0, true, NULL },
	{ "compat", 12, 4, 0x8, true, 0, false, NULL },
	{ "block_shift", 24, 1, 13, true, -EFSCORRUPTED, false, "block_shift" },
	{ "cluster_shift", 25, 1, 7, true, -EFSCORRUPTED, false,
	  "cluster_shift" },
	{ "alg", 26, 1, CZFS_ALG_MAX + 1, true, -EFSCORRUPTED, false,
	  "default_alg" },
	{ "level zstd 23", 27, 1, 23, true, -EFSCORRUPTED, false,
	  "default_level" },
	{ "level zstd -1", 27, 1, 0xff, true, -EFSCORRUPTED, false,
	  "default_level -1" },
	{ "max_blocks 3", 32, 8, CZFS_FIRST_DATA_BLKADDR, true, -EFSCORRUPTED,
	  false, "max_blocks" },
	{ "max_blocks 4", 32, 8, CZFS_FIRST_DATA_BLKADDR + 1, true, 0, false,
	  NULL },
	{ "max_blocks limit", 32, 8, LIMIT_BLOCKS, true, 0, false, NULL },
	{ "max_blocks too big", 32, 8, LIMIT_BLOCKS + 1, true, -EFSCORRUPTED,
	  false, "max_blocks" },
	{ "max_blocks 2^64-1", 32, 8, UINT64_MAX, true, -EFSCORRUPTED, false,
	  "max_blocks" },
	{ "cp_blkaddr[0]", 40, 8, 2, true, -EFSCORRUPTED, false, "cp_blkaddr" },
	{ "cp_blkaddr[1]", 48, 8, 3, true, -EFSCORRUPTED, false, "cp_blkaddr" },
};

START_TEST(corruption_table)
{
	const struct corrupt_case *c = &corrupt_cases[_i];
	struct czfs_sb_info sb, out;
	uint8_t blk[CZFS_BLOCK_SIZE] = { 0 };
	bool ro = !c->ro_only;
	int err;

	/* given a valid superblock with one field changed */
	sample_sb(&sb);
	czfs_super_encode(&sb, blk);
	put_le(blk + c->off, c->len, c->val);
	if (c->reseal)
		reseal(blk);
	/* when it is decoded */
	err = czfs_super_decode(blk, &out, &ro);
	/* then the field's own check fails with its own message */
	ck_assert_msg(err == c->err, "%s: got %d want %d", c->name, err, c->err);
	if (!err)
		ck_assert_msg(ro == c->ro_only, "%s: ro_only %d", c->name, ro);
	if (c->msg)
		ck_assert_msg(strstr(last_err, c->msg), "%s: message \"%s\"",
			      c->name, last_err);
	else
		ck_assert_str_eq(last_err, "");
}
END_TEST

START_TEST(level_per_algorithm)
{
	const struct czfs_compressor *comp = czfs_compressor_get((int)_i);
	int min = comp ? comp->min_level : 0, max = comp ? comp->max_level : 0;
	const struct { int level, err; } cases[] = {
		{ 0, 0 }, { min, 0 }, { max, 0 }, { max + 1, -EFSCORRUPTED },
		{ -1, -EFSCORRUPTED }, { min > 1 ? min - 1 : -2, -EFSCORRUPTED },
	};
	struct czfs_sb_info sb, out;
	uint8_t blk[CZFS_BLOCK_SIZE] = { 0 };

	/* given each algorithm, then levels are those its codec accepts */
	for (unsigned i = 0; i < ARRAY_SIZE(cases); i++) {
		sample_sb(&sb);
		sb.default_alg = _i;
		sb.default_level = cases[i].level;
		czfs_super_encode(&sb, blk);
		ck_assert_msg(czfs_super_decode(blk, &out, NULL) == cases[i].err,
			      "alg %d level %d", _i, cases[i].level);
		if (!cases[i].err)
			ck_assert_int_eq(out.default_level, cases[i].level);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("super");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, roundtrip_every_field);
	tcase_add_test(tc, full_length_label);
	tcase_add_test(tc, layout_offsets);
	tcase_add_test(tc, init_defaults);
	tcase_add_loop_test(tc, corruption_table, 0, ARRAY_SIZE(corrupt_cases));
	tcase_add_loop_test(tc, level_per_algorithm, 0, CZFS_ALG_MAX + 1);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
