// SPDX-License-Identifier: MIT
/* The pack cache (packcache.h): a small array under one mutex. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "czfs_fs.h"
#include "packcache.h"

/*
 * Buffers of freed packs kept for the next decodes: a walk decodes a
 * pack every dozen files, and a new 256 KiB buffer each time took the
 * kernel's fresh zeroed pages (mapped, faulted in, unmapped: a third
 * more daemon CPU on a tree walk) or, from the heap, left it in pieces.
 */
#define PC_SPARES	4

struct czfs_pcache {
	pthread_mutex_t lock;
	pthread_cond_t done;		/* broadcast when a decode ends */
	struct czfs_pentry *ents;	/* !data && !loading: a free slot */
	unsigned n;
	uint64_t clock;
	uint64_t bytes;			/* decoded, held */
	void *spare[PC_SPARES];		/* CZFS_PACK_MAX_ULEN bytes each */
	unsigned nspare;
	struct czfs_pcache_stats st;
};

/* A pack buffer goes back: kept as a spare, or freed.  Locked. */
static void give_locked(struct czfs_pcache *pc, void *buf)
{
	if (buf && pc->nspare < PC_SPARES)
		pc->spare[pc->nspare++] = buf;
	else
		free(buf);
}

/* Locked. */
static void free_data(struct czfs_pcache *pc, struct czfs_pentry *e)
{
	if (e->data)
		pc->bytes -= e->ulen;
	give_locked(pc, e->data);
	e->data = NULL;
}

void *czfs_pcache_buffer(struct czfs_pcache *pc)
{
	void *buf = NULL;

	pthread_mutex_lock(&pc->lock);
	if (pc->nspare)
		buf = pc->spare[--pc->nspare];
	pthread_mutex_unlock(&pc->lock);
	return buf ? buf : malloc(CZFS_PACK_MAX_ULEN);
}

void czfs_pcache_give(struct czfs_pcache *pc, void *buf)
{
	pthread_mutex_lock(&pc->lock);
	give_locked(pc, buf);
	pthread_mutex_unlock(&pc->lock);
}

/* Free the spares.  Locked. */
static void drop_spares(struct czfs_pcache *pc)
{
	while (pc->nspare)
		free(pc->spare[--pc->nspare]);
}

int czfs_pcache_create(unsigned n, struct czfs_pcache **out)
{
	struct czfs_pcache *pc = calloc(1, sizeof(*pc));

	if (!pc || !n || !(pc->ents = calloc(n, sizeof(*pc->ents)))) {
		free(pc);
		return -ENOMEM;
	}
	pc->n = n;
	pthread_mutex_init(&pc->lock, NULL);
	pthread_cond_init(&pc->done, NULL);
	*out = pc;
	return 0;
}

void czfs_pcache_destroy(struct czfs_pcache *pc)
{
	if (!pc)
		return;
	for (unsigned i = 0; i < pc->n; i++)
		free_data(pc, &pc->ents[i]);
	drop_spares(pc);
	free(pc->ents);
	pthread_cond_destroy(&pc->done);
	pthread_mutex_destroy(&pc->lock);
	free(pc);
}

/* The entry of this key, decoded or LOADING, or NULL. */
static struct czfs_pentry *find(struct czfs_pcache *pc, uint64_t blkaddr,
				uint32_t checksum, uint32_t ulen)
{
	for (unsigned i = 0; i < pc->n; i++) {
		struct czfs_pentry *e = &pc->ents[i];

		if ((e->data || e->loading) && e->blkaddr == blkaddr &&
		    e->checksum == checksum && e->ulen == ulen)
			return e;
	}
	return NULL;
}

/* A free slot, or the least recently used one nobody holds. */
static struct czfs_pentry *victim(struct czfs_pcache *pc)
{
	struct czfs_pentry *v = NULL;

	for (unsigned i = 0; i < pc->n; i++) {
		struct czfs_pentry *e = &pc->ents[i];

		if (!e->data && !e->loading)
			return e;
		if (!e->refs && (!v || e->used < v->used))
			v = e;
	}
	return v;
}

int czfs_pcache_claim(struct czfs_pcache *pc, uint64_t blkaddr,
		      uint32_t checksum, uint32_t ulen, unsigned flags,
		      struct czfs_pentry **e)
{
	bool waited = false;
	int ret = 0;

	pthread_mutex_lock(&pc->lock);
	while ((*e = find(pc, blkaddr, checksum, ulen)) && (*e)->loading) {
		*e = NULL;
		if (flags & CZFS_PC_NOWAIT) {
			ret = -EAGAIN;
			goto out;
		}
		if (!waited)
			pc->st.waits++;
		waited = true;
		pthread_cond_wait(&pc->done, &pc->lock);
	}
	if (*e) {
		pc->st.hits++;
	} else if ((*e = victim(pc))) {
		pc->st.misses++;
		free_data(pc, *e);
		**e = (struct czfs_pentry){ blkaddr, checksum, ulen, NULL, true,
					    0, 0, 0, 0 };
		ret = 1;
	} else {
		pc->st.misses++;
		ret = -ENOSPC;
		goto out;
	}
	(*e)->refs++;
	(*e)->used = ++pc->clock;
out:
	pthread_mutex_unlock(&pc->lock);
	return ret;
}

void czfs_pcache_fill(struct czfs_pcache *pc, struct czfs_pentry *e,
		      void *data, uint32_t members)
{
	pthread_mutex_lock(&pc->lock);
	e->data = data;
	e->members = members;
	e->loading = false;
	pc->bytes += e->ulen;
	pthread_cond_broadcast(&pc->done);
	pthread_mutex_unlock(&pc->lock);
}

void czfs_pcache_abort(struct czfs_pcache *pc, struct czfs_pentry *e)
{
	pthread_mutex_lock(&pc->lock);
	e->loading = false;	/* no data: the slot is free */
	e->refs--;
	pthread_cond_broadcast(&pc->done);
	pthread_mutex_unlock(&pc->lock);
}

void czfs_pcache_put(struct czfs_pcache *pc, struct czfs_pentry *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&pc->lock);
	if (!--e->refs && e->data && e->members && e->taken >= e->members) {
		free_data(pc, e);
		pc->st.consumed++;
	}
	pthread_mutex_unlock(&pc->lock);
}

void czfs_pcache_took(struct czfs_pcache *pc, struct czfs_pentry *e)
{
	pthread_mutex_lock(&pc->lock);
	e->taken++;
	pthread_mutex_unlock(&pc->lock);
}

void czfs_pcache_get_stats(struct czfs_pcache *pc, struct czfs_pcache_stats *st)
{
	pthread_mutex_lock(&pc->lock);
	*st = pc->st;
	st->bytes = pc->bytes;
	pthread_mutex_unlock(&pc->lock);
}

void czfs_pcache_drop(struct czfs_pcache *pc)
{
	pthread_mutex_lock(&pc->lock);
	for (unsigned i = 0; i < pc->n; i++) {
		struct czfs_pentry *e = &pc->ents[i];

		if (e->data && !e->refs && !e->loading)
			free_data(pc, e);
	}
	drop_spares(pc);
	pthread_mutex_unlock(&pc->lock);
}
