// SPDX-License-Identifier: MIT
/*
 * Unit tests: B-tree node format.  Byte-exact layout of leaves and internal
 * nodes, key packing, every validation check (table-driven corruption),
 * in-memory edits against a model, and random damage never crashing.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "btree_int.h"
#include "crc32c.h"
#include "log.h"
#include "util.h"

#define ADDR		1234ull
#define GEN		77ull
#define MAXB		100000ull

static char last_msg[512];

static void capture(enum czfs_log_level level, const char *msg)
{
	snprintf(last_msg, sizeof(last_msg), "%s", msg);
}

static void setup(void)
{
	last_msg[0] = 0;
	czfs_log_set_sink(capture, CZFS_LOG_DEBUG);
}

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64*: deterministic, good enough for test data */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static void put16(uint8_t *b, unsigned off, uint16_t v)
{
	v = cpu_to_le16(v);
	memcpy(b + off, &v, 2);
}

static void put64(uint8_t *b, unsigned off, uint64_t v)
{
	v = cpu_to_le64(v);
	memcpy(b + off, &v, 8);
}

static uint16_t get16(const uint8_t *b, unsigned off)
{
	uint16_t v;

	memcpy(&v, b + off, 2);
	return le16_to_cpu(v);
}

static uint64_t get64(const uint8_t *b, unsigned off)
{
	uint64_t v;

	memcpy(&v, b + off, 8);
	return le64_to_cpu(v);
}

static struct czfs_key K(uint64_t obj, uint8_t type, uint64_t off)
{
	return (struct czfs_key){ obj, type, off };
}

/* A valid leaf at ADDR/GEN: 3 items of sizes 10, 0, 300. */
static void make_leaf(uint8_t *b)
{
	static const unsigned sizes[3] = { 10, 0, 300 };
	uint8_t data[300];

	czfs_node_init(b, ADDR, GEN, 0);
	for (unsigned i = 0; i < 3; i++) {
		struct czfs_key k = K(5, CZFS_ITEM_DENTRY, 100 + i);

		memset(data, 'a' + i, sizeof(data));
		czfs_leaf_insert(b, i, &k, data, sizes[i]);
	}
	czfs_node_seal(b);
}

/* A valid internal node at ADDR/GEN, level 1, with 3 children. */
static void make_internal(uint8_t *b)
{
	struct czfs_node_ptr p[3];

	czfs_node_init(b, ADDR, GEN, 1);
	for (unsigned i = 0; i < 3; i++) {
		struct czfs_key k = K(10 * i, CZFS_ITEM_INODE, 0);

		czfs_node_make_ptr(&p[i], &k, 500 + i, GEN - i);
	}
	czfs_node_insert_ptrs(b, 0, p, 3);
	czfs_node_seal(b);
}

START_TEST(key_packing)
{
	struct czfs_key k = K(0x0102030405060708ull, 3, 0x00aabbccddeeffull), r;
	struct czfs_disk_key dk;
	const uint8_t *raw = (const uint8_t *)&dk;

	/* when packed, then objectid then type << 56 | offset, little-endian */
	czfs_key_to_disk(&k, &dk);
	ck_assert_uint_eq(raw[0], 0x08);
	ck_assert_uint_eq(raw[7], 0x01);
	ck_assert_uint_eq(raw[8], 0xff);
	ck_assert_uint_eq(raw[13], 0xaa);
	ck_assert_uint_eq(raw[14], 0x00);
	ck_assert_uint_eq(raw[15], 0x03);
	czfs_key_from_disk(&dk, &r);
	ck_assert_int_eq(czfs_key_cmp(&k, &r), 0);

	/* extremes survive the round trip */
	k = K(UINT64_MAX, 255, CZFS_KEY_OFFSET_MASK);
	czfs_key_to_disk(&k, &dk);
	ck_assert_uint_eq(get64(raw, 0), UINT64_MAX);
	ck_assert_uint_eq(get64(raw, 8), UINT64_MAX);
	czfs_key_from_disk(&dk, &r);
	ck_assert_int_eq(czfs_key_cmp(&k, &r), 0);
}
END_TEST

