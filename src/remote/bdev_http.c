// SPDX-License-Identifier: MIT
/*
 * Remote backing device: a read-only czfs_bdev over the HTTP transport
 * (http.c), read in whole, aligned chunks kept in memory and in the disk
 * cache (rcache.c).
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>

#include "http.h"
#include "log.h"
#include "rcache.h"
#include "remote.h"
#include "super.h"
#include "util.h"

#define CHUNK		CZFS_RCACHE_CHUNK
#define MEM_CHUNKS	32		/* the last chunks used, in memory */
#define RUN_CHUNKS	4		/* chunks fetched by one request */
#define INFLIGHT_MAX	32		/* chunks being fetched, tracked */
#define FAILED_MAX	8		/* fetches that failed, remembered */

/*
 * Every read goes through whole, aligned chunks, the last ones used kept
 * in memory: metadata comes in 4 KiB reads and data in runs of clusters
 * that start and end inside chunks; measured (bench/remote), a tree read
 * took 1070 requests read as it came, 48 through chunks.  The memory copy
 * spares the next read of the same chunk a second fetch or a second
 * read (and CRC) of the disk cache's file: a tree's reads come in
 * directory order, not the image's, and go back to chunks long after
 * (measured, a warm tree read of a 67-chunk image: 218 disk hits with
 * 16 chunks, 116 with 32, 89 with 64; 0.95x, 1.01x and 1.03x the local
 * file's MB/s).
 */
struct mem_chunk {
	uint64_t off;
	uint64_t used;
	size_t len;			/* 0: empty */
	bool filling;			/* one thread writes data, unlocked */
	uint8_t *data;			/* CHUNK bytes, kept once allocated */
};

struct http_bdev {
	struct czfs_bdev b;
	struct czfs_http *http;		/* the transport */
	struct czfs_rcache *cache;	/* on disk, NULL: none */
	char identity[128];		/* ETag or Last-Modified, or empty */
	atomic_ullong last_disk;	/* the chunk after the last disk hit */
	atomic_ullong ahead;		/* the end of the chunks read ahead */
	pthread_mutex_t lock;		/* the memory chunks, the chunks in
					 * flight */
	struct mem_chunk mem[MEM_CHUNKS];
	uint64_t mem_clock;
	/* Chunks one thread fetches now: another thread that needs one
	 * waits and takes it from memory instead of fetching it too (the
	 * reader and the prefetch workers load neighbouring clusters, which
	 * share the chunks at their edges: measured, a big file's read
	 * fetched 1.6x its image bytes before). */
	uint64_t inflight[INFLIGHT_MAX];
	unsigned ninflight;
	pthread_cond_t fetched;
	/* The last fetches that failed: a thread that waited for one takes
	 * its error rather than asking the same server again at once (with
	 * a stalled server, each waiter in turn waited out the timeouts:
	 * measured, two readers of one chunk got EIO after 12.6 s, not the
	 * 6.3 s of one fetch). */
	struct {
		uint64_t c, end, gen;
		int err;
	} failed[FAILED_MAX];
	uint64_t fail_gen;
	struct czfs_remote_stats rs;	/* the transport's counters and ours */
};

static pthread_once_t run_once = PTHREAD_ONCE_INIT;
static int run_key_err;
static pthread_key_t run_key;		/* each thread's run buffer */

static void run_key_init(void)
{
	run_key_err = pthread_key_create(&run_key, free);
}

/* A buffer of RUN_CHUNKS chunks, one per thread and kept: a fresh 4 MiB
 * allocation per read is an mmap and a thousand page faults. */
static uint8_t *run_buffer(void)
{
	uint8_t *buf = pthread_getspecific(run_key);

	if (!buf) {
		buf = malloc((size_t)RUN_CHUNKS * CHUNK);
		if (buf && pthread_setspecific(run_key, buf)) {
			free(buf);
			buf = NULL;
		}
	}
	return buf;
}

static struct http_bdev *to_http(struct czfs_bdev *b)
{
	return container_of(b, struct http_bdev, b);
}

