// SPDX-License-Identifier: MIT
/* Shared by the mount helpers (see helper.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "helper.h"

#define STATS_XATTR	"user.czfs.stats"

/* The value of "name N" among the stats lines, or -1. */
static long stat_value(const char *buf, const char *name)
{
	size_t n = strlen(name);

	for (const char *l = buf; *l; l++) {
		if (!strncmp(l, name, n) && l[n] == ' ')
			return strtol(l + n + 1, NULL, 10);
		l = strchr(l, '\n');
		if (!l)
			break;
	}
	return -1;
}

int czfs_daemon_state(const char *mnt, struct czfs_daemon_state *ds)
{
	char buf[65536];
	ssize_t n = getxattr(mnt, STATS_XATTR, buf, sizeof(buf) - 1);
	long pid;

	if (n < 0)
		return errno == ENOTSUP ? -ENODATA : -errno;
	buf[n] = 0;
	pid = stat_value(buf, "daemon.pid");
	if (pid <= 0)
		return -ENODATA;
	ds->pid = (pid_t)pid;
	ds->writable = stat_value(buf, "daemon.writable") == 1;
	ds->readonly = stat_value(buf, "daemon.readonly") == 1;
	return 0;
}

int czfs_run(const char *const argv[], bool verbose)
{
	pid_t pid;
	int st;

	if (verbose) {
		for (int i = 0; argv[i]; i++)
			fprintf(stderr, "%s%s", i ? " " : "", argv[i]);
		fputc('\n', stderr);
	}
	pid = fork();
	if (pid < 0)
		return 127;
	if (!pid) {
		execvp(argv[0], (char *const *)argv);
		fprintf(stderr, "%s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return 127;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 127;
}

int czfs_wait_exit(int pidfd, pid_t pid, const char *what, unsigned seconds)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	unsigned waited_ms = 0;
	bool said = false;
	int r;

	while (waited_ms < seconds * 1000u) {
		r = poll(&p, 1, 100);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
		waited_ms += 100;
		if (!said && waited_ms >= 1000) {
			fprintf(stderr, "waiting for czfs-fuse (pid %ld) to finish "
				"writing the image of %s\n", (long)pid, what);
			said = true;
		}
	}
	return -ETIMEDOUT;
}

/* Enter the mount namespace at path.  0 or -errno. */
static int enter_ns(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int err = 0;

	if (fd < 0)
		return -errno;
	if (setns(fd, CLONE_NEWNS))
		err = -errno;
	close(fd);
	return err;
}

int czfs_helper_common_opt(int c, const char *arg, const char *name,
			   const char *usage)
{
	int err;

	switch (c) {
	case 'N':
		err = enter_ns(arg);
		if (!err)
			return -1;
		fprintf(stderr, "%s: %s: %s\n", name, arg, strerror(-err));
		return 32;
	case 'h':
		fputs(usage, stdout);
		return 0;
	case 'V':
		printf("%s (czfs) %s\n", name, CZFS_VERSION);
		return 0;
	default:
		fputs(usage, stderr);
		return 1;
	}
}
