// SPDX-License-Identifier: MIT
/* Whole copies (copies.h): by size, then hash, then bytes. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "copies.h"
#include "hash.h"
#include "scan.h"
#include "util.h"

#define COPY_CHUNK	(1u << 20)

struct cand {
	struct mk_inode *ip;
	uint64_t h[2];
};

/* An open file: where it starts in fd, and its size. */
struct src {
	int fd;
	uint64_t base, size;
};

static int open_file(const struct mk_tree *t, const struct mk_inode *ip,
		     struct src *f)
{
	f->fd = mk_tree_open(t, ip, &f->base);
	f->size = ip->size;
	if (f->fd < 0)
		fprintf(stderr, "mkfs.czfs: cannot read %s/%s: %s\n", t->root,
			ip->path, strerror(-f->fd));
	return f->fd < 0 ? f->fd : 0;
}

/*
 * Read up to len bytes at off, never past the size the scan saw: the
 * count (short at EOF) or -errno.
 */
static long read_at(const struct src *f, uint8_t *buf, size_t len,
		    uint64_t off)
{
	size_t done = 0;

	len = off < f->size ? MIN(len, f->size - off) : 0;
	while (done < len) {
		ssize_t n = pread(f->fd, buf + done, len - done,
				  (off_t)(f->base + off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			break;
		done += (size_t)n;
	}
	return (long)done;
}

static int hash_file(const struct mk_tree *t, struct cand *c, uint8_t *buf)
{
	static const uint64_t k[2][2] = {
		{ 0x6d6b66732d636f70ull, 0x6965732d68617368ull },
		{ 0x6d6b66732d636f70ull, 0x6965732d68617369ull },
	};
	struct src f;
	uint64_t off = 0;
	long n;
	int err = open_file(t, c->ip, &f);

	if (err)
		return err;
	c->h[0] = c->h[1] = 0;
	while ((n = read_at(&f, buf, COPY_CHUNK, off)) > 0) {
		for (int i = 0; i < 2; i++)
			c->h[i] = c->h[i] * 0x100000001b3ull ^
				  czfs_siphash(k[i], buf, (size_t)n);
		off += (uint64_t)n;
	}
	close(f.fd);
	return n < 0 ? (int)n : 0;
}

/* Whether two files hold the same bytes (a read error: not the same). */
static bool same_bytes(const struct mk_tree *t, const struct mk_inode *a,
		       const struct mk_inode *b, uint8_t *ba, uint8_t *bb)
{
	struct src fa = { .fd = -1 }, fb = { .fd = -1 };
	bool same = !open_file(t, a, &fa) && !open_file(t, b, &fb);
	uint64_t off = 0;

	while (same) {
		long na = read_at(&fa, ba, COPY_CHUNK, off);
		long nb = read_at(&fb, bb, COPY_CHUNK, off);

		same = na == nb && na >= 0 && !memcmp(ba, bb, (size_t)MAX(na, 0));
		if (na <= 0)
			break;
		off += (uint64_t)na;
	}
	if (fa.fd >= 0)
		close(fa.fd);
	if (fb.fd >= 0)
		close(fb.fd);
	return same;
}

static int cmp_size(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->ip->size != y->ip->size)
		return x->ip->size < y->ip->size ? -1 : 1;
	return x->ip->ino < y->ip->ino ? -1 : x->ip->ino > y->ip->ino;
}

/* Within one size, the first of each set of equal files is the copied. */
static void mark_run(const struct mk_tree *t, struct cand *c, size_t n,
		     uint8_t *ba, uint8_t *bb, struct mk_copies_stats *st)
{
	for (size_t i = 0; i < n; i++) {
		if (c[i].ip->copy_of)
			continue;
		for (size_t j = i + 1; j < n; j++) {
			if (c[j].ip->copy_of || c[j].h[0] != c[i].h[0] ||
			    c[j].h[1] != c[i].h[1] ||
			    !same_bytes(t, c[i].ip, c[j].ip, ba, bb))
				continue;
			c[j].ip->copy_of = c[i].ip;
			c[i].ip->has_copies = true;
			st->files++;
			st->bytes += c[j].ip->size;
		}
	}
}

int mk_find_copies(struct mk_tree *t, unsigned cbytes,
		   struct mk_copies_stats *st)
{
	struct cand *c = calloc(t->count ? t->count : 1, sizeof(*c));
	uint8_t *ba = malloc(COPY_CHUNK), *bb = malloc(COPY_CHUNK);
	size_t n = 0;
	int err = c && ba && bb ? 0 : -ENOMEM;

	memset(st, 0, sizeof(*st));
	for (uint64_t i = 0; !err && i < t->count; i++) {
		struct mk_inode *ip = t->inodes[i];

		if (S_ISREG(ip->mode) && ip->size >= cbytes && !ip->maybe_sparse)
			c[n++].ip = ip;
	}
	if (!err)
		qsort(c, n, sizeof(*c), cmp_size);
	for (size_t i = 0; !err && i < n;) {
		size_t j = i + 1;

		while (j < n && c[j].ip->size == c[i].ip->size)
			j++;
		for (size_t k = i; j - i > 1 && !err && k < j; k++)
			err = hash_file(t, &c[k], ba);
		if (!err && j - i > 1)
			mark_run(t, c + i, j - i, ba, bb, st);
		i = j;
	}
	free(c);
	free(ba);
	free(bb);
	return err;
}
