// SPDX-License-Identifier: MIT
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "util.h"

int czfs_pwrite_full(int fd, const void *buf, size_t len, uint64_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, buf, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n ? -errno : -EIO;
		buf = (const uint8_t *)buf + n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

int czfs_is_zero(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint64_t acc = 0, w;
	size_t i = 0;

	/* Word loop; the first non-zero word ends it early. */
	for (; i + 64 <= len; i += 64) {
		for (size_t j = 0; j < 64; j += 8) {
			memcpy(&w, p + i + j, 8);
			acc |= w;
		}
		if (acc)
			return 0;
	}
	for (; i < len; i++)
		if (p[i])
			return 0;
	return 1;
}

int czfs_parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: break;
	}
	if (*end == 'i' && shift)	/* accept "KiB"-style suffixes */
		end++;
	if (*end == 'B' && shift)
		end++;
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

size_t czfs_grow_cap(size_t cap, size_t need, size_t min, size_t size)
{
	size_t c = cap ? cap : MAX(min, (size_t)1);

	while (c < need) {
		if (c > SIZE_MAX / 2)
			return 0;
		c *= 2;
	}
	return size && c > SIZE_MAX / size ? 0 : c;
}
