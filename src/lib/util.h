/* SPDX-License-Identifier: MIT */
/* Small helpers shared by every part of libczfs. */
#ifndef CZFS_UTIL_H
#define CZFS_UTIL_H

#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A structure on disk does not make sense: the image is damaged. */
#ifndef EFSCORRUPTED
#define EFSCORRUPTED	EUCLEAN
#endif

#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#define DIV_ROUND_UP(n, d)	(((n) + (d) - 1) / (d))
#define ROUND_UP(n, a)		(DIV_ROUND_UP(n, a) * (a))
#define MIN(a, b)		((a) < (b) ? (a) : (b))
#define MAX(a, b)		((a) > (b) ? (a) : (b))
#define likely(x)		__builtin_expect(!!(x), 1)
#define unlikely(x)		__builtin_expect(!!(x), 0)
/* gcc reads a comment; clang only the attribute */
#define fallthrough		__attribute__((__fallthrough__))
#define container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

static inline uint16_t le16_to_cpu(uint16_t v) { return le16toh(v); }
static inline uint32_t le32_to_cpu(uint32_t v) { return le32toh(v); }
static inline uint64_t le64_to_cpu(uint64_t v) { return le64toh(v); }
static inline uint16_t cpu_to_le16(uint16_t v) { return htole16(v); }
static inline uint32_t cpu_to_le32(uint32_t v) { return htole32(v); }
static inline uint64_t cpu_to_le64(uint64_t v) { return htole64(v); }

/* True when all len bytes of buf are zero. */
int czfs_is_zero(const void *buf, size_t len);

/* Parse "123", "64k", "1M", "2G", "1T" (powers of 1024); -EINVAL if bad. */
int czfs_parse_size(const char *s, uint64_t *out);

#endif /* CZFS_UTIL_H */
