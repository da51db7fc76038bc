// SPDX-License-Identifier: MIT
/* mkfs.czfs: options, then scan (or tar) -> pipeline -> image. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bdev.h"
#include "compress.h"
#include "copies.h"
#include "image.h"
#include "log.h"
#include "pipeline.h"
#include "preenc.h"
#include "progress.h"
#include "scan.h"
#include "tar.h"
#include "util.h"

struct mk_opts {
	const char *dir, *image;
	const char *tar;		/* a tar file, "-" for stdin */
	enum mk_whiteouts whiteouts;
	uint64_t size;			/* 0 = none */
	enum czfs_alg alg;
	int level;
	unsigned cluster_shift;
	unsigned jobs;
	char label[65];
	bool has_uuid, has_time;
	uint8_t uuid[16];
	long long time;
	long long uid, gid;
	bool no_zero_detect, no_inline, force, quiet;
	bool no_pack, no_dedup, no_slice, plain_leaves;
	enum mk_sort sort;
};

enum { OPT_UID = 256, OPT_GID, OPT_ALL_ROOT, OPT_NO_ZERO, OPT_NO_INLINE,
       OPT_NO_PACK, OPT_NO_DEDUP, OPT_NO_SLICE, OPT_PLAIN_LEAVES, OPT_SORT,
       OPT_TAR, OPT_TAR_WHITEOUTS };

