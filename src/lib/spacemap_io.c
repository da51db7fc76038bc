// SPDX-License-Identifier: MIT
/*
 * Space map persistence: copy-on-write writes of the changed bitmap and
 * index blocks at a checkpoint, and loading with every check.
 */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>

#include "bdev.h"
#include "crc32c.h"
#include "log.h"
#include "spacemap.h"
#include "spacemap_int.h"
#include "super.h"
#include "util.h"

/* ---- write ----------------------------------------------------------- */

/* crc32c of an index block, its leading checksum field taken as zero. */
static uint32_t index_csum(const void *blk)
{
	static const uint8_t zero[4];

	return czfs_crc32c(czfs_crc32c(0, zero, 4), (const uint8_t *)blk + 4,
			   CZFS_BLOCK_SIZE - 4);
}

/* Map blocks queued for one write request while their addresses follow. */
struct smap_batch {
	struct czfs_bdev *bdev;
	uint8_t *buf;			/* BATCH_BLOCKS blocks, aligned */
	uint64_t start;
	unsigned count;
};

static int batch_flush(struct smap_batch *b)
{
	int err = 0;

	if (b->count)
		err = czfs_bdev_write(b->bdev, b->buf,
				      (size_t)b->count * CZFS_BLOCK_SIZE,
				      b->start * CZFS_BLOCK_SIZE);
	if (err)
		czfs_err("space map: write error %d at block %" PRIu64, err,
			 b->start);
	b->count = 0;
	return err;
}

/* The buffer for block addr, flushing first unless addr extends the batch. */
static int batch_slot(struct smap_batch *b, uint64_t addr, void **slot)
{
	int err = 0;

	if (b->count && (addr != b->start + b->count ||
			 b->count == BATCH_BLOCKS))
		err = batch_flush(b);
	if (err)
		return err;
	if (!b->count)
		b->start = addr;
	*slot = b->buf + (size_t)b->count++ * CZFS_BLOCK_SIZE;
	return 0;
}

static bool index_has_entries(const struct czfs_smap *sm, uint64_t j)
{
	uint64_t end = MIN(sm->nr_bitmaps, (j + 1) * SMAP_PER_INDEX);

	for (uint64_t k = j * SMAP_PER_INDEX; k < end; k++)
		if (sm->bitmap_addr[k])
			return true;
	return false;
}

static bool bitmap_has_bits(const struct czfs_smap *sm, uint64_t k)
{
	return !czfs_is_zero(smap_chunk(sm->cur, k), CZFS_BLOCK_SIZE);
}

/*
 * Settle map block i (a bitmap or index block at *addr) for this write:
 * the first time, it gives up its old location (the committed map keeps
 * it); then it gets a new one if it has content and no location yet.
 */
static int settle(struct czfs_smap *sm, uint64_t *addr, bool first,
		  bool (*has_content)(const struct czfs_smap *, uint64_t),
		  uint64_t i, bool *again)
{
	if (first) {
		if (*addr)
			smap_free_locked(sm, *addr, 1);
		*addr = 0;
		*again = true;
	}
	if (*addr || !has_content(sm, i))
		return 0;
	*again = true;
	return smap_alloc_locked(sm, 1, addr);
}

/* One pass over the dirty bitmap blocks; their index blocks must move. */
static int relocate_bitmaps(struct czfs_smap *sm, uint8_t *ix, bool *again)
{
	for (uint64_t k = 0; k < sm->nr_bitmaps; k++) {
		uint8_t *f = &sm->bitmap_dirty[k];
		bool first = !(*f & BM_MOVED);
		int err;

		if (!(*f & (BM_DIRTY | BM_MOVED)))
			continue;
		*f |= BM_MOVED;
		ix[k / SMAP_PER_INDEX] |= IX_NEED;
		err = settle(sm, &sm->bitmap_addr[k], first, bitmap_has_bits, k,
			     again);
		if (err)
			return err;
	}
	return 0;
}

