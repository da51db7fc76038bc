/* codecfloor: the CPU a codec spends decoding a file cut into independent
 * blocks, as the filesystems store it: bench/ddread's floor is nullfuse's
 * CPU plus this.  Each BLOCK of FILE is compressed on its own (lz4:
 * LZ4_compress_default; zstd: level LEVEL); then every block is decoded
 * (LZ4_decompress_safe, or ZSTD_decompressDCtx with one context reused)
 * into one buffer, ROUNDS times, timed by the thread's CPU clock, so the
 * figure holds on a loaded machine where a wall-clock benchmark (lz4 -b,
 * zstd -b) does not.
 *
 *   cc -O2 -o codecfloor codecfloor.c -llz4 -lzstd
 *   codecfloor lz4|zstd[:LEVEL] FILE [BLOCK [ROUNDS]]
 *
 * prints "decode_cpu_s_per_GB MB_per_cpu_s ratio" (GB and MB of decoded
 * bytes, 10^9 and 10^6).  Not part of czfs: built by the benchmark.
 */
#include <lz4.h>
#include <zstd.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct blk {
	size_t off;	/* of the compressed block in the compressed buffer */
	size_t clen;	/* its compressed length */
	size_t len;	/* its decoded length */
};

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Compresses the NB blocks of SRC into DST; returns the bytes written, or
 * 0 on a codec error. */
static size_t compress_all(int zstd, int level, const char *src, size_t size,
			   size_t bs, char *dst, size_t cap, struct blk *b)
{
	size_t o = 0, i = 0, r;

	for (size_t at = 0; at < size; at += bs, i++) {
		b[i].len = size - at < bs ? size - at : bs;
		b[i].off = o;
		if (zstd) {
			r = ZSTD_compress(dst + o, cap - o, src + at, b[i].len, level);
			if (ZSTD_isError(r))
				return 0;
		} else {
			int n = LZ4_compress_default(src + at, dst + o, (int)b[i].len,
						     (int)(cap - o));
			if (n <= 0)
				return 0;
			r = (size_t)n;
		}
		b[i].clen = r;
		o += r;
	}
	return o;
}

/* Decodes every block once into OUT; returns 0 or -EILSEQ on a block that
 * does not decode to its length. */
static int decode_all(int zstd, ZSTD_DCtx *dctx, const char *cbuf,
		      const struct blk *b, size_t nb, char *out)
{
	for (size_t i = 0; i < nb; i++) {
		size_t n;

		if (zstd)
			n = ZSTD_decompressDCtx(dctx, out, b[i].len, cbuf + b[i].off, b[i].clen);
		else
			n = (size_t)LZ4_decompress_safe(cbuf + b[i].off, out, (int)b[i].clen,
							(int)b[i].len);
		if (n != b[i].len)
			return -EILSEQ;
	}
	return 0;
}

int main(int argc, char **argv)
{
	size_t bs = argc > 3 ? strtoul(argv[3], NULL, 0) : 65536, size, nb, csize, cap;
	int rounds = argc > 4 ? atoi(argv[4]) : 3, zstd, level = 3, fd, ret = 1;
	double best = 0, t;
	struct stat st;
	char *src = MAP_FAILED, *cbuf = NULL, *out = NULL;
	struct blk *b = NULL;
	ZSTD_DCtx *dctx = NULL;

	if (argc < 3 || bs == 0 || rounds < 1) {
		fprintf(stderr, "usage: %s lz4|zstd[:LEVEL] FILE [BLOCK [ROUNDS]]\n", argv[0]);
		return 2;
	}
	zstd = !strncmp(argv[1], "zstd", 4);
	if (zstd && argv[1][4] == ':')
		level = atoi(argv[1] + 5);
	fd = open(argv[2], O_RDONLY);
	if (fd < 0 || fstat(fd, &st) || st.st_size == 0) {
		perror(argv[2]);
		return 1;
	}
	size = st.st_size;
	src = mmap(NULL, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
	close(fd);
	nb = (size + bs - 1) / bs;
	cap = size + nb * (zstd ? ZSTD_compressBound(bs) - bs : (size_t)LZ4_compressBound((int)bs) - bs);
	cbuf = malloc(cap);
	out = malloc(bs);
	b = calloc(nb, sizeof(*b));
	dctx = ZSTD_createDCtx();
	if (src == MAP_FAILED || !cbuf || !out || !b || !dctx)
		goto out;
	csize = compress_all(zstd, level, src, size, bs, cbuf, cap, b);
	if (!csize)
		goto out;
	for (int r = 0; r < rounds; r++) {	/* the best round: the least disturbed */
		t = cpu_now();
		if (decode_all(zstd, dctx, cbuf, b, nb, out))
			goto out;
		t = cpu_now() - t;
		if (r == 0 || t < best)
			best = t;
	}
	printf("%.3f %.0f %.3f\n", best / (size / 1e9), size / 1e6 / best, (double)size / csize);
	ret = 0;
out:
	if (ret)
		fprintf(stderr, "%s: cannot measure %s\n", argv[0], argv[1]);
	ZSTD_freeDCtx(dctx);
	free(b);
	free(out);
	free(cbuf);
	if (src != MAP_FAILED)
		munmap(src, size);
	return ret;
}