START_TEST(key_order_matches_disk_order)
{
	rng_state = 42;
	for (unsigned i = 0; i < 10000; i++) {
		struct czfs_key a = K(rnd() % 4, rnd() % 4, rnd() % 4);
		struct czfs_key b = K(rnd() % 4, rnd() % 4, rnd() % 4);
		struct czfs_disk_key da, db;
		uint64_t ao, at, bo, bt;
		int want;

		if (i & 1) {
			a.offset = rnd() & CZFS_KEY_OFFSET_MASK;
			b.objectid = a.objectid;
		}
		czfs_key_to_disk(&a, &da);
		czfs_key_to_disk(&b, &db);
		ao = le64_to_cpu(da.objectid);
		at = le64_to_cpu(da.type_offset);
		bo = le64_to_cpu(db.objectid);
		bt = le64_to_cpu(db.type_offset);
		want = ao != bo ? (ao < bo ? -1 : 1) :
		       at != bt ? (at < bt ? -1 : 1) : 0;
		ck_assert_int_eq(czfs_key_cmp(&a, &b), want);
	}
}
END_TEST

START_TEST(leaf_layout_by_hand)
{
	uint8_t *b = calloc(1, CZFS_BLOCK_SIZE);
	struct czfs_key k;
	const uint8_t *d;
	unsigned size;
	uint32_t crc;

	/* given a leaf written byte by byte as czfs_fs.h describes */
	memcpy(b + 4, &(uint32_t){ cpu_to_le32(CZFS_NODE_MAGIC) }, 4);
	put64(b, 8, ADDR);
	put64(b, 16, GEN);
	put64(b, 24, CZFS_TREE_FS);
	put16(b, 32, 2);			/* nritems */
	b[34] = 0;				/* level */
	/* item 0: key (7, INODE, 0), 144 bytes at the block end */
	put64(b, 48, 7);
	put64(b, 56, (uint64_t)CZFS_ITEM_INODE << 56);
	put16(b, 64, 4096 - 144);
	put16(b, 66, 144);
	memset(b + 4096 - 144, 0x11, 144);
	/* item 1: key (7, XATTR, 9), 5 bytes right below item 0's data */
	put64(b, 68, 7);
	put64(b, 76, (uint64_t)CZFS_ITEM_XATTR << 56 | 9);
	put16(b, 84, 4096 - 149);
	put16(b, 86, 5);
	memcpy(b + 4096 - 149, "hello", 5);
	crc = czfs_crc32c(0, b, CZFS_BLOCK_SIZE);	/* checksum field is 0 */
	memcpy(b, &(uint32_t){ cpu_to_le32(crc) }, 4);

	/* then it validates and the accessors read it back */
	ck_assert_int_eq(czfs_node_check(b, ADDR, GEN, 0, MAXB), 0);
	ck_assert_uint_eq(czfs_node_nritems(b), 2);
	ck_assert_uint_eq(czfs_node_level(b), 0);
	ck_assert_uint_eq(czfs_node_generation(b), GEN);
	czfs_node_key(b, 1, &k);
	ck_assert_uint_eq(k.objectid, 7);
	ck_assert_uint_eq(k.type, CZFS_ITEM_XATTR);
	ck_assert_uint_eq(k.offset, 9);
	d = czfs_leaf_data(b, 0, &size);
	ck_assert_ptr_eq(d, b + 4096 - 144);
	ck_assert_uint_eq(size, 144);
	d = czfs_leaf_data(b, 1, &size);
	ck_assert_ptr_eq(d, b + 4096 - 149);
	ck_assert_mem_eq(d, "hello", 5);
	ck_assert_uint_eq(czfs_leaf_free_space(b), 4048 - 40 - 149);

	/* and czfs_node_seal stores the same checksum */
	memset(b, 0, 4);
	czfs_node_seal(b);
	ck_assert_uint_eq(le32_to_cpu(*(uint32_t *)b), crc);
	free(b);
}
END_TEST

