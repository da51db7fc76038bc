// SPDX-License-Identifier: MIT
/*
 * One B-tree node: validation of a block read from disk, field accessors,
 * and the in-memory edits the copy-on-write code builds nodes with.
 *
 * Every multi-byte field is read with memcpy: a node buffer handed to
 * czfs_node_check may sit at any address, and item headers are packed.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "btree_int.h"
#include "crc32c.h"
#include "log.h"
#include "util.h"

static_assert(offsetof(struct czfs_node_header, checksum) == 0,
	      "node checksum comes first");

#define HDR_FIELD(blk, f) \
	((const uint8_t *)(blk) + offsetof(struct czfs_node_header, f))

static uint8_t *item_pos(const void *blk, unsigned slot)
{
	return (uint8_t *)blk + CZFS_NODE_HDR_SIZE + slot * CZFS_ITEM_HDR_SIZE;
}

static uint8_t *ptr_pos(const void *blk, unsigned slot)
{
	return (uint8_t *)blk + CZFS_NODE_HDR_SIZE + slot * CZFS_PTR_SIZE;
}

void czfs_key_to_disk(const struct czfs_key *k, struct czfs_disk_key *dk)
{
	uint64_t to = (uint64_t)k->type << CZFS_KEY_OFFSET_BITS |
		      (k->offset & CZFS_KEY_OFFSET_MASK);

	dk->objectid = cpu_to_le64(k->objectid);
	dk->type_offset = cpu_to_le64(to);
}

void czfs_key_from_disk(const struct czfs_disk_key *dk, struct czfs_key *k)
{
	uint64_t to = le64_to_cpu(dk->type_offset);

	k->objectid = le64_to_cpu(dk->objectid);
	k->type = (uint8_t)(to >> CZFS_KEY_OFFSET_BITS);
	k->offset = to & CZFS_KEY_OFFSET_MASK;
}

/* ---- accessors ---------------------------------------------------------- */

unsigned czfs_node_nritems(const void *blk)
{
	__le16 v;

	memcpy(&v, HDR_FIELD(blk, nritems), sizeof(v));
	return le16_to_cpu(v);
}

static void set_nritems(void *blk, unsigned n)
{
	__le16 v = cpu_to_le16((uint16_t)n);

	memcpy((uint8_t *)blk + offsetof(struct czfs_node_header, nritems),
	       &v, sizeof(v));
}

unsigned czfs_node_level(const void *blk)
{
	return *HDR_FIELD(blk, level);
}

uint64_t czfs_node_generation(const void *blk)
{
	__le64 v;

	memcpy(&v, HDR_FIELD(blk, generation), sizeof(v));
	return le64_to_cpu(v);
}

static void get_item(const void *blk, unsigned slot, struct czfs_item *it)
{
	memcpy(it, item_pos(blk, slot), sizeof(*it));
}

static void put_item(void *blk, unsigned slot, const struct czfs_item *it)
{
	memcpy(item_pos(blk, slot), it, sizeof(*it));
}

static unsigned item_offset(const void *blk, unsigned slot)
{
	struct czfs_item it;

	get_item(blk, slot, &it);
	return le16_to_cpu(it.offset);
}

static void set_item_offset(void *blk, unsigned slot, unsigned off)
{
	struct czfs_item it;

	get_item(blk, slot, &it);
	it.offset = cpu_to_le16((uint16_t)off);
	put_item(blk, slot, &it);
}

void czfs_node_key(const void *blk, unsigned slot, struct czfs_key *key)
{
	struct czfs_disk_key dk;

	if (czfs_node_level(blk))
		memcpy(&dk, ptr_pos(blk, slot), sizeof(dk));
	else
		memcpy(&dk, item_pos(blk, slot), sizeof(dk));
	czfs_key_from_disk(&dk, key);
}

const void *czfs_leaf_data(const void *blk, unsigned slot, unsigned *size)
{
	struct czfs_item it;

	get_item(blk, slot, &it);
	*size = le16_to_cpu(it.size);
	return (const uint8_t *)blk + le16_to_cpu(it.offset);
}

void czfs_node_child(const void *blk, unsigned slot, uint64_t *blkaddr,
		     uint64_t *generation)
{
	struct czfs_node_ptr p;

	memcpy(&p, ptr_pos(blk, slot), sizeof(p));
	*blkaddr = le64_to_cpu(p.blkaddr);
	*generation = le64_to_cpu(p.generation);
}

/* Where the packed item data begins (the block end for an empty leaf). */
static unsigned data_start(const void *blk, unsigned n)
{
	return n ? item_offset(blk, n - 1) : CZFS_BLOCK_SIZE;
}

unsigned czfs_leaf_used(const void *blk)
{
	unsigned n = czfs_node_nritems(blk);

	return n * CZFS_ITEM_HDR_SIZE + CZFS_BLOCK_SIZE - data_start(blk, n);
}

