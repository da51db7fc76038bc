// SPDX-License-Identifier: MIT
/*
 * mount.czfs (also mount.fuse.czfs): what mount(8) runs for `mount -t czfs`,
 * an fstab line of type czfs, and `mount -o remount` of a czfs mount.
 *
 * A mount runs czfs-fuse by its installed path (no shell, no PATH lookup:
 * fstab mounts at boot have neither), with the options mount(8) passed less
 * those only fstab and mount(8) care about.  A remount changes the kernel's
 * mount with `mount -i -o remount,ro|rw`, then tells the daemon (SIGUSR1),
 * which follows and reports its new state (see src/fuse/remount.h); the
 * helper returns once the daemon got there: after remount,ro the image is
 * final.  Only ro and rw change at a remount (mount(8) passes the mount's
 * other options along: they keep their values); rw for a daemon started
 * read-only is refused with a message.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "helper.h"

#define REMOUNT_WAIT_SECONDS	60

static const char usage_text[] =
"usage: mount.czfs IMAGE MOUNTPOINT [-o OPTIONS] [-s] [-f] [-n] [-v] [-t TYPE]\n"
"                  [-N NS]\n"
"\n"
"Mount the czfs image IMAGE on MOUNTPOINT with czfs-fuse, or change a czfs\n"
"mount with -o remount,ro or -o remount,rw.  mount(8) runs it for type czfs\n"
"(and, as mount.fuse.czfs, for remounts of type fuse.czfs).\n"
"\n"
"    -o OPTIONS    czfs-fuse options (see czfs-fuse(1)); defaults, auto,\n"
"                  noauto, nofail, user, nouser, users, owner, group,\n"
"                  _netdev, comment=... and x-... are mount(8)'s and are\n"
"                  dropped\n"
"    -s            accepted (czfs-fuse checks every option itself)\n"
"    -f            fake: print what would run, run nothing\n"
"    -n            accepted (there is no mtab to write)\n"
"    -v            print the commands run\n"
"    -t TYPE       ignored (the type mount(8) was given)\n"
"    -N NS         enter the mount namespace NS first\n"
"    -h, --help    this help\n"
"    -V, --version print the version\n";

struct request {
	char *opts;		/* for czfs-fuse, comma-separated */
	bool remount, want_ro, want_rw, fake, verbose;
};

/* Options only mount(8) and fstab use: never passed on. */
static bool mount8_only(const char *o)
{
	static const char *const names[] = {
		"defaults", "auto", "noauto", "nofail", "user", "nouser",
		"users", "owner", "group", "_netdev", NULL,
	};

	if (!strncmp(o, "x-", 2) || !strncmp(o, "comment=", 8))
		return true;
	for (int i = 0; names[i]; i++)
		if (!strcmp(o, names[i]))
			return true;
	return false;
}

/* Append option o to rq->opts (cap bytes), comma-separated. */
static void append_opt(struct request *rq, size_t *len, size_t cap,
		       const char *o)
{
	*len += (size_t)snprintf(rq->opts + *len, cap - *len, "%s%s",
				 *len ? "," : "", o);
}

/*
 * Split -o: what mount(8) alone wants is dropped, the rest kept in order.
 * mount(8) hands a helper the flags that differ from a mount(2) default
 * and drops dev and suid, which are that default; FUSE's own default is
 * nodev,nosuid.  A mount by root then means what it means for any other
 * filesystem: device files and setuid programs work unless nodev or nosuid
 * was given (a user mount gets nodev,nosuid from mount(8) itself).
 */
