// SPDX-License-Identifier: MIT
/*
 * Unit tests: mkfs's runs of slices (mkfs/runs.c).  Real compressed
 * clusters are laid in runs on a memory device; every slice item is then
 * decoded and its payload decompressed from where the item says, so a
 * run cut anywhere but at a slice's end, or an item not made again for
 * its new run, fails.  A full run ends at the slice of its last
 * 256 KiB that leaves the least of its last block unused.  Runs without
 * cut (those of packs) hold at most what they were asked, end where the
 * next payload does not fit, and patch the items made after a payload
 * was placed, while its run was open.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "bdev.h"
#include "cluster.h"
#include "compress.h"
#include "czfs_fs.h"
#include "runs.h"
#include "util.h"
#include "writer.h"

#define BS		CZFS_BLOCK_SIZE
#define CLUSTER		(64u << 10)
#define NCLUSTERS	240u
#define DEV_BLOCKS	4096u
#define RUN_BYTES	(CZFS_RUN_MAX_BLOCKS * BS)
#define WINDOW		(256u << 10)

struct placed {
	uint8_t item[sizeof(struct czfs_cluster) + CZFS_INLINE_MAX];
	unsigned item_len;
	uint8_t data[CLUSTER];		/* what the cluster holds */
	uint32_t clen;
};

static struct placed pl[NCLUSTERS];
static struct czfs_pack_info runs[NCLUSTERS];
static unsigned nruns;

/* Data that compresses to a length that varies with i. */
static void fill(uint8_t *d, unsigned i)
{
	uint64_t x = 0x9e3779b97f4a7c15ull * (i + 1);
	unsigned rnd = 3000 + (i * 7919) % 30000;	/* incompressible bytes */

	for (unsigned k = 0; k < CLUSTER; k++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		d[k] = k < rnd ? (uint8_t)x : (uint8_t)("czfs runs "[k % 10]);
	}
}

static void note_run(const struct czfs_pack_info *r)
{
	if (r->nblocks)
		runs[nruns++] = *r;
}

/* Cluster i compressed and placed in rs: *slice its item's cluster. */
static void place(struct czfs_codec *codec, struct mk_runs *rs,
		  struct mk_writer *w, unsigned i, struct czfs_cluster_info *slice)
{
	struct czfs_cluster_policy pol = { .alg = CZFS_ALG_LZ4 };
	static uint8_t out[CLUSTER + BS];
	struct czfs_cluster_header_info h;
	struct czfs_pack_info closed;
	struct czfs_cluster_info ci;
	unsigned out_len;

	fill(pl[i].data, i);
	ck_assert_int_eq(czfs_cluster_encode(codec, &pol, pl[i].data, CLUSTER,
					     out, &ci, &out_len), 0);
	ck_assert_int_eq(ci.kind, CZFS_CLUSTER_COMPRESSED);
	czfs_cluster_header_decode(out, &h);
	pl[i].clen = h.clen;
	ck_assert_int_eq(mk_runs_place(rs, w, 1, &ci,
				       out + sizeof(struct czfs_cluster_header),
				       h.clen, slice, &closed), 0);
	note_run(&closed);
}

/* Lay the NCLUSTERS clusters in runs; returns the device. */
static struct czfs_bdev *lay(void)
{
	struct czfs_codec *codec = czfs_codec_new();
	struct czfs_pack_info closed;
	struct mk_writer w = { 0 };
	struct czfs_bdev *b;
	struct mk_runs *rs;

	ck_assert_ptr_nonnull(codec);
	ck_assert_int_eq(czfs_bdev_mem_create((uint64_t)DEV_BLOCKS * BS, 0, &b), 0);
	ck_assert_int_eq(mk_writer_start(&w, b, 0), 0);
	ck_assert_int_eq(mk_runs_new(CZFS_RUN_MAX_BLOCKS, true, &rs), 0);
	nruns = 0;
	for (unsigned i = 0; i < NCLUSTERS; i++) {
		struct czfs_cluster_info slice;

		place(codec, rs, &w, i, &slice);
		pl[i].item_len = czfs_cluster_item_encode(&slice, pl[i].item);
		mk_runs_pending(rs, pl[i].item);
	}
	ck_assert_int_eq(mk_runs_close(rs, &w, &closed), 0);
	note_run(&closed);
	ck_assert_int_eq(mk_writer_stop(&w), 0);
	mk_writer_free(&w);
	mk_runs_free(rs);
	czfs_codec_free(codec);
	return b;
}

START_TEST(every_slice_reads_back_from_its_run)
{
	struct czfs_codec *codec = czfs_codec_new();
	struct czfs_bdev *b = lay();
	uint8_t *dev = czfs_bdev_mem_data(b);
	static uint8_t got[CLUSTER];
	unsigned r = 0, in_run = 0;

	ck_assert_uint_ge(nruns, 3);
	for (unsigned i = 0; i < NCLUSTERS; i++) {
		struct czfs_cluster_info ci;

		ck_assert_int_eq(czfs_cluster_item_decode(pl[i].item, pl[i].item_len,
							  CLUSTER, DEV_BLOCKS, &ci), 0);
		ck_assert_int_eq(ci.kind, CZFS_CLUSTER_SLICE);
		/* in the runs, in order, each run holding its refs slices */
		while (ci.run != runs[r].blkaddr) {
			ck_assert_uint_eq(in_run, runs[r].refs);
			ck_assert_uint_lt(++r, nruns);
			in_run = 0;
		}
		in_run++;
		ck_assert_uint_le(ci.blkaddr + ci.nblocks,
				  runs[r].blkaddr + runs[r].nblocks);
		ck_assert_int_eq(czfs_slice_decode(codec, &ci, dev + ci.blkaddr * BS,
						   got), 0);
		ck_assert_mem_eq(got, pl[i].data, CLUSTER);
	}
	ck_assert_uint_eq(in_run, runs[r].refs);
	ck_assert_uint_eq(r, nruns - 1);
	czfs_codec_free(codec);
	czfs_bdev_close(b);
}
END_TEST

