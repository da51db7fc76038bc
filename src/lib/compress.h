/* SPDX-License-Identifier: MIT */
/*
 * Compressors behind a small table, one short file per backend
 * (compress_lz4.c, compress_zstd.c), dispatched by on-disk algorithm id.
 *
 * Threads: a struct czfs_codec holds the per-algorithm contexts (zstd
 * CCtx/DCtx, lz4hc state).  Allocate one per thread and reuse it; never
 * share one between threads.
 */
#ifndef CZFS_COMPRESS_H
#define CZFS_COMPRESS_H

#include "czfs_fs.h"

struct czfs_codec;

struct czfs_compressor {
	const char *name;		/* "lz4", "lz4hc", "zstd" */
	enum czfs_alg alg;
	int min_level, max_level;	/* accepted levels (0 = default) */
	int default_level;
	/*
	 * Compress src_len bytes into dst (capacity dst_cap).  level 0 means
	 * default_level.  Returns the compressed length (> 0), 0 when the
	 * result would not fit in dst_cap, or -ENOMEM.
	 */
	int (*compress)(struct czfs_codec *c, int level, const void *src,
			unsigned src_len, void *dst, unsigned dst_cap);
	/*
	 * Decompress exactly dst_len bytes.  Never reads past src + src_len
	 * nor writes past dst + dst_len, whatever the input.  Returns 0, or
	 * -EFSCORRUPTED when the input is malformed or decodes to a length
	 * other than dst_len, or -ENOMEM.
	 */
	int (*decompress)(struct czfs_codec *c, const void *src,
			  unsigned src_len, void *dst, unsigned dst_len);
};

/* The backend for alg, or NULL for CZFS_ALG_NONE and unknown ids. */
const struct czfs_compressor *czfs_compressor_get(int alg);

/* "lz4", "lz4hc", "zstd", "none", or "?" for an unknown id. */
const char *czfs_alg_name(int alg);

/*
 * Parse "ALG" or "ALG:LEVEL" ("lz4", "lz4hc:12", "zstd:19", "none").
 * Level 0 (or none given) selects the default.  Returns 0, or -EINVAL for
 * an unknown name, -ERANGE for a level out of the backend's range.
 */
int czfs_alg_parse(const char *spec, enum czfs_alg *alg, int *level);

/* Per-thread contexts; contexts are created on first use.  NULL on ENOMEM. */
struct czfs_codec *czfs_codec_new(void);
void czfs_codec_free(struct czfs_codec *c);	/* accepts NULL */

#endif /* CZFS_COMPRESS_H */
