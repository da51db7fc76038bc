// SPDX-License-Identifier: MIT
/*
 * Unit tests: the image lock.  Given a holder that is another program
 * (fsck, a user's flock), the lock is refused at once, naming it; given a
 * holder that is a czfs-fuse daemon finishing after its unmount, it is
 * waited for and then taken; given a daemon that does not let go, it is
 * refused after the wait.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "imagelock.h"
#include "log.h"

static char last_err[512], last_info[512];

static void capture(enum czfs_log_level level, const char *msg)
{
	snprintf(level <= CZFS_LOG_ERR ? last_err : last_info, sizeof(last_err),
		 "%s", msg);
}

static char path[64];

static void setup(void)
{
	int fd;

	snprintf(path, sizeof(path), "/tmp/czfs-lock.XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	last_err[0] = last_info[0] = 0;
	czfs_log_set_sink(capture, CZFS_LOG_DEBUG);
}

static void teardown(void)
{
	czfs_log_set_sink(NULL, CZFS_LOG_INFO);
	unlink(path);
}

/*
 * A child named `comm` takes the lock exclusively, tells us through a
 * pipe, and holds it for `ms` milliseconds (0: until killed).
 */
static pid_t holder(const char *comm, unsigned ms)
{
	int p[2];
	pid_t pid;
	char c;

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		int fd = open(path, O_RDWR);

		prctl(PR_SET_NAME, comm);
		if (fd < 0 || flock(fd, LOCK_EX))
			_exit(1);
		if (write(p[1], "x", 1) != 1)
			_exit(1);
		if (ms)
			usleep(ms * 1000);
		else
			pause();
		_exit(0);
	}
	close(p[1]);
	ck_assert_int_eq(read(p[0], &c, 1), 1);
	close(p[0]);
	return pid;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

START_TEST(another_program_is_refused_at_once)
{
	pid_t pid = holder("fsck.czfs", 0);
	int fd = open(path, O_RDWR);
	double t0 = now();
	char want[64];

	/* when the image is locked by fsck, it is refused without waiting */
	ck_assert_int_eq(czfs_image_lock(fd, false, 5), -EBUSY);
	ck_assert(now() - t0 < 1.0);
	snprintf(want, sizeof(want), "image is in use by fsck.czfs (pid %ld)", (long)pid);
	ck_assert_str_eq(last_err, want);
	/* and a shared lock is refused the same way */
	ck_assert_int_eq(czfs_image_lock(fd, true, 5), -EBUSY);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	/* then, once it is gone, the lock is ours */
	ck_assert_int_eq(czfs_image_lock(fd, false, 5), 0);
	close(fd);
}
END_TEST

START_TEST(finishing_daemon_is_waited_for)
{
	pid_t pid = holder("czfs-fuse", 400);
	int fd = open(path, O_RDWR);
	double t0 = now(), dt;

	/* when a daemon holds the lock with no mount left, we wait for it */
	ck_assert_int_eq(czfs_image_lock(fd, false, 5), 0);
	dt = now() - t0;
	ck_assert_msg(dt > 0.2 && dt < 3.0, "waited %.2f s", dt);
	ck_assert_ptr_nonnull(strstr(last_info, "finishing its unmount"));
	ck_assert_str_eq(last_err, "");
	waitpid(pid, NULL, 0);
	close(fd);
}
END_TEST

START_TEST(stuck_daemon_is_refused_after_the_wait)
{
	pid_t pid = holder("czfs-fuse", 0);
	int fd = open(path, O_RDWR);
	double t0 = now(), dt;

	/* when the daemon does not let go, the lock fails after wait_seconds */
	ck_assert_int_eq(czfs_image_lock(fd, false, 1), -EBUSY);
	dt = now() - t0;
	ck_assert_msg(dt >= 0.9 && dt < 3.0, "waited %.2f s", dt);
	ck_assert_str_eq(last_err, "image is in use (mounted or being checked)");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(fd);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("imagelock");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, another_program_is_refused_at_once);
	tcase_add_test(tc, finishing_daemon_is_waited_for);
	tcase_add_test(tc, stuck_daemon_is_refused_after_the_wait);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
