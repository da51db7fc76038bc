// SPDX-License-Identifier: MIT
/*
 * Space map: two in-memory bitmaps (cur, committed) and their copy-on-write
 * persistence as bitmap blocks named by index blocks.
 *
 * Each bitmap block of 32768 bits has a byte of flags: DIRTY (cur changed
 * since the last write), PENDING (written, committed not yet updated) and
 * MOVED (given its new location by the write in progress).  Write and
 * commit walk only these bytes and the chunks they mark, never the bits of
 * the whole map.
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

/* ---- bits ------------------------------------------------------------ */

/* Mask of the bits of word w that lie in [start, end). */
static uint64_t word_mask(uint64_t w, uint64_t start, uint64_t end)
{
	uint64_t base = w * 64, m = ~0ull;

	if (start > base)
		m &= ~0ull << (start - base);
	if (end < base + 64)
		m &= (1ull << (end - base)) - 1;
	return m;
}

/* Set (on) or clear bits [start, end); returns how many changed. */
static uint64_t bits_assign(uint64_t *map, uint64_t start, uint64_t end,
			    bool on)
{
	uint64_t changed = 0;

	for (uint64_t w = start / 64; w * 64 < end; w++) {
		uint64_t m = word_mask(w, start, end);
		uint64_t flip = on ? m & ~map[w] : m & map[w];

		changed += __builtin_popcountll(flip);
		map[w] ^= flip;
	}
	return changed;
}

uint64_t smap_bits_count(const uint64_t *map, uint64_t start, uint64_t end)
{
	uint64_t n = 0;

	for (uint64_t w = start / 64; w * 64 < end; w++)
		n += __builtin_popcountll(map[w] & word_mask(w, start, end));
	return n;
}

uint64_t *smap_chunk(uint64_t *map, uint64_t k)
{
	return map + k * SMAP_WORDS;
}

static void mark_dirty(struct czfs_smap *sm, uint64_t start, uint64_t end)
{
	for (uint64_t k = start / SMAP_BITS; k * SMAP_BITS < end; k++)
		sm->bitmap_dirty[k] |= BM_DIRTY;
}

static void mark_used(struct czfs_smap *sm, uint64_t start, uint64_t n)
{
	/* reused before its punch: the host keeps it, and the pass skips it */
	if (sm->unpunched_blocks)
		sm->unpunched_blocks -= bits_assign(sm->unpunched, start,
						    start + n, false);
	sm->used += bits_assign(sm->cur, start, start + n, true);
	bits_assign(sm->fresh, start, start + n, true);
	sm->image_blocks = MAX(sm->image_blocks, start + n);
	mark_dirty(sm, start, start + n);
}

static bool range_ok(const struct czfs_smap *sm, uint64_t start, uint64_t n)
{
	return n && start >= CZFS_FIRST_DATA_BLKADDR && start < sm->max_blocks &&
	       n <= sm->max_blocks - start;
}

/* A counter of the map, read under its lock. */
static uint64_t count_of(struct czfs_smap *sm, const uint64_t *field)
{
	uint64_t n;

	pthread_mutex_lock(&sm->lock);
	n = *field;
	pthread_mutex_unlock(&sm->lock);
	return n;
}

void smap_free_locked(struct czfs_smap *sm, uint64_t start, uint64_t n)
{
	uint64_t freed;

	if (!range_ok(sm, start, n)) {
		czfs_err("space map: freeing blocks %" PRIu64 "+%" PRIu64
			 " out of range", start, n);
		return;
	}
	freed = bits_assign(sm->cur, start, start + n, false);
	if (freed != n)
		czfs_err("space map: freeing blocks %" PRIu64 "+%" PRIu64
			 ": %" PRIu64 " were free", start, n, n - freed);
	sm->used -= freed;
	sm->freed_pending += freed;
	if (freed && (!sm->low_freed || start < sm->low_freed))
		sm->low_freed = start;
	mark_dirty(sm, start, start + n);
}

/* ---- search ---------------------------------------------------------- */

/* Bits of word w free in both bitmaps, not held, and inside [from, to). */
static uint64_t avail_word(const struct czfs_smap *sm, uint64_t w,
			   uint64_t from, uint64_t to)
{
	return ~(sm->cur[w] | sm->committed[w] | sm->held[w]) &
	       word_mask(w, from, to);
}