static const struct option long_opts[] = {
	{ "directory", required_argument, NULL, 'd' },
	{ "tar", optional_argument, NULL, OPT_TAR },
	{ "tar-whiteouts", required_argument, NULL, OPT_TAR_WHITEOUTS },
	{ "size", required_argument, NULL, 's' },
	{ "compress", required_argument, NULL, 'c' },
	{ "cluster-size", required_argument, NULL, 'C' },
	{ "jobs", required_argument, NULL, 'j' },
	{ "label", required_argument, NULL, 'L' },
	{ "uuid", required_argument, NULL, 'U' },
	{ "timestamp", required_argument, NULL, 'T' },
	{ "uid", required_argument, NULL, OPT_UID },
	{ "gid", required_argument, NULL, OPT_GID },
	{ "all-root", no_argument, NULL, OPT_ALL_ROOT },
	{ "no-zero-detect", no_argument, NULL, OPT_NO_ZERO },
	{ "no-inline", no_argument, NULL, OPT_NO_INLINE },
	{ "no-pack", no_argument, NULL, OPT_NO_PACK },
	{ "no-slice", no_argument, NULL, OPT_NO_SLICE },
	{ "plain-leaves", no_argument, NULL, OPT_PLAIN_LEAVES },
	{ "no-dedup", no_argument, NULL, OPT_NO_DEDUP },
	{ "sort", required_argument, NULL, OPT_SORT },
	{ "force", no_argument, NULL, 'f' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *f)
{
	fputs("Usage: mkfs.czfs [options] IMAGE\n"
	      "  -d, --directory=DIR      fill the image from DIR (files, dirs, symlinks, hard\n"
	      "                           links, device nodes, fifos, sockets, xattrs, modes,\n"
	      "                           owners, ns times)\n"
	      "      --tar[=FILE]         fill the image from a tar stream read once, in order\n"
	      "                           (FILE, or stdin without FILE or for -): ustar, GNU,\n"
	      "                           PAX with xattrs, ACLs, sparse files; gzip, xz, zstd,\n"
	      "                           bzip2 found by magic.  Leading / is stripped, '..'\n"
	      "                           refused; owners are the numeric ids\n"
	      "      --tar-whiteouts=MODE keep (default: .wh.* members are plain files) or\n"
	      "                           overlay (.wh.NAME: a 0/0 character device NAME;\n"
	      "                           .wh..wh..opq: trusted.overlay.opaque=y on its dir)\n"
	      "  -s, --size=SIZE          size limit of the image (k/M/G/T suffixes).  Without\n"
	      "                           -d: an empty image, created sparse at SIZE.  With -d:\n"
	      "                           the content must fit, the image can grow to SIZE.\n"
	      "                           Without -s: the image is as big as its content and\n"
	      "                           grows, mounted, within the host's free space.\n"
	      "  -c, --compress=ALG[:LEVEL]  lz4 (default), lz4hc, zstd, none\n"
	      "  -C, --cluster-size=SIZE  4k, 8k, 16k, 32k, 64k (default), 128k or 256k\n"
	      "  -j, --jobs=N             compression threads (default: online CPUs)\n"
	      "  -L, --label=LABEL        up to 64 bytes\n"
	      "  -U, --uuid=UUID          fixed UUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)\n"
	      "  -T, --timestamp=EPOCH    every inode time and the creation time = EPOCH\n"
	      "                           (also read from SOURCE_DATE_EPOCH when set)\n"
	      "      --uid=UID, --gid=GID force every owner;  --all-root  same as --uid=0 --gid=0\n"
	      "      --no-zero-detect     store all-zero clusters as data instead of holes\n"
	      "      --no-inline          never store small tails inside the metadata\n"
	      "      --no-pack            give each small file and tail its own blocks\n"
	      "                           instead of packing them together\n"
	      "      --no-dedup           pack identical small files and tails twice\n"
	      "      --no-slice           give each compressed cluster and pack whole\n"
	      "                           blocks of its own instead of laying them back\n"
	      "                           to back in runs\n"
	      "      --plain-leaves       write each metadata leaf to a block of its own\n"
	      "                           instead of compressing them in leaf packs\n"
	      "      --sort=ORDER         order of the packed tails: path (default:\n"
	      "                           directory by directory) or ext (by extension)\n"
	      "  -f, --force              overwrite an existing IMAGE\n"
	      "  -q, --quiet              no progress, no summary\n"
	      "  -h, --help               this text\n"
	      "  -V, --version            the version\n", f);
}

static int bad(const char *what, const char *val, const char *hint)
{
	fprintf(stderr, "mkfs.czfs: bad %s '%s'%s\n", what, val, hint);
	return -EINVAL;
}

static int parse_cluster(const char *s, unsigned *shift)
{
	uint64_t v;

	if (czfs_parse_size(s, &v) || v < CZFS_BLOCK_SIZE ||
	    v > CZFS_MAX_CLUSTER_SIZE || (v & (v - 1)))
		return bad("cluster size", s, " (4k..256k, a power of two)");
	*shift = (unsigned)__builtin_ctzll(v) - CZFS_BLOCK_SHIFT;
	return 0;
}

static int parse_uuid(const char *s, uint8_t uuid[16])
{
	unsigned n = 0;

	if (strlen(s) != 36)
		return bad("UUID", s, " (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)");
	for (unsigned i = 0; i < 36; i++) {
		int d = s[i] >= '0' && s[i] <= '9' ? s[i] - '0' :
			s[i] >= 'a' && s[i] <= 'f' ? s[i] - 'a' + 10 :
			s[i] >= 'A' && s[i] <= 'F' ? s[i] - 'A' + 10 : -1;

		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return bad("UUID", s, "");
			continue;
		}
		if (d < 0)
			return bad("UUID", s, "");
		uuid[n / 2] = (uint8_t)(n % 2 ? uuid[n / 2] | d : d << 4);
		n++;
	}
	return 0;
}

/* A decimal number in [lo, hi]. */
static int parse_num(const char *what, const char *s, long long lo,
		     long long hi, long long *out)
{
	char *end;

	errno = 0;
	*out = strtoll(s, &end, 10);
	if (!*s || *end || errno || *out < lo || *out > hi)
		return bad(what, s, "");
	return 0;
}

/* The words of --sort and --tar-whiteouts, in their enums' order. */
static const char *const sort_orders[] = { "path", "ext" };
static const char *const whiteout_modes[] = { "keep", "overlay" };

/* One of n words: its index in *out. */
static int parse_word(const char *what, const char *s,
		      const char *const *words, unsigned n, long long *out)
{
	char hint[64] = " (";

	for (unsigned i = 0; i < n; i++) {
		if (!strcmp(s, words[i])) {
			*out = i;
			return 0;
		}
		snprintf(hint + strlen(hint), sizeof(hint) - strlen(hint),
			 "%s%s", words[i], i + 1 < n ? ", " : ")");
	}
	return bad(what, s, hint);
}

