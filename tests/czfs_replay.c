// SPDX-License-Identifier: MIT
/*
 * Power-loss replay (after dm-log-writes' replay and CrashMonkey): from
 * the image as it was at mount, the write log of that mount (czfs-fuse
 * -o log_writes) and a journal of what the workload made durable, build
 * the images a power cut may leave at many points of the log, open each
 * as the daemon mounts it, and check that every file fsync'd before the
 * cut is there, byte for byte.
 *
 *   czfs-replay [-s SEED] [-i IMAGES] [-F FINAL] [-v] IMAGE LOG JOURNAL
 *
 * At a cut (the first n records of the log) the disk holds what the last
 * flush among them covers, and any subset of the records after that, in
 * order; a write of several 4 KiB blocks may be torn to a prefix of them.
 * The cuts tried: each flush (just before it completes and just after),
 * the last moment each journal entry is claimed, and the end.  At each,
 * the subsets "none" and "all" (every subset when there are at most 3
 * records to choose from), then random ones where there is more choice
 * (a quarter of them prefixes: what a kill -9 at that record leaves),
 * as many as make IMAGES in all (more when the cuts alone need more).
 *
 * The journal: a line per durable version of a file,
 *   FROM UNTIL PATH REF
 * FROM the log's size (bytes) when the workload's fsync returned, UNTIL
 * its size when the workload began to change PATH again ("-": never), PATH
 * the file in the image ("/a/b"), REF a file of the bytes it must hold.
 * A cut of records that all lie within the first FROM..UNTIL bytes must
 * show exactly that.
 *
 * FINAL (the image after the unmount): the whole log replayed must give
 * it byte for byte, which proves the log holds every change.
 *
 * -k DIR: each failing image is saved there as the power cut left it
 * (cut<N>-<subset>.img), for fsck.czfs and dump.czfs; with -S EVERY,
 * every EVERY-th image that passed too (a sample for fsck.czfs -n).
 *
 * Exit status 0 when every image passed, 1 when one failed (each failure
 * printed with its cut and subset), 2 for bad input.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compress.h"
#include "dir.h"
#include "fs.h"
#include "inode.h"
#include "log.h"
#include "util.h"
#include "wlog.h"

#define MAX_FAILURES	10	/* printed in full; the rest counted */

struct jentry {
	uint64_t from, until;		/* UINT64_MAX: never changed again */
	char *path;
	uint8_t *want;
	size_t want_len;
};

struct rp {
	struct czfs_wlog *log;
	struct czfs_replay r;
	struct jentry *j;
	size_t nj;
	struct czfs_codec *codec;
	uint64_t rng;
	int verbose;
	const char *keep_dir;		/* -k: images saved here */
	unsigned long keep_every;	/* -S: every nth image saved too */
	/* counts */
	unsigned long cuts, images, checks, failures, fallbacks, saved;
	unsigned long failed_mounts;	/* of the failures, those that did not open */
	uint64_t max_pending;
	char msgs[4096];		/* the library's messages of one image */
	size_t msgs_len;
};

static struct rp *the_rp;		/* for the log sink */

static void sink(enum czfs_log_level level, const char *msg)
{
	struct rp *p = the_rp;
	int n;

	(void)level;
	if (!p || p->msgs_len >= sizeof(p->msgs) - 1)
		return;
	n = snprintf(p->msgs + p->msgs_len, sizeof(p->msgs) - p->msgs_len,
		     "    czfs: %s\n", msg);
	if (n > 0)
		p->msgs_len = MIN(p->msgs_len + (size_t)n, sizeof(p->msgs) - 1);
}

static uint64_t rnd(struct rp *p)	/* xorshift64* */
{
	p->rng ^= p->rng >> 12;
	p->rng ^= p->rng << 25;
	p->rng ^= p->rng >> 27;
	return p->rng * 0x2545f4914f6cdd1dull;
}

