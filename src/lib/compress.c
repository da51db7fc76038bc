// SPDX-License-Identifier: MIT
/* The compressor table, algorithm names and the per-thread codec. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "compress_int.h"
#include "util.h"

static const struct czfs_compressor *const compressors[CZFS_ALG_MAX + 1] = {
	[CZFS_ALG_LZ4]		= &czfs_compressor_lz4,
	[CZFS_ALG_LZ4HC]	= &czfs_compressor_lz4hc,
	[CZFS_ALG_ZSTD]		= &czfs_compressor_zstd,
};

const struct czfs_compressor *czfs_compressor_get(int alg)
{
	if (alg < 0 || alg > CZFS_ALG_MAX)
		return NULL;
	return compressors[alg];
}

const char *czfs_alg_name(int alg)
{
	const struct czfs_compressor *comp;

	if (alg == CZFS_ALG_NONE)
		return "none";
	comp = czfs_compressor_get(alg);
	return comp ? comp->name : "?";
}

/* A level is decimal digits only: no sign, no spaces, no suffix. */
static int parse_level(const char *s, int *level)
{
	long v = 0;

	if (!*s)
		return -ERANGE;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -ERANGE;
		v = v * 10 + (*s - '0');
		if (v > INT_MAX)
			return -ERANGE;
	}
	*level = (int)v;
	return 0;
}

static int alg_lookup(const char *name, size_t len, enum czfs_alg *alg)
{
	for (int i = 0; i <= CZFS_ALG_MAX; i++) {
		const char *n = czfs_alg_name(i);

		if (strlen(n) == len && !memcmp(n, name, len)) {
			*alg = (enum czfs_alg)i;
			return 0;
		}
	}
	return -EINVAL;
}

int czfs_alg_parse(const char *spec, enum czfs_alg *alg, int *level)
{
	const struct czfs_compressor *comp;
	const char *colon;
	enum czfs_alg a;
	int lvl = 0, err;

	if (!spec)
		return -EINVAL;
	colon = strchr(spec, ':');
	err = alg_lookup(spec, colon ? (size_t)(colon - spec) : strlen(spec), &a);
	if (err)
		return err;
	comp = czfs_compressor_get(a);
	if (colon) {
		/* "none" has no levels: "none:5" names nothing. */
		if (!comp)
			return -EINVAL;
		err = parse_level(colon + 1, &lvl);
		if (err)
			return err;
		if (lvl && (lvl < comp->min_level || lvl > comp->max_level))
			return -ERANGE;
	}
	*alg = a;
	*level = lvl;
	return 0;
}

struct czfs_codec *czfs_codec_new(void)
{
	return calloc(1, sizeof(struct czfs_codec));
}

void czfs_codec_free(struct czfs_codec *c)
{
	if (!c)
		return;
	czfs_lz4_release(c);
	czfs_zstd_release(c);
	free(c);
}
