// SPDX-License-Identifier: MIT
/*
 * Checkpoints (blocks 1 and 2): decode with per-field validation, encode,
 * and pick the newest valid slot at mount.
 */
#include "config.h"

#include <stdlib.h>

#include "bdev.h"
#include "crc32c.h"
#include "log.h"
#include "super.h"
#include "util.h"

#define CP_MAX_INDEX	ARRAY_SIZE(((struct czfs_checkpoint *)0)->smap_index)

static_assert(CP_MAX_INDEX == ARRAY_SIZE(((struct czfs_cp_info *)0)->smap_index),
	      "czfs_cp_info holds every index address of a checkpoint");

unsigned czfs_smap_index_count(uint64_t max_blocks)
{
	/* written so that max_blocks near 2^64 cannot overflow */
	uint64_t bitmaps = max_blocks / CZFS_SMAP_BITS_PER_BLOCK +
			   !!(max_blocks % CZFS_SMAP_BITS_PER_BLOCK);
	uint64_t index = DIV_ROUND_UP(bitmaps, CZFS_SMAP_ENTRIES_PER_INDEX);

	return index > UINT32_MAX ? UINT32_MAX : (unsigned)index;
}

/* crc32c of a checkpoint block, its leading checksum field taken as zero. */
static uint32_t cp_csum(const void *blk)
{
	static const uint8_t zero[4];

	return czfs_crc32c(czfs_crc32c(0, zero, 4), (const uint8_t *)blk + 4,
			   CZFS_BLOCK_SIZE - 4);
}

/* A block address a checkpoint names: 0 or in [first data, max_blocks). */
static bool cp_addr_ok(uint64_t addr, uint64_t max_blocks)
{
	return !addr || (addr >= CZFS_FIRST_DATA_BLKADDR && addr < max_blocks);
}

/* Which slot (and checksum) the block claims. */
static int cp_check_header(const struct czfs_checkpoint *raw, uint64_t slot,
			   enum czfs_log_level lvl)
{
	uint32_t magic = le32_to_cpu(raw->magic);
	uint32_t stored = le32_to_cpu(raw->checksum), crc = cp_csum(raw);
	uint64_t blkaddr = le64_to_cpu(raw->blkaddr);
	uint64_t gen = le64_to_cpu(raw->generation);

	if (magic != CZFS_CP_MAGIC) {
		czfs_log(lvl, "checkpoint %llu: bad magic 0x%08x",
			 (unsigned long long)slot, magic);
		return -EFSCORRUPTED;
	}
	if (stored != crc) {
		czfs_log(lvl, "checkpoint %llu: bad checksum 0x%08x (computed 0x%08x)",
			 (unsigned long long)slot, stored, crc);
		return -EFSCORRUPTED;
	}
	if (blkaddr != slot) {
		czfs_log(lvl, "checkpoint %llu: written for block %llu",
			 (unsigned long long)slot, (unsigned long long)blkaddr);
		return -EFSCORRUPTED;
	}
	if (!gen || CZFS_CP_BLKADDR0 + (gen & 1) != slot) {
		czfs_log(lvl, "checkpoint %llu: generation %llu does not belong in this slot",
			 (unsigned long long)slot, (unsigned long long)gen);
		return -EFSCORRUPTED;
	}
	return 0;
}

/* The tree root and the counters. */
static int cp_check_fields(const struct czfs_cp_info *cp, uint64_t slot,
			   enum czfs_log_level lvl)
{
	const char *bad = NULL;
	uint64_t val = 0;

	if (cp->root_level >= CZFS_MAX_LEVEL)
		bad = "root_level", val = cp->root_level;
	else if (!cp_addr_ok(cp->root_blkaddr, cp->max_blocks))
		bad = "root_blkaddr", val = cp->root_blkaddr;
	else if (cp->image_blocks > cp->max_blocks)
		bad = "image_blocks", val = cp->image_blocks;
	else if (cp->used_blocks > cp->image_blocks)
		bad = "used_blocks", val = cp->used_blocks;
	else if (cp->prealloc_blocks > cp->max_blocks)
		bad = "prealloc_blocks", val = cp->prealloc_blocks;
	else if (cp->next_ino < CZFS_FIRST_INO || cp->next_ino > CZFS_MAX_INO)
		bad = "next_ino", val = cp->next_ino;
	if (bad) {
		czfs_log(lvl, "checkpoint %llu: bad %s %llu",
			 (unsigned long long)slot, bad, (unsigned long long)val);
		return -EFSCORRUPTED;
	}
	return 0;
}

