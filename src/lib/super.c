// SPDX-License-Identifier: MIT
/* Superblock (block 0): decode with per-field validation, encode, defaults. */
#include "config.h"

#include <stddef.h>
#include <stdlib.h>

#include "bdev.h"
#include "compress.h"
#include "crc32c.h"
#include "log.h"
#include "super.h"
#include "util.h"

/* 0 is every algorithm's default; other levels as its codec accepts them. */
static bool level_ok(unsigned alg, int level)
{
	const struct czfs_compressor *comp = czfs_compressor_get((int)alg);

	if (!level)
		return true;
	return comp && level >= comp->min_level && level <= comp->max_level;
}

/* crc32c of the superblock with its checksum field taken as zero. */
static uint32_t super_csum(const struct czfs_super_block *raw)
{
	static const uint8_t zero[4];
	const size_t off = offsetof(struct czfs_super_block, checksum);
	uint32_t crc;

	crc = czfs_crc32c(0, raw, off);
	crc = czfs_crc32c(crc, zero, sizeof(zero));
	return czfs_crc32c(crc, (const uint8_t *)raw + off + 4,
			   sizeof(*raw) - off - 4);
}

/* The header checks: is this a czfs image we may read at all? */
static int super_check_header(const struct czfs_super_block *raw)
{
	uint32_t magic = le32_to_cpu(raw->magic);
	uint32_t stored = le32_to_cpu(raw->checksum), crc = super_csum(raw);
	uint32_t incompat = le32_to_cpu(raw->feature_incompat);
	unsigned major = le16_to_cpu(raw->version_major);

	if (magic != CZFS_SUPER_MAGIC) {
		czfs_err("bad superblock magic 0x%08x: not a czfs image", magic);
		return -EINVAL;
	}
	if (stored != crc) {
		czfs_err("bad superblock checksum 0x%08x (computed 0x%08x)",
			 stored, crc);
		return -EFSCORRUPTED;
	}
	if (major != CZFS_VERSION_MAJOR) {
		czfs_err("unsupported format version %u.%u", major,
			 le16_to_cpu(raw->version_minor));
		return -EOPNOTSUPP;
	}
	if (incompat & ~CZFS_FEATURE_INCOMPAT_SUPP) {
		czfs_err("unsupported incompatible features 0x%x",
			 incompat & ~CZFS_FEATURE_INCOMPAT_SUPP);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* The geometry and defaults, each with its own message. */
static int super_check_fields(const struct czfs_super_block *raw)
{
	uint64_t max_blocks = le64_to_cpu(raw->max_blocks);
	unsigned alg = raw->default_alg;
	int level = raw->default_level;

	if (raw->block_shift != CZFS_BLOCK_SHIFT) {
		czfs_err("bad superblock block_shift %u", raw->block_shift);
		return -EFSCORRUPTED;
	}
	if (raw->cluster_shift > CZFS_MAX_CLUSTER_SHIFT) {
		czfs_err("bad superblock cluster_shift %u", raw->cluster_shift);
		return -EFSCORRUPTED;
	}
	if (alg > CZFS_ALG_MAX) {
		czfs_err("bad superblock default_alg %u", alg);
		return -EFSCORRUPTED;
	}
	if (!level_ok(alg, level)) {
		czfs_err("bad superblock default_level %d for algorithm %u",
			 level, alg);
		return -EFSCORRUPTED;
	}
	if (max_blocks < CZFS_FIRST_DATA_BLKADDR + 1 ||
	    czfs_smap_index_count(max_blocks) >
	    ARRAY_SIZE(((struct czfs_checkpoint *)0)->smap_index)) {
		czfs_err("bad superblock max_blocks %llu",
			 (unsigned long long)max_blocks);
		return -EFSCORRUPTED;
	}
	if (le64_to_cpu(raw->cp_blkaddr[0]) != CZFS_CP_BLKADDR0 ||
	    le64_to_cpu(raw->cp_blkaddr[1]) != CZFS_CP_BLKADDR1) {
		czfs_err("bad superblock cp_blkaddr %llu, %llu",
			 (unsigned long long)le64_to_cpu(raw->cp_blkaddr[0]),
			 (unsigned long long)le64_to_cpu(raw->cp_blkaddr[1]));
		return -EFSCORRUPTED;
	}
	return 0;
}

static void super_fill_info(const struct czfs_super_block *raw,
			    struct czfs_sb_info *sb)
{
	memset(sb, 0, sizeof(*sb));
	sb->version_major = le16_to_cpu(raw->version_major);
	sb->version_minor = le16_to_cpu(raw->version_minor);
	sb->feature_compat = le32_to_cpu(raw->feature_compat);
	sb->feature_incompat = le32_to_cpu(raw->feature_incompat);
	sb->feature_ro_compat = le32_to_cpu(raw->feature_ro_compat);
	sb->cluster_shift = raw->cluster_shift;
	sb->default_alg = raw->default_alg;
	sb->default_level = raw->default_level;
	sb->max_blocks = le64_to_cpu(raw->max_blocks);
	sb->cp_blkaddr[0] = le64_to_cpu(raw->cp_blkaddr[0]);
	sb->cp_blkaddr[1] = le64_to_cpu(raw->cp_blkaddr[1]);
	sb->create_time = (int64_t)le64_to_cpu(raw->create_time);
	sb->create_nsec = le32_to_cpu(raw->create_nsec);
	memcpy(sb->uuid, raw->uuid, sizeof(sb->uuid));
	sb->hash_seed[0] = le64_to_cpu(raw->hash_seed[0]);
	sb->hash_seed[1] = le64_to_cpu(raw->hash_seed[1]);
	/* label[64] may fill the field without a NUL; sb->label has room */
	memcpy(sb->label, raw->label, sizeof(raw->label));
	sb->label[sizeof(raw->label)] = '\0';
}

int czfs_super_decode(const void *blk, struct czfs_sb_info *sb, bool *ro_only)
{
	struct czfs_super_block raw;
	uint32_t ro_compat;
	int err;

	memcpy(&raw, blk, sizeof(raw));
	err = super_check_header(&raw);
	if (!err)
		err = super_check_fields(&raw);
	if (err)
		return err;
	super_fill_info(&raw, sb);
	ro_compat = sb->feature_ro_compat & ~CZFS_FEATURE_RO_COMPAT_SUPP;
	if (ro_compat)
		czfs_warn("unknown read-only compatible features 0x%x: "
			  "read-only access only", ro_compat);
	if (ro_only)
		*ro_only = ro_compat != 0;
	return 0;
}

void czfs_super_encode(const struct czfs_sb_info *sb, void *blk)
{
	struct czfs_super_block raw;

	memset(&raw, 0, sizeof(raw));
	raw.magic = cpu_to_le32(CZFS_SUPER_MAGIC);
	raw.version_major = cpu_to_le16(sb->version_major);
	raw.version_minor = cpu_to_le16(sb->version_minor);
	raw.feature_compat = cpu_to_le32(sb->feature_compat);
	raw.feature_incompat = cpu_to_le32(sb->feature_incompat);
	raw.feature_ro_compat = cpu_to_le32(sb->feature_ro_compat);
	raw.block_shift = CZFS_BLOCK_SHIFT;
	raw.cluster_shift = sb->cluster_shift;
	raw.default_alg = sb->default_alg;
	raw.default_level = sb->default_level;
	raw.max_blocks = cpu_to_le64(sb->max_blocks);
	raw.cp_blkaddr[0] = cpu_to_le64(sb->cp_blkaddr[0]);
	raw.cp_blkaddr[1] = cpu_to_le64(sb->cp_blkaddr[1]);
	raw.create_time = cpu_to_le64((uint64_t)sb->create_time);
	raw.create_nsec = cpu_to_le32(sb->create_nsec);
	memcpy(raw.uuid, sb->uuid, sizeof(raw.uuid));
	raw.hash_seed[0] = cpu_to_le64(sb->hash_seed[0]);
	raw.hash_seed[1] = cpu_to_le64(sb->hash_seed[1]);
	memcpy(raw.label, sb->label, strnlen(sb->label, sizeof(raw.label)));
	raw.checksum = cpu_to_le32(super_csum(&raw));
	memcpy(blk, &raw, sizeof(raw));
}

int czfs_super_read(struct czfs_bdev *bdev, struct czfs_sb_info *sb,
		    bool *ro_only)
{
	void *blk = aligned_alloc(CZFS_BLOCK_SIZE, CZFS_BLOCK_SIZE);
	int err = blk ? 0 : -ENOMEM;

	if (!err)
		err = czfs_bdev_read(bdev, blk, CZFS_BLOCK_SIZE,
				     (uint64_t)CZFS_SB_BLKADDR << CZFS_BLOCK_SHIFT);
	if (!err)
		err = czfs_super_decode(blk, sb, ro_only);
	free(blk);
	return err;
}

int czfs_super_write(struct czfs_bdev *bdev, const struct czfs_sb_info *sb)
{
	void *blk = aligned_alloc(CZFS_BLOCK_SIZE, CZFS_BLOCK_SIZE);
	int err;

	if (!blk)
		return -ENOMEM;
	memset(blk, 0, CZFS_BLOCK_SIZE);
	czfs_super_encode(sb, blk);
	err = czfs_bdev_write(bdev, blk, CZFS_BLOCK_SIZE,
			      (uint64_t)CZFS_SB_BLKADDR << CZFS_BLOCK_SHIFT);
	free(blk);
	return err;
}

uint32_t czfs_alg_feature(unsigned alg)
{
	if (alg == CZFS_ALG_LZ4 || alg == CZFS_ALG_LZ4HC)
		return CZFS_FEATURE_INCOMPAT_LZ4;
	return alg == CZFS_ALG_ZSTD ? CZFS_FEATURE_INCOMPAT_ZSTD : 0;
}

void czfs_super_init(struct czfs_sb_info *sb)
{
	memset(sb, 0, sizeof(*sb));
	sb->version_major = CZFS_VERSION_MAJOR;
	sb->version_minor = CZFS_VERSION_MINOR;
	/* the default algorithm writes lz4 clusters */
	sb->feature_incompat = CZFS_FEATURE_INCOMPAT_LZ4;
	sb->cluster_shift = 4;
	sb->default_alg = CZFS_ALG_LZ4;
	sb->default_level = 0;
	sb->cp_blkaddr[0] = CZFS_CP_BLKADDR0;
	sb->cp_blkaddr[1] = CZFS_CP_BLKADDR1;
}