/* One pass over the index blocks whose bitmap blocks moved. */
static int relocate_index(struct czfs_smap *sm, uint8_t *ix, bool *again)
{
	for (uint64_t j = 0; j < sm->nr_index; j++) {
		bool first = !(ix[j] & IX_MOVED);
		int err;

		if (!(ix[j] & IX_NEED))
			continue;
		ix[j] |= IX_MOVED;
		err = settle(sm, &sm->index_addr[j], first, index_has_entries, j,
			     again);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Give every changed map block its new location.  Allocating locations
 * dirties more bitmap blocks, so repeat until a pass changes nothing.
 * Each block gives up its old location once and gets a new one at most
 * once, so this ends after at most two changes per block.
 */
static int relocate_all(struct czfs_smap *sm, uint8_t *ix)
{
	bool again;
	int err;

	do {
		again = false;
		err = relocate_bitmaps(sm, ix, &again);
		if (!err)
			err = relocate_index(sm, ix, &again);
	} while (!err && again);
	return err;
}

static int write_bitmaps(struct czfs_smap *sm, struct smap_batch *b)
{
	for (uint64_t k = 0; k < sm->nr_bitmaps; k++) {
		void *slot;
		int err;

		if (!(sm->bitmap_dirty[k] & BM_MOVED))
			continue;
		sm->bitmap_crc[k] = 0;
		if (!sm->bitmap_addr[k])
			continue;
		err = batch_slot(b, sm->bitmap_addr[k], &slot);
		if (err)
			return err;
		memcpy(slot, smap_chunk(sm->cur, k), CZFS_BLOCK_SIZE);
		sm->bitmap_crc[k] = czfs_crc32c(0, slot, CZFS_BLOCK_SIZE);
	}
	return 0;
}

static void index_encode(const struct czfs_smap *sm, uint64_t j, uint64_t gen,
			 struct czfs_smap_index *ix)
{
	uint64_t first = j * SMAP_PER_INDEX;
	uint64_t n = MIN(sm->nr_bitmaps - first, SMAP_PER_INDEX);

	memset(ix, 0, sizeof(*ix));
	ix->magic = cpu_to_le32(CZFS_SMAP_MAGIC);
	ix->blkaddr = cpu_to_le64(sm->index_addr[j]);
	ix->generation = cpu_to_le64(gen);
	ix->first_bitmap = cpu_to_le64(first);
	for (uint64_t i = 0; i < n; i++) {
		struct czfs_smap_entry *e = &ix->entries[i];

		e->blkaddr = cpu_to_le64(sm->bitmap_addr[first + i]);
		e->checksum = cpu_to_le32(sm->bitmap_crc[first + i]);
	}
	ix->checksum = cpu_to_le32(index_csum(ix));
}

static int write_index(struct czfs_smap *sm, const uint8_t *ix, uint64_t gen,
		       struct smap_batch *b)
{
	for (uint64_t j = 0; j < sm->nr_index; j++) {
		void *slot;
		int err;

		if (!(ix[j] & IX_MOVED) || !sm->index_addr[j])
			continue;
		err = batch_slot(b, sm->index_addr[j], &slot);
		if (err)
			return err;
		index_encode(sm, j, gen, slot);
	}
	return batch_flush(b);
}

/* Written: the moved blocks wait for the commit.  Failed: retry them all. */
static void write_finish(struct czfs_smap *sm, bool ok)
{
	for (uint64_t k = 0; k < sm->nr_bitmaps; k++) {
		uint8_t *f = &sm->bitmap_dirty[k];

		if (!(*f & BM_MOVED))
			continue;
		*f &= ~BM_MOVED;
		if (ok)
			*f = (*f & ~BM_DIRTY) | BM_PENDING;
	}
}

static void fill_cp(const struct czfs_smap *sm, struct czfs_cp_info *cp)
{
	memset(cp->smap_index, 0, sizeof(cp->smap_index));
	for (uint64_t j = 0; j < sm->nr_index; j++)
		cp->smap_index[j] = sm->index_addr[j];
	cp->nr_smap_index = sm->nr_index;
	cp->used_blocks = sm->used;
	cp->prealloc_blocks = sm->prealloc;
	cp->image_blocks = sm->image_blocks;
	cp->max_blocks = sm->max_blocks;
}

int czfs_smap_write(struct czfs_smap *sm, struct czfs_bdev *bdev,
		    uint64_t gen, struct czfs_cp_info *cp)
{
	uint8_t ix[SMAP_MAX_INDEX] = { 0 };
	struct smap_batch b = { .bdev = bdev };
	int err;

	pthread_mutex_lock(&sm->lock);
	if (!sm->write_buf)
		sm->write_buf = aligned_alloc(CZFS_BLOCK_SIZE,
					      BATCH_BLOCKS * CZFS_BLOCK_SIZE);
	b.buf = sm->write_buf;
	if (!b.buf) {
		pthread_mutex_unlock(&sm->lock);
		return -ENOMEM;
	}
	err = relocate_all(sm, ix);
	if (err)
		czfs_err("space map: no room to write the map: %d", err);
	if (!err)
		err = write_bitmaps(sm, &b);
	if (!err)
		err = write_index(sm, ix, gen, &b);
	write_finish(sm, !err);
	if (!err)
		fill_cp(sm, cp);
	pthread_mutex_unlock(&sm->lock);
	return err;
}

/* ---- load ------------------------------------------------------------ */

static int read_block(struct czfs_bdev *bdev, uint64_t addr, void *buf,
		      const char *what)
{
	int err = czfs_bdev_read(bdev, buf, CZFS_BLOCK_SIZE,
				 addr * CZFS_BLOCK_SIZE);

	if (err)
		czfs_err("space map %s block %" PRIu64 ": read error %d", what,
			 addr, err);
	return err;
}

static int index_check_header(const struct czfs_smap_index *ix, uint64_t j,
			      uint64_t addr, uint64_t max_gen)
{
	const char *bad = NULL;

	if (le32_to_cpu(ix->checksum) != index_csum(ix))
		bad = "bad checksum";
	else if (le32_to_cpu(ix->magic) != CZFS_SMAP_MAGIC)
		bad = "bad magic";
	else if (le64_to_cpu(ix->blkaddr) != addr)
		bad = "written for another block";
	else if (le64_to_cpu(ix->first_bitmap) != j * SMAP_PER_INDEX)
		bad = "bad first_bitmap";
	else if (!ix->generation || le64_to_cpu(ix->generation) > max_gen)
		bad = "bad generation";
	if (bad) {
		czfs_err("space map index block %" PRIu64 " (index %" PRIu64
			 "): %s", addr, j, bad);
		return -EFSCORRUPTED;
	}
	return 0;
}

/* Map blocks are used blocks: past the header, below image_blocks. */
static bool map_addr_ok(uint64_t a, const struct czfs_cp_info *cp)
{
	return a >= CZFS_FIRST_DATA_BLKADDR && a < cp->image_blocks &&
	       a < cp->max_blocks;
}

/* Take the bitmap block addresses and crcs an index block names. */
static int index_take_entries(struct czfs_smap *sm,
			      const struct czfs_smap_index *ix, uint64_t j,
			      uint64_t addr, const struct czfs_cp_info *cp)
{
	for (unsigned i = 0; i < SMAP_PER_INDEX; i++) {
		uint64_t k = j * SMAP_PER_INDEX + i;
		uint64_t a = le64_to_cpu(ix->entries[i].blkaddr);

		if (!a)
			continue;
		if (k >= sm->nr_bitmaps || !map_addr_ok(a, cp)) {
			czfs_err("space map index block %" PRIu64 ": bad entry"
				 " %u address %" PRIu64, addr, i, a);
			return -EFSCORRUPTED;
		}
		sm->bitmap_addr[k] = a;
		sm->bitmap_crc[k] = le32_to_cpu(ix->entries[i].checksum);
	}
	return 0;
}

static int load_index(struct czfs_smap *sm, struct czfs_bdev *bdev,
		      const struct czfs_cp_info *cp, void *buf)
{
	for (uint64_t j = 0; j < sm->nr_index; j++) {
		uint64_t addr = cp->smap_index[j];
		struct czfs_smap_index *ix = buf;
		int err;

		sm->index_addr[j] = addr;
		if (!addr)
			continue;
		if (!map_addr_ok(addr, cp)) {
			czfs_err("space map index %" PRIu64 ": bad address %"
				 PRIu64, j, addr);
			return -EFSCORRUPTED;
		}
		err = read_block(bdev, addr, buf, "index");
		if (!err)
			err = index_check_header(ix, j, addr, cp->generation);
		if (!err)
			err = index_take_entries(sm, ix, j, addr, cp);
		if (err)
			return err;
	}
	return 0;
}

static int load_bitmaps(struct czfs_smap *sm, struct czfs_bdev *bdev,
			void *buf)
{
	for (uint64_t k = 0; k < sm->nr_bitmaps; k++) {
		uint64_t addr = sm->bitmap_addr[k];
		uint32_t crc;
		int err;

		if (!addr)
			continue;
		err = read_block(bdev, addr, buf, "bitmap");
		if (err)
			return err;
		crc = czfs_crc32c(0, buf, CZFS_BLOCK_SIZE);
		if (crc != sm->bitmap_crc[k]) {
			czfs_err("space map bitmap block %" PRIu64 " (bitmap %"
				 PRIu64 "): bad checksum 0x%08x (index says 0x%08x)",
				 addr, k, crc, sm->bitmap_crc[k]);
			return -EFSCORRUPTED;
		}
		memcpy(smap_chunk(sm->cur, k), buf, CZFS_BLOCK_SIZE);
		memcpy(smap_chunk(sm->committed, k), buf, CZFS_BLOCK_SIZE);
	}
	return 0;
}

/* used and image_blocks from the loaded bits, over the stored chunks only. */
static void load_count(struct czfs_smap *sm)
{
	for (uint64_t k = 0; k < sm->nr_bitmaps; k++) {
		uint64_t start = k * SMAP_BITS;
		const uint64_t *c = smap_chunk(sm->cur, k);

		if (!sm->bitmap_addr[k])
			continue;
		sm->used += smap_bits_count(sm->cur, start, start + SMAP_BITS);
		for (unsigned w = SMAP_WORDS; w-- > 0;) {
			if (c[w]) {
				sm->image_blocks = start + w * 64 + 64 -
						   __builtin_clzll(c[w]);
				break;
			}
		}
	}
}

/* A block holding the map must be marked used, or it could be handed out. */
static int check_own_block(const struct czfs_smap *sm, uint64_t addr)
{
	if (!addr || (sm->cur[addr / 64] >> (addr % 64) & 1))
		return 0;
	czfs_err("space map: map block %" PRIu64 " is marked free", addr);
	return -EFSCORRUPTED;
}

/* The loaded bits agree with the checkpoint (its used count too, unless
 * recount) and protect the fixed blocks. */
static int load_check(struct czfs_smap *sm, const struct czfs_cp_info *cp,
		      bool recount)
{
	uint64_t end = sm->nr_bitmaps * SMAP_BITS;

	if (smap_bits_count(sm->cur, sm->max_blocks, end)) {
		czfs_err("space map: blocks past max_blocks %" PRIu64
			 " marked used", sm->max_blocks);
		return -EFSCORRUPTED;
	}
	load_count(sm);
	sm->prealloc = cp->prealloc_blocks;
	if (!recount && sm->used != cp->used_blocks) {
		czfs_err("space map: %" PRIu64 " blocks used, checkpoint says %"
			 PRIu64, sm->used, cp->used_blocks);
		return -EFSCORRUPTED;
	}
	if (sm->image_blocks > cp->image_blocks) {
		czfs_err("space map: block %" PRIu64 " used past image_blocks %"
			 PRIu64, sm->image_blocks - 1, cp->image_blocks);
		return -EFSCORRUPTED;
	}
	if (smap_bits_count(sm->cur, 0, CZFS_FIRST_DATA_BLKADDR) !=
	    CZFS_FIRST_DATA_BLKADDR) {
		czfs_err("space map: superblock or checkpoint blocks marked free");
		return -EFSCORRUPTED;
	}
	for (uint64_t k = 0; k < sm->nr_bitmaps; k++)
		if (check_own_block(sm, sm->bitmap_addr[k]))
			return -EFSCORRUPTED;
	for (uint64_t j = 0; j < sm->nr_index; j++)
		if (check_own_block(sm, sm->index_addr[j]))
			return -EFSCORRUPTED;
	return 0;
}

static int smap_load(struct czfs_smap *sm, struct czfs_bdev *bdev,
		     const struct czfs_cp_info *cp, bool recount)
{
	unsigned nr = czfs_smap_index_count(cp->max_blocks);
	void *buf = NULL;
	int err;

	if (cp->max_blocks < CZFS_FIRST_DATA_BLKADDR + 1 ||
	    nr > SMAP_MAX_INDEX || cp->nr_smap_index != nr) {
		czfs_err("space map: %u index blocks for max_blocks %" PRIu64,
			 cp->nr_smap_index, cp->max_blocks);
		memset(sm, 0, sizeof(*sm));
		return -EFSCORRUPTED;
	}
	err = smap_setup(sm, cp->max_blocks);
	if (err)
		return err;
	buf = aligned_alloc(CZFS_BLOCK_SIZE, CZFS_BLOCK_SIZE);
	err = buf ? load_index(sm, bdev, cp, buf) : -ENOMEM;
	if (!err)
		err = load_bitmaps(sm, bdev, buf);
	if (!err)
		err = load_check(sm, cp, recount);
	free(buf);
	if (err)
		czfs_smap_destroy(sm);
	return err;
}

int czfs_smap_load(struct czfs_smap *sm, struct czfs_bdev *bdev,
		   const struct czfs_cp_info *cp)
{
	return smap_load(sm, bdev, cp, false);
}

int czfs_smap_load_recount(struct czfs_smap *sm, struct czfs_bdev *bdev,
			   const struct czfs_cp_info *cp, uint64_t *used)
{
	int err = smap_load(sm, bdev, cp, true);

	*used = err ? 0 : sm->used;
	return err;
}
