// SPDX-License-Identifier: MIT
/*
 * Unit tests: batched backing reads.  The in-memory device records every
 * request, so the split of known runs is asserted exactly.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "bdev.h"
#include "iobatch.h"
#include "util.h"

#define DEV_BLOCKS	1024
#define K		1024ull

static struct czfs_bdev *dev;
static uint8_t *mem;			/* destination: DEV_BLOCKS pages */
static void *pages[DEV_BLOCKS];

static void setup(void)
{
	ck_assert_int_eq(czfs_bdev_mem_create(DEV_BLOCKS * 4096ull, 0, &dev), 0);
	for (unsigned i = 0; i < DEV_BLOCKS * 4096u; i += 4)
		memcpy(czfs_bdev_mem_data(dev) + i, &i, 4);
	ck_assert_int_eq(posix_memalign((void **)&mem, 4096, DEV_BLOCKS * 4096ull), 0);
	/* destinations scattered: block i goes to page (i * 7) % DEV_BLOCKS */
	for (unsigned i = 0; i < DEV_BLOCKS; i++)
		pages[i] = mem + (size_t)((i * 7) % DEV_BLOCKS) * 4096;
	czfs_bdev_mem_clear_log(dev);
}

static void teardown(void)
{
	czfs_bdev_close(dev);
	free(mem);
}

/* The requests logged, as "off:len" in KiB, for comparison. */
static void expect_log(const char *want)
{
	const struct czfs_bdev_req *log;
	char got[1024] = "";
	size_t n, len = 0;

	log = czfs_bdev_mem_log(dev, &n);
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(got + len, sizeof(got) - len, "%s%llu:%llu",
					i ? " " : "", (unsigned long long)(log[i].off / K),
					(unsigned long long)(log[i].len / K));
	ck_assert_str_eq(got, want);
}

static void expect_data(uint64_t blk, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uint32_t v;

		memcpy(&v, pages[blk + i], 4);
		ck_assert_uint_eq(v, (blk + i) * 4096);
	}
}

START_TEST(aligned_run_gives_whole_aligned_requests)
{
	struct czfs_iobatch_opts o = { 64 * K, true };
	/* a run from 20 KiB to 300 KiB in two adjacent segments */
	struct czfs_io_seg segs[] = { { 5, 30, &pages[5] }, { 35, 40, &pages[35] } };

	ck_assert_int_eq(czfs_io_read(dev, segs, 2, &o), 0);
	/* head to the first boundary, then whole 64 KiB, then the tail */
	expect_log("20:44 64:64 128:64 192:64 256:44");
	expect_data(5, 70);
}
END_TEST

START_TEST(unaligned_run_cuts_from_its_start)
{
	struct czfs_iobatch_opts o = { 64 * K, false };
	struct czfs_io_seg segs[] = { { 5, 70, &pages[5] } };

	ck_assert_int_eq(czfs_io_read(dev, segs, 1, &o), 0);
	expect_log("20:64 84:64 148:64 212:64 276:24");
	expect_data(5, 70);
}
END_TEST

START_TEST(a_stream_of_aligned_batches_has_no_small_requests)
{
	struct czfs_iobatch_opts o = { 128 * K, true };

	/* given batches that each end on a max_request boundary (as the
	 * prefetch stream reads), every request is whole */
	for (uint64_t b = 0; b < 4; b++) {
		struct czfs_io_seg seg = { 32 + b * 64, 64, &pages[32 + b * 64] };

		ck_assert_int_eq(czfs_io_read(dev, &seg, 1, &o), 0);
	}
	expect_log("128:128 256:128 384:128 512:128 640:128 768:128 896:128 1024:128");
}
END_TEST

START_TEST(gaps_split_runs)
{
	struct czfs_iobatch_opts o = { 1024 * K, true };
	struct czfs_io_seg segs[] = {
		{ 10, 2, &pages[10] }, { 12, 3, &pages[12] },	/* adjacent */
		{ 20, 1, &pages[20] },				/* a gap */
		{ 255, 2, &pages[255] },			/* crosses 1 MiB */
	};

	ck_assert_int_eq(czfs_io_read(dev, segs, 4, &o), 0);
	expect_log("40:20 80:4 1020:4 1024:4");
	expect_data(10, 5);
	expect_data(255, 2);
}
END_TEST

