// SPDX-License-Identifier: MIT
/*
 * Unit tests: write logs (bdev_log.c, wlog.c).  The recording device logs
 * what it passes on, in order, with flushes covering what completed
 * before them; the reader refuses damaged logs; the replay keeps what
 * flushes covered and exactly the subset (and torn prefix) asked of the
 * rest.  Then a commit replayed at every cut and subset always opens, and
 * the same commit with the flush before its checkpoint dropped (a planted
 * bug) gives an image that does not: the replay finds that bug.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bdev.h"
#include "btree.h"
#include "fs.h"
#include "inode.h"
#include "log.h"
#include "util.h"
#include "wlog.h"
#include "fs_testlib.h"

static char log_path[64];

static void setup(void)
{
	int fd;

	snprintf(log_path, sizeof(log_path), "/tmp/check_wlog.XXXXXX");
	fd = mkstemp(log_path);
	ck_assert_int_ge(fd, 0);
	close(fd);
}

static void teardown(void)
{
	unlink(log_path);
}

static struct czfs_wlog *load(void)
{
	struct czfs_wlog *log = NULL;

	ck_assert_int_eq(czfs_wlog_load(log_path, &log), 0);
	return log;
}

/* A recording device over an in-memory one of size bytes. */
static struct czfs_bdev *recorder(uint64_t size)
{
	struct czfs_bdev *mem, *b;

	ck_assert_int_eq(czfs_bdev_mem_create(size, 0, &mem), 0);
	ck_assert_int_eq(czfs_bdev_log_create(mem, log_path, &b), 0);
	return b;
}

static void fill(uint8_t *buf, size_t len, uint8_t v)
{
	memset(buf, v, len);
}

START_TEST(records_in_order)
{
	struct czfs_bdev *b = recorder(16384);
	uint8_t buf[8192], back[8192];
	struct czfs_wlog *log;

	fill(buf, sizeof(buf), 0xa1);
	ck_assert_int_eq(czfs_bdev_write(b, buf, 8192, 4096), 0);
	ck_assert_int_eq(czfs_bdev_flush(b), 0);
	ck_assert_int_eq(czfs_bdev_punch(b, 4096, 4096), 0);
	ck_assert_int_eq(b->ops->resize(b, 32768), 0);
	ck_assert_uint_eq(b->size, 32768);
	ck_assert_int_eq(czfs_bdev_read(b, back, 8192, 4096), 0);
	ck_assert_uint_eq(back[0], 0);		/* punched */
	ck_assert_uint_eq(back[4096], 0xa1);
	ck_assert_int_eq(czfs_bdev_fd(b), -1);	/* an in-memory one below */
	czfs_bdev_close(b);

	log = load();
	ck_assert_uint_eq(log->initial_size, 16384);
	ck_assert_uint_eq(log->n, 4);
	ck_assert_int_eq(log->e[0].op, CZFS_WLOG_WRITE);
	ck_assert_uint_eq(log->e[0].off, 4096);
	ck_assert_uint_eq(log->e[0].len, 8192);
	ck_assert_int_eq(memcmp(log->e[0].data, buf, 8192), 0);
	ck_assert_int_eq(log->e[1].op, CZFS_WLOG_FLUSH);
	ck_assert_uint_eq(log->e[1].arg, 1);	/* the write before it */
	ck_assert_int_eq(log->e[2].op, CZFS_WLOG_PUNCH);
	ck_assert_uint_eq(log->e[2].off, 4096);
	ck_assert_uint_eq(log->e[2].len, 4096);
	ck_assert_int_eq(log->e[3].op, CZFS_WLOG_RESIZE);
	ck_assert_uint_eq(log->e[3].off, 32768);
	ck_assert_int_eq(log->torn_tail, 0);
	ck_assert_uint_eq(czfs_wlog_records_at(log, log->e[1].end), 2);
	ck_assert_uint_eq(czfs_wlog_records_at(log, log->e[1].end - 1), 1);
	ck_assert_uint_eq(czfs_wlog_records_at(log, 0), 0);
	czfs_wlog_free(log);
}
END_TEST

/* A log whose writer died mid-append loses that record only; a damaged
 * record or header is refused. */
