// SPDX-License-Identifier: MIT
/*
 * A few slots of cluster size: the reader fills a free one and submits
 * it with the next sequence number; a worker claims any ready one,
 * encodes it with its own codec, appends the result to the file and
 * records it at its sequence number.  Offsets grow with sequence
 * numbers, so the index is sorted as it is made.  Without workers (jobs
 * 0) the reader encodes each slot as it submits it: no thread timing in
 * what runs, which a fuzzer's repeatable runs need.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compress.h"
#include "preenc.h"
#include "util.h"

#define PE_SLOTS_PER_JOB	4
#define PE_INDEX_MAX	(64u << 20)	/* bytes of index: then no more */

enum pe_state { PE_FREE, PE_FILLING, PE_READY, PE_BUSY };

struct pe_slot {
	uint8_t *in;
	enum pe_state state;
	uint64_t off, seq;
};

struct pe_entry {
	uint64_t off;			/* of the cluster in the spool */
	uint64_t at;			/* of its encoding in the file */
	unsigned len;
	struct czfs_cluster_info ci;
};

struct mk_preenc {
	struct mk_preenc_opts o;
	int fd;
	unsigned cbytes, nslots;
	struct pe_slot *slots;
	struct pe_slot *filling;	/* the reader's, or NULL */
	pthread_mutex_t lock;
	pthread_cond_t cv_free, cv_ready;
	struct pe_entry *ents;		/* by sequence number */
	uint64_t nents, cap, file_end;
	bool done;
	int err;
	pthread_t *workers;
	unsigned nworkers;
	struct czfs_codec *codec;	/* jobs 0: the caller's own */
	uint8_t *out;
};

/* A ready slot, claimed; NULL once done (or failed) with none left. */
static struct pe_slot *claim(struct mk_preenc *pe)
{
	pthread_mutex_lock(&pe->lock);
	for (;;) {
		for (unsigned i = 0; !pe->err && i < pe->nslots; i++)
			if (pe->slots[i].state == PE_READY) {
				pe->slots[i].state = PE_BUSY;
				pthread_mutex_unlock(&pe->lock);
				return &pe->slots[i];
			}
		if (pe->done || pe->err)
			break;
		pthread_cond_wait(&pe->cv_ready, &pe->lock);
	}
	pthread_mutex_unlock(&pe->lock);
	return NULL;
}

/* Record the slot's encoding (out, len), or the error, and free it. */
static void finish_slot(struct mk_preenc *pe, struct pe_slot *s,
			const struct czfs_cluster_info *ci, const uint8_t *out,
			unsigned len, int err)
{
	struct pe_entry *e;
	uint64_t at;

	pthread_mutex_lock(&pe->lock);
	at = pe->file_end;
	pe->file_end += len;
	pthread_mutex_unlock(&pe->lock);
	if (!err && len)
		err = czfs_pwrite_full(pe->fd, out, len, at);
	pthread_mutex_lock(&pe->lock);
	if (err && !pe->err)
		pe->err = err;
	e = &pe->ents[s->seq];
	e->off = s->off;
	e->at = at;
	e->len = len;
	e->ci = *ci;
	e->ci.inline_data = NULL;
	s->state = PE_FREE;
	pthread_cond_broadcast(&pe->cv_free);
	if (pe->err)
		pthread_cond_broadcast(&pe->cv_ready);
	pthread_mutex_unlock(&pe->lock);
}

/* Encode a claimed slot with codec into out, and record it. */
static void encode_slot(struct mk_preenc *pe, struct pe_slot *s,
			struct czfs_codec *codec, uint8_t *out)
{
	struct czfs_cluster_policy pol = pe->o.pol;
	struct czfs_cluster_info ci = { 0 };
	unsigned len = 0;
	int err;

	pol.allow_inline = false;
	err = codec && out ? czfs_cluster_encode(codec, &pol, s->in, pe->cbytes,
						 out, &ci, &len) : -ENOMEM;
	finish_slot(pe, s, &ci, out, len, err);
}

static void *worker_main(void *arg)
{
	struct mk_preenc *pe = arg;
	struct czfs_codec *codec = czfs_codec_new();
	uint8_t *out = malloc(CZFS_MAX_CLUSTER_SIZE + CZFS_BLOCK_SIZE);
	struct pe_slot *s;

	while ((s = claim(pe)))
		encode_slot(pe, s, codec, out);
	free(out);
	czfs_codec_free(codec);
	return NULL;
}

int mk_preenc_new(const struct mk_preenc_opts *o, int fd,
		  struct mk_preenc **out)
{
	struct mk_preenc *pe = calloc(1, sizeof(*pe));
	int err = 0;

