// SPDX-License-Identifier: MIT
/* Unit tests: every compressor round trips, refuses what does not fit, and
 * survives hostile input; algorithm names and levels parse. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "compress.h"
#include "util.h"

#define SLICE		(256u * 1024)
#define CANARY		64u
#define CANARY_BYTE	0x5a

static uint64_t rng_state;

static uint64_t rng(void)
{
	/* xorshift64*: reproducible data for every run */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

enum pattern { PAT_TEXT, PAT_RANDOM, PAT_ZERO, PAT_MAX };

static const char *const pattern_names[] = { "text", "random", "zero" };

static void fill(uint8_t *buf, unsigned len, enum pattern pat, uint64_t seed)
{
	static const char *const words[] = {
		"the ", "cluster ", "of ", "compressed ", "blocks ", "is ",
		"written ", "once, ", "and ", "read ", "many ", "times.\n",
		"checkpoint ", "B-tree ", "leaf ", "a ",
	};
	unsigned i = 0;

	rng_state = seed | 1;
	switch (pat) {
	case PAT_TEXT:
		while (i < len) {
			const char *w = words[rng() % ARRAY_SIZE(words)];

			for (; *w && i < len; w++)
				buf[i++] = (uint8_t)*w;
		}
		break;
	case PAT_RANDOM:
		for (; i < len; i++)
			buf[i] = (uint8_t)rng();
		break;
	default:
		memset(buf, 0, len);
	}
}

/* A heap copy of exactly len bytes: ASan sees any read past its end. */
static void *dup_exact(const void *p, unsigned len)
{
	void *q = malloc(len ? len : 1);

	ck_assert_ptr_nonnull(q);
	memcpy(q, p, len);
	return q;
}

/*
 * Decompress into a buffer of dst_len bytes followed by a canary: ASan
 * catches overflows in the sanitizer build, the canary in the plain one.
 */
static int decompress_guarded(const struct czfs_compressor *comp,
			      struct czfs_codec *codec, const void *src,
			      unsigned src_len, uint8_t **out, unsigned dst_len)
{
	uint8_t *dst = malloc(dst_len + CANARY);
	void *s = dup_exact(src, src_len);
	int err;

	ck_assert_ptr_nonnull(dst);
	memset(dst, CANARY_BYTE, dst_len + CANARY);
	err = comp->decompress(codec, s, src_len, dst, dst_len);
	for (unsigned i = 0; i < CANARY; i++)
		ck_assert_msg(dst[dst_len + i] == CANARY_BYTE,
			      "%s wrote past dst + %u", comp->name, dst_len);
	free(s);
	*out = dst;
	return err;
}

struct alg_case {
	enum czfs_alg alg;
	int level;
};

static const struct alg_case alg_cases[] = {
	{ CZFS_ALG_LZ4, 0 }, { CZFS_ALG_LZ4, 1 },
	{ CZFS_ALG_LZ4HC, 3 }, { CZFS_ALG_LZ4HC, 0 }, { CZFS_ALG_LZ4HC, 12 },
	{ CZFS_ALG_ZSTD, 1 }, { CZFS_ALG_ZSTD, 0 }, { CZFS_ALG_ZSTD, 9 },
	{ CZFS_ALG_ZSTD, 19 },
};

/* Compress, decompress, compare; returns the compressed size. */
static unsigned round_trip(struct czfs_codec *codec, const struct alg_case *ac,
			   const uint8_t *data, unsigned len)
{
	const struct czfs_compressor *comp = czfs_compressor_get(ac->alg);
	unsigned cap = len + len / 8 + 1024;
	uint8_t *z = malloc(cap), *out;
	int n, err;

	ck_assert_ptr_nonnull(z);
	n = comp->compress(codec, ac->level, data, len, z, cap);
	ck_assert_msg(n > 0, "%s:%d len %u: compress returned %d",
		      comp->name, ac->level, len, n);
	err = decompress_guarded(comp, codec, z, (unsigned)n, &out, len);
	ck_assert_msg(err == 0, "%s:%d len %u: decompress returned %d",
		      comp->name, ac->level, len, err);
	ck_assert_msg(!memcmp(out, data, len), "%s:%d len %u: data differs",
		      comp->name, ac->level, len);
	free(out);
	free(z);
	return (unsigned)n;
}

