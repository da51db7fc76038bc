// SPDX-License-Identifier: MIT
/* Packing small files and tails: windows, copies, PACK items (packing.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hash.h"
#include "pack.h"
#include "packing.h"
#include "scan.h"
#include "util.h"

#define WINDOW_EXT_BYTES	(4u << 20)	/* tails sorted together */
#define WINDOW_DATA_BYTES	(16ull << 20)	/* other data a window spans */

/* ---- the reader's side ---------------------------------------------------- */

struct seen {
	uint64_t h[2];			/* SipHash-2-4-128 of the bytes */
	uint64_t seq;
	uint32_t off, len;		/* len 0: a free slot */
};

struct mk_packer {
	struct mk_pack_opts o;
	unsigned cbytes;
	const struct mk_inode **members;
	unsigned cap;
	struct seen *seen;		/* open addressing, power of 2 */
	size_t seen_cap, seen_n;
	uint8_t *shared_len;		/* by tail length: 1 if two tails have it */
};

unsigned mk_pack_tail(const struct mk_packer *pk, const struct mk_inode *ip)
{
	/* a sparse file's clusters come from its data runs: not packed */
	if (!pk || !S_ISREG(ip->mode) || !ip->size || ip->maybe_sparse)
		return 0;
	return czfs_pack_tail(ip->size, pk->cbytes, pk->o.pack_max);
}

/*
 * Which tail lengths two members share: a tail whose length no other
 * tail has cannot be a copy, nor be copied, so it is never hashed.
 * Every member is known from the scan (each is in one window).
 */
static int count_lengths(struct mk_packer *pk, const struct mk_tree *t)
{
	uint8_t *once = calloc(pk->cbytes, 1);

	pk->shared_len = calloc(pk->cbytes, 1);
	if (!once || !pk->shared_len) {
		free(once);
		return -ENOMEM;
	}
	for (uint64_t i = 0; i < t->count; i++) {
		unsigned tail = mk_pack_tail(pk, t->inodes[i]);

		if (!tail)
			continue;
		pk->shared_len[tail] |= once[tail];
		once[tail] = 1;
	}
	free(once);
	return 0;
}

int mk_packer_new(const struct mk_pack_opts *o, unsigned cbytes,
		  const struct mk_tree *t, struct mk_packer **out)
{
	struct mk_packer *pk = calloc(1, sizeof(*pk));
	int err;

	if (!pk)
		return -ENOMEM;
	pk->o = *o;
	pk->cbytes = cbytes;
	err = o->dedup ? count_lengths(pk, t) : 0;
	if (err) {
		mk_packer_free(pk);
		return err;
	}
	*out = pk;
	return 0;
}

void mk_packer_free(struct mk_packer *pk)
{
	if (!pk)
		return;
	free(pk->members);
	free(pk->seen);
	free(pk->shared_len);
	free(pk);
}

static const char *ext_of(const char *path)
{
	const char *base = strrchr(path, '/'), *dot;

	base = base ? base + 1 : path;
	dot = strrchr(base, '.');
	return dot && dot != base ? dot + 1 : "";
}

static int cmp_ext(const void *a, const void *b)
{
	const struct mk_inode *x = *(const struct mk_inode *const *)a;
	const struct mk_inode *y = *(const struct mk_inode *const *)b;
	int c = strcmp(ext_of(x->path), ext_of(y->path));

	return c ? c : strcmp(x->path, y->path);
}

static int members_push(struct mk_packer *pk, unsigned n,
			const struct mk_inode *ip)
{
	if (CZFS_GROW(pk->members, n, pk->cap, 256))
		return -ENOMEM;
	pk->members[n] = ip;
	return 0;
}

