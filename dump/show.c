// SPDX-License-Identifier: MIT
/* The superblock and both checkpoint slots, field by field. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "bdev.h"
#include "compress.h"
#include "dump.h"
#include "super.h"
#include "util.h"

static void show_features(struct dump_ctx *d, const struct czfs_sb_info *sb)
{
	char names[64] = "";

	if (sb->feature_incompat & CZFS_FEATURE_INCOMPAT_LZ4)
		strcat(names, "lz4 ");
	if (sb->feature_incompat & CZFS_FEATURE_INCOMPAT_ZSTD)
		strcat(names, "zstd ");
	if (sb->feature_incompat & CZFS_FEATURE_INCOMPAT_ATTR_FLAGS)
		strcat(names, "attr_flags ");
	if (sb->feature_incompat & CZFS_FEATURE_INCOMPAT_PREALLOC)
		strcat(names, "prealloc ");
	if (*names)
		names[strlen(names) - 1] = '\0';
	dout_hex(&d->out, "feature_compat", sb->feature_compat);
	dout_hex(&d->out, "feature_incompat", sb->feature_incompat);
	dout_str(&d->out, "incompat_names", names);
	dout_hex(&d->out, "feature_ro_compat", sb->feature_ro_compat);
}

void dump_super(struct dump_ctx *d)
{
	const struct czfs_sb_info *sb = &d->fs->sb;
	const uint8_t *u = sb->uuid;
	char uuid[40];

	snprintf(uuid, sizeof(uuid),
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15]);
	dout_obj(&d->out, "superblock");
	dout_u64(&d->out, "version_major", sb->version_major);
	dout_u64(&d->out, "version_minor", sb->version_minor);
	show_features(d, sb);
	dout_u64(&d->out, "block_size", CZFS_BLOCK_SIZE);
	dout_u64(&d->out, "cluster_size", CZFS_BLOCK_SIZE << sb->cluster_shift);
	dout_str(&d->out, "default_alg", czfs_alg_name((int)sb->default_alg));
	dout_i64(&d->out, "default_level", sb->default_level);
	dout_u64(&d->out, "max_blocks", sb->max_blocks);
	dout_time(&d->out, "create_time", sb->create_time, sb->create_nsec);
	dout_str(&d->out, "uuid", uuid);
	dout_str(&d->out, "label", sb->label);
	dout_hex(&d->out, "hash_seed0", sb->hash_seed[0]);
	dout_hex(&d->out, "hash_seed1", sb->hash_seed[1]);
	dout_obj_end(&d->out);
}

static void show_cp(struct dump_ctx *d, const struct czfs_cp_info *cp)
{
	dout_u64(&d->out, "generation", cp->generation);
	dout_u64(&d->out, "root_blkaddr", cp->root_blkaddr);
	dout_u64(&d->out, "root_generation", cp->root_generation);
	dout_u64(&d->out, "root_level", cp->root_level);
	dout_bool(&d->out, "clean_umount", cp->flags & CZFS_CP_CLEAN_UMOUNT);
	dout_u64(&d->out, "image_blocks", cp->image_blocks);
	dout_u64(&d->out, "max_blocks", cp->max_blocks);
	dout_u64(&d->out, "used_blocks", cp->used_blocks);
	dout_u64(&d->out, "prealloc_blocks", cp->prealloc_blocks);
	dout_u64(&d->out, "next_ino", cp->next_ino);
	dout_u64(&d->out, "inode_count", cp->inode_count);
	dout_time(&d->out, "commit_time", cp->commit_time, cp->commit_nsec);
	dout_u64(&d->out, "mount_count", cp->mount_count);
	dout_bool(&d->out, "covered", cp->flags & CZFS_CP_COVERED);
	if (cp->flags & CZFS_CP_COVERED) {
		uint64_t blocks = 0;

		for (unsigned i = 0; i < cp->nr_covered; i++)
			blocks += CZFS_CP_EXTENT_LEN(cp->covered[i]);
		dout_u64(&d->out, "covered_extents", cp->nr_covered);
		dout_u64(&d->out, "covered_blocks", blocks);
		dout_hex(&d->out, "covered_crc", cp->covered_crc);
	}
	dout_arr(&d->out, "smap_index");
	for (unsigned i = 0; i < cp->nr_smap_index; i++) {
		dout_row(&d->out);
		dout_u64(&d->out, "index", i);
		dout_u64(&d->out, "blkaddr", cp->smap_index[i]);
		dout_row_end(&d->out);
	}
	dout_arr_end(&d->out);
}

/* One slot: "empty", "invalid" (the log says why) or its fields. */
static void show_slot(struct dump_ctx *d, unsigned i, void *blk)
{
	uint64_t slot = d->fs->sb.cp_blkaddr[i];
	struct czfs_cp_info cp;
	const char *state = "valid";
	char name[32];
	int err = czfs_bdev_read(d->fs->bdev, blk, CZFS_BLOCK_SIZE,
				 slot * CZFS_BLOCK_SIZE);

	uint32_t crc;

	if (!err && czfs_is_zero(blk, CZFS_BLOCK_SIZE))
		state = "empty";
	else if (err || czfs_cp_decode(blk, slot, &cp))
		state = "invalid";
	else if ((cp.flags & CZFS_CP_COVERED) &&
		 (czfs_cp_covered_crc(d->fs->bdev, &cp, &crc) ||
		  crc != cp.covered_crc))
		state = "incomplete";	/* a crash cut its flush: not used */
	snprintf(name, sizeof(name), "checkpoint%llu", (unsigned long long)slot);
	dout_obj(&d->out, name);
	dout_u64(&d->out, "blkaddr", slot);
	dout_str(&d->out, "state", state);
	dout_bool(&d->out, "current", !strcmp(state, "valid") &&
		  cp.generation == d->fs->cp.generation);
	if (strcmp(state, "empty") && strcmp(state, "invalid"))
		show_cp(d, &cp);
	dout_obj_end(&d->out);
	if (!strcmp(state, "invalid"))	/* incomplete: a crash, not damage */
		d->damage++;
}

void dump_checkpoints(struct dump_ctx *d)
{
	void *blk = aligned_alloc(CZFS_BLOCK_SIZE, CZFS_BLOCK_SIZE);

	for (unsigned i = 0; blk && i < 2; i++)
		show_slot(d, i, blk);
	free(blk);
}