/* Copy n bytes of src to the request's iovec at byte pos of it. */
static void copy_to_iov(const struct iovec *iov, int cnt, size_t pos,
			const uint8_t *src, size_t n)
{
	for (int i = 0; i < cnt && n; i++) {
		size_t k;

		if (pos >= iov[i].iov_len) {
			pos -= iov[i].iov_len;
			continue;
		}
		k = MIN(n, iov[i].iov_len - pos);
		memcpy((char *)iov[i].iov_base + pos, src, k);
		src += k;
		n -= k;
		pos = 0;
	}
}

static size_t chunk_len(const struct http_bdev *hb, uint64_t c)
{
	return (size_t)MIN((uint64_t)CHUNK, hb->b.size - c);
}

/* Bytes [from, from + n) of chunk c, if in memory, to the request at pos. */
static bool mem_copy(struct http_bdev *hb, uint64_t c, size_t from, size_t n,
		     const struct iovec *iov, int cnt, size_t pos)
{
	bool hit = false;

	pthread_mutex_lock(&hb->lock);
	for (unsigned i = 0; i < MEM_CHUNKS && !hit; i++)
		if (hb->mem[i].len && hb->mem[i].off == c) {
			copy_to_iov(iov, cnt, pos, hb->mem[i].data + from, n);
			hb->mem[i].used = ++hb->mem_clock;
			hit = true;
		}
	pthread_mutex_unlock(&hb->lock);
	return hit;
}

static void copy_from_iov(const struct iovec *iov, int cnt, uint8_t *dst)
{
	for (int i = 0; i < cnt; i++) {
		memcpy(dst, iov[i].iov_base, iov[i].iov_len);
		dst += iov[i].iov_len;
	}
}

static bool in_mem(const struct http_bdev *hb, uint64_t c)
{
	for (unsigned i = 0; i < MEM_CHUNKS; i++)
		if (hb->mem[i].len && hb->mem[i].off == c)
			return true;
	return false;
}

/*
 * Take the least recently used slot (an empty one first) to fill outside
 * the lock: its data is the caller's until mem_give; NULL if every slot
 * is being filled.  The slots' buffers stay, since a fresh 1 MiB each
 * time is 256 page faults and clears (measured: 16% of a warm read's
 * daemon time).
 */
static struct mem_chunk *mem_take(struct http_bdev *hb)
{
	struct mem_chunk *m = NULL;

	pthread_mutex_lock(&hb->lock);
	for (unsigned i = 0; i < MEM_CHUNKS; i++) {
		struct mem_chunk *s = &hb->mem[i];

		if (!s->filling && (!m || (m->len && (!s->len ||
						      s->used < m->used))))
			m = s;
	}
	if (m && !m->data)
		m->data = malloc(CHUNK);
	if (m && m->data) {
		m->len = 0;
		m->filling = true;
	} else {
		m = NULL;
	}
	pthread_mutex_unlock(&hb->lock);
	return m;
}

/* The slot mem_take gave holds chunk c's len bytes now (0: nothing),
 * unless another thread put c in memory meanwhile. */
static void mem_give(struct http_bdev *hb, struct mem_chunk *m, uint64_t c,
		     size_t len)
{
	pthread_mutex_lock(&hb->lock);
	m->filling = false;
	if (len && !in_mem(hb, c)) {
		m->off = c;
		m->used = ++hb->mem_clock;
		m->len = len;
	}
	pthread_mutex_unlock(&hb->lock);
}

/* Keep a copy of chunk c (its len bytes in the cnt pieces of iov). */
static void mem_putv(struct http_bdev *hb, uint64_t c, const struct iovec *iov,
		     int cnt, size_t len)
{
	struct mem_chunk *m = mem_take(hb);

	if (m) {
		copy_from_iov(iov, cnt, m->data);
		mem_give(hb, m, c, len);
	}
}

static bool in_flight(const struct http_bdev *hb, uint64_t c)
{
	for (unsigned i = 0; i < hb->ninflight; i++)
		if (hb->inflight[i] == c)
			return true;
	return false;
}

