/* SPDX-License-Identifier: MIT */
/*
 * The image-parsing fuzz entry point, shared by the libFuzzer target
 * (fuzz_image.c, built with --enable-fuzzing) and the regression test
 * that replays every saved crash input (tests/unit/check_fuzz_regressions).
 */
#ifndef CZFS_FUZZ_H
#define CZFS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* Largest input taken, and largest image (max_blocks) opened. */
#define CZFS_FUZZ_MAX_INPUT	(4u << 20)
#define CZFS_FUZZ_MAX_BLOCKS	(1u << 14)

/*
 * Treat data as an image: checksums are fixed up first (so mutations get
 * past them, see fuzz_fixup.c), then everything that parses an image runs
 * on it: superblock, checkpoints, open (space map), every item through the
 * library's readers (inodes, entries, xattrs, clusters and their data),
 * fsck's check, and fsck's repairs when the image opens writable.  Returns
 * the number of items the library walked (0 if the image did not open).
 */
long czfs_fuzz_image(const uint8_t *data, size_t size);

/* Recompute every checksum an image of size bytes holds, in place. */
void czfs_fuzz_fixup(uint8_t *img, size_t size);

#endif /* CZFS_FUZZ_H */