/* Bits p of a such that a[p .. p+n-1] are all set (1 <= n <= 64). */
static uint64_t run_starts(uint64_t a, unsigned n)
{
	for (unsigned k = 1; k < n;) {
		unsigned s = MIN(k, n - k);

		a &= a >> s;
		k += s;
	}
	return a;
}

/*
 * First run of n available blocks inside [from, to), or NO_RUN.  Full
 * words are skipped or counted whole; a run may span any number of words.
 * The words looked at add to sm->searched_words.
 */
static uint64_t find_run(struct czfs_smap *sm, uint64_t from, uint64_t to,
			 uint64_t n)
{
	uint64_t run_start = 0, run_len = 0, found = NO_RUN, w;

	if (from >= to || to - from < n)
		return NO_RUN;
	for (w = from / 64; w * 64 < to; w++) {
		uint64_t a = avail_word(sm, w, from, to), m;
		unsigned low, high;

		if (a == ~0ull) {
			if (!run_len)
				run_start = w * 64;
			run_len += 64;
			if (run_len >= n) {
				found = run_start;
				break;
			}
			continue;
		}
		if (!a) {
			run_len = 0;
			continue;
		}
		low = __builtin_ctzll(~a);
		if (run_len && run_len + low >= n) {
			found = run_start;
			break;
		}
		m = n <= 64 ? run_starts(a, (unsigned)n) : 0;
		if (m) {
			found = w * 64 + __builtin_ctzll(m);
			break;
		}
		high = __builtin_clzll(~a);
		run_len = high;
		run_start = w * 64 + 64 - high;
	}
	sm->searched_words += w - from / 64 + (found != NO_RUN);
	return found;
}

int smap_alloc_locked(struct czfs_smap *sm, uint64_t n, uint64_t *blkaddr)
{
	uint64_t start;

	if (!n || n > sm->max_blocks)
		return -ENOSPC;
	/* next fit from the cursor, then once more from the start */
	start = find_run(sm, sm->cursor, sm->max_blocks, n);
	if (start == NO_RUN)
		start = find_run(sm, 0, MIN(sm->max_blocks, sm->cursor + n - 1),
				 n);
	if (start == NO_RUN)
		return -ENOSPC;
	mark_used(sm, start, n);
	/* freed before the next commit, it waits for it (and its punch) */
	bits_assign(sm->committed, start, start + n, true);
	sm->cursor = start + n < sm->max_blocks ? start + n :
		     CZFS_FIRST_DATA_BLKADDR;
	*blkaddr = start;
	return 0;
}

/* ---- life cycle ------------------------------------------------------ */

static int smap_alloc_cb(struct czfs_allocator *a, uint64_t n,
			 uint64_t *blkaddr)
{
	return czfs_smap_alloc(container_of(a, struct czfs_smap, alloc), n,
			       blkaddr);
}

static void smap_free_cb(struct czfs_allocator *a, uint64_t blkaddr,
			 uint64_t n)
{
	czfs_smap_free(container_of(a, struct czfs_smap, alloc), blkaddr, n);
}

/* A zeroed copy of old (old_size bytes) of new_size bytes, or NULL. */
static void *copy_grown(const void *old, size_t old_size, size_t new_size)
{
	void *p = calloc(1, new_size);

	if (p && old_size)
		memcpy(p, old, old_size);
	return p;
}

/*
 * A grown bitmap.  Only the chunks that hold a set bit are copied, so the
 * pages calloc left untouched for free space stay untouched.
 */
static uint64_t *bitmap_grown(const uint64_t *old, uint64_t old_chunks,
			      uint64_t new_chunks)
{
	uint64_t *p = calloc(new_chunks, SMAP_WORDS * sizeof(*p));

	for (uint64_t k = 0; p && k < old_chunks; k++) {
		const uint64_t *src = old + k * SMAP_WORDS;

		if (!czfs_is_zero(src, CZFS_BLOCK_SIZE))
			memcpy(smap_chunk(p, k), src, CZFS_BLOCK_SIZE);
	}
	return p;
}