/* Each full run ends at the slice end of its last WINDOW bytes with the
 * least waste, and the bytes after its end in its last block are zero. */
START_TEST(a_full_run_ends_at_its_best_cut)
{
	struct czfs_bdev *b = lay();
	uint8_t *dev = czfs_bdev_mem_data(b);
	unsigned first = 0;
	uint64_t waste = 0, natural = 0;

	for (unsigned r = 0; r + 1 < nruns; r++) {
		uint32_t end = 0, best = 0, least = BS, cut_if_full = 0;
		unsigned i;

		/* the slices of run r, and where the run could have ended */
		for (i = first; i < NCLUSTERS; i++) {
			if (end + pl[i].clen > RUN_BYTES)
				break;
			end += pl[i].clen;
			cut_if_full = end;
		}
		end = 0;
		for (i = first; i < NCLUSTERS && end + pl[i].clen <= cut_if_full; i++) {
			unsigned w;

			end += pl[i].clen;
			w = -end & (BS - 1);
			if (end + WINDOW >= cut_if_full && w <= least) {
				least = w;
				best = end;
			}
		}
		ck_assert_uint_eq(runs[r].ulen, best);
		ck_assert_uint_eq(runs[r].nblocks, DIV_ROUND_UP(best, BS));
		ck_assert(czfs_is_zero(dev + runs[r].blkaddr * BS + best,
				       runs[r].nblocks * BS - best));
		waste += (uint64_t)runs[r].nblocks * BS - best;
		natural += -cut_if_full & (BS - 1);
		first += runs[r].refs;
	}
	/* and it pays: less waste than cutting where the next did not fit */
	ck_assert_uint_le(waste, natural);
	czfs_bdev_close(b);
}
END_TEST

/* Runs of at most 64 blocks without cut, items made one payload late:
 * patched at the close, or made with the base of a run closed already. */
START_TEST(runs_without_cut_patch_later_items)
{
	struct czfs_codec *codec = czfs_codec_new();
	static uint8_t got[CLUSTER];
	struct czfs_cluster_info pend = { 0 };
	struct czfs_pack_info closed;
	struct mk_writer w = { 0 };
	uint64_t pend_no = 0, base;
	unsigned patched_now = 0, patched_later = 0, first = 0;
	struct czfs_bdev *b;
	struct mk_runs *rs;

	ck_assert_int_eq(czfs_bdev_mem_create((uint64_t)DEV_BLOCKS * BS, 0, &b), 0);
	ck_assert_int_eq(mk_writer_start(&w, b, 0), 0);
	ck_assert_int_eq(mk_runs_new(64, false, &rs), 0);
	nruns = 0;
	for (unsigned i = 0; i <= NCLUSTERS; i++) {
		struct czfs_cluster_info slice = { 0 };

		if (i < NCLUSTERS) {
			place(codec, rs, &w, i, &slice);
			mk_runs_pending(rs, NULL);
		} else {
			ck_assert_int_eq(mk_runs_close(rs, &w, &closed), 0);
			note_run(&closed);
		}
		if (i) {	/* the item of the one before, now */
			void *item = pl[i - 1].item;

			if (mk_runs_base(rs, pend_no, &base)) {
				pend.blkaddr += base;
				pend.run = base;
				patched_now++;
			}
			pl[i - 1].item_len = czfs_cluster_item_encode(&pend, item);
			if (!mk_runs_base(rs, pend_no, &base)) {
				ck_assert_int_eq(mk_runs_patch_later(rs, item), 0);
				patched_later++;
			}
		}
		pend = slice;
		pend_no = mk_runs_open_number(rs);
	}
	ck_assert_int_eq(mk_writer_stop(&w), 0);
	ck_assert_uint_gt(patched_now, 0);	/* both ways were taken */
	ck_assert_uint_gt(patched_later, 0);
	ck_assert_uint_ge(nruns, 3);
	for (unsigned r = 0; r < nruns; r++) {	/* full where the next did not fit */
		ck_assert_uint_le(runs[r].nblocks, 64);
		first += runs[r].refs;
		if (r + 1 < nruns)
			ck_assert_uint_gt(runs[r].ulen + pl[first].clen, 64 * BS);
	}
	ck_assert_uint_eq(first, NCLUSTERS);
	for (unsigned i = 0; i < NCLUSTERS; i++) {
		struct czfs_cluster_info ci;

		ck_assert_int_eq(czfs_cluster_item_decode(pl[i].item, pl[i].item_len,
							  CLUSTER, DEV_BLOCKS, &ci), 0);
		ck_assert_int_eq(czfs_slice_decode(codec, &ci,
						   czfs_bdev_mem_data(b) + ci.blkaddr * BS,
						   got), 0);
		ck_assert_mem_eq(got, pl[i].data, CLUSTER);
	}
	mk_writer_free(&w);
	mk_runs_free(rs);
	czfs_codec_free(codec);
	czfs_bdev_close(b);
}
END_TEST

static Suite *runs_suite(void)
{
	Suite *s = suite_create("runs");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, every_slice_reads_back_from_its_run);
	tcase_add_test(tc, a_full_run_ends_at_its_best_cut);
	tcase_add_test(tc, runs_without_cut_patch_later_items);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(runs_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
