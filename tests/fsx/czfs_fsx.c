// SPDX-License-Identifier: MIT
/*
 * czfs_fsx: random operations on one file, checked against a model.
 *
 *   czfs_fsx [options] FILE
 *
 * Exit status: 0 when every check passed, 1 on a mismatch or a failed
 * system call (the op log and the bytes are printed), 2 on bad usage.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsx.h"

/* How often each op is drawn, out of the sum of the enabled ones. */
static const unsigned fsx_weights[FSX_NOPS] = {
	[FSX_WRITE] = 20,
	[FSX_MAPWRITE] = 8,
	[FSX_READ] = 16,
	[FSX_MAPREAD] = 8,
	[FSX_TRUNCATE] = 7,
	[FSX_FALLOC] = 3,
	[FSX_FALLOC_KEEP] = 3,
	[FSX_PUNCH] = 5,
	[FSX_ZERO] = 2,
	[FSX_ZERO_KEEP] = 2,
	[FSX_FSYNC] = 3,
	[FSX_REOPEN] = 2,
	[FSX_DIRECT_WRITE] = 3,
	[FSX_DIRECT_READ] = 3,
	[FSX_HANDLE_REOPEN] = 1,
	[FSX_IMMUTABLE] = 1,
};

static void usage(FILE *out)
{
	fprintf(out,
"usage: czfs_fsx [options] FILE\n"
"  -N OPS     operations (default 10000)\n"
"  -S SEED    seed of the generator (default 1)\n"
"  -l LEN     largest file length (default 4M)\n"
"  -c SIZE    boundary to favour, like a cluster size (default 64k)\n"
"  -o SIZE    largest single operation (default 256k)\n"
"  -p OPS     verify the whole file every OPS ops (default 1000; 0: only\n"
"             at the end)\n"
"  -M         no mmap reads or writes\n"
"  -F         no fallocate\n"
"  -Z         also O_DIRECT reads and writes (4 KiB aligned)\n"
"  -d FILE    write the final model (the expected file) to FILE\n"
"  -e         start from the file as it is (its bytes the first model)\n"
"  -X OP      self-test: invert one model byte after op OP (must fail)\n"
"  -v         print every operation\n");
}

static uint64_t parse_size(const char *s, const char *what)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (errno || end == s || *end || *s == '-') {
		fprintf(stderr, "czfs_fsx: bad %s '%s'\n", what, s);
		exit(2);
	}
	return v;
}