START_TEST(round_trip_patterns)
{
	static const unsigned sizes[] = { 1, 4096, 65536, SLICE };
	const struct alg_case *ac = &alg_cases[_i];
	const struct czfs_compressor *comp = czfs_compressor_get(ac->alg);
	struct czfs_codec *codec = czfs_codec_new();
	uint8_t *data = malloc(SLICE), *z = malloc(SLICE);

	ck_assert_ptr_nonnull(codec);
	ck_assert_ptr_nonnull(data);
	ck_assert_ptr_nonnull(z);
	for (unsigned s = 0; s < ARRAY_SIZE(sizes); s++) {
		for (int pat = 0; pat < PAT_MAX; pat++) {
			unsigned len = sizes[s], n;

			/* given len bytes of the pattern */
			fill(data, len, pat, len * 31 + (unsigned)pat);
			/* when compressed with room to spare, then it round trips */
			n = round_trip(codec, ac, data, len);
			/* and text and zeros really shrink */
			if (len >= 4096 && pat != PAT_RANDOM)
				ck_assert_msg(n < len / 2, "%s:%d %s %u -> %u",
					      comp->name, ac->level,
					      pattern_names[pat], len, n);
		}
		/* when random data gets less room than its own size, then
		 * the compressor says "does not fit" */
		fill(data, sizes[s], PAT_RANDOM, 99 + s);
		ck_assert_int_eq(comp->compress(codec, ac->level, data, sizes[s],
						z, sizes[s] - 1), 0);
		/* and a round trip still works after that failure */
		round_trip(codec, ac, data, sizes[s]);
	}
	czfs_codec_free(codec);
	free(data);
	free(z);
}
END_TEST

/*
 * The "text" file of the suite's sample data (C headers, tests/sample-data),
 * built from the system's files: make check sets top_srcdir.
 */
static uint8_t *sample_load(const char *name, size_t *len)
{
	const char *top = getenv("top_srcdir");
	size_t cap = 16u << 20, n = 0, r;
	char cmd[512];
	uint8_t *buf;
	FILE *f;

	ck_assert_msg(top, "top_srcdir unset: run through make check");
	snprintf(cmd, sizeof(cmd), "'%s/tests/sample-data' --cat %s", top, name);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	buf = malloc(cap);
	ck_assert_ptr_nonnull(buf);
	while (n < cap && (r = fread(buf + n, 1, cap - n, f)) > 0)
		n += r;
	ck_assert_int_eq(pclose(f), 0);
	*len = n;
	return buf;
}

START_TEST(round_trip_sample_text)
{
	const struct alg_case *ac = &alg_cases[_i];
	struct czfs_codec *codec;
	size_t len = 0;
	uint8_t *text = sample_load("text", &len);

	/* given the sample text, at least 4 slices of 256 KiB */
	ck_assert_uint_ge(len, 4 * SLICE);
	codec = czfs_codec_new();
	ck_assert_ptr_nonnull(codec);
	for (unsigned k = 0; k < 4; k++) {
		size_t off = (len - SLICE) / 3 * k;
		unsigned n = round_trip(codec, ac, text + off, SLICE);

		/* then C headers compress at least 2:1 with every codec */
		ck_assert_msg(n < SLICE / 2, "slice %u: %u bytes", k, n);
	}
	czfs_codec_free(codec);
	free(text);
}
END_TEST

/* ---- hostile input --------------------------------------------------------- */

static const enum czfs_alg hostile_algs[] = {
	CZFS_ALG_LZ4, CZFS_ALG_LZ4HC, CZFS_ALG_ZSTD,
};

#define SMALL_LEN	600u

/* A small stream with both literals and matches. */
static unsigned small_stream(struct czfs_codec *codec,
			     const struct czfs_compressor *comp,
			     uint8_t *data, uint8_t *z, unsigned cap)
{
	int n;

	fill(data, SMALL_LEN, PAT_TEXT, 7);
	fill(data + 200, 40, PAT_RANDOM, 8);
	n = comp->compress(codec, 0, data, SMALL_LEN, z, cap);
	ck_assert_int_gt(n, 0);
	return (unsigned)n;
}

