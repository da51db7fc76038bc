// SPDX-License-Identifier: MIT
/* Unit tests: space map persistence (copy-on-write writes, loads, corruption, growth). */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <unistd.h>

#include "bdev.h"
#include "crc32c.h"
#include "smap_testlib.h"
#include "spacemap.h"
#include "super.h"
#include "util.h"

/* ---- persistence ----------------------------------------------------- */

#define MULTI_MAX	(600 * BITS - 100)	/* 3 index blocks, ragged end */

static void write_map(struct czfs_smap *sm, struct czfs_bdev *b, uint64_t gen,
		      struct czfs_cp_info *cp)
{
	memset(cp, 0, sizeof(*cp));
	cp->generation = gen;
	ck_assert_int_eq(czfs_smap_write(sm, b, gen, cp), 0);
}

static void load_map(struct czfs_smap *sm, struct czfs_bdev *b,
		     const struct czfs_cp_info *cp)
{
	ck_assert_int_eq(czfs_smap_load(sm, b, cp), 0);
}

static size_t map_bytes(const struct czfs_smap *sm)
{
	return sm->nr_bitmaps * BS;
}

/* Every block holding map data, as a list. */
static size_t map_blocks(const struct czfs_smap *sm, uint64_t *out)
{
	size_t n = 0;

	for (uint64_t k = 0; k < sm->nr_bitmaps; k++)
		if (sm->bitmap_addr[k])
			out[n++] = sm->bitmap_addr[k];
	for (uint64_t j = 0; j < sm->nr_index; j++)
		if (sm->index_addr[j])
			out[n++] = sm->index_addr[j];
	return n;
}

static void assert_same_map(struct czfs_smap *a, struct czfs_smap *b)
{
	ck_assert_uint_eq(a->max_blocks, b->max_blocks);
	ck_assert_uint_eq(a->used, b->used);
	ck_assert_uint_eq(a->nr_bitmaps, b->nr_bitmaps);
	ck_assert_uint_eq(a->nr_index, b->nr_index);
	ck_assert_int_eq(memcmp(a->cur, b->cur, map_bytes(a)), 0);
	ck_assert_int_eq(memcmp(b->cur, b->committed, map_bytes(b)), 0);
	ck_assert_int_eq(memcmp(a->bitmap_addr, b->bitmap_addr,
				a->nr_bitmaps * 8), 0);
	ck_assert_int_eq(memcmp(a->bitmap_crc, b->bitmap_crc,
				a->nr_bitmaps * 4), 0);
	ck_assert_int_eq(memcmp(a->index_addr, b->index_addr,
				a->nr_index * 8), 0);
}

static void set_bit(uint64_t *map, uint64_t a, bool on)
{
	if (on)
		map[a / 64] |= 1ull << (a % 64);
	else
		map[a / 64] &= ~(1ull << (a % 64));
}

/* A map over 600 bitmap blocks with used blocks in bitmaps 0, 300, 599. */
static void multi_map(struct czfs_smap *sm)
{
	ck_assert_int_eq(czfs_smap_init(sm, MULTI_MAX), 0);
	for (unsigned i = 0; i < 40; i++)
		smap_alloc_ok(sm, 1 + i % 16);
	ck_assert_int_eq(czfs_smap_set_used(sm, 300 * BITS + 5, 3), 0);
	ck_assert_int_eq(czfs_smap_set_used(sm, MULTI_MAX - 1, 1), 0);
	czfs_smap_free(sm, 20, 4);
}

