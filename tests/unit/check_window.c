// SPDX-License-Identifier: MIT
/* Unit tests: window cache (vmap and vm_map_ram strategies). */
#include "config.h"

#include <check.h>
#include <pthread.h>
#include <stdlib.h>

#include "pagepool.h"
#include "util.h"
#include "window.h"

static struct czfs_pool *pool;

static void setup(void)
{
	ck_assert_int_eq(czfs_pool_create(512 * 4096, 0, &pool), 0);
}

static void teardown(void)
{
	czfs_pool_destroy(pool);
}

/* n pages, scattered (every other page of a run) or one run. */
static void get_pages(uint32_t *pages, unsigned n, bool scattered)
{
	uint32_t run;

	ck_assert_int_eq(czfs_pool_alloc(pool, 6, &run), 0);
	for (unsigned i = 0; i < n; i++) {
		pages[i] = scattered ? run + 2 * (n - 1 - i) % 64 : run + i;
		memset(czfs_pool_addr(pool, pages[i]), (int)(i + 1), 4096);
	}
}

static unsigned long long stat_of(struct czfs_wincache *wc, size_t off)
{
	return atomic_load((atomic_ullong *)((char *)czfs_win_stats(wc) + off));
}
#define ST(wc, f) stat_of(wc, offsetof(struct czfs_window_stats, f))

static const struct czfs_wincache_opts modes[] = {
	{ .mode = CZFS_MAP_VMAP },
	{ .mode = CZFS_MAP_VM_MAP_RAM },
	{ .mode = CZFS_MAP_VM_MAP_RAM, .bounce = true },
};

START_TEST(every_mode_gives_the_same_bytes)
{
	struct czfs_wincache *wc;
	struct czfs_mapping m;
	uint32_t pages[16];

	ck_assert_int_eq(czfs_wincache_create(pool, &modes[_i], &wc), 0);
	for (int scattered = 0; scattered < 2; scattered++) {
		get_pages(pages, 16, scattered);
		/* reading through the window sees the pages in order */
		ck_assert_int_eq(czfs_win_map(wc, pages, 16, true, &m), 0);
		for (unsigned i = 0; i < 16; i++)
			ck_assert_uint_eq(((uint8_t *)m.addr)[i * 4096 + 7], i + 1);
		/* writing through it lands in the pages */
		memset((char *)m.addr + 4096 * 3 + 100, 0xee, 5000);
		czfs_win_unmap(wc, &m);
		ck_assert_uint_eq(((uint8_t *)czfs_pool_addr(pool, pages[3]))[100], 0xee);
		ck_assert_uint_eq(((uint8_t *)czfs_pool_addr(pool, pages[4]))[1003], 0xee);
		ck_assert_uint_eq(((uint8_t *)czfs_pool_addr(pool, pages[4]))[1004], 5);
	}
	czfs_wincache_destroy(wc);
}
END_TEST

START_TEST(vm_map_ram_hot_path_makes_no_syscall)
{
	struct czfs_wincache *wc;
	struct czfs_mapping m;
	uint32_t run[16], scat[8];

	ck_assert_int_eq(czfs_wincache_create(pool, &modes[1], &wc), 0);
	get_pages(run, 16, false);
	get_pages(scat, 8, true);
	/* one run: the pool's own mapping */
	for (int i = 0; i < 100; i++) {
		ck_assert_int_eq(czfs_win_map(wc, run, 16, false, &m), 0);
		ck_assert_ptr_eq(m.addr, czfs_pool_addr(pool, run[0]));
		czfs_win_unmap(wc, &m);
	}
	ck_assert_uint_eq(ST(wc, syscalls), 0);
	ck_assert_uint_eq(ST(wc, identity), 100);
	/* scattered: mapped once, then the dirty slot is reused as is */
	for (int i = 0; i < 100; i++) {
		ck_assert_int_eq(czfs_win_map(wc, scat, 8, false, &m), 0);
		czfs_win_unmap(wc, &m);
	}
	ck_assert_uint_eq(ST(wc, slot_maps), 1);
	ck_assert_uint_eq(ST(wc, slot_reuse), 99);
	ck_assert_uint_eq(ST(wc, syscalls), 8);	/* 8 single-page runs, once */
	czfs_wincache_destroy(wc);
}
END_TEST

START_TEST(vmap_maps_fresh_every_time)
{
	struct czfs_wincache *wc;
	struct czfs_mapping m;
	uint32_t run[16];

	ck_assert_int_eq(czfs_wincache_create(pool, &modes[0], &wc), 0);
	get_pages(run, 16, false);
	for (int i = 0; i < 10; i++) {
		ck_assert_int_eq(czfs_win_map(wc, run, 16, false, &m), 0);
		ck_assert_ptr_ne(m.addr, czfs_pool_addr(pool, run[0]));
		czfs_win_unmap(wc, &m);
	}
	/* reserve + one run + munmap, each time */
	ck_assert_uint_eq(ST(wc, syscalls), 30);
	ck_assert_uint_eq(ST(wc, vmaps), 10);
	czfs_wincache_destroy(wc);
}
END_TEST

