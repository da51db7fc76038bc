// SPDX-License-Identifier: MIT
/* fsck.czfs: options, the check, repairs, extraction, the exit code. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsck.h"
#include "log.h"
#include "url.h"
#include "util.h"

enum { OPT_FAST = 256, OPT_EXTRACT, OPT_TAR, OPT_TRIM, OPT_GROW };

static const struct option long_opts[] = {
	{ "no-change", no_argument, NULL, 'n' },
	{ "yes", no_argument, NULL, 'y' },
	{ "preen", no_argument, NULL, 'p' },
	{ "force", no_argument, NULL, 'f' },
	{ "fast", no_argument, NULL, OPT_FAST },
	{ "extract", required_argument, NULL, OPT_EXTRACT },
	{ "tar", required_argument, NULL, OPT_TAR },
	{ "trim", no_argument, NULL, OPT_TRIM },
	{ "grow", required_argument, NULL, OPT_GROW },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fputs("Usage: fsck.czfs [options] IMAGE\n"
	      "Check a czfs image: superblock, checkpoints, every B-tree node and\n"
	      "item, every cluster's data, links, directories, the space map.\n"
	      "IMAGE may be an http://, https:// or s3:// URL (checked read-only).\n"
	      "  -n, --no-change    check only, change nothing (the default)\n"
	      "  -y, --yes          repair what is safe to repair: leaked or unmarked\n"
	      "                     blocks, link counts, counters, lost inodes (into\n"
	      "                     /lost+found); in one transaction\n"
	      "  -p, --preen        the same as -y\n"
	      "  -f, --force        accepted for compatibility: the check always runs\n"
	      "      --fast         skip the cluster data (metadata only)\n"
	      "      --extract=DIR  write the tree out to DIR with its metadata\n"
	      "      --tar=FILE     write the tree as a PAX tar stream to FILE (- for\n"
	      "                     stdout; messages then go to stderr): xattrs, ACLs,\n"
	      "                     hard links, holes (sparse members)\n"
	      "      --trim         after a clean check, punch every free block range\n"
	      "                     out of the image file (give it back to the host)\n"
	      "      --grow=SIZE    after a clean check, raise the image's size limit\n"
	      "                     to SIZE (k/M/G/T suffixes) in place\n"
	      "  -q, --quiet        no summary line\n"
	      "  -h, --help         this text\n"
	      "  -V, --version      the version\n"
	      "Exit status: 0 clean, 1 errors repaired, 4 errors left,\n"
	      "8 operational error (cannot open the image, it is in use, bad option).\n",
	      f);
}

/* --grow=SIZE: bytes, a whole number of blocks. */
static int parse_grow(struct fsck_opts *o, const char *arg)
{
	uint64_t bytes;

	if (czfs_parse_size(arg, &bytes) || bytes < CZFS_BLOCK_SIZE) {
		fprintf(stderr, "fsck.czfs: bad size '%s' for --grow\n", arg);
		return -EINVAL;
	}
	o->grow_blocks = bytes >> CZFS_BLOCK_SHIFT;
	return 0;
}

/* Returns 0 to go on, 1 to exit 0 (help, version), -EINVAL. */
static int parse_opt(struct fsck_opts *o, int c, bool *check_only)
{
	switch (c) {
	case 'n': *check_only = true; return 0;
	case 'y': case 'p': o->repair = true; return 0;
	case 'f': return 0;
	case OPT_FAST: o->fast = true; return 0;
	case OPT_EXTRACT: o->extract = optarg; return 0;
	case OPT_TAR: o->tar = optarg; return 0;
	case OPT_TRIM: o->trim = true; return 0;
	case OPT_GROW: return parse_grow(o, optarg);
	case 'q': o->quiet = true; return 0;
	case 'h': usage(stdout); return 1;
	case 'V': printf("fsck.czfs (czfs) %s\n", CZFS_VERSION); return 1;
	default: return -EINVAL;
	}
}

static int parse_args(int argc, char **argv, struct fsck_opts *o)
{
	bool check_only = false;
	int c, err = 0;

	opterr = 0;
	while (!err && (c = getopt_long(argc, argv, ":nypfqhV", long_opts,
					NULL)) != -1) {
		if (c == '?' || c == ':') {
			fprintf(stderr, "fsck.czfs: %s '%s'\n", c == '?' ?
				"unknown option" : "missing argument for",
				argv[optind - 1]);
			err = -EINVAL;
			break;
		}
		err = parse_opt(o, c, &check_only);
	}
	if (!err && check_only && o->repair) {
		fprintf(stderr, "fsck.czfs: -n and -y/-p exclude each other\n");
		err = -EINVAL;
	}
	if (!err && check_only && (o->trim || o->grow_blocks)) {
		fprintf(stderr, "fsck.czfs: -n and --trim/--grow exclude each other\n");
		err = -EINVAL;
	}
	if (!err && optind != argc - 1) {
		fprintf(stderr, "fsck.czfs: %s\n", optind == argc ?
			"no IMAGE given" : "too many arguments");
		err = -EINVAL;
	}
	if (err < 0)
		fprintf(stderr, "Try 'fsck.czfs --help' for more information.\n");
	if (!err)
		o->image = argv[optind];
	if (!err && czfs_url_kind(o->image) &&
	    (o->repair || o->trim || o->grow_blocks)) {
		fprintf(stderr, "fsck.czfs: a URL is read-only: -y/-p, --trim "
			"and --grow need a local image\n");
		err = -EINVAL;
	}
	return err;
}

