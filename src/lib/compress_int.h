/* SPDX-License-Identifier: MIT */
/*
 * Private to the compressor files: the codec's contexts and the backend
 * tables.  Other modules use compress.h only.
 */
#ifndef CZFS_COMPRESS_INT_H
#define CZFS_COMPRESS_INT_H

#include "compress.h"

struct ZSTD_CCtx_s;
struct ZSTD_DCtx_s;

/* Contexts are created by a backend on its first use (NULL until then). */
struct czfs_codec {
	void *lz4_state;		/* LZ4_sizeofState() bytes */
	void *lz4hc_state;		/* LZ4_sizeofStateHC() bytes */
	struct ZSTD_CCtx_s *zstd_cctx;
	struct ZSTD_DCtx_s *zstd_dctx;
};

/* Largest zstd window: one cluster; bounds what a hostile frame may ask. */
#define CZFS_ZSTD_WINDOW_LOG	(CZFS_BLOCK_SHIFT + CZFS_MAX_CLUSTER_SHIFT)

extern const struct czfs_compressor czfs_compressor_lz4;
extern const struct czfs_compressor czfs_compressor_lz4hc;
extern const struct czfs_compressor czfs_compressor_zstd;

/* Free what each backend allocated in c. */
void czfs_lz4_release(struct czfs_codec *c);
void czfs_zstd_release(struct czfs_codec *c);

/*
 * The level a backend really uses: 0 means its default, and a level out of
 * range (from a damaged inode, say) is clamped rather than refused.  Here,
 * so that the backends call nothing of compress.c, which calls them.
 */
static inline int czfs_compressor_level(const struct czfs_compressor *comp,
					int level)
{
	if (level == 0)
		return comp->default_level;
	return level < comp->min_level ? comp->min_level :
	       level > comp->max_level ? comp->max_level : level;
}

#endif /* CZFS_COMPRESS_INT_H */
