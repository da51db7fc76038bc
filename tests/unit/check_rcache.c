// SPDX-License-Identifier: MIT
/* Unit tests: the on-disk range cache of remote images. */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rcache.h"

#define CH CZFS_RCACHE_CHUNK

static char dir[] = "/tmp/czfs-rcache.XXXXXX";
static uint8_t *in, *out;

static void setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
	in = malloc(CH);
	out = malloc(CH);
	for (unsigned i = 0; i < CH; i++)
		in[i] = (uint8_t)(i * 31 + 7);
}

static void teardown(void)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
	free(in);
	free(out);
}

START_TEST(put_get_across_opens)
{
	struct czfs_rcache *rc;

	/* given a chunk stored, when the cache is opened again, it is there */
	ck_assert_int_eq(czfs_rcache_open(dir, 16 * CH, "k1", &rc), 0);
	ck_assert_int_eq(czfs_rcache_get(rc, CH, out, CH), -ENOENT);
	czfs_rcache_put(rc, CH, in, CH);
	czfs_rcache_put(rc, 2 * CH, in, 100);	/* a short last chunk */
	czfs_rcache_close(rc);
	ck_assert_int_eq(czfs_rcache_open(dir, 16 * CH, "k1", &rc), 0);
	ck_assert_int_eq(czfs_rcache_has(rc, CH), 1);
	ck_assert_int_eq(czfs_rcache_get(rc, CH, out, CH), 0);
	ck_assert_mem_eq(out, in, CH);
	ck_assert_int_eq(czfs_rcache_get(rc, 2 * CH, out, 100), 0);
	/* a length other than the stored one is a miss, not a short copy */
	ck_assert_int_eq(czfs_rcache_get(rc, 2 * CH, out, 200), -ENOENT);
	czfs_rcache_close(rc);
	/* another key does not see them */
	ck_assert_int_eq(czfs_rcache_open(dir, 16 * CH, "k2", &rc), 0);
	ck_assert_int_eq(czfs_rcache_get(rc, CH, out, CH), -ENOENT);
	czfs_rcache_close(rc);
}
END_TEST

START_TEST(damaged_chunk_is_a_miss)
{
	struct czfs_rcache *rc;
	char path[128];
	int fd;

	ck_assert_int_eq(czfs_rcache_open(dir, 16 * CH, "k", &rc), 0);
	czfs_rcache_put(rc, 0, in, CH);
	snprintf(path, sizeof(path), "%s/k/%012x", dir, 0);
	fd = open(path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "!", 1, 4242), 1);
	close(fd);
	/* when a byte is flipped, the CRC fails: a miss, and the file is gone */
	ck_assert_int_eq(czfs_rcache_get(rc, 0, out, CH), -ENOENT);
	ck_assert_int_eq(access(path, F_OK), -1);
	czfs_rcache_close(rc);
}
END_TEST

START_TEST(lru_eviction_under_limit)
{
	struct czfs_rcache *rc;

	/* room for three chunks (each has its 4-byte CRC) */
	ck_assert_int_eq(czfs_rcache_open(dir, 3 * (CH + 4), "k", &rc), 0);
	czfs_rcache_put(rc, 0, in, CH);
	czfs_rcache_put(rc, CH, in, CH);
	czfs_rcache_put(rc, 2 * CH, in, CH);
	usleep(2000);
	ck_assert_int_eq(czfs_rcache_get(rc, 0, out, CH), 0);	/* used again */
	czfs_rcache_put(rc, 3 * CH, in, CH);
	/* then the least recently used one (CH) went, not chunk 0 */
	ck_assert_int_eq(czfs_rcache_has(rc, CH), 0);
	ck_assert_int_eq(czfs_rcache_has(rc, 0), 1);
	ck_assert_int_eq(czfs_rcache_has(rc, 3 * CH), 1);
	czfs_rcache_close(rc);
	/* a smaller limit at the next open evicts down to it */
	ck_assert_int_eq(czfs_rcache_open(dir, CH + 4, "k", &rc), 0);
	ck_assert_int_eq(czfs_rcache_has(rc, 0) + czfs_rcache_has(rc, 2 * CH) +
			 czfs_rcache_has(rc, 3 * CH), 1);
	czfs_rcache_close(rc);
}
END_TEST

/* A chunk read into pieces: as few as one, as many as a read takes
 * (IOV_MAX, then its CRC is read apart). */
static const int pieces[] = { 1, 3, 1023, 1024 };