/* Size every array for max_blocks; on failure the map is unchanged. */
static int smap_resize(struct czfs_smap *sm, uint64_t max_blocks)
{
	uint64_t nb = DIV_ROUND_UP(max_blocks, SMAP_BITS), ob = sm->nr_bitmaps;
	unsigned ni = czfs_smap_index_count(max_blocks);
	void *cur, *com, *unp, *held, *fresh, *addr, *crc, *dirty, *index;

	if (ni > SMAP_MAX_INDEX)
		return -EFBIG;
	cur = bitmap_grown(sm->cur, ob, nb);
	com = bitmap_grown(sm->committed, ob, nb);
	unp = bitmap_grown(sm->unpunched, ob, nb);
	held = bitmap_grown(sm->held, ob, nb);
	fresh = bitmap_grown(sm->fresh, ob, nb);
	addr = copy_grown(sm->bitmap_addr, ob * 8, nb * 8);
	crc = copy_grown(sm->bitmap_crc, ob * 4, nb * 4);
	dirty = copy_grown(sm->bitmap_dirty, ob, nb);
	index = copy_grown(sm->index_addr, sm->nr_index * 8, ni * 8);
	if (!cur || !com || !unp || !held || !fresh || !addr || !crc || !dirty ||
	    !index) {
		free(cur), free(com), free(unp), free(held), free(fresh), free(addr);
		free(crc), free(dirty), free(index);
		return -ENOMEM;
	}
	free(sm->cur), free(sm->committed), free(sm->unpunched), free(sm->held);
	free(sm->fresh);
	free(sm->bitmap_addr), free(sm->bitmap_crc), free(sm->bitmap_dirty);
	free(sm->index_addr);
	sm->cur = cur, sm->committed = com, sm->unpunched = unp, sm->held = held;
	sm->fresh = fresh;
	sm->bitmap_addr = addr;
	sm->bitmap_crc = crc, sm->bitmap_dirty = dirty, sm->index_addr = index;
	sm->nr_bitmaps = nb;
	sm->nr_index = ni;
	sm->max_blocks = max_blocks;
	return 0;
}

/* An empty map of max_blocks, nothing marked. */
int smap_setup(struct czfs_smap *sm, uint64_t max_blocks)
{
	int err;

	memset(sm, 0, sizeof(*sm));
	if (max_blocks < CZFS_FIRST_DATA_BLKADDR + 1)
		return -EINVAL;
	pthread_mutex_init(&sm->lock, NULL);
	sm->alloc.alloc = smap_alloc_cb;
	sm->alloc.free = smap_free_cb;
	sm->cursor = CZFS_FIRST_DATA_BLKADDR;
	err = smap_resize(sm, max_blocks);
	if (err)
		czfs_smap_destroy(sm);
	return err;
}

int czfs_smap_init(struct czfs_smap *sm, uint64_t max_blocks)
{
	int err = smap_setup(sm, max_blocks);

	if (!err)
		mark_used(sm, 0, CZFS_FIRST_DATA_BLKADDR);
	return err;
}

void czfs_smap_destroy(struct czfs_smap *sm)
{
	free(sm->cur);
	free(sm->committed);
	free(sm->unpunched);
	free(sm->held);
	free(sm->fresh);
	free(sm->bitmap_addr);
	free(sm->bitmap_crc);
	free(sm->bitmap_dirty);
	free(sm->index_addr);
	free(sm->write_buf);
	pthread_mutex_destroy(&sm->lock);
	memset(sm, 0, sizeof(*sm));
}

int czfs_smap_grow(struct czfs_smap *sm, uint64_t max_blocks)
{
	int err = 0;

	pthread_mutex_lock(&sm->lock);
	if (max_blocks > sm->max_blocks)
		err = smap_resize(sm, max_blocks);
	pthread_mutex_unlock(&sm->lock);
	return err;
}

/* ---- public bit operations ------------------------------------------- */

int czfs_smap_alloc(struct czfs_smap *sm, uint64_t n, uint64_t *blkaddr)
{
	int err;

	pthread_mutex_lock(&sm->lock);
	err = smap_alloc_locked(sm, n, blkaddr);
	pthread_mutex_unlock(&sm->lock);
	return err;
}

void czfs_smap_free(struct czfs_smap *sm, uint64_t blkaddr, uint64_t n)
{
	pthread_mutex_lock(&sm->lock);
	smap_free_locked(sm, blkaddr, n);
	pthread_mutex_unlock(&sm->lock);
}

int czfs_smap_set_used(struct czfs_smap *sm, uint64_t blkaddr, uint64_t n)
{
	int err = 0;

	pthread_mutex_lock(&sm->lock);
	if (!n || blkaddr >= sm->max_blocks || n > sm->max_blocks - blkaddr)
		err = -EINVAL;
	else if (smap_bits_count(sm->cur, blkaddr, blkaddr + n))
		err = -EEXIST;
	else
		mark_used(sm, blkaddr, n);
	pthread_mutex_unlock(&sm->lock);
	return err;
}

