// SPDX-License-Identifier: MIT
/*
 * The single writer.  Blocks come from a bump allocator: everything is
 * written once and in order, so "next free block" is the whole state and
 * the image is as long as what it holds.  The real space map is built at
 * the end, when the final size is known (a fresh map cannot shrink, and
 * without -s its size is the content's).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bdev.h"
#include "btree.h"
#include "cluster.h"
#include "crc32c.h"
#include "dir.h"
#include "hash.h"
#include "image.h"
#include "inode.h"
#include "packing.h"
#include "pipeline.h"
#include "progress.h"
#include "scan.h"
#include "spacemap.h"
#include "super.h"
#include "util.h"
#include "xattr.h"

#define MK_BATCH_BYTES	(4u << 20)	/* one pwrite(2) */
#define MK_FLUSH_STEP	(64ull << 20)	/* data flushed while writing */
#define MK_RECORDS_CAP	(2 * CZFS_BLOCK_SIZE)
#define MK_RECORD_MAX	(sizeof(struct czfs_xattr_entry) + CZFS_XATTR_NAME_MAX + \
			 CZFS_XATTR_INLINE_MAX)

struct mk_range {
	uint64_t blkaddr, n;
};

/* A name to sort by (hash, name) for XATTR and DENTRY items. */
struct mk_named {
	uint64_t hash;
	const char *name;
	unsigned idx;
};

/* The I/O thread and its two batch buffers. */
struct mk_io {
	struct czfs_bdev *bdev;
	int fd;				/* for sync_file_range, or -1 */
	uint8_t *buf[2];
	pthread_t thread;
	bool inited, started;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	bool busy, quit;		/* a write is in flight / stop */
	const uint8_t *wbuf;
	size_t wlen;
	uint64_t woff;
	uint64_t written;		/* bytes written so far */
	int err;
	pthread_t flusher;
	bool fstarted;
};

struct mk_image {
	struct czfs_bdev *bdev;
	const struct mk_tree *t;
	const struct mk_image_opts *o;
	struct mk_progress *pr;
	struct czfs_allocator alloc;
	uint64_t next;			/* next free block */
	bool overflow;			/* past o->size_blocks: stop writing */
	struct mk_range *freed;
	unsigned nfreed;
	struct mk_io io;
	uint8_t *batch;			/* the io buffer being filled */
	uint64_t batch_blk;
	size_t batch_len;
	struct czfs_btree_builder *bld;
	uint64_t seed[2];
	uint32_t incompat;
	void *inode_item;		/* the builder's copy, for blocks */
	uint64_t inode_blocks;
	uint64_t inode_inline;		/* its inline payload bytes */
	uint8_t *records;		/* MK_RECORDS_CAP */
	uint8_t *pad;			/* one block */
	struct mk_named *named;
	unsigned named_cap;
	struct mk_packs *packs;
	uint64_t cur_ino;		/* the inode being written */
};

/* ---- allocation and batched writes -------------------------------------- */

static int bump_alloc(struct czfs_allocator *a, uint64_t n, uint64_t *blkaddr)
{
	struct mk_image *im = container_of(a, struct mk_image, alloc);

	if (!n || n > (UINT64_MAX >> CZFS_BLOCK_SHIFT) - im->next)
		return -ENOSPC;
	*blkaddr = im->next;
	im->next += n;
	if (im->o->size_blocks && im->next > im->o->size_blocks)
		im->overflow = true;
	return 0;
}

/* The builder never frees, but keep the map exact if it ever does. */
static void bump_free(struct czfs_allocator *a, uint64_t blkaddr, uint64_t n)
{
	struct mk_image *im = container_of(a, struct mk_image, alloc);
	struct mk_range *r;

	if (blkaddr + n == im->next) {
		im->next = blkaddr;
		return;
	}
	r = realloc(im->freed, (im->nfreed + 1) * sizeof(*r));
	if (!r)
		return;		/* the blocks merely stay marked used */
	im->freed = r;
	r[im->nfreed++] = (struct mk_range){ blkaddr, n };
}

/*
 * Batched writes go through an I/O thread with two buffers: one is filled
 * while the other is written, so the writer never waits for a write unless
 * the disk is slower than compression.  Writeback of each batch starts at
 * once.  (O_DIRECT measured slower: it makes each write wait for the disk.)
 */