START_TEST(write_load_roundtrip)
{
	struct czfs_smap sm, back;
	struct czfs_cp_info cp;
	struct czfs_bdev *b;
	uint64_t *before, addrs[16];
	size_t n;

	ck_assert_int_eq(czfs_bdev_mem_create(0, CZFS_BDEV_DIRECT, &b), 0);
	multi_map(&sm);
	before = malloc(map_bytes(&sm));
	memcpy(before, sm.cur, map_bytes(&sm));
	/* when the map is written */
	write_map(&sm, b, 1, &cp);
	/* then the checkpoint describes it */
	ck_assert_uint_eq(cp.nr_smap_index, 3);
	ck_assert_uint_eq(cp.max_blocks, MULTI_MAX);
	ck_assert_uint_eq(cp.used_blocks, sm.used);
	ck_assert_uint_eq(cp.image_blocks, MULTI_MAX);
	ck_assert_uint_ne(cp.smap_index[0], 0);
	ck_assert_uint_ne(cp.smap_index[1], 0);
	ck_assert_uint_ne(cp.smap_index[2], 0);
	/* three bitmap blocks and three index blocks, all marked used */
	n = map_blocks(&sm, addrs);
	ck_assert_uint_eq(n, 6);
	ck_assert_uint_eq(sm.bitmap_addr[1], 0);	/* all free: no block */
	for (size_t i = 0; i < n; i++)
		set_bit(before, addrs[i], true);
	/* and nothing else changed */
	ck_assert_int_eq(memcmp(before, sm.cur, map_bytes(&sm)), 0);
	ck_assert_uint_eq(sm.used, cp.used_blocks);
	/* when loaded back, then it is the same map */
	load_map(&back, b, &cp);
	assert_same_map(&sm, &back);
	ck_assert_uint_eq(back.image_blocks, MULTI_MAX);
	for (size_t i = 0; i < n; i++)
		ck_assert(czfs_smap_test(&back, addrs[i]));
	czfs_smap_destroy(&back);
	czfs_smap_destroy(&sm);
	czfs_bdev_close(b);
	free(before);
}
END_TEST

static bool log_touches(struct czfs_bdev *b, const uint64_t *addrs, size_t n)
{
	const struct czfs_bdev_req *log;
	size_t nlog;

	log = czfs_bdev_mem_log(b, &nlog);
	for (size_t i = 0; i < nlog; i++)
		for (size_t j = 0; log[i].op == 'w' && j < n; j++)
			if (log[i].off < (addrs[j] + 1) * BS &&
			    addrs[j] * BS < log[i].off + log[i].len)
				return true;
	return false;
}

START_TEST(copy_on_write)
{
	struct czfs_smap sm, back, old;
	struct czfs_cp_info cp1, cp2;
	struct czfs_bdev *b;
	uint64_t old_addrs[16], new_addrs[16], *before, bm599;
	uint8_t *snap;
	size_t n_old, n_new;

	ck_assert_int_eq(czfs_bdev_mem_create(0, 0, &b), 0);
	/* given a map written and committed */
	multi_map(&sm);
	write_map(&sm, b, 1, &cp1);
	czfs_smap_committed(&sm);
	n_old = map_blocks(&sm, old_addrs);
	bm599 = sm.bitmap_addr[599];
	snap = malloc(n_old * BS);
	for (size_t i = 0; i < n_old; i++)
		memcpy(snap + i * BS, czfs_bdev_mem_data(b) + old_addrs[i] * BS,
		       BS);
	/* when it changes (bitmap 300 emptied, 520 filled) and is written */
	for (unsigned i = 0; i < 50; i++)
		smap_alloc_ok(&sm, 64);
	czfs_smap_free(&sm, 3, 2);
	czfs_smap_free(&sm, 300 * BITS + 5, 3);
	ck_assert_int_eq(czfs_smap_set_used(&sm, 520 * BITS, 1), 0);
	before = malloc(map_bytes(&sm));
	memcpy(before, sm.cur, map_bytes(&sm));
	czfs_bdev_mem_clear_log(b);
	write_map(&sm, b, 2, &cp2);
	/* then no block of the committed map was written */
	ck_assert(!log_touches(b, old_addrs, n_old));
	for (size_t i = 0; i < n_old; i++)
		ck_assert_int_eq(memcmp(snap + i * BS, czfs_bdev_mem_data(b) +
					old_addrs[i] * BS, BS), 0);
	/* and the emptied bitmap and index are stored as no block */
	ck_assert_uint_eq(sm.bitmap_addr[300], 0);
	ck_assert_uint_eq(sm.index_addr[1], 0);
	ck_assert_uint_ne(sm.bitmap_addr[520], 0);
	/* and bitmap 599, unchanged, kept its block */
	ck_assert_uint_eq(sm.bitmap_addr[599], bm599);
	/* and the other old locations are free in cur, the new ones used */
	n_new = map_blocks(&sm, new_addrs);
	for (size_t i = 0; i < n_old; i++) {
		if (old_addrs[i] == bm599)
			continue;
		ck_assert(!czfs_smap_test(&sm, old_addrs[i]));
		set_bit(before, old_addrs[i], false);
	}
	for (size_t i = 0; i < n_new; i++)
		set_bit(before, new_addrs[i], true);
	ck_assert_uint_eq(n_new, 5);	/* bitmaps 0, 520, 599; index 0, 2 */
	ck_assert_int_eq(memcmp(before, sm.cur, map_bytes(&sm)), 0);
	/* and both checkpoints load: the new map and the old one */
	load_map(&back, b, &cp2);
	assert_same_map(&sm, &back);
	load_map(&old, b, &cp1);
	ck_assert_uint_eq(old.used, cp1.used_blocks);
	ck_assert(czfs_smap_test(&old, 300 * BITS + 5));
	czfs_smap_destroy(&old);
	czfs_smap_destroy(&back);
	czfs_smap_destroy(&sm);
	czfs_bdev_close(b);
	free(before);
	free(snap);
}
END_TEST

