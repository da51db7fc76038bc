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

/* The first block of the pack a PACK key offset names. */
static uint64_t key_blkaddr(uint64_t key)
{
	return key & CZFS_PACK_SLICED_BIT ?
	       (key & ~CZFS_PACK_SLICED_BIT) >> CZFS_BLOCK_SHIFT : key;
}

/* A sliced pack: compressed, its payload inside the blocks it touches,
 * within CZFS_RUN_MAX_BLOCKS of its run. */
static int sliced_check(const struct czfs_pack_info *p, uint64_t max_blocks)
{
	if (p->alg < 1 || p->alg > CZFS_ALG_MAX)
		return pack_err(p->blkaddr, "sliced pack with a bad algorithm");
	if (p->ulen < 1 || p->ulen > CZFS_PACK_MAX_ULEN || p->clen < 1 ||
	    p->clen >= p->ulen)
		return pack_err(p->blkaddr, "sliced pack's sizes out of range");
	if (p->nblocks != DIV_ROUND_UP(p->slice_off + p->clen, CZFS_BLOCK_SIZE))
		return pack_err(p->blkaddr, "sliced pack's blocks are not its payload's");
	if (p->run_at < CZFS_FIRST_DATA_BLKADDR || p->run_at > p->blkaddr ||
	    p->blkaddr - p->run_at + p->nblocks > CZFS_RUN_MAX_BLOCKS ||
	    max_blocks < p->nblocks || p->blkaddr > max_blocks - p->nblocks ||
	    p->blkaddr >= CZFS_PACK_SLICED_MAX_BLKADDR)
		return pack_err(p->blkaddr, "sliced pack outside its run or the image");
	return 0;
}

int czfs_pack_item_decode(uint64_t key, const void *val, unsigned len,
			  uint64_t max_blocks, struct czfs_pack_info *p)
{
	bool sliced_key = key & CZFS_PACK_SLICED_BIT;
	uint64_t blkaddr = key_blkaddr(key);
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
		.sliced = raw.flags & CZFS_PACK_SLICED,
	};
	if (p->run) {		/* checksum's place holds its live bytes */
		p->live = p->checksum;
		p->checksum = 0;
	}
	if (p->sliced) {
		p->slice_off = (unsigned)(key & (CZFS_BLOCK_SIZE - 1));
		p->clen = le32_to_cpu(raw.clen);
		p->run_at = blkaddr - raw.run_back;
	}
	if (raw.reserved || (raw.flags & ~(CZFS_PACK_RUN | CZFS_PACK_SLICED)) ||
	    (p->run && p->sliced) ||
	    (!p->sliced && (raw.run_back || raw.clen)))
		return pack_err(blkaddr, "reserved fields not zero");
	if (sliced_key != p->sliced)
		return pack_err(blkaddr, "sliced flag and key disagree");
	if (!p->refs)
		return pack_err(blkaddr, "no references");
	if (p->run)
		return run_check(p, max_blocks);
	if (p->sliced)
		return sliced_check(p, max_blocks);
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
		.flags = p->run ? CZFS_PACK_RUN :
			 p->sliced ? CZFS_PACK_SLICED : 0,
		.run_back = p->sliced ? (uint8_t)(p->blkaddr - p->run_at) : 0,
		.clen = cpu_to_le32(p->sliced ? p->clen : 0),
	};

	memcpy(val, &raw, PACK_SIZE);
	return PACK_SIZE;
}

void czfs_pack_of_cluster(const struct czfs_cluster_info *ci,
			  struct czfs_pack_info *p)
{
	struct czfs_cluster_info stored;

	czfs_cluster_pack_info(ci, &stored);
	czfs_pack_of_stored(&stored, 1, p);
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
	       p->ulen == ci->pack_ulen && p->checksum == ci->checksum &&
	       p->sliced == (ci->slice_len != 0) &&
	       (!p->sliced || (p->slice_off == ci->slice_off &&
			       p->clen == ci->slice_len && p->run_at == ci->run));
}

int czfs_pack_get(struct czfs_fs *fs, uint64_t at, struct czfs_pack_info *p)
{
	struct czfs_key key = { CZFS_PACK_OBJECTID, CZFS_ITEM_PACK, at };
	uint8_t val[PACK_SIZE];
	int n;

	n = czfs_btree_lookup(&fs->tree, &key, val, sizeof(val));
	if (n < 0)
		return n;
	if ((unsigned)n > sizeof(val) ||
	    czfs_pack_item_decode(at, val, (unsigned)n, fs->cp.max_blocks, p))
		return -EFSCORRUPTED;
	return 0;
}

int czfs_pack_unref(struct czfs_fs *fs, uint64_t at, uint32_t bytes,
		    uint64_t *freed_blocks)
{
	struct czfs_key key = { CZFS_PACK_OBJECTID, CZFS_ITEM_PACK, at };
	uint64_t blkaddr = key_blkaddr(at);
	uint8_t val[PACK_SIZE];
	struct czfs_pack_info p;
	int n;

	n = czfs_pack_get(fs, at, &p);
	if (n == -ENOENT)
		return pack_err(blkaddr, "a cluster points at it, no PACK item");
	if (n < 0)
		return n;
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
	if (p.sliced)		/* its run's blocks are the run's */
		return czfs_pack_unref(fs, p.run_at, p.clen, freed_blocks);
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
	if (raw.kind == CZFS_CLUSTER_PACKED && len >= sizeof(raw) +
	    sizeof(struct czfs_cluster_packed)) {
		struct czfs_cluster_packed ext;

		memcpy(&ext, (const uint8_t *)val + sizeof(raw), sizeof(ext));
		return ext.slice_clen ?
		       CZFS_PACK_SLICED_KEY(le64_to_cpu(raw.blkaddr),
					    le16_to_cpu(ext.slice_off) &
					    (CZFS_BLOCK_SIZE - 1)) :
		       le64_to_cpu(raw.blkaddr);
	}
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
	bool sliced = stored->kind == CZFS_CLUSTER_SLICE;

	*p = (struct czfs_pack_info){
		.blkaddr = stored->blkaddr,
		.refs = refs,
		.alg = stored->kind == CZFS_CLUSTER_COMPRESSED || sliced ?
		       stored->alg : 0,
		.nblocks = stored->nblocks,
		.ulen = stored->ulen,
		.checksum = stored->checksum,
		.sliced = sliced,
		.slice_off = sliced ? stored->slice_off : 0,
		.clen = sliced ? stored->slice_len : 0,
		.run_at = sliced ? stored->run : 0,
	};
}

int czfs_pack_put(struct czfs_fs *fs, const struct czfs_pack_info *p)
{
	struct czfs_key key = { CZFS_PACK_OBJECTID, CZFS_ITEM_PACK, czfs_pack_key(p) };
	uint8_t val[PACK_SIZE];

	return czfs_btree_put(&fs->tree, &key, val, czfs_pack_item_encode(p, val));
}

int czfs_pack_settle(struct czfs_fs *fs, struct czfs_pack_info *p,
		     unsigned linked)
{
	struct czfs_key key = { CZFS_PACK_OBJECTID, CZFS_ITEM_PACK, czfs_pack_key(p) };
	int err;

	p->refs = linked;
	err = linked ? czfs_pack_put(fs, p) : czfs_btree_delete(&fs->tree, &key);
	if (err)
		czfs_err("%s at block %llu: its count stays wrong: %s",
			 p->run ? "run" : "pack", (unsigned long long)p->blkaddr,
			 strerror(-err));
	return err;
}
