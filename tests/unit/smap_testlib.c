// SPDX-License-Identifier: MIT
/* Shared by the space map test programs: log capture and small asserts. */
#include "config.h"

#include <check.h>
#include <stdio.h>

#include "log.h"
#include "smap_testlib.h"

char smap_last_err[512];

static void capture_sink(enum czfs_log_level level, const char *msg)
{
	if (level <= CZFS_LOG_ERR)
		snprintf(smap_last_err, sizeof(smap_last_err), "%s", msg);
}

void smap_test_setup(void)
{
	smap_last_err[0] = '\0';
	czfs_log_set_sink(capture_sink, CZFS_LOG_DEBUG);
}

void smap_test_teardown(void)
{
	czfs_log_set_sink(NULL, CZFS_LOG_INFO);
}

uint64_t smap_alloc_ok(struct czfs_smap *sm, uint64_t n)
{
	uint64_t addr = UINT64_MAX;

	ck_assert_int_eq(czfs_smap_alloc(sm, n, &addr), 0);
	return addr;
}

void smap_assert_free(struct czfs_smap *sm, uint64_t start, uint64_t n)
{
	for (uint64_t a = start; a < start + n; a++)
		ck_assert_msg(!czfs_smap_test(sm, a), "block %llu used",
			      (unsigned long long)a);
}
