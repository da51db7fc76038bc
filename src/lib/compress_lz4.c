// SPDX-License-Identifier: MIT
/* lz4 and lz4hc: two encoders, one decoder (lz4hc emits lz4 blocks). */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include <lz4.h>
#include <lz4hc.h>

#include "compress_int.h"
#include "util.h"

/* The state is reset by every extState call, so it can be reused blindly. */
static void *lz4_get_state(void **slot, int size)
{
	if (!*slot)
		*slot = malloc((size_t)size);
	return *slot;
}

static int lz4_compress(struct czfs_codec *c, int level, const void *src,
			unsigned src_len, void *dst, unsigned dst_cap)
{
	void *state = lz4_get_state(&c->lz4_state, LZ4_sizeofState());

	if (!state)
		return -ENOMEM;
	if (src_len > LZ4_MAX_INPUT_SIZE)
		return 0;	/* cannot be a czfs cluster: store it raw */
	/* lz4 has one level: acceleration 1 (higher ones trade ratio). */
	return LZ4_compress_fast_extState(state, src, dst, (int)src_len,
					  (int)MIN(dst_cap, INT_MAX), 1);
}

static int lz4hc_compress(struct czfs_codec *c, int level, const void *src,
			  unsigned src_len, void *dst, unsigned dst_cap)
{
	void *state = lz4_get_state(&c->lz4hc_state, LZ4_sizeofStateHC());

	if (!state)
		return -ENOMEM;
	if (src_len > LZ4_MAX_INPUT_SIZE)
		return 0;
	level = czfs_compressor_level(&czfs_compressor_lz4hc, level);
	return LZ4_compress_HC_extStateHC(state, src, dst, (int)src_len,
					  (int)MIN(dst_cap, INT_MAX), level);
}

static int lz4_decompress(struct czfs_codec *c, const void *src,
			  unsigned src_len, void *dst, unsigned dst_len)
{
	int n;

	if (src_len > INT_MAX || dst_len > INT_MAX)
		return -EFSCORRUPTED;
	n = LZ4_decompress_safe(src, dst, (int)src_len, (int)dst_len);
	return n == (int)dst_len ? 0 : -EFSCORRUPTED;
}

void czfs_lz4_release(struct czfs_codec *c)
{
	free(c->lz4_state);
	free(c->lz4hc_state);
	c->lz4_state = c->lz4hc_state = NULL;
}

const struct czfs_compressor czfs_compressor_lz4 = {
	.name = "lz4",
	.alg = CZFS_ALG_LZ4,
	.min_level = 1,
	.max_level = 1,
	.default_level = 1,
	.compress = lz4_compress,
	.decompress = lz4_decompress,
};

const struct czfs_compressor czfs_compressor_lz4hc = {
	.name = "lz4hc",
	.alg = CZFS_ALG_LZ4HC,
	.min_level = LZ4HC_CLEVEL_MIN,
	.max_level = LZ4HC_CLEVEL_MAX,
	.default_level = LZ4HC_CLEVEL_DEFAULT,
	.compress = lz4hc_compress,
	.decompress = lz4_decompress,
};
