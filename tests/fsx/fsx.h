/* SPDX-License-Identifier: MIT */
/*
 * czfs_fsx: a random-operation exerciser in the style of fsx.  One file on
 * the filesystem under test, a model of its contents in memory, random
 * operations on both, and a check of the file against the model.
 *
 * Every random choice comes from one seeded generator and is drawn before
 * the operation runs, so a seed gives the same sequence of operations on
 * every filesystem, whether or not it supports a fallocate mode.
 */
#ifndef CZFS_FSX_H
#define CZFS_FSX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum fsx_optype {
	FSX_WRITE,
	FSX_MAPWRITE,
	FSX_READ,
	FSX_MAPREAD,
	FSX_TRUNCATE,
	FSX_FALLOC,		/* mode 0: may grow the file */
	FSX_FALLOC_KEEP,	/* FALLOC_FL_KEEP_SIZE */
	FSX_PUNCH,		/* FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE */
	FSX_ZERO,		/* FALLOC_FL_ZERO_RANGE: may grow the file */
	FSX_ZERO_KEEP,		/* FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE */
	FSX_FSYNC,
	FSX_REOPEN,		/* close and open again */
	FSX_DIRECT_WRITE,	/* O_DIRECT, 4 KiB aligned */
	FSX_DIRECT_READ,
	FSX_HANDLE_REOPEN,	/* close, open again by its file handle */
	FSX_IMMUTABLE,		/* chattr +i: writes fail with EPERM; -i */
	FSX_VERIFY,		/* whole-file compare */
	FSX_NOPS
};

/* How the data of a write is made: compressible or not. */
enum fsx_kind {
	FSX_DATA_RANDOM,
	FSX_DATA_ZERO,
	FSX_DATA_PATTERN,
	FSX_DATA_TEXT,
	FSX_DATA_STAMP,		/* "op number @ offset" records */
	FSX_NKINDS
};

struct fsx_op {
	uint64_t num;
	enum fsx_optype type;
	uint64_t off, len;
	uint64_t size_before, size_after;
	enum fsx_kind kind;
	int result;		/* 0, or the errno of a skipped operation */
};

#define FSX_LOG_LEN 50

struct fsx {
	/* options */
	uint64_t nops, seed, maxlen, maxop, bias, verify_period;
	uint64_t flip_after;	/* -X: corrupt the model after this op (0: never) */
	bool no_mmap, no_falloc, direct, verbose;
	bool existing;		/* -e: start from the file's bytes */
	const char *path, *dump_path;

	/* state */
	int fd, dfd;		/* dfd: the O_DIRECT descriptor, or -1 */
	uint64_t rng;
	unsigned char *model;	/* maxlen bytes; zero past size */
	uint64_t size;
	unsigned char *buf;	/* maxlen bytes: data of one op, read-back */
	unsigned char *abuf;	/* aligned buffer for O_DIRECT */
	uint64_t opnum;
	bool flipped;		/* -X: model byte flip_at reads inverted */
	uint64_t flip_at;

	/* op log: the last FSX_LOG_LEN operations */
	struct fsx_op log[FSX_LOG_LEN];
	uint64_t nlogged;

	/* statistics */
	uint64_t done[FSX_NOPS], skipped[FSX_NOPS];
	bool unsupported[FSX_NOPS];
};

/* fsx_util.c */
uint64_t fsx_rand(struct fsx *f);
uint64_t fsx_rnd(struct fsx *f, uint64_t n);
void fsx_fill(struct fsx *f, unsigned char *p, uint64_t off, uint64_t len,
	      enum fsx_kind kind);
const char *fsx_opname(enum fsx_optype t);
const char *fsx_kindname(enum fsx_kind k);
struct fsx_op *fsx_log_new(struct fsx *f, enum fsx_optype t, uint64_t off,
			   uint64_t len);
void fsx_log_print(const struct fsx *f, int64_t mark);
void fsx_print_op(const struct fsx_op *op, bool mark);
_Noreturn void fsx_die(const struct fsx *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void fsx_compare(const struct fsx *f, const unsigned char *got,
		 uint64_t off, uint64_t len, const char *what);

/* fsx_api.c */
void fsx_handle_reopen(struct fsx *f);
void fsx_immutable_moment(struct fsx *f);

/* fsx_ops.c */
void fsx_do_op(struct fsx *f, enum fsx_optype t);
void fsx_verify(struct fsx *f);
void fsx_open(struct fsx *f, bool create);

#endif
