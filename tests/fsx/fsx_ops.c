// SPDX-License-Identifier: MIT
/*
 * czfs_fsx operations: each draws its parameters, runs on the file, then
 * updates the model and checks what it read against it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsx.h"

#define FSX_DIO_ALIGN 4096ULL

static sigjmp_buf fsx_sigbus_jmp;

static void fsx_on_sigbus(int sig)
{
	siglongjmp(fsx_sigbus_jmp, sig);
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* An offset in [0, limit), often next to a 4K..256K or -c boundary. */
static uint64_t pick_off(struct fsx *f, uint64_t limit)
{
	const uint64_t bounds[] = { 4096, 16384, 65536, 262144, f->bias };
	uint64_t b, o, d;

	if (!limit)
		return 0;
	if (fsx_rnd(f, 2))
		return fsx_rnd(f, limit);
	b = bounds[fsx_rnd(f, sizeof(bounds) / sizeof(bounds[0]))];
	o = fsx_rnd(f, limit / b + 1) * b;
	/* up to 64 bytes either side of the boundary */
	d = fsx_rnd(f, 129);
	o = o + d >= 64 ? o + d - 64 : 0;
	return o < limit ? o : limit - 1;
}

/* A length in [1, maxop]: small, about a boundary, or anything. */
static uint64_t pick_len(struct fsx *f)
{
	const uint64_t bounds[] = { 4096, 16384, 65536, 262144, f->bias };
	uint64_t len;

	switch (fsx_rnd(f, 4)) {
	case 0:
		len = 1 + fsx_rnd(f, 512);
		break;
	case 1:
		len = bounds[fsx_rnd(f, sizeof(bounds) / sizeof(bounds[0]))];
		len = len * (1 + fsx_rnd(f, 2)) + fsx_rnd(f, 129);
		len = len > 64 ? len - 64 : 1;
		break;
	default:
		len = 1 + fsx_rnd(f, f->maxop);
		break;
	}
	return min_u64(len, f->maxop);
}

/*
 * Where a write-like op goes: a partial overwrite inside the file, far past
 * EOF (a hole), or anywhere.  OFF + *LEN stays within maxlen.
 */
static uint64_t pick_where(struct fsx *f, uint64_t *len)
{
	uint64_t off, r = fsx_rnd(f, 10);

	if (r < 3 && f->size)
		off = pick_off(f, f->size);
	else if (r == 3)
		off = f->size + fsx_rnd(f, f->maxlen - f->size);
	else
		off = pick_off(f, f->maxlen);
	if (off >= f->maxlen)
		off = f->maxlen - 1;
	*len = min_u64(pick_len(f), f->maxlen - off);
	return off;
}

static void grow(struct fsx *f, uint64_t end)
{
	if (end > f->size)
		f->size = end;
}