START_TEST(leaf_built_by_helpers_is_packed)
{
	uint8_t *b = aligned_alloc(CZFS_BLOCK_SIZE, CZFS_BLOCK_SIZE);

	/* when the helpers build a leaf, then the bytes sit where the format says */
	make_leaf(b);
	ck_assert_uint_eq(get64(b, 8), ADDR);
	ck_assert_uint_eq(get16(b, 32), 3);
	ck_assert_uint_eq(get64(b, 48), 5);			/* item 0 key */
	ck_assert_uint_eq(get16(b, 64), 4096 - 10);		/* item 0 offset */
	ck_assert_uint_eq(get16(b, 66), 10);
	ck_assert_uint_eq(get16(b, 84), 4096 - 10);		/* item 1, empty */
	ck_assert_uint_eq(get16(b, 86), 0);
	ck_assert_uint_eq(get16(b, 104), 4096 - 310);		/* item 2 */
	ck_assert_uint_eq(b[4096 - 310], 'c');
	ck_assert(czfs_is_zero(b + 108, 4096 - 310 - 108));	/* free space */
	ck_assert_int_eq(czfs_node_check(b, ADDR, GEN, 0, MAXB), 0);
	free(b);
}
END_TEST

START_TEST(internal_layout_by_hand)
{
	uint8_t *b = aligned_alloc(CZFS_BLOCK_SIZE, CZFS_BLOCK_SIZE);
	uint64_t addr, gen;
	struct czfs_key k;

	/* given an internal node built by the helpers */
	make_internal(b);
	/* then pointer i sits at 48 + 32 i: key, blkaddr, generation */
	ck_assert_uint_eq(b[34], 1);
	ck_assert_uint_eq(get64(b, 48 + 32), 10);
	ck_assert_uint_eq(get64(b, 48 + 32 + 8), (uint64_t)CZFS_ITEM_INODE << 56);
	ck_assert_uint_eq(get64(b, 48 + 32 + 16), 501);
	ck_assert_uint_eq(get64(b, 48 + 32 + 24), GEN - 1);
	czfs_node_child(b, 2, &addr, &gen);
	ck_assert_uint_eq(addr, 502);
	ck_assert_uint_eq(gen, GEN - 2);
	czfs_node_key(b, 2, &k);
	ck_assert_uint_eq(k.objectid, 20);
	ck_assert_int_eq(czfs_node_check(b, ADDR, GEN, 1, MAXB), 0);
	ck_assert_int_eq(czfs_node_check(b, ADDR, 0, -1, MAXB), 0);
	free(b);
}
END_TEST

/* ---- corruption table ---------------------------------------------------- */

struct bad_case {
	const char *name;
	bool internal;			/* start from make_internal */
	void (*mutate)(uint8_t *b);
	bool no_reseal;			/* keep the old checksum */
	uint64_t want_gen;		/* 0: GEN */
	int want_level;			/* -2: the node's own level */
	const char *msg;		/* expected in the log line */
};

static void m_flip_data(uint8_t *b) { b[4000] ^= 1; }
static void m_magic(uint8_t *b) { b[4] ^= 0x40; }
static void m_blkaddr(uint8_t *b) { put64(b, 8, ADDR + 1); }
static void m_owner(uint8_t *b) { put64(b, 24, 2); }
static void m_flags(uint8_t *b) { b[35] = 1; }
static void m_level_big(uint8_t *b) { b[34] = CZFS_MAX_LEVEL; }
static void m_none(uint8_t *b) { (void)b; }
static void m_nritems_leaf(uint8_t *b) { put16(b, 32, CZFS_LEAF_MAX_ITEMS + 1); }
static void m_nritems_int(uint8_t *b) { put16(b, 32, CZFS_NODE_MAX_PTRS + 1); }
static void m_no_ptrs(uint8_t *b) { put16(b, 32, 0); }
/* item 0 of size 10 moved up so it runs past the block end */
static void m_beyond(uint8_t *b) { put16(b, 64, 4096 - 5); }
/* item 2 ends one byte below item 1's start: a gap */
static void m_gap(uint8_t *b) { put16(b, 104, 4096 - 311); }
/* item 0 grows down into item 1's data while still ending at 4096 */
static void m_overlap_data(uint8_t *b) { put16(b, 64, 4096 - 20); put16(b, 66, 20); }
/* item 2's data starts inside the item headers (ends where it should) */
static void m_overlap_hdr(uint8_t *b) { put16(b, 104, 100); put16(b, 106, 3986); }
static void m_size_huge(uint8_t *b) { put16(b, 66, 0xffff); }
static void m_keys_equal(uint8_t *b) { memcpy(b + 68, b + 48, 16); }
static void m_keys_down(uint8_t *b) { put64(b, 88, 4); }
static void m_child_low(uint8_t *b) { put64(b, 48 + 32 + 16, 2); }
static void m_child_high(uint8_t *b) { put64(b, 48 + 64 + 16, MAXB); }
static void m_child_gen(uint8_t *b) { put64(b, 48 + 24, GEN + 1); }
static void m_ptr_keys_equal(uint8_t *b) { memcpy(b + 80, b + 48, 16); }
static void m_ptr_keys_down(uint8_t *b) { put64(b, 112, 5); }