int mk_pack_window(struct mk_packer *pk, const struct mk_tree *t,
		   uint64_t first, uint64_t *end, const struct mk_inode ***members,
		   unsigned *n)
{
	uint64_t budget = pk->o.sort == MK_SORT_EXT ?
			  MAX(WINDOW_EXT_BYTES, pk->o.pack_max) : pk->o.pack_max;
	uint64_t tails = 0, other = 0, i;
	int err = 0;

	*n = 0;
	for (i = first; i < t->count && !err; i++) {
		const struct mk_inode *ip = t->inodes[i];
		unsigned tail = mk_pack_tail(pk, ip);

		if (tail && tails + tail > budget)
			break;
		if (S_ISREG(ip->mode))
			other += ip->size - tail;
		if (i > first && other > WINDOW_DATA_BYTES)
			break;
		if (!tail)
			continue;
		tails += tail;
		err = members_push(pk, (*n)++, ip);
	}
	if (pk->o.sort == MK_SORT_EXT && *n > 1)
		qsort(pk->members, *n, sizeof(*pk->members), cmp_ext);
	*end = i;
	*members = pk->members;
	return err;
}

static int seen_grow(struct mk_packer *pk)
{
	size_t cap = pk->seen_cap ? pk->seen_cap * 2 : 4096;
	struct seen *s = calloc(cap, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < pk->seen_cap; i++) {
		const struct seen *e = &pk->seen[i];
		size_t k;

		if (!e->len)
			continue;
		for (k = e->h[0] & (cap - 1); s[k].len;
		     k = (k + 1) & (cap - 1))
			;
		s[k] = *e;
	}
	free(pk->seen);
	pk->seen = s;
	pk->seen_cap = cap;
	return 0;
}

int mk_pack_place(struct mk_packer *pk, const void *data, struct mk_member *m)
{
	static const uint64_t key[2] = { 0x6d6b66732d706163ull, 0x6b2d636f70792d30ull };
	uint64_t h[2];
	size_t k;

	if (!pk->o.dedup || !pk->shared_len[m->len])
		return 0;
	if ((pk->seen_n + 1) * 2 > pk->seen_cap && seen_grow(pk))
		return 0;		/* no memory: stored, not shared */
	czfs_siphash128(key, data, m->len, h);
	for (k = h[0] & (pk->seen_cap - 1); pk->seen[k].len;
	     k = (k + 1) & (pk->seen_cap - 1)) {
		const struct seen *e = &pk->seen[k];

		if (e->h[0] == h[0] && e->h[1] == h[1] && e->len == m->len) {
			m->seq = e->seq;
			m->off = e->off;
			return 1;
		}
	}
	pk->seen[k] = (struct seen){ { h[0], h[1] }, m->seq, m->off, m->len };
	pk->seen_n++;
	return 0;
}

/* ---- the consumer's side -------------------------------------------------- */

struct pack {
	struct czfs_cluster_info ci;	/* as stored, kind 0: none */
	uint32_t refs;
	uint64_t tag;			/* of a sliced pack not yet resolved */
};

/* A cluster of a copied file: its pack in fpacks. */
struct shared {
	uint64_t ino, index, fpack;
};

struct mk_packs {
	struct pack *packs;		/* by seq */
	uint64_t npacks, cap;
	struct pack *fpacks;		/* of copied files' clusters, in order */
	struct shared *shared;		/* the same, with their file */
	uint64_t nfpacks, fcap, scap;
	struct czfs_pack_info *runs;	/* runs of slices, in order */
	uint64_t nruns, rcap;
	struct mk_member *members;	/* of the window, sorted by ino */
	unsigned nmembers, mcap;
	bool sorted;
	struct mk_pack_stats st;
};

