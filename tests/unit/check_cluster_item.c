// SPDX-License-Identifier: MIT
/* Unit tests: cluster items (encoding, validation, RESERVED promises) and
 * decoding of damaged stored clusters.  The encode decisions:
 * check_cluster.c. */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_testlib.h"
#include "crc32c.h"
#include "util.h"

/* ---- item validation -------------------------------------------------------- */

enum base { B_RAW, B_COMPRESSED, B_INLINE, B_INLINE_COMPRESSED, B_RESERVED };

/* Encode a known cluster of each kind (64 KiB clusters) into val. */
static unsigned make_base(enum base b, struct czfs_cluster_info *ci)
{
	static const struct { unsigned ulen; enum pattern pat; bool inl; unsigned kind; } bases[] = {
		[B_RAW] = { 65536, P_RANDOM, false, CZFS_CLUSTER_RAW },
		[B_COMPRESSED] = { 65536, P_QUARTER, false, CZFS_CLUSTER_COMPRESSED },
		[B_INLINE] = { 100, P_RANDOM, true, CZFS_CLUSTER_INLINE },
		[B_INLINE_COMPRESSED] = { 4096, P_REPEAT, true, CZFS_CLUSTER_INLINE_COMPRESSED },
	};
	struct czfs_cluster_policy pol;
	unsigned out_len;

	if (b == B_RESERVED) {	/* fallocate's: the whole 64 KiB cluster */
		*ci = (struct czfs_cluster_info){ .kind = CZFS_CLUSTER_RESERVED,
						  .prealloc = 16 };
		memset(val, 0, sizeof(val));
		return czfs_cluster_item_encode(ci, val);
	}
	pol = policy(CZFS_ALG_ZSTD, 0, true, bases[b].inl);
	fill(src, bases[b].ulen, bases[b].pat);
	encode(&pol, bases[b].ulen, ci, &out_len);
	ck_assert_uint_eq(ci->kind, bases[b].kind);
	memset(val, 0, sizeof(val));
	return czfs_cluster_item_encode(ci, val);
}

enum mutation {
	M_NONE, M_KIND0, M_KIND8, M_KIND_FF, M_ALG_BAD, M_ALG_NONE, M_ALG_ON_RAW,
	M_NBLOCKS0, M_NBLOCKS_BIG, M_NBLOCKS_RAW, M_NBLOCKS_COMP, M_BLKADDR0,
	M_BLKADDR2, M_BLKADDR_END, M_BLKADDR_HUGE, M_ULEN0, M_ULEN_BIG,
	M_RES0, M_RES1, M_LEN23, M_LEN0, M_LEN25, M_INLINE_BLKADDR,
	M_INLINE_NBLOCKS, M_INLINE_EMPTY, M_INLINE_BIG, M_INLINE_ULEN,
	M_BLKADDR_FIRST, M_BLKADDR_LAST, M_ULEN1, M_CHECKSUM, M_NBLOCKS1,
	M_PREALLOC0, M_PREALLOC1, M_PREALLOC16, M_PREALLOC17,
};

struct item_case {
	enum base base;
	enum mutation m;
	int err;
};