static const struct bad_case bad_cases[] = {
	{ "leaf crc", false, m_flip_data, true, 0, -2, "bad checksum" },
	{ "int crc", true, m_flip_data, true, 0, -2, "bad checksum" },
	{ "leaf magic", false, m_magic, false, 0, -2, "bad magic" },
	{ "int magic", true, m_magic, false, 0, -2, "bad magic" },
	{ "blkaddr", false, m_blkaddr, false, 0, -2, "header says blkaddr 1235" },
	{ "int blkaddr", true, m_blkaddr, false, 0, -2, "header says blkaddr" },
	{ "owner", false, m_owner, false, 0, -2, "owner 2" },
	{ "flags", false, m_flags, false, 0, -2, "unknown flags" },
	{ "level too big", false, m_level_big, false, 0, -1, "level 8 too big" },
	{ "leaf wanted internal", false, m_none, false, 0, 1, "level 0, expected 1" },
	{ "internal wanted leaf", true, m_none, false, 0, 0, "level 1, expected 0" },
	{ "generation", false, m_none, false, GEN + 1, -2, "generation 77, expected 78" },
	{ "int generation", true, m_none, false, GEN - 1, -2, "generation 77" },
	{ "leaf nritems", false, m_nritems_leaf, false, 0, -2, "nritems 203 too big" },
	{ "int nritems", true, m_nritems_int, false, 0, -2, "nritems 127 too big" },
	{ "no pointers", true, m_no_ptrs, false, 0, -2, "no pointers" },
	{ "data beyond end", false, m_beyond, false, 0, -2, "item 0 data [4091, 4101) beyond" },
	{ "size huge", false, m_size_huge, false, 0, -2, "beyond the block end" },
	{ "data gap", false, m_gap, false, 0, -2, "item 2 data ends at 4085, not packed (expected 4086)" },
	{ "data overlap", false, m_overlap_data, false, 0, -2, "item 1 data ends at 4086, not packed (expected 4076)" },
	{ "overlap headers", false, m_overlap_hdr, false, 0, -2, "item 2 data at 100 overlaps the item headers (end 108)" },
	{ "keys equal", false, m_keys_equal, false, 0, -2, "key 1 not greater than key 0" },
	{ "keys decrease", false, m_keys_down, false, 0, -2, "key 2 not greater than key 1" },
	{ "child below data", true, m_child_low, false, 0, -2, "child 1 blkaddr 2 outside [3, 100000)" },
	{ "child past end", true, m_child_high, false, 0, -2, "child 2 blkaddr 100000 outside" },
	{ "child newer", true, m_child_gen, false, 0, -2, "child 0 generation 78 newer" },
	{ "ptr keys equal", true, m_ptr_keys_equal, false, 0, -2, "key 1 not greater than key 0" },
	{ "ptr keys decrease", true, m_ptr_keys_down, false, 0, -2, "key 2 not greater than key 1" },
};

