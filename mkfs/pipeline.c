// SPDX-License-Identifier: MIT
/*
 * The ring: chunk number n lives in slot n % nslots.  The reader fills
 * chunks in order, workers claim them in order (and may finish out of
 * order), the consumer takes them back in order.  Three counters under one
 * lock say where each party is; a chunk costs a few lock round trips,
 * nothing per cluster.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compress.h"
#include "pack.h"
#include "pipeline.h"
#include "preenc.h"
#include "prefetch.h"
#include "scan.h"
#include "util.h"

#define MK_CHUNK_BYTES	(256u << 10)	/* one read(2), one ring slot */
#define MK_PREFETCH_AHEAD (32ull << 20)	/* file data asked for ahead */

enum slot_state { SLOT_FREE, SLOT_READY, SLOT_BUSY, SLOT_DONE };

struct slot {
	struct mk_chunk c;
	enum slot_state state;
	uint8_t *in;
	uint64_t first_index;
	unsigned last_ulen;		/* of the chunk's last cluster */
	bool tail;			/* that cluster ends the file */
	bool unread;			/* in: all its clusters pre-encoded */
	unsigned members_cap;		/* of c.members */
};

struct mk_pipe {
	const struct mk_tree *t;
	struct mk_pipe_opts o;
	unsigned cbytes, chunk_bytes, nslots;
	struct slot *slots;
	pthread_mutex_t lock;
	pthread_cond_t cv_free, cv_ready, cv_done;
	uint64_t produced, claimed, consumed;
	bool eof, stop;
	int err;
	char msg[PATH_MAX + 128];	/* the reader's error message */
	pthread_t reader;
	bool reader_started;
	pthread_t *workers;
	unsigned nworkers;
	struct mk_packer *pk;		/* NULL: no packing */
	struct mk_prefetch *pf;		/* NULL: none (it is only a hint) */
	uint64_t next_seq;		/* of the next pack */
	/* a tar's spool, by SPOOL_CHUNK: bytes of its files not read for
	 * the last time yet (NULL: no spool, or no memory to count) */
	uint64_t *spool_left;
	uint64_t spool_chunks;
	uint64_t read_bytes;		/* read from the files (atomic) */
};

/* End the pipe: at its end (eof) or stopped, with err if not 0. */
static void pipe_end(struct mk_pipe *p, int err, bool eof)
{
	pthread_mutex_lock(&p->lock);
	if (!p->err)
		p->err = err;
	if (eof)
		p->eof = true;
	else
		p->stop = true;
	pthread_cond_broadcast(&p->cv_free);
	pthread_cond_broadcast(&p->cv_ready);
	pthread_cond_broadcast(&p->cv_done);
	pthread_mutex_unlock(&p->lock);
}

/* ---- reader ------------------------------------------------------------ */

static int read_fail(struct mk_pipe *p, const struct mk_inode *ip, int err)
{
	const char *root = p->t->root;
	size_t n = strlen(root);

	snprintf(p->msg, sizeof(p->msg), "mkfs.czfs: cannot read %s%s%s: %s",
		 root, n && root[n - 1] == '/' ? "" : "/", ip->path,
		 strerror(-err));
	return err;
}

static struct slot *slot_get(struct mk_pipe *p)
{
	struct slot *s = NULL;

	pthread_mutex_lock(&p->lock);
	while (!p->stop && p->produced - p->consumed >= p->nslots)
		pthread_cond_wait(&p->cv_free, &p->lock);
	if (!p->stop)
		s = &p->slots[p->produced % p->nslots];
	pthread_mutex_unlock(&p->lock);
	return s;
}

static void slot_submit(struct mk_pipe *p, struct slot *s)
{
	pthread_mutex_lock(&p->lock);
	s->state = SLOT_READY;
	p->produced++;
	pthread_cond_signal(&p->cv_ready);
	pthread_mutex_unlock(&p->lock);
}

static void slot_setup(struct mk_pipe *p, struct slot *s, uint64_t ino,
		       uint64_t pos, unsigned len, bool tail)
{
	s->c.ino = ino;
	s->c.pack = false;
	s->c.shared = false;
	s->c.nmembers = 0;
	s->c.in_bytes = len;
	s->c.nclusters = DIV_ROUND_UP(len, p->cbytes);
	s->first_index = pos / p->cbytes;
	s->last_ulen = len - (s->c.nclusters - 1) * p->cbytes;
	s->tail = tail;
	s->unread = false;
}

