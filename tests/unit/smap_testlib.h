// SPDX-License-Identifier: MIT
/* Shared by the space map test programs: log capture and small asserts. */
#ifndef CZFS_SMAP_TESTLIB_H
#define CZFS_SMAP_TESTLIB_H

#include <stdint.h>

#include "spacemap.h"

#define BITS		((uint64_t)CZFS_SMAP_BITS_PER_BLOCK)
#define PER_INDEX	CZFS_SMAP_ENTRIES_PER_INDEX
#define BS		CZFS_BLOCK_SIZE

/* The last error the library logged (cleared by the fixture). */
extern char smap_last_err[512];

/* Checked fixture: capture library errors into smap_last_err. */
void smap_test_setup(void);
void smap_test_teardown(void);

/* Allocate n blocks, asserting success; returns the first. */
uint64_t smap_alloc_ok(struct czfs_smap *sm, uint64_t n);
/* Assert that blocks [start, start + n) are free. */
void smap_assert_free(struct czfs_smap *sm, uint64_t start, uint64_t n);

#endif /* CZFS_SMAP_TESTLIB_H */