	*out = NULL;
	if (!pe) {
		close(fd);
		return -ENOMEM;
	}
	pe->o = *o;
	pe->fd = fd;
	pe->cbytes = CZFS_BLOCK_SIZE << o->cluster_shift;
	pe->nslots = MAX(o->jobs, 1u) * PE_SLOTS_PER_JOB;
	pthread_mutex_init(&pe->lock, NULL);
	pthread_cond_init(&pe->cv_free, NULL);
	pthread_cond_init(&pe->cv_ready, NULL);
	pe->slots = calloc(pe->nslots, sizeof(*pe->slots));
	pe->workers = calloc(MAX(o->jobs, 1u), sizeof(*pe->workers));
	if (!pe->slots || !pe->workers)
		err = -ENOMEM;
	for (unsigned i = 0; !err && i < pe->nslots; i++)
		if (!(pe->slots[i].in = malloc(pe->cbytes)))
			err = -ENOMEM;
	if (!err && !o->jobs) {		/* encoding in mk_preenc_submit */
		pe->codec = czfs_codec_new();
		pe->out = malloc(CZFS_MAX_CLUSTER_SIZE + CZFS_BLOCK_SIZE);
		if (!pe->codec || !pe->out)
			err = -ENOMEM;
	}
	while (!err && pe->nworkers < o->jobs) {
		err = -pthread_create(&pe->workers[pe->nworkers], NULL,
				      worker_main, pe);
		if (!err)
			pe->nworkers++;
	}
	if (err) {
		mk_preenc_finish(pe);
		mk_preenc_free(pe);
		return err;
	}
	*out = pe;
	return 0;
}

uint8_t *mk_preenc_buf(struct mk_preenc *pe, bool wait)
{
	pthread_mutex_lock(&pe->lock);
	if (!pe->filling && pe->nents >= PE_INDEX_MAX / sizeof(*pe->ents)) {
		pthread_mutex_unlock(&pe->lock);
		return NULL;	/* the rest is the pipeline's */
	}
	while (!pe->filling && !pe->err) {
		for (unsigned i = 0; !pe->filling && i < pe->nslots; i++)
			if (pe->slots[i].state == PE_FREE) {
				pe->filling = &pe->slots[i];
				pe->filling->state = PE_FILLING;
			}
		if (pe->filling || !wait)
			break;
		pthread_cond_wait(&pe->cv_free, &pe->lock);
	}
	pthread_mutex_unlock(&pe->lock);
	return pe->err || !pe->filling ? NULL : pe->filling->in;
}

void mk_preenc_submit(struct mk_preenc *pe, uint64_t off)
{
	struct pe_slot *s = pe->filling;

	pthread_mutex_lock(&pe->lock);
	if (pe->nents == pe->cap) {
		uint64_t cap = pe->cap ? pe->cap * 2 : 1024;
		struct pe_entry *v = realloc(pe->ents, cap * sizeof(*v));

		if (!v) {
			pe->err = -ENOMEM;
			pthread_cond_broadcast(&pe->cv_ready);
			pthread_mutex_unlock(&pe->lock);
			return;
		}
		pe->ents = v;
		pe->cap = cap;
	}
	s->off = off;
	s->seq = pe->nents++;
	s->state = pe->o.jobs ? PE_READY : PE_BUSY;
	pe->filling = NULL;
	pthread_cond_signal(&pe->cv_ready);
	pthread_mutex_unlock(&pe->lock);
	if (!pe->o.jobs)
		encode_slot(pe, s, pe->codec, pe->out);
}

int mk_preenc_finish(struct mk_preenc *pe)
{
	pthread_mutex_lock(&pe->lock);
	pe->done = true;
	pthread_cond_broadcast(&pe->cv_ready);
	pthread_mutex_unlock(&pe->lock);
	for (unsigned i = 0; i < pe->nworkers; i++)
		pthread_join(pe->workers[i], NULL);
	pe->nworkers = 0;
	return pe->err;
}

static int entry_cmp(const void *key, const void *ent)
{
	uint64_t off = *(const uint64_t *)key;
	const struct pe_entry *e = ent;

	return off < e->off ? -1 : off > e->off;
}

/* The entry of the cluster at spool offset off (offsets are unique and
 * sorted), or NULL. */
static const struct pe_entry *find(const struct mk_preenc *pe, uint64_t off)
{
	if (pe->err || !pe->nents)
		return NULL;
	return bsearch(&off, pe->ents, pe->nents, sizeof(*pe->ents), entry_cmp);
}

bool mk_preenc_has(const struct mk_preenc *pe, uint64_t off)
{
	return find(pe, off) != NULL;
}

int mk_preenc_get(const struct mk_preenc *pe, uint64_t off, void *out,
		  struct czfs_cluster_info *ci, unsigned *out_len)
{
	const struct pe_entry *e = find(pe, off);

	if (!e)
		return 0;
	if (e->len && pread(pe->fd, out, e->len, (off_t)e->at) != (ssize_t)e->len)
		return -EIO;
	*ci = e->ci;
	ci->inline_data = out;
	*out_len = e->len;
	return 1;
}

void mk_preenc_free(struct mk_preenc *pe)
{
	if (!pe)
		return;
	for (unsigned i = 0; pe->slots && i < pe->nslots; i++)
		free(pe->slots[i].in);
	free(pe->slots);
	free(pe->workers);
	free(pe->ents);
	czfs_codec_free(pe->codec);
	free(pe->out);
	pthread_mutex_destroy(&pe->lock);
	pthread_cond_destroy(&pe->cv_free);
	pthread_cond_destroy(&pe->cv_ready);
	close(pe->fd);
	free(pe);
}