static void *io_main(void *arg)
{
	struct mk_io *io = arg;
	int err;

	pthread_mutex_lock(&io->lock);
	for (;;) {
		while (!io->busy && !io->quit)
			pthread_cond_wait(&io->cv, &io->lock);
		if (!io->busy)
			break;
		pthread_mutex_unlock(&io->lock);
		err = czfs_bdev_write(io->bdev, io->wbuf, io->wlen, io->woff);
		if (!err && io->fd >= 0)
			sync_file_range(io->fd, (off_t)io->woff, (off_t)io->wlen,
					SYNC_FILE_RANGE_WRITE);
		pthread_mutex_lock(&io->lock);
		if (err && !io->err)
			io->err = err;
		io->written += io->wlen;
		io->busy = false;
		pthread_cond_broadcast(&io->cv);
	}
	pthread_mutex_unlock(&io->lock);
	return NULL;
}

/*
 * Flush the data written so far every MK_FLUSH_STEP bytes, beside the
 * writes: the device's cache then empties while we still compress, and
 * the flushes that order checkpoint and superblock find little to do.
 */
static void *flush_main(void *arg)
{
	struct mk_io *io = arg;
	uint64_t done = 0;
	int err;

	pthread_mutex_lock(&io->lock);
	for (;;) {
		while (io->written - done < MK_FLUSH_STEP && !io->quit)
			pthread_cond_wait(&io->cv, &io->lock);
		if (io->quit)
			break;
		done = io->written;
		pthread_mutex_unlock(&io->lock);
		err = czfs_bdev_flush(io->bdev);
		pthread_mutex_lock(&io->lock);
		if (err && !io->err)
			io->err = err;
	}
	pthread_mutex_unlock(&io->lock);
	return NULL;
}

/* Wait for the write in flight; returns the first write error. */
static int io_wait(struct mk_io *io)
{
	int err;

	pthread_mutex_lock(&io->lock);
	while (io->busy)
		pthread_cond_wait(&io->cv, &io->lock);
	err = io->err;
	pthread_mutex_unlock(&io->lock);
	return err;
}

static int batch_flush(struct mk_image *im)
{
	struct mk_io *io = &im->io;
	int err;

	if (!im->batch_len || im->overflow) {
		im->batch_len = 0;
		return 0;
	}
	err = io_wait(io);
	if (err)
		return err;
	pthread_mutex_lock(&io->lock);
	io->wbuf = im->batch;
	io->wlen = im->batch_len;
	io->woff = im->batch_blk << CZFS_BLOCK_SHIFT;
	io->busy = true;
	pthread_cond_broadcast(&io->cv);
	pthread_mutex_unlock(&io->lock);
	im->batch = im->batch == io->buf[0] ? io->buf[1] : io->buf[0];
	im->batch_len = 0;
	return 0;
}

static int io_start(struct mk_image *im)
{
	struct mk_io *io = &im->io;
	int err;

	io->bdev = im->bdev;
	io->fd = czfs_bdev_fd(im->bdev);
	io->buf[0] = aligned_alloc(CZFS_BLOCK_SIZE, MK_BATCH_BYTES);
	io->buf[1] = aligned_alloc(CZFS_BLOCK_SIZE, MK_BATCH_BYTES);
	if (!io->buf[0] || !io->buf[1])
		return -ENOMEM;
	im->batch = io->buf[0];
	pthread_mutex_init(&io->lock, NULL);
	pthread_cond_init(&io->cv, NULL);
	io->inited = true;
	err = pthread_create(&io->thread, NULL, io_main, io);
	if (err)
		return -err;
	io->started = true;
	err = pthread_create(&io->flusher, NULL, flush_main, io);
	if (err)
		return -err;
	io->fstarted = true;
	return 0;
}

/* Write what is queued (if write), wait for it, stop the threads. */
static int io_stop(struct mk_image *im, bool write)
{
	struct mk_io *io = &im->io;
	int err = 0;

	if (!io->started)
		return 0;
	if (write)
		err = batch_flush(im);
	io_wait(io);
	pthread_mutex_lock(&io->lock);
	io->quit = true;
	pthread_cond_broadcast(&io->cv);
	pthread_mutex_unlock(&io->lock);
	pthread_join(io->thread, NULL);
	if (io->fstarted)
		pthread_join(io->flusher, NULL);
	io->started = io->fstarted = false;
	return err ? err : io->err;
}