/* The space-map index: exactly as many blocks as max_blocks needs. */
static int cp_check_index(const struct czfs_checkpoint *raw,
			  struct czfs_cp_info *cp, uint64_t slot,
			  enum czfs_log_level lvl)
{
	unsigned want = czfs_smap_index_count(cp->max_blocks);

	if (want > CP_MAX_INDEX || cp->nr_smap_index != want) {
		czfs_log(lvl, "checkpoint %llu: %u space map index blocks for max_blocks %llu",
			 (unsigned long long)slot, cp->nr_smap_index,
			 (unsigned long long)cp->max_blocks);
		return -EFSCORRUPTED;
	}
	for (unsigned i = 0; i < cp->nr_smap_index; i++) {
		cp->smap_index[i] = le64_to_cpu(raw->smap_index[i]);
		if (!cp_addr_ok(cp->smap_index[i], cp->max_blocks)) {
			czfs_log(lvl, "checkpoint %llu: bad space map index %u address %llu",
				 (unsigned long long)slot, i,
				 (unsigned long long)cp->smap_index[i]);
			return -EFSCORRUPTED;
		}
	}
	return 0;
}

static void cp_fill_info(const struct czfs_checkpoint *raw,
			 struct czfs_cp_info *cp)
{
	memset(cp, 0, sizeof(*cp));
	cp->generation = le64_to_cpu(raw->generation);
	cp->root_blkaddr = le64_to_cpu(raw->root_blkaddr);
	cp->root_generation = le64_to_cpu(raw->root_generation);
	cp->root_level = raw->root_level;
	cp->flags = raw->flags;
	cp->nr_smap_index = le16_to_cpu(raw->nr_smap_index);
	cp->nr_covered = le16_to_cpu(raw->nr_covered);
	cp->covered_crc = le32_to_cpu(raw->covered_crc);
	cp->image_blocks = le64_to_cpu(raw->image_blocks);
	cp->max_blocks = le64_to_cpu(raw->max_blocks);
	cp->used_blocks = le64_to_cpu(raw->used_blocks);
	cp->prealloc_blocks = le64_to_cpu(raw->prealloc_blocks);
	cp->next_ino = le64_to_cpu(raw->next_ino);
	cp->inode_count = le64_to_cpu(raw->inode_count);
	cp->commit_time = (int64_t)le64_to_cpu(raw->commit_time);
	cp->commit_nsec = le32_to_cpu(raw->commit_nsec);
	cp->mount_count = le64_to_cpu(raw->mount_count);
}

/* The covered extents: only in a COVERED checkpoint, after the index,
 * each inside the data area. */
static int cp_check_covered(const struct czfs_checkpoint *raw,
			    struct czfs_cp_info *cp, uint64_t slot,
			    enum czfs_log_level lvl)
{
	bool covered = cp->flags & CZFS_CP_COVERED;

	if (covered != !!cp->nr_covered ||
	    cp->nr_covered > CP_MAX_INDEX - cp->nr_smap_index) {
		czfs_log(lvl, "checkpoint %llu: %u covered extents%s",
			 (unsigned long long)slot, cp->nr_covered,
			 covered ? "" : " in a checkpoint not flagged covered");
		return -EFSCORRUPTED;
	}
	for (unsigned i = 0; i < cp->nr_covered; i++) {
		uint64_t e = le64_to_cpu(raw->smap_index[cp->nr_smap_index + i]);
		uint64_t addr = CZFS_CP_EXTENT_ADDR(e), n = CZFS_CP_EXTENT_LEN(e);

		if (addr < CZFS_FIRST_DATA_BLKADDR || addr >= cp->max_blocks ||
		    n > cp->max_blocks - addr) {
			czfs_log(lvl, "checkpoint %llu: covered extent %u (%llu+%llu) out of range",
				 (unsigned long long)slot, i,
				 (unsigned long long)addr, (unsigned long long)n);
			return -EFSCORRUPTED;
		}
		cp->covered[i] = e;
	}
	return 0;
}

/* czfs_cp_decode, reporting at lvl: a bad slot is only a warning at mount. */
static int cp_decode(const void *blk, uint64_t slot, struct czfs_cp_info *cp,
		     enum czfs_log_level lvl)
{
	struct czfs_checkpoint raw;
	int err;