START_TEST(corruption_table)
{
	const struct bad_case *c = &bad_cases[_i];
	uint8_t *b = aligned_alloc(CZFS_BLOCK_SIZE, CZFS_BLOCK_SIZE);
	int level;

	/* given a valid node with one thing broken */
	if (c->internal)
		make_internal(b);
	else
		make_leaf(b);
	level = c->want_level == -2 ? (int)czfs_node_level(b) : c->want_level;
	ck_assert_int_eq(czfs_node_check(b, ADDR, GEN, -1, MAXB), 0);
	c->mutate(b);
	if (!c->no_reseal)
		czfs_node_seal(b);
	/* when checked, then it is refused with a line naming block and check */
	ck_assert_msg(czfs_node_check(b, ADDR, c->want_gen ? c->want_gen : GEN,
				      level, MAXB) == -EFSCORRUPTED,
		      "case %s passed", c->name);
	ck_assert_msg(strstr(last_msg, "node 1234: "), "case %s: %s", c->name,
		      last_msg);
	ck_assert_msg(strstr(last_msg, c->msg), "case %s: '%s'", c->name,
		      last_msg);
	free(b);
}
END_TEST

START_TEST(valid_extremes_pass)
{
	uint8_t *b = aligned_alloc(CZFS_BLOCK_SIZE, CZFS_BLOCK_SIZE);
	uint8_t big[CZFS_MAX_ITEM_SIZE];
	struct czfs_node_ptr p;
	struct czfs_key k;

	/* an empty leaf (a root) */
	czfs_node_init(b, ADDR, GEN, 0);
	czfs_node_seal(b);
	ck_assert_int_eq(czfs_node_check(b, ADDR, GEN, 0, MAXB), 0);
	ck_assert_uint_eq(czfs_leaf_free_space(b), CZFS_LEAF_SPACE);
	/* a leaf full of empty items */
	for (unsigned i = 0; i < CZFS_LEAF_MAX_ITEMS; i++) {
		k = K(1, 1, i);
		czfs_leaf_insert(b, i, &k, NULL, 0);
	}
	czfs_node_seal(b);
	ck_assert_int_eq(czfs_node_check(b, ADDR, GEN, 0, MAXB), 0);
	ck_assert_uint_lt(czfs_leaf_free_space(b), CZFS_ITEM_HDR_SIZE);
	/* one item of the largest size fills the leaf exactly */
	czfs_node_init(b, ADDR, GEN, 0);
	memset(big, 0x5a, sizeof(big));
	k = K(UINT64_MAX, 255, CZFS_KEY_OFFSET_MASK);
	czfs_leaf_insert(b, 0, &k, big, sizeof(big));
	czfs_node_seal(b);
	ck_assert_int_eq(czfs_node_check(b, ADDR, GEN, 0, MAXB), 0);
	ck_assert_uint_eq(czfs_leaf_free_space(b), 0);
	/* an internal node full of pointers, children at the address limits */
	czfs_node_init(b, ADDR, GEN, CZFS_MAX_LEVEL - 1);
	for (unsigned i = 0; i < CZFS_NODE_MAX_PTRS; i++) {
		k = K(i, 0, 0);
		czfs_node_make_ptr(&p, &k, i & 1 ? MAXB - 1 : 3, i & 1 ? GEN : 1);
		czfs_node_insert_ptrs(b, i, &p, 1);
	}
	czfs_node_seal(b);
	ck_assert_int_eq(czfs_node_check(b, ADDR, GEN, CZFS_MAX_LEVEL - 1, MAXB), 0);
	free(b);
}
END_TEST

/* ---- edits against a model ------------------------------------------------ */

struct mitem {
	uint64_t off;
	unsigned size;
	uint8_t fill;
};