unsigned czfs_leaf_free_space(const void *blk)
{
	return CZFS_LEAF_SPACE - czfs_leaf_used(blk);
}

unsigned czfs_leaf_lower_bound(const void *blk, const struct czfs_key *key,
			       bool *exact)
{
	unsigned lo = 0, hi = czfs_node_nritems(blk);
	struct czfs_key k;

	*exact = false;
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		int c;

		czfs_node_key(blk, mid, &k);
		c = czfs_key_cmp(&k, key);
		if (c == 0) {
			*exact = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

unsigned czfs_node_child_slot(const void *blk, const struct czfs_key *key)
{
	unsigned lo = 0, hi = czfs_node_nritems(blk);
	struct czfs_key k;

	/* Find the first pointer key > key; the child is the one before. */
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		czfs_node_key(blk, mid, &k);
		if (czfs_key_cmp(&k, key) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : 0;
}

/* ---- validation --------------------------------------------------------- */

static int __attribute__((format(printf, 2, 3)))
node_bad(uint64_t blkaddr, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	czfs_err("node %llu: %s", (unsigned long long)blkaddr, msg);
	return -EFSCORRUPTED;
}

static uint32_t node_crc(const void *blk)
{
	static const uint8_t zero[4];
	uint32_t crc = czfs_crc32c(0, zero, sizeof(zero));

	return czfs_crc32c(crc, (const uint8_t *)blk + 4, CZFS_BLOCK_SIZE - 4);
}

bool czfs_node_is_sealed_at(const void *blk, uint64_t blkaddr)
{
	struct czfs_node_header h;

	memcpy(&h, blk, sizeof(h));
	return le32_to_cpu(h.magic) == CZFS_NODE_MAGIC &&
	       le64_to_cpu(h.blkaddr) == blkaddr &&
	       le32_to_cpu(h.checksum) == node_crc(blk);
}

void czfs_node_seal(void *blk)
{
	__le32 crc = cpu_to_le32(node_crc(blk));

	memcpy(blk, &crc, sizeof(crc));
}

static int check_header(const void *blk, uint64_t blkaddr, uint64_t want_gen,
			int want_level)
{
	struct czfs_node_header h;
	uint32_t crc = node_crc(blk);
	unsigned n, max;

	memcpy(&h, blk, sizeof(h));
	if (le32_to_cpu(h.checksum) != crc)
		return node_bad(blkaddr, "bad checksum %08x, computed %08x",
				le32_to_cpu(h.checksum), crc);
	if (le32_to_cpu(h.magic) != CZFS_NODE_MAGIC)
		return node_bad(blkaddr, "bad magic %08x",
				le32_to_cpu(h.magic));
	if (le64_to_cpu(h.blkaddr) != blkaddr)
		return node_bad(blkaddr, "header says blkaddr %llu",
				(unsigned long long)le64_to_cpu(h.blkaddr));
	if (le64_to_cpu(h.owner) != CZFS_TREE_FS)
		return node_bad(blkaddr, "owner %llu, expected %d",
				(unsigned long long)le64_to_cpu(h.owner),
				CZFS_TREE_FS);
	if (h.flags)
		return node_bad(blkaddr, "unknown flags %#x", h.flags);
	if (h.level >= CZFS_MAX_LEVEL)
		return node_bad(blkaddr, "level %u too big (max %d)",
				h.level, CZFS_MAX_LEVEL - 1);
	if (want_level >= 0 && h.level != (unsigned)want_level)
		return node_bad(blkaddr, "level %u, expected %d",
				h.level, want_level);
	if (want_gen && le64_to_cpu(h.generation) != want_gen)
		return node_bad(blkaddr, "generation %llu, expected %llu",
				(unsigned long long)le64_to_cpu(h.generation),
				(unsigned long long)want_gen);
	n = le16_to_cpu(h.nritems);
	max = h.level ? CZFS_NODE_MAX_PTRS : CZFS_LEAF_MAX_ITEMS;
	if (n > max)
		return node_bad(blkaddr, "nritems %u too big (max %u)", n, max);
	if (h.level && !n)
		return node_bad(blkaddr, "internal node with no pointers");
	return 0;
}

static int check_key_order(uint64_t blkaddr, unsigned i,
			   const struct czfs_key *prev,
			   const struct czfs_key *key)
{
	if (i && czfs_key_cmp(prev, key) >= 0)
		return node_bad(blkaddr, "key %u not greater than key %u",
				i, i - 1);
	return 0;
}

/* Item i's data must end exactly where item i-1's begins (the block end
 * for item 0) and start after the last item header. */
static int check_leaf(const void *blk, uint64_t blkaddr)
{
	unsigned n = czfs_node_nritems(blk);
	unsigned hdr_end = CZFS_NODE_HDR_SIZE + n * CZFS_ITEM_HDR_SIZE;
	unsigned end = CZFS_BLOCK_SIZE;
	struct czfs_key prev = { 0 }, key;
	struct czfs_item it;
	int err;

	for (unsigned i = 0; i < n; i++) {
		unsigned off, size;

		get_item(blk, i, &it);
		off = le16_to_cpu(it.offset);
		size = le16_to_cpu(it.size);
		if (off + size > CZFS_BLOCK_SIZE)
			return node_bad(blkaddr, "item %u data [%u, %u) beyond the block end",
					i, off, off + size);
		if (off + size != end)
			return node_bad(blkaddr, "item %u data ends at %u, not packed (expected %u)",
					i, off + size, end);
		if (off < hdr_end)
			return node_bad(blkaddr, "item %u data at %u overlaps the item headers (end %u)",
					i, off, hdr_end);
		czfs_node_key(blk, i, &key);
		err = check_key_order(blkaddr, i, &prev, &key);
		if (err)
			return err;
		prev = key;
		end = off;
	}
	return 0;
}

static int check_internal(const void *blk, uint64_t blkaddr,
			  uint64_t max_blocks)
{
	unsigned n = czfs_node_nritems(blk);
	uint64_t gen = czfs_node_generation(blk);
	struct czfs_key prev = { 0 }, key;
	struct czfs_node_ptr p;
	int err;

	for (unsigned i = 0; i < n; i++) {
		uint64_t child, cgen;

		memcpy(&p, ptr_pos(blk, i), sizeof(p));
		child = le64_to_cpu(p.blkaddr);
		cgen = le64_to_cpu(p.generation);
		if (czfs_leafpack_is(child) && czfs_node_level(blk) != 1)
			return node_bad(blkaddr, "child %u: a leaf pack pointer above level 1",
					i);
		if (!czfs_node_ptr_in(child, CZFS_FIRST_DATA_BLKADDR, max_blocks))
			return node_bad(blkaddr, "child %u blkaddr %llu outside [%u, %llu)",
					i, (unsigned long long)child,
					CZFS_FIRST_DATA_BLKADDR,
					(unsigned long long)max_blocks);
		if (cgen > gen)
			return node_bad(blkaddr, "child %u generation %llu newer than the node's %llu",
					i, (unsigned long long)cgen,
					(unsigned long long)gen);
		czfs_key_from_disk(&p.key, &key);
		err = check_key_order(blkaddr, i, &prev, &key);
		if (err)
			return err;
		prev = key;
	}
	return 0;
}

int czfs_node_check(const void *blk, uint64_t blkaddr, uint64_t want_gen,
		    int want_level, uint64_t max_blocks)
{
	int err = check_header(blk, blkaddr, want_gen, want_level);

	if (err)
		return err;
	if (czfs_node_level(blk) == 0)
		return check_leaf(blk, blkaddr);
	return check_internal(blk, blkaddr, max_blocks);
}

/* ---- building and editing ----------------------------------------------- */

void czfs_node_init(void *blk, uint64_t blkaddr, uint64_t gen, unsigned level)
{
	struct czfs_node_header h = {
		.magic = cpu_to_le32(CZFS_NODE_MAGIC),
		.blkaddr = cpu_to_le64(blkaddr),
		.generation = cpu_to_le64(gen),
		.owner = cpu_to_le64(CZFS_TREE_FS),
		.level = (uint8_t)level,
	};

	memset(blk, 0, CZFS_BLOCK_SIZE);
	memcpy(blk, &h, sizeof(h));
}

void czfs_node_set_addr(void *blk, uint64_t blkaddr, uint64_t gen)
{
	struct czfs_node_header h;

	memcpy(&h, blk, sizeof(h));
	h.blkaddr = cpu_to_le64(blkaddr);
	h.generation = cpu_to_le64(gen);
	memcpy(blk, &h, sizeof(h));
}

void czfs_leaf_insert(void *blk, unsigned slot, const struct czfs_key *key,
		      const void *data, unsigned size)
{
	uint8_t *b = blk;
	unsigned n = czfs_node_nritems(b), start = data_start(b, n);
	unsigned end = slot ? item_offset(b, slot - 1) : CZFS_BLOCK_SIZE;
	struct czfs_disk_key dk;
	struct czfs_item it;

	/* Data of the items after slot moves down, their headers right. */
	memmove(b + start - size, b + start, end - start);
	memmove(item_pos(b, slot + 1), item_pos(b, slot),
		(n - slot) * CZFS_ITEM_HDR_SIZE);
	for (unsigned i = slot + 1; i <= n; i++)
		set_item_offset(b, i, item_offset(b, i) - size);
	czfs_key_to_disk(key, &dk);
	memcpy(&it.key, &dk, sizeof(dk));
	it.offset = cpu_to_le16((uint16_t)(end - size));
	it.size = cpu_to_le16((uint16_t)size);
	put_item(b, slot, &it);
	if (size)
		memcpy(b + end - size, data, size);
	set_nritems(b, n + 1);
}

void czfs_leaf_remove(void *blk, unsigned slot)
{
	uint8_t *b = blk;
	unsigned n = czfs_node_nritems(b), start = data_start(b, n);
	struct czfs_item it;
	unsigned off, size;

	get_item(b, slot, &it);
	off = le16_to_cpu(it.offset);
	size = le16_to_cpu(it.size);
	memmove(b + start + size, b + start, off - start);
	memset(b + start, 0, size);
	for (unsigned i = slot + 1; i < n; i++)
		set_item_offset(b, i, item_offset(b, i) + size);
	memmove(item_pos(b, slot), item_pos(b, slot + 1),
		(n - slot - 1) * CZFS_ITEM_HDR_SIZE);
	memset(item_pos(b, n - 1), 0, CZFS_ITEM_HDR_SIZE);
	set_nritems(b, n - 1);
}

void *czfs_leaf_resize(void *blk, unsigned slot, unsigned size)
{
	uint8_t *b = blk;
	unsigned n = czfs_node_nritems(b), start = data_start(b, n);
	struct czfs_item it;
	unsigned off, end;
	int delta;

	get_item(b, slot, &it);
	off = le16_to_cpu(it.offset);
	end = off + le16_to_cpu(it.size);
	delta = (int)le16_to_cpu(it.size) - (int)size;
	/* The data of later items (below this one) shifts by delta. */
	memmove(b + start + delta, b + start, off - start);
	if (delta > 0)
		memset(b + start, 0, delta);
	for (unsigned i = slot + 1; i < n; i++)
		set_item_offset(b, i, item_offset(b, i) + delta);
	it.offset = cpu_to_le16((uint16_t)(end - size));
	it.size = cpu_to_le16((uint16_t)size);
	put_item(b, slot, &it);
	return b + end - size;
}

void czfs_node_append(void *dst, const void *src)
{
	unsigned n = czfs_node_nritems(src), at = czfs_node_nritems(dst);
	struct czfs_key key;
	const void *data;
	unsigned size;

	if (czfs_node_level(src)) {
		memcpy(ptr_pos(dst, at), ptr_pos(src, 0), n * CZFS_PTR_SIZE);
		set_nritems(dst, at + n);
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		czfs_node_key(src, i, &key);
		data = czfs_leaf_data(src, i, &size);
		czfs_leaf_insert(dst, at + i, &key, data, size);
	}
}

void czfs_node_make_ptr(struct czfs_node_ptr *p, const struct czfs_key *key,
			uint64_t blkaddr, uint64_t gen)
{
	czfs_key_to_disk(key, &p->key);
	p->blkaddr = cpu_to_le64(blkaddr);
	p->generation = cpu_to_le64(gen);
}

void czfs_node_read_ptrs(const void *blk, unsigned slot, unsigned n,
			 struct czfs_node_ptr *p)
{
	memcpy(p, ptr_pos(blk, slot), n * CZFS_PTR_SIZE);
}

void czfs_node_insert_ptrs(void *blk, unsigned slot,
			   const struct czfs_node_ptr *p, unsigned n)
{
	unsigned nr = czfs_node_nritems(blk);

	memmove(ptr_pos(blk, slot + n), ptr_pos(blk, slot),
		(nr - slot) * CZFS_PTR_SIZE);
	memcpy(ptr_pos(blk, slot), p, n * CZFS_PTR_SIZE);
	set_nritems(blk, nr + n);
}

void czfs_node_remove_ptr(void *blk, unsigned slot)
{
	unsigned nr = czfs_node_nritems(blk);

	memmove(ptr_pos(blk, slot), ptr_pos(blk, slot + 1),
		(nr - slot - 1) * CZFS_PTR_SIZE);
	memset(ptr_pos(blk, nr - 1), 0, CZFS_PTR_SIZE);
	set_nritems(blk, nr - 1);
}

void czfs_node_set_child(void *blk, unsigned slot, uint64_t blkaddr,
			 uint64_t gen)
{
	struct czfs_node_ptr p;

	memcpy(&p, ptr_pos(blk, slot), sizeof(p));
	p.blkaddr = cpu_to_le64(blkaddr);
	p.generation = cpu_to_le64(gen);
	memcpy(ptr_pos(blk, slot), &p, sizeof(p));
}

void czfs_node_set_ptr_key(void *blk, unsigned slot,
			   const struct czfs_key *key)
{
	struct czfs_disk_key dk;

	czfs_key_to_disk(key, &dk);
	memcpy(ptr_pos(blk, slot), &dk, sizeof(dk));
}