static const struct item_case item_cases[] = {
	/* the bases themselves and the edges of the valid range */
	{ B_RAW, M_NONE, 0 }, { B_COMPRESSED, M_NONE, 0 },
	{ B_INLINE, M_NONE, 0 }, { B_INLINE_COMPRESSED, M_NONE, 0 },
	{ B_RAW, M_BLKADDR_FIRST, 0 }, { B_RAW, M_BLKADDR_LAST, 0 },
	{ B_COMPRESSED, M_BLKADDR_LAST, 0 },
	/* every field made invalid */
	{ B_RESERVED, M_NONE, 0 }, { B_RESERVED, M_PREALLOC1, 0 },
	/* a partial cluster may promise room for the rest of it */
	{ B_INLINE, M_PREALLOC16, 0 }, { B_INLINE_COMPRESSED, M_PREALLOC1, 0 },
	{ B_RAW, M_KIND0, -EFSCORRUPTED }, { B_RAW, M_KIND8, -EFSCORRUPTED },
	/* a reserved item holds its promise and nothing else */
	{ B_RESERVED, M_PREALLOC0, -EFSCORRUPTED },
	{ B_RESERVED, M_PREALLOC17, -EFSCORRUPTED },
	{ B_RESERVED, M_NBLOCKS1, -EFSCORRUPTED },
	{ B_RESERVED, M_ULEN1, -EFSCORRUPTED },
	{ B_RESERVED, M_CHECKSUM, -EFSCORRUPTED },
	{ B_RESERVED, M_BLKADDR2, -EFSCORRUPTED },
	{ B_RESERVED, M_ALG_ON_RAW, -EFSCORRUPTED },
	{ B_RESERVED, M_RES0, -EFSCORRUPTED },
	{ B_RESERVED, M_LEN25, -EFSCORRUPTED },
	/* a full cluster has nothing left to promise; no more than a cluster */
	{ B_RAW, M_PREALLOC1, -EFSCORRUPTED },
	{ B_COMPRESSED, M_PREALLOC1, -EFSCORRUPTED },
	{ B_INLINE, M_PREALLOC17, -EFSCORRUPTED },
	{ B_INLINE, M_KIND_FF, -EFSCORRUPTED },
	{ B_COMPRESSED, M_ALG_BAD, -EFSCORRUPTED },
	{ B_COMPRESSED, M_ALG_NONE, -EFSCORRUPTED },
	{ B_INLINE_COMPRESSED, M_ALG_BAD, -EFSCORRUPTED },
	{ B_INLINE_COMPRESSED, M_ALG_NONE, -EFSCORRUPTED },
	{ B_RAW, M_ALG_ON_RAW, -EFSCORRUPTED },
	{ B_INLINE, M_ALG_ON_RAW, -EFSCORRUPTED },
	{ B_RAW, M_NBLOCKS0, -EFSCORRUPTED },
	{ B_COMPRESSED, M_NBLOCKS0, -EFSCORRUPTED },
	{ B_RAW, M_NBLOCKS_BIG, -EFSCORRUPTED },
	{ B_COMPRESSED, M_NBLOCKS_BIG, -EFSCORRUPTED },
	{ B_RAW, M_NBLOCKS_RAW, -EFSCORRUPTED },
	{ B_COMPRESSED, M_NBLOCKS_COMP, -EFSCORRUPTED },
	{ B_RAW, M_BLKADDR0, -EFSCORRUPTED },
	{ B_COMPRESSED, M_BLKADDR2, -EFSCORRUPTED },
	{ B_RAW, M_BLKADDR_END, -EFSCORRUPTED },
	{ B_COMPRESSED, M_BLKADDR_END, -EFSCORRUPTED },
	{ B_COMPRESSED, M_BLKADDR_HUGE, -EFSCORRUPTED },
	{ B_RAW, M_ULEN0, -EFSCORRUPTED }, { B_INLINE, M_ULEN0, -EFSCORRUPTED },
	{ B_RAW, M_ULEN_BIG, -EFSCORRUPTED },
	{ B_INLINE_COMPRESSED, M_ULEN_BIG, -EFSCORRUPTED },
	{ B_RAW, M_RES0, -EFSCORRUPTED }, { B_INLINE, M_RES1, -EFSCORRUPTED },
	{ B_COMPRESSED, M_RES1, -EFSCORRUPTED },
	{ B_RAW, M_LEN23, -EFSCORRUPTED }, { B_INLINE, M_LEN0, -EFSCORRUPTED },
	{ B_RAW, M_LEN25, -EFSCORRUPTED }, { B_COMPRESSED, M_LEN25, -EFSCORRUPTED },
	{ B_INLINE, M_INLINE_BLKADDR, -EFSCORRUPTED },
	{ B_INLINE_COMPRESSED, M_INLINE_BLKADDR, -EFSCORRUPTED },
	{ B_INLINE, M_INLINE_NBLOCKS, -EFSCORRUPTED },
	{ B_INLINE_COMPRESSED, M_INLINE_NBLOCKS, -EFSCORRUPTED },
	{ B_INLINE, M_INLINE_EMPTY, -EFSCORRUPTED },
	{ B_INLINE_COMPRESSED, M_INLINE_EMPTY, -EFSCORRUPTED },
	{ B_INLINE_COMPRESSED, M_INLINE_BIG, -EFSCORRUPTED },
	{ B_INLINE, M_INLINE_ULEN, -EFSCORRUPTED },
};

