// SPDX-License-Identifier: MIT
/* Block-mapped clusters and when each was last written (coldmap.h). */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "coldmap.h"
#include "util.h"

/* Open addressing, linear probing, deletion by backward shift: no
 * tombstones.  ino 0 marks a free slot (inode numbers start at 1). */
struct czfs_coldmap {
	pthread_mutex_t lock;
	struct czfs_cold_ref *slot;
	uint64_t cap, n;		/* cap: a power of two */
	uint64_t busy;			/* taken, not yet done */
	bool overflowed;
};

uint32_t czfs_cold_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint32_t)ts.tv_sec + 1;
}

static uint64_t home(const struct czfs_coldmap *cm, uint64_t ino, uint64_t idx)
{
	uint64_t h = (ino * 0x9e3779b97f4a7c15ull) ^ (idx * 0xc2b2ae3d27d4eb4full);

	return (h ^ (h >> 29)) & (cm->cap - 1);
}

int czfs_cold_create(struct czfs_coldmap **out)
{
	struct czfs_coldmap *cm = calloc(1, sizeof(*cm));

	if (!cm)
		return -ENOMEM;
	cm->cap = 1024;
	cm->slot = calloc(cm->cap, sizeof(*cm->slot));
	if (!cm->slot) {
		free(cm);
		return -ENOMEM;
	}
	pthread_mutex_init(&cm->lock, NULL);
	*out = cm;
	return 0;
}

void czfs_cold_destroy(struct czfs_coldmap *cm)
{
	if (!cm)
		return;
	pthread_mutex_destroy(&cm->lock);
	free(cm->slot);
	free(cm);
}

/* Locked.  The slot of (ino, idx), or the free one it would take. */
static uint64_t find(const struct czfs_coldmap *cm, uint64_t ino, uint64_t idx)
{
	uint64_t i = home(cm, ino, idx);

	while (cm->slot[i].ino && (cm->slot[i].ino != ino || cm->slot[i].idx != idx))
		i = (i + 1) & (cm->cap - 1);
	return i;
}

/* Locked.  Twice the slots; false when there is no memory for them. */
static bool grow(struct czfs_coldmap *cm)
{
	struct czfs_coldmap big = { .cap = cm->cap * 2 };

	big.slot = calloc(big.cap, sizeof(*big.slot));
	if (!big.slot)
		return false;
	for (uint64_t i = 0; i < cm->cap; i++)
		if (cm->slot[i].ino)
			big.slot[find(&big, cm->slot[i].ino, cm->slot[i].idx)] = cm->slot[i];
	free(cm->slot);
	cm->slot = big.slot;
	cm->cap = big.cap;
	return true;
}

void czfs_cold_note(struct czfs_coldmap *cm, uint64_t ino, uint64_t idx,
		    uint32_t when)
{
	uint64_t i;

	pthread_mutex_lock(&cm->lock);
	i = find(cm, ino, idx);
	if (cm->slot[i].ino) {
		cm->slot[i].when = MAX(cm->slot[i].when, when);
	} else if (cm->n >= CZFS_COLD_MAX ||
		   (cm->n + 1 > cm->cap / 2 && !grow(cm))) {
		cm->overflowed = true;	/* the next scan finds it */
	} else {
		i = find(cm, ino, idx);	/* (grow moved the slots) */
		cm->slot[i] = (struct czfs_cold_ref){ ino, idx, when };
		cm->n++;
	}
	pthread_mutex_unlock(&cm->lock);
}

/* Locked.  Empty slot i, shifting back the entries that probed past it. */
static void remove_at(struct czfs_coldmap *cm, uint64_t i)
{
	uint64_t mask = cm->cap - 1, j = i;

	for (;;) {
		j = (j + 1) & mask;
		if (!cm->slot[j].ino)
			break;
		/* j may fill the hole at i unless its home lies in (i, j] */
		uint64_t h = home(cm, cm->slot[j].ino, cm->slot[j].idx);

		if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
			cm->slot[i] = cm->slot[j];
			i = j;
		}
	}
	cm->slot[i].ino = 0;
	cm->n--;
}

static int cmp_ref(const void *a, const void *b)
{
	const struct czfs_cold_ref *x = a, *y = b;

	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

unsigned czfs_cold_take(struct czfs_coldmap *cm, uint32_t before,
			struct czfs_cold_ref *out, unsigned max)
{
	unsigned n = 0;

	pthread_mutex_lock(&cm->lock);
	for (uint64_t i = 0; i < cm->cap && n < max; ) {
		if (cm->slot[i].ino && cm->slot[i].when < before) {
			out[n++] = cm->slot[i];
			remove_at(cm, i);	/* slot i may hold another now */
			cm->busy++;
		} else {
			i++;
		}
	}
	pthread_mutex_unlock(&cm->lock);
	qsort(out, n, sizeof(*out), cmp_ref);
	return n;
}

void czfs_cold_done(struct czfs_coldmap *cm, unsigned n)
{
	pthread_mutex_lock(&cm->lock);
	cm->busy -= MIN(cm->busy, n);
	pthread_mutex_unlock(&cm->lock);
}

uint64_t czfs_cold_count(struct czfs_coldmap *cm)
{
	uint64_t n;

	pthread_mutex_lock(&cm->lock);
	n = cm->n + cm->busy;
	pthread_mutex_unlock(&cm->lock);
	return n;
}

bool czfs_cold_overflowed(struct czfs_coldmap *cm)
{
	bool o;

	pthread_mutex_lock(&cm->lock);
	o = cm->overflowed;
	cm->overflowed = false;
	pthread_mutex_unlock(&cm->lock);
	return o;
}