	memcpy(&raw, blk, sizeof(raw));
	err = cp_check_header(&raw, slot, lvl);
	if (err)
		return err;
	cp_fill_info(&raw, cp);
	err = cp_check_fields(cp, slot, lvl);
	if (!err)
		err = cp_check_index(&raw, cp, slot, lvl);
	if (!err)
		err = cp_check_covered(&raw, cp, slot, lvl);
	return err;
}

int czfs_cp_decode(const void *blk, uint64_t slot_blkaddr,
		   struct czfs_cp_info *cp)
{
	return cp_decode(blk, slot_blkaddr, cp, CZFS_LOG_ERR);
}

void czfs_cp_encode(const struct czfs_cp_info *cp, uint64_t slot_blkaddr,
		    void *blk)
{
	struct czfs_checkpoint raw_buf, *raw = &raw_buf;
	unsigned nr = MIN(cp->nr_smap_index, CP_MAX_INDEX);
	unsigned nc = MIN(cp->nr_covered, CP_MAX_INDEX - nr);

	memset(raw, 0, sizeof(*raw));
	raw->magic = cpu_to_le32(CZFS_CP_MAGIC);
	raw->blkaddr = cpu_to_le64(slot_blkaddr);
	raw->generation = cpu_to_le64(cp->generation);
	raw->root_blkaddr = cpu_to_le64(cp->root_blkaddr);
	raw->root_generation = cpu_to_le64(cp->root_generation);
	raw->root_level = cp->root_level;
	raw->flags = cp->flags;
	raw->nr_smap_index = cpu_to_le16(nr);
	raw->nr_covered = cpu_to_le16(nc);
	raw->covered_crc = cpu_to_le32(cp->covered_crc);
	raw->image_blocks = cpu_to_le64(cp->image_blocks);
	raw->max_blocks = cpu_to_le64(cp->max_blocks);
	raw->used_blocks = cpu_to_le64(cp->used_blocks);
	raw->prealloc_blocks = cpu_to_le64(cp->prealloc_blocks);
	raw->next_ino = cpu_to_le64(cp->next_ino);
	raw->inode_count = cpu_to_le64(cp->inode_count);
	raw->commit_time = cpu_to_le64((uint64_t)cp->commit_time);
	raw->commit_nsec = cpu_to_le32(cp->commit_nsec);
	raw->mount_count = cpu_to_le64(cp->mount_count);
	for (unsigned i = 0; i < nr; i++)
		raw->smap_index[i] = cpu_to_le64(cp->smap_index[i]);
	for (unsigned i = 0; i < nc; i++)
		raw->smap_index[nr + i] = cpu_to_le64(cp->covered[i]);
	raw->checksum = cpu_to_le32(cp_csum(raw));
	memcpy(blk, raw, sizeof(*raw));
}

/* Read and decode one slot; failures are warnings, the other slot may do. */
static int cp_load_slot(struct czfs_bdev *bdev, uint64_t slot, void *buf,
			struct czfs_cp_info *cp)
{
	int err;

	err = czfs_bdev_read(bdev, buf, CZFS_BLOCK_SIZE,
			     slot * CZFS_BLOCK_SIZE);
	if (err) {
		czfs_warn("checkpoint %llu: read error %d, slot skipped",
			  (unsigned long long)slot, err);
		return err;
	}
	/* A slot never written (a new image has one) is not damage. */
	if (czfs_is_zero(buf, CZFS_BLOCK_SIZE))
		return -EFSCORRUPTED;
	err = cp_decode(buf, slot, cp, CZFS_LOG_WARN);
	if (err)
		czfs_warn("checkpoint %llu: invalid, slot skipped",
			  (unsigned long long)slot);
	return err;
}

