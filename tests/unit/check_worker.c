// SPDX-License-Identifier: MIT
/*
 * Unit tests: the daemon's background threads (src/fuse/worker.c).  Every
 * thread started runs and sees the stop, which wakes it from its wait;
 * a nap ends early at a stop and says so; what start could not start is
 * not joined.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>

#include "worker.h"

static struct czfs_worker w;
static unsigned running, exited;	/* (w.lock) */

/* Wait on the condition until stopped, as the prefetch workers do. */
static void *waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&w.lock);
	running++;
	pthread_cond_broadcast(&w.wake);	/* the test waits for all */
	while (!w.stop)
		pthread_cond_wait(&w.wake, &w.lock);
	exited++;
	pthread_mutex_unlock(&w.lock);
	return NULL;
}

/* Nap until stopped, as the recompression does. */
static void *napper(void *arg)
{
	unsigned *naps = arg;

	while (czfs_worker_nap(&w, 1000000000ull))
		(*naps)++;
	pthread_mutex_lock(&w.lock);
	exited++;
	pthread_mutex_unlock(&w.lock);
	return NULL;
}

static void setup(void)
{
	running = exited = 0;
}

START_TEST(every_thread_runs_and_stops)
{
	ck_assert_int_eq(czfs_worker_start(&w, 3, waiter, NULL), 0);
	ck_assert_uint_eq(w.n, 3);
	pthread_mutex_lock(&w.lock);
	while (running < 3)		/* a state, not a sleep */
		pthread_cond_wait(&w.wake, &w.lock);
	ck_assert_uint_eq(exited, 0);
	pthread_mutex_unlock(&w.lock);
	ck_assert(!czfs_worker_stopped(&w));
	czfs_worker_stop(&w);
	ck_assert(czfs_worker_stopped(&w));
	czfs_worker_join(&w);
	ck_assert_uint_eq(exited, 3);
	ck_assert_uint_eq(w.n, 0);
	czfs_worker_free(&w);
}
END_TEST

START_TEST(a_stop_ends_a_nap)
{
	unsigned naps = 0;

	/* a nap of a second, ended by the stop: the thread exits, its nap
	 * said false (had it said true, it would nap again, forever) */
	ck_assert_int_eq(czfs_worker_start(&w, 1, napper, &naps), 0);
	czfs_worker_stop(&w);
	czfs_worker_join(&w);
	ck_assert_uint_eq(exited, 1);
	/* stopped: a nap returns at once, false */
	ck_assert(!czfs_worker_nap(&w, 3600ull * 1000000000ull));
	czfs_worker_free(&w);
}
END_TEST

START_TEST(no_threads_is_a_worker_too)
{
	czfs_worker_init(&w);
	ck_assert_int_eq(czfs_worker_run(&w, 0, waiter, NULL), 0);
	ck_assert_uint_eq(w.n, 0);
	ck_assert(czfs_worker_nap(&w, 1));	/* not stopped: true */
	czfs_worker_stop(&w);
	czfs_worker_join(&w);
	ck_assert_uint_eq(running + exited, 0);
	czfs_worker_free(&w);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("worker");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, every_thread_runs_and_stops);
	tcase_add_test(tc, a_stop_ends_a_nap);
	tcase_add_test(tc, no_threads_is_a_worker_too);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