static int parse_opts(char *in, struct request *rq)
{
	size_t cap = strlen(in) + sizeof(",dev,suid"), len = 0;
	bool nodev = false, nosuid = false;
	char *save, *o;

	rq->opts = calloc(1, cap);
	if (!rq->opts)
		return -ENOMEM;
	for (o = strtok_r(in, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
		if (!strcmp(o, "remount")) {
			rq->remount = true;
			continue;
		}
		if (mount8_only(o))
			continue;
		if (!strcmp(o, "ro"))
			rq->want_ro = true, rq->want_rw = false;
		else if (!strcmp(o, "rw"))
			rq->want_rw = true, rq->want_ro = false;
		nodev |= !strcmp(o, "nodev");
		nosuid |= !strcmp(o, "nosuid");
		append_opt(rq, &len, cap, o);
	}
	if (!rq->remount && !geteuid()) {
		if (!nodev)
			append_opt(rq, &len, cap, "dev");
		if (!nosuid)
			append_opt(rq, &len, cap, "suid");
	}
	return 0;
}

static int do_mount(const char *image, const char *mnt, struct request *rq)
{
	const char *args[] = { CZFS_FUSE_PATH, image, mnt, "-o", rq->opts, NULL };

	if (!*rq->opts)
		args[3] = NULL;
	/* an installed czfs-fuse, else the one in PATH (a build tree) */
	if (access(args[0], X_OK))
		args[0] = "czfs-fuse";
	if (getenv("CZFS_FUSE"))
		args[0] = getenv("CZFS_FUSE");
	if (rq->fake) {
		rq->verbose = true;
		args[0] = "true";
	}
	return czfs_run(args, rq->verbose) ? 32 : 0;
}

/* Poll the daemon's state until it is read-only (or not), bounded. */
static int wait_state(const char *mnt, bool ro)
{
	struct timespec nap = { 0, 10 * 1000 * 1000 };
	struct czfs_daemon_state ds;

	for (unsigned i = 0; i < REMOUNT_WAIT_SECONDS * 100u; i++) {
		if (!czfs_daemon_state(mnt, &ds) && ds.readonly == ro)
			return 0;
		nanosleep(&nap, NULL);
	}
	return -ETIMEDOUT;
}

static int do_remount(const char *mnt, struct request *rq)
{
	const char *args[] = { "mount", "-i", "-o", NULL, "--", mnt, NULL };
	struct czfs_daemon_state ds;
	int err;

	err = czfs_daemon_state(mnt, &ds);
	if (err) {
		fprintf(stderr, "mount.czfs: %s: %s\n", mnt, err == -ENODATA ?
			"not a czfs mount (or its daemon is too old to remount)" :
			strerror(-err));
		return 32;
	}
	if (!rq->want_ro && !rq->want_rw)
		return 0;
	if (rq->want_rw && !ds.writable) {
		fprintf(stderr, "mount.czfs: %s: czfs-fuse was started read-only "
			"(-o ro) and has the image open read-only: unmount and "
			"mount again without ro\n", mnt);
		return 32;
	}
	args[3] = rq->want_ro ? "remount,ro" : "remount,rw";
	if (rq->fake)
		args[0] = "true";
	err = czfs_run(args, rq->verbose || rq->fake);
	if (err || rq->fake)
		return err ? 32 : 0;
	if (kill(ds.pid, SIGUSR1) || wait_state(mnt, rq->want_ro)) {
		fprintf(stderr, "mount.czfs: %s: the kernel mount is now %s, but "
			"czfs-fuse (pid %ld) did not follow\n", mnt,
			rq->want_ro ? "read-only" : "read-write", (long)ds.pid);
		return 32;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct request rq = { 0 };
	char none[1] = "", *opts = none;
	int c, rc;

	while ((c = getopt_long(argc, argv, "o:sfnvt:N:hV", longs, NULL)) != -1) {
		switch (c) {
		case 'o':
			opts = optarg;
			break;
		case 'f':
			rq.fake = true;
			break;
		case 'v':
			rq.verbose = true;
			break;
		case 's': case 'n': case 't':
			break;
		default:
			rc = czfs_helper_common_opt(c, optarg, "mount.czfs", usage_text);
			if (rc >= 0)
				return rc;
		}
	}
	if (optind != argc - 2) {
		fputs(usage_text, stderr);
		return 1;
	}
	if (rq.verbose)
		fprintf(stderr, "mount.czfs: %s %s -o %s\n", argv[optind],
			argv[optind + 1], opts);
	if (parse_opts(opts, &rq)) {
		fputs("mount.czfs: out of memory\n", stderr);
		return 32;
	}
	rc = rq.remount ? do_remount(argv[optind + 1], &rq) :
			  do_mount(argv[optind], argv[optind + 1], &rq);
	free(rq.opts);
	return rc;
}