int czfs_cp_covered_crc(struct czfs_bdev *bdev, const struct czfs_cp_info *cp,
			uint32_t *crc)
{
	enum { STEP = 64 };		/* blocks per read */
	uint32_t c = 0;
	uint8_t *buf;
	int err = 0;

	buf = aligned_alloc(CZFS_BLOCK_SIZE, (size_t)STEP * CZFS_BLOCK_SIZE);
	if (!buf)
		return -ENOMEM;
	for (unsigned i = 0; !err && i < cp->nr_covered; i++) {
		uint64_t addr = CZFS_CP_EXTENT_ADDR(cp->covered[i]);
		uint64_t left = CZFS_CP_EXTENT_LEN(cp->covered[i]);

		while (!err && left) {
			size_t len = (size_t)MIN(left, (uint64_t)STEP) * CZFS_BLOCK_SIZE;

			err = czfs_bdev_read(bdev, buf, len, addr * CZFS_BLOCK_SIZE);
			if (!err)
				c = czfs_crc32c(c, buf, len);
			addr += len / CZFS_BLOCK_SIZE;
			left -= len / CZFS_BLOCK_SIZE;
		}
	}
	free(buf);
	*crc = c;
	return err;
}

/* A COVERED checkpoint whose blocks all reached the disk. */
static bool cp_complete(struct czfs_bdev *bdev, const struct czfs_cp_info *cp,
			uint64_t slot)
{
	uint32_t crc;
	int err;

	if (!(cp->flags & CZFS_CP_COVERED))
		return true;
	err = czfs_cp_covered_crc(bdev, cp, &crc);
	if (!err && crc == cp->covered_crc)
		return true;
	if (err)
		czfs_warn("checkpoint %llu (generation %llu): its blocks cannot be read (error %d)",
			  (unsigned long long)slot,
			  (unsigned long long)cp->generation, err);
	else
		czfs_warn("checkpoint %llu (generation %llu): its blocks do not match it (crc 0x%08x, want 0x%08x): written by a flush that did not complete",
			  (unsigned long long)slot,
			  (unsigned long long)cp->generation, crc,
			  cp->covered_crc);
	return false;
}

int czfs_cp_load(struct czfs_bdev *bdev, const struct czfs_sb_info *sb,
		 struct czfs_cp_info *cp)
{
	struct czfs_cp_info *slot_cp;
	int err[2] = { -ENOMEM, -ENOMEM }, best = -1, ret;
	void *buf;

	slot_cp = malloc(2 * sizeof(*slot_cp));	/* 8 KiB each */
	buf = aligned_alloc(CZFS_BLOCK_SIZE, CZFS_BLOCK_SIZE);
	for (int i = 0; slot_cp && buf && i < 2; i++) {
		err[i] = cp_load_slot(bdev, sb->cp_blkaddr[i], buf, &slot_cp[i]);
		if (!err[i] && (best < 0 ||
				slot_cp[i].generation > slot_cp[best].generation))
			best = i;
	}
	free(buf);
	/* The newer one may be a one-flush checkpoint cut by a crash: the
	 * older one was durable before it was written. */
	if (best >= 0 && !cp_complete(bdev, &slot_cp[best], sb->cp_blkaddr[best])) {
		err[best] = -EFSCORRUPTED;
		best = err[!best] ? -1 : !best;
		if (best >= 0)
			czfs_warn("using the checkpoint before it, generation %llu",
				  (unsigned long long)slot_cp[best].generation);
	}
	if (best >= 0) {
		*cp = slot_cp[best];
		free(slot_cp);
		return 0;
	}
	free(slot_cp);
	/* an I/O error says more than a corrupt neighbour */
	ret = err[0] == -EFSCORRUPTED ? err[1] : err[0];
	if (ret == -EFSCORRUPTED)
		czfs_err("no valid checkpoint in blocks %llu and %llu",
			 (unsigned long long)sb->cp_blkaddr[0],
			 (unsigned long long)sb->cp_blkaddr[1]);
	else
		czfs_err("cannot read a checkpoint: error %d", ret);
	return ret;
}

int czfs_cp_write(struct czfs_bdev *bdev, const struct czfs_sb_info *sb,
		  const struct czfs_cp_info *cp)
{
	uint64_t slot = sb->cp_blkaddr[cp->generation & 1];
	void *buf;
	int err;

	if (!cp->generation)
		return -EINVAL;
	buf = aligned_alloc(CZFS_BLOCK_SIZE, CZFS_BLOCK_SIZE);
	if (!buf)
		return -ENOMEM;
	czfs_cp_encode(cp, slot, buf);
	err = czfs_bdev_write(bdev, buf, CZFS_BLOCK_SIZE,
			      slot * CZFS_BLOCK_SIZE);
	if (err)
		czfs_err("checkpoint %llu: write error %d",
			 (unsigned long long)slot, err);
	free(buf);
	return err;
}