/* Slices of a run share their boundary blocks: each is read once. */
START_TEST(shared_boundary_blocks_are_read_once)
{
	struct czfs_iobatch_opts o = { 1024 * K, true };
	void *a[3], *b[1], *c[4];
	struct czfs_io_seg segs[] = {
		{ 50, 3, a },		/* 50..52 */
		{ 52, 1, b },		/* inside 52, the block a ends in */
		{ 52, 4, c },		/* 52..55: starts where a ends */
	};

	for (unsigned i = 0; i < 3; i++)
		a[i] = mem + (size_t)i * 4096;
	b[0] = mem + 3 * 4096;
	for (unsigned i = 0; i < 4; i++)
		c[i] = mem + (size_t)(4 + i) * 4096;
	ck_assert_int_eq(czfs_io_read(dev, segs, 3, &o), 0);
	expect_log("200:24");		/* blocks 50..55 once */
	for (unsigned i = 0; i < 3; i++)
		ck_assert_uint_eq(*(uint32_t *)a[i], (50 + i) * 4096);
	ck_assert_uint_eq(*(uint32_t *)b[0], 52 * 4096);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_uint_eq(*(uint32_t *)c[i], (52 + i) * 4096);
}
END_TEST

START_TEST(contiguous_destinations_share_an_iovec)
{
	struct czfs_iobatch_opts o = { 4096 * K, true };
	void *run[16];
	struct czfs_io_seg seg = { 100, 16, run };

	for (unsigned i = 0; i < 16; i++)
		run[i] = mem + (size_t)i * 4096;
	ck_assert_int_eq(czfs_io_read(dev, &seg, 1, &o), 0);
	expect_log("400:64");
	for (unsigned i = 0; i < 16; i++) {
		uint32_t v;

		memcpy(&v, mem + (size_t)i * 4096 + 8, 4);
		ck_assert_uint_eq(v, (100 + i) * 4096 + 8);
	}
}
END_TEST

START_TEST(direct_io_alignment_and_errors)
{
	struct czfs_iobatch_opts o = { 64 * K, true };
	struct czfs_io_seg seg = { 0, 4, &pages[0] };
	struct czfs_bdev *d;
	void *bad[1] = { mem + 100 };
	struct czfs_io_seg badseg = { 0, 1, bad };

	/* O_DIRECT: aligned pages pass, an unaligned buffer is refused */
	ck_assert_int_eq(czfs_bdev_mem_create(64 * 4096, CZFS_BDEV_DIRECT, &d), 0);
	ck_assert_int_eq(czfs_io_read(d, &seg, 1, &o), 0);
	ck_assert_int_eq(czfs_io_read(d, &badseg, 1, &o), -EINVAL);
	/* past the end of the device: -EIO */
	seg.blkaddr = 62;
	ck_assert_int_eq(czfs_io_read(d, &seg, 1, &o), -EIO);
	/* an injected failure comes back */
	seg.blkaddr = 0;
	czfs_bdev_mem_fail_after(d, 1, -EIO);
	ck_assert_int_eq(czfs_io_read(d, &seg, 1, &o), -EIO);
	czfs_bdev_close(d);
	ck_assert_int_eq(czfs_io_check_max_request(512 * K), 0);
	ck_assert_int_eq(czfs_io_check_max_request(1000), -EINVAL);
	ck_assert_int_eq(czfs_io_check_max_request(8192 * K), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("iobatch");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, aligned_run_gives_whole_aligned_requests);
	tcase_add_test(tc, unaligned_run_cuts_from_its_start);
	tcase_add_test(tc, a_stream_of_aligned_batches_has_no_small_requests);
	tcase_add_test(tc, gaps_split_runs);
	tcase_add_test(tc, shared_boundary_blocks_are_read_once);
	tcase_add_test(tc, contiguous_destinations_share_an_iovec);
	tcase_add_test(tc, direct_io_alignment_and_errors);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