static int die_input(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static int die_input(const char *fmt, ...)
{
	va_list ap;

	fputs("czfs-replay: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 2;
}

/* ---- input -------------------------------------------------------------- */

static int read_file(const char *path, uint8_t **buf, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	size_t done = 0;
	int err = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		err = -errno;
	if (!err && !(*buf = malloc((size_t)st.st_size + 1)))
		err = -ENOMEM;
	while (!err && done < (size_t)st.st_size) {
		ssize_t n = read(fd, *buf + done, (size_t)st.st_size - done);

		if (n <= 0)
			err = n ? -errno : -EIO;
		else
			done += (size_t)n;
	}
	close(fd);
	if (err)
		return err;
	*len = done;
	return 0;
}

static int parse_pos(const char *s, uint64_t *v)
{
	char *end;

	if (!strcmp(s, "-")) {
		*v = UINT64_MAX;
		return 0;
	}
	errno = 0;
	*v = strtoull(s, &end, 10);
	return (errno || *end || end == s) ? -EINVAL : 0;
}

static int load_journal(struct rp *p, const char *path)
{
	FILE *f = fopen(path, "r");
	char line[8192], from[32], until[32], name[4096], ref[4096];
	unsigned lineno = 0;
	int err = 0;

	if (!f)
		return die_input("%s: %s", path, strerror(errno));
	while (!err && fgets(line, sizeof(line), f)) {
		struct jentry e = { 0 };
		struct jentry *j;

		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%31s %31s %4095s %4095s", from, until, name, ref) != 4 ||
		    parse_pos(from, &e.from) || e.from == UINT64_MAX ||
		    parse_pos(until, &e.until) || e.until < e.from || name[0] != '/') {
			err = die_input("%s:%u: want FROM UNTIL /PATH REF", path, lineno);
			break;
		}
		if ((err = -read_file(ref, &e.want, &e.want_len))) {
			err = die_input("%s:%u: %s: %s", path, lineno, ref, strerror(err));
			break;
		}
		j = realloc(p->j, (p->nj + 1) * sizeof(*j));
		e.path = strdup(name);
		if (!j || !e.path) {
			free(e.want);
			free(e.path);
			err = die_input("out of memory");
			break;
		}
		p->j = j;
		p->j[p->nj++] = e;
	}
	fclose(f);
	return err;
}

/* ---- one image ---------------------------------------------------------- */

static int lookup(struct czfs_fs *fs, const char *path, uint64_t *ino)
{
	char buf[4096], *save, *name;
	unsigned type;
	int err = 0;

	snprintf(buf, sizeof(buf), "%s", path);
	*ino = CZFS_ROOT_INO;
	pthread_rwlock_rdlock(&fs->lock);
	for (name = strtok_r(buf, "/", &save); name && !err;
	     name = strtok_r(NULL, "/", &save))
		err = czfs_dir_lookup(fs, *ino, name, strlen(name), ino, &type);
	pthread_rwlock_unlock(&fs->lock);
	return err;
}

/* Whether the file holds e's bytes: NULL, or what is wrong. */
static const char *check_file(struct rp *p, struct czfs_fs *fs,
			      const struct jentry *e, char *why, size_t whylen)
{
	struct czfs_inode_info ii;
	const char *res = why;
	uint8_t *got = NULL;
	uint64_t ino;
	long n;
	int err;

	err = lookup(fs, e->path, &ino);
	if (!err) {
		pthread_rwlock_rdlock(&fs->lock);
		err = czfs_inode_read(&fs->tree, ino, &ii);
		pthread_rwlock_unlock(&fs->lock);
	}
	if (err) {
		snprintf(why, whylen, "%s: %s", e->path, strerror(-err));
		return why;
	}
	if (ii.size != e->want_len) {
		snprintf(why, whylen, "%s: size %" PRIu64 ", want %zu", e->path,
			 ii.size, e->want_len);
		return why;
	}
	got = malloc(e->want_len + 1);
	if (!got) {
		snprintf(why, whylen, "out of memory");
		return why;
	}
	n = czfs_file_pread(fs, p->codec, &ii, got, e->want_len, 0);
	if (n < 0)
		snprintf(why, whylen, "%s: read: %s", e->path, strerror((int)-n));
	else if ((size_t)n != e->want_len)
		snprintf(why, whylen, "%s: read %ld of %zu bytes", e->path, n,
			 e->want_len);
	else if (memcmp(got, e->want, e->want_len)) {
		size_t i = 0;

		while (got[i] == e->want[i])
			i++;
		snprintf(why, whylen, "%s: byte %zu is 0x%02x, want 0x%02x "
			 "(block %zu of the file differs)", e->path, i, got[i],
			 e->want[i], i / 4096);
	} else {
		res = NULL;
	}
	free(got);
	return res;
}

/* As the daemon mounts read-write (main.c mount_rw): open, reap the
 * orphans, commit the mount. */
static int mount_image(struct czfs_bdev *b, struct czfs_fs **fs)
{
	struct czfs_fs_opts fo = { .flags = CZFS_OPEN_DISCARD,
				   .node_cache_nodes = 1024 };
	unsigned orphans;
	int err = czfs_fs_open_bdev(b, &fo, fs);

	if (err)
		return err;
	pthread_rwlock_wrlock(&(*fs)->lock);
	err = czfs_fs_begin(*fs);
	if (!err)
		err = czfs_orphans_reap(*fs, &orphans);
	if (!err)
		err = czfs_fs_commit_mount(*fs);
	pthread_rwlock_unlock(&(*fs)->lock);
	return err;
}

/* The image of pick as the power cut left it (before any mount) to
 * keep_dir/cut<N>-<subset>.img, its zero pieces as holes, for fsck.czfs
 * and dump.czfs.  The path is printed on stdout. */
static void save_image(struct rp *p, const char *subset, const uint32_t *pick)
{
	struct czfs_bdev *b = NULL;
	char path[4096], *c;
	uint8_t *buf = malloc(1 << 20);
	int fd = -1, err = buf ? 0 : -ENOMEM;

	snprintf(path, sizeof(path), "%s/cut%zu-%s.img", p->keep_dir, p->r.cut,
		 subset);
	for (c = path + strlen(p->keep_dir) + 1; *c; c++)
		if (*c == ' ')
			*c = '_';
	if (!err)
		err = czfs_replay_bdev(&p->r, pick, &b);
	if (!err && (fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
			       0644)) < 0)
		err = -errno;
	for (uint64_t at = 0; !err && b && at < b->size; at += 1 << 20) {
		size_t n = (size_t)MIN(b->size - at, 1u << 20), z = 0;

		err = czfs_bdev_read(b, buf, n, at);
		while (!err && z < n && !buf[z])
			z++;
		if (!err && z < n && pwrite(fd, buf, n, (off_t)at) != (ssize_t)n)
			err = -EIO;
	}
	if (!err && ftruncate(fd, (off_t)b->size))
		err = -errno;
	if (fd >= 0)
		close(fd);
	czfs_bdev_close(b);
	free(buf);
	if (err) {
		fprintf(stderr, "czfs-replay: %s: %s\n", path, strerror(-err));
		return;
	}
	p->saved++;
	printf("saved %s\n", path);
}

