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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "imagelock.h"
#include "log.h"

static char last_err[512], last_info[512];
static int release_fd = -1;	/* a holder's: written once the wait starts */

/* Keep the last line of each kind; the wait's info line lets a holder go. */
static void capture(enum czfs_log_level level, const char *msg)
{
	snprintf(level <= CZFS_LOG_ERR ? last_err : last_info, sizeof(last_err),
		 "%s", msg);
	if (level > CZFS_LOG_ERR && strstr(msg, "waiting up to") &&
	    release_fd >= 0 && write(release_fd, "x", 1) != 1)
		abort();
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
	release_fd = -1;
	czfs_log_set_sink(capture, CZFS_LOG_DEBUG);
}

static void teardown(void)
{
	czfs_log_set_sink(NULL, CZFS_LOG_INFO);
	if (release_fd >= 0)
		close(release_fd);
	unlink(path);
}

/*
 * A child named `comm` takes the lock exclusively, tells us through a
 * pipe, and holds it until killed or, with `released`, until the lock's
 * wait starts (the capture sink writes to its pipe): a daemon that ends
 * while someone waits for it, with no sleep to race against.
 */
static pid_t holder(const char *comm, bool released)
{
	int p[2], r[2];
	pid_t pid;
	char c;

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(pipe(r), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		int fd = open(path, O_RDWR);

		prctl(PR_SET_NAME, comm);
		if (fd < 0 || flock(fd, LOCK_EX))
			_exit(1);
		close(r[1]);
		if (write(p[1], "x", 1) != 1)
			_exit(1);
		if (released)
			(void)!read(r[0], &c, 1);
		else
			pause();
		_exit(0);
	}
	close(p[1]);
	close(r[0]);
	ck_assert_int_eq(read(p[0], &c, 1), 1);
	close(p[0]);
	if (released)
		release_fd = r[1];
	else
		close(r[1]);
	return pid;
}

START_TEST(another_program_is_refused_at_once)
{
	pid_t pid = holder("fsck.czfs", false);
	int fd = open(path, O_RDWR);
	char want[64];

	/* when the image is locked by fsck, it is refused without waiting
	 * (the wait would say so first) */
	ck_assert_int_eq(czfs_image_lock(fd, false, 5), -EBUSY);
	ck_assert_str_eq(last_info, "");
	snprintf(want, sizeof(want), "image is in use by fsck.czfs (pid %ld)", (long)pid);
	ck_assert_str_eq(last_err, want);
	/* and a shared lock is refused the same way */
	ck_assert_int_eq(czfs_image_lock(fd, true, 5), -EBUSY);
	ck_assert_str_eq(last_info, "");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	/* then, once it is gone, the lock is ours */
	ck_assert_int_eq(czfs_image_lock(fd, false, 5), 0);
	close(fd);
}
END_TEST

START_TEST(finishing_daemon_is_waited_for)
{
	pid_t pid = holder("czfs-fuse", true);
	int fd = open(path, O_RDWR);
	int status;

	/* when a daemon holds the lock with no mount left, we wait for it:
	 * it ends only once the wait has begun, and the lock is then ours
	 * (the limit, CZFS_LOCK_WAIT_SECONDS, only guards against a hang) */
	ck_assert_int_eq(czfs_image_lock(fd, false, CZFS_LOCK_WAIT_SECONDS), 0);
	ck_assert_ptr_nonnull(strstr(last_info, "finishing its unmount"));
	ck_assert_str_eq(last_err, "");
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(fd);
}
END_TEST

START_TEST(stuck_daemon_is_refused_after_the_wait)
{
	pid_t pid = holder("czfs-fuse", false);
	int fd = open(path, O_RDWR);

	/* when the daemon does not let go, the lock waits, then fails */
	ck_assert_int_eq(czfs_image_lock(fd, false, 1), -EBUSY);
	ck_assert_ptr_nonnull(strstr(last_info, "waiting up to 1 s"));
	ck_assert_str_eq(last_err, "image is in use (mounted or being checked)");
	/* the daemon still held it: the wait did not end for a release */
	ck_assert_int_eq(waitpid(pid, NULL, WNOHANG), 0);
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
	tcase_set_timeout(tc, 2 * CZFS_LOCK_WAIT_SECONDS);
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
