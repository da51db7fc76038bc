// SPDX-License-Identifier: MIT
#include "config.h"

#include <pthread.h>
#include <string.h>

#include "crc32c.h"

#define CRC32C_POLY	0x82f63b78u	/* reflected Castagnoli polynomial */

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static int have_sse42;

/*
 * The crc32 instruction takes 3 cycles but can start one every cycle:
 * one stream of it runs at a third of what the unit can do.  Long buffers
 * are cut into three equal blocks whose CRCs run interleaved, then joined
 * (as the kernel's crc32c-pcl and zlib's crc32_combine do): joining needs
 * the register moved past a block of zeros, which is linear in the
 * register, so four byte tables per block length do it.
 */
#define LONG_BLOCK	2048u
#define SHORT_BLOCK	256u
static uint32_t zeros_long[4][256], zeros_short[4][256];

/* The raw register c after len zero bytes, bit by bit (init only). */
static uint32_t zeros_slow(uint32_t c, size_t len)
{
	for (size_t i = 0; i < len * 8; i++)
		c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
	return c;
}

static void zeros_table(uint32_t t[4][256], size_t len)
{
	uint32_t bit[32];

	for (int b = 0; b < 32; b++)
		bit[b] = zeros_slow(1u << b, len);
	for (int k = 0; k < 4; k++)
		for (unsigned n = 0; n < 256; n++) {
			uint32_t v = 0;

			for (int b = 0; b < 8; b++)
				if (n & (1u << b))
					v ^= bit[8 * k + b];
			t[k][n] = v;
		}
}

static uint32_t zeros_shift(const uint32_t t[4][256], uint32_t c)
{
	return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^
	       t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
}

static void crc32c_init(void)
{
	for (unsigned n = 0; n < 256; n++) {
		uint32_t c = n;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
		crc_table[0][n] = c;
	}
	for (unsigned n = 0; n < 256; n++)
		for (int k = 1; k < 8; k++)
			crc_table[k][n] = (crc_table[k - 1][n] >> 8) ^
					  crc_table[0][crc_table[k - 1][n] & 0xff];
	zeros_table(zeros_long, LONG_BLOCK);
	zeros_table(zeros_short, SHORT_BLOCK);
#if defined(__x86_64__)
	__builtin_cpu_init();
	have_sse42 = __builtin_cpu_supports("sse4.2");
#endif
}

/* Slicing-by-8 over the raw (pre-inverted) register. */
static uint32_t crc32c_sw_raw(uint32_t c, const unsigned char *p, size_t len)
{
	while (len && ((uintptr_t)p & 7)) {
		c = crc_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
		len--;
	}
	while (len >= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		w ^= c;
		c = crc_table[7][w & 0xff] ^ crc_table[6][(w >> 8) & 0xff] ^
		    crc_table[5][(w >> 16) & 0xff] ^ crc_table[4][(w >> 24) & 0xff] ^
		    crc_table[3][(w >> 32) & 0xff] ^ crc_table[2][(w >> 40) & 0xff] ^
		    crc_table[1][(w >> 48) & 0xff] ^ crc_table[0][w >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		c = crc_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

#if defined(__x86_64__)
/* Three blocks of n bytes from p (8-byte aligned) at once, joined. */
__attribute__((target("sse4.2")))
static uint64_t crc32c_hw_3way(uint64_t a, const unsigned char *p, size_t n,
			       const uint32_t zeros[4][256])
{
	uint64_t b = 0, c = 0;

	for (size_t i = 0; i < n; i += 8) {
		uint64_t wa, wb, wc;

		memcpy(&wa, p + i, 8);
		memcpy(&wb, p + n + i, 8);
		memcpy(&wc, p + 2 * n + i, 8);
		a = __builtin_ia32_crc32di(a, wa);
		b = __builtin_ia32_crc32di(b, wb);
		c = __builtin_ia32_crc32di(c, wc);
	}
	a = zeros_shift(zeros, (uint32_t)a) ^ b;
	return zeros_shift(zeros, (uint32_t)a) ^ c;
}

__attribute__((target("sse4.2")))
static uint32_t crc32c_hw_raw(uint32_t c, const unsigned char *p, size_t len)
{
	uint64_t c64 = c;

	while (len && ((uintptr_t)p & 7)) {
		c64 = __builtin_ia32_crc32qi((uint32_t)c64, *p++);
		len--;
	}
	for (; len >= 3 * LONG_BLOCK; p += 3 * LONG_BLOCK, len -= 3 * LONG_BLOCK)
		c64 = crc32c_hw_3way(c64, p, LONG_BLOCK, zeros_long);
	for (; len >= 3 * SHORT_BLOCK; p += 3 * SHORT_BLOCK, len -= 3 * SHORT_BLOCK)
		c64 = crc32c_hw_3way(c64, p, SHORT_BLOCK, zeros_short);
	while (len >= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		c64 = __builtin_ia32_crc32di(c64, w);
		p += 8;
		len -= 8;
	}
	while (len--)
		c64 = __builtin_ia32_crc32qi((uint32_t)c64, *p++);
	return (uint32_t)c64;
}
#endif

uint32_t czfs_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&crc_once, crc32c_init);
	return ~crc32c_sw_raw(~crc, buf, len);
}

uint32_t czfs_crc32c(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&crc_once, crc32c_init);
#if defined(__x86_64__)
	if (have_sse42)
		return ~crc32c_hw_raw(~crc, buf, len);
#endif
	return ~crc32c_sw_raw(~crc, buf, len);
}
