// SPDX-License-Identifier: MIT
/* Packs: PACK items and their reference counts (pack.h). */
#include "config.h"

#include <string.h>

#include "btree.h"
#include "cluster.h"
#include "fs.h"
#include "log.h"
#include "pack.h"
#include "util.h"

#define PACK_SIZE	((unsigned)sizeof(struct czfs_pack))

static int pack_err(uint64_t blkaddr, const char *what)
{
	czfs_err("pack at block %llu: %s", (unsigned long long)blkaddr, what);
	return -EFSCORRUPTED;
}

int czfs_pack_item_decode(uint64_t blkaddr, const void *val, unsigned len,
			  uint64_t max_blocks, struct czfs_pack_info *p)
{
	struct czfs_pack raw;

	if (len != PACK_SIZE)
		return pack_err(blkaddr, "item of the wrong size");
	memcpy(&raw, val, PACK_SIZE);
	*p = (struct czfs_pack_info){
		.blkaddr = blkaddr,
		.refs = le32_to_cpu(raw.refs),
		.alg = raw.alg,
		.nblocks = raw.nblocks,
		.ulen = le32_to_cpu(raw.ulen),
		.checksum = le32_to_cpu(raw.checksum),
	};
	if (raw.reserved0 || raw.reserved)
		return pack_err(blkaddr, "reserved fields not zero");
	if (!p->refs)
		return pack_err(blkaddr, "no references");
	if (p->alg > CZFS_ALG_MAX)
		return pack_err(blkaddr, "bad algorithm");
	if (p->ulen < 1 || p->ulen > CZFS_PACK_MAX_ULEN)
		return pack_err(blkaddr, "size outside 1..256 KiB");
	if (p->nblocks < 1 || p->nblocks > CZFS_MAX_CLUSTER_BLOCKS ||
	    blkaddr < CZFS_FIRST_DATA_BLKADDR || max_blocks < p->nblocks ||
	    blkaddr > max_blocks - p->nblocks)
		return pack_err(blkaddr, "blocks outside the image");
	return 0;
}

unsigned czfs_pack_item_encode(const struct czfs_pack_info *p, void *val)
{
	struct czfs_pack raw = {
		.refs = cpu_to_le32(p->refs),
		.alg = (uint8_t)p->alg,
		.nblocks = (uint8_t)p->nblocks,
		.ulen = cpu_to_le32(p->ulen),
		.checksum = cpu_to_le32(p->checksum),
	};

	memcpy(val, &raw, PACK_SIZE);
	return PACK_SIZE;
}

void czfs_pack_of_cluster(const struct czfs_cluster_info *ci,
			  struct czfs_pack_info *p)
{
	*p = (struct czfs_pack_info){
		.blkaddr = ci->blkaddr,
		.refs = 1,
		.alg = ci->alg,
		.nblocks = ci->nblocks,
		.ulen = ci->pack_ulen,
		.checksum = ci->checksum,
	};
}

bool czfs_pack_matches(const struct czfs_pack_info *p,
		       const struct czfs_cluster_info *ci)
{
	return ci->kind == CZFS_CLUSTER_PACKED && p->blkaddr == ci->blkaddr &&
	       p->alg == ci->alg && p->nblocks == ci->nblocks &&
	       p->ulen == ci->pack_ulen && p->checksum == ci->checksum;
}

int czfs_pack_unref(struct czfs_fs *fs, uint64_t blkaddr,
		    uint64_t *freed_blocks)
{
	struct czfs_key key = { CZFS_PACK_OBJECTID, CZFS_ITEM_PACK, blkaddr };
	uint8_t val[PACK_SIZE];
	struct czfs_pack_info p;
	int n;

	n = czfs_btree_lookup(&fs->tree, &key, val, sizeof(val));
	if (n == -ENOENT)
		return pack_err(blkaddr, "a cluster points at it, no PACK item");
	if (n < 0)
		return n;
	if ((unsigned)n > sizeof(val) ||
	    czfs_pack_item_decode(blkaddr, val, (unsigned)n, fs->cp.max_blocks, &p))
		return -EFSCORRUPTED;
	if (--p.refs)
		return czfs_btree_update(&fs->tree, &key, val,
					 czfs_pack_item_encode(&p, val));
	n = czfs_btree_delete(&fs->tree, &key);
	if (n)
		return n;
	czfs_smap_free(&fs->smap, blkaddr, p.nblocks);
	*freed_blocks += p.nblocks;
	return 0;
}

uint64_t czfs_cluster_item_pack(const void *val, unsigned len)
{
	struct czfs_cluster raw;

	if (len < sizeof(raw))
		return 0;
	memcpy(&raw, val, sizeof(raw));
	return raw.kind == CZFS_CLUSTER_PACKED ? le64_to_cpu(raw.blkaddr) : 0;
}

unsigned czfs_pack_tail(uint64_t size, unsigned cbytes, unsigned pack_max)
{
	unsigned tail = (unsigned)(size % cbytes);

	return tail <= pack_max ? tail : 0;
}

int czfs_pack_encode(struct czfs_codec *codec,
		     const struct czfs_cluster_policy *pol, const void *src,
		     unsigned len, void *out, struct czfs_cluster_info *ci,
		     unsigned *out_len)
{
	struct czfs_cluster_policy pp = *pol;

	if (len > CZFS_PACK_MAX_ULEN)
		return -EINVAL;
	pp.zero_detect = false;
	pp.allow_inline = false;
	return czfs_cluster_encode(codec, &pp, src, len, out, ci, out_len);
}

void czfs_pack_of_stored(const struct czfs_cluster_info *stored,
			 uint32_t refs, struct czfs_pack_info *p)
{
	*p = (struct czfs_pack_info){
		.blkaddr = stored->blkaddr,
		.refs = refs,
		.alg = stored->kind == CZFS_CLUSTER_COMPRESSED ? stored->alg : 0,
		.nblocks = stored->nblocks,
		.ulen = stored->ulen,
		.checksum = stored->checksum,
	};
}

int czfs_pack_put(struct czfs_fs *fs, const struct czfs_pack_info *p)
{
	struct czfs_key key = { CZFS_PACK_OBJECTID, CZFS_ITEM_PACK, p->blkaddr };
	uint8_t val[PACK_SIZE];

	return czfs_btree_put(&fs->tree, &key, val, czfs_pack_item_encode(p, val));
}
