// SPDX-License-Identifier: MIT
/*
 * Unit test: every input saved in tests/fuzz/regressions goes through the
 * fuzz target's entry point again, one forked test per file, so a crash
 * the fuzzer once found fails here (under ASan and UBSan in the sanitizer
 * build).  Files named seed-* are valid images: they must open and be
 * walked, which keeps the entry point itself honest.
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "log.h"
#include "util.h"

#define MAX_FILES	4096

static char *files[MAX_FILES];
static unsigned nfiles;

static const char *regress_dir(void)
{
	static char dir[4096];
	const char *top = getenv("top_srcdir");

	snprintf(dir, sizeof(dir), "%s/tests/fuzz/regressions", top ? top : ".");
	return dir;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The files of the regressions directory, sorted. */
static void list_files(void)
{
	DIR *d = opendir(regress_dir());
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)) && nfiles < MAX_FILES)
		if (de->d_name[0] != '.')
			files[nfiles++] = strdup(de->d_name);
	closedir(d);
	qsort(files, nfiles, sizeof(files[0]), name_cmp);
}

static uint8_t *read_file(const char *name, size_t *len)
{
	char path[8192];
	uint8_t *buf = NULL;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/%s", regress_dir(), name);
	f = fopen(path, "rb");
	ck_assert_msg(f, "cannot open %s", path);
	if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET)) {
		buf = malloc((size_t)n + 1);
		ck_assert(buf);
		*len = fread(buf, 1, (size_t)n, f);
		ck_assert_uint_eq(*len, (size_t)n);
	}
	fclose(f);
	ck_assert_msg(buf, "cannot read %s", path);
	return buf;
}

START_TEST(a_seed_is_present)
{
	unsigned seeds = 0;

	/* given the saved inputs, then a valid seed image is among them */
	for (unsigned i = 0; i < nfiles; i++)
		seeds += !strncmp(files[i], "seed-", 5);
	ck_assert_uint_gt(seeds, 0);
}
END_TEST

START_TEST(replay_one)
{
	size_t len;
	uint8_t *data;
	long items;

	/* given one saved input */
	ck_assert_uint_lt((unsigned)_i, nfiles);
	data = read_file(files[_i], &len);
	/* when it is parsed as the fuzzer did, then nothing crashes, and a
	 * valid seed image is walked item by item */
	items = czfs_fuzz_image(data, len);
	if (!strncmp(files[_i], "seed-", 5))
		ck_assert_msg(items > 0, "%s: valid image not walked", files[_i]);
	free(data);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fuzz_regressions");
	TCase *tc = tcase_create("replay");
	SRunner *sr;
	int failed;

	list_files();
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_seed_is_present);
	tcase_add_loop_test(tc, replay_one, 0, (int)MAX(nfiles, 1u));
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	for (unsigned i = 0; i < nfiles; i++)
		free(files[i]);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