static void print_subset(const struct rp *p, const uint32_t *pick, size_t np)
{
	unsigned shown = 0;

	fprintf(stderr, "    kept of the records after the durable point:");
	for (size_t i = 0; i < np; i++) {
		const struct czfs_wlog_entry *e = &p->log->e[p->r.applied + i];

		if (!pick[i] || e->op == CZFS_WLOG_FLUSH)
			continue;
		if (shown++ == 64) {
			fprintf(stderr, " ...");
			break;
		}
		fprintf(stderr, " #%zu(%c %" PRIu64 "+%" PRIu64, p->r.applied + i,
			e->op, e->off, e->len);
		if (pick[i] != CZFS_REPLAY_WHOLE && e->op == CZFS_WLOG_WRITE &&
		    (uint64_t)pick[i] * 4096 < e->len)
			fprintf(stderr, " torn to %u blocks", pick[i]);
		fputc(')', stderr);
	}
	if (!shown)
		fprintf(stderr, " none");
	fputc('\n', stderr);
}

static void image_failed(struct rp *p, const char *subset, const uint32_t *pick,
			 const char *what)
{
	size_t n = p->r.cut;

	p->failed_mounts += !strncmp(what, "mount:", 6);
	if (p->keep_dir)
		save_image(p, subset, pick);
	if (++p->failures > MAX_FAILURES)
		return;
	fprintf(stderr, "FAIL: cut at record %zu (log byte %" PRIu64 "), durable "
		"records 0..%zu, subset %s of the %zu after: %s\n", n,
		n ? p->log->e[n - 1].end : (uint64_t)sizeof(struct czfs_wlog_header),
		p->r.applied, subset, czfs_replay_pending(&p->r), what);
	print_subset(p, pick, czfs_replay_pending(&p->r));
	fputs(p->msgs, stderr);
}