/* The error of a fetch of c that failed after generation gen, or 0. */
static int failed_since(const struct http_bdev *hb, uint64_t c, uint64_t gen)
{
	for (unsigned i = 0; i < FAILED_MAX; i++)
		if (hb->failed[i].gen > gen && hb->failed[i].c <= c &&
		    c < hb->failed[i].end)
			return hb->failed[i].err;
	return 0;
}

/*
 * Claim chunk c to fetch it: 1, or 0 when another thread was fetching it
 * (without wait: at once; else once that fetch is over, so that the
 * caller looks in memory again) or has put it in memory since the
 * caller looked, or the error of that fetch, waited for, that failed.
 * With no room to track it, the claim is given untracked.
 */
static int claim(struct http_bdev *hb, uint64_t c, bool wait)
{
	uint64_t gen;
	int mine = 1;

	pthread_mutex_lock(&hb->lock);
	gen = hb->fail_gen;
	if (in_flight(hb, c)) {
		mine = 0;
		if (wait)
			atomic_fetch_add(&hb->rs.waits, 1);
	}
	while (wait && in_flight(hb, c))
		pthread_cond_wait(&hb->fetched, &hb->lock);
	if (in_mem(hb, c))
		mine = 0;
	else if (!mine && wait)
		mine = failed_since(hb, c, gen);
	if (mine > 0 && hb->ninflight < INFLIGHT_MAX)
		hb->inflight[hb->ninflight++] = c;
	pthread_mutex_unlock(&hb->lock);
	return mine;
}

/* The fetch of [c, end) is over: its chunks are in memory, or it failed
 * with err. */
static void release(struct http_bdev *hb, uint64_t c, uint64_t end, int err)
{
	unsigned keep = 0;

	pthread_mutex_lock(&hb->lock);
	for (unsigned i = 0; i < hb->ninflight; i++)
		if (hb->inflight[i] < c || hb->inflight[i] >= end)
			hb->inflight[keep++] = hb->inflight[i];
	hb->ninflight = keep;
	if (err) {
		unsigned i = (unsigned)(++hb->fail_gen % FAILED_MAX);

		hb->failed[i].c = c;
		hb->failed[i].end = end;
		hb->failed[i].gen = hb->fail_gen;
		hb->failed[i].err = err;
	}
	pthread_cond_broadcast(&hb->fetched);
	pthread_mutex_unlock(&hb->lock);
}

/* A chunk the disk cache gave: counted, and a sequential reader's next
 * RUN_CHUNKS chunks (the one after the last one read from the disk) are
 * read ahead, as a file's would be: those the last hit did not ask for
 * already, one a hit as the reader goes on (3 opens fewer each). */
static void note_hit(struct http_bdev *hb, uint64_t c, size_t len)
{
	uint64_t end = MIN(c + (uint64_t)(RUN_CHUNKS + 1) * CHUNK, hb->b.size);

	if (atomic_exchange(&hb->last_disk, c + CHUNK) != c) {
		atomic_store(&hb->ahead, c + CHUNK);	/* none past c */
	} else {
		uint64_t p = atomic_exchange(&hb->ahead, end);

		if (p <= c || p > end)
			p = c + CHUNK;
		for (; p < end; p += CHUNK)
			czfs_rcache_willneed(hb->cache, p);
	}
	atomic_fetch_add_explicit(&hb->rs.cache_hits, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&hb->rs.cache_bytes, len, memory_order_relaxed);
}

static void note_miss(struct http_bdev *hb)
{
	atomic_fetch_add_explicit(&hb->rs.cache_misses, 1, memory_order_relaxed);
}

/*
 * Bytes [from, from + n) of chunk c from the disk cache to the request
 * at pos, the chunk kept in memory: true on a hit.  The file is read
 * straight into a memory slot: through the run buffer, each hit cost a
 * second copy of the whole chunk (measured: a warm tree read took 3
 * disk hits per chunk, partial reads all but a few).
 */