static void truncate_log(off_t by)
{
	struct stat st;

	ck_assert_int_eq(stat(log_path, &st), 0);
	ck_assert_int_eq(truncate(log_path, st.st_size - by), 0);
}

static void flip_log_byte(off_t at)
{
	int fd = open(log_path, O_RDWR);
	uint8_t c;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &c, 1, at), 1);
	c ^= 0x10;
	ck_assert_int_eq(pwrite(fd, &c, 1, at), 1);
	close(fd);
}

START_TEST(torn_and_damaged)
{
	struct czfs_bdev *b = recorder(4096);
	uint8_t buf[4096];
	struct czfs_wlog *log = NULL;
	const off_t first = sizeof(struct czfs_wlog_header);

	fill(buf, sizeof(buf), 7);
	ck_assert_int_eq(czfs_bdev_write(b, buf, 4096, 0), 0);
	ck_assert_int_eq(czfs_bdev_write(b, buf, 4096, 4096), 0);
	czfs_bdev_close(b);
	truncate_log(100);			/* the second one's data torn */
	log = load();
	ck_assert_uint_eq(log->n, 1);
	ck_assert_int_eq(log->torn_tail, 1);
	czfs_wlog_free(log);

	flip_log_byte(first + sizeof(struct czfs_wlog_rec) + 5);	/* data */
	ck_assert_int_eq(czfs_wlog_load(log_path, &log), -EINVAL);
	flip_log_byte(first + sizeof(struct czfs_wlog_rec) + 5);
	flip_log_byte(first + 20);			/* the record's offset */
	ck_assert_int_eq(czfs_wlog_load(log_path, &log), -EINVAL);
	flip_log_byte(first + 20);
	flip_log_byte(0);				/* magic */
	ck_assert_int_eq(czfs_wlog_load(log_path, &log), -EINVAL);
	ck_assert_int_eq(czfs_wlog_parse("short", 5, &log), -EINVAL);
	ck_assert_int_eq(czfs_wlog_load("/nonexistent/log", &log), -ENOENT);
}
END_TEST

/* Records: w0 (block 0 = 1), f (covers w0), w1 (blocks 1-3 = 2),
 * p (block 0), f (covers up to p), w2 (block 4 = 3), r (shrink to 4
 * blocks). */
static struct czfs_wlog *sample_log(void)
{
	struct czfs_bdev *b = recorder(0);
	struct czfs_wlog *log;
	uint8_t buf[3 * 4096];

	fill(buf, 4096, 1);
	ck_assert_int_eq(czfs_bdev_write(b, buf, 4096, 0), 0);
	ck_assert_int_eq(czfs_bdev_flush(b), 0);
	fill(buf, sizeof(buf), 2);
	ck_assert_int_eq(czfs_bdev_write(b, buf, 3 * 4096, 4096), 0);
	ck_assert_int_eq(czfs_bdev_punch(b, 0, 4096), 0);
	fill(buf, 4096, 3);
	ck_assert_int_eq(czfs_bdev_write(b, buf, 4096, 4 * 4096), 0);
	ck_assert_int_eq(b->ops->resize(b, 4 * 4096), 0);
	czfs_bdev_close(b);
	log = load();
	ck_assert_uint_eq(log->n, 6);
	/* a flush of another thread, issued before w2 completed */
	log->e = realloc(log->e, 7 * sizeof(*log->e));
	ck_assert_ptr_nonnull(log->e);
	log->e[6] = log->e[5];
	log->e[5] = log->e[4];
	log->e[4] = (struct czfs_wlog_entry){ .op = CZFS_WLOG_FLUSH, .arg = 4 };
	log->n = 7;
	return log;
}

static uint8_t byte_at(struct czfs_bdev *b, uint64_t off)
{
	uint8_t c = 0xee;

	if (off >= b->size)
		return 0xff;	/* past the end */
	ck_assert_int_eq(czfs_bdev_read(b, &c, 1, off), 0);
	return c;
}