START_TEST(leaf_edits_keep_layout)
{
	uint8_t *b = aligned_alloc(CZFS_BLOCK_SIZE, CZFS_BLOCK_SIZE);
	struct mitem m[CZFS_LEAF_MAX_ITEMS];
	uint8_t buf[CZFS_MAX_ITEM_SIZE];
	unsigned n = 0;

	rng_state = 7;
	czfs_node_init(b, ADDR, GEN, 0);
	for (unsigned step = 0; step < 20000; step++) {
		unsigned op = rnd() % 3, slot, size = rnd() % 3 ? rnd() % 64 : rnd() % 1500;
		unsigned room = czfs_leaf_free_space(b);
		struct czfs_key k;
		uint8_t fill = (uint8_t)rnd();

		if (op == 0 && room >= CZFS_ITEM_HDR_SIZE + size) {
			/* insert at a fresh key between neighbours */
			uint64_t off = rnd() % 1000000;
			bool exact;

			k = K(1, 1, off);
			slot = czfs_leaf_lower_bound(b, &k, &exact);
			if (exact)
				continue;
			memset(buf, fill, size);
			czfs_leaf_insert(b, slot, &k, buf, size);
			memmove(m + slot + 1, m + slot, (n - slot) * sizeof(*m));
			m[slot] = (struct mitem){ off, size, fill };
			n++;
		} else if (op == 1 && n) {
			slot = rnd() % n;
			czfs_leaf_remove(b, slot);
			memmove(m + slot, m + slot + 1, (n - slot - 1) * sizeof(*m));
			n--;
		} else if (op == 2 && n) {
			uint8_t *d;

			slot = rnd() % n;
			if (size > m[slot].size + room)
				continue;
			d = czfs_leaf_resize(b, slot, size);
			memset(d, fill, size);
			m[slot].size = size;
			m[slot].fill = fill;
		}
		/* after every edit the leaf is valid and holds the model */
		czfs_node_seal(b);
		ck_assert_int_eq(czfs_node_check(b, ADDR, GEN, 0, MAXB), 0);
		ck_assert_uint_eq(czfs_node_nritems(b), n);
		for (unsigned i = 0; i < n; i++) {
			const uint8_t *d;
			unsigned sz;

			czfs_node_key(b, i, &k);
			ck_assert_uint_eq(k.offset, m[i].off);
			d = czfs_leaf_data(b, i, &sz);
			ck_assert_uint_eq(sz, m[i].size);
			memset(buf, m[i].fill, sz);
			ck_assert(memcmp(d, buf, sz) == 0);
		}
	}
	free(b);
}
END_TEST

START_TEST(internal_edits)
{
	uint8_t *b = aligned_alloc(CZFS_BLOCK_SIZE, CZFS_BLOCK_SIZE);
	struct czfs_node_ptr p[2];
	struct czfs_key k;
	uint64_t addr, gen;

	make_internal(b);			/* keys 0, 10, 20 */
	k = K(15, 0, 0);
	czfs_node_make_ptr(&p[0], &k, 600, 5);
	k = K(17, 0, 0);
	czfs_node_make_ptr(&p[1], &k, 601, 6);
	czfs_node_insert_ptrs(b, 2, p, 2);	/* 0, 10, 15, 17, 20 */
	ck_assert_uint_eq(czfs_node_nritems(b), 5);
	czfs_node_key(b, 4, &k);
	ck_assert_uint_eq(k.objectid, 20);
	/* child slot: the last pointer <= key, or 0 below the first */
	k = K(16, 9, 9);
	ck_assert_uint_eq(czfs_node_child_slot(b, &k), 2);
	k = K(17, 0, 0);
	ck_assert_uint_eq(czfs_node_child_slot(b, &k), 3);
	k = K(0, 0, 0);
	ck_assert_uint_eq(czfs_node_child_slot(b, &k), 0);
	k = K(UINT64_MAX, 255, UINT64_MAX);
	ck_assert_uint_eq(czfs_node_child_slot(b, &k), 4);
	czfs_node_remove_ptr(b, 0);
	czfs_node_set_child(b, 0, 700, 7);
	k = K(1, 0, 0);
	czfs_node_set_ptr_key(b, 0, &k);
	czfs_node_child(b, 0, &addr, &gen);
	ck_assert_uint_eq(addr, 700);
	ck_assert_uint_eq(gen, 7);
	czfs_node_key(b, 0, &k);
	ck_assert_uint_eq(k.objectid, 1);
	ck_assert(czfs_is_zero(b + 48 + 4 * 32, 32));	/* vacated slot zeroed */
	czfs_node_seal(b);
	ck_assert_int_eq(czfs_node_check(b, ADDR, GEN, 1, MAXB), 0);
	free(b);
}
END_TEST