START_TEST(purge_and_retry_with_a_tiny_window)
{
	struct czfs_wincache_opts o = { .mode = CZFS_MAP_VM_MAP_RAM, .slots = 1 };
	struct czfs_wincache *wc;
	struct czfs_mapping ma, mb;
	uint32_t a[4], b[4];

	ck_assert_int_eq(czfs_wincache_create(pool, &o, &wc), 0);
	get_pages(a, 4, true);
	get_pages(b, 4, true);
	/* given A mapped and released: the only slot is dirty */
	ck_assert_int_eq(czfs_win_map(wc, a, 4, false, &ma), 0);
	czfs_win_unmap(wc, &ma);
	/* when B is mapped, then the dirty slot is purged and B retried */
	ck_assert_int_eq(czfs_win_map(wc, b, 4, false, &mb), 0);
	ck_assert_uint_eq(ST(wc, purges), 1);
	ck_assert_uint_eq(ST(wc, retries), 1);
	ck_assert_uint_eq(((uint8_t *)mb.addr)[0], 1);
	/* when the slot is in use, then A fails after 3 tries with ENOMEM */
	ck_assert_int_eq(czfs_win_map(wc, a, 4, false, &ma), -ENOMEM);
	ck_assert_uint_eq(ST(wc, failures), 1);
	ck_assert_uint_eq(ST(wc, retries), 1 + CZFS_WIN_MAX_RETRIES);
	czfs_win_unmap(wc, &mb);
	ck_assert_int_eq(czfs_win_map(wc, a, 4, false, &ma), 0);
	czfs_win_unmap(wc, &ma);
	czfs_wincache_destroy(wc);
}
END_TEST

START_TEST(bounce_copies_instead_of_mapping)
{
	struct czfs_wincache *wc;
	struct czfs_mapping m;
	uint32_t scat[8];

	ck_assert_int_eq(czfs_wincache_create(pool, &modes[2], &wc), 0);
	get_pages(scat, 8, true);
	ck_assert_int_eq(czfs_win_map(wc, scat, 8, false, &m), 0);
	memset(m.addr, 0x11, 4096);		/* not for_write: not copied back */
	czfs_win_unmap(wc, &m);
	ck_assert_uint_eq(((uint8_t *)czfs_pool_addr(pool, scat[0]))[0], 1);
	ck_assert_uint_eq(ST(wc, bounce), 1);
	ck_assert_uint_eq(ST(wc, syscalls), 0);
	czfs_wincache_destroy(wc);
}
END_TEST

static struct czfs_wincache *thread_wc;
static uint32_t thread_pages[8];

static void *map_in_thread(void *arg)
{
	struct czfs_mapping m;

	ck_assert_int_eq(czfs_win_map(thread_wc, thread_pages, 8, false, &m), 0);
	czfs_win_unmap(thread_wc, &m);
	return NULL;
}

START_TEST(windows_outlive_their_threads)
{
	pthread_t th;

	ck_assert_int_eq(czfs_wincache_create(pool, &modes[1], &thread_wc), 0);
	get_pages(thread_pages, 8, true);
	/* a second thread inherits the first one's window and its slots */
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(pthread_create(&th, NULL, map_in_thread, NULL), 0);
		pthread_join(th, NULL);
	}
	ck_assert_uint_eq(ST(thread_wc, slot_maps), 1);
	ck_assert_uint_eq(ST(thread_wc, slot_reuse), 1);
	czfs_wincache_destroy(thread_wc);
}
END_TEST

START_TEST(bad_arguments)
{
	struct czfs_wincache *wc;
	struct czfs_mapping m;
	uint32_t pages[65] = { 0 };
	enum czfs_map_mode mode;

	ck_assert_int_eq(czfs_wincache_create(pool, &modes[1], &wc), 0);
	ck_assert_int_eq(czfs_win_map(wc, pages, 0, false, &m), -EINVAL);
	ck_assert_int_eq(czfs_win_map(wc, pages, 65, false, &m), -EINVAL);
	czfs_wincache_destroy(wc);
	ck_assert_int_eq(czfs_map_mode_parse("vmap", &mode), 0);
	ck_assert_int_eq(mode, CZFS_MAP_VMAP);
	ck_assert_int_eq(czfs_map_mode_parse("vm_map_ram", &mode), 0);
	ck_assert_int_eq(mode, CZFS_MAP_VM_MAP_RAM);
	ck_assert_int_eq(czfs_map_mode_parse("vmalloc", &mode), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("window");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, every_mode_gives_the_same_bytes, 0, 3);
	tcase_add_test(tc, vm_map_ram_hot_path_makes_no_syscall);
	tcase_add_test(tc, vmap_maps_fresh_every_time);
	tcase_add_test(tc, purge_and_retry_with_a_tiny_window);
	tcase_add_test(tc, bounce_copies_instead_of_mapping);
	tcase_add_test(tc, windows_outlive_their_threads);
	tcase_add_test(tc, bad_arguments);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