static int parse_opt(struct mk_opts *o, int c, const char *arg)
{
	long long v;
	int err;

	switch (c) {
	case 'd': o->dir = arg; return 0;
	case OPT_TAR: o->tar = arg ? arg : "-"; return 0;
	case OPT_TAR_WHITEOUTS:
		err = parse_word("whiteout mode", arg, whiteout_modes,
				 ARRAY_SIZE(whiteout_modes), &v);
		o->whiteouts = (enum mk_whiteouts)v;
		return err;
	case 's':
		if (czfs_parse_size(arg, &o->size) || o->size < CZFS_BLOCK_SIZE)
			return bad("size", arg, "");
		return 0;
	case 'c':
		err = czfs_alg_parse(arg, &o->alg, &o->level);
		if (err == -ERANGE)
			return bad("compression level", arg, "");
		return err ? bad("compression", arg, " (lz4, lz4hc, zstd, none)") : 0;
	case 'C': return parse_cluster(arg, &o->cluster_shift);
	case 'j':
		err = parse_num("number of jobs", arg, 1, 1024, &v);
		o->jobs = (unsigned)v;
		return err;
	case 'L':
		if (strlen(arg) > 64)
			return bad("label", arg, " (64 bytes at most)");
		strcpy(o->label, arg);
		return 0;
	case 'U': o->has_uuid = true; return parse_uuid(arg, o->uuid);
	case 'T': o->has_time = true;
		return parse_num("timestamp", arg, -(1ll << 62), 1ll << 62, &o->time);
	case OPT_UID: return parse_num("uid", arg, 0, UINT32_MAX - 1, &o->uid);
	case OPT_GID: return parse_num("gid", arg, 0, UINT32_MAX - 1, &o->gid);
	case OPT_ALL_ROOT: o->uid = o->gid = 0; return 0;
	case OPT_NO_ZERO: o->no_zero_detect = true; return 0;
	case OPT_NO_INLINE: o->no_inline = true; return 0;
	case OPT_NO_PACK: o->no_pack = true; return 0;
	case OPT_NO_SLICE: o->no_slice = true; return 0;
	case OPT_PLAIN_LEAVES: o->plain_leaves = true; return 0;
	case OPT_NO_DEDUP: o->no_dedup = true; return 0;
	case OPT_SORT:
		err = parse_word("sort order", arg, sort_orders,
				 ARRAY_SIZE(sort_orders), &v);
		o->sort = (enum mk_sort)v;
		return err;
	case 'f': o->force = true; return 0;
	case 'q': o->quiet = true; return 0;
	default: return -EINVAL;
	}
}

/* Returns 0 to go on, 1 to exit 0 (help, version), -EINVAL. */
static int parse_args(int argc, char **argv, struct mk_opts *o)
{
	const char *sde = getenv("SOURCE_DATE_EPOCH");
	int c, err = 0;

	opterr = 0;
	while (!err && (c = getopt_long(argc, argv, ":d:s:c:C:j:L:U:T:fqhV",
					long_opts, NULL)) != -1) {
		if (c == 'h' || c == 'V') {
			if (c == 'h')
				usage(stdout);
			else
				printf("mkfs.czfs (czfs) %s\n", CZFS_VERSION);
			return 1;
		}
		if (c == '?' || c == ':') {
			fprintf(stderr, "mkfs.czfs: %s '%s'\n", c == '?' ?
				"unknown option" : "missing argument for",
				argv[optind - 1]);
			err = -EINVAL;
			break;
		}
		err = parse_opt(o, c, optarg);
	}
	if (!err && o->dir && o->tar) {
		fprintf(stderr, "mkfs.czfs: -d and --tar exclude each other\n");
		err = -EINVAL;
	}
	if (!err && optind != argc - 1) {
		fprintf(stderr, "mkfs.czfs: %s\n", optind == argc ?
			"no IMAGE given" : "too many arguments");
		err = -EINVAL;
	}
	if (!err && !o->has_time && sde && *sde) {
		o->has_time = true;
		err = parse_num("SOURCE_DATE_EPOCH", sde, 0, 1ll << 62, &o->time);
	}
	if (err) {
		fprintf(stderr, "Try 'mkfs.czfs --help' for more information.\n");
		return err;
	}
	o->image = argv[optind];
	return 0;
}

static void log_sink(enum czfs_log_level level, const char *msg)
{
	fprintf(stderr, "mkfs.czfs: %s%s\n",
		level == CZFS_LOG_WARN ? "warning: " : "", msg);
}

