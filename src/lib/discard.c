// SPDX-License-Identifier: MIT
/*
 * Punching free blocks out of the image file.  The map is read one bitmap
 * chunk (32768 blocks) at a time: the chunk's candidate bits are copied
 * (and, for freed blocks, held) under the map's lock, then turned into
 * runs and punched without it.
 * Runs that touch are merged across words and chunks into one request.
 */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bdev.h"
#include "discard.h"
#include "fs.h"
#include "log.h"
#include "spacemap_int.h"

/* The run being grown, and what was punched so far. */
struct punch_acc {
	struct czfs_bdev *bdev;
	uint64_t start, len;
	struct czfs_discard_stats *st;
	int err;
};

static void acc_flush(struct punch_acc *a)
{
	int err;

	if (!a->len || a->err)
		return;
	err = czfs_bdev_punch(a->bdev, a->start * CZFS_BLOCK_SIZE,
			      a->len * CZFS_BLOCK_SIZE);
	if (err) {
		a->err = err;
	} else {
		a->st->blocks += a->len;
		a->st->ranges++;
	}
	a->len = 0;
}

static void acc_add(struct punch_acc *a, uint64_t start, uint64_t n)
{
	if (a->len && a->start + a->len == start) {
		a->len += n;
		return;
	}
	acc_flush(a);
	a->start = start;
	a->len = n;
}

/* The runs of set bits of word bits (block base + bit). */
static void acc_word(struct punch_acc *a, uint64_t base, uint64_t bits)
{
	while (bits) {
		unsigned s = (unsigned)__builtin_ctzll(bits);
		uint64_t rest = bits >> s;
		unsigned n = ~rest ? (unsigned)__builtin_ctzll(~rest) : 64 - s;

		acc_add(a, base + s, n);
		bits = n + s >= 64 ? 0 : bits & (~0ull << (s + n));
	}
}

/* Keep only the bits of word w inside [from, to). */
static uint64_t clip(uint64_t bits, uint64_t w, uint64_t from, uint64_t to)
{
	uint64_t base = w * 64;

	if (base + 64 <= from || base >= to)
		return 0;
	if (from > base)
		bits &= ~0ull << (from - base);
	if (to < base + 64)
		bits &= (1ull << (to - base)) - 1;
	return bits;
}

enum pass { PASS_FREED, PASS_ALL };

/*
 * Copy chunk k's candidates into out (SMAP_WORDS words): the unpunched
 * ones still free in runs of min_run or more, held for the pass, or
 * every free one.  False if the chunk has none to look at.
 */
static bool chunk_candidates(struct czfs_smap *sm, uint64_t k, enum pass pass,
			     unsigned min_run, uint64_t *out)
{
	const uint64_t *cur, *com, *held;
	bool any = false;

	if (pass == PASS_FREED)
		return smap_take_unpunched(sm, k, out, min_run);
	pthread_mutex_lock(&sm->lock);
	if (k >= sm->nr_bitmaps)
		goto out;
	cur = smap_chunk(sm->cur, k);
	com = smap_chunk(sm->committed, k);
	held = smap_chunk(sm->held, k);
	for (unsigned i = 0; i < SMAP_WORDS; i++) {
		out[i] = ~(com[i] | cur[i] | held[i]);
		any |= out[i] != 0;
	}
out:
	pthread_mutex_unlock(&sm->lock);
	return any;
}

/*
 * Blocks past the end of the file need no punch.  A held block was in use
 * (inside the file); a free one may be anywhere the file has reached,
 * which after a remount can be past the map's image_blocks (recounted
 * from the used bits).  A held chunk is released once its punches are
 * done; after an error (or with no bdev) the rest are released unpunched.
 */
static int discard_pass(struct czfs_smap *sm, struct czfs_bdev *bdev,
			enum pass pass, unsigned min_run,
			struct czfs_discard_stats *st)
{
	struct punch_acc a = { .bdev = bdev, .st = st };
	uint64_t *words = malloc(CZFS_BLOCK_SIZE), limit, nr;

	if (!words)
		return -ENOMEM;
	pthread_mutex_lock(&sm->lock);
	nr = sm->nr_bitmaps;
	limit = MIN(sm->max_blocks, bdev ? bdev->size / CZFS_BLOCK_SIZE : 0);
	pthread_mutex_unlock(&sm->lock);
	for (uint64_t k = 0; k < nr && (!a.err || pass == PASS_FREED); k++) {
		if (!chunk_candidates(sm, k, pass, min_run, words))
			continue;
		for (unsigned i = 0; i < SMAP_WORDS && !a.err; i++) {
			uint64_t w = k * SMAP_WORDS + i;

			acc_word(&a, w * 64, clip(words[i], w,
						  CZFS_FIRST_DATA_BLKADDR, limit));
		}
		if (pass == PASS_FREED) {	/* punched before it is reused */
			acc_flush(&a);
			smap_release_held(sm, k, words);
		}
	}
	acc_flush(&a);
	free(words);
	return a.err;
}

int czfs_smap_discard_freed(struct czfs_smap *sm, struct czfs_bdev *bdev,
			    unsigned min_run, struct czfs_discard_stats *st)
{
	return discard_pass(sm, bdev, PASS_FREED, min_run, st);
}

int czfs_smap_discard_all(struct czfs_smap *sm, struct czfs_bdev *bdev,
			  struct czfs_discard_stats *st)
{
	return discard_pass(sm, bdev, PASS_ALL, 1, st);
}

/* A punch failed: said once, and discard is off for this open image. */
static void discard_failed(struct czfs_fs *fs, int err)
{
	fs->discard = false;
	if (err == -EOPNOTSUPP)
		czfs_warn("discard: the image's file system cannot punch holes: freed blocks stay allocated on the host (discard off)");
	else
		czfs_warn("discard: punching freed blocks failed (%s): discard off",
			  strerror(-err));
}

void czfs_fs_discard_freed(struct czfs_fs *fs, unsigned min_run)
{
	int err;

	pthread_mutex_lock(&fs->discard_lock);
	err = discard_pass(&fs->smap, fs->discard ? fs->bdev : NULL, PASS_FREED,
			   min_run, &fs->discarded);
	if (err)
		discard_failed(fs, err);
	pthread_mutex_unlock(&fs->discard_lock);
}

void czfs_fs_discard_free(struct czfs_fs *fs)
{
	int err;

	if (!fs->discard)
		return;
	pthread_mutex_lock(&fs->discard_lock);
	err = discard_pass(&fs->smap, fs->bdev, PASS_ALL, 1, &fs->discarded);
	if (err)
		discard_failed(fs, err);
	pthread_mutex_unlock(&fs->discard_lock);
}