START_TEST(replay_cuts_and_subsets)
{
	struct czfs_wlog *log = sample_log();
	struct czfs_replay r;
	struct czfs_bdev *b;
	uint32_t pick[8] = { 0 };

	ck_assert_int_eq(czfs_replay_init(&r, log, "", 1), -EINVAL);
	czfs_replay_destroy(&r);
	ck_assert_int_eq(czfs_replay_init(&r, log, "", 0), 0);

	/* cut 1: w0 pending; none -> empty device, all -> its block */
	ck_assert_int_eq(czfs_replay_advance(&r, 1), 0);
	ck_assert_uint_eq(r.applied, 0);
	ck_assert_uint_eq(czfs_replay_pending(&r), 1);
	ck_assert_int_eq(czfs_replay_bdev(&r, pick, &b), 0);
	ck_assert_uint_eq(b->size, 0);
	czfs_bdev_close(b);
	pick[0] = CZFS_REPLAY_WHOLE;
	ck_assert_int_eq(czfs_replay_bdev(&r, pick, &b), 0);
	ck_assert_uint_eq(byte_at(b, 0), 1);
	czfs_bdev_close(b);

	/* cut 4 (after the first flush): w0 durable; w1 torn to 2 blocks,
	 * the punch kept */
	ck_assert_int_eq(czfs_replay_advance(&r, 4), 0);
	ck_assert_uint_eq(r.applied, 1);
	ck_assert_uint_eq(czfs_replay_pending(&r), 3);
	pick[0] = 0;			/* the flush record: ignored */
	pick[1] = 2;
	pick[2] = CZFS_REPLAY_WHOLE;
	ck_assert_int_eq(czfs_replay_bdev(&r, pick, &b), 0);
	ck_assert_uint_eq(b->size, 3 * 4096);
	ck_assert_uint_eq(byte_at(b, 0), 0);
	ck_assert_uint_eq(byte_at(b, 4096), 2);
	ck_assert_uint_eq(byte_at(b, 2 * 4096 + 4095), 2);
	/* its own writes stay in it, over what it was built of */
	ck_assert_int_eq(czfs_bdev_write(b, "x", 1, 5), 0);
	ck_assert_uint_eq(byte_at(b, 5), 'x');
	czfs_bdev_close(b);
	pick[1] = 0;			/* w1 lost, punch not kept */
	pick[2] = 0;
	ck_assert_int_eq(czfs_replay_bdev(&r, pick, &b), 0);
	ck_assert_uint_eq(b->size, 4096);
	ck_assert_uint_eq(byte_at(b, 0), 1);
	ck_assert_uint_eq(byte_at(b, 5), 1);	/* the write above: not here */
	czfs_bdev_close(b);

	/* cut 6: the second flush covers w1 and p, not w2 (in flight) */
	ck_assert_int_eq(czfs_replay_advance(&r, 6), 0);
	ck_assert_uint_eq(r.applied, 4);
	ck_assert_uint_eq(czfs_replay_pending(&r), 2);
	pick[0] = 0;
	pick[1] = 0;
	ck_assert_int_eq(czfs_replay_bdev(&r, pick, &b), 0);
	ck_assert_uint_eq(b->size, 4 * 4096);
	ck_assert_uint_eq(byte_at(b, 0), 0);
	ck_assert_uint_eq(byte_at(b, 3 * 4096), 2);
	czfs_bdev_close(b);
	/* cut 7: the shrink too */
	ck_assert_int_eq(czfs_replay_advance(&r, 7), 0);
	ck_assert_uint_eq(r.applied, 4);
	ck_assert_uint_eq(czfs_replay_pending(&r), 3);
	pick[1] = CZFS_REPLAY_WHOLE;	/* w2, then the shrink */
	pick[2] = CZFS_REPLAY_WHOLE;
	ck_assert_int_eq(czfs_replay_bdev(&r, pick, &b), 0);
	ck_assert_uint_eq(b->size, 4 * 4096);
	ck_assert_uint_eq(byte_at(b, 4 * 4096), 0xff);
	ck_assert_int_eq(b->ops->resize(b, 5 * 4096), 0);
	ck_assert_uint_eq(byte_at(b, 4 * 4096), 0);	/* zeros, not w2 */
	czfs_bdev_close(b);
	pick[2] = 0;			/* w2 kept, the shrink lost */
	ck_assert_int_eq(czfs_replay_bdev(&r, pick, &b), 0);
	ck_assert_uint_eq(b->size, 5 * 4096);
	ck_assert_uint_eq(byte_at(b, 4 * 4096), 3);
	czfs_bdev_close(b);

	ck_assert_int_eq(czfs_replay_advance(&r, 6), -EINVAL);	/* backwards */
	ck_assert_int_eq(czfs_replay_advance(&r, 8), -EINVAL);	/* past the end */
	czfs_replay_destroy(&r);
	czfs_wlog_free(log);
}
END_TEST