START_TEST(getv_into_pieces)
{
	int cnt = pieces[_i];
	struct iovec *iov = calloc((size_t)cnt, sizeof(*iov));
	struct czfs_rcache *rc;
	size_t each = CH / (size_t)cnt;

	ck_assert_ptr_nonnull(iov);
	for (int i = 0; i < cnt; i++)
		iov[i] = (struct iovec){ out + i * each, each };
	iov[cnt - 1].iov_len = CH - (size_t)(cnt - 1) * each;
	ck_assert_int_eq(czfs_rcache_open(dir, 16 * CH, "k", &rc), 0);
	czfs_rcache_put(rc, 0, in, CH);
	memset(out, 0, CH);
	ck_assert_int_eq(czfs_rcache_getv(rc, 0, iov, cnt), 0);
	ck_assert_mem_eq(out, in, CH);
	/* one byte short of the chunk is a miss, and removes it */
	iov[cnt - 1].iov_len--;
	ck_assert_int_eq(czfs_rcache_getv(rc, 0, iov, cnt), -ENOENT);
	ck_assert_int_eq(czfs_rcache_has(rc, 0), 0);
	czfs_rcache_close(rc);
	free(iov);
}
END_TEST

static time_t chunk_mtime(const char *path)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	return st.st_mtim.tv_sec;
}

START_TEST(hit_refreshes_an_old_mtime_only)
{
	const struct timespec old[2] = { { 1000, 0 }, { 1000, 0 } };
	struct czfs_rcache *rc;
	char path[128];
	time_t t0;

	snprintf(path, sizeof(path), "%s/k/%012x", dir, 0);
	ck_assert_int_eq(czfs_rcache_open(dir, 16 * CH, "k", &rc), 0);
	czfs_rcache_put(rc, 0, in, CH);
	/* given a chunk whose mtime was set (stored) just now, a hit leaves
	 * the file alone (its mtime is set back here to see that no hit
	 * wrote it) */
	ck_assert_int_eq(utimensat(AT_FDCWD, path, old, 0), 0);
	t0 = time(NULL);
	ck_assert_int_eq(czfs_rcache_get(rc, 0, out, CH), 0);
	ck_assert_int_eq(chunk_mtime(path), 1000);
	/* the close writes that use time (the hit's, not before t0), for
	 * the next mounts' LRU */
	czfs_rcache_close(rc);
	ck_assert_int_ge(chunk_mtime(path), t0);
	/* when it is old at the open, a hit makes it the use time at once */
	ck_assert_int_eq(utimensat(AT_FDCWD, path, old, 0), 0);
	ck_assert_int_eq(czfs_rcache_open(dir, 16 * CH, "k", &rc), 0);
	t0 = time(NULL);
	ck_assert_int_eq(czfs_rcache_get(rc, 0, out, CH), 0);
	ck_assert_int_ge(chunk_mtime(path), t0);
	czfs_rcache_close(rc);
}
END_TEST

START_TEST(key_names_identity)
{
	static const uint8_t uuid[16] = { 0x6e, 0x0b, [15] = 0x11 };
	struct czfs_rcache *rc;
	char a[128], b[128], c[128];

	czfs_rcache_key(uuid, "\"65f1-9c4000\"", 10485760, a, sizeof(a));
	czfs_rcache_key(uuid, "\"65f1-9c4001\"", 10485760, b, sizeof(b));
	czfs_rcache_key(uuid, "\"65f1/9c4000\"", 10485760, c, sizeof(c));
	ck_assert_str_eq(a, "6e0b0000000000000000000000000011-65f1-9c4000-"
			 "cd0f916c-a00000");
	ck_assert_str_ne(a, b);
	ck_assert_str_ne(a, c);		/* cut characters still count */
	ck_assert_ptr_null(strchr(c, '/'));
	ck_assert_int_eq(czfs_rcache_open(dir, CH, "../x", &rc), -EINVAL);
	ck_assert_int_eq(czfs_rcache_open(dir, CH, "", &rc), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rcache");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, put_get_across_opens);
	tcase_add_test(tc, damaged_chunk_is_a_miss);
	tcase_add_test(tc, lru_eviction_under_limit);
	tcase_add_test(tc, hit_refreshes_an_old_mtime_only);
	tcase_add_loop_test(tc, getv_into_pieces, 0,
			    sizeof(pieces) / sizeof(pieces[0]));
	tcase_add_test(tc, key_names_identity);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
