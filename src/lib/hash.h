/* SPDX-License-Identifier: MIT */
#ifndef CZFS_HASH_H
#define CZFS_HASH_H

#include <stddef.h>
#include <stdint.h>

/* SipHash-2-4 of data under a 128-bit key (reference test vectors hold). */
uint64_t czfs_siphash(const uint64_t key[2], const void *data, size_t len);

/*
 * SipHash-2-4-128 of data under a 128-bit key: out[0] is the tag's first 8
 * bytes read little-endian, out[1] the last 8 (reference vectors hold).
 * One pass over the data where two 64-bit hashes under two keys take two.
 */
void czfs_siphash128(const uint64_t key[2], const void *data, size_t len,
		     uint64_t out[2]);

/*
 * Hash of a directory entry or xattr name, in [0, 2^CZFS_DIRHASH_BITS):
 * the B-tree key offset of its DENTRY/XATTR item.  Keyed by the image's
 * hash_seed so that names cannot be chosen to collide.
 */
uint64_t czfs_name_hash(const uint64_t seed[2], const char *name, size_t len);

/*
 * The records of an item keyed by a name hash (a DENTRY item's entries,
 * an XATTR item's): the names that share the hash, one after another.
 * next decodes the record at *pos into rec and moves *pos past it:
 * 1, 0 at the end, -EFSCORRUPTED; name gives a decoded record's name.
 */
struct czfs_rec_kind {
	int (*next)(const void *val, unsigned size, unsigned *pos, void *rec);
	void (*name)(const void *rec, const char **name, unsigned *len);
};

/*
 * Find name's record among those of val: 1 with it decoded into rec and
 * its bytes at [*at, *end) of val, 0 when absent, or next's error.
 */
int czfs_rec_find(const struct czfs_rec_kind *kind, const void *val,
		  unsigned size, const char *name, size_t len, void *rec,
		  unsigned *at, unsigned *end);

#endif /* CZFS_HASH_H */