uint64_t czfs_smap_freed_pending(struct czfs_smap *sm)
{
	return count_of(sm, &sm->freed_pending);
}

bool czfs_smap_test(struct czfs_smap *sm, uint64_t blkaddr)
{
	bool used;

	pthread_mutex_lock(&sm->lock);
	used = blkaddr < sm->max_blocks &&
	       (sm->cur[blkaddr / 64] >> (blkaddr % 64) & 1);
	pthread_mutex_unlock(&sm->lock);
	return used;
}

void czfs_smap_committed(struct czfs_smap *sm)
{
	pthread_mutex_lock(&sm->lock);
	for (uint64_t k = 0; k < sm->nr_bitmaps; k++) {
		if (!(sm->bitmap_dirty[k] & (BM_DIRTY | BM_PENDING)))
			continue;
		memcpy(smap_chunk(sm->committed, k), smap_chunk(sm->cur, k),
		       CZFS_BLOCK_SIZE);
		memset(smap_chunk(sm->fresh, k), 0, CZFS_BLOCK_SIZE);
		sm->bitmap_dirty[k] &= ~BM_PENDING;
	}
	if (sm->low_freed && sm->low_freed < sm->cursor)
		sm->cursor = sm->low_freed;
	sm->low_freed = 0;
	sm->freed_pending = 0;
	pthread_mutex_unlock(&sm->lock);
}

int czfs_smap_fresh(struct czfs_smap *sm, uint64_t *ext, unsigned max,
		    uint64_t max_blocks)
{
	uint64_t start = 0, len = 0, total = 0;
	unsigned n = 0;
	int err = 0;

	pthread_mutex_lock(&sm->lock);
	for (uint64_t k = 0; !err && k < sm->nr_bitmaps; k++) {
		const uint64_t *cur = smap_chunk(sm->cur, k);
		const uint64_t *fresh = smap_chunk(sm->fresh, k);

		if (!(sm->bitmap_dirty[k] & (BM_DIRTY | BM_PENDING)))
			continue;
		for (unsigned i = 0; !err && i < SMAP_WORDS; i++) {
			uint64_t w = cur[i] & fresh[i];

			while (w) {
				uint64_t b = k * SMAP_BITS + i * 64 +
					     (uint64_t)__builtin_ctzll(w);

				w &= w - 1;
				if (b < CZFS_FIRST_DATA_BLKADDR)
					continue;	/* a fresh map's own */
				if (++total > max_blocks) {
					err = -E2BIG;
					break;
				}
				if (len && b == start + len &&
				    len < CZFS_CP_EXTENT_MAX) {
					len++;
					continue;
				}
				if (len && n == max) {
					err = -E2BIG;
					break;
				}
				if (len)
					ext[n++] = CZFS_CP_EXTENT(start, len);
				start = b;
				len = 1;
			}
		}
	}
	if (!err && len) {
		if (n == max)
			err = -E2BIG;
		else
			ext[n++] = CZFS_CP_EXTENT(start, len);
	}
	pthread_mutex_unlock(&sm->lock);
	return err ? err : (int)n;
}

void czfs_smap_note_freed(struct czfs_smap *sm)
{
	pthread_mutex_lock(&sm->lock);
	for (uint64_t k = 0; k < sm->nr_bitmaps; k++) {
		const uint64_t *cur = smap_chunk(sm->cur, k);
		const uint64_t *com = smap_chunk(sm->committed, k);
		uint64_t *unp = smap_chunk(sm->unpunched, k), any = 0;

		if (!(sm->bitmap_dirty[k] & (BM_DIRTY | BM_PENDING)))
			continue;
		for (unsigned i = 0; i < SMAP_WORDS; i++) {
			uint64_t add = com[i] & ~cur[i] & ~unp[i];

			if (add) {	/* (a popcount is a call without -mpopcnt) */
				sm->unpunched_blocks += (uint64_t)__builtin_popcountll(add);
				unp[i] |= add;
			}
			any |= unp[i];
		}
		if (any)
			sm->bitmap_dirty[k] |= BM_UNPUNCHED;
	}
	pthread_mutex_unlock(&sm->lock);
}

uint64_t czfs_smap_unpunched(struct czfs_smap *sm)
{
	return count_of(sm, &sm->unpunched_blocks);
}

/* The bit at or after pos (bit value want) in a chunk's words, or
 * SMAP_BITS. */