START_TEST(unchanged_map_rewrites_nothing)
{
	struct czfs_smap sm;
	struct czfs_cp_info cp1, cp2;
	struct czfs_bdev *b;
	size_t n;

	ck_assert_int_eq(czfs_bdev_mem_create(0, 0, &b), 0);
	multi_map(&sm);
	write_map(&sm, b, 1, &cp1);
	czfs_smap_committed(&sm);
	/* when nothing changed, then the next write writes nothing */
	czfs_bdev_mem_clear_log(b);
	write_map(&sm, b, 2, &cp2);
	czfs_bdev_mem_log(b, &n);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(memcmp(cp1.smap_index, cp2.smap_index,
				sizeof(cp1.smap_index)), 0);
	/* and one change rewrites one bitmap block and its index block */
	smap_alloc_ok(&sm, 1);
	write_map(&sm, b, 3, &cp2);
	czfs_bdev_mem_log(b, &n);
	ck_assert_uint_ge(n, 1);
	ck_assert_uint_le(n, 2);
	ck_assert_uint_ne(cp1.smap_index[0], cp2.smap_index[0]);
	ck_assert_uint_eq(cp1.smap_index[1], cp2.smap_index[1]);
	ck_assert_uint_eq(cp1.smap_index[2], cp2.smap_index[2]);
	czfs_smap_destroy(&sm);
	czfs_bdev_close(b);
}
END_TEST

START_TEST(write_then_commit_releases_freed_blocks)
{
	struct czfs_smap sm;
	struct czfs_cp_info cp;
	struct czfs_bdev *b;
	uint64_t a;

	/* given blocks freed after the last commit */
	ck_assert_int_eq(czfs_bdev_mem_create(0, 0, &b), 0);
	ck_assert_int_eq(czfs_smap_init(&sm, 90), 0);
	a = smap_alloc_ok(&sm, 80);
	czfs_smap_committed(&sm);
	czfs_smap_free(&sm, a, 10);
	/* when the map is written: its blocks come from the free tail */
	write_map(&sm, b, 1, &cp);
	ck_assert_int_eq(czfs_smap_alloc(&sm, 10, &a), -ENOSPC);
	/* and once that checkpoint is durable, the freed run is reusable */
	czfs_smap_committed(&sm);
	ck_assert_uint_eq(smap_alloc_ok(&sm, 10), 3);
	czfs_smap_destroy(&sm);
	czfs_bdev_close(b);
}
END_TEST

