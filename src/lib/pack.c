// SPDX-License-Identifier: MIT
/* Packs: PACK items and their reference counts (pack.h). */
#include "config.h"

#include <errno.h>
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

/* A run: no codec nor checksum of its own, ulen ending in its last block. */
static int run_check(const struct czfs_pack_info *p, uint64_t max_blocks)
{
	if (p->alg)
		return pack_err(p->blkaddr, "run with an algorithm");
	if (p->nblocks < 1 || p->nblocks > CZFS_RUN_MAX_BLOCKS ||
	    p->blkaddr < CZFS_FIRST_DATA_BLKADDR || max_blocks < p->nblocks ||
	    p->blkaddr > max_blocks - p->nblocks)
		return pack_err(p->blkaddr, "run's blocks outside the image");
	if (DIV_ROUND_UP(p->ulen, CZFS_BLOCK_SIZE) != p->nblocks)
		return pack_err(p->blkaddr, "run's length does not end in its last block");
	if (p->live < 1 || p->live > p->ulen)
		return pack_err(p->blkaddr, "run's live bytes outside 1..its length");
	return 0;
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
		.run = raw.flags & CZFS_PACK_RUN,
	};
	if (p->run) {		/* checksum's place holds its live bytes */
		p->live = p->checksum;
		p->checksum = 0;
	}
	if (raw.reserved0 || raw.reserved || (raw.flags & ~CZFS_PACK_RUN))
		return pack_err(blkaddr, "reserved fields not zero");
	if (!p->refs)
		return pack_err(blkaddr, "no references");
	if (p->run)
		return run_check(p, max_blocks);
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
		.checksum = cpu_to_le32(p->run ? p->live : p->checksum),
		.flags = p->run ? CZFS_PACK_RUN : 0,
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
	if (ci->kind == CZFS_CLUSTER_SLICE)	/* its payload inside the run */
		return p->run && p->blkaddr == ci->run &&
		       ci->slice_len <= p->live &&
		       (ci->blkaddr - ci->run) * CZFS_BLOCK_SIZE +
		       ci->slice_off + ci->slice_len <= p->ulen;
	return !p->run && ci->kind == CZFS_CLUSTER_PACKED && p->blkaddr == ci->blkaddr &&
	       p->alg == ci->alg && p->nblocks == ci->nblocks &&
	       p->ulen == ci->pack_ulen && p->checksum == ci->checksum;
}

int czfs_pack_unref(struct czfs_fs *fs, uint64_t blkaddr, uint32_t bytes,
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
	if (--p.refs) {
		/* a slice's bytes leave its run (never below one: a live
		 * slice holds some) */
		p.live = p.run ? MAX(p.live, bytes + 1) - bytes : 0;
		n = czfs_btree_update(&fs->tree, &key, val,
				      czfs_pack_item_encode(&p, val));
		return n ? n : czfs_run_underused(&p);
	}
	n = czfs_btree_delete(&fs->tree, &key);
	if (n)
		return n;
	czfs_smap_free(&fs->smap, blkaddr, p.nblocks);
	*freed_blocks += p.nblocks;
	return 0;
}

uint64_t czfs_cluster_item_pack(const void *val, unsigned len,
				uint32_t *bytes)
{
	struct czfs_cluster raw;

	*bytes = 0;
	if (len < sizeof(raw))
		return 0;
	memcpy(&raw, val, sizeof(raw));
	if (raw.kind == CZFS_CLUSTER_PACKED)
		return le64_to_cpu(raw.blkaddr);
	if (raw.kind == CZFS_CLUSTER_SLICE && len >= sizeof(raw) +
	    sizeof(struct czfs_cluster_slice)) {
		struct czfs_cluster_slice ext;

		memcpy(&ext, (const uint8_t *)val + sizeof(raw), sizeof(ext));
		*bytes = le32_to_cpu(ext.clen);
		return le64_to_cpu(ext.run);
	}
	return 0;
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

int czfs_pack_settle(struct czfs_fs *fs, struct czfs_pack_info *p,
		     unsigned linked)
{
	struct czfs_key key = { CZFS_PACK_OBJECTID, CZFS_ITEM_PACK, p->blkaddr };
	int err;

	p->refs = linked;
	err = linked ? czfs_pack_put(fs, p) : czfs_btree_delete(&fs->tree, &key);
	if (err)
		czfs_err("%s at block %llu: its count stays wrong: %s",
			 p->run ? "run" : "pack", (unsigned long long)p->blkaddr,
			 strerror(-err));
	return err;
}
