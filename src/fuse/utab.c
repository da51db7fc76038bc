// SPDX-License-Identifier: MIT
/* Recording the umount helper in libmount's utab (see utab.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "utab.h"

/* Where umount(8) looks for it (util-linux's FS_SEARCH_PATH begins so). */
#define UMOUNT_HELPER	"/sbin/umount.fuse.czfs"

void czfs_utab_register(const char *image, const char *mountpoint)
{
	/* --fake: everything but the mount(2) call, i.e. the utab entry */
	const char *argv[] = { "mount", "--fake", "--no-canonicalize", "-i",
			       "-t", "fuse.czfs", "-o", "helper=fuse.czfs",
			       image, mountpoint, NULL };
	pid_t pid;
	int st, fd;

	if (geteuid() || access(UMOUNT_HELPER, X_OK))
		return;
	pid = fork();
	if (pid < 0)
		goto fail;
	if (!pid) {
		fd = open("/dev/null", O_RDWR);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			goto fail;
	if (WIFEXITED(st) && !WEXITSTATUS(st))
		return;
fail:
	czfs_info("could not record the umount helper in utab: umount will "
		  "not wait for this daemon");
}