/*
 * Read len bytes at pos of a file that starts at base in fd; a file that
 * shrank since the scan reads as zeros.
 */
static int read_full(struct mk_pipe *p, const struct mk_inode *ip, int fd,
		     uint64_t base, uint8_t *buf, unsigned len, uint64_t pos)
{
	unsigned done = 0;

	while (done < len) {
		ssize_t n = pread(fd, buf + done, len - done,
				  (off_t)(base + pos + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return read_fail(p, ip, -errno);
		__atomic_add_fetch(&p->read_bytes, (uint64_t)n, __ATOMIC_RELAXED);
		if (n == 0) {
			fprintf(stderr, "mkfs.czfs: warning: %s/%s shrank while read\n",
				p->t->root, ip->path);
			memset(buf + done, 0, len - done);
			break;
		}
		done += (unsigned)n;
	}
	return 0;
}

/* Whether every cluster of [pos, pos + len) of ip was encoded while a
 * tar was read (preenc.h): then its bytes are not read again. */
static bool all_pre_encoded(const struct mk_pipe *p, const struct mk_inode *ip,
			    uint64_t pos, unsigned len)
{
	if (!p->t->pre || len % p->cbytes)
		return false;
	for (unsigned done = 0; done < len; done += p->cbytes)
		if (!mk_preenc_has(p->t->pre, ip->data_off + pos + done))
			return false;
	return true;
}

/* Read [start, end) of a file, chunk by chunk. */
static int read_run(struct mk_pipe *p, const struct mk_inode *ip, int fd,
		    uint64_t base, uint64_t start, uint64_t end)
{
	for (uint64_t pos = start; pos < end; pos += p->chunk_bytes) {
		unsigned len = (unsigned)MIN(p->chunk_bytes, end - pos);
		struct slot *s = slot_get(p);
		int err;

		if (!s)
			return -ECANCELED;
		slot_setup(p, s, ip->ino, pos, len, pos + len == ip->size);
		s->c.shared = ip->has_copies;
		s->unread = all_pre_encoded(p, ip, pos, len);
		if (s->unread)
			__atomic_add_fetch(&p->read_bytes, len, __ATOMIC_RELAXED);
		else if ((err = read_full(p, ip, fd, base, s->in, len, pos)))
			return err;
		slot_submit(p, s);
	}
	return 0;
}

/*
 * The next data run at or after off of a file that starts at base in fd:
 * [*data, *hole).  Returns 0, 1 when only a hole is left, or -errno.  File
 * systems without SEEK_DATA report the whole rest as data.
 */
static int find_data(int fd, uint64_t base, uint64_t off, uint64_t size,
		     uint64_t *data, uint64_t *hole)
{
	off_t d = lseek(fd, (off_t)(base + off), SEEK_DATA), h;

	if (d < 0 && errno == ENXIO)
		return 1;
	if (d < 0) {
		if (errno != EINVAL && errno != EOPNOTSUPP)
			return -errno;
		*data = off;
		*hole = size;
		return 0;
	}
	h = lseek(fd, d, SEEK_HOLE);
	*data = (uint64_t)d - base;
	*hole = h < 0 ? size : MIN((uint64_t)h - base, size);
	return *data >= size ? 1 : 0;
}

/* Read [0, end) of a file: the rest, if any, is its packed tail. */
static int read_file(struct mk_pipe *p, const struct mk_inode *ip, uint64_t end)
{
	uint64_t off = 0, data = 0, hole = end, cb = p->cbytes, base;
	int fd, err = 0;

	fd = mk_tree_open(p->t, ip, &base);
	if (fd < 0)
		return read_fail(p, ip, fd);
	if (p->t->datafd < 0)	/* the spool's readahead: spool_count */
		posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	while (off < end) {
		if (ip->maybe_sparse) {
			err = find_data(fd, base, off, end, &data, &hole);
			if (err)
				break;
		}
		data -= data % cb;
		hole = MIN(ROUND_UP(hole, cb), end);
		err = read_run(p, ip, fd, base, data, hole);
		if (err)
			break;
		off = data = hole;
		hole = end;
	}
	close(fd);
	if (err < 0 && err != -ECANCELED && !p->msg[0])
		read_fail(p, ip, err);
	return err < 0 ? err : 0;
}

static int read_symlink(struct mk_pipe *p, const struct mk_inode *ip)
{
	struct slot *s = slot_get(p);

	if (!s)
		return -ECANCELED;
	slot_setup(p, s, ip->ino, 0, (unsigned)ip->size, true);
	memcpy(s->in, ip->target, ip->size);
	slot_submit(p, s);
	return 0;
}

/* ---- packs ------------------------------------------------------------- */

static int read_tail(struct mk_pipe *p, const struct mk_inode *ip,
		     uint8_t *buf, unsigned len)
{
	uint64_t base;
	int fd = mk_tree_open(p->t, ip, &base);
	int err;

	if (fd < 0)
		return read_fail(p, ip, fd);
	err = read_full(p, ip, fd, base, buf, len, ip->size - len);
	close(fd);
	return err;
}

static int member_push(struct slot *s, const struct mk_member *m)
{
	if (CZFS_GROW(s->c.members, s->c.nmembers, s->members_cap, 64))
		return -ENOMEM;
	s->c.members[s->c.nmembers++] = *m;
	return 0;
}

/* A new pack chunk for the window of inode ino. */
static struct slot *pack_begin(struct mk_pipe *p, uint64_t ino, bool first)
{
	struct slot *s = slot_get(p);

	if (!s)
		return NULL;
	slot_setup(p, s, ino, 0, 0, false);
	s->c.pack = true;
	s->c.new_window = first;
	s->c.seq = p->next_seq;
	return s;
}

static void pack_submit(struct mk_pipe *p, struct slot *s)
{
	s->c.nclusters = s->c.in_bytes ? 1 : 0;
	if (s->c.in_bytes)
		p->next_seq++;
	slot_submit(p, s);
}

/* Read the tails of the window's members into packs, sent in order. */
static int read_window(struct mk_pipe *p, const struct mk_inode **mem,
		       unsigned n, uint64_t ino)
{
	struct slot *s = pack_begin(p, ino, true);
	int err = 0;

	for (unsigned i = 0; s && i < n && !err; i++) {
		const struct mk_inode *ip = mem[i];
		struct mk_member m = { .ino = ip->ino,
				       .len = mk_pack_tail(p->pk, ip) };

		m.index = (ip->size - 1) / p->cbytes;
		if (s->c.in_bytes + m.len > p->o.pack.pack_max) {
			pack_submit(p, s);
			s = pack_begin(p, ino, false);
			if (!s)
				break;
		}
		m.seq = s->c.seq;
		m.off = (uint32_t)s->c.in_bytes;
		err = read_tail(p, ip, s->in + s->c.in_bytes, m.len);
		if (err)
			break;
		m.copy = mk_pack_place(p->pk, s->in + s->c.in_bytes, &m) == 1;
		if (!m.copy)
			s->c.in_bytes += m.len;
		err = member_push(s, &m);
	}
	if (!s)
		return -ECANCELED;
	if (!err)
		pack_submit(p, s);
	return err;
}

/*
 * A tar's spool is freed as the pipeline is done with it, rather than all
 * at once when it is closed (0.4 s for 300 MiB), in chunks: the pipeline
 * reads the files in inode order, not in the stream's, and a punch per
 * file cost as much again.  A chunk goes once every file in it was read
 * for the last time (a replaced member's bytes, read by nobody, go with
 * it).
 */
#define SPOOL_CHUNK	(2ull << 20)

/* Where ip's bytes lie in the spool, [*start, *end); false: nowhere (in
 * the tar file, for one). */
static bool spool_range(const struct mk_pipe *p, const struct mk_inode *ip,
			uint64_t *start, uint64_t *end)
{
	if (!S_ISREG(ip->mode) || !ip->size || ip->data_off < p->t->spool_base)
		return false;
	*start = ip->data_off - p->t->spool_base;
	*end = *start + ROUND_UP(ip->size, CZFS_BLOCK_SIZE);
	return *end / SPOOL_CHUNK < p->spool_chunks;
}

/* Count every file's bytes in the chunks (nothing without a spool, or
 * without the memory: the spool then goes when closed). */
static void spool_count(struct mk_pipe *p)
{
	uint64_t start, end, top;
	struct stat st;

	/* The spool ends where its last member's bytes do (a hole at its
	 * end too: tardata.c), each member's range rounded up to a block. */
	if (p->t->datafd < 0 || fstat(p->t->datafd, &st))
		return;
	top = ROUND_UP((uint64_t)st.st_size, CZFS_BLOCK_SIZE);
	/* What is read was just written, and is in the page cache unless
	 * memory ran short: readahead around it would only fill the chunks
	 * freed already with zeros (5% of mkfs's CPU). */
	posix_fadvise(p->t->datafd, 0, 0, POSIX_FADV_RANDOM);
	if (p->t->tarfd >= 0)	/* the same for a tar file read in place */
		posix_fadvise(p->t->tarfd, 0, 0, POSIX_FADV_RANDOM);
	p->spool_chunks = top / SPOOL_CHUNK + 1;
	p->spool_left = calloc(p->spool_chunks, sizeof(*p->spool_left));
	if (!p->spool_left) {
		p->spool_chunks = 0;
		return;
	}
	for (uint64_t i = 0; i < p->t->count; i++) {
		if (!spool_range(p, p->t->inodes[i], &start, &end))
			continue;
		for (uint64_t c = start / SPOOL_CHUNK; c * SPOOL_CHUNK < end; c++)
			p->spool_left[c] += MIN(end, (c + 1) * SPOOL_CHUNK) -
					    MAX(start, c * SPOOL_CHUNK);
	}
}

/* ip's spooled bytes were read for the last time (its tail with its
 * window, before): free the chunks nothing else waits for. */
static void spool_drop(struct mk_pipe *p, const struct mk_inode *ip)
{
	uint64_t start, end;

	if (!p->spool_left || !spool_range(p, ip, &start, &end))
		return;
	for (uint64_t c = start / SPOOL_CHUNK; c * SPOOL_CHUNK < end; c++) {
		p->spool_left[c] -= MIN(end, (c + 1) * SPOOL_CHUNK) -
				    MAX(start, c * SPOOL_CHUNK);
		if (!p->spool_left[c])
			fallocate(p->t->datafd, FALLOC_FL_PUNCH_HOLE |
				  FALLOC_FL_KEEP_SIZE, (off_t)(c * SPOOL_CHUNK),
				  (off_t)SPOOL_CHUNK);
	}
}

static int read_inodes(struct mk_pipe *p)
{
	const struct mk_inode **mem;
	uint64_t wend = 0;
	unsigned n;
	int err = 0;

	for (uint64_t i = 0; i < p->t->count && !err; i++) {
		const struct mk_inode *ip = p->t->inodes[i];
		unsigned tail = i < wend || !p->pk ? 0 : mk_pack_tail(p->pk, ip);

		mk_prefetch_at(p->pf, i);
		if (tail) {	/* a window starts */
			err = mk_pack_window(p->pk, p->t, i, &wend, &mem, &n);
			if (!err)
				err = read_window(p, mem, n, ip->ino);
			if (err)
				break;
		}
		tail = i < wend ? mk_pack_tail(p->pk, ip) : 0;
		if (!ip->copy_of && S_ISREG(ip->mode) && ip->size > tail)
			err = read_file(p, ip, ip->size - tail);
		else if (!ip->copy_of && S_ISLNK(ip->mode))
			err = read_symlink(p, ip);
		spool_drop(p, ip);	/* a copy's clusters: the copied file's */
	}
	return err;
}

static void *reader_main(void *arg)
{
	struct mk_pipe *p = arg;
	int err = read_inodes(p);

	pipe_end(p, err, !err);
	return NULL;
}

/* ---- workers ----------------------------------------------------------- */

/* A pack is one cluster of up to 256 KiB, stored as an extent. */
static int encode_pack(struct mk_pipe *p, struct czfs_codec *codec,
		       struct slot *s)
{
	struct mk_cluster *cl = &s->c.cl[0];

	if (!s->c.nclusters)
		return 0;
	cl->index = 0;
	cl->out_off = 0;
	return czfs_pack_encode(codec, &p->o.pol, s->in, (unsigned)s->c.in_bytes,
				s->c.out, &cl->ci, &cl->out_len);
}

/*
 * The cluster's encoding made while a tar was read (preenc.h): 1, 0 to
 * encode it here (the file's last cluster never was), or -errno.
 */
static int pre_encoded(struct mk_pipe *p, const struct slot *s,
		       struct mk_cluster *cl, unsigned ulen, uint8_t *out)
{
	const struct mk_inode *ip;

	if (!p->t->pre || ulen != p->cbytes)
		return 0;
	ip = p->t->inodes[s->c.ino - 1];
	return mk_preenc_get(p->t->pre, ip->data_off + cl->index * p->cbytes,
			     out, &cl->ci, &cl->out_len);
}

static int encode_chunk(struct mk_pipe *p, struct czfs_codec *codec,
			struct slot *s)
{
	struct czfs_cluster_policy pol = p->o.pol;
	unsigned used = 0;

	if (s->c.pack)
		return encode_pack(p, codec, s);

	for (unsigned j = 0; j < s->c.nclusters; j++) {
		struct mk_cluster *cl = &s->c.cl[j];
		bool last = j + 1 == s->c.nclusters;
		unsigned ulen = last ? s->last_ulen : p->cbytes;
		int err;

		pol.allow_inline = p->o.pol.allow_inline && last && s->tail &&
				   !s->c.shared;
		cl->index = s->first_index + j;
		cl->out_off = used;
		err = pre_encoded(p, s, cl, ulen, s->c.out + used);
		if (!err && s->unread)
			err = -EIO;	/* the index changed? never encode garbage */
		if (!err)
			err = czfs_cluster_encode(codec, &pol,
						  s->in + (size_t)j * p->cbytes,
						  ulen, s->c.out + used, &cl->ci,
						  &cl->out_len);
		if (err < 0)
			return err;
		used += cl->out_len;
	}
	return 0;
}

/* Claim the next ready chunk in order, or NULL when there is none left. */
static struct slot *claim(struct mk_pipe *p)
{
	struct slot *s = NULL;

	pthread_mutex_lock(&p->lock);
	while (!p->stop && p->claimed == p->produced && !p->eof)
		pthread_cond_wait(&p->cv_ready, &p->lock);
	if (!p->stop && p->claimed < p->produced) {
		s = &p->slots[p->claimed++ % p->nslots];
		s->state = SLOT_BUSY;
	}
	pthread_mutex_unlock(&p->lock);
	return s;
}

static void *worker_main(void *arg)
{
	struct mk_pipe *p = arg;
	struct czfs_codec *codec = czfs_codec_new();
	struct slot *s;

	if (!codec) {
		pipe_end(p, -ENOMEM, false);
		return NULL;
	}
	while ((s = claim(p))) {
		int err = encode_chunk(p, codec, s);

		if (err) {
			pipe_end(p, err, false);
			break;
		}
		pthread_mutex_lock(&p->lock);
		s->state = SLOT_DONE;
		pthread_cond_broadcast(&p->cv_done);
		pthread_mutex_unlock(&p->lock);
	}
	czfs_codec_free(codec);
	return NULL;
}

/* ---- consumer ---------------------------------------------------------- */

struct mk_chunk *mk_pipe_next(struct mk_pipe *p)
{
	struct slot *s = &p->slots[p->consumed % p->nslots];
	struct mk_chunk *c = NULL;

	pthread_mutex_lock(&p->lock);
	while (!p->stop && !(p->consumed < p->produced &&
			     s->state == SLOT_DONE)) {
		if (p->eof && p->consumed == p->produced)
			break;
		pthread_cond_wait(&p->cv_done, &p->lock);
	}
	if (!p->stop && p->consumed < p->produced)
		c = &s->c;
	pthread_mutex_unlock(&p->lock);
	return c;
}

void mk_pipe_release(struct mk_pipe *p, struct mk_chunk *c)
{
	struct slot *s = container_of(c, struct slot, c);

	pthread_mutex_lock(&p->lock);
	s->state = SLOT_FREE;
	p->consumed++;
	pthread_cond_signal(&p->cv_free);
	pthread_mutex_unlock(&p->lock);
}

/* ---- setup ------------------------------------------------------------- */

static int slots_alloc(struct mk_pipe *p)
{
	unsigned per_chunk = p->chunk_bytes / p->cbytes;
	size_t out_bytes = p->chunk_bytes + CZFS_MAX_CLUSTER_SIZE + CZFS_BLOCK_SIZE;

	p->slots = calloc(p->nslots, sizeof(*p->slots));
	if (!p->slots)
		return -ENOMEM;
	for (unsigned i = 0; i < p->nslots; i++) {
		struct slot *s = &p->slots[i];

		s->in = aligned_alloc(CZFS_BLOCK_SIZE, p->chunk_bytes);
		s->c.out = aligned_alloc(CZFS_BLOCK_SIZE, out_bytes);
		s->c.cl = calloc(per_chunk, sizeof(*s->c.cl));
		if (!s->in || !s->c.out || !s->c.cl)
			return -ENOMEM;
	}
	return 0;
}

static void pipe_free(struct mk_pipe *p)
{
	for (unsigned i = 0; p->slots && i < p->nslots; i++) {
		free(p->slots[i].in);
		free(p->slots[i].c.out);
		free(p->slots[i].c.cl);
		free(p->slots[i].c.members);
	}
	mk_packer_free(p->pk);
	free(p->spool_left);
	free(p->slots);
	free(p->workers);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cv_free);
	pthread_cond_destroy(&p->cv_ready);
	pthread_cond_destroy(&p->cv_done);
	free(p);
}

static int threads_start(struct mk_pipe *p)
{
	int err;

	p->workers = calloc(p->o.jobs, sizeof(*p->workers));
	if (!p->workers)
		return -ENOMEM;
	if (p->t->rootfd >= 0)	/* without it, reads only wait longer */
		(void)mk_prefetch_start(p->t, MK_PREFETCH_AHEAD, &p->pf);
	for (; p->nworkers < p->o.jobs; p->nworkers++) {
		err = pthread_create(&p->workers[p->nworkers], NULL,
				     worker_main, p);
		if (err)
			return -err;
	}
	err = pthread_create(&p->reader, NULL, reader_main, p);
	if (err)
		return -err;
	p->reader_started = true;
	return 0;
}

int mk_pipe_start(const struct mk_tree *t, const struct mk_pipe_opts *o,
		  struct mk_pipe **out)
{
	struct mk_pipe *p = calloc(1, sizeof(*p));
	int err;

	if (!p)
		return -ENOMEM;
	p->t = t;
	p->o = *o;
	p->cbytes = CZFS_BLOCK_SIZE << o->cluster_shift;
	p->chunk_bytes = MAX(MK_CHUNK_BYTES, p->cbytes);
	p->nslots = MAX(4 * o->jobs, 4u);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cv_free, NULL);
	pthread_cond_init(&p->cv_ready, NULL);
	pthread_cond_init(&p->cv_done, NULL);
	spool_count(p);
	err = slots_alloc(p);
	if (!err && o->pack.enabled)
		err = mk_packer_new(&o->pack, p->cbytes, t, &p->pk);
	if (!err)
		err = threads_start(p);
	if (err) {
		pipe_end(p, err, false);
		mk_pipe_stop(p);
		return err;
	}
	*out = p;
	return 0;
}

uint64_t mk_pipe_read_bytes(const struct mk_pipe *p)
{
	return __atomic_load_n(&p->read_bytes, __ATOMIC_RELAXED);
}

int mk_pipe_stop(struct mk_pipe *p)
{
	int err;

	pipe_end(p, 0, false);
	for (unsigned i = 0; i < p->nworkers; i++)
		pthread_join(p->workers[i], NULL);
	if (p->reader_started)
		pthread_join(p->reader, NULL);
	mk_prefetch_stop(p->pf);
	err = p->err;
	if (p->msg[0])
		fprintf(stderr, "%s\n", p->msg);
	else if (err && err != -ECANCELED)
		fprintf(stderr, "mkfs.czfs: compression failed: %s\n",
			strerror(-err));
	pipe_free(p);
	return err;
}
