// SPDX-License-Identifier: MIT
/* The crc32c of the blocks written since the last checkpoint (blockcrc.h). */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bdev.h"
#include "blockcrc.h"
#include "crc32c.h"
#include "czfs_fs.h"
#include "util.h"

static_assert(CZFS_BDEV_BLOCK == CZFS_BLOCK_SIZE, "the device's block");

struct slot {
	uint64_t blk;
	uint32_t epoch;			/* the table's when set; else empty */
	uint32_t crc;			/* czfs_crc32c(0, the block) */
	bool known;			/* false: written in part */
};

struct czfs_blockcrc {
	pthread_mutex_t lock;
	struct slot *slots;		/* open addressing, nslots a power of 2 */
	unsigned nslots, used, max;
	uint32_t epoch;			/* a reset empties every slot at once */
	bool full;			/* past max: nothing is known */
};

/*
 * czfs_crc32c(c, block) is affine in c: shift(c) ^ czfs_crc32c(0, block),
 * where shift, the crc's advance over 4096 bytes, is linear, so 32
 * values of it give it all.
 */
static uint32_t shift_of_bit[32];
static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

static void shift_init(void)
{
	static const uint8_t zeros[CZFS_BLOCK_SIZE];
	uint32_t z = czfs_crc32c(0, zeros, sizeof(zeros));

	for (unsigned i = 0; i < 32; i++)
		shift_of_bit[i] = czfs_crc32c(1u << i, zeros, sizeof(zeros)) ^ z;
}

static uint32_t shift(uint32_t c)
{
	uint32_t r = 0;

	for (; c; c &= c - 1)
		r ^= shift_of_bit[__builtin_ctz(c)];
	return r;
}

struct czfs_blockcrc *czfs_blockcrc_new(unsigned max_blocks)
{
	struct czfs_blockcrc *t = calloc(1, sizeof(*t));
	unsigned n = 64;

	while (n < 2 * max_blocks)
		n <<= 1;
	if (t)
		t->slots = calloc(n, sizeof(*t->slots));
	if (!t || !t->slots) {
		free(t);
		return NULL;
	}
	t->nslots = n;
	t->max = max_blocks;
	t->epoch = 1;
	pthread_mutex_init(&t->lock, NULL);
	pthread_once(&shift_once, shift_init);
	return t;
}

void czfs_blockcrc_free(struct czfs_blockcrc *t)
{
	if (!t)
		return;
	pthread_mutex_destroy(&t->lock);
	free(t->slots);
	free(t);
}

static struct slot *find(struct czfs_blockcrc *t, uint64_t blk)
{
	unsigned mask = t->nslots - 1;
	unsigned i = (unsigned)((blk * 0x9e3779b97f4a7c15ull) >> 32) & mask;

	while (t->slots[i].epoch == t->epoch && t->slots[i].blk != blk)
		i = (i + 1) & mask;
	return &t->slots[i];
}

/* Record block blk (known or not).  Locked. */
static void put(struct czfs_blockcrc *t, uint64_t blk, bool known, uint32_t crc)
{
	struct slot *s;

	if (t->full)
		return;
	s = find(t, blk);
	if (s->epoch != t->epoch) {
		if (t->used == t->max) {
			t->full = true;
			return;
		}
		t->used++;
		s->epoch = t->epoch;
		s->blk = blk;
	}
	s->known = known;
	s->crc = crc;
}

void czfs_blockcrc_note(struct czfs_blockcrc *t, const void *buf, size_t len,
			uint64_t off)
{
	uint64_t first = off / CZFS_BLOCK_SIZE;
	uint64_t end = DIV_ROUND_UP(off + len, CZFS_BLOCK_SIZE);

	if (!len)
		return;
	pthread_mutex_lock(&t->lock);
	for (uint64_t b = first; b < end && !t->full; b++) {
		uint64_t at = b * CZFS_BLOCK_SIZE;
		bool whole = buf && at >= off && at + CZFS_BLOCK_SIZE <= off + len;

		put(t, b, whole, whole ? czfs_crc32c(0, (const uint8_t *)buf +
						     (at - off), CZFS_BLOCK_SIZE) : 0);
	}
	pthread_mutex_unlock(&t->lock);
}

void czfs_blockcrc_note_known(struct czfs_blockcrc *t, uint64_t blk,
			      unsigned n, const uint32_t *crcs)
{
	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < n && !t->full; i++)
		put(t, blk + i, true, crcs[i]);
	pthread_mutex_unlock(&t->lock);
}

int czfs_blockcrc_covered(struct czfs_blockcrc *t, const uint64_t *ext,
			  unsigned n, uint32_t *crc)
{
	uint32_t c = 0;
	int err = 0;

	pthread_mutex_lock(&t->lock);
	if (t->full)
		err = -ENOENT;
	for (unsigned i = 0; !err && i < n; i++) {
		uint64_t b = CZFS_CP_EXTENT_ADDR(ext[i]);
		uint64_t end = b + CZFS_CP_EXTENT_LEN(ext[i]);

		for (; b < end; b++) {
			const struct slot *s = find(t, b);

			if (s->epoch != t->epoch || !s->known) {
				err = -ENOENT;
				break;
			}
			c = shift(c) ^ s->crc;
		}
	}
	pthread_mutex_unlock(&t->lock);
	if (!err)
		*crc = c;
	return err;
}

void czfs_blockcrc_reset(struct czfs_blockcrc *t)
{
	pthread_mutex_lock(&t->lock);
	if (!++t->epoch) {	/* wrapped: slots of epoch 0 must not match */
		memset(t->slots, 0, (size_t)t->nslots * sizeof(*t->slots));
		t->epoch = 1;
	}
	t->used = 0;
	t->full = false;
	pthread_mutex_unlock(&t->lock);
}
