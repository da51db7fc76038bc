// SPDX-License-Identifier: MIT
/*
 * SipHash-2-4 (Aumasson and Bernstein), 64- and 128-bit outputs, and the
 * name hash built on it.
 */
#include "config.h"

#include <stdbool.h>
#include <string.h>

#include "czfs_fs.h"
#include "hash.h"
#include "util.h"

#define ROTL64(x, b)	(((x) << (b)) | ((x) >> (64 - (b))))

static inline void sip_round(uint64_t v[4])
{
	v[0] += v[1];
	v[1] = ROTL64(v[1], 13);
	v[1] ^= v[0];
	v[0] = ROTL64(v[0], 32);
	v[2] += v[3];
	v[3] = ROTL64(v[3], 16);
	v[3] ^= v[2];
	v[0] += v[3];
	v[3] = ROTL64(v[3], 21);
	v[3] ^= v[0];
	v[2] += v[1];
	v[1] = ROTL64(v[1], 17);
	v[1] ^= v[2];
	v[2] = ROTL64(v[2], 32);
}

/* Absorb one 64-bit message word: c = 2 compression rounds. */
static inline void sip_absorb(uint64_t v[4], uint64_t m)
{
	v[3] ^= m;
	sip_round(v);
	sip_round(v);
	v[0] ^= m;
}

/*
 * Key setup and compression of every message word, the last one included:
 * what both output lengths share.  The 128-bit variant differs only in
 * the xor of v1 here (wide) and in its finalization.
 */
static void sip_compress(uint64_t v[4], const uint64_t key[2],
			 const void *data, size_t len, bool wide)
{
	const unsigned char *p = data;
	uint64_t m, last = (uint64_t)len << 56;
	size_t i, whole = len & ~(size_t)7;

	v[0] = key[0] ^ 0x736f6d6570736575ull;	/* "somepseu" */
	v[1] = key[1] ^ 0x646f72616e646f6dull;	/* "dorandom" */
	v[2] = key[0] ^ 0x6c7967656e657261ull;	/* "lygenera" */
	v[3] = key[1] ^ 0x7465646279746573ull;	/* "tedbytes" */
	if (wide)
		v[1] ^= 0xee;
	for (i = 0; i < whole; i += 8) {
		memcpy(&m, p + i, 8);
		sip_absorb(v, le64_to_cpu(m));
	}
	/* The final word: leftover bytes, little-endian, length in the top. */
	for (i = whole; i < len; i++)
		last |= (uint64_t)p[i] << (8 * (i - whole));
	sip_absorb(v, last);
}

/* d = 4 finalization rounds after the xor of v2 (or v1) with mark. */
static uint64_t sip_final(uint64_t v[4], uint64_t *vm, uint64_t mark)
{
	*vm ^= mark;
	for (int i = 0; i < 4; i++)
		sip_round(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

uint64_t czfs_siphash(const uint64_t key[2], const void *data, size_t len)
{
	uint64_t v[4];

	sip_compress(v, key, data, len, false);
	return sip_final(v, &v[2], 0xff);
}

void czfs_siphash128(const uint64_t key[2], const void *data, size_t len,
		     uint64_t out[2])
{
	uint64_t v[4];

	sip_compress(v, key, data, len, true);
	out[0] = sip_final(v, &v[2], 0xee);
	out[1] = sip_final(v, &v[1], 0xdd);
}

uint64_t czfs_name_hash(const uint64_t seed[2], const char *name, size_t len)
{
	return czfs_siphash(seed, name, len) &
	       ((1ull << CZFS_DIRHASH_BITS) - 1);
}

int czfs_rec_find(const struct czfs_rec_kind *kind, const void *val,
		  unsigned size, const char *name, size_t len, void *rec,
		  unsigned *at, unsigned *end)
{
	unsigned pos = 0, start = 0, n;
	const char *s;
	int ret;

	while ((ret = kind->next(val, size, &pos, rec)) > 0) {
		kind->name(rec, &s, &n);
		if (n == len && !memcmp(s, name, len)) {
			*at = start;
			*end = pos;
			return 1;
		}
		start = pos;
	}
	return ret;
}