START_TEST(write_enospc_then_retry)
{
	struct czfs_smap sm, back;
	struct czfs_cp_info cp;
	struct czfs_bdev *b;
	uint64_t a;

	/* given a map with no free block left for its own blocks */
	ck_assert_int_eq(czfs_bdev_mem_create(0, 0, &b), 0);
	ck_assert_int_eq(czfs_smap_init(&sm, 40), 0);
	a = smap_alloc_ok(&sm, 37);
	memset(&cp, 0, sizeof(cp));
	ck_assert_int_eq(czfs_smap_write(&sm, b, 1, &cp), -ENOSPC);
	ck_assert_ptr_nonnull(strstr(smap_last_err, "no room"));
	/* when room is made, then the retry writes a loadable map */
	czfs_smap_free(&sm, a + 30, 7);
	czfs_smap_committed(&sm);
	write_map(&sm, b, 1, &cp);
	ck_assert_uint_eq(cp.used_blocks, 3 + 30 + 2);
	load_map(&back, b, &cp);
	assert_same_map(&sm, &back);
	czfs_smap_destroy(&back);
	czfs_smap_destroy(&sm);
	czfs_bdev_close(b);
}
END_TEST

START_TEST(write_io_error_then_retry)
{
	struct czfs_smap sm, back;
	struct czfs_cp_info cp;
	struct czfs_bdev *b;

	ck_assert_int_eq(czfs_bdev_mem_create(0, 0, &b), 0);
	multi_map(&sm);
	/* when the first map write fails, then the error comes back */
	czfs_bdev_mem_fail_after(b, 1, -EIO);
	memset(&cp, 0, sizeof(cp));
	ck_assert_int_eq(czfs_smap_write(&sm, b, 1, &cp), -EIO);
	/* and a second attempt writes a complete, loadable map */
	write_map(&sm, b, 1, &cp);
	load_map(&back, b, &cp);
	assert_same_map(&sm, &back);
	czfs_smap_destroy(&back);
	czfs_smap_destroy(&sm);
	czfs_bdev_close(b);
}
END_TEST

/* ---- load corruption ------------------------------------------------- */

static uint8_t *blk_at(struct czfs_bdev *b, uint64_t addr)
{
	return czfs_bdev_mem_data(b) + addr * BS;
}