static uint64_t next_bit(const uint64_t *c, uint64_t pos, bool want)
{
	while (pos < SMAP_BITS) {
		uint64_t w = (want ? c[pos / 64] : ~c[pos / 64]) & (~0ull << (pos % 64));

		if (w)
			return pos / 64 * 64 + (uint64_t)__builtin_ctzll(w);
		pos = (pos / 64 + 1) * 64;
	}
	return SMAP_BITS;
}

/* Keep in c (a chunk's words) only its runs of min_run set bits or more. */
static void keep_long_runs(uint64_t *c, unsigned min_run)
{
	uint64_t pos = 0;

	while (min_run > 1 && (pos = next_bit(c, pos, true)) < SMAP_BITS) {
		uint64_t end = next_bit(c, pos, false);

		if (end - pos < min_run)
			bits_assign(c, pos, end, false);
		pos = end;
	}
}

bool smap_take_unpunched(struct czfs_smap *sm, uint64_t k, uint64_t *words,
			 unsigned min_run)
{
	uint64_t any = 0, left = 0;

	pthread_mutex_lock(&sm->lock);
	if (k < sm->nr_bitmaps &&
	    (sm->bitmap_dirty[k] & (BM_UNPUNCHED | BM_HELD))) {
		const uint64_t *cur = smap_chunk(sm->cur, k);
		const uint64_t *com = smap_chunk(sm->committed, k);
		uint64_t *unp = smap_chunk(sm->unpunched, k);
		uint64_t *held = smap_chunk(sm->held, k);

		/* (one noted by a commit not yet done stays) */
		for (unsigned i = 0; i < SMAP_WORDS; i++)
			words[i] = unp[i] & ~cur[i] & ~com[i];
		keep_long_runs(words, min_run);
		for (unsigned i = 0; i < SMAP_WORDS; i++) {
			uint64_t take = words[i];

			if (take) {
				uint64_t n = (uint64_t)__builtin_popcountll(take);

				sm->unpunched_blocks -= n;
				sm->held_blocks += n;
				unp[i] &= ~take;
				held[i] |= take;
			}
			words[i] = held[i];
			any |= held[i];
			left |= unp[i];
		}
		if (!left)
			sm->bitmap_dirty[k] &= ~BM_UNPUNCHED;
		if (any)
			sm->bitmap_dirty[k] |= BM_HELD;
	}
	pthread_mutex_unlock(&sm->lock);
	return any != 0;
}

uint64_t czfs_smap_held(struct czfs_smap *sm)
{
	return count_of(sm, &sm->held_blocks);
}

void smap_release_held(struct czfs_smap *sm, uint64_t k, const uint64_t *words)
{
	uint64_t *held, any = 0;

	pthread_mutex_lock(&sm->lock);
	held = smap_chunk(sm->held, k);
	for (unsigned i = 0; i < SMAP_WORDS; i++) {
		uint64_t first = k * SMAP_BITS + i * 64 +
				 (uint64_t)__builtin_ctzll(words[i] | 1ull << 63);

		/* lowest first, as czfs_smap_committed does for freed ones */
		if (words[i] && first < sm->cursor)
			sm->cursor = first;
		sm->held_blocks -= (uint64_t)__builtin_popcountll(held[i] & words[i]);
		held[i] &= ~words[i];
		any |= held[i];
	}
	if (!any)
		sm->bitmap_dirty[k] &= ~BM_HELD;
	pthread_mutex_unlock(&sm->lock);
}

void czfs_smap_usage(struct czfs_smap *sm, uint64_t *max_blocks, uint64_t *used)
{
	pthread_mutex_lock(&sm->lock);
	*max_blocks = sm->max_blocks;
	*used = sm->used + sm->prealloc;
	pthread_mutex_unlock(&sm->lock);
}

void czfs_smap_prealloc_add(struct czfs_smap *sm, int64_t n)
{
	pthread_mutex_lock(&sm->lock);
	if (n < 0 && (uint64_t)-n > sm->prealloc)
		sm->prealloc = 0;
	else
		sm->prealloc += (uint64_t)n;
	pthread_mutex_unlock(&sm->lock);
}

uint64_t czfs_smap_disk_blocks(struct czfs_smap *sm)
{
	uint64_t n = 0;

	pthread_mutex_lock(&sm->lock);
	for (uint64_t j = 0; j < sm->nr_index; j++)
		n += !!sm->index_addr[j];
	for (uint64_t k = 0; k < sm->nr_bitmaps; k++)
		n += !!sm->bitmap_addr[k];
	pthread_mutex_unlock(&sm->lock);
	return n;
}
