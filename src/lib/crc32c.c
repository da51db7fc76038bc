// SPDX-License-Identifier: MIT
#include "config.h"

#include <pthread.h>
#include <string.h>

#include "crc32c.h"

#define CRC32C_POLY	0x82f63b78u	/* reflected Castagnoli polynomial */

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static int have_sse42;

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
__attribute__((target("sse4.2")))
static uint32_t crc32c_hw_raw(uint32_t c, const unsigned char *p, size_t len)
{
	uint64_t c64 = c;

	while (len && ((uintptr_t)p & 7)) {
		c64 = __builtin_ia32_crc32qi((uint32_t)c64, *p++);
		len--;
	}
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
