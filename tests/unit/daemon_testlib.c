// SPDX-License-Identifier: MIT
/* Unit test helpers for the daemon's middle (daemon_testlib.h). */
#include "config.h"

#include <check.h>
#include <string.h>

#include "cluster.h"
#include "compress.h"
#include "daemon_testlib.h"
#include "inode.h"
#include "load.h"
#include "pack.h"
#include "setup.h"
#include "spacemap.h"

void daemon_open(struct czfs_daemon *dm)
{
	memset(dm, 0, sizeof(*dm));
	dm->opts.cache_size = POOL_BYTES;
	dm->opts.max_request = 1 << 20;
	/* czfs_opts_settle's bound: writers leave this much to writeback */
	dm->opts.dirty_max = POOL_BYTES / 4;
	dm->opts.alg = dm->opts.level = -1;
	ck_assert_int_eq(czfs_daemon_init(dm), 0);
	dm->fs = open_fs(make_image(), true);
	ck_assert_int_eq(czfs_fs_begin(dm->fs), 0);
}

void daemon_close(struct czfs_daemon *dm)
{
	czfs_daemon_free(dm);
	czfs_fs_close(dm->fs);
}

uint64_t daemon_used_blocks(struct czfs_daemon *dm)
{
	uint64_t max, used;

	czfs_smap_usage(&dm->fs->smap, &max, &used);
	return used;
}

/* ino's size covers end. */
static void cover(struct czfs_fs *fs, uint64_t ino, uint64_t end,
		  const struct czfs_stored *d)
{
	struct czfs_inode_info ii;

	ck_assert_int_eq(czfs_inode_read(&fs->tree, ino, &ii), 0);
	ii.size = end > ii.size ? end : ii.size;
	czfs_inode_add_stored(&ii, d);
	ck_assert_int_eq(czfs_inode_store(fs, &ii), 0);
}

/* Encode len bytes of data with pol into its blocks (allocated, written):
 * its blkaddr set in ci. */
static void store_blocks(struct czfs_fs *fs, const struct czfs_cluster_info *c,
			 const void *out, unsigned out_len,
			 struct czfs_cluster_info *ci)
{
	*ci = *c;
	if (!czfs_cluster_has_extent(ci->kind))
		return;
	ck_assert_int_eq(czfs_smap_alloc(&fs->smap, ci->nblocks, &ci->blkaddr), 0);
	ck_assert_int_eq(czfs_bdev_write(fs->bdev, out, out_len,
					 ci->blkaddr * CZFS_BLOCK_SIZE), 0);
}

static uint8_t out[CZFS_MAX_CLUSTER_SIZE + CZFS_BLOCK_SIZE];

void store_cluster(struct czfs_daemon *dm, uint64_t ino, uint64_t idx,
		   const void *data, unsigned len, unsigned alg)
{
	struct czfs_cluster_policy pol = { .alg = alg, .zero_detect = true };
	struct czfs_codec *codec = czfs_codec_new();
	struct czfs_cluster_info c, ci;
	struct czfs_stored d = { 0 };
	unsigned out_len;

	ck_assert_ptr_nonnull(codec);
	ck_assert_int_eq(czfs_cluster_encode(codec, &pol, data, len, out, &c,
					     &out_len), 0);
	store_blocks(dm->fs, &c, out, out_len, &ci);
	ck_assert_int_eq(czfs_cluster_set(dm->fs, ino, idx, &ci, &d), 0);
	cover(dm->fs, ino, idx * (16 * CZFS_BLOCK_SIZE) + len, &d);
	czfs_codec_free(codec);
}

void store_pack(struct czfs_daemon *dm, const uint64_t *ino, unsigned n,
		const unsigned *lens, const uint8_t *data, unsigned alg)
{
	struct czfs_cluster_policy pol = { .alg = alg, .zero_detect = true };
	struct czfs_codec *codec = czfs_codec_new();
	struct czfs_cluster_info c, pack;
	struct czfs_pack_info pi;
	unsigned total = 0, out_len;

	ck_assert_ptr_nonnull(codec);
	for (unsigned i = 0; i < n; i++)
		total += lens[i];
	ck_assert_int_eq(czfs_pack_encode(codec, &pol, data, total, out, &c,
					  &out_len), 0);
	store_blocks(dm->fs, &c, out, out_len, &pack);
	for (unsigned i = 0, off = 0; i < n; off += lens[i++]) {
		struct czfs_cluster_info ci;
		struct czfs_stored d = { 0 };

		czfs_cluster_packed_make(&pack, off, lens[i], &ci);
		ck_assert_int_eq(czfs_cluster_set(dm->fs, ino[i], 0, &ci, &d), 0);
		cover(dm->fs, ino[i], lens[i], &d);
	}
	czfs_pack_of_stored(&pack, n, &pi);
	ck_assert_int_eq(czfs_pack_put(dm->fs, &pi), 0);
	czfs_codec_free(codec);
}

void item_of(struct czfs_daemon *dm, uint64_t ino, uint64_t idx,
	     struct czfs_cluster_info *ci)
{
	static uint8_t inl[CZFS_INLINE_MAX];
	struct czfs_inode_info ii;

	ck_assert_int_eq(czfs_inode_read(&dm->fs->tree, ino, &ii), 0);
	ck_assert_int_eq(czfs_load_items(dm, &ii, idx, 1, ci, inl), 0);
}

void fill_text(uint8_t *buf, unsigned len, unsigned seed)
{
	for (unsigned k = 0; k < len; k++)
		buf[k] = (uint8_t)("abcdefgh"[(k / 7 + seed) % 8] + (k % 13 == 0));
}

void fill_random(uint8_t *buf, unsigned len, unsigned seed)
{
	uint64_t x = 0x9e3779b97f4a7c15ull * (seed + 1);

	for (unsigned k = 0; k < len; k++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[k] = (uint8_t)x;
	}
}