/* ---- a commit replayed -------------------------------------------------- */

/*
 * The planted bug: a device that drops every flush but the one after a
 * checkpoint write, as a commit would that wrote its checkpoint before
 * its blocks were flushed.  It sits above the recorder, so the log sees
 * only the flushes that reach the disk.
 */
struct dropper {
	struct czfs_bdev b;
	struct czfs_bdev *in;
	uint64_t last_write;
};

static struct czfs_bdev *in_of(struct czfs_bdev *b)
{
	return container_of(b, struct dropper, b)->in;
}

static int dr_read(struct czfs_bdev *b, void *buf, size_t len, uint64_t off)
{
	return czfs_bdev_read(in_of(b), buf, len, off);
}

static int dr_readv(struct czfs_bdev *b, const struct iovec *iov, int cnt,
		    uint64_t off)
{
	return czfs_bdev_readv(in_of(b), iov, cnt, off);
}

static int dr_write(struct czfs_bdev *b, const void *buf, size_t len,
		    uint64_t off)
{
	int err = czfs_bdev_write(in_of(b), buf, len, off);

	container_of(b, struct dropper, b)->last_write = off / CZFS_BLOCK_SIZE;
	b->size = in_of(b)->size;
	return err;
}

static int dr_flush(struct czfs_bdev *b)
{
	uint64_t blk = container_of(b, struct dropper, b)->last_write;

	if (blk != CZFS_CP_BLKADDR0 && blk != CZFS_CP_BLKADDR1)
		return 0;		/* dropped */
	return czfs_bdev_flush(in_of(b));
}

static int dr_resize(struct czfs_bdev *b, uint64_t size)
{
	int err = in_of(b)->ops->resize(in_of(b), size);

	b->size = in_of(b)->size;
	return err;
}

static int dr_punch(struct czfs_bdev *b, uint64_t off, uint64_t len)
{
	return czfs_bdev_punch(in_of(b), off, len);
}

static void dr_destroy(struct czfs_bdev *b)
{
	czfs_bdev_close(in_of(b));
	free(container_of(b, struct dropper, b));
}

static const struct czfs_bdev_ops dropper_ops = {
	.read = dr_read, .readv = dr_readv, .write = dr_write,
	.flush = dr_flush, .resize = dr_resize, .punch = dr_punch,
	.destroy = dr_destroy,
};

static struct czfs_bdev *dropper(struct czfs_bdev *in)
{
	struct dropper *d = calloc(1, sizeof(*d));

	ck_assert_ptr_nonnull(d);
	d->in = in;
	d->b.ops = &dropper_ops;
	d->b.size = in->size;
	return &d->b;
}

/* Whether the image opens and holds one of the states, never a mix: as
 * make_image made it (each inode's size its number) or as a commit left
 * it (one size for all).  0, or the open's error (-EFSCORRUPTED for a
 * mix). */
static int image_ok(struct czfs_bdev *b)
{
	struct czfs_fs_opts fo = { 0 };
	struct czfs_inode_info ii;
	struct czfs_fs *fs = NULL;
	bool made = false;
	uint64_t size = 0;
	int err = czfs_fs_open_bdev(b, &fo, &fs);

	for (uint64_t ino = 2; !err && ino <= BASE_INODES; ino++) {
		err = czfs_inode_read(&fs->tree, ino, &ii);
		if (!err && ino == 2) {
			size = ii.size;
			made = size == 2;
		}
		if (!err && ii.size != (made ? ino : size))
			err = -EFSCORRUPTED;
	}
	if (fs)
		czfs_fs_close(fs);
	return err;
}

/* Two commits through the recorder (under the dropper if planted); then
 * every cut at a flush, every subset of up to 10 records after the
 * durable point (random ones beyond).  Returns the images that failed. */