int mk_packs_new(struct mk_packs **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void mk_packs_free(struct mk_packs *ps)
{
	if (!ps)
		return;
	free(ps->packs);
	free(ps->fpacks);
	free(ps->runs);
	free(ps->shared);
	free(ps->members);
	free(ps);
}

static int pack_slot(struct mk_packs *ps, uint64_t seq)
{
	uint64_t old = ps->cap;

	if (CZFS_RESERVE(ps->packs, seq + 1, ps->cap, 0))
		return -ENOMEM;
	memset(ps->packs + old, 0, (ps->cap - old) * sizeof(*ps->packs));
	ps->npacks = MAX(ps->npacks, seq + 1);
	return 0;
}

int mk_packs_add(struct mk_packs *ps, uint64_t seq,
		 const struct czfs_cluster_info *ci, uint64_t tag,
		 const struct mk_member *m, unsigned n, bool new_window)
{
	int err;

	if (ci) {
		err = pack_slot(ps, seq);
		if (err)
			return err;
		ps->packs[seq].ci = *ci;
		ps->packs[seq].tag = tag;
		ps->st.packs++;
		if (ci->kind == CZFS_CLUSTER_SLICE) {
			ps->st.sliced++;
			ps->st.slice_bytes += ci->slice_len;
		} else {
			ps->st.blocks += ci->nblocks;
		}
		ps->st.bytes += ci->ulen;
	}
	if (new_window)
		ps->nmembers = 0;
	if (CZFS_RESERVE(ps->members, ps->nmembers + n, ps->mcap, 64))
		return -ENOMEM;
	if (n)		/* (a window of copies alone may place none) */
		memcpy(ps->members + ps->nmembers, m, n * sizeof(*m));
	ps->nmembers += n;
	ps->sorted = false;
	return 0;
}

static int cmp_ino(const void *a, const void *b)
{
	const struct mk_member *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

bool mk_packs_member(struct mk_packs *ps, uint64_t ino, uint64_t *index,
		     struct czfs_cluster_info *ci, uint64_t *tag)
{
	struct mk_member key = { .ino = ino }, *m;
	struct pack *p;

	if (!ps->nmembers)
		return false;
	if (!ps->sorted) {
		qsort(ps->members, ps->nmembers, sizeof(*ps->members), cmp_ino);
		ps->sorted = true;
	}
	m = bsearch(&key, ps->members, ps->nmembers, sizeof(*m), cmp_ino);
	if (!m || m->seq >= ps->npacks || !ps->packs[m->seq].ci.kind)
		return false;
	p = &ps->packs[m->seq];
	czfs_cluster_packed_make(&p->ci, m->off, m->len, ci);
	*tag = p->tag;
	*index = m->index;
	if (p->refs++ && m->copy) {
		ps->st.dedup++;
		ps->st.dedup_bytes += m->len;
	}
	ps->st.members++;
	ps->st.member_bytes += m->len;
	ps->st.alone_blocks += DIV_ROUND_UP(m->len, CZFS_BLOCK_SIZE);
	return true;
}

int mk_packs_share(struct mk_packs *ps, uint64_t ino, uint64_t index,
		   const struct czfs_cluster_info *ci,
		   struct czfs_cluster_info *packed)
{
	if (CZFS_GROW(ps->fpacks, ps->nfpacks, ps->fcap, 256) ||
	    CZFS_GROW(ps->shared, ps->nfpacks, ps->scap, 256))
		return -ENOMEM;
	ps->fpacks[ps->nfpacks] = (struct pack){ *ci, 1 };
	ps->shared[ps->nfpacks] = (struct shared){ ino, index, ps->nfpacks };
	ps->nfpacks++;
	czfs_cluster_packed_make(ci, 0, ci->ulen, packed);
	return 0;
}

/* The first cluster of ino in shared (in inode order), or NULL. */
static struct shared *first_shared(struct mk_packs *ps, uint64_t ino)
{
	uint64_t lo = 0, hi = ps->nfpacks;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (ps->shared[mid].ino < ino)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ps->nfpacks && ps->shared[lo].ino == ino ?
	       &ps->shared[lo] : NULL;
}

int mk_packs_copy(struct mk_packs *ps, uint64_t ino,
		  int (*add)(void *arg, uint64_t index,
			     const struct czfs_cluster_info *ci), void *arg)
{
	struct shared *s = first_shared(ps, ino);
	struct czfs_cluster_info ci;
	int err = 0;

	if (!s)		/* its clusters are all holes */
		return 0;
	for (; !err && s < ps->shared + ps->nfpacks && s->ino == ino; s++) {
		struct pack *p = &ps->fpacks[s->fpack];

		p->refs++;
		ps->st.copy_bytes += p->ci.ulen;
		czfs_cluster_packed_make(&p->ci, 0, p->ci.ulen, &ci);
		err = add(arg, s->index, &ci);
	}
	ps->st.copies++;
	return err;
}

int mk_packs_run(struct mk_packs *ps, const struct czfs_pack_info *run)
{
	if (CZFS_GROW(ps->runs, ps->nruns, ps->rcap, 256))
		return -ENOMEM;
	ps->runs[ps->nruns++] = *run;
	return 0;
}

int mk_packs_resolve(struct mk_packs *ps,
		     bool (*base_of)(void *arg, uint64_t tag, uint64_t *base),
		     void *arg)
{
	for (uint64_t i = 0; i < ps->npacks; i++) {
		struct pack *p = &ps->packs[i];
		uint64_t base;

		if (!p->tag)
			continue;
		if (!p->refs || !base_of(arg, p->tag, &base))
			return -EINVAL;	/* its run counts it: never unused */
		p->ci.blkaddr += base;
		p->ci.run += base;
		p->tag = 0;
	}
	return 0;
}

static int emit_one(const struct czfs_pack_info *pi, uint64_t *last,
		    int (*add)(void *arg, uint64_t key, const void *val,
			       unsigned len), void *arg)
{
	uint8_t val[sizeof(struct czfs_pack)];
	uint64_t key = czfs_pack_key(pi);

	if (key <= *last)	/* written in order: keys in order */
		return -EINVAL;
	*last = key;
	return add(arg, key, val, czfs_pack_item_encode(pi, val));
}

/* The PACK item of the next pack of list (n of them) from *i, if any,
 * sliced or not as asked. */
static bool next_pack(const struct pack *list, uint64_t n, uint64_t *i,
		      bool sliced, struct czfs_pack_info *pi)
{
	while (*i < n && (!list[*i].ci.kind || !list[*i].refs ||
			  (list[*i].ci.kind == CZFS_CLUSTER_SLICE) != sliced))
		++*i;		/* a seq never written, or no member left */
	if (*i >= n)
		return false;
	czfs_pack_of_stored(&list[*i].ci, list[*i].refs, pi);
	return true;
}

int mk_packs_emit(struct mk_packs *ps,
		  int (*add)(void *arg, uint64_t key, const void *val,
			     unsigned len), void *arg)
{
	uint64_t s = 0, f = 0, r = 0, last = 0;
	struct czfs_pack_info pi;
	int err = 0;

	/* the three lists are in the order written: merge them by address */
	for (;;) {
		struct czfs_pack_info a, b, *p = NULL;
		bool has_a = next_pack(ps->packs, ps->npacks, &s, false, &a);
		bool has_b = next_pack(ps->fpacks, ps->nfpacks, &f, false, &b);
		uint64_t *adv = NULL;

		if (has_a) {
			p = &a;
			adv = &s;
		}
		if (has_b && (!p || b.blkaddr < p->blkaddr)) {
			p = &b;
			adv = &f;
		}
		if (r < ps->nruns && (!p || ps->runs[r].blkaddr < p->blkaddr)) {
			p = &ps->runs[r];
			adv = &r;
		}
		if (!p)
			break;
		++*adv;
		err = emit_one(p, &last, add, arg);
		if (err)
			return err;
	}
	/* sliced packs' keys come after every block address, in the order
	 * their runs were written */
	for (s = 0; !err && next_pack(ps->packs, ps->npacks, &s, true, &pi); s++)
		err = emit_one(&pi, &last, add, arg);
	return err;
}

void mk_packs_stats(const struct mk_packs *ps, struct mk_pack_stats *st)
{
	*st = ps->st;
}
