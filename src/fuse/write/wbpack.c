// SPDX-License-Identifier: MIT
/* Packing small files at writeback: take, encode, link (wbpack.h). */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "btree.h"
#include "ccache.h"
#include "daemon.h"
#include "fs.h"
#include "log.h"
#include "minode.h"
#include "pack.h"
#include "pagepool.h"
#include "room.h"
#include "thread.h"
#include "util.h"
#include "wbpack.h"
#include "wentry.h"

/* Zeros throughout: writeback stores it as a hole, in no space at all,
 * where a pack would give it a share. */
static bool all_zero(struct czfs_daemon *dm, const struct czfs_centry *e,
		     uint32_t len)
{
	for (uint32_t at = 0; at < len; at += CZFS_BLOCK_SIZE)
		if (!czfs_is_zero(czfs_pool_addr(dm->pool, e->page + at / CZFS_BLOCK_SIZE),
				  MIN(CZFS_BLOCK_SIZE, len - at)))
			return false;
	return true;
}

bool czfs_wbpack_fits(struct czfs_daemon *dm, struct czfs_minode *mi,
		      struct czfs_wbpack_cand *c)
{
	const struct czfs_inode_info *ii = &mi->ii;
	uint32_t cbytes = czfs_inode_cluster_bytes(ii);
	const struct czfs_centry *e = mi->ndirty == 1 ? mi->dirty[0] : NULL;

	if (!e || !S_ISREG(ii->mode) || mi->unlinked || mi->direct_written ||
	    ii->prealloc || (ii->flags & CZFS_INODE_NOCOMPRESS) ||
	    ii->size >= cbytes ||
	    !czfs_pack_tail(ii->size, cbytes, CZFS_PACK_MAX_ULEN) ||
	    e->idx || e->len != ii->size || e->page == CZFS_NO_PAGE ||
	    atomic_load(&czfs_wentry_of(e)->partial) ||
	    dm->opts.nopack ||
	    (!dm->opts.no_zero_detect && all_zero(dm, e, (uint32_t)ii->size)))
		return false;
	*c = (struct czfs_wbpack_cand){ mi, mi->ino, ii->alg, ii->level,
					(uint32_t)ii->size };
	return true;
}

