/* SPDX-License-Identifier: MIT */
/* Small helpers shared by every part of libczfs. */
#ifndef CZFS_UTIL_H
#define CZFS_UTIL_H

#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
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

/* All len bytes to fd at off, through short writes and EINTR: 0 or
 * -errno (a full disk: -ENOSPC from the write that found it so). */
int czfs_pwrite_full(int fd, const void *buf, size_t len, uint64_t off);

/* Parse "123", "64k", "1M", "2G", "1T" (powers of 1024); -EINVAL if bad. */
int czfs_parse_size(const char *s, uint64_t *out);

/*
 * Growable arrays: an array v of cap elements allocated (NULL, 0 at
 * first), its own count beside it.  czfs_grow_cap: the capacity that
 * holds need elements of size bytes, cap doubled (from min, at least 1)
 * until it does; 0 when that overflows.  CZFS_RESERVE(v, need, cap, min)
 * reallocates v to it when need > cap: 0, or -ENOMEM with v and cap as
 * they were.  CZFS_GROW(v, n, cap, min): room for element n (one more).
 * v and cap are lvalues of any pointer and unsigned type.
 */
size_t czfs_grow_cap(size_t cap, size_t need, size_t min, size_t size);
#define CZFS_RESERVE(v, need, cap, min) __extension__ ({		\
	size_t need__ = (need), cap__;					\
	void *v__ = NULL;						\
	int err__ = 0;							\
	if (need__ > (size_t)(cap)) {					\
		cap__ = czfs_grow_cap((cap), need__, (min), sizeof(*(v))); \
		if (cap__)						\
			v__ = realloc((v), cap__ * sizeof(*(v)));	\
		if (v__) {						\
			(v) = v__;					\
			(cap) = cap__;					\
		} else {						\
			err__ = -ENOMEM;				\
		}							\
	}								\
	err__;								\
})
#define CZFS_GROW(v, n, cap, min)	CZFS_RESERVE(v, (size_t)(n) + 1, cap, min)

#endif /* CZFS_UTIL_H */
