// SPDX-License-Identifier: MIT
/*
 * czfs_fsx helpers: the random generator, the data of writes, the op log
 * and the report of a mismatch.
 */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsx.h"

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Our own generator, not rand(): the same sequence on every libc. */
uint64_t fsx_rand(struct fsx *f)
{
	return splitmix64(&f->rng);
}

/* Uniform enough in [0, n); 0 when n is 0. */
uint64_t fsx_rnd(struct fsx *f, uint64_t n)
{
	return n ? fsx_rand(f) % n : 0;
}

static void fill_random(uint64_t *s, unsigned char *p, uint64_t len)
{
	uint64_t i, v;

	for (i = 0; i + 8 <= len; i += 8) {
		v = splitmix64(s);
		memcpy(p + i, &v, 8);
	}
	v = splitmix64(s);
	memcpy(p + i, &v, len - i);
}

/* Copies the first PERIOD bytes over the rest, doubling each time. */
static void repeat(unsigned char *p, uint64_t period, uint64_t len)
{
	uint64_t have = period < len ? period : len, n;

	while (have < len) {
		n = have < len - have ? have : len - have;
		memcpy(p + have, p, n);
		have += n;
	}
}

static void fill_pattern(uint64_t *s, unsigned char *p, uint64_t len)
{
	unsigned char pat[64];
	uint64_t period = 1 + splitmix64(s) % sizeof(pat);

	fill_random(s, pat, period);
	memcpy(p, pat, period < len ? period : len);
	repeat(p, period, len);
}

static const char *const fsx_words[] = {
	"the", "cluster", "of", "a", "compressed", "file", "is", "written",
	"out", "place", "and", "read", "back", "block", "extent", "inode",
	"checkpoint", "to", "in", "space", "map", "with", "zstd", "lz4",
};

/* Text-like: words, spaces and newlines, as a compressor meets in logs. */
static void fill_text(uint64_t *s, unsigned char *p, uint64_t len)
{
	uint64_t i = 0, col = 0;
	const char *w;
	size_t n;

	while (i < len) {
		w = fsx_words[splitmix64(s) % (sizeof(fsx_words) /
					       sizeof(fsx_words[0]))];
		n = strlen(w);
		col += n + 1;
		if (n > len - i)
			n = len - i;
		memcpy(p + i, w, n);
		i += n;
		if (i < len)
			p[i++] = col > 70 ? '\n' : ' ';
		if (col > 70)
			col = 0;
	}
}

static void hex7(char *p, uint64_t v)
{
	int i;

	for (i = 6; i >= 0; i--, v >>= 4)
		p[i] = "0123456789abcdef"[v & 15];
}

/* 16-byte records "OOOOOOO@PPPPPPP\n": which op wrote which 16 bytes. */
static void fill_stamp(uint64_t opnum, unsigned char *p, uint64_t off,
		       uint64_t len)
{
	char rec[16];
	uint64_t o = off & ~15ULL, n, skip;

	rec[7] = '@';
	rec[15] = '\n';
	hex7(rec, opnum);
	while (o < off + len) {
		hex7(rec + 8, o / 16);
		skip = o < off ? off - o : 0;
		n = 16 - skip;
		if (n > off + len - (o + skip))
			n = off + len - (o + skip);
		memcpy(p + (o + skip - off), rec + skip, n);
		o += 16;
	}
}

/*
 * The data of the write at OFF, LEN of the current op.  It comes from a
 * generator of its own, seeded from the seed and the op number, so the
 * amount of data never shifts the sequence of operations.
 */
void fsx_fill(struct fsx *f, unsigned char *p, uint64_t off, uint64_t len,
	      enum fsx_kind kind)
{
	uint64_t s = f->seed * 0x2545f4914f6cdd1dULL ^ f->opnum;

	switch (kind) {
	case FSX_DATA_RANDOM:
		fill_random(&s, p, len);
		break;
	case FSX_DATA_ZERO:
		memset(p, 0, len);
		break;
	case FSX_DATA_PATTERN:
		fill_pattern(&s, p, len);
		break;
	case FSX_DATA_TEXT:
		fill_text(&s, p, len);
		break;
	default:
		fill_stamp(f->opnum, p, off, len);
		break;
	}
}

static const char *const fsx_opnames[FSX_NOPS] = {
	[FSX_WRITE] = "write",
	[FSX_MAPWRITE] = "mapwrite",
	[FSX_READ] = "read",
	[FSX_MAPREAD] = "mapread",
	[FSX_TRUNCATE] = "truncate",
	[FSX_FALLOC] = "falloc",
	[FSX_FALLOC_KEEP] = "falloc_keep",
	[FSX_PUNCH] = "punch_hole",
	[FSX_ZERO] = "zero_range",
	[FSX_ZERO_KEEP] = "zero_range_keep",
	[FSX_FSYNC] = "fsync",
	[FSX_REOPEN] = "close_open",
	[FSX_DIRECT_WRITE] = "direct_write",
	[FSX_DIRECT_READ] = "direct_read",
	[FSX_HANDLE_REOPEN] = "handle_open",
	[FSX_IMMUTABLE] = "immutable",
	[FSX_VERIFY] = "verify",
};

