// SPDX-License-Identifier: MIT
/* zstd: one compression and one decompression context per codec. */
#include "config.h"

#include <errno.h>
#include <limits.h>

#include <zstd.h>
#include <zstd_errors.h>

#include "compress_int.h"
#include "util.h"

/*
 * czfs checks every cluster with its own crc32c and stores the length, so
 * the frame carries neither a checksum, a content size nor a dictionary id.
 */
static ZSTD_CCtx *zstd_cctx(struct czfs_codec *c)
{
	ZSTD_CCtx *cctx = c->zstd_cctx;

	if (cctx)
		return cctx;
	cctx = ZSTD_createCCtx();
	if (!cctx)
		return NULL;
	if (ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 0)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_dictIDFlag, 0)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_windowLog,
						CZFS_ZSTD_WINDOW_LOG))) {
		ZSTD_freeCCtx(cctx);
		return NULL;
	}
	c->zstd_cctx = cctx;
	return cctx;
}

static ZSTD_DCtx *zstd_dctx(struct czfs_codec *c)
{
	ZSTD_DCtx *dctx = c->zstd_dctx;

	if (dctx)
		return dctx;
	dctx = ZSTD_createDCtx();
	if (!dctx)
		return NULL;
	/*
	 * Refuse frames that ask for a window larger than a cluster.  The
	 * single-pass decoder used below allocates no window at all (dst is
	 * the window), so this only matters if streaming is ever used.
	 */
	if (ZSTD_isError(ZSTD_DCtx_setParameter(dctx, ZSTD_d_windowLogMax,
						CZFS_ZSTD_WINDOW_LOG))) {
		ZSTD_freeDCtx(dctx);
		return NULL;
	}
	c->zstd_dctx = dctx;
	return dctx;
}

static int zstd_compress(struct czfs_codec *c, int level, const void *src,
			 unsigned src_len, void *dst, unsigned dst_cap)
{
	ZSTD_CCtx *cctx = zstd_cctx(c);
	size_t n;

	if (!cctx)
		return -ENOMEM;
	level = czfs_compressor_level(&czfs_compressor_zstd, level);
	n = ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, level);
	if (!ZSTD_isError(n))
		n = ZSTD_compress2(cctx, dst, MIN(dst_cap, INT_MAX), src,
				   src_len);
	if (!ZSTD_isError(n))
		return (int)n;
	/* dst too small means "does not fit"; any other failure is treated
	 * the same, as storing the cluster raw is always correct. */
	return ZSTD_getErrorCode(n) == ZSTD_error_memory_allocation ? -ENOMEM : 0;
}

static int zstd_decompress(struct czfs_codec *c, const void *src,
			   unsigned src_len, void *dst, unsigned dst_len)
{
	ZSTD_DCtx *dctx = zstd_dctx(c);
	size_t n;

	if (!dctx)
		return -ENOMEM;
	n = ZSTD_decompressDCtx(dctx, dst, dst_len, src, src_len);
	if (ZSTD_isError(n))
		return ZSTD_getErrorCode(n) == ZSTD_error_memory_allocation ?
			-ENOMEM : -EFSCORRUPTED;
	return n == dst_len ? 0 : -EFSCORRUPTED;
}

void czfs_zstd_release(struct czfs_codec *c)
{
	ZSTD_freeCCtx(c->zstd_cctx);
	ZSTD_freeDCtx(c->zstd_dctx);
	c->zstd_cctx = NULL;
	c->zstd_dctx = NULL;
}

const struct czfs_compressor czfs_compressor_zstd = {
	.name = "zstd",
	.alg = CZFS_ALG_ZSTD,
	.min_level = 1,
	.max_level = 22,
	.default_level = 3,
	.compress = zstd_compress,
	.decompress = zstd_decompress,
};