static bool chunk_cached(struct http_bdev *hb, uint64_t c, size_t from,
			 size_t n, const struct iovec *iov, int cnt, size_t pos)
{
	size_t len = chunk_len(hb, c);
	struct mem_chunk *m;
	uint8_t *buf;
	int err;

	if (!hb->cache)
		return false;
	/* A miss must not cost a memory chunk: mem_take empties the least
	 * recently used slot (a cold cache's every chunk misses here). */
	if (!czfs_rcache_has(hb->cache, c)) {
		note_miss(hb);
		return false;
	}
	m = mem_take(hb);
	buf = m ? m->data : run_buffer();
	err = buf ? czfs_rcache_get(hb->cache, c, buf, len) : -ENOMEM;
	if (!err)
		copy_to_iov(iov, cnt, pos, buf + from, n);
	if (m)
		mem_give(hb, m, c, err ? 0 : len);
	if (err) {
		note_miss(hb);
		return false;
	}
	note_hit(hb, c, len);
	return true;
}

/* The pieces of iov that hold its bytes [pos, pos + n), into out (room
 * for cnt): how many. */
static int iov_slice(const struct iovec *iov, int cnt, size_t pos, size_t n,
		     struct iovec *out)
{
	int k = 0;

	for (int i = 0; i < cnt && n; i++) {
		size_t take;

		if (pos >= iov[i].iov_len) {
			pos -= iov[i].iov_len;
			continue;
		}
		take = MIN(n, iov[i].iov_len - pos);
		out[k++] = (struct iovec){ (char *)iov[i].iov_base + pos, take };
		n -= take;
		pos = 0;
	}
	return k;
}

/*
 * Fetch chunk c and the chunks after it that no cache holds, up to
 * RUN_CHUNKS, with one request into iov from its byte pos (part has room
 * for its cnt pieces), and store them on disk and in memory.  The run
 * stops before a chunk another thread claimed, and at end: with whole,
 * only chunks that end by end (a read's pages, taken whole); without, the
 * chunks that start by end (the run buffer, the read's last chunk).
 * Returns the bytes fetched, 0 when another thread fetched c meanwhile
 * (look in memory again), or -errno.
 */
static ssize_t fetch_run(struct http_bdev *hb, uint64_t c, uint64_t end,
			 bool whole, const struct iovec *iov, int cnt,
			 size_t pos, struct iovec *part)
{
	uint64_t e = c + chunk_len(hb, c);
	int n, err = claim(hb, c, true);

	if (err <= 0)
		return err;
	while ((whole ? e + chunk_len(hb, e) <= end : e <= end) &&
	       e < c + (uint64_t)RUN_CHUNKS * CHUNK &&
	       !(hb->cache && czfs_rcache_has(hb->cache, e)) &&
	       claim(hb, e, false) > 0)
		e += chunk_len(hb, e);
	n = iov_slice(iov, cnt, pos, (size_t)(e - c), part);
	err = czfs_http_get_range(hb->http, part, n, c, (size_t)(e - c));
	for (uint64_t p = c; !err && p < e; p += CHUNK) {
		n = iov_slice(iov, cnt, pos + (size_t)(p - c),
			      chunk_len(hb, p), part);
		mem_putv(hb, p, part, n, chunk_len(hb, p));
	}
	/* Threads waiting for these chunks take them from memory now, not
	 * after the disk cache's writes (a cold cache's fill). */
	release(hb, c, e, err);
	for (uint64_t p = c; !err && hb->cache && p < e; p += CHUNK) {
		n = iov_slice(iov, cnt, pos + (size_t)(p - c),
			      chunk_len(hb, p), part);
		czfs_rcache_putv(hb->cache, p, part, n);
	}
	return err ? err : (ssize_t)(e - c);
}

/*
 * Whole chunks from c on that the read covers up to end, straight into
 * the request's pages (iov, from its byte pos): from the disk cache, or
 * fetched (fetch_run).  part has room for cnt pieces.  Returns the bytes
 * read, 0 (look in memory again) or -errno.
 */
