// SPDX-License-Identifier: MIT
/*
 * Unit tests: mkfs's read-ahead across files (mkfs/prefetch.c).  Files are
 * written, evicted from the page cache, and their residency (mincore)
 * shows what the thread asked the kernel for.  Skipped (77) where the
 * file system keeps evicted pages (tmpfs).
 */
#include "config.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prefetch.h"
#include "scan.h"

#define NFILES		8
#define FILE_BYTES	(256u << 10)

static char dir[] = "prefetch.XXXXXX";
static struct mk_inode inodes[NFILES];
static struct mk_inode *ptrs[NFILES];
static char paths[NFILES][8];
static struct mk_tree tree;

/* Pages of file i in the page cache, -1 if it cannot be told. */
static int resident(unsigned i)
{
	size_t pages = FILE_BYTES / (size_t)sysconf(_SC_PAGESIZE);
	unsigned char vec[FILE_BYTES / 4096];
	int n = 0, fd = openat(tree.rootfd, paths[i], O_RDONLY);
	void *map = MAP_FAILED;

	if (fd >= 0)
		map = mmap(NULL, FILE_BYTES, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED || mincore(map, FILE_BYTES, vec))
		n = -1;
	for (size_t p = 0; n >= 0 && p < pages && p < sizeof(vec); p++)
		n += vec[p] & 1;
	if (map != MAP_FAILED)
		munmap(map, FILE_BYTES);
	if (fd >= 0)
		close(fd);
	return n;
}

/*
 * Wait for file i, advised already, to be in the cache whole: the kernel
 * reads it in the background.  The limit, 60 s, only guards against a
 * hang; what was advised is known before (mk_prefetch_settle).
 */
static bool wait_resident(unsigned i)
{
	for (int t = 0; t < 6000; t++) {
		if (resident(i) == (int)(FILE_BYTES / sysconf(_SC_PAGESIZE)))
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * The tree in dir: NFILES regular files of FILE_BYTES, written and
 * evicted.  Whether all went well.
 */
static bool setup(void)
{
	static uint8_t buf[FILE_BYTES];
	bool ok;

	memset(buf, 0x5a, sizeof(buf));
	memset(&tree, 0, sizeof(tree));
	tree.rootfd = open(dir, O_DIRECTORY | O_RDONLY);
	ok = tree.rootfd >= 0;
	for (unsigned i = 0; ok && i < NFILES; i++) {
		int fd;

		snprintf(paths[i], sizeof(paths[i]), "f%u", i);
		fd = openat(tree.rootfd, paths[i], O_RDWR | O_CREAT | O_TRUNC,
			    0644);
		ok = fd >= 0 && write(fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf) &&
		     !fsync(fd) && !posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		if (fd >= 0)
			close(fd);
		inodes[i] = (struct mk_inode){ .ino = i + 1, .size = FILE_BYTES,
					       .mode = S_IFREG | 0644,
					       .path = paths[i] };
		ptrs[i] = &inodes[i];
	}
	tree.inodes = ptrs;
	tree.count = NFILES;
	return ok;
}

START_TEST(stays_ahead_bytes_past_the_reader)
{
	struct mk_prefetch *pf;

	/* given evicted files and 2 files' worth of advice allowed */
	ck_assert(setup());
	/* when the reader stays on the first file */
	ck_assert_int_eq(mk_prefetch_start(&tree, 2 * FILE_BYTES, &pf), 0);
	/* then, once it waits for the reader, it advised the first two
	 * files, which come into the cache, and no other */
	ck_assert_uint_eq(mk_prefetch_settle(pf), 2);
	ck_assert(wait_resident(0));
	ck_assert(wait_resident(1));
	for (unsigned i = 2; i < NFILES; i++)
		ck_assert_int_eq(resident(i), 0);
	/* and when the reader moves to the second, the third comes only */
	mk_prefetch_at(pf, 1);
	ck_assert_uint_eq(mk_prefetch_settle(pf), 3);
	ck_assert(wait_resident(2));
	for (unsigned i = 3; i < NFILES; i++)
		ck_assert_int_eq(resident(i), 0);
	/* and stopping it while it waits for the reader returns */
	mk_prefetch_stop(pf);
	close(tree.rootfd);
}
END_TEST

START_TEST(skips_copies_sparse_and_others)
{
	struct mk_prefetch *pf;

	/* given a copy, a sparse file and a directory among the files */
	ck_assert(setup());
	inodes[1].copy_of = &inodes[0];
	inodes[2].maybe_sparse = true;
	inodes[3].mode = S_IFDIR | 0755;
	/* when the reader is on the first, with room for all */
	ck_assert_int_eq(mk_prefetch_start(&tree, 64 * FILE_BYTES, &pf), 0);
	/* then every other file is read ahead, those never */
	ck_assert_uint_eq(mk_prefetch_settle(pf), 1 + NFILES - 4);
	for (unsigned i = 4; i < NFILES; i++)
		ck_assert(wait_resident(i));
	ck_assert(wait_resident(0));
	for (unsigned i = 1; i < 4; i++)
		ck_assert_int_eq(resident(i), 0);
	mk_prefetch_stop(pf);
	/* and NULL is no thread */
	mk_prefetch_at(NULL, 0);
	mk_prefetch_stop(NULL);
	close(tree.rootfd);
}
END_TEST

START_TEST(skips_what_the_reader_passed)
{
	struct mk_prefetch *pf;

	/* given evicted files and one file's worth of advice allowed */
	ck_assert(setup());
	ck_assert_int_eq(mk_prefetch_start(&tree, FILE_BYTES, &pf), 0);
	ck_assert_uint_eq(mk_prefetch_settle(pf), 1);
	ck_assert(wait_resident(0));
	/* when the reader jumps from the first file to the sixth */
	mk_prefetch_at(pf, 5);
	/* then the sixth is read ahead, and the files it passed are not */
	ck_assert_uint_eq(mk_prefetch_settle(pf), 2);
	ck_assert(wait_resident(5));
	for (unsigned i = 1; i < NFILES; i++)
		if (i != 5)
			ck_assert_int_eq(resident(i), 0);
	mk_prefetch_stop(pf);
	close(tree.rootfd);
}
END_TEST

/* Whether evicted pages leave the cache here (not on tmpfs). */
static bool can_evict(void)
{
	bool ok = setup() && resident(0) == 0;

	if (tree.rootfd >= 0)
		close(tree.rootfd);
	return ok;
}

int main(void)
{
	Suite *s = suite_create("prefetch");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	if (!mkdtemp(dir))
		return EXIT_FAILURE;
	if (!can_evict()) {
		printf("SKIP: the page cache keeps evicted pages here\n");
		failed = -1;
		goto out;
	}
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, stays_ahead_bytes_past_the_reader);
	tcase_add_test(tc, skips_copies_sparse_and_others);
	tcase_add_test(tc, skips_what_the_reader_passed);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
out:
	tree.rootfd = open(dir, O_DIRECTORY | O_RDONLY);
	for (unsigned i = 0; tree.rootfd >= 0 && i < NFILES; i++)
		unlinkat(tree.rootfd, paths[i], 0);
	if (tree.rootfd >= 0)
		close(tree.rootfd);
	rmdir(dir);
	if (failed < 0)
		return 77;
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
