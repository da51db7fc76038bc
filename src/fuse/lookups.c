// SPDX-License-Identifier: MIT
/* The compact inodes' table (see lookups.h). */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "lookups.h"

#define LOOKUPS_MIN	1024u		/* slots of the smallest array */

static size_t home(const struct czfs_lookups *t, uint64_t ino)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 32) & (t->cap - 1);
}

/* Move every record into a new array of cap slots: 0 or -ENOMEM. */
static int resize(struct czfs_lookups *t, size_t cap)
{
	struct czfs_lookup *old = t->slot;
	size_t old_cap = t->cap;

	t->slot = calloc(cap, sizeof(*t->slot));
	if (!t->slot) {
		t->slot = old;
		return -ENOMEM;
	}
	t->cap = cap;
	for (size_t i = 0; i < old_cap; i++) {
		size_t j;

		if (!old[i].ino)
			continue;
		for (j = home(t, old[i].ino); t->slot[j].ino; j = (j + 1) & (cap - 1))
			;
		t->slot[j] = old[i];
	}
	free(old);
	return 0;
}

struct czfs_lookup *czfs_lookups_find(struct czfs_lookups *t, uint64_t ino)
{
	if (!t->n)
		return NULL;
	for (size_t i = home(t, ino); t->slot[i].ino; i = (i + 1) & (t->cap - 1))
		if (t->slot[i].ino == ino)
			return &t->slot[i];
	return NULL;
}

int czfs_lookups_add(struct czfs_lookups *t, const struct czfs_lookup *e)
{
	size_t i;

	if ((t->n + 1) * 4 > t->cap * 3) {
		int err = resize(t, t->cap ? t->cap * 2 : LOOKUPS_MIN);

		if (err)
			return err;
	}
	for (i = home(t, e->ino); t->slot[i].ino; i = (i + 1) & (t->cap - 1))
		;
	t->slot[i] = *e;
	t->n++;
	return 0;
}

void czfs_lookups_del(struct czfs_lookups *t, struct czfs_lookup *e)
{
	size_t mask = t->cap - 1, hole = (size_t)(e - t->slot), i = hole;

	/* Backward shift: a record after the hole whose home does not lie
	 * in (hole, i] moves into it, so that no probe stops early. */
	for (;;) {
		size_t h;

		i = (i + 1) & mask;
		if (!t->slot[i].ino)
			break;
		h = home(t, t->slot[i].ino);
		if (hole <= i ? hole < h && h <= i : hole < h || h <= i)
			continue;
		t->slot[hole] = t->slot[i];
		hole = i;
	}
	t->slot[hole].ino = 0;
	t->n--;
	/* memory follows use: a table the kernel's forgets emptied shrinks
	 * (a failure keeps the larger one) */
	if (t->cap > LOOKUPS_MIN && t->n * 8 < t->cap)
		resize(t, t->cap / 2);
}

void czfs_lookups_free(struct czfs_lookups *t)
{
	free(t->slot);
	*t = (struct czfs_lookups){ 0 };
}