static ssize_t whole_chunks(struct http_bdev *hb, uint64_t c, uint64_t end,
			    const struct iovec *iov, int cnt, size_t pos,
			    struct iovec *part)
{
	size_t len = chunk_len(hb, c);
	int n = iov_slice(iov, cnt, pos, len, part);

	if (hb->cache) {
		if (!czfs_rcache_getv(hb->cache, c, part, n)) {
			note_hit(hb, c, len);
			return (ssize_t)len;
		}
		note_miss(hb);
	}
	return fetch_run(hb, c, end, true, iov, cnt, pos, part);
}

/* The chunks from c to at most last into the run buffer buf (fetch_run). */
static ssize_t chunk_fetch(struct http_bdev *hb, uint64_t c, uint64_t last,
			   uint8_t *buf)
{
	struct iovec iov = { buf, (size_t)RUN_CHUNKS * CHUNK }, part;

	return fetch_run(hb, c, last, false, &iov, 1, 0, &part);
}

/* A read through whole chunks: from the caches, the rest fetched. */
static int chunk_readv(struct http_bdev *hb, const struct iovec *iov, int cnt,
		       uint64_t off, size_t len)
{
	uint64_t c = off / CHUNK * CHUNK, last = (off + len - 1) / CHUNK * CHUNK;
	struct iovec *part = NULL;
	uint8_t *buf = NULL;
	int err = 0;

	while (!err && c <= last) {
		ssize_t got = chunk_len(hb, c);
		uint64_t from = MAX(off, c), to = MIN(off + len, c + (uint64_t)got);

		if (mem_copy(hb, c, from - c, to - from, iov, cnt, from - off)) {
			c += (uint64_t)got;
			continue;
		}
		if (from == c && to == c + (uint64_t)got) {
			/* covered whole: no copy through our buffers */
			if (!part && !(part = malloc((size_t)cnt * sizeof(*part)))) {
				err = -ENOMEM;
				break;
			}
			got = whole_chunks(hb, c, off + len, iov, cnt,
					   (size_t)(c - off), part);
			if (got < 0)
				err = (int)got;
			else
				c += (uint64_t)got;
			continue;
		}
		if (chunk_cached(hb, c, from - c, to - from, iov, cnt,
				 from - off)) {
			c += (uint64_t)got;
			continue;
		}
		if (!buf && !(buf = run_buffer())) {
			err = -ENOMEM;
			break;
		}
		got = chunk_fetch(hb, c, last, buf);
		if (got < 0) {
			err = (int)got;
			break;
		}
		if (!got)		/* another thread fetched it: memory */
			continue;
		from = MAX(off, c);
		to = MIN(off + len, c + (uint64_t)got);
		copy_to_iov(iov, cnt, from - off, buf + (from - c), to - from);
		c += (uint64_t)got;
	}
	free(part);
	return err;
}

static int http_readv(struct czfs_bdev *bd, const struct iovec *iov, int cnt,
		      uint64_t off)
{
	struct http_bdev *hb = to_http(bd);
	size_t len = 0;

	for (int k = 0; k < cnt; k++)
		len += iov[k].iov_len;
	czfs_bdev_account(bd, 'r', len);
	if (off > bd->size || len > bd->size - off)
		return -EIO;
	if (!len)
		return 0;
	return chunk_readv(hb, iov, cnt, off, len);
}

static int http_read(struct czfs_bdev *bd, void *buf, size_t len, uint64_t off)
{
	struct iovec iov = { buf, len };

	return http_readv(bd, &iov, 1, off);
}

static int http_write(struct czfs_bdev *bd, const void *buf, size_t len,
		      uint64_t off)
{
	return -EROFS;
}

static int http_flush(struct czfs_bdev *bd)
{
	return 0;
}

static int http_resize(struct czfs_bdev *bd, uint64_t size)
{
	return -EROFS;
}

static int http_punch(struct czfs_bdev *bd, uint64_t off, uint64_t len)
{
	return -EROFS;
}