/* The exit code: e2fsck's bits, or-ed. */
static int exit_code(const struct fsck_ctx *c, bool operational)
{
	int rc = operational ? FSCK_OPERATIONAL : 0;

	if (c->errors || c->fixable > c->fixed)
		rc |= FSCK_UNCORRECTED;
	if (c->fixed)
		rc |= FSCK_FIXED;
	return rc;
}

static void summary(const struct fsck_ctx *c)
{
	unsigned long left = c->errors + (c->fixable - c->fixed);

	if (c->o.quiet)
		return;
	if (!left && !c->fixed)
		printf("fsck.czfs: %s: clean, %zu inodes, %" PRIu64 "/%" PRIu64
		       " blocks used\n", c->o.image, c->inodes.n,
		       c->fs->cp.used_blocks, c->fs->cp.max_blocks);
	else
		printf("fsck.czfs: %s: %lu problem%s, %lu repaired, %lu left%s\n",
		       c->o.image, c->errors + c->fixable,
		       c->errors + c->fixable == 1 ? "" : "s", c->fixed, left,
		       c->fixable > c->fixed && !c->o.repair ?
		       " (run with -y to repair)" : "");
}

/* Repairs, extraction: each after the check, on the same open image. */
static bool after_check(struct fsck_ctx *c)
{
	bool operational = false;
	int err;

	if (c->o.repair) {
		err = fsck_repair(c);
		operational = err && err != -ENOSPC;
		if (!err)
			operational |= fsck_upgrade_inline(c) < 0;
	}
	if (c->o.grow_blocks) {
		err = fsck_grow(c->fs, c);
		operational |= err < 0;
	}
	if (c->o.trim) {
		err = fsck_trim(c);
		operational |= err < 0;
	}
	if (c->o.extract) {
		err = fsck_extract(c, c->o.extract);
		operational |= err < 0;
	}
	if (c->o.tar) {
		err = fsck_tar(c, c->o.tar_fd);
		operational |= err < 0;
	}
	return operational;
}

static int run(struct fsck_ctx *c)
{
	bool operational;
	int err = fsck_open(c);

	if (err) {
		fsck_progress_end(c);
		fprintf(stderr, "fsck.czfs: %s: %s\n", c->o.image,
			err == -EFSCORRUPTED ? "damaged beyond checking" :
			err == -EBUSY ? "in use (mounted or being checked)" :
			err == -EINVAL ? "not a czfs image" : strerror(-err));
		return err == -EFSCORRUPTED ? FSCK_UNCORRECTED : FSCK_OPERATIONAL;
	}
	fsck_check_slots(c);
	err = fsck_check(c);
	if (err) {
		fprintf(stderr, "fsck.czfs: %s: check stopped: %s\n", c->o.image,
			strerror(-err));
		fsck_close(c);
		return exit_code(c, true);
	}
	operational = after_check(c);
	summary(c);
	fsck_close(c);
	return exit_code(c, operational);
}

/* --tar's output, before the check: "-" is stdout, and what fsck prints
 * there goes to stderr instead. */
static int open_tar(struct fsck_opts *o)
{
	if (strcmp(o->tar, "-"))
		o->tar_fd = open(o->tar, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
				 0644);
	else if (isatty(STDOUT_FILENO))
		o->tar_fd = -ENOTTY;
	else if ((o->tar_fd = dup(STDOUT_FILENO)) >= 0 &&
		 dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
		o->tar_fd = -1;
	if (o->tar_fd >= 0)
		return 0;
	fprintf(stderr, "fsck.czfs: %s: %s\n", o->tar, o->tar_fd == -ENOTTY ?
		"not writing a tar stream to a terminal" : strerror(errno));
	return -EINVAL;
}

int main(int argc, char **argv)
{
	struct fsck_ctx c = { 0 };
	int err, rc;

	err = parse_args(argc, argv, &c.o);
	if (err)
		return err > 0 ? FSCK_OK : FSCK_OPERATIONAL;
	if (c.o.tar && open_tar(&c.o))
		return FSCK_OPERATIONAL;
	c.o.progress = isatty(STDERR_FILENO);
	czfs_log_set_sink(fsck_log_sink, CZFS_LOG_WARN);
	if (fsck_ctx_init(&c)) {
		fprintf(stderr, "fsck.czfs: out of memory\n");
		fsck_ctx_free(&c);
		return FSCK_OPERATIONAL;
	}
	rc = run(&c);
	fsck_ctx_free(&c);
	return rc;
}
