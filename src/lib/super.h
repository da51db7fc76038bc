/* SPDX-License-Identifier: MIT */
/* Superblock and checkpoints: decoded at the boundary, validated per field. */
#ifndef CZFS_SUPER_H
#define CZFS_SUPER_H

#include <stdbool.h>
#include <stdint.h>

#include "czfs_fs.h"

struct czfs_bdev;

struct czfs_sb_info {
	unsigned version_major, version_minor;
	uint32_t feature_compat, feature_incompat, feature_ro_compat;
	unsigned cluster_shift;
	unsigned default_alg;
	int default_level;
	uint64_t max_blocks;
	uint64_t cp_blkaddr[2];
	int64_t create_time;
	uint32_t create_nsec;
	uint8_t uuid[16];
	uint64_t hash_seed[2];
	char label[65];			/* NUL-terminated */
};

/*
 * Decode and validate block 0.  Errors, each with a log line naming the
 * problem:
 *   -EINVAL        bad magic: not a czfs image
 *   -EFSCORRUPTED  bad checksum, block_shift, cluster_shift, alg, level,
 *                  max_blocks (< CZFS_FIRST_DATA_BLKADDR + 1) or
 *                  cp_blkaddr (must be 1 and 2)
 *   -EOPNOTSUPP    major version != 1, or unknown incompat feature bits
 * Unknown ro_compat bits are reported through *ro_only (may be NULL).
 */
int czfs_super_decode(const void *blk, struct czfs_sb_info *sb, bool *ro_only);

/* Encode into blk (a zeroed CZFS_BLOCK_SIZE buffer), checksum included. */
void czfs_super_encode(const struct czfs_sb_info *sb, void *blk);

/*
 * Read block CZFS_SB_BLKADDR of bdev and decode it (czfs_super_decode: its
 * errors), or an I/O error, or -ENOMEM.
 */
int czfs_super_read(struct czfs_bdev *bdev, struct czfs_sb_info *sb,
		    bool *ro_only);

/*
 * Encode sb and write it in place, at block CZFS_SB_BLKADDR.  The caller
 * orders it (flush what it names first, flush after for durability).
 * Returns 0, an I/O error or -ENOMEM.
 */
int czfs_super_write(struct czfs_bdev *bdev, const struct czfs_sb_info *sb);

/* Fill defaults for a new image (version, cp addresses, cluster_shift 4). */
void czfs_super_init(struct czfs_sb_info *sb);

/* The incompat feature bit clusters of algorithm alg need (0 for none). */
uint32_t czfs_alg_feature(unsigned alg);

struct czfs_cp_info {
	uint64_t generation;
	uint64_t root_blkaddr, root_generation;
	unsigned root_level;
	unsigned flags;			/* CZFS_CP_* */
	uint64_t image_blocks, max_blocks, used_blocks;
	uint64_t prealloc_blocks;	/* promised to RESERVED clusters */
	uint64_t next_ino, inode_count;
	int64_t commit_time;
	uint32_t commit_nsec;
	uint64_t mount_count;
	unsigned nr_smap_index;
	uint64_t smap_index[496];
	/* COVERED: the blocks this checkpoint brought into use, as
	 * CZFS_CP_EXTENT()s (held after the index in the block), and the
	 * crc32c of their contents */
	unsigned nr_covered;
	uint32_t covered_crc;
	uint64_t covered[496];
};

/*
 * Decode and validate a checkpoint block read from slot_blkaddr.  Checks
 * magic, checksum, blkaddr == slot_blkaddr, generation > 0 with the parity
 * of the slot, root_level < CZFS_MAX_LEVEL, root_blkaddr and every index
 * address < max_blocks (and >= CZFS_FIRST_DATA_BLKADDR when non-zero),
 * image_blocks <= max_blocks, used_blocks <= image_blocks,
 * prealloc_blocks <= max_blocks, next_ino in
 * [CZFS_FIRST_INO, CZFS_MAX_INO], nr_smap_index covers max_blocks exactly.
 * Returns 0 or -EFSCORRUPTED (with a log line).
 */
int czfs_cp_decode(const void *blk, uint64_t slot_blkaddr,
		   struct czfs_cp_info *cp);

/* Encode into blk (a CZFS_BLOCK_SIZE buffer), checksum included. */
void czfs_cp_encode(const struct czfs_cp_info *cp, uint64_t slot_blkaddr,
		    void *blk);

/*
 * Read both slots and pick the valid one with the higher generation; a
 * COVERED one whose blocks do not match covered_crc (a crash before its
 * flush) gives way to the other, with a warning.  Returns 0,
 * -EFSCORRUPTED when neither slot is valid, or an I/O error.
 */
int czfs_cp_load(struct czfs_bdev *bdev, const struct czfs_sb_info *sb,
		 struct czfs_cp_info *cp);

/*
 * Write cp into slot cp->generation & 1.  The caller orders it: flush the
 * data and metadata it names first, flush after for durability.
 */
int czfs_cp_write(struct czfs_bdev *bdev, const struct czfs_sb_info *sb,
		  const struct czfs_cp_info *cp);

/*
 * The crc32c of the blocks cp->covered[] names, read from bdev in order:
 * 0, or -errno when one cannot be read.
 */
int czfs_cp_covered_crc(struct czfs_bdev *bdev, const struct czfs_cp_info *cp,
			uint32_t *crc);

/* Number of space-map index blocks needed to cover max_blocks. */
unsigned czfs_smap_index_count(uint64_t max_blocks);

#endif /* CZFS_SUPER_H */
