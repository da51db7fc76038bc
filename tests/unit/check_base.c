// SPDX-License-Identifier: MIT
/* Unit tests: crc32c, size parsing, zero detection, growable arrays,
 * backing devices. */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <unistd.h>

#include "bdev.h"
#include "crc32c.h"
#include "util.h"

START_TEST(crc32c_known_vectors)
{
	static const uint8_t zeros[32], ones[32] = {
		[0 ... 31] = 0xff
	};

	/* given the check string and the iSCSI (RFC 3720) vectors */
	ck_assert_uint_eq(czfs_crc32c(0, "123456789", 9), 0xe3069283);
	ck_assert_uint_eq(czfs_crc32c(0, zeros, 32), 0x8a9136aa);
	ck_assert_uint_eq(czfs_crc32c(0, ones, 32), 0x62a8ab43);
	ck_assert_uint_eq(czfs_crc32c_sw(0, "123456789", 9), 0xe3069283);
}
END_TEST

START_TEST(crc32c_chaining_and_alignment)
{
	uint8_t buf[1000];

	for (unsigned i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	/* when computed in pieces at odd offsets, then the result is the same */
	for (unsigned off = 0; off < 9; off++) {
		uint32_t whole = czfs_crc32c(0, buf + off, 900);
		uint32_t part = czfs_crc32c(czfs_crc32c(0, buf + off, 333),
					    buf + off + 333, 567);

		ck_assert_uint_eq(whole, part);
		ck_assert_uint_eq(whole, czfs_crc32c_sw(0, buf + off, 900));
	}
}
END_TEST

START_TEST(crc32c_interleaved_lengths)
{
	/* the hardware path cuts long buffers into three blocks (2048 and
	 * 256 bytes each) and joins them: around every boundary, at odd
	 * starts and with a seed, it agrees with the byte-wise tables */
	static const size_t lens[] = {
		767, 768, 769, 775, 776, 1536, 6143, 6144, 6145, 6152, 6912,
		6913, 12288, 65536, 65537, 262144 + 77,
	};
	size_t max = 262144 + 77 + 8;
	uint8_t *buf = malloc(max);

	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < max; i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 13);
	for (unsigned l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
		for (unsigned off = 0; off < 8; off += 3) {
			uint32_t seed = l * 0x9e3779b9u;

			ck_assert_uint_eq(czfs_crc32c(seed, buf + off, lens[l]),
					  czfs_crc32c_sw(seed, buf + off, lens[l]));
		}
	free(buf);
}
END_TEST

START_TEST(parse_size_table)
{
	static const struct { const char *s; int err; uint64_t v; } cases[] = {
		{ "0", 0, 0 }, { "4096", 0, 4096 }, { "64k", 0, 65536 },
		{ "64K", 0, 65536 }, { "1M", 0, 1 << 20 }, { "2G", 0, 2ull << 30 },
		{ "1T", 0, 1ull << 40 }, { "16KiB", 0, 16384 },
		{ "", -EINVAL, 0 }, { "k", -EINVAL, 0 }, { "-1", -EINVAL, 0 },
		{ "12x", -EINVAL, 0 }, { "99999999999T", -EINVAL, 0 },
	};

	for (unsigned i = 0; i < ARRAY_SIZE(cases); i++) {
		uint64_t v = 123;
		int err = czfs_parse_size(cases[i].s, &v);

		ck_assert_msg(err == cases[i].err, "case %s: %d", cases[i].s, err);
		if (!err)
			ck_assert_uint_eq(v, cases[i].v);
	}
}
END_TEST

START_TEST(is_zero_finds_any_byte)
{
	uint8_t buf[4096] = { 0 };

	ck_assert(czfs_is_zero(buf, sizeof(buf)));
	for (unsigned pos = 0; pos < sizeof(buf); pos += 97) {
		buf[pos] = 1;
		ck_assert(!czfs_is_zero(buf, sizeof(buf)));
		buf[pos] = 0;
	}
	buf[4095] = 1;
	ck_assert(!czfs_is_zero(buf, sizeof(buf)));
	ck_assert(czfs_is_zero(buf, 4095));
}
END_TEST

START_TEST(arrays_grow_by_doubling_and_keep_their_elements)
{
	uint32_t *v = NULL;
	unsigned cap = 0;

	/* given an empty array: the first element brings min of them */
	ck_assert_int_eq(CZFS_GROW(v, 0, cap, 16), 0);
	ck_assert_uint_eq(cap, 16);
	for (unsigned i = 0; i < 16; i++) {
		ck_assert_int_eq(CZFS_GROW(v, i, cap, 16), 0);
		v[i] = i * 7;
	}
	ck_assert_uint_eq(cap, 16);		/* no growth while it fits */
	ck_assert_int_eq(CZFS_GROW(v, 16, cap, 16), 0);
	ck_assert_uint_eq(cap, 32);
	for (unsigned i = 0; i < 16; i++)
		ck_assert_uint_eq(v[i], i * 7);
	ck_assert_int_eq(CZFS_RESERVE(v, 100, cap, 16), 0);
	ck_assert_uint_eq(cap, 128);
	ck_assert_uint_eq(v[15], 105);
	/* too many: -ENOMEM, the array as it was */
	ck_assert_int_eq(CZFS_RESERVE(v, SIZE_MAX / 2, cap, 16), -ENOMEM);
	ck_assert_uint_eq(cap, 128);
	ck_assert_uint_eq(v[15], 105);
	free(v);
	ck_assert_uint_eq(czfs_grow_cap(0, 1, 0, 8), 1);
	ck_assert_uint_eq(czfs_grow_cap(0, 5, 4, 8), 8);
	ck_assert_uint_eq(czfs_grow_cap(SIZE_MAX / 2 + 1, SIZE_MAX, 1, 1), 0);
	ck_assert_uint_eq(czfs_grow_cap(1, SIZE_MAX / 4, 1, 8), 0);
}
END_TEST

START_TEST(mem_bdev_logs_and_checks)
{
	struct czfs_bdev *b;
	const struct czfs_bdev_req *log;
	uint8_t buf[8192];
	size_t n;

	ck_assert_int_eq(czfs_bdev_mem_create(8192, 0, &b), 0);
	memset(buf, 0xab, sizeof(buf));
	ck_assert_int_eq(czfs_bdev_write(b, buf, 100, 10000), 0);
	ck_assert_uint_eq(b->size, 10100);		/* grows */
	ck_assert_int_eq(czfs_bdev_read(b, buf, 200, 10000), -EIO); /* past end */
	ck_assert_int_eq(czfs_bdev_read(b, buf, 100, 10000), 0);
	ck_assert_uint_eq(buf[99], 0xab);
	czfs_bdev_mem_fail_after(b, 1, -EIO);
	ck_assert_int_eq(czfs_bdev_read(b, buf, 10, 0), -EIO);
	ck_assert_int_eq(czfs_bdev_read(b, buf, 10, 0), 0);
	log = czfs_bdev_mem_log(b, &n);
	ck_assert_uint_eq(n, 5);
	ck_assert_int_eq(log[0].op, 'w');
	ck_assert_uint_eq(log[0].off, 10000);
	ck_assert_uint_eq(log[2].len, 100);
	ck_assert_uint_eq(atomic_load(&b->stats.reads), 4);
	czfs_bdev_close(b);
}
END_TEST

START_TEST(mem_bdev_direct_alignment)
{
	struct czfs_bdev *b;
	void *buf;

	ck_assert_int_eq(posix_memalign(&buf, 4096, 8192), 0);
	ck_assert_int_eq(czfs_bdev_mem_create(65536, CZFS_BDEV_DIRECT, &b), 0);
	ck_assert_int_eq(czfs_bdev_read(b, buf, 4096, 4096), 0);
	ck_assert_int_eq(czfs_bdev_read(b, buf, 4096, 100), -EINVAL);
	ck_assert_int_eq(czfs_bdev_read(b, buf, 100, 4096), -EINVAL);
	ck_assert_int_eq(czfs_bdev_read(b, (char *)buf + 1, 4096, 0), -EINVAL);
	czfs_bdev_close(b);
	free(buf);
}
END_TEST

START_TEST(file_bdev_roundtrip)
{
	char path[] = "/tmp/czfs-bdev-XXXXXX";
	int fd = mkstemp(path);
	struct czfs_bdev *b;
	char buf[16] = { 0 };

	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(czfs_bdev_open(path, 0, &b), 0);
	ck_assert_int_eq(czfs_bdev_write(b, "hello", 5, 4096), 0);
	ck_assert_uint_eq(b->size, 4101);
	ck_assert_int_eq(czfs_bdev_flush(b), 0);
	ck_assert_int_eq(czfs_bdev_read(b, buf, 5, 4096), 0);
	ck_assert_str_eq(buf, "hello");
	ck_assert_int_eq(czfs_bdev_read(b, buf, 16, 4096), -EIO);
	czfs_bdev_close(b);
	ck_assert_int_eq(czfs_bdev_open(path, CZFS_BDEV_RDONLY, &b), 0);
	ck_assert_int_eq(czfs_bdev_write(b, "x", 1, 0), -EROFS);
	czfs_bdev_close(b);
	ck_assert_int_eq(czfs_bdev_open("/nonexistent/x", 0, &b), -ENOENT);
	unlink(path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("base");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, crc32c_known_vectors);
	tcase_add_test(tc, crc32c_chaining_and_alignment);
	tcase_add_test(tc, crc32c_interleaved_lengths);
	tcase_add_test(tc, parse_size_table);
	tcase_add_test(tc, is_zero_finds_any_byte);
	tcase_add_test(tc, arrays_grow_by_doubling_and_keep_their_elements);
	tcase_add_test(tc, mem_bdev_logs_and_checks);
	tcase_add_test(tc, mem_bdev_direct_alignment);
	tcase_add_test(tc, file_bdev_roundtrip);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