static void http_destroy(struct czfs_bdev *bd)
{
	struct http_bdev *hb = to_http(bd);

	czfs_http_close(hb->http);
	for (unsigned i = 0; i < MEM_CHUNKS; i++)
		free(hb->mem[i].data);
	czfs_rcache_close(hb->cache);
	pthread_cond_destroy(&hb->fetched);
	pthread_mutex_destroy(&hb->lock);
	free(hb);
}

static const struct czfs_bdev_ops http_ops = {
	.read = http_read,
	.readv = http_readv,
	.write = http_write,
	.flush = http_flush,
	.resize = http_resize,
	.punch = http_punch,
	.destroy = http_destroy,
};

/*
 * The disk cache, keyed by the image's UUID (from its first chunk, which
 * the mount reads anyway) and the object's identity and size.
 */
static int open_cache(struct http_bdev *hb, const struct czfs_remote_opts *o)
{
	uint8_t buf[CZFS_BLOCK_SIZE];
	struct iovec iov = { buf, sizeof(buf) };
	struct czfs_sb_info sb;
	char key[128];
	int err;

	if (!hb->identity[0]) {
		czfs_warn("%s: no ETag or Last-Modified: no cache",
			  czfs_http_shown(hb->http));
		return 0;
	}
	/* Not an image (the open says so next): nothing to cache. */
	if (hb->b.size < sizeof(buf))
		return 0;
	err = czfs_http_get_range(hb->http, &iov, 1, 0, sizeof(buf));
	if (err || czfs_super_decode(buf, &sb, NULL))
		return err;
	czfs_rcache_key(sb.uuid, hb->identity, hb->b.size, key, sizeof(key));
	err = czfs_rcache_open(o->cache_dir, o->cache_limit ?
			       o->cache_limit : 1ull << 30, key, &hb->cache);
	if (err)
		czfs_err("%s: cache %s: %s", czfs_http_shown(hb->http),
			 o->cache_dir, strerror(-err));
	return err;
}

int czfs_bdev_open_remote(const char *url, unsigned flags,
			  const struct czfs_remote_opts *opts,
			  struct czfs_bdev **out)
{
	static const struct czfs_remote_opts defaults = { .retries = -1 };
	const struct czfs_remote_opts *o = opts ? opts : &defaults;
	struct http_bdev *hb;
	int err;

	pthread_once(&run_once, run_key_init);
	if (run_key_err)
		return -ENOMEM;
	hb = calloc(1, sizeof(*hb));
	if (!hb)
		return -ENOMEM;
	pthread_mutex_init(&hb->lock, NULL);
	pthread_cond_init(&hb->fetched, NULL);
	hb->b.ops = &http_ops;
	hb->b.flags = flags | CZFS_BDEV_RDONLY;
	err = czfs_http_open(url, o, &hb->rs, &hb->http);
	if (!err)
		err = czfs_http_probe(hb->http, &hb->b.size, hb->identity,
				      sizeof(hb->identity));
	if (!err && o->cache_dir)
		err = open_cache(hb, o);
	if (err) {
		http_destroy(&hb->b);
		return err;
	}
	*out = &hb->b;
	return 0;
}

const struct czfs_remote_stats *czfs_bdev_remote_stats(const struct czfs_bdev *b)
{
	if (b->ops != &http_ops)
		return NULL;
	return &container_of(b, const struct http_bdev, b)->rs;
}

uint64_t czfs_remote_latency_pct(const struct czfs_remote_stats *s, unsigned pct)
{
	uint64_t total = 0, seen = 0;

	for (unsigned i = 0; i < CZFS_REMOTE_LAT_BUCKETS; i++)
		total += atomic_load_explicit(&s->lat[i], memory_order_relaxed);
	if (!total)
		return 0;
	for (unsigned i = 0; i < CZFS_REMOTE_LAT_BUCKETS; i++) {
		seen += atomic_load_explicit(&s->lat[i], memory_order_relaxed);
		if (seen * 100 >= total * pct)
			return 1ull << i;
	}
	return 1ull << (CZFS_REMOTE_LAT_BUCKETS - 1);
}