/* Apply m to the item in val; returns its new length. */
static unsigned mutate(enum mutation m, unsigned len)
{
	struct czfs_cluster c;

	memcpy(&c, val, ITEM);
	switch (m) {
	case M_KIND0: c.kind = 0; break;
	case M_KIND8: c.kind = 8; break;
	case M_ULEN1: c.ulen = cpu_to_le32(1); break;
	case M_CHECKSUM: c.checksum = cpu_to_le32(1); break;
	case M_NBLOCKS1: c.nblocks = 1; break;
	case M_PREALLOC0: c.prealloc = 0; break;
	case M_PREALLOC1: c.prealloc = cpu_to_le32(1); break;
	case M_PREALLOC16: c.prealloc = cpu_to_le32(16); break;
	case M_PREALLOC17: c.prealloc = cpu_to_le32(17); break;
	case M_KIND_FF: c.kind = 0xff; break;
	case M_ALG_BAD: c.alg = CZFS_ALG_MAX + 1; break;
	case M_ALG_NONE: c.alg = CZFS_ALG_NONE; break;
	case M_ALG_ON_RAW: c.alg = CZFS_ALG_LZ4; break;
	case M_NBLOCKS0: c.nblocks = 0; break;
	case M_NBLOCKS_BIG: c.nblocks = 17; break;
	case M_NBLOCKS_RAW: c.nblocks = 15; break;
	case M_NBLOCKS_COMP: c.nblocks = 16; break;
	case M_BLKADDR0: c.blkaddr = 0; break;
	case M_BLKADDR2: c.blkaddr = cpu_to_le64(2); break;
	case M_BLKADDR_END:
		c.blkaddr = cpu_to_le64(MAX_BLOCKS - c.nblocks + 1);
		break;
	case M_BLKADDR_LAST:
		c.blkaddr = cpu_to_le64(MAX_BLOCKS - c.nblocks);
		break;
	case M_BLKADDR_FIRST:
		c.blkaddr = cpu_to_le64(CZFS_FIRST_DATA_BLKADDR);
		break;
	case M_BLKADDR_HUGE: c.blkaddr = UINT64_MAX; break;
	case M_ULEN0: c.ulen = 0; break;
	case M_ULEN_BIG: c.ulen = cpu_to_le32(65537); break;
	case M_RES0: c.reserved0 = 1; break;
	case M_RES1: c.prealloc = cpu_to_le32(0x80000000u); break;
	case M_LEN23: len = ITEM - 1; break;
	case M_LEN0: len = 0; break;
	case M_LEN25: len = ITEM + 1; break;
	case M_INLINE_BLKADDR: c.blkaddr = cpu_to_le64(BLKADDR); break;
	case M_INLINE_NBLOCKS: c.nblocks = 1; break;
	case M_INLINE_EMPTY: len = ITEM; break;
	case M_INLINE_BIG: len = ITEM + CZFS_INLINE_MAX + 1; break;
	case M_INLINE_ULEN: c.ulen = cpu_to_le32(le32_to_cpu(c.ulen) + 1); break;
	default: break;
	}
	memcpy(val, &c, ITEM);
	return len;
}

START_TEST(item_validation_table)
{
	const struct item_case *ic = &item_cases[_i];
	struct czfs_cluster_info ci, back;
	unsigned len = make_base(ic->base, &ci);
	int err;

	/* given a valid item with one field made invalid */
	len = mutate(ic->m, len);
	/* when decoded, then the error is the expected one */
	err = czfs_cluster_item_decode(val, len, 65536, MAX_BLOCKS, &back);
	ck_assert_msg(err == ic->err, "case %d (base %d, mutation %d): %d",
		      _i, ic->base, ic->m, err);
	/* and each rejection says why */
	if (err)
		ck_assert_msg(strstr(last_msg, "cluster item") != NULL,
			      "message: %s", last_msg);
	else
		ck_assert_uint_eq(nr_msgs, 0);
}
END_TEST

/* A reserved item decodes to its promise, owns no blocks, reads as zeros. */
START_TEST(item_reserved_reads_as_zeros)
{
	struct czfs_cluster_info ci, back;
	unsigned len = make_base(B_RESERVED, &ci);

	ck_assert_uint_eq(len, ITEM);
	ck_assert_uint_eq(val[20], 16);		/* the promise, le32 at 20 */
	ck_assert_uint_eq(val[2], 0);		/* no blocks */
	ck_assert_int_eq(czfs_cluster_item_decode(val, len, 65536, MAX_BLOCKS,
						  &back), 0);
	ck_assert_uint_eq(back.kind, CZFS_CLUSTER_RESERVED);
	ck_assert_uint_eq(back.prealloc, 16);
	ck_assert_uint_eq(back.nblocks, 0);
	ck_assert_int_eq(decode(&back, 65536), 0);
	ck_assert(czfs_is_zero(dst, 65536));
	/* a promise larger than the file's cluster is refused */
	ck_assert_int_eq(czfs_cluster_item_decode(val, len, 16384, MAX_BLOCKS,
						  &back), -EFSCORRUPTED);
}
END_TEST