/* Build, mount and check the image of one subset. */
static void try_image(struct rp *p, const char *subset, const uint32_t *pick)
{
	size_t n = p->r.cut;
	struct czfs_bdev *b = NULL;
	struct czfs_fs *fs = NULL;
	char why[512];
	const char *bad = NULL;
	int err;

	p->msgs_len = 0;
	p->msgs[0] = '\0';
	p->images++;
	err = czfs_replay_bdev(&p->r, pick, &b);
	if (!err)
		err = mount_image(b, &fs);
	if (err) {
		snprintf(why, sizeof(why), "mount: %s", strerror(-err));
		bad = why;
	}
	for (size_t k = 0; !bad && k < p->nj; k++) {
		const struct jentry *e = &p->j[k];

		if (czfs_wlog_records_at(p->log, e->from) > n ||
		    (e->until != UINT64_MAX &&
		     czfs_wlog_records_at(p->log, e->until) < n))
			continue;
		p->checks++;
		bad = check_file(p, fs, e, why, sizeof(why));
	}
	if (strstr(p->msgs, "using the checkpoint before it"))
		p->fallbacks++;	/* a COVERED one refused: the one before served */
	czfs_fs_close(fs);
	if (bad)
		image_failed(p, subset, pick, bad);
	else if (p->keep_dir && p->keep_every && p->images % p->keep_every == 0)
		save_image(p, subset, pick);
	else if (p->verbose > 1)
		fprintf(stderr, "ok: cut %zu subset %s\n", n, subset);
}

/* ---- cuts and subsets --------------------------------------------------- */

/* A random subset: one in four a prefix of the records (what a kill -9
 * at that record leaves: the host kept every write), else each record
 * kept or not, a kept write sometimes torn.  Returns its name in name. */
static void random_subset(struct rp *p, uint32_t *pick, size_t np,
			  unsigned k, char *name, size_t namelen)
{
	/* how much of the tail survives varies from subset to subset */
	static const unsigned keep_pct[] = { 10, 50, 90 };
	unsigned pct = keep_pct[rnd(p) % 3];

	if (rnd(p) % 4 == 0) {
		size_t keep = (size_t)(rnd(p) % np);

		for (size_t i = 0; i < np; i++)
			pick[i] = i < keep ? CZFS_REPLAY_WHOLE : 0;
		snprintf(name, namelen, "random %u (a prefix of %zu)", k, keep);
		return;
	}
	for (size_t i = 0; i < np; i++) {
		const struct czfs_wlog_entry *e = &p->log->e[p->r.applied + i];
		uint64_t blocks = (e->len + 4095) / 4096;

		pick[i] = rnd(p) % 100 < pct ? CZFS_REPLAY_WHOLE : 0;
		if (pick[i] && e->op == CZFS_WLOG_WRITE && blocks > 1 &&
		    rnd(p) % 4 == 0)	/* torn: a prefix of its blocks */
			pick[i] = (uint32_t)(1 + rnd(p) % (blocks - 1));
	}
	snprintf(name, namelen, "random %u", k);
}