static void io_free(struct mk_io *io)
{
	if (io->inited) {
		pthread_mutex_destroy(&io->lock);
		pthread_cond_destroy(&io->cv);
	}
	free(io->buf[0]);
	free(io->buf[1]);
}

/* Queue len bytes (whole blocks, <= MK_BATCH_BYTES) for blkaddr. */
static int batch_add(struct mk_image *im, uint64_t blkaddr, const void *data,
		     size_t len)
{
	uint64_t end = im->batch_blk + (im->batch_len >> CZFS_BLOCK_SHIFT);
	int err;

	if (im->batch_len &&
	    (blkaddr != end || im->batch_len + len > MK_BATCH_BYTES)) {
		err = batch_flush(im);
		if (err)
			return err;
	}
	if (!im->batch_len)
		im->batch_blk = blkaddr;
	memcpy(im->batch + im->batch_len, data, len);
	im->batch_len += len;
	return 0;
}

/* Store len bytes in fresh blocks, the last one zero-padded. */
static int write_value(struct mk_image *im, const void *data, size_t len,
		       uint64_t *blkaddr)
{
	size_t whole = len & ~(size_t)(CZFS_BLOCK_SIZE - 1);
	uint64_t n = DIV_ROUND_UP(len, CZFS_BLOCK_SIZE);
	int err;

	err = im->alloc.alloc(&im->alloc, n, blkaddr);
	if (!err && whole)
		err = batch_add(im, *blkaddr, data, whole);
	if (!err && whole < len) {
		memset(im->pad, 0, CZFS_BLOCK_SIZE);
		memcpy(im->pad, (const uint8_t *)data + whole, len - whole);
		err = batch_add(im, *blkaddr + n - 1, im->pad, CZFS_BLOCK_SIZE);
	}
	im->inode_blocks += n;
	return err;
}

/* ---- items ---------------------------------------------------------------- */

static int add_item(struct mk_image *im, uint64_t ino, unsigned type,
		    uint64_t offset, const void *val, unsigned len,
		    void **stored)
{
	struct czfs_key key = { .objectid = ino, .type = (uint8_t)type,
				.offset = offset };

	return czfs_btree_builder_add(im->bld, &key, val, len, stored);
}

static void inode_info(const struct mk_image *im, const struct mk_inode *ip,
		       struct czfs_inode_info *ii)
{
	const struct mk_image_opts *o = im->o;
	bool dir = S_ISDIR(ip->mode);

	memset(ii, 0, sizeof(*ii));
	ii->ino = ip->ino;
	ii->mode = ip->mode;
	ii->nlink = ip->nlink;
	ii->uid = ip->uid;
	ii->gid = ip->gid;
	ii->size = dir ? ip->ndents : ip->size;
	ii->atime = o->fixed_time ? o->create_time : ip->atime;
	ii->mtime = o->fixed_time ? o->create_time : ip->mtime;
	ii->ctime = o->fixed_time ? o->create_time : ip->ctime;
	ii->btime = o->create_time;	/* born in this image */
	ii->rdev_major = ip->rdev_major;
	ii->rdev_minor = ip->rdev_minor;
	ii->parent = dir ? ip->parent : 0;
	ii->alg = o->alg;
	ii->level = o->level;
	ii->cluster_shift = o->cluster_shift;
	ii->nentries = dir ? ip->ndents : 0;
}