static void put_le(uint8_t *p, unsigned n, uint64_t v)
{
	for (unsigned i = 0; i < n; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

static void reseal_index(uint8_t *blk)
{
	memset(blk, 0, 4);
	put_le(blk, 4, czfs_crc32c(0, blk, BS));
}

/* Offset of entry i's field in an index block. */
#define ENTRY(i)	(32 + 16 * (i))

/* After editing bitmap k on disk: new crc into its entry, reseal index. */
static void reseal_bitmap(struct czfs_bdev *b, const struct czfs_smap *sm,
			  uint64_t k)
{
	uint8_t *ix = blk_at(b, sm->index_addr[k / PER_INDEX]);

	put_le(ix + ENTRY(k % PER_INDEX) + 8, 4,
	       czfs_crc32c(0, blk_at(b, sm->bitmap_addr[k]), BS));
	reseal_index(ix);
}

static void flip_bit(uint8_t *blk, uint64_t bit)
{
	blk[bit / 8] ^= (uint8_t)(1u << (bit % 8));
}

enum { C_BITMAP_CRC, C_INDEX_CRC, C_MAGIC, C_BLKADDR, C_FIRST, C_GEN,
       C_ENTRY_MAX, C_ENTRY_PAST, C_USED, C_IMAGE, C_NR, C_CP_ADDR,
       C_SELF_FREE, C_HEADER_FREE, C_PAST_MAX, C_READ_ERR };

static const struct load_case {
	int what, err;
	const char *msg;
} load_cases[] = {
	{ C_BITMAP_CRC, -EFSCORRUPTED, "bad checksum" },
	{ C_INDEX_CRC, -EFSCORRUPTED, "bad checksum" },
	{ C_MAGIC, -EFSCORRUPTED, "bad magic" },
	{ C_BLKADDR, -EFSCORRUPTED, "written for another block" },
	{ C_FIRST, -EFSCORRUPTED, "bad first_bitmap" },
	{ C_GEN, -EFSCORRUPTED, "bad generation" },
	{ C_ENTRY_MAX, -EFSCORRUPTED, "bad entry" },
	{ C_ENTRY_PAST, -EFSCORRUPTED, "bad entry" },
	{ C_USED, -EFSCORRUPTED, "checkpoint says" },
	{ C_IMAGE, -EFSCORRUPTED, "past image_blocks" },
	{ C_NR, -EFSCORRUPTED, "index blocks for max_blocks" },
	{ C_CP_ADDR, -EFSCORRUPTED, "bad address" },
	{ C_SELF_FREE, -EFSCORRUPTED, "is marked free" },
	{ C_HEADER_FREE, -EFSCORRUPTED, "checkpoint blocks marked free" },
	{ C_PAST_MAX, -EFSCORRUPTED, "past max_blocks" },
	{ C_READ_ERR, -EIO, "read error" },
};

static void corrupt(int what, struct czfs_smap *sm, struct czfs_bdev *b,
		    struct czfs_cp_info *cp)
{
	uint64_t ix0 = sm->index_addr[0], bm0 = sm->bitmap_addr[0];
	uint8_t *ix = blk_at(b, ix0);

	switch (what) {
	case C_BITMAP_CRC:
		blk_at(b, bm0)[100] ^= 0x10;
		break;
	case C_INDEX_CRC:
		ix[500] ^= 1;
		break;
	case C_MAGIC:
		ix[4] ^= 1;
		reseal_index(ix);
		break;
	case C_BLKADDR:
		put_le(ix + 8, 8, ix0 + 1);
		reseal_index(ix);
		break;
	case C_FIRST:
		put_le(ix + 24, 8, 1);
		reseal_index(ix);
		break;
	case C_GEN:
		put_le(ix + 16, 8, cp->generation + 1);
		reseal_index(ix);
		break;
	case C_ENTRY_MAX:
		put_le(ix + ENTRY(7), 8, sm->max_blocks);
		reseal_index(ix);
		break;
	case C_ENTRY_PAST:	/* index 2 has entries for bitmaps 508..599 */
		ix = blk_at(b, sm->index_addr[2]);
		put_le(ix + ENTRY(600 - 2 * PER_INDEX), 8, bm0);
		reseal_index(ix);
		break;
	case C_USED:
		cp->used_blocks++;
		break;
	case C_IMAGE:
		cp->image_blocks = MULTI_MAX - 1;
		break;
	case C_NR:
		cp->nr_smap_index = 2;
		break;
	case C_CP_ADDR:
		cp->smap_index[1] = MULTI_MAX;
		break;
	case C_SELF_FREE:	/* the index block's own bit, counts fixed */
		flip_bit(blk_at(b, bm0), ix0);
		reseal_bitmap(b, sm, 0);
		cp->used_blocks--;
		break;
	case C_HEADER_FREE:
		flip_bit(blk_at(b, bm0), 0);
		reseal_bitmap(b, sm, 0);
		cp->used_blocks--;
		break;
	case C_PAST_MAX:	/* the ragged tail of bitmap 599 */
		flip_bit(blk_at(b, sm->bitmap_addr[599]), BITS - 50);
		reseal_bitmap(b, sm, 599);
		cp->used_blocks++;
		break;
	case C_READ_ERR:
		czfs_bdev_mem_fail_after(b, 2, -EIO);
		break;
	}
}

START_TEST(load_corruption_table)
{
	const struct load_case *c = &load_cases[_i];
	struct czfs_smap sm, back;
	struct czfs_cp_info cp;
	struct czfs_bdev *b;
	int err;

	/* given a written map with one thing damaged */
	ck_assert_int_eq(czfs_bdev_mem_create(0, 0, &b), 0);
	multi_map(&sm);
	write_map(&sm, b, 4, &cp);
	corrupt(c->what, &sm, b, &cp);
	/* when loaded, then the exact error and a line naming the problem */
	smap_last_err[0] = '\0';
	err = czfs_smap_load(&back, b, &cp);
	ck_assert_msg(err == c->err, "case %d: got %d want %d", c->what, err,
		      c->err);
	ck_assert_msg(strstr(smap_last_err, c->msg), "case %d: message \"%s\"",
		      c->what, smap_last_err);
	/* and the failed map is left empty */
	ck_assert_ptr_null(back.cur);
	czfs_smap_destroy(&sm);
	czfs_bdev_close(b);
}
END_TEST

START_TEST(load_refuses_map_blocks_past_image)
{
	struct czfs_smap sm, back;
	struct czfs_cp_info cp;
	struct czfs_bdev *b;
	uint8_t *ix;

	/* given a map whose index names a bitmap block past image_blocks */
	ck_assert_int_eq(czfs_bdev_mem_create(0, 0, &b), 0);
	ck_assert_int_eq(czfs_smap_init(&sm, 3 * BITS), 0);
	smap_alloc_ok(&sm, 100);
	write_map(&sm, b, 1, &cp);
	ck_assert_uint_lt(cp.image_blocks + 10, cp.max_blocks);
	ix = blk_at(b, sm.index_addr[0]);
	put_le(ix + ENTRY(2), 8, cp.image_blocks + 10);
	reseal_index(ix);
	/* then it is corrupt, before any read past the image is tried */
	ck_assert_int_eq(czfs_smap_load(&back, b, &cp), -EFSCORRUPTED);
	ck_assert_ptr_nonnull(strstr(smap_last_err, "bad entry 2"));
	czfs_smap_destroy(&sm);
	czfs_bdev_close(b);
}
END_TEST

/* ---- grow ------------------------------------------------------------- */

START_TEST(grow_keeps_bits_adds_room)
{
	struct czfs_smap sm, back;
	struct czfs_cp_info cp;
	struct czfs_bdev *b;
	const uint64_t first = 2 * BITS - 10, later = PER_INDEX * BITS + 5;
	uint64_t a;

	/* given a full map */
	ck_assert_int_eq(czfs_bdev_mem_create(0, 0, &b), 0);
	ck_assert_int_eq(czfs_smap_init(&sm, first), 0);
	smap_alloc_ok(&sm, first - 3);
	czfs_smap_committed(&sm);
	ck_assert_int_eq(czfs_smap_alloc(&sm, 1, &a), -ENOSPC);
	/* a smaller size is ignored, an impossible one refused */
	ck_assert_int_eq(czfs_smap_grow(&sm, 100), 0);
	ck_assert_uint_eq(sm.max_blocks, first);
	ck_assert_int_eq(czfs_smap_grow(&sm, 497ull * PER_INDEX * BITS), -EFBIG);
	ck_assert_uint_eq(sm.max_blocks, first);
	/* when grown within the last bitmap block, then its tail is free */
	ck_assert_int_eq(czfs_smap_grow(&sm, first + 5), 0);
	ck_assert_uint_eq(smap_alloc_ok(&sm, 5), first);
	/* when grown past an index block, then the bits stay and room appears */
	ck_assert_int_eq(czfs_smap_grow(&sm, later), 0);
	ck_assert_uint_eq(sm.nr_index, 2);
	ck_assert_uint_eq(sm.used, first + 5);
	ck_assert(czfs_smap_test(&sm, first - 1));
	ck_assert(!czfs_smap_test(&sm, first + 5));
	ck_assert_uint_eq(smap_alloc_ok(&sm, 64), first + 5);
	/* and the grown map survives a write and a load */
	write_map(&sm, b, 1, &cp);
	ck_assert_uint_eq(cp.nr_smap_index, 2);
	ck_assert_uint_eq(cp.max_blocks, later);
	load_map(&back, b, &cp);
	assert_same_map(&sm, &back);
	czfs_smap_destroy(&back);
	czfs_smap_destroy(&sm);
	czfs_bdev_close(b);
}
END_TEST

/* ---- scale ------------------------------------------------------------ */

/*
 * A 1 TiB map (8192 bitmap blocks) does work in proportion to what
 * changes, not to its size: next-fit allocation looks at the words after
 * its cursor only, and the write sends its map blocks in requests of
 * BATCH_BLOCKS.  Counted, not timed (bench/ is for speed).
 */
START_TEST(big_map_work_is_bounded)
{
	const uint64_t max = 1ull << 28;	/* 1 TiB */
	const uint64_t clusters = 16384, map_blocks = 8192 + 33;
	/* map blocks follow the clusters: 29 of them before the block set
	 * used at 32 * BITS + 32, the rest after it */
	const uint64_t before_gap = 32 * BITS + 32 - (3 + clusters * 64);
	char path[] = "/tmp/czfs-smap-XXXXXX";
	struct czfs_smap sm, back;
	struct czfs_cp_info cp;
	struct czfs_bdev *b;
	uint64_t writes, bytes;
	int fd;

	/* given a sparse image file and a 1 TiB map */
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(czfs_bdev_open(path, 0, &b), 0);
	ck_assert_int_eq(czfs_smap_init(&sm, max), 0);
	/* when 4 GiB of clusters are allocated and every bitmap is touched */
	for (uint64_t i = 0; i < clusters; i++)
		smap_alloc_ok(&sm, 64);
	/* then each allocation looked at the two words its run spans */
	ck_assert_uint_eq(sm.searched_words, clusters * 2);
	for (uint64_t k = 32; k < sm.nr_bitmaps; k++)
		ck_assert_int_eq(czfs_smap_set_used(&sm, k * BITS + k % 977, 1),
				 0);
	write_map(&sm, b, 1, &cp);
	czfs_smap_committed(&sm);
	/* and the write allocated its blocks one word or two each ... */
	ck_assert_uint_le(sm.searched_words, clusters * 2 + map_blocks * 2);
	/* ... and wrote each once, in full batches but at the gap */
	writes = atomic_load(&b->stats.writes);
	bytes = atomic_load(&b->stats.write_bytes);
	ck_assert_uint_eq(bytes, map_blocks * BS);
	ck_assert_uint_eq(writes, 1 + (map_blocks - before_gap + 31) / 32);
	ck_assert_uint_eq(cp.nr_smap_index, 33);
	ck_assert_uint_eq(cp.used_blocks, 3 + clusters * 64 + 8160 + map_blocks);
	/* the map blocks follow the clusters, stepping over the block set
	 * used at 32 * BITS + 32 */
	ck_assert_uint_eq(smap_alloc_ok(&sm, 64),
			  3 + clusters * 64 + map_blocks + 1);
	load_map(&back, b, &cp);
	ck_assert_uint_eq(back.used, cp.used_blocks);
	czfs_smap_destroy(&back);
	czfs_smap_destroy(&sm);
	czfs_bdev_close(b);
	unlink(path);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("spacemap_io");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, smap_test_setup, smap_test_teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, write_load_roundtrip);
	tcase_add_test(tc, copy_on_write);
	tcase_add_test(tc, unchanged_map_rewrites_nothing);
	tcase_add_test(tc, write_then_commit_releases_freed_blocks);
	tcase_add_test(tc, write_enospc_then_retry);
	tcase_add_test(tc, write_io_error_then_retry);
	tcase_add_loop_test(tc, load_corruption_table, 0,
			    ARRAY_SIZE(load_cases));
	tcase_add_test(tc, load_refuses_map_blocks_past_image);
	tcase_add_test(tc, grow_keeps_bits_adds_room);
	tcase_add_test(tc, big_map_work_is_bounded);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