static void parse_args(struct fsx *f, int argc, char **argv)
{
	int c;

	while ((c = getopt(argc, argv, "N:S:l:c:o:p:MFZd:eX:vh")) != -1) {
		switch (c) {
		case 'N': f->nops = parse_size(optarg, "op count"); break;
		case 'S': f->seed = parse_size(optarg, "seed"); break;
		case 'l': f->maxlen = parse_size(optarg, "length"); break;
		case 'c': f->bias = parse_size(optarg, "boundary"); break;
		case 'o': f->maxop = parse_size(optarg, "op size"); break;
		case 'p': f->verify_period = parse_size(optarg, "period"); break;
		case 'M': f->no_mmap = true; break;
		case 'F': f->no_falloc = true; break;
		case 'Z': f->direct = true; break;
		case 'd': f->dump_path = optarg; break;
		case 'e': f->existing = true; break;
		case 'X': f->flip_after = parse_size(optarg, "op"); break;
		case 'v': f->verbose = true; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind != argc - 1 || !f->maxlen || !f->maxop || !f->bias) {
		usage(stderr);
		exit(2);
	}
	f->path = argv[optind];
	if (f->maxop > f->maxlen)
		f->maxop = f->maxlen;
}

static bool op_enabled(const struct fsx *f, enum fsx_optype t)
{
	switch (t) {
	case FSX_MAPWRITE:
	case FSX_MAPREAD:
		return !f->no_mmap;
	case FSX_FALLOC:
	case FSX_FALLOC_KEEP:
	case FSX_PUNCH:
	case FSX_ZERO:
	case FSX_ZERO_KEEP:
		return !f->no_falloc;
	case FSX_DIRECT_WRITE:
	case FSX_DIRECT_READ:
		return f->direct;
	default:
		return !f->unsupported[t];
	}
}

static enum fsx_optype choose_op(struct fsx *f)
{
	unsigned total = 0, r;
	int t;

	for (t = 0; t < FSX_NOPS; t++)
		total += op_enabled(f, t) ? fsx_weights[t] : 0;
	r = fsx_rnd(f, total);
	for (t = 0; t < FSX_NOPS; t++) {
		if (!op_enabled(f, t))
			continue;
		if (r < fsx_weights[t])
			break;
		r -= fsx_weights[t];
	}
	return t;
}

/* After every op: the size the kernel reports must be the model's. */
static void check_size(struct fsx *f)
{
	struct stat st;

	if (fstat(f->fd, &st))
		fsx_die(f, "fstat: %s", strerror(errno));
	if ((uint64_t)st.st_size != f->size)
		fsx_die(f, "st_size 0x%" PRIx64 ", the model has 0x%" PRIx64,
			(uint64_t)st.st_size, f->size);
}

/* -X: from now on one model byte (in the first 4 KiB) reads inverted. */
static void maybe_flip(struct fsx *f)
{
	if (!f->flip_after || f->flipped || f->opnum < f->flip_after ||
	    !f->size)
		return;
	f->flip_at = (f->seed * 2654435761ULL + f->opnum) %
		     (f->size < 4096 ? f->size : 4096);
	f->flipped = true;
	fprintf(stderr, "czfs_fsx: self-test: model byte 0x%" PRIx64
		" inverted after op %" PRIu64 "\n", f->flip_at, f->opnum);
}

static void dump_model(struct fsx *f)
{
	FILE *out = fopen(f->dump_path, "wb");

	if (!out || fwrite(f->model, 1, f->size, out) != f->size ||
	    fclose(out))
		fsx_die(f, "writing the model to %s: %s", f->dump_path,
			strerror(errno));
}

static void print_summary(const struct fsx *f)
{
	int t;

	printf("czfs_fsx: seed %" PRIu64 ": %" PRIu64 " ops passed, final "
	       "size 0x%" PRIx64 "\n", f->seed, f->nops, f->size);
	for (t = 0; t < FSX_NOPS; t++) {
		if (!f->done[t] && !f->skipped[t])
			continue;
		printf("  %-15s %5" PRIu64, fsx_opname(t), f->done[t]);
		if (f->skipped[t])
			printf("  (%" PRIu64 " skipped: not supported)",
			       f->skipped[t]);
		printf("\n");
	}
}

static void *alloc_or_die(size_t align, size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, align, len ? len : 1)) {
		fprintf(stderr, "czfs_fsx: out of memory\n");
		exit(2);
	}
	memset(p, 0, len);
	return p;
}

/* -e: the file's bytes (up to -l) are the model to start from. */
static void load_existing(struct fsx *f)
{
	struct stat st;
	uint64_t done = 0;

	if (fstat(f->fd, &st))
		fsx_die(f, "fstat: %s", strerror(errno));
	if ((uint64_t)st.st_size > f->maxlen)
		fsx_die(f, "-e: the file is larger than -l");
	f->size = (uint64_t)st.st_size;
	while (done < f->size) {
		ssize_t n = pread(f->fd, f->model + done, f->size - done,
				  (off_t)done);

		if (n <= 0)
			fsx_die(f, "-e: reading the file: %s",
				n ? strerror(errno) : "short");
		done += (uint64_t)n;
	}
}

int main(int argc, char **argv)
{
	struct fsx f = {
		.nops = 10000, .seed = 1, .maxlen = 4 << 20, .bias = 65536,
		.maxop = 256 << 10, .verify_period = 1000, .fd = -1, .dfd = -1,
	};
	enum fsx_optype t;

	parse_args(&f, argc, argv);
	f.rng = f.seed;
	f.model = alloc_or_die(64, f.maxlen);
	f.buf = alloc_or_die(4096, f.maxlen + 4096);
	f.abuf = alloc_or_die(4096, f.maxlen + 4096);
	fsx_open(&f, !f.existing);
	if (f.existing)
		load_existing(&f);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (f.opnum = 1; f.opnum <= f.nops; f.opnum++) {
		t = choose_op(&f);
		fsx_do_op(&f, t);
		if (f.verbose)
			fsx_print_op(&f.log[(f.nlogged - 1) % FSX_LOG_LEN],
				     false);
		check_size(&f);
		maybe_flip(&f);
		if (f.verify_period && f.opnum % f.verify_period == 0)
			fsx_verify(&f);
	}
	f.opnum = f.nops;
	fsx_verify(&f);
	if (f.dump_path)
		dump_model(&f);
	print_summary(&f);
	close(f.fd);
	if (f.dfd >= 0)
		close(f.dfd);
	free(f.model);
	free(f.buf);
	free(f.abuf);
	return 0;
}
