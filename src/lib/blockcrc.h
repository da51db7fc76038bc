/* SPDX-License-Identifier: MIT */
/*
 * The crc32c of each block written since the last checkpoint, kept as the
 * writes go by (czfs_bdev_write notes them), so that a one-flush
 * checkpoint (COVERED, czfs_fs.h) names the crc of the blocks it brings
 * into use without reading them back: an fsync of a database's
 * transaction read back some 200 KiB of what it had just written, in
 * about eight reads.  Only whole blocks are known; a block written in
 * part is forgotten, and past the table's capacity every block is, until
 * the next checkpoint: the caller then reads them back as before.
 *
 * Thread-safe: writers note under the table's own lock.
 */
#ifndef CZFS_BLOCKCRC_H
#define CZFS_BLOCKCRC_H

#include <stddef.h>
#include <stdint.h>

struct czfs_blockcrc;

/* A table for up to max_blocks blocks (a checkpoint's cover_blocks);
 * NULL when out of memory. */
struct czfs_blockcrc *czfs_blockcrc_new(unsigned max_blocks);
void czfs_blockcrc_free(struct czfs_blockcrc *t);

/* len bytes were written at byte offset off: the whole blocks among them
 * are noted with their crc32c, the partial ones forgotten. */
void czfs_blockcrc_note(struct czfs_blockcrc *t, const void *buf, size_t len,
			uint64_t off);

/* n whole blocks from block blk were written, whose crc32c the writer
 * knew (czfs_crc32c(0, block)): noted without computing them again. */
void czfs_blockcrc_note_known(struct czfs_blockcrc *t, uint64_t blk,
			      unsigned n, const uint32_t *crcs);

/*
 * The crc32c of the blocks of the extents ext[0..n) (CZFS_CP_EXTENT
 * values), read in that order, as czfs_cp_covered_crc computes it from
 * their contents.  0, or -ENOENT when a block's crc is not known (the
 * caller reads them back).
 */
int czfs_blockcrc_covered(struct czfs_blockcrc *t, const uint64_t *ext,
			  unsigned n, uint32_t *crc);

/* Forget every block: a checkpoint committed them. */
void czfs_blockcrc_reset(struct czfs_blockcrc *t);

#endif /* CZFS_BLOCKCRC_H */
