// SPDX-License-Identifier: MIT
/* The pack cache (packcache.h): a small array under one mutex. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "packcache.h"

struct czfs_pcache {
	pthread_mutex_t lock;
	struct czfs_pentry *ents;	/* data NULL: a free slot */
	unsigned n;
	uint64_t clock, hits, misses;
};

int czfs_pcache_create(unsigned n, struct czfs_pcache **out)
{
	struct czfs_pcache *pc = calloc(1, sizeof(*pc));

	if (!pc || !n || !(pc->ents = calloc(n, sizeof(*pc->ents)))) {
		free(pc);
		return -ENOMEM;
	}
	pc->n = n;
	pthread_mutex_init(&pc->lock, NULL);
	*out = pc;
	return 0;
}

void czfs_pcache_destroy(struct czfs_pcache *pc)
{
	if (!pc)
		return;
	for (unsigned i = 0; i < pc->n; i++)
		free(pc->ents[i].data);
	free(pc->ents);
	pthread_mutex_destroy(&pc->lock);
	free(pc);
}

static struct czfs_pentry *find(struct czfs_pcache *pc, uint64_t blkaddr,
				uint32_t checksum, uint32_t ulen)
{
	for (unsigned i = 0; i < pc->n; i++) {
		struct czfs_pentry *e = &pc->ents[i];

		if (e->data && e->blkaddr == blkaddr &&
		    e->checksum == checksum && e->ulen == ulen) {
			e->refs++;
			e->used = ++pc->clock;
			return e;
		}
	}
	return NULL;
}

struct czfs_pentry *czfs_pcache_get(struct czfs_pcache *pc, uint64_t blkaddr,
				    uint32_t checksum, uint32_t ulen)
{
	struct czfs_pentry *e;

	pthread_mutex_lock(&pc->lock);
	e = find(pc, blkaddr, checksum, ulen);
	if (e)
		pc->hits++;
	else
		pc->misses++;
	pthread_mutex_unlock(&pc->lock);
	return e;
}

/* A free slot, or the least recently used one nobody holds. */
static struct czfs_pentry *victim(struct czfs_pcache *pc)
{
	struct czfs_pentry *v = NULL;

	for (unsigned i = 0; i < pc->n; i++) {
		struct czfs_pentry *e = &pc->ents[i];

		if (!e->data)
			return e;
		if (!e->refs && (!v || e->used < v->used))
			v = e;
	}
	return v;
}

struct czfs_pentry *czfs_pcache_insert(struct czfs_pcache *pc, uint64_t blkaddr,
				       uint32_t checksum, uint32_t ulen,
				       void *data)
{
	struct czfs_pentry *e;

	pthread_mutex_lock(&pc->lock);
	e = find(pc, blkaddr, checksum, ulen);
	if (!e && (e = victim(pc))) {
		free(e->data);
		*e = (struct czfs_pentry){ blkaddr, checksum, ulen, data, 1,
					   ++pc->clock };
		data = NULL;
	}
	pthread_mutex_unlock(&pc->lock);
	free(data);
	return e;
}

void czfs_pcache_put(struct czfs_pcache *pc, struct czfs_pentry *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&pc->lock);
	e->refs--;
	pthread_mutex_unlock(&pc->lock);
}

void czfs_pcache_counts(struct czfs_pcache *pc, uint64_t *hits,
			uint64_t *misses)
{
	pthread_mutex_lock(&pc->lock);
	*hits = pc->hits;
	*misses = pc->misses;
	pthread_mutex_unlock(&pc->lock);
}