/* ---- random damage -------------------------------------------------------- */

/* A node that passed the check must be safe to read in full. */
static void read_everything(const uint8_t *b)
{
	unsigned n = czfs_node_nritems(b), sum = 0, size;
	struct czfs_key k;
	uint64_t a, g;

	for (unsigned i = 0; i < n; i++) {
		czfs_node_key(b, i, &k);
		if (czfs_node_level(b)) {
			czfs_node_child(b, i, &a, &g);
			ck_assert(czfs_node_ptr_in(a, CZFS_FIRST_DATA_BLKADDR, MAXB));
			continue;
		}
		const uint8_t *d = czfs_leaf_data(b, i, &size);

		ck_assert(d >= b + 48 && d + size <= b + CZFS_BLOCK_SIZE);
		for (unsigned j = 0; j < size; j++)
			sum += d[j];
	}
	if (!czfs_node_level(b))
		ck_assert_uint_le(czfs_leaf_free_space(b), CZFS_LEAF_SPACE);
	(void)sum;
}

static void check_one(uint8_t *b, bool reseal)
{
	int err;

	if (reseal)
		czfs_node_seal(b);
	err = czfs_node_check(b, ADDR, 0, -1, MAXB);
	ck_assert(err == 0 || err == -EFSCORRUPTED);
	if (!err)
		read_everything(b);
}

START_TEST(random_damage_never_crashes)
{
	/* an unaligned buffer: the checker must not rely on alignment */
	uint8_t *mem = malloc(CZFS_BLOCK_SIZE + 1), *b = mem + 1;
	uint8_t *valid = malloc(CZFS_BLOCK_SIZE);
	unsigned passed = 0;

	rng_state = 99;
	/* random bytes with a plausible header */
	for (unsigned it = 0; it < 3000; it++) {
		for (unsigned i = 0; i < CZFS_BLOCK_SIZE; i += 8)
			put64(b, i, rnd());
		if (it & 1) {
			czfs_node_init(b, ADDR, GEN, (unsigned)(rnd() % 2));
			for (unsigned i = 48; i < CZFS_BLOCK_SIZE; i += 8)
				put64(b, i, rnd() & 0x0000ffff0fff0fffull);
			put16(b, 32, (uint16_t)(rnd() % 210));
		}
		check_one(b, true);
	}
	/* bit flips of valid nodes, resealed so the structure checks run */
	for (unsigned it = 0; it < 6000; it++) {
		if (it & 1)
			make_internal(valid);
		else
			make_leaf(valid);
		memcpy(b, valid, CZFS_BLOCK_SIZE);
		for (unsigned f = 0, nf = 1 + rnd() % 3; f < nf; f++) {
			/* mostly in the header and item area, where it matters */
			unsigned pos = rnd() % 4 ? rnd() % 160 : rnd() % CZFS_BLOCK_SIZE;

			b[pos] ^= (uint8_t)(1u << (rnd() % 8));
		}
		check_one(b, rnd() % 8 != 0);
		passed += czfs_node_check(b, ADDR, 0, -1, MAXB) == 0;
	}
	/* some flips hit data bytes or unused space and stay valid */
	ck_assert_uint_gt(passed, 0);
	free(mem);
	free(valid);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("node");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, key_packing);
	tcase_add_test(tc, key_order_matches_disk_order);
	tcase_add_test(tc, leaf_layout_by_hand);
	tcase_add_test(tc, leaf_built_by_helpers_is_packed);
	tcase_add_test(tc, internal_layout_by_hand);
	tcase_add_loop_test(tc, corruption_table, 0, ARRAY_SIZE(bad_cases));
	tcase_add_test(tc, valid_extremes_pass);
	tcase_add_test(tc, leaf_edits_keep_layout);
	tcase_add_test(tc, internal_edits);
	tcase_add_test(tc, random_damage_never_crashes);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