int czfs_wbpack_cmp(const void *a, const void *b)
{
	const struct czfs_wbpack_cand *x = a, *y = b;

	if (x->alg != y->alg)
		return x->alg < y->alg ? -1 : 1;
	if (x->level != y->level)
		return x->level < y->level ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

int czfs_wbpack_init(struct czfs_wbpack *pk)
{
	pk->n = 0;
	pk->in = malloc(CZFS_PACK_MAX_ULEN);
	/* written as it is: aligned for -o direct_io's O_DIRECT */
	pk->out = aligned_alloc(CZFS_BLOCK_SIZE,
				CZFS_MAX_CLUSTER_SIZE + CZFS_BLOCK_SIZE);
	return pk->in && pk->out ? 0 : -ENOMEM;
}

void czfs_wbpack_free(struct czfs_wbpack *pk)
{
	free(pk->in);
	free(pk->out);
	pk->in = pk->out = NULL;
}

/* Take mi's one dirty cluster if it still fits (its wb_lock held). */
static bool take_one(struct czfs_daemon *dm, const struct czfs_wbpack_cand *c,
		     struct czfs_wbpack_member *m)
{
	struct czfs_minode *mi = c->mi;
	struct czfs_wbpack_cand now;
	bool ok;

	pthread_mutex_lock(&mi->lock);
	ok = czfs_wbpack_fits(dm, mi, &now) && now.size == c->size &&
	     now.alg == c->alg && now.level == c->level;
	if (ok) {
		*m = (struct czfs_wbpack_member){
			.mi = mi, .e = mi->dirty[0],
			.seq = czfs_wentry_of(mi->dirty[0])->wseq, .len = now.size,
		};
		mi->ndirty = 0;		/* its hold on mi is ours now */
		mi->wb_pending = 0;	/* taken, not linked (czfs_mi_store) */
	}
	pthread_mutex_unlock(&mi->lock);
	return ok;
}

void czfs_wbpack_take(struct czfs_daemon *dm, const struct czfs_wbpack_cand *c,
		      unsigned n, unsigned *i, struct czfs_wbpack *pk)
{
	const struct czfs_wbpack_cand *first = &c[*i];
	uint32_t bytes = 0;

	pk->n = 0;
	pk->alg = first->alg;
	pk->level = first->level;
	for (; *i < n && pk->n < CZFS_WBPACK_MEMBERS; ++*i) {
		const struct czfs_wbpack_cand *x = &c[*i];

		if (x->alg != first->alg || x->level != first->level ||
		    bytes + x->size > CZFS_PACK_MAX_ULEN)
			break;
		if (pthread_mutex_trylock(&x->mi->wb_lock))
			continue;	/* in writeback elsewhere */
		if (!take_one(dm, x, &pk->m[pk->n])) {
			pthread_mutex_unlock(&x->mi->wb_lock);
			continue;
		}
		pk->m[pk->n].off = bytes;
		bytes += x->size;
		pk->n++;
	}
}

int czfs_wbpack_encode(struct czfs_daemon *dm, struct czfs_wbpack *pk)
{
	struct czfs_cluster_policy pol = { .alg = pk->alg, .level = pk->level };
	struct czfs_thread *t = czfs_fuse_thread();
	uint32_t bytes = 0;

	if (!t)
		return -ENOMEM;
	for (unsigned i = 0; i < pk->n; i++) {
		const struct czfs_wbpack_member *m = &pk->m[i];

		/* a cluster's pages are pool pages in a run, each copied */
		for (uint32_t at = 0; at < m->len; at += CZFS_BLOCK_SIZE)
			memcpy(pk->in + m->off + at,
			       czfs_pool_addr(dm->pool, m->e->page +
					      at / CZFS_BLOCK_SIZE),
			       MIN(CZFS_BLOCK_SIZE, m->len - at));
		bytes = m->off + m->len;
	}
	memset(&pk->stored, 0, sizeof(pk->stored));
	return czfs_pack_encode(t->codec, &pol, pk->in, bytes, pk->out,
				&pk->stored, &pk->out_len);
}

/* Point one member at its range of the pack and store its inode. */
static int link_member(struct czfs_fs *fs, const struct czfs_cluster_info *stored,
		       struct czfs_wbpack_member *m)
{
	struct czfs_minode *mi = m->mi;
	struct czfs_stored delta = { 0 };
	struct czfs_cluster_info ci;
	int err;

	czfs_cluster_packed_make(stored, m->off, m->len, &ci);
	err = czfs_cluster_write(fs, mi->ino, m->e->idx, &ci, &delta);
	m->done = !err;
	pthread_mutex_lock(&mi->lock);
	czfs_inode_add_stored(&mi->ii, &delta);
	if (!err && !mi->unlinked) {
		/* written again meanwhile: its new bytes are not linked */
		struct czfs_mi_link l = {
			.end = m->len,
			.pending = czfs_wentry_of(m->e)->wseq != m->seq ?
				   m->len : UINT64_MAX,
		};

		err = czfs_mi_store(fs, mi, &l);
		mi->ii_dirty = err != 0;
	}
	pthread_mutex_unlock(&mi->lock);
	return err;
}

int czfs_wbpack_link(struct czfs_daemon *dm, struct czfs_wbpack *pk)
{
	struct czfs_fs *fs = dm->fs;
	struct czfs_pack_info p;
	unsigned linked = 0;
	bool put = false;
	int err;

	czfs_pack_of_stored(&pk->stored, pk->n, &p);
	pthread_rwlock_wrlock(&fs->lock);
	err = czfs_fs_begin(fs);
	if (!err)
		err = czfs_pack_put(fs, &p);
	put = !err;
	for (unsigned i = 0; !err && i < pk->n; i++) {
		err = link_member(fs, &pk->stored, &pk->m[i]);
		linked += pk->m[i].done;
	}
	if (err && put)
		czfs_pack_settle(fs, &p, linked);
	if (!linked)
		czfs_room_give_back(dm, p.blkaddr, p.nblocks);
	atomic_fetch_add(&dm->items_version, 1);
	pthread_rwlock_unlock(&fs->lock);
	if (linked) {
		atomic_fetch_add(&dm->st.packed_files, linked);
		atomic_fetch_add(&dm->st.packs_written, 1);
	}
	return err;
}