static int named_cmp(const void *a, const void *b)
{
	const struct mk_named *x = a, *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int named_reserve(struct mk_image *im, unsigned n)
{
	struct mk_named *v;

	if (n <= im->named_cap)
		return 0;
	v = realloc(im->named, n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	im->named = v;
	im->named_cap = n;
	return 0;
}

/* Append record idx of ip to dst; returns its size or -errno. */
typedef int (*record_fn)(struct mk_image *im, const struct mk_inode *ip,
			 unsigned idx, uint8_t *dst);
/* The name of record idx of ip. */
typedef const char *(*name_fn)(const struct mk_inode *ip, unsigned idx,
			       unsigned *len);

/* Sort the n records of ip by (hash, name); add one item per hash. */
static int add_hashed(struct mk_image *im, const struct mk_inode *ip,
		      unsigned type, unsigned n, name_fn name, record_fn fn)
{
	struct mk_named *v;
	unsigned i, j, len;
	int err = named_reserve(im, n);

	if (err || !n)
		return err;
	v = im->named;
	for (i = 0; i < n; i++) {
		v[i].name = name(ip, i, &len);
		v[i].hash = czfs_name_hash(im->seed, v[i].name, len);
		v[i].idx = i;
	}
	qsort(v, n, sizeof(*v), named_cmp);
	for (i = 0; i < n && !err; i = j) {
		len = 0;
		for (j = i; j < n && v[j].hash == v[i].hash; j++) {
			if (len + MK_RECORD_MAX > MK_RECORDS_CAP)
				return -E2BIG;
			err = fn(im, ip, v[j].idx, im->records + len);
			if (err < 0)
				return err;
			len += (unsigned)err;
		}
		err = add_item(im, ip->ino, type, v[i].hash, im->records, len,
			       NULL);
	}
	return err;
}

static int xattr_record(struct mk_image *im, const struct mk_inode *ip,
			unsigned idx, uint8_t *dst)
{
	const struct mk_xattr *x = &ip->xattrs[idx];
	uint64_t blkaddr = 0;
	uint32_t crc = 0;

	if (x->value_len > CZFS_XATTR_INLINE_MAX) {
		int err = write_value(im, x->value, x->value_len, &blkaddr);

		if (err)
			return err;
		crc = czfs_crc32c(0, x->value, x->value_len);
	}
	return (int)czfs_xattr_encode(dst, x->name, x->name_len, x->value,
				      x->value_len, blkaddr, crc);
}

static int dentry_record(struct mk_image *im, const struct mk_inode *ip,
			 unsigned idx, uint8_t *dst)
{
	const struct mk_dentry *de = &ip->dents[idx];

	return (int)czfs_dentry_encode(dst, de->inode->ino,
				       czfs_mode_to_dtype(de->inode->mode),
				       de->name, de->name_len);
}

static const char *xattr_name(const struct mk_inode *ip, unsigned idx,
			      unsigned *len)
{
	*len = ip->xattrs[idx].name_len;
	return ip->xattrs[idx].name;
}

static const char *dentry_name(const struct mk_inode *ip, unsigned idx,
			       unsigned *len)
{
	*len = ip->dents[idx].name_len;
	return ip->dents[idx].name;
}

/* INODE, XATTR and DENTRY items; CLUSTER items follow from the chunks. */
static int begin_inode(struct mk_image *im, const struct mk_inode *ip)
{
	struct czfs_inode_info ii;
	struct czfs_inode di;
	int err;

	inode_info(im, ip, &ii);
	czfs_inode_encode(&ii, &di);
	im->inode_blocks = 0;
	im->inode_inline = 0;
	err = add_item(im, ip->ino, CZFS_ITEM_INODE, 0, &di, sizeof(di),
		       &im->inode_item);
	if (!err)
		err = add_hashed(im, ip, CZFS_ITEM_XATTR, ip->nxattrs,
				 xattr_name, xattr_record);
	if (!err && S_ISDIR(ip->mode))
		err = add_hashed(im, ip, CZFS_ITEM_DENTRY, ip->ndents,
				 dentry_name, dentry_record);
	return err;
}

/* Its data is all written: patch the counts into the INODE item. */
static void end_inode(struct mk_image *im)
{
	__le64 blocks = cpu_to_le64(im->inode_blocks);
	__le64 inl = cpu_to_le64(im->inode_inline);

	memcpy((uint8_t *)im->inode_item + offsetof(struct czfs_inode, blocks),
	       &blocks, sizeof(blocks));
	memcpy((uint8_t *)im->inode_item +
	       offsetof(struct czfs_inode, inline_bytes), &inl, sizeof(inl));
}


static int share_cluster(struct mk_image *im, uint64_t index,
			 struct czfs_cluster_info *ci)
{
	struct czfs_cluster_info stored = *ci;
	int err;

	if (stored.kind == CZFS_CLUSTER_COMPRESSED)
		im->incompat |= czfs_alg_feature(stored.alg);
	err = mk_packs_share(im->packs, im->cur_ino, index, &stored, ci);
	if (err)
		return err;
	im->incompat |= CZFS_FEATURE_INCOMPAT_PACKED;
	im->inode_inline += czfs_cluster_shared_bytes(ci);
	return 0;
}

/* A cluster of the file a copy shares: its item in the copy. */
static int add_copied(void *arg, uint64_t index, const struct czfs_cluster_info *ci)
{
	uint8_t val[sizeof(struct czfs_cluster) + CZFS_INLINE_MAX];
	struct mk_image *im = arg;

	im->pr->bytes_in += ci->ulen;		/* not read, but done */
	im->inode_inline += czfs_cluster_shared_bytes(ci);
	return add_item(im, im->cur_ino, CZFS_ITEM_CLUSTER, index, val,
			czfs_cluster_item_encode(ci, val), NULL);
}

static int add_cluster(struct mk_image *im, uint64_t ino,
		       const struct mk_chunk *c, const struct mk_cluster *cl)
{
	uint8_t val[sizeof(struct czfs_cluster) + CZFS_INLINE_MAX];
	struct czfs_cluster_info ci = cl->ci;
	unsigned len;
	int err;

	switch (ci.kind) {
	case CZFS_CLUSTER_HOLE:
		return 0;
	case CZFS_CLUSTER_RAW:
	case CZFS_CLUSTER_COMPRESSED:
		err = im->alloc.alloc(&im->alloc, ci.nblocks, &ci.blkaddr);
		if (!err)
			err = batch_add(im, ci.blkaddr, c->out + cl->out_off,
					cl->out_len);
		if (!err && c->shared)	/* a pack of its own, for its copies */
			err = share_cluster(im, cl->index, &ci);
		if (err)
			return err;
		if (ci.kind != CZFS_CLUSTER_PACKED)
			im->inode_blocks += ci.nblocks;
		break;
	default:
		im->inode_inline += ci.inline_len;
		break;
	}
	if (ci.kind == CZFS_CLUSTER_COMPRESSED ||
	    ci.kind == CZFS_CLUSTER_INLINE_COMPRESSED)
		im->incompat |= czfs_alg_feature(ci.alg);
	im->pr->bytes_out += cl->out_len;
	len = czfs_cluster_item_encode(&ci, val);
	return add_item(im, ino, CZFS_ITEM_CLUSTER, cl->index, val, len, NULL);
}

/* A pack: its blocks now, its members' items with their inodes. */
static int add_pack(struct mk_image *im, const struct mk_chunk *c)
{
	struct czfs_cluster_info ci;
	int err;

	im->pr->bytes_in += c->in_bytes;
	if (!c->nclusters)	/* copies only */
		return mk_packs_add(im->packs, 0, NULL, c->members, c->nmembers,
				    c->new_window);
	ci = c->cl[0].ci;
	err = im->alloc.alloc(&im->alloc, ci.nblocks, &ci.blkaddr);
	if (!err)
		err = batch_add(im, ci.blkaddr, c->out, c->cl[0].out_len);
	if (err)
		return err;
	im->pr->bytes_out += c->cl[0].out_len;
	if (ci.kind == CZFS_CLUSTER_COMPRESSED)
		im->incompat |= czfs_alg_feature(ci.alg);
	return mk_packs_add(im->packs, c->seq, &ci, c->members, c->nmembers,
			    c->new_window);
}

/* The inode's cluster in a pack, if it has one (its last). */
static int add_packed(struct mk_image *im, uint64_t ino)
{
	uint8_t val[sizeof(struct czfs_cluster) + CZFS_INLINE_MAX];
	struct czfs_cluster_info ci;
	uint64_t idx;

	if (!mk_packs_member(im->packs, ino, &idx, &ci))
		return 0;
	im->incompat |= CZFS_FEATURE_INCOMPAT_PACKED;
	im->inode_inline += czfs_cluster_shared_bytes(&ci);
	return add_item(im, ino, CZFS_ITEM_CLUSTER, idx, val,
			czfs_cluster_item_encode(&ci, val), NULL);
}

static int add_pack_item(void *arg, uint64_t blkaddr, const void *val,
			 unsigned len)
{
	return add_item(arg, CZFS_PACK_OBJECTID, CZFS_ITEM_PACK, blkaddr, val,
			len, NULL);
}

static int add_chunk(struct mk_image *im, const struct mk_chunk *c)
{
	int err = 0;

	for (unsigned i = 0; i < c->nclusters && !err; i++)
		err = add_cluster(im, c->ino, c, &c->cl[i]);
	im->pr->bytes_in += c->in_bytes;
	return err;
}

/* Every inode in order, each followed by its data as the pipe delivers it. */
static int write_inodes(struct mk_image *im, struct mk_pipe *p)
{
	struct mk_chunk *c = mk_pipe_next(p);
	int err = 0;

	for (uint64_t i = 0; i < im->t->count && !err; i++) {
		const struct mk_inode *ip = im->t->inodes[i];

		im->cur_ino = ip->ino;
		err = begin_inode(im, ip);
		while (!err && c && c->ino == ip->ino) {
			err = c->pack ? add_pack(im, c) : add_chunk(im, c);
			mk_pipe_release(p, c);
			c = err ? NULL : mk_pipe_next(p);
		}
		if (!err && ip->copy_of)
			err = mk_packs_copy(im->packs, ip->copy_of->ino,
					    add_copied, im);
		if (!err)
			err = add_packed(im, ip->ino);
		end_inode(im);
		if (!S_ISDIR(ip->mode))
			im->pr->files++;
		mk_progress_update(im->pr);
	}
	return err ? err : mk_packs_emit(im->packs, add_pack_item, im);
}

/* ---- space map, checkpoint, superblock ------------------------------------ */

/* Blocks of the space map of an image of max blocks (bitmaps + index). */
static uint64_t smap_blocks(uint64_t max)
{
	uint64_t nb = DIV_ROUND_UP(max, CZFS_SMAP_BITS_PER_BLOCK);

	return nb + DIV_ROUND_UP(nb, CZFS_SMAP_ENTRIES_PER_INDEX);
}

/* The smallest image holding used blocks plus its own space map. */
static uint64_t fit_size(uint64_t used)
{
	uint64_t m = used, n;

	while ((n = used + smap_blocks(m)) != m)
		m = n;
	return m;
}

static int write_smap(struct mk_image *im, uint64_t max,
		      struct czfs_cp_info *cp)
{
	struct czfs_smap sm;
	int err;

	err = czfs_smap_init(&sm, max);
	if (err)
		return err;
	err = czfs_smap_set_used(&sm, CZFS_FIRST_DATA_BLKADDR,
				 im->next - CZFS_FIRST_DATA_BLKADDR);
	for (unsigned i = 0; !err && i < im->nfreed; i++)
		czfs_smap_free(&sm, im->freed[i].blkaddr, im->freed[i].n);
	if (!err)
		err = czfs_smap_write(&sm, im->bdev, 1, cp);
	czfs_smap_destroy(&sm);
	return err;
}

static void super_fill(const struct mk_image *im, uint64_t max,
		       struct czfs_sb_info *sb)
{
	const struct mk_image_opts *o = im->o;

	czfs_super_init(sb);
	memcpy(sb->uuid, o->uuid, sizeof(sb->uuid));
	sb->hash_seed[0] = im->seed[0];
	sb->hash_seed[1] = im->seed[1];
	memcpy(sb->label, o->label, sizeof(sb->label));
	sb->max_blocks = max;
	sb->create_time = o->create_time.tv_sec;
	sb->create_nsec = (uint32_t)o->create_time.tv_nsec;
	sb->default_alg = o->alg;
	sb->default_level = o->level;
	sb->cluster_shift = o->cluster_shift;
	sb->feature_incompat = im->incompat;
	sb->feature_ro_compat = CZFS_FEATURE_RO_COMPAT_INLINE_BYTES;
}

/* Checkpoint, then superblock, each after a flush of what it names. */
static int commit(struct mk_image *im, const struct czfs_sb_info *sb,
		  const struct czfs_cp_info *cp)
{
	int err;

	err = czfs_bdev_flush(im->bdev);
	if (!err)
		err = czfs_cp_write(im->bdev, sb, cp);
	if (!err)
		err = czfs_bdev_flush(im->bdev);
	if (err)
		return err;
	err = czfs_super_write(im->bdev, sb);
	return err ? err : czfs_bdev_flush(im->bdev);
}

static int finish(struct mk_image *im, struct mk_image_stats *st)
{
	const struct mk_image_opts *o = im->o;
	struct czfs_cp_info cp = { 0 };
	struct czfs_sb_info sb;
	uint64_t root = 0, max;
	unsigned level = 0;
	int err;

	err = io_stop(im, true);
	if (!err)
		err = czfs_btree_builder_finish(im->bld, &root, &level);
	max = o->size_blocks ? o->size_blocks : fit_size(im->next);
	if (im->overflow || im->next + smap_blocks(max) > max) {
		st->need_blocks = fit_size(im->next);
		return -ENOSPC;
	}
	if (!err)
		err = write_smap(im, max, &cp);
	if (err)
		return err;
	cp.generation = 1;
	cp.root_blkaddr = root;
	cp.root_generation = 1;
	cp.root_level = level;
	cp.flags = CZFS_CP_CLEAN_UMOUNT;
	cp.next_ino = im->t->count + 1;
	cp.inode_count = im->t->count;
	cp.commit_time = o->create_time.tv_sec;
	cp.commit_nsec = (uint32_t)o->create_time.tv_nsec;
	if (o->sparse)
		cp.image_blocks = max;
	st->image_blocks = cp.image_blocks;
	err = im->bdev->ops->resize(im->bdev,
				    cp.image_blocks << CZFS_BLOCK_SHIFT);
	if (err)
		return err;
	super_fill(im, max, &sb);
	return commit(im, &sb, &cp);
}

/* ---- entry point ------------------------------------------------------------ */

/* The name-hash key: derived from the uuid, so -U gives the same image. */
static void derive_seed(const uint8_t uuid[16], uint64_t seed[2])
{
	static const uint64_t k0[2] = { 0x637a66732d6d6b66ull, 0x732d686173682d30ull };
	static const uint64_t k1[2] = { 0x637a66732d6d6b66ull, 0x732d686173682d31ull };

	seed[0] = czfs_siphash(k0, uuid, 16);
	seed[1] = czfs_siphash(k1, uuid, 16);
}

static int image_setup(struct mk_image *im)
{
	int err = io_start(im);

	if (err)
		return err;
	im->alloc.alloc = bump_alloc;
	im->alloc.free = bump_free;
	im->next = CZFS_FIRST_DATA_BLKADDR;
	im->records = malloc(MK_RECORDS_CAP);
	im->pad = aligned_alloc(CZFS_BLOCK_SIZE, CZFS_BLOCK_SIZE);
	if (!im->records || !im->pad)
		return -ENOMEM;
	derive_seed(im->o->uuid, im->seed);
	err = mk_packs_new(&im->packs);
	return err ? err : czfs_btree_builder_new(im->bdev, &im->alloc, 1,
						  &im->bld);
}

int mk_image_write(struct czfs_bdev *bdev, const struct mk_tree *t,
		   struct mk_pipe *p, const struct mk_image_opts *o,
		   struct mk_progress *pr, struct mk_image_stats *st)
{
	struct mk_image im = { .bdev = bdev, .t = t, .o = o, .pr = pr };
	int err, perr;

	memset(st, 0, sizeof(*st));
	err = image_setup(&im);
	if (!err)
		err = write_inodes(&im, p);
	mk_progress_end(pr);
	perr = mk_pipe_stop(p);	/* prints the reader's error, if any */
	if (perr && perr != -ECANCELED) {
		err = perr;
		st->reported = true;
	}
	if (!err)
		err = finish(&im, st);
	if (im.packs)
		mk_packs_stats(im.packs, &st->pack);
	mk_packs_free(im.packs);
	io_stop(&im, false);
	czfs_btree_builder_free(im.bld);
	io_free(&im.io);
	free(im.records);
	free(im.pad);
	free(im.named);
	free(im.freed);
	return err;
}
