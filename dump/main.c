// SPDX-License-Identifier: MIT
/* dump.czfs: options, opening the image, what to show. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dir.h"
#include "dump.h"
#include "image.h"
#include "log.h"
#include "util.h"

struct dump_opts {
	const char *image, *target;
	bool json, no_stats;
};

static const struct option long_opts[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "no-stats", no_argument, NULL, 'S' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fputs("Usage: dump.czfs [options] IMAGE [PATH|INODE]\n"
	      "IMAGE is a path or an http://, https:// or s3:// URL.\n"
	      "Show a czfs image: the superblock, both checkpoints and image-wide\n"
	      "statistics (per algorithm: clusters, disk usage, uncompressed and\n"
	      "referenced bytes, ratio; metadata blocks; inodes by type).  With a\n"
	      "PATH (from the image's root) or an INODE number: that inode, its\n"
	      "xattrs, its cluster map or, for a directory, its entries.\n"
	      "  -j, --json       JSON, for scripts\n"
	      "  -S, --no-stats   without PATH: no statistics (they read every node)\n"
	      "  -h, --help       this text\n"
	      "  -V, --version    the version\n"
	      "Exit status: 0 done, 1 damage met or PATH not found, 2 bad usage or\n"
	      "the image cannot be opened.\n", f);
}

/* Returns 0 to go on, 1 to exit 0 (help, version), -EINVAL. */
static int parse_args(int argc, char **argv, struct dump_opts *o)
{
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":jShV", long_opts, NULL)) != -1) {
		switch (c) {
		case 'j': o->json = true; break;
		case 'S': o->no_stats = true; break;
		case 'h': usage(stdout); return 1;
		case 'V': printf("dump.czfs (czfs) %s\n", CZFS_VERSION); return 1;
		default:
			fprintf(stderr, "dump.czfs: unknown option '%s'\n",
				argv[optind - 1]);
			goto bad;
		}
	}
	if (optind == argc || argc - optind > 2) {
		fprintf(stderr, "dump.czfs: %s\n", optind == argc ?
			"no IMAGE given" : "too many arguments");
		goto bad;
	}
	o->image = argv[optind];
	o->target = argc - optind == 2 ? argv[optind + 1] : NULL;
	return 0;
bad:
	fprintf(stderr, "Try 'dump.czfs --help' for more information.\n");
	return -EINVAL;
}

static void log_sink(enum czfs_log_level level, const char *msg)
{
	fflush(stdout);
	fprintf(stderr, "dump.czfs: %s%s\n",
		level == CZFS_LOG_WARN ? "warning: " : "", msg);
}

/* An inode number, or a path looked up from the root. */
static int resolve(struct dump_ctx *d, const char *target, uint64_t *ino)
{
	char *end, *buf, *save, *name;
	unsigned type;
	int err = 0;

	*ino = strtoull(target, &end, 10);
	if (*target >= '0' && *target <= '9' && !*end)
		return 0;
	buf = strdup(target);
	if (!buf)
		return -ENOMEM;
	*ino = CZFS_ROOT_INO;
	for (name = strtok_r(buf, "/", &save); name && !err;
	     name = strtok_r(NULL, "/", &save))
		err = czfs_dir_lookup(d->fs, *ino, name, strlen(name), ino, &type);
	free(buf);
	return err;
}

static int open_image(struct dump_ctx *d, const char *image)
{
	struct czfs_fs_opts fo = { .flags = CZFS_OPEN_RDONLY };
	int err = czfs_image_open(image, &fo, NULL, &d->fs);

	d->smap_loaded = !err;
	if (err == -EFSCORRUPTED) {
		fprintf(stderr, "dump.czfs: %s: opening without the space map\n",
			image);
		fo.flags |= CZFS_OPEN_NOSMAP;
		err = czfs_image_open(image, &fo, NULL, &d->fs);
		d->damage++;
	}
	return err;
}

static int show(struct dump_ctx *d, const struct dump_opts *o)
{
	uint64_t ino;
	int err = 0;

	dout_begin(&d->out);
	if (o->target) {
		err = resolve(d, o->target, &ino);
		if (!err)
			err = dump_inode(d, ino);
	} else {
		dump_super(d);
		dump_checkpoints(d);
		if (!o->no_stats)
			err = dump_stats(d);
	}
	dout_end(&d->out);
	if (err)
		fprintf(stderr, "dump.czfs: %s: %s\n", o->target ? o->target :
			o->image, err == -ENOENT ? "not found" : strerror(-err));
	return err;
}

int main(int argc, char **argv)
{
	struct dump_opts o = { 0 };
	struct dump_ctx d = { 0 };
	int err;

	err = parse_args(argc, argv, &o);
	if (err)
		return err > 0 ? 0 : 2;
	czfs_log_set_sink(log_sink, CZFS_LOG_WARN);
	dout_init(&d.out, stdout, o.json);
	err = open_image(&d, o.image);
	if (err) {
		fprintf(stderr, "dump.czfs: %s: cannot open: %s\n", o.image,
			err == -EINVAL ? "not a czfs image" : strerror(-err));
		return 2;
	}
	err = show(&d, &o);
	czfs_fs_close(d.fs);
	if (fflush(stdout)) {
		fprintf(stderr, "dump.czfs: write error: %s\n", strerror(errno));
		return 2;
	}
	return err || d.damage ? 1 : 0;
}