START_TEST(item_unaligned)
{
	struct czfs_cluster_info ci, back;
	static uint8_t buf[VAL_SIZE + 8];
	unsigned len = make_base(B_INLINE, &ci);

	/* given an item at an odd offset, as inside a leaf, then it decodes */
	memcpy(buf + 3, val, len);
	ck_assert_int_eq(czfs_cluster_item_decode(buf + 3, len, 4096, MAX_BLOCKS,
						  &back), 0);
	ck_assert_ptr_eq(back.inline_data, buf + 3 + ITEM);
	ck_assert_uint_eq(back.checksum, ci.checksum);
	/* and a cluster size smaller than the ulen is refused */
	len = make_base(B_COMPRESSED, &ci);
	ck_assert_int_eq(czfs_cluster_item_decode(val, len, 32768, MAX_BLOCKS,
						  &back), -EFSCORRUPTED);
	/* and an image too small for the blocks is refused */
	ck_assert_int_eq(czfs_cluster_item_decode(val, len, 65536, 4, &back),
			 -EFSCORRUPTED);
}
END_TEST

/* ---- damaged stored data ---------------------------------------------------- */

enum damage {
	D_PAYLOAD, D_MAGIC, D_CLEN_BIG, D_CLEN_HUGE, D_CLEN_SHORT, D_HDR_ULEN,
	D_HDR_CRC, D_CLEN_FEW_BLOCKS, D_ITEM_ALG, D_ITEM_ULEN, D_DST_SMALL,
	D_RAW_DATA, D_RAW_PADDING, D_INLINE_BYTE, D_INLINE_GARBAGE,
	D_INLINE_ULEN, D_KIND,
};

struct damage_case {
	enum base base;
	enum damage d;
	const char *msg;	/* expected in the log */
};

static const struct damage_case damage_cases[] = {
	{ B_COMPRESSED, D_PAYLOAD, "checksum mismatch" },
	{ B_COMPRESSED, D_MAGIC, "magic" },
	{ B_COMPRESSED, D_CLEN_BIG, "clen" },
	{ B_COMPRESSED, D_CLEN_HUGE, "clen" },
	{ B_COMPRESSED, D_CLEN_SHORT, "checksum mismatch" },
	{ B_COMPRESSED, D_HDR_ULEN, "ulen" },
	{ B_COMPRESSED, D_HDR_CRC, "header checksum" },
	{ B_COMPRESSED, D_CLEN_FEW_BLOCKS, "clen" },
	{ B_COMPRESSED, D_ITEM_ALG, "decode" },
	{ B_COMPRESSED, D_ITEM_ULEN, "decode" },
	{ B_COMPRESSED, D_DST_SMALL, "buffer" },
	{ B_COMPRESSED, D_KIND, "unknown kind" },
	{ B_RAW, D_RAW_DATA, "checksum mismatch" },
	{ B_RAW, D_RAW_PADDING, "checksum mismatch" },
	{ B_INLINE, D_INLINE_BYTE, "checksum mismatch" },
	{ B_INLINE_COMPRESSED, D_INLINE_BYTE, "checksum mismatch" },
	{ B_INLINE_COMPRESSED, D_INLINE_GARBAGE, "decode" },
	{ B_INLINE, D_INLINE_ULEN, "inline payload" },
};

/* Set clen in the stored header and keep the crc in step, as an attacker
 * (or a confused writer) could. */
static void forge_clen(struct czfs_cluster_info *ci, unsigned clen)
{
	struct czfs_cluster_header hdr;

	memcpy(&hdr, out, HDR);
	hdr.clen = cpu_to_le32(clen);
	ci->checksum = czfs_crc32c(0, out + HDR, clen);
	hdr.checksum = cpu_to_le32(ci->checksum);
	memcpy(out, &hdr, HDR);
}

static void header_set(unsigned field, uint32_t v)
{
	memcpy(out + field * 4, &(uint32_t){ cpu_to_le32(v) }, 4);
}

static uint32_t header_get(unsigned field)
{
	uint32_t v;

	memcpy(&v, out + field * 4, 4);
	return le32_to_cpu(v);
}