const char *fsx_opname(enum fsx_optype t)
{
	return fsx_opnames[t];
}

static const char *const fsx_kindnames[FSX_NKINDS] = {
	"random", "zero", "pattern", "text", "stamp",
};

const char *fsx_kindname(enum fsx_kind k)
{
	return fsx_kindnames[k];
}

/* A new entry of the op log (a ring of the last FSX_LOG_LEN ops). */
struct fsx_op *fsx_log_new(struct fsx *f, enum fsx_optype t, uint64_t off,
			   uint64_t len)
{
	struct fsx_op *op = &f->log[f->nlogged++ % FSX_LOG_LEN];

	memset(op, 0, sizeof(*op));
	op->num = f->opnum;
	op->type = t;
	op->off = off;
	op->len = len;
	op->size_before = f->size;
	op->size_after = f->size;
	op->kind = FSX_NKINDS;
	return op;
}

void fsx_print_op(const struct fsx_op *op, bool mark)
{
	printf("%c%8" PRIu64 " %-15s off 0x%08" PRIx64 " len 0x%06" PRIx64
	       " (end 0x%08" PRIx64 ") size 0x%" PRIx64 "->0x%" PRIx64,
	       mark ? '*' : ' ', op->num, fsx_opname(op->type), op->off,
	       op->len, op->off + op->len, op->size_before, op->size_after);
	if (op->kind < FSX_NKINDS)
		printf(" %s", fsx_kindname(op->kind));
	if (op->result)
		printf(" skipped (%s)", strerror(op->result));
	printf("\n");
}

/* Does OP touch file offset AT (write it, or move EOF across it)? */
static bool op_touches(const struct fsx_op *op, uint64_t at)
{
	uint64_t lo = op->size_before < op->size_after ? op->size_before :
			op->size_after;
	uint64_t hi = op->size_before ^ op->size_after ^ lo;

	if (at >= op->off && at < op->off + op->len)
		return true;
	return at >= lo && at < hi;
}

/* The last ops, oldest first; those touching offset MARK get a '*'. */
void fsx_log_print(const struct fsx *f, int64_t mark)
{
	uint64_t i, first = f->nlogged > FSX_LOG_LEN ?
			    f->nlogged - FSX_LOG_LEN : 0;
	const struct fsx_op *op;

	printf("LOG: the last %" PRIu64 " operations (* = touched offset",
	       f->nlogged - first);
	if (mark >= 0)
		printf(" 0x%" PRIx64 ")\n", (uint64_t)mark);
	else
		printf(": none given)\n");
	for (i = first; i < f->nlogged; i++) {
		op = &f->log[i % FSX_LOG_LEN];
		fsx_print_op(op, mark >= 0 && op_touches(op, mark));
	}
}

_Noreturn void fsx_die(const struct fsx *f, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	printf("FAIL: seed %" PRIu64 " op %" PRIu64 ": ", f->seed, f->opnum);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fsx_log_print(f, -1);
	fflush(stdout);
	exit(1);
}

static void hex_row(const char *label, const unsigned char *p, uint64_t off,
		    uint64_t from, uint64_t to)
{
	uint64_t i;

	printf("  %s 0x%08" PRIx64 ":", label, off + from);
	for (i = from; i < to; i++)
		printf(" %02x", p[i]);
	printf("\n");
}

/* Compare GOT (file bytes OFF..OFF+LEN) with the model; on a difference
 * print it and the op log, and exit 1. */
void fsx_compare(const struct fsx *f, const unsigned char *got,
		 uint64_t off, uint64_t len, const char *what)
{
	const unsigned char *want = f->model + off;
	uint64_t i, first, last, bad = 0, row, end;

	if (!memcmp(want, got, len))
		return;
	for (first = 0; want[first] == got[first]; first++)
		;
	for (i = first, last = first; i < len; i++) {
		if (want[i] != got[i]) {
			bad++;
			last = i;
		}
	}
	fflush(stdout);
	printf("MISMATCH: seed %" PRIu64 " op %" PRIu64 " (%s of 0x%" PRIx64
	       " bytes at 0x%" PRIx64 "), file size 0x%" PRIx64 "\n",
	       f->seed, f->opnum, what, len, off, f->size);
	printf("  first bad offset 0x%" PRIx64 " (%" PRIu64 "), last 0x%"
	       PRIx64 ", %" PRIu64 " bytes differ\n", off + first,
	       off + first, off + last, bad);
	row = first & ~15ULL;
	end = row + 64 < len ? row + 64 : len;
	for (; row < end; row += 16) {
		i = row + 16 < end ? row + 16 : end;
		hex_row("expected", want, off, row, i);
		hex_row("got     ", got, off, row, i);
	}
	fsx_log_print(f, (int64_t)(off + first));
	fflush(stdout);
	exit(1);
}