/* "1 GiB", "512 MiB", "4 KiB" or bytes, for messages. */
static const char *human(uint64_t v, char *buf, size_t len)
{
	static const char *const units[] = { "bytes", "KiB", "MiB", "GiB", "TiB" };
	unsigned u = 0;

	while (u + 1 < ARRAY_SIZE(units) && v >= 1024 && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%llu %s", (unsigned long long)v, units[u]);
	return buf;
}

/* The image to remove if a signal ends us half-way (set once created). */
static const char *volatile created_image;

static void on_signal(int sig)
{
	if (created_image)
		unlink(created_image);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void catch_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };

	for (unsigned i = 0; i < ARRAY_SIZE(sigs); i++)
		signal(sigs[i], on_signal);
}

struct mk_run {
	struct mk_opts o;
	struct mk_tree tree;
	struct czfs_bdev *bdev;
	bool existed, is_blk, created;
	struct stat img_st;
	struct mk_progress pr;
	struct mk_image_stats st;
	struct mk_copies_stats copies;	/* whole copies found */
};

static int check_image(struct mk_run *r)
{
	if (stat(r->o.image, &r->img_st)) {
		if (errno == ENOENT)
			return 0;
		fprintf(stderr, "mkfs.czfs: %s: %s\n", r->o.image, strerror(errno));
		return -errno;
	}
	r->existed = true;
	r->is_blk = S_ISBLK(r->img_st.st_mode);
	if (!r->is_blk && !S_ISREG(r->img_st.st_mode)) {
		fprintf(stderr, "mkfs.czfs: %s: not a regular file or block device\n",
			r->o.image);
		return -EINVAL;
	}
	if (!r->is_blk && !r->o.force) {
		fprintf(stderr, "mkfs.czfs: %s exists; use -f to overwrite\n",
			r->o.image);
		return -EEXIST;
	}
	return 0;
}

static void pipe_opts(const struct mk_run *r, struct mk_pipe_opts *po)
{
	*po = (struct mk_pipe_opts){
		.jobs = r->o.jobs, .cluster_shift = r->o.cluster_shift,
		.pol = { .alg = r->o.alg, .level = r->o.level,
			 .zero_detect = !r->o.no_zero_detect,
			 .allow_inline = !r->o.no_inline },
		.pack = { .enabled = !r->o.no_pack, .sort = r->o.sort,
			  .pack_max = CZFS_PACK_MAX_ULEN,
			  .dedup = !r->o.no_dedup },
	};
}

/* The spool goes beside the image: the filesystem meant for its size.
 * The clusters are encoded as the pipeline would, while the stream is
 * read. */
static int read_tar(struct mk_run *r)
{
	struct mk_pipe_opts po;
	struct mk_preenc_opts pre;
	struct mk_tar_opts to = { .uid = r->o.uid, .gid = r->o.gid,
				  .whiteouts = r->o.whiteouts, .pr = &r->pr,
				  .pre = &pre, .unpack_thread = true,
				  .exclude = r->existed,
				  .exclude_dev = r->img_st.st_dev,
				  .exclude_ino = r->img_st.st_ino };
	char *copy = r->is_blk ? NULL : strdup(r->o.image);
	const char *tmp = getenv("TMPDIR");
	int err;

	if (!r->is_blk && !copy)
		return -ENOMEM;
	pipe_opts(r, &po);
	pre = (struct mk_preenc_opts){ .jobs = po.jobs,
		.cluster_shift = po.cluster_shift, .pol = po.pol };
	to.spool_dir = copy ? dirname(copy) : tmp && *tmp ? tmp : "/tmp";
	err = mk_tar_read(r->o.tar, &to, &r->tree);
	mk_progress_end(&r->pr);
	free(copy);
	return err;
}

static int scan_source(struct mk_run *r)
{
	struct mk_scan_opts so = {
		.uid = r->o.uid, .gid = r->o.gid,
		.exclude = r->existed && !r->is_blk,
		.exclude_dev = r->img_st.st_dev, .exclude_ino = r->img_st.st_ino,
	};

	int err;

	if (!r->o.tar && !r->o.dir)
		return mk_tree_empty(r->o.uid >= 0 ? (uid_t)r->o.uid : getuid(),
				     r->o.gid >= 0 ? (gid_t)r->o.gid : getgid(),
				     &r->tree);
	err = r->o.tar ? read_tar(r) : mk_scan(r->o.dir, &so, &r->tree);
	if (!err && !r->o.no_pack && !r->o.no_dedup)
		err = mk_find_copies(&r->tree, CZFS_BLOCK_SIZE << r->o.cluster_shift,
				     &r->copies);
	return err;
}

