// SPDX-License-Identifier: MIT
/*
 * BLOCKMAP clusters (cluster.h): a cluster rewritten in part is stored raw,
 * each block at its own address, so that a 4 KiB rewrite costs one block
 * and the item instead of a whole cluster decompressed, compressed and
 * written again.  The item's entries, their checks, the decode, and the
 * rule of when writeback stores a cluster this way.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "cluster.h"
#include "crc32c.h"
#include "log.h"
#include "util.h"

#define ITEM_SIZE	((unsigned)sizeof(struct czfs_cluster))
#define ENTRY_SIZE	((unsigned)sizeof(struct czfs_cluster_block))

unsigned czfs_blockmap_entries(const struct czfs_cluster_info *ci)
{
	return DIV_ROUND_UP(ci->ulen, CZFS_BLOCK_SIZE);
}

void czfs_blockmap_get(const struct czfs_cluster_info *ci, unsigned i,
		       uint64_t *blkaddr, uint32_t *checksum)
{
	struct czfs_cluster_block b;

	memcpy(&b, (const char *)ci->inline_data + (size_t)i * ENTRY_SIZE,
	       ENTRY_SIZE);
	*blkaddr = le64_to_cpu(b.blkaddr);
	*checksum = le32_to_cpu(b.checksum);
}

void czfs_blockmap_set(void *map, unsigned i, uint64_t blkaddr,
		       uint32_t checksum)
{
	struct czfs_cluster_block b = {
		.blkaddr = cpu_to_le64(blkaddr),
		.checksum = cpu_to_le32(checksum),
	};

	memcpy((char *)map + (size_t)i * ENTRY_SIZE, &b, ENTRY_SIZE);
}

int czfs_blockmap_item_check(const void *val, unsigned len,
			     uint64_t max_blocks, struct czfs_cluster_info *ci)
{
	unsigned n = czfs_blockmap_entries(ci), stored = 0;

	if (ci->alg || ci->checksum || ci->blkaddr) {
		czfs_err("cluster item: block-mapped cluster with alg %u checksum 0x%08x blkaddr %llu, expected 0",
			 ci->alg, ci->checksum, (unsigned long long)ci->blkaddr);
		return -EFSCORRUPTED;
	}
	if (len != ITEM_SIZE + n * ENTRY_SIZE) {
		czfs_err("cluster item: block-mapped item of %u bytes has %u bytes, expected %u",
			 ci->ulen, len, ITEM_SIZE + n * ENTRY_SIZE);
		return -EFSCORRUPTED;
	}
	ci->inline_data = (const char *)val + ITEM_SIZE;
	ci->inline_len = n * ENTRY_SIZE;
	for (unsigned i = 0; i < n; i++) {
		struct czfs_cluster_block b;
		uint64_t a;

		memcpy(&b, (const char *)ci->inline_data + i * ENTRY_SIZE,
		       ENTRY_SIZE);
		a = le64_to_cpu(b.blkaddr);
		if (b.reserved || (!a && b.checksum)) {
			czfs_err("cluster item: block-mapped entry %u: reserved field or checksum of a zero block not zero",
				 i);
			return -EFSCORRUPTED;
		}
		if (a && (a < CZFS_FIRST_DATA_BLKADDR || a >= max_blocks)) {
			czfs_err("cluster item: block-mapped entry %u: block %llu outside the image (%llu blocks)",
				 i, (unsigned long long)a,
				 (unsigned long long)max_blocks);
			return -EFSCORRUPTED;
		}
		stored += a != 0;
	}
	if (ci->nblocks != stored) {
		czfs_err("cluster item: block-mapped cluster counts %u blocks, its entries %u",
			 ci->nblocks, stored);
		return -EFSCORRUPTED;
	}
	return 0;
}

int czfs_blockmap_decode(const struct czfs_cluster_info *ci,
			 const void *stored, void *dst)
{
	unsigned n = czfs_blockmap_entries(ci);

	if (!ci->inline_data || ci->inline_len != n * ENTRY_SIZE) {
		czfs_err("block-mapped cluster of %u bytes: %u bytes of entries",
			 ci->ulen, ci->inline_len);
		return -EFSCORRUPTED;
	}
	for (unsigned i = 0; i < n; i++) {
		const char *src = (const char *)stored + (size_t)i * CZFS_BLOCK_SIZE;
		char *to = (char *)dst + (size_t)i * CZFS_BLOCK_SIZE;
		unsigned len = MIN(CZFS_BLOCK_SIZE, ci->ulen - i * CZFS_BLOCK_SIZE);
		uint64_t a;
		uint32_t crc, got;

		czfs_blockmap_get(ci, i, &a, &crc);
		if (!a) {
			memset(to, 0, len);
			continue;
		}
		got = czfs_crc32c(0, src, CZFS_BLOCK_SIZE);
		if (got != crc) {
			czfs_err("block-mapped cluster: block %llu: checksum mismatch: stored %08x, computed %08x",
				 (unsigned long long)a, crc, got);
			return -EFSCORRUPTED;
		}
		if (src != to)
			memcpy(to, src, len);
	}
	return 0;
}

bool czfs_blockmap_keeps(const struct czfs_cluster_info *old, unsigned i,
			 uint64_t *blkaddr, uint32_t *checksum, bool *known)
{
	*known = false;
	if (old->kind == CZFS_CLUSTER_RAW && i < old->nblocks) {
		*blkaddr = old->blkaddr + i;
		return true;
	}
	if (old->kind == CZFS_CLUSTER_BLOCKMAP && i < czfs_blockmap_entries(old)) {
		czfs_blockmap_get(old, i, blkaddr, checksum);
		*known = true;
		return true;
	}
	return false;
}

uint64_t czfs_blockmap_kept(const struct czfs_cluster_info *ci)
{
	uint64_t kept = 0;

	if (ci->kind != CZFS_CLUSTER_BLOCKMAP)
		return 0;
	for (unsigned i = 0; i < czfs_blockmap_entries(ci); i++) {
		uint64_t a;
		uint32_t crc;

		czfs_blockmap_get(ci, i, &a, &crc);
		if (a && !(ci->fresh & (1ull << i)))
			kept |= 1ull << i;
	}
	return kept;
}

bool czfs_cluster_hot(const struct czfs_cluster_info *old, uint64_t dirty,
		      unsigned len, bool log_tail)
{
	unsigned n = DIV_ROUND_UP(len, CZFS_BLOCK_SIZE);
	unsigned had = old->kind == CZFS_CLUSTER_HOLE ||
		       old->kind == CZFS_CLUSTER_RESERVED ? 0 :
		       old->ulen / CZFS_BLOCK_SIZE;
	uint64_t all = n >= 64 ? ~0ull : (1ull << n) - 1;
	uint64_t before = had >= 64 ? ~0ull : (1ull << had) - 1;

	if (n <= 1)
		return false;
	/* an fsync'd file's growing end: SQLite's rollback journal, 60 KiB
	 * written and fsync'd and deleted a millisecond later, cost a
	 * transaction a compression of it (12% of its time) */
	if (log_tail)
		return true;
	/* written whole: compressed, as a sequential writer's clusters */
	if ((dirty & all) == all)
		return false;
	/* only appended to (a growing tail): compressed too */
	return (dirty & before) != 0;
}
