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

#endif /* CZFS_HASH_H */
