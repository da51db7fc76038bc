// SPDX-License-Identifier: MIT
/*
 * umount.fuse.czfs: what umount(8) runs for a czfs mount.  It unmounts
 * with `umount -i` and then waits until the daemon has written its last
 * checkpoint and exited, so that when umount returns the image is final
 * and free: a mount, fsck or copy right after sees the whole state.  (The
 * kernel returns from unmounting a FUSE mount at once; the daemon's work
 * goes on after.)  A lazy unmount (-l) does not wait.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <unistd.h>

#include "helper.h"
#include "util.h"

#define WAIT_SECONDS	600

static const char usage_text[] =
"usage: umount.fuse.czfs MOUNTPOINT [-n] [-l] [-f] [-v] [-r] [-t TYPE] [-N NS]\n"
"\n"
"Unmount a czfs mount and wait until its daemon has written the image's\n"
"last checkpoint and exited (up to 10 minutes).  umount(8) runs it for\n"
"mounts of type fuse.czfs; the options are umount's.\n"
"\n"
"    -l            lazy: detach now, do not wait\n"
"    -n, -f, -r, -v  passed on to umount(8), which is run without helpers\n"
"    -t TYPE       ignored (the type umount found)\n"
"    -N NS         enter the mount namespace NS first\n"
"    -h, --help    this help\n"
"    -V, --version print the version\n";

int main(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *args[12] = { "umount", "-i" };
	struct czfs_daemon_state ds;
	int n = 2, c, rc, pidfd = -1;
	bool lazy = false, verbose = false;
	const char *mnt;

	while ((c = getopt_long(argc, argv, "nlfvrt:N:hV", longs, NULL)) != -1) {
		switch (c) {
		case 'l':
			lazy = true;
			args[n++] = "-l";
			break;
		case 'v':
			verbose = true;
			fallthrough;
		case 'n': case 'f': case 'r':
			args[n++] = c == 'v' ? "-v" : c == 'n' ? "-n" :
				    c == 'f' ? "-f" : "-r";
			break;
		case 't':
			break;
		default:
			rc = czfs_helper_common_opt(c, optarg, "umount.fuse.czfs",
						    usage_text);
			if (rc >= 0)
				return rc;
		}
	}
	if (optind != argc - 1) {
		fputs(usage_text, stderr);
		return 1;
	}
	mnt = argv[optind];
	/* Whom to wait for, before the mount (and its xattr) is gone; the
	 * pidfd keeps the answer true even if the pid is reused later. */
	if (!lazy && !czfs_daemon_state(mnt, &ds))
		pidfd = (int)pidfd_open(ds.pid, 0);
	args[n++] = "--";
	args[n++] = mnt;
	args[n] = NULL;
	rc = czfs_run(args, verbose);
	if (rc || pidfd < 0)
		return rc;
	rc = czfs_wait_exit(pidfd, ds.pid, mnt, WAIT_SECONDS);
	close(pidfd);
	if (rc) {
		fprintf(stderr, "umount.fuse.czfs: %s: unmounted, but czfs-fuse "
			"(pid %ld) is still writing the image after %d s: %s\n",
			mnt, (long)ds.pid, WAIT_SECONDS, strerror(-rc));
		return 32;
	}
	return 0;
}