static int create_image(struct mk_run *r)
{
	int err, fd;

	/* Named before it exists: a signal right after creation removes it. */
	r->created = !r->is_blk;
	if (r->created)
		created_image = r->o.image;
	if (!r->existed) {
		/* O_EXCL: never clobber a file that appeared meanwhile. */
		fd = open(r->o.image, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0) {
			err = -errno;
			created_image = NULL;	/* not ours to remove */
			r->created = false;
			goto out_msg;
		}
		close(fd);
	}
	err = czfs_bdev_open(r->o.image, r->is_blk ? 0 : CZFS_BDEV_CREATE,
			     &r->bdev);
	if (!err && r->is_blk && r->o.size > r->bdev->size) {
		fprintf(stderr, "mkfs.czfs: --size is larger than %s\n", r->o.image);
		return -EINVAL;
	}
	if (!err)
		return 0;
out_msg:
	fprintf(stderr, "mkfs.czfs: %s: %s\n", r->o.image, strerror(-err));
	return err;
}

/*
 * Create the image with the stop signals held back: a handler that
 * removed the file between two opens with O_CREAT would see it come back.
 */
static void hold_stop_signals(sigset_t *old)
{
	sigset_t stop;

	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop, old);
}

static int open_image(struct mk_run *r)
{
	sigset_t old;
	int err;

	hold_stop_signals(&old);
	err = create_image(r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

static void image_opts(const struct mk_run *r, struct mk_image_opts *io)
{
	const struct mk_opts *o = &r->o;
	uint64_t size = o->size ? o->size : r->is_blk ? r->bdev->size : 0;

	memset(io, 0, sizeof(*io));
	io->alg = o->alg;
	io->level = o->level;
	io->cluster_shift = o->cluster_shift;
	io->size_blocks = size >> CZFS_BLOCK_SHIFT;
	io->sparse = !o->dir && !o->tar && o->size && !r->is_blk;
	/* a file without -s: its limit follows the host's free space once
	 * mounted read-write (czfs-fuse(1), ROOM TO GROW) */
	io->grow = !o->size && !r->is_blk;
	io->slices = !o->no_slice;
	io->leaf_packs = !o->plain_leaves;
	memcpy(io->uuid, o->uuid, sizeof(io->uuid));
	memcpy(io->label, o->label, sizeof(io->label));
	io->fixed_time = o->has_time;
	if (o->has_time)
		io->create_time.tv_sec = o->time;
	else
		clock_gettime(CLOCK_REALTIME, &io->create_time);
}

static int build(struct mk_run *r)
{
	struct mk_pipe_opts po;
	struct mk_image_opts io;
	struct mk_pipe *p;
	char a[32];
	int err;

	pipe_opts(r, &po);
	image_opts(r, &io);
	r->pr.files_total = r->tree.nfiles;
	r->pr.bytes_total = r->tree.data_bytes;
	err = mk_pipe_start(&r->tree, &po, &p);
	if (err) {
		fprintf(stderr, "mkfs.czfs: cannot start threads: %s\n", strerror(-err));
		return err;
	}
	err = mk_image_write(r->bdev, &r->tree, p, &io, &r->pr, &r->st);
	if (err == -ENOSPC && r->st.need_blocks)
		fprintf(stderr, "mkfs.czfs: content needs %llu %s, more than --size %s\n",
			(unsigned long long)(r->st.need_blocks < 256 ?
			r->st.need_blocks * 4 : DIV_ROUND_UP(r->st.need_blocks, 256)),
			r->st.need_blocks < 256 ? "KiB" : "MiB",
			human(io.size_blocks << CZFS_BLOCK_SHIFT, a, sizeof(a)));
	else if (err && !r->st.reported)
		fprintf(stderr, "mkfs.czfs: %s: %s\n", r->o.image, strerror(-err));
	return err;
}

static void pack_summary(const struct mk_pack_stats *st)
{
	/* packs in runs take their payload's bytes, not whole blocks */
	uint64_t blocks = st->blocks + DIV_ROUND_UP(st->slice_bytes,
						    CZFS_BLOCK_SIZE);
	uint64_t saved = st->alone_blocks - MIN(st->alone_blocks, blocks);

	if (st->copies)
		printf("mkfs.czfs: %llu files are copies of others (%.1f MiB): they share their clusters\n",
		       (unsigned long long)st->copies,
		       st->copy_bytes / 1048576.0);
	if (!st->packs)
		return;

	printf("mkfs.czfs: packed %llu small files and tails (%.1f MiB, %llu shared copies) into %llu packs of %.1f MiB (%llu back to back in runs), %.1f MiB less than a block each\n",
	       (unsigned long long)st->members, st->member_bytes / 1048576.0,
	       (unsigned long long)st->dedup, (unsigned long long)st->packs,
	       blocks / 256.0, (unsigned long long)st->sliced, saved / 256.0);
}

static void run_summary(const struct mk_run_stats *st)
{
	uint64_t saved = st->alone_blocks - MIN(st->alone_blocks, st->blocks);

	if (!st->runs)
		return;
	printf("mkfs.czfs: laid %llu compressed clusters (%.1f MiB) back to back in %llu runs of %.1f MiB, %.1f MiB less than whole blocks each\n",
	       (unsigned long long)st->slices, st->slice_bytes / 1048576.0,
	       (unsigned long long)st->runs, st->blocks / 256.0, saved / 256.0);
}

static void tree_summary(const struct czfs_btree_build_stats *st)
{
	if (!st->packs)
		return;
	printf("mkfs.czfs: compressed %llu of %llu metadata leaves (%.1f MiB) into %llu leaf packs of %.1f MiB\n",
	       (unsigned long long)st->packed_leaves,
	       (unsigned long long)st->leaves, st->packed_leaves / 256.0,
	       (unsigned long long)st->packs, st->pack_blocks / 256.0);
}

static int run(struct mk_run *r)
{
	int err;

	mk_progress_init(&r->pr, !r->o.quiet && isatty(STDERR_FILENO), 0, 0);
	err = check_image(r);
	if (!err)
		err = scan_source(r);
	if (!err)
		err = open_image(r);
	if (!err)
		err = build(r);
	czfs_bdev_close(r->bdev);
	if (err && r->created)
		unlink(r->o.image);
	/*
	 * A finished image is kept: a stop signal from here on stays pending
	 * and dies with the process, which exits 0.  Killed (143) therefore
	 * always means no image.
	 */
	if (!err)
		hold_stop_signals(NULL);
	created_image = NULL;
	if (!err && !r->o.quiet)
		mk_progress_summary(&r->pr, r->tree.nfiles, r->tree.ndirs,
				    r->tree.bytes,
				    r->st.image_blocks << CZFS_BLOCK_SHIFT);
	if (!err && !r->o.quiet) {
		printf("mkfs.czfs: read %llu bytes of the files (holes are not read)\n",
		       (unsigned long long)r->st.read_bytes);
		pack_summary(&r->st.pack);
		run_summary(&r->st.runs);
		tree_summary(&r->st.tree);
	}
	mk_tree_free(&r->tree);
	return err;
}

int main(int argc, char **argv)
{
	struct mk_run r = { .o = { .alg = CZFS_ALG_LZ4, .cluster_shift = 4,
				   .uid = -1, .gid = -1 },
			    .tree = { .rootfd = -1, .datafd = -1,
				      .tarfd = -1 } };
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int err;

	r.o.jobs = cpus > 0 ? (unsigned)MIN(cpus, 1024) : 1;
	err = parse_args(argc, argv, &r.o);
	if (err)
		return err > 0 ? 0 : 1;
	if (!r.o.has_uuid && getrandom(r.o.uuid, sizeof(r.o.uuid), 0) !=
	    sizeof(r.o.uuid)) {
		fprintf(stderr, "mkfs.czfs: getrandom: %s\n", strerror(errno));
		return 1;
	}
	if (!r.o.has_uuid) {	/* a version 4 (random) UUID */
		r.o.uuid[6] = (r.o.uuid[6] & 0x0f) | 0x40;
		r.o.uuid[8] = (r.o.uuid[8] & 0x3f) | 0x80;
	}
	czfs_log_set_sink(log_sink, CZFS_LOG_WARN);
	catch_signals();
	return run(&r) ? 1 : 0;
}