static int try_cut(struct rp *p, size_t n, unsigned nrandom)
{
	size_t np;
	uint32_t *pick;
	char name[64];
	int err = czfs_replay_advance(&p->r, n);

	if (err)
		return err;
	p->cuts++;
	np = czfs_replay_pending(&p->r);
	p->max_pending = MAX(p->max_pending, np);
	pick = calloc(np + 1, sizeof(*pick));
	if (!pick)
		return -ENOMEM;
	try_image(p, "none", pick);
	if (np && np <= 3) {		/* every subset */
		for (unsigned m = 1; m < (1u << np); m++) {
			for (size_t i = 0; i < np; i++)
				pick[i] = (m >> i) & 1 ? CZFS_REPLAY_WHOLE : 0;
			snprintf(name, sizeof(name), "mask 0x%x", m);
			try_image(p, name, pick);
		}
	} else if (np) {
		for (size_t i = 0; i < np; i++)
			pick[i] = CZFS_REPLAY_WHOLE;
		try_image(p, "all", pick);
		for (unsigned k = 0; k < nrandom; k++) {
			random_subset(p, pick, np, k, name, sizeof(name));
			try_image(p, name, pick);
		}
	}
	free(pick);
	return 0;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

/* The cuts, sorted and unique; returns how many (0 with *cuts NULL on
 * -ENOMEM). */
static size_t plan_cuts(struct rp *p, size_t **cuts)
{
	size_t cap = 2 * p->log->n + p->nj + 2, n = 0;
	size_t *c = malloc(cap * sizeof(*c));

	*cuts = c;
	if (!c)
		return 0;
	for (size_t i = 0; i < p->log->n; i++)
		if (p->log->e[i].op == CZFS_WLOG_FLUSH) {
			c[n++] = i;		/* before it completes */
			c[n++] = i + 1;		/* after */
		}
	for (size_t k = 0; k < p->nj; k++)
		if (p->j[k].until != UINT64_MAX)
			c[n++] = czfs_wlog_records_at(p->log, p->j[k].until);
	c[n++] = p->log->n;
	qsort(c, n, sizeof(*c), cmp_size);
	for (size_t i = 1, w = 1; i <= n; i++) {
		if (i == n) {
			n = w;
			break;
		}
		if (c[i] != c[w - 1])
			c[w++] = c[i];
	}
	return n;
}

/* The records a cut's subsets choose from, as czfs_replay_advance will
 * find them (cuts in order; *durable carries the furthest flush). */
static size_t pending_at(const struct rp *p, size_t from, size_t cut,
			 size_t *durable)
{
	for (size_t i = from; i < cut; i++)
		if (p->log->e[i].op == CZFS_WLOG_FLUSH)
			*durable = MAX(*durable, p->log->e[i].arg);
	return cut - *durable;
}

/* The images a cut costs besides its random subsets. */
static unsigned long fixed_images(size_t np)
{
	return np <= 3 ? 1ul << np : 2;
}

static int run(struct rp *p, unsigned long images)
{
	size_t *cuts, ncuts = plan_cuts(p, &cuts), durable = 0, prev = 0;
	unsigned long fixed = 0, open = 0, left, each, extra;
	int err = 0;

	if (!cuts)
		return -ENOMEM;
	/* none and all (or every subset of a few) at each cut; what is left
	 * of the budget, random subsets where there is a choice */
	for (size_t i = 0; i < ncuts; i++) {
		size_t np = pending_at(p, prev, cuts[i], &durable);

		prev = cuts[i];
		fixed += fixed_images(np);
		open += np > 3;
	}
	left = images > fixed ? images - fixed : 0;
	each = open ? left / open : 0;
	extra = open ? left % open : 0;
	durable = prev = 0;
	for (size_t i = 0; !err && i < ncuts; i++) {
		size_t np = pending_at(p, prev, cuts[i], &durable);
		unsigned nrandom = 0;

		prev = cuts[i];
		if (np > 3)
			nrandom = (unsigned)(each + (extra ? (extra--, 1) : 0));
		err = try_cut(p, cuts[i], nrandom);
	}
	free(cuts);
	return err;
}

/* The whole log replayed equals the image after the unmount: every
 * record kept, the ones no flush covered (the last discard's punches)
 * too.  0, 1 when it differs, 2 for bad input. */
static int check_final(struct rp *p, const char *final)
{
	uint8_t *buf = NULL, *got = NULL;
	void *map = NULL;
	struct czfs_bdev *b = NULL;
	uint32_t *pick;
	size_t len = 0, np, at = 0;
	int err;

	if ((err = czfs_replay_advance(&p->r, p->log->n)))
		return die_input("replay: %s", strerror(-err));
	np = czfs_replay_pending(&p->r);
	pick = malloc((np + 1) * sizeof(*pick));
	if (!pick)
		return die_input("out of memory");
	for (size_t i = 0; i < np; i++)
		pick[i] = CZFS_REPLAY_WHOLE;
	err = czfs_replay_bdev(&p->r, pick, &b);
	free(pick);
	if (!err)
		err = czfs_wlog_map_file(final, &map, &len);
	buf = map;
	if (!err && !(got = malloc(1 << 20)))
		err = -ENOMEM;
	if (!err && b->size != len) {
		fprintf(stderr, "FAIL: the log replayed whole is %" PRIu64 " bytes, "
			"%s %zu\n", b->size, final, len);
		err = 1;
	}
	/* a piece at a time: an image is mostly holes, not memory */
	for (; !err && at < len; at += 1 << 20) {
		size_t n = MIN(len - at, (size_t)1 << 20), i = 0;

		err = czfs_bdev_read(b, got, n, at);
		if (err || !memcmp(buf + at, got, n))
			continue;
		while (buf[at + i] == got[i])
			i++;
		fprintf(stderr, "FAIL: the log replayed whole differs from %s "
			"at byte %zu (block %zu)\n", final, at + i, (at + i) / 4096);
		err = 1;
	}
	if (err < 0)
		err = die_input("%s: %s", final, strerror(-err));
	else if (!err)
		printf("the log replayed whole is %s, byte for byte\n", final);
	czfs_bdev_close(b);
	czfs_wlog_unmap_file(map, len);
	free(got);
	return err;
}

static int usage(void)
{
	fprintf(stderr, "usage: czfs-replay [-s SEED] [-i IMAGES] [-F FINAL] "
		"[-k DIR [-S EVERY]] [-v] IMAGE LOG JOURNAL\n");
	return 2;
}

/* Everything after the options: the exit status. */
static int replay(struct rp *p, char **files, unsigned long images,
		  const char *final)
{
	void *img = NULL;
	size_t img_len = 0;
	int err = czfs_wlog_load(files[1], &p->log);

	if (err) {
		fputs(p->msgs, stderr);
		return die_input("%s: %s", files[1], strerror(-err));
	}
	if ((err = -czfs_wlog_map_file(files[0], &img, &img_len)))
		return die_input("%s: %s", files[0], strerror(err));
	err = czfs_replay_init(&p->r, p->log, img, img_len);
	czfs_wlog_unmap_file(img, img_len);
	if (err) {
		fputs(p->msgs, stderr);
		return die_input("%s: does not fit the log", files[0]);
	}
	if ((err = load_journal(p, files[2])))
		return err;
	if (!(p->codec = czfs_codec_new()))
		return die_input("out of memory");
	if ((err = run(p, images)))
		return die_input("replay: %s", strerror(-err));
	printf("records %zu%s, journal entries %zu, cuts %lu, images %lu, "
	       "file checks %lu, most records after a durable point %" PRIu64
	       ", images opened at an older checkpoint %lu, failures %lu "
	       "(%lu did not open)\n",
	       p->log->n, p->log->torn_tail ? " (+ a torn tail)" : "", p->nj,
	       p->cuts, p->images, p->checks, p->max_pending, p->fallbacks,
	       p->failures, p->failed_mounts);
	if (final && (err = check_final(p, final)))
		return err;
	return p->failures ? 1 : 0;
}

static int number(const char *s, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 0);
	return errno || *end || end == s ? -EINVAL : 0;
}