static unsigned replay_commits(bool planted, unsigned *images)
{
	struct czfs_bdev *start = make_image(), *mem = copy_bdev(start), *rec;
	struct czfs_fs_opts fo = { 0 };
	struct czfs_wlog *log;
	struct czfs_replay r;
	struct czfs_fs *fs;
	unsigned failed = 0;
	uint64_t rng = 42;

	ck_assert_int_eq(czfs_bdev_log_create(mem, log_path, &rec), 0);
	ck_assert_int_eq(czfs_fs_open_bdev(planted ? dropper(rec) : rec, &fo, &fs), 0);
	ck_assert_int_eq(change_sizes(fs, 777, 100), 0);
	ck_assert_int_eq(czfs_fs_commit(fs), 0);
	ck_assert_int_eq(change_sizes(fs, 888, 150), 0);
	ck_assert_int_eq(czfs_fs_commit(fs), 0);
	czfs_fs_close(fs);

	log = load();
	ck_assert_int_eq(czfs_replay_init(&r, log, czfs_bdev_mem_data(start),
					  start->size), 0);
	*images = 0;
	for (size_t n = 0; n <= log->n; n++) {
		size_t np;
		uint32_t *pick;
		unsigned long tries;

		if (n < log->n && log->e[n].op != CZFS_WLOG_FLUSH)
			continue;	/* a cut just before a flush, and the end */
		ck_assert_int_eq(czfs_replay_advance(&r, n), 0);
		np = czfs_replay_pending(&r);
		pick = calloc(np + 1, sizeof(*pick));
		tries = np <= 10 ? 1ul << np : 2048;
		for (unsigned long m = 0; m < tries; m++) {
			struct czfs_bdev *b;

			for (size_t i = 0; i < np; i++) {
				if (np <= 10)
					pick[i] = (m >> i) & 1 ? CZFS_REPLAY_WHOLE : 0;
				else {
					rng = rng * 6364136223846793005ull + 1;
					pick[i] = (rng >> 33) & 1 ? CZFS_REPLAY_WHOLE : 0;
				}
			}
			ck_assert_int_eq(czfs_replay_bdev(&r, pick, &b), 0);
			(*images)++;
			/* CZFS_WLOG_DEBUG=1: the first failures' subsets */
			if (image_ok(b) && ++failed <= 3 && getenv("CZFS_WLOG_DEBUG")) {
				fprintf(stderr, "cut %zu applied %zu np %zu:", n, r.applied, np);
				for (size_t i = 0; i < np; i++)
					fprintf(stderr, " %c%llu%s", log->e[r.applied + i].op,
						(unsigned long long)log->e[r.applied + i].off / 4096,
						pick[i] ? "*" : "");
				fprintf(stderr, "\n");
			}
		}
		free(pick);
	}
	czfs_replay_destroy(&r);
	czfs_wlog_free(log);
	czfs_bdev_close(start);
	return failed;
}

START_TEST(commit_survives_every_cut)
{
	unsigned images, failed = replay_commits(false, &images);

	ck_assert_uint_gt(images, 8);
	ck_assert_uint_eq(failed, 0);
}
END_TEST

START_TEST(checkpoint_before_flush_is_caught)
{
	unsigned images, failed = replay_commits(true, &images);

	ck_assert_uint_gt(images, 8);
	ck_assert_uint_gt(failed, 0);
}
END_TEST

/* The library's messages only with CZFS_WLOG_DEBUG: the damaged logs and
 * images these tests make are expected to say much. */
static void quiet(enum czfs_log_level level, const char *msg)
{
	(void)level;
	if (getenv("CZFS_WLOG_DEBUG"))
		fprintf(stderr, "  czfs: %s\n", msg);
}

static Suite *wlog_suite(void)
{
	Suite *s = suite_create("wlog");
	TCase *tc = tcase_create("core");

	czfs_log_set_sink(quiet, CZFS_LOG_ERR);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, records_in_order);
	tcase_add_test(tc, torn_and_damaged);
	tcase_add_test(tc, replay_cuts_and_subsets);
	tcase_add_test(tc, commit_survives_every_cut);
	tcase_add_test(tc, checkpoint_before_flush_is_caught);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(wlog_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