START_TEST(hostile_truncated_and_wrong_length)
{
	const struct czfs_compressor *comp = czfs_compressor_get(hostile_algs[_i]);
	struct czfs_codec *codec = czfs_codec_new();
	uint8_t data[SMALL_LEN], z[2 * SMALL_LEN], *out;
	unsigned n = small_stream(codec, comp, data, z, sizeof(z));

	/* when the stream is cut anywhere, then it is corrupt */
	for (unsigned t = 0; t < n; t++) {
		ck_assert_msg(decompress_guarded(comp, codec, z, t, &out,
						 SMALL_LEN) == -EFSCORRUPTED,
			      "%s: cut at %u of %u decoded", comp->name, t, n);
		free(out);
	}
	/* when the expected length is one short or one long, then corrupt */
	ck_assert_int_eq(decompress_guarded(comp, codec, z, n, &out,
					    SMALL_LEN - 1), -EFSCORRUPTED);
	free(out);
	ck_assert_int_eq(decompress_guarded(comp, codec, z, n, &out,
					    SMALL_LEN + 1), -EFSCORRUPTED);
	free(out);
	/* and with the right length it decodes */
	ck_assert_int_eq(decompress_guarded(comp, codec, z, n, &out,
					    SMALL_LEN), 0);
	ck_assert(!memcmp(out, data, SMALL_LEN));
	free(out);
	czfs_codec_free(codec);
}
END_TEST