int main(int argc, char **argv)
{
	struct rp p = { .rng = 1 };
	unsigned long images = 1000, seed;
	const char *final = NULL;
	int opt, rc;

	while ((opt = getopt(argc, argv, "s:i:F:k:S:v")) != -1) {
		switch (opt) {
		case 'k':
			p.keep_dir = optarg;
			break;
		case 'S':
			if (number(optarg, &p.keep_every))
				return die_input("-S %s: not a number", optarg);
			break;
		case 's':
			if (number(optarg, &seed))
				return die_input("-s %s: not a number", optarg);
			p.rng = seed * 2654435761u + 1;
			break;
		case 'i':
			if (number(optarg, &images))
				return die_input("-i %s: not a number", optarg);
			break;
		case 'F':
			final = optarg;
			break;
		case 'v':
			p.verbose++;
			break;
		default:
			return usage();
		}
	}
	if (argc - optind != 3)
		return usage();
	the_rp = &p;
	czfs_log_set_sink(sink, CZFS_LOG_INFO);
	rc = replay(&p, argv + optind, images, final);
	czfs_codec_free(p.codec);
	czfs_replay_destroy(&p.r);
	for (size_t k = 0; k < p.nj; k++) {
		free(p.j[k].path);
		free(p.j[k].want);
	}
	free(p.j);
	czfs_wlog_free(p.log);
	return rc;
}