START_TEST(stored_damage_table)
{
	const struct damage_case *dc = &damage_cases[_i];
	struct czfs_cluster_info ci;
	static uint8_t payload[CZFS_INLINE_MAX];
	unsigned dst_len = 65536, clen;

	make_base(dc->base, &ci);
	clen = header_get(1);
	/* given a stored cluster damaged one way */
	switch (dc->d) {
	case D_PAYLOAD: out[HDR + 100] ^= 0x10; break;
	case D_MAGIC: header_set(0, CZFS_CLUSTER_MAGIC ^ 1); break;
	case D_CLEN_BIG: header_set(1, ci.nblocks * BLK - HDR + 1); break;
	case D_CLEN_HUGE: header_set(1, UINT32_MAX); break;
	case D_CLEN_SHORT: header_set(1, clen - 1); break;
	case D_HDR_ULEN: header_set(2, ci.ulen - 1); break;
	case D_HDR_CRC: header_set(3, ci.checksum ^ 4); break;
	case D_CLEN_FEW_BLOCKS: forge_clen(&ci, 100); break;
	case D_ITEM_ALG: ci.alg = CZFS_ALG_LZ4; break;
	case D_ITEM_ULEN: ci.ulen--; header_set(2, ci.ulen); break;
	case D_DST_SMALL: dst_len = ci.ulen - 1; break;
	case D_KIND: ci.kind = 9; break;
	case D_RAW_DATA: out[12345] ^= 1; break;
	case D_RAW_PADDING:
		/* a raw cluster's crc covers its padding too */
		ck_assert_int_eq(czfs_cluster_encode(codec, &(struct czfs_cluster_policy){ 0 },
						     src, 5000, out, &ci, &clen), 0);
		out[4096 + 4000] ^= 0x80;
		break;
	case D_INLINE_BYTE:
		memcpy(payload, ci.inline_data, ci.inline_len);
		payload[ci.inline_len / 2] ^= 0x01;
		ci.inline_data = payload;
		break;
	case D_INLINE_GARBAGE:
		memset(payload, 0x37, ci.inline_len);
		ci.inline_data = payload;
		ci.checksum = czfs_crc32c(0, payload, ci.inline_len);
		break;
	case D_INLINE_ULEN: ci.ulen++; break;
	}
	/* when decoded, then it is reported corrupt, with the reason */
	memset(dst, 0xaa, sizeof(dst));
	ck_assert_int_eq(czfs_cluster_decode(codec, &ci, out, dst, dst_len),
			 -EFSCORRUPTED);
	ck_assert_msg(strstr(last_msg, dc->msg) != NULL, "case %d: \"%s\"",
		      _i, last_msg);
	/* and nothing was written past the buffer */
	ck_assert_uint_eq(dst[dst_len], 0xaa);
}
END_TEST

START_TEST(every_bit_flip_is_caught)
{
	unsigned alg = comp_algs[_i], ulen = 8192, clen, used;
	struct czfs_cluster_policy pol = policy(alg, 0, true, false);
	struct czfs_cluster_info ci;
	unsigned out_len, caught = 0;

	/* given a small compressed cluster (1 block for 8 KiB) */
	fill(src, ulen, P_QUARTER);
	encode(&pol, ulen, &ci, &out_len);
	ck_assert_uint_eq(ci.kind, CZFS_CLUSTER_COMPRESSED);
	clen = header_get(1);
	used = HDR + clen;
	for (unsigned bit = 0; bit < out_len * 8; bit++) {
		int err;

		/* when any one bit of the stored block is flipped */
		out[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		memset(dst, 0xaa, ulen + 1);
		err = czfs_cluster_decode(codec, &ci, out, dst, ulen);
		out[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		if (bit / 8 < used) {
			/* then in the header or payload it is caught */
			ck_assert_msg(err == -EFSCORRUPTED, "bit %u: %d", bit, err);
			caught++;
		} else {
			/* and in the zero padding it changes nothing */
			ck_assert_msg(err == 0 && !memcmp(dst, src, ulen),
				      "padding bit %u: %d", bit, err);
		}
		ck_assert_uint_eq(dst[ulen], 0xaa);
	}
	ck_assert_uint_eq(caught, used * 8);
	/* and the original still decodes */
	ck_assert_int_eq(decode(&ci, ulen), 0);
	ck_assert(!memcmp(dst, src, ulen));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cluster_item");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, cluster_test_setup, cluster_test_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, item_validation_table, 0, ARRAY_SIZE(item_cases));
	tcase_add_test(tc, item_unaligned);
	tcase_add_test(tc, item_reserved_reads_as_zeros);
	tcase_add_loop_test(tc, stored_damage_table, 0, ARRAY_SIZE(damage_cases));
	tcase_add_loop_test(tc, every_bit_flip_is_caught, 0, ARRAY_SIZE(comp_algs));
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