static void pwrite_all(struct fsx *f, int fd, const void *p, uint64_t len,
		       uint64_t off)
{
	ssize_t n;
	uint64_t done = 0;

	while (done < len) {
		n = pwrite(fd, (const char *)p + done, len - done, off + done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			fsx_die(f, "pwrite(0x%" PRIx64 ", 0x%" PRIx64 "): %s",
				off + done, len - done,
				n < 0 ? strerror(errno) : "wrote nothing");
		done += n;
	}
}

/* Reads until LEN or EOF; returns the bytes read. */
static uint64_t pread_all(struct fsx *f, int fd, void *p, uint64_t len,
			  uint64_t off)
{
	ssize_t n;
	uint64_t done = 0;

	while (done < len) {
		n = pread(fd, (char *)p + done, len - done, off + done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fsx_die(f, "pread(0x%" PRIx64 ", 0x%" PRIx64 "): %s",
				off + done, len - done, strerror(errno));
		if (n == 0)
			break;
		done += n;
	}
	return done;
}

/*
 * Check file bytes OFF..OFF+LEN (in GOT) against the model.  With the -X
 * self-test, the model byte at flip_at reads inverted from then on, as
 * if the filesystem had lost it.
 */
static void check(struct fsx *f, const unsigned char *got, uint64_t off,
		  uint64_t len, const char *what)
{
	uint64_t at = f->flip_at;
	bool flip = f->flipped && at >= off && at < off + len;

	if (flip)
		f->model[at] ^= 0xff;
	fsx_compare(f, got, off, len, what);
	if (flip)
		f->model[at] ^= 0xff;
}

static void do_write(struct fsx *f)
{
	uint64_t len, off = pick_where(f, &len);
	struct fsx_op *op = fsx_log_new(f, FSX_WRITE, off, len);

	op->kind = fsx_rnd(f, FSX_NKINDS);
	fsx_fill(f, f->buf, off, len, op->kind);
	pwrite_all(f, f->fd, f->buf, len, off);
	memcpy(f->model + off, f->buf, len);
	grow(f, off + len);
	op->size_after = f->size;
}

static void *map_range(struct fsx *f, uint64_t off, uint64_t len, int prot,
		       uint64_t *pg, uint64_t *mlen)
{
	uint64_t psz = (uint64_t)sysconf(_SC_PAGESIZE);
	void *p;

	*pg = off & ~(psz - 1);
	*mlen = off + len - *pg;
	p = mmap(NULL, *mlen, prot, MAP_SHARED, f->fd, *pg);
	if (p == MAP_FAILED)
		fsx_die(f, "mmap(0x%" PRIx64 ", 0x%" PRIx64 "): %s", *pg,
			*mlen, strerror(errno));
	return p;
}

/* MAP_SHARED store and msync; the file is first extended to cover it. */
static void do_mapwrite(struct fsx *f)
{
	uint64_t len, off = pick_where(f, &len), pg, mlen;
	struct fsx_op *op = fsx_log_new(f, FSX_MAPWRITE, off, len);
	unsigned char *p;

	op->kind = fsx_rnd(f, FSX_NKINDS);
	fsx_fill(f, f->buf, off, len, op->kind);
	if (off + len > f->size) {
		if (ftruncate(f->fd, off + len))
			fsx_die(f, "ftruncate before mapwrite: %s",
				strerror(errno));
		grow(f, off + len);
	}
	p = map_range(f, off, len, PROT_READ | PROT_WRITE, &pg, &mlen);
	if (sigsetjmp(fsx_sigbus_jmp, 1))
		fsx_die(f, "SIGBUS storing to the mapping");
	memcpy(p + (off - pg), f->buf, len);
	if (msync(p, mlen, MS_SYNC))
		fsx_die(f, "msync: %s", strerror(errno));
	munmap(p, mlen);
	memcpy(f->model + off, f->buf, len);
	op->size_after = f->size;
}

/* Mostly inside the file, sometimes across EOF or past it. */
static uint64_t pick_read(struct fsx *f, uint64_t *len)
{
	uint64_t off = fsx_rnd(f, 8) ? pick_off(f, f->size) :
		       pick_off(f, f->size + f->maxop);

	*len = min_u64(pick_len(f), f->maxlen - min_u64(off, f->maxlen));
	return off;
}

static void do_read(struct fsx *f)
{
	uint64_t len, off = pick_read(f, &len), got, want;

	fsx_log_new(f, FSX_READ, off, len);
	want = off < f->size ? min_u64(len, f->size - off) : 0;
	got = pread_all(f, f->fd, f->buf, len, off);
	if (got != want)
		fsx_die(f, "read of 0x%" PRIx64 " at 0x%" PRIx64 " returned "
			"0x%" PRIx64 " bytes, the model has 0x%" PRIx64, len,
			off, got, want);
	check(f, f->buf, off, got, "read");
}

/*
 * A mapped read; when it reaches EOF, the rest of the last page must read
 * as zeros too (POSIX), which catches stale data left by a truncate.
 */
static void do_mapread(struct fsx *f)
{
	uint64_t len, off = pick_off(f, f->size), pg, mlen, tail = 0, psz;
	unsigned char *p;
	uint64_t i;

	len = min_u64(pick_len(f), f->size - off);
	fsx_log_new(f, FSX_MAPREAD, off, len);
	if (!len)
		return;
	psz = (uint64_t)sysconf(_SC_PAGESIZE);
	if (off + len == f->size && f->size % psz)
		tail = psz - f->size % psz;
	p = map_range(f, off, len + tail, PROT_READ, &pg, &mlen);
	if (sigsetjmp(fsx_sigbus_jmp, 1))
		fsx_die(f, "SIGBUS reading the mapping");
	memcpy(f->buf, p + (off - pg), len + tail);
	munmap(p, mlen);
	check(f, f->buf, off, len, "mapread");
	for (i = 0; i < tail; i++)
		if (f->buf[len + i])
			fsx_die(f, "mapped byte 0x%" PRIx64 " past EOF 0x%"
				PRIx64 " is 0x%02x, not zero", off + len + i,
				f->size, f->buf[len + i]);
}

static void do_truncate(struct fsx *f)
{
	uint64_t c = f->bias, n;
	struct fsx_op *op;

	switch (fsx_rnd(f, 4)) {
	case 0:		/* down */
		n = fsx_rnd(f, f->size + 1);
		break;
	case 1:		/* up */
		n = f->size + fsx_rnd(f, f->maxlen - f->size + 1);
		break;
	case 2:		/* inside a cluster */
		n = fsx_rnd(f, f->maxlen / c) * c + 1 + fsx_rnd(f, c - 1);
		break;
	default:
		n = fsx_rnd(f, f->maxlen + 1);
		break;
	}
	n = min_u64(n, f->maxlen);
	op = fsx_log_new(f, FSX_TRUNCATE, n, 0);
	if (ftruncate(f->fd, n))
		fsx_die(f, "ftruncate(0x%" PRIx64 "): %s", n, strerror(errno));
	if (n < f->size)
		memset(f->model + n, 0, f->size - n);
	f->size = n;
	op->size_after = n;
}

/* An unsupported mode is skipped and counted, never a failure. */
static bool falloc_unsupported(struct fsx *f, struct fsx_op *op, int err)
{
	if (err != EOPNOTSUPP && err != ENOSYS)
		return false;
	op->result = err;
	f->unsupported[op->type] = true;
	return true;
}

static void do_falloc(struct fsx *f, enum fsx_optype t)
{
	uint64_t len, off = pick_where(f, &len);
	struct fsx_op *op = fsx_log_new(f, t, off, len);
	static const int modes[FSX_NOPS] = {
		[FSX_FALLOC_KEEP] = FALLOC_FL_KEEP_SIZE,
		[FSX_PUNCH] = FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		[FSX_ZERO] = FALLOC_FL_ZERO_RANGE,
		[FSX_ZERO_KEEP] = FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
	};
	int mode = modes[t];
	if (fallocate(f->fd, mode, off, len)) {
		if (falloc_unsupported(f, op, errno))
			return;
		fsx_die(f, "fallocate(%s, 0x%" PRIx64 ", 0x%" PRIx64 "): %s",
			fsx_opname(t), off, len, strerror(errno));
	}
	if (t == FSX_FALLOC || t == FSX_ZERO)
		grow(f, off + len);
	if (t != FSX_FALLOC && t != FSX_FALLOC_KEEP && off < f->size)
		memset(f->model + off, 0, min_u64(len, f->size - off));
	op->size_after = f->size;
}

static void do_fsync(struct fsx *f)
{
	bool data = fsx_rnd(f, 2);

	fsx_log_new(f, FSX_FSYNC, 0, 0);
	if (data ? fdatasync(f->fd) : fsync(f->fd))
		fsx_die(f, "%s: %s", data ? "fdatasync" : "fsync",
			strerror(errno));
}

static void do_reopen(struct fsx *f)
{
	fsx_log_new(f, FSX_REOPEN, 0, 0);
	if (close(f->fd))
		fsx_die(f, "close: %s", strerror(errno));
	if (f->dfd >= 0 && close(f->dfd))
		fsx_die(f, "close of the O_DIRECT descriptor: %s",
			strerror(errno));
	fsx_open(f, false);
}

/* O_DIRECT needs aligned offsets, lengths and buffers. */
static uint64_t pick_aligned(struct fsx *f, uint64_t limit, uint64_t *len)
{
	uint64_t a = FSX_DIO_ALIGN, off;

	off = fsx_rnd(f, limit / a + 1) * a;
	*len = (1 + fsx_rnd(f, f->maxop / a)) * a;
	if (off + *len > f->maxlen) {
		off = f->maxlen / a * a;
		off = off >= *len ? off - *len : 0;
		*len = min_u64(*len, f->maxlen / a * a - off);
	}
	return off;
}

static void do_direct(struct fsx *f, enum fsx_optype t)
{
	bool wr = t == FSX_DIRECT_WRITE;
	uint64_t len, off = pick_aligned(f, wr ? f->maxlen : f->size, &len);
	struct fsx_op *op = fsx_log_new(f, t, off, len);
	uint64_t want, got;

	op->kind = wr ? fsx_rnd(f, FSX_NKINDS) : FSX_NKINDS;
	if (f->dfd < 0 || !len) {
		op->result = f->dfd < 0 ? EINVAL : 0;
		return;
	}
	if (wr) {
		fsx_fill(f, f->abuf, off, len, op->kind);
		pwrite_all(f, f->dfd, f->abuf, len, off);
		memcpy(f->model + off, f->abuf, len);
		grow(f, off + len);
		op->size_after = f->size;
		return;
	}
	want = off < f->size ? min_u64(len, f->size - off) : 0;
	got = pread_all(f, f->dfd, f->abuf, len, off);
	if (got != want)
		fsx_die(f, "O_DIRECT read of 0x%" PRIx64 " at 0x%" PRIx64
			" returned 0x%" PRIx64 " bytes, the model has 0x%"
			PRIx64, len, off, got, want);
	check(f, f->abuf, off, got, "direct read");
}

void fsx_verify(struct fsx *f)
{
	uint64_t got;
	struct stat st;

	fsx_log_new(f, FSX_VERIFY, 0, f->size);
	if (fstat(f->fd, &st))
		fsx_die(f, "fstat: %s", strerror(errno));
	if ((uint64_t)st.st_size != f->size)
		fsx_die(f, "file size 0x%" PRIx64 ", the model has 0x%" PRIx64,
			(uint64_t)st.st_size, f->size);
	got = pread_all(f, f->fd, f->buf, f->maxlen, 0);
	if (got != f->size)
		fsx_die(f, "reading the whole file gave 0x%" PRIx64
			" bytes, the model has 0x%" PRIx64, got, f->size);
	check(f, f->buf, 0, got, "full verify");
	f->done[FSX_VERIFY]++;
}

void fsx_do_op(struct fsx *f, enum fsx_optype t)
{
	switch (t) {
	case FSX_WRITE:
		do_write(f);
		break;
	case FSX_MAPWRITE:
		do_mapwrite(f);
		break;
	case FSX_READ:
		do_read(f);
		break;
	case FSX_MAPREAD:
		do_mapread(f);
		break;
	case FSX_TRUNCATE:
		do_truncate(f);
		break;
	case FSX_FALLOC:
	case FSX_FALLOC_KEEP:
	case FSX_PUNCH:
	case FSX_ZERO:
	case FSX_ZERO_KEEP:
		do_falloc(f, t);
		break;
	case FSX_FSYNC:
		do_fsync(f);
		break;
	case FSX_REOPEN:
		do_reopen(f);
		break;
	case FSX_DIRECT_WRITE:
	case FSX_DIRECT_READ:
		do_direct(f, t);
		break;
	case FSX_HANDLE_REOPEN:
		fsx_handle_reopen(f);
		break;
	case FSX_IMMUTABLE:
		fsx_immutable_moment(f);
		break;
	default:
		fsx_verify(f);
		return;
	}
	if (f->log[(f->nlogged - 1) % FSX_LOG_LEN].result)
		f->skipped[t]++;
	else
		f->done[t]++;
}

/* Opens (or creates, empty) the file; and its O_DIRECT twin with -Z. */
void fsx_open(struct fsx *f, bool create)
{
	struct sigaction sa = { .sa_handler = fsx_on_sigbus };

	f->fd = open(f->path, O_RDWR | (create ? O_CREAT | O_TRUNC : 0), 0644);
	if (f->fd < 0)
		fsx_die(f, "open %s: %s", f->path, strerror(errno));
	f->dfd = -1;
	if (f->direct) {
		f->dfd = open(f->path, O_RDWR | O_DIRECT);
		if (f->dfd < 0 && errno != EINVAL)
			fsx_die(f, "open %s with O_DIRECT: %s", f->path,
				strerror(errno));
		if (f->dfd < 0) {
			f->unsupported[FSX_DIRECT_READ] = true;
			f->unsupported[FSX_DIRECT_WRITE] = true;
		}
	}
	sigaction(SIGBUS, &sa, NULL);
}