START_TEST(hostile_bit_flips)
{
	const struct czfs_compressor *comp = czfs_compressor_get(hostile_algs[_i]);
	struct czfs_codec *codec = czfs_codec_new();
	uint8_t data[SMALL_LEN], z[2 * SMALL_LEN], *out;
	unsigned n = small_stream(codec, comp, data, z, sizeof(z));
	unsigned detected = 0, same = 0, silent = 0;

	for (unsigned bit = 0; bit < n * 8; bit++) {
		int err;

		/* given the stream with one bit flipped */
		z[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		err = decompress_guarded(comp, codec, z, n, &out, SMALL_LEN);
		z[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		/*
		 * then the decoder stays in bounds and either reports the
		 * damage or decodes exactly SMALL_LEN bytes.  A flipped literal
		 * byte decodes "fine" to other data: the codecs carry no
		 * checksum (czfs's crc32c catches it, see check_cluster).
		 */
		ck_assert_msg(err == 0 || err == -EFSCORRUPTED,
			      "%s bit %u: %d", comp->name, bit, err);
		if (err)
			detected++;
		else if (!memcmp(out, data, SMALL_LEN))
			same++;
		else
			silent++;
		free(out);
	}
	/* and the decoder does check its structure */
	ck_assert_uint_gt(detected, 0);
	printf("check_compress: %s: %u bit flips: %u detected, %u harmless, %u changed literals\n",
	       comp->name, n * 8, detected, same, silent);
	czfs_codec_free(codec);
}
END_TEST

START_TEST(hostile_garbage)
{
	static const uint8_t zstd_magic[4] = { 0x28, 0xb5, 0x2f, 0xfd };
	const struct czfs_compressor *comp = czfs_compressor_get(hostile_algs[_i]);
	struct czfs_codec *codec = czfs_codec_new();
	uint8_t junk[1024], *out;

	for (unsigned round = 0; round < 400; round++) {
		unsigned len, dst_len;
		uint64_t r;

		/* given random bytes, half of them behind a zstd frame magic
		 * so that the zstd parser goes deeper */
		rng_state = 0x9e3779b97f4a7c15ull * (round + 1);
		r = rng();
		len = 1 + (unsigned)(r % sizeof(junk));
		dst_len = 1 + (unsigned)((r >> 20) % 65536);
		for (unsigned i = 0; i < len; i++)
			junk[i] = (uint8_t)rng();
		if ((round & 1) && len > 4)
			memcpy(junk, zstd_magic, 4);
		/* then it never decodes to the requested length */
		ck_assert_msg(decompress_guarded(comp, codec, junk, len, &out,
						 dst_len) == -EFSCORRUPTED,
			      "%s round %u decoded", comp->name, round);
		free(out);
	}
	/* and an empty input is corrupt too */
	ck_assert_int_eq(decompress_guarded(comp, codec, junk, 0, &out, 100),
			 -EFSCORRUPTED);
	free(out);
	czfs_codec_free(codec);
}
END_TEST

/* ---- table, names, levels ----------------------------------------------- */

START_TEST(table_and_names)
{
	const struct czfs_compressor *lz4 = czfs_compressor_get(CZFS_ALG_LZ4);
	const struct czfs_compressor *hc = czfs_compressor_get(CZFS_ALG_LZ4HC);
	const struct czfs_compressor *zstd = czfs_compressor_get(CZFS_ALG_ZSTD);

	/* given the on-disk ids, then each maps to its backend */
	ck_assert_ptr_null(czfs_compressor_get(CZFS_ALG_NONE));
	ck_assert_ptr_null(czfs_compressor_get(CZFS_ALG_MAX + 1));
	ck_assert_ptr_null(czfs_compressor_get(-1));
	ck_assert_ptr_null(czfs_compressor_get(255));
	ck_assert_int_eq(lz4->alg, CZFS_ALG_LZ4);
	ck_assert_int_eq(hc->alg, CZFS_ALG_LZ4HC);
	ck_assert_int_eq(zstd->alg, CZFS_ALG_ZSTD);
	/* and lz4hc clusters use the lz4 decoder */
	ck_assert_ptr_eq((void *)hc->decompress, (void *)lz4->decompress);
	/* and the levels are as documented */
	ck_assert_int_eq(lz4->min_level, 1);
	ck_assert_int_eq(lz4->max_level, 1);
	ck_assert_int_eq(lz4->default_level, 1);
	ck_assert_int_eq(hc->min_level, 3);
	ck_assert_int_eq(hc->max_level, 12);
	ck_assert_int_eq(hc->default_level, 9);
	ck_assert_int_eq(zstd->min_level, 1);
	ck_assert_int_eq(zstd->max_level, 22);
	ck_assert_int_eq(zstd->default_level, 3);
	ck_assert_str_eq(czfs_alg_name(CZFS_ALG_NONE), "none");
	ck_assert_str_eq(czfs_alg_name(CZFS_ALG_LZ4), "lz4");
	ck_assert_str_eq(czfs_alg_name(CZFS_ALG_LZ4HC), "lz4hc");
	ck_assert_str_eq(czfs_alg_name(CZFS_ALG_ZSTD), "zstd");
	ck_assert_str_eq(czfs_alg_name(4), "?");
	ck_assert_str_eq(czfs_alg_name(-3), "?");
	/* and freeing no codec is allowed */
	czfs_codec_free(NULL);
}
END_TEST

START_TEST(alg_parse_table)
{
	static const struct {
		const char *spec;
		int err;
		enum czfs_alg alg;
		int level;
	} cases[] = {
		{ "none", 0, CZFS_ALG_NONE, 0 },
		{ "lz4", 0, CZFS_ALG_LZ4, 0 },
		{ "lz4:0", 0, CZFS_ALG_LZ4, 0 },
		{ "lz4:1", 0, CZFS_ALG_LZ4, 1 },
		{ "lz4hc", 0, CZFS_ALG_LZ4HC, 0 },
		{ "lz4hc:3", 0, CZFS_ALG_LZ4HC, 3 },
		{ "lz4hc:12", 0, CZFS_ALG_LZ4HC, 12 },
		{ "zstd", 0, CZFS_ALG_ZSTD, 0 },
		{ "zstd:1", 0, CZFS_ALG_ZSTD, 1 },
		{ "zstd:19", 0, CZFS_ALG_ZSTD, 19 },
		{ "zstd:22", 0, CZFS_ALG_ZSTD, 22 },
		{ "zstd:007", 0, CZFS_ALG_ZSTD, 7 },
		{ "lz4:2", -ERANGE }, { "lz4hc:1", -ERANGE },
		{ "lz4hc:2", -ERANGE }, { "lz4hc:13", -ERANGE },
		{ "zstd:23", -ERANGE }, { "zstd:-1", -ERANGE },
		{ "zstd:+3", -ERANGE }, { "zstd:", -ERANGE },
		{ "zstd:3x", -ERANGE }, { "zstd: 3", -ERANGE },
		{ "zstd:3:4", -ERANGE }, { "zstd:99999999999999999999", -ERANGE },
		{ "none:5", -EINVAL }, { "none:0", -EINVAL }, { "none:", -EINVAL },
		{ "", -EINVAL }, { ":3", -EINVAL }, { "gzip", -EINVAL },
		{ "gzip:3", -EINVAL }, { "lz", -EINVAL }, { "lz4hcx", -EINVAL },
		{ "LZ4", -EINVAL }, { "zstd ", -EINVAL }, { " zstd", -EINVAL },
	};

	for (unsigned i = 0; i < ARRAY_SIZE(cases); i++) {
		enum czfs_alg alg = (enum czfs_alg)77;
		int level = -77;
		int err = czfs_alg_parse(cases[i].spec, &alg, &level);

		ck_assert_msg(err == cases[i].err, "\"%s\": %d", cases[i].spec, err);
		if (err) {
			/* then a failed parse leaves the outputs alone */
			ck_assert_int_eq(alg, 77);
			ck_assert_int_eq(level, -77);
			continue;
		}
		ck_assert_msg(alg == cases[i].alg && level == cases[i].level,
			      "\"%s\": alg %d level %d", cases[i].spec, alg, level);
	}
	ck_assert_int_eq(czfs_alg_parse(NULL, NULL, NULL), -EINVAL);
}
END_TEST

START_TEST(levels_matter_and_are_clamped)
{
	const struct czfs_compressor *zstd = czfs_compressor_get(CZFS_ALG_ZSTD);
	const struct czfs_compressor *hc = czfs_compressor_get(CZFS_ALG_LZ4HC);
	struct czfs_codec *codec = czfs_codec_new();
	static uint8_t data[65536], z[70000];
	int fast, strong, again;

	fill(data, sizeof(data), PAT_TEXT, 5);
	/* given one codec reused across levels, then higher levels shrink
	 * more and the same level gives the same result each time */
	fast = zstd->compress(codec, 1, data, sizeof(data), z, sizeof(z));
	strong = zstd->compress(codec, 19, data, sizeof(data), z, sizeof(z));
	again = zstd->compress(codec, 1, data, sizeof(data), z, sizeof(z));
	ck_assert_int_gt(fast, 0);
	ck_assert_int_lt(strong, fast);
	ck_assert_int_eq(again, fast);
	fast = hc->compress(codec, 3, data, sizeof(data), z, sizeof(z));
	strong = hc->compress(codec, 12, data, sizeof(data), z, sizeof(z));
	ck_assert_int_lt(strong, fast);
	/* when a level is out of range (a damaged inode), then it is clamped */
	ck_assert_int_eq(zstd->compress(codec, 99, data, sizeof(data), z,
					sizeof(z)),
			 zstd->compress(codec, 22, data, sizeof(data), z, sizeof(z)));
	ck_assert_int_eq(hc->compress(codec, -5, data, sizeof(data), z, sizeof(z)),
			 hc->compress(codec, 3, data, sizeof(data), z, sizeof(z)));
	czfs_codec_free(codec);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("compress");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, round_trip_patterns, 0, ARRAY_SIZE(alg_cases));
	tcase_add_loop_test(tc, round_trip_sample_text, 0, ARRAY_SIZE(alg_cases));
	tcase_add_loop_test(tc, hostile_truncated_and_wrong_length, 0,
			    ARRAY_SIZE(hostile_algs));
	tcase_add_loop_test(tc, hostile_bit_flips, 0, ARRAY_SIZE(hostile_algs));
	tcase_add_loop_test(tc, hostile_garbage, 0, ARRAY_SIZE(hostile_algs));
	tcase_add_test(tc, table_and_names);
	tcase_add_test(tc, alg_parse_table);
	tcase_add_test(tc, levels_matter_and_are_clamped);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
