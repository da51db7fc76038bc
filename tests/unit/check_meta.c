// SPDX-License-Identifier: MIT
/*
 * Unit tests: inode, directory-entry and xattr items: decoding with
 * per-field validation, and lookups/readdir over a real B-tree.
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "bdev.h"
#include "btree.h"
#include "dir.h"
#include "fs.h"
#include "hash.h"
#include "inode.h"
#include "util.h"
#include "xattr.h"

static struct czfs_inode_info sample_inode(void)
{
	struct czfs_inode_info ii = {
		.ino = 7, .mode = S_IFREG | 0644, .nlink = 2, .uid = 1000,
		.gid = 100, .size = 123456789, .blocks = 42,
		.atime = { -5, 999999999 }, .mtime = { 1700000000, 1 },
		.ctime = { 1700000001, 2 }, .btime = { 3, 4 },
		.rdev_major = 0, .rdev_minor = 0, .parent = 0, .generation = 9,
		.flags = CZFS_INODE_NOCOMPRESS, .alg = CZFS_ALG_ZSTD,
		.level = -3, .cluster_shift = 4,
	};
	return ii;
}

START_TEST(inode_round_trip)
{
	struct czfs_inode_info in = sample_inode(), out;
	struct czfs_inode di;

	czfs_inode_encode(&in, &di);
	ck_assert_int_eq(czfs_inode_decode(&di, sizeof(di), 7, &out), 0);
	ck_assert_int_eq(memcmp(&in, &out, sizeof(in)), 0);
	/* byte-exact: size at offset 16, level right after alg */
	ck_assert_uint_eq(((uint8_t *)&di)[16], 123456789 & 0xff);
	ck_assert_int_eq(((int8_t *)&di)[offsetof(struct czfs_inode, level)], -3);
}
END_TEST

/* Each chattr flag alone and all together survive the format, in place. */
START_TEST(inode_attr_flags)
{
	static const uint32_t flags[] = {
		CZFS_INODE_IMMUTABLE, CZFS_INODE_APPEND, CZFS_INODE_NOATIME,
		CZFS_INODE_NODUMP, CZFS_INODE_ATTR_FLAGS | CZFS_INODE_COMPRESS,
	};
	struct czfs_inode_info in = sample_inode(), out;
	struct czfs_inode di;

	for (unsigned i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		in.flags = flags[i];
		czfs_inode_encode(&in, &di);
		ck_assert_uint_eq(le32_to_cpu(di.flags), flags[i]);
		ck_assert_int_eq(czfs_inode_decode(&di, sizeof(di), 7, &out), 0);
		ck_assert_uint_eq(out.flags, flags[i]);
	}
	ck_assert_uint_eq(CZFS_INODE_ATTR_FLAGS & (CZFS_INODE_COMPRESS |
						   CZFS_INODE_NOCOMPRESS), 0);
	ck_assert_uint_eq(CZFS_INODE_FLAGS_KNOWN, CZFS_INODE_ATTR_FLAGS |
			  CZFS_INODE_COMPRESS | CZFS_INODE_NOCOMPRESS);
}
END_TEST

/* One way to break an inode each; all must be refused. */
static void break_inode(int i, struct czfs_inode_info *ii, unsigned *len)
{
	switch (i) {
	case 0: ii->mode = 0170000 | 0644; break;	/* unknown type */
	case 1: ii->mtime.tv_nsec = 1000000000; break;
	case 2: ii->btime.tv_nsec = 2000000000; break;
	case 3: ii->cluster_shift = 7; break;
	case 4: ii->alg = CZFS_ALG_MAX + 1; break;
	case 5: ii->flags = 0x80; break;
	case 6: ii->size = CZFS_MAX_FILE_SIZE + 1; break;
	case 7: ii->mode = S_IFLNK | 0777; ii->size = 0; break;
	case 8: ii->mode = S_IFLNK | 0777; ii->size = CZFS_SYMLINK_MAX + 1; break;
	case 9: ii->mode = S_IFDIR | 0755; ii->parent = 0; break;
	case 10: *len -= 1; break;
	}
}

START_TEST(inode_corruption_table)
{
	struct czfs_inode_info ii = sample_inode(), out;
	struct czfs_inode di;
	unsigned len = sizeof(di);

	break_inode(_i, &ii, &len);
	czfs_inode_encode(&ii, &di);
	ck_assert_int_eq(czfs_inode_decode(&di, len, 7, &out), -EFSCORRUPTED);
}
END_TEST

START_TEST(dentry_records)
{
	uint8_t buf[600];
	struct czfs_dirent de;
	unsigned len = 0, pos = 0;

	len += czfs_dentry_encode(buf + len, 12, DT_REG, "alpha", 5);
	len += czfs_dentry_encode(buf + len, 13, DT_DIR, "beta", 4);
	ck_assert_uint_eq(len, 2 * sizeof(struct czfs_dentry) + 9);
	ck_assert_int_eq(czfs_dentry_next(buf, len, &pos, &de), 1);
	ck_assert_uint_eq(de.ino, 12);
	ck_assert_int_eq(memcmp(de.name, "alpha", 5), 0);
	ck_assert_int_eq(czfs_dentry_next(buf, len, &pos, &de), 1);
	ck_assert_uint_eq(de.type, DT_DIR);
	ck_assert_int_eq(czfs_dentry_next(buf, len, &pos, &de), 0);
	/* truncated record, zero-length name, a slash, ino 0 */
	pos = 0;
	ck_assert_int_eq(czfs_dentry_next(buf, len - 1 - 13, &pos, &de), 1);
	ck_assert_int_eq(czfs_dentry_next(buf, len - 1 - 13, &pos, &de), -EFSCORRUPTED);
	len = czfs_dentry_encode(buf, 12, DT_REG, "a/b", 3);
	pos = 0;
	ck_assert_int_eq(czfs_dentry_next(buf, len, &pos, &de), -EFSCORRUPTED);
	len = czfs_dentry_encode(buf, 0, DT_REG, "ok", 2);
	pos = 0;
	ck_assert_int_eq(czfs_dentry_next(buf, len, &pos, &de), -EFSCORRUPTED);
	len = czfs_dentry_encode(buf, 5, DT_REG, "", 0);
	pos = 0;
	ck_assert_int_eq(czfs_dentry_next(buf, len, &pos, &de), -EFSCORRUPTED);
}
END_TEST

START_TEST(xattr_records)
{
	uint8_t buf[2000], big[CZFS_XATTR_INLINE_MAX + 1] = { 0 };
	struct czfs_xattr x;
	unsigned len = 0, pos = 0;

	len += czfs_xattr_encode(buf, "user.a", 6, "1234", 4, 0, 0);
	len += czfs_xattr_encode(buf + len, "user.big", 8, big, sizeof(big), 77, 0xabcd);
	ck_assert_int_eq(czfs_xattr_next(buf, len, &pos, &x), 1);
	ck_assert_uint_eq(x.value_len, 4);
	ck_assert_int_eq(memcmp(x.value, "1234", 4), 0);
	ck_assert_int_eq(czfs_xattr_next(buf, len, &pos, &x), 1);
	ck_assert_ptr_null(x.value);		/* external */
	ck_assert_uint_eq(x.blkaddr, 77);
	ck_assert_uint_eq(x.checksum, 0xabcd);
	ck_assert_int_eq(czfs_xattr_next(buf, len, &pos, &x), 0);
	/* a value length running past the item */
	pos = 0;
	ck_assert_int_eq(czfs_xattr_next(buf, 6 + 8 + 3, &pos, &x), -EFSCORRUPTED);
	/* name rules */
	ck_assert(czfs_xattr_name_ok("user.x", 6));
	ck_assert(czfs_xattr_name_ok("security.selinux", 16));
	ck_assert(!czfs_xattr_name_ok("user.", 5));
	ck_assert(!czfs_xattr_name_ok("other.x", 7));
}
END_TEST

/* ---- a small filesystem image built in memory ---------------------------- */

struct bump {
	struct czfs_allocator a;
	uint64_t next;
};

static int bump_alloc(struct czfs_allocator *a, uint64_t n, uint64_t *blk)
{
	struct bump *b = (struct bump *)a;

	*blk = b->next;
	b->next += n;
	return 0;
}

static void bump_free(struct czfs_allocator *a, uint64_t blk, uint64_t n)
{
}

#define NFILES	20000

struct ent {
	uint64_t hash;
	unsigned n;
};

static int cmp_hash(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;

	return x->hash < y->hash ? -1 : x->hash > y->hash;
}

/* A root directory with NFILES entries, each a file with one xattr. */
static struct czfs_fs *build_fs(void)
{
	static struct bump alloc = { { bump_alloc, bump_free }, 3 };
	struct czfs_btree_builder *bb;
	struct czfs_bdev *bdev;
	struct czfs_fs *fs = calloc(1, sizeof(*fs));
	struct czfs_inode_info ii = sample_inode();
	struct czfs_inode di;
	uint8_t item[64];
	uint64_t root;
	unsigned level;

	ck_assert_ptr_nonnull(fs);
	ck_assert_int_eq(czfs_bdev_mem_create(1 << 20, 0, &bdev), 0);
	fs->bdev = bdev;
	fs->sb.hash_seed[0] = 0x1234;
	fs->sb.hash_seed[1] = 0x5678;
	ck_assert_int_eq(czfs_btree_builder_new(bdev, &alloc.a, 1, &bb), 0);
	ii.ino = CZFS_ROOT_INO;
	ii.mode = S_IFDIR | 0755;
	ii.parent = CZFS_ROOT_INO;
	czfs_inode_encode(&ii, &di);
	struct czfs_key k = { CZFS_ROOT_INO, CZFS_ITEM_INODE, 0 };
	ck_assert_int_eq(czfs_btree_builder_add(bb, &k, &di, sizeof(di), NULL), 0);

	/* dentries sorted by hash, colliding names sharing an item */
	struct ent *ents = calloc(NFILES, sizeof(*ents));
	for (unsigned n = 0; n < NFILES; n++) {
		char name[32];
		int len = snprintf(name, sizeof(name), "file%u", n);

		ents[n].hash = czfs_name_hash(fs->sb.hash_seed, name, (size_t)len);
		ents[n].n = n;
	}
	qsort(ents, NFILES, sizeof(*ents), cmp_hash);
	for (unsigned i = 0; i < NFILES; i++) {
		char name[32];
		int len = snprintf(name, sizeof(name), "file%u", ents[i].n);
		unsigned ilen = czfs_dentry_encode(item, 100 + ents[i].n, DT_REG,
						   name, (unsigned)len);

		ck_assert(i == 0 || ents[i].hash != ents[i - 1].hash);
		k = (struct czfs_key){ CZFS_ROOT_INO, CZFS_ITEM_DENTRY, ents[i].hash };
		ck_assert_int_eq(czfs_btree_builder_add(bb, &k, item, ilen, NULL), 0);
	}
	free(ents);
	ii.mode = S_IFREG | 0600;
	ii.parent = 0;
	for (unsigned n = 0; n < NFILES; n++) {
		const char *xname = "user.tag";
		char val[16];
		int vlen = snprintf(val, sizeof(val), "v%u", n);

		ii.ino = 100 + n;
		ii.size = n;
		czfs_inode_encode(&ii, &di);
		k = (struct czfs_key){ ii.ino, CZFS_ITEM_INODE, 0 };
		ck_assert_int_eq(czfs_btree_builder_add(bb, &k, &di, sizeof(di), NULL), 0);
		k = (struct czfs_key){ ii.ino, CZFS_ITEM_XATTR,
				       czfs_name_hash(fs->sb.hash_seed, xname, 8) };
		unsigned ilen = czfs_xattr_encode(item, xname, 8, val, (uint32_t)vlen, 0, 0);
		ck_assert_int_eq(czfs_btree_builder_add(bb, &k, item, ilen, NULL), 0);
	}
	ck_assert_int_eq(czfs_btree_builder_finish(bb, &root, &level), 0);
	czfs_btree_builder_free(bb);
	ck_assert_int_eq(czfs_nodecache_create(bdev, 1 << 20, 64, &fs->nc), 0);
	fs->tree = (struct czfs_btree){ .nc = fs->nc, .root_blkaddr = root,
		.root_generation = 1, .root_level = level, .max_blocks = 1 << 20 };
	fs->cp.max_blocks = 1 << 20;
	pthread_rwlock_init(&fs->lock, NULL);
	return fs;
}

static void free_fs(struct czfs_fs *fs)
{
	czfs_nodecache_destroy(fs->nc);
	czfs_bdev_close(fs->bdev);
	pthread_rwlock_destroy(&fs->lock);
	free(fs);
}

START_TEST(lookup_reads_few_nodes_in_a_big_directory)
{
	struct czfs_fs *fs = build_fs();
	struct czfs_nodecache_stats before, after;
	uint64_t ino;
	unsigned type;

	ck_assert_uint_ge(fs->tree.root_level, 1);
	for (unsigned n = 0; n < NFILES; n += 997) {
		char name[32];
		int len = snprintf(name, sizeof(name), "file%u", n);

		czfs_nodecache_stats(fs->nc, &before);
		ck_assert_int_eq(czfs_dir_lookup(fs, CZFS_ROOT_INO, name, (size_t)len,
						 &ino, &type), 0);
		czfs_nodecache_stats(fs->nc, &after);
		ck_assert_uint_eq(ino, 100 + n);
		ck_assert_uint_eq(type, DT_REG);
		/* a lookup touches one node per level, not the directory */
		ck_assert_uint_le(after.hits + after.misses - before.hits - before.misses,
				  fs->tree.root_level + 1);
	}
	ck_assert_int_eq(czfs_dir_lookup(fs, CZFS_ROOT_INO, "nope", 4, &ino, &type),
			 -ENOENT);
	char longname[300];
	memset(longname, 'a', sizeof(longname));
	ck_assert_int_eq(czfs_dir_lookup(fs, CZFS_ROOT_INO, longname, 256, &ino, &type),
			 -ENAMETOOLONG);
	free_fs(fs);
}
END_TEST

struct collect {
	uint8_t *seen;
	unsigned count, stop_after;
	uint64_t last_next;
};

static int collect_fn(void *arg, const struct czfs_dirent *de, uint64_t next)
{
	struct collect *c = arg;
	unsigned n = (unsigned)(de->ino - 100);

	ck_assert_uint_lt(n, NFILES);
	c->seen[n]++;
	c->count++;
	c->last_next = next;
	return c->stop_after && c->count % c->stop_after == 0;
}

START_TEST(readdir_resumes_at_every_cookie)
{
	struct czfs_fs *fs = build_fs();
	struct collect c = { calloc(NFILES, 1), 0, 0, 0 };
	uint64_t cookie = 0;

	/* when listed 37 entries at a time, resuming from the last cookie */
	c.stop_after = 37;
	do {
		unsigned before = c.count;

		ck_assert_int_eq(czfs_dir_iterate(fs, CZFS_ROOT_INO, cookie,
						  collect_fn, &c), 0);
		if (c.count == before)
			break;
		ck_assert_uint_gt(c.last_next, cookie);
		cookie = c.last_next;
	} while (1);
	/* then every entry was seen exactly once */
	ck_assert_uint_eq(c.count, NFILES);
	for (unsigned n = 0; n < NFILES; n++)
		ck_assert_uint_eq(c.seen[n], 1);
	free(c.seen);
	free_fs(fs);
}
END_TEST

START_TEST(xattr_get_and_list)
{
	struct czfs_fs *fs = build_fs();
	char buf[64];

	ck_assert_int_eq(czfs_xattr_get(fs, 100 + 4321, "user.tag", buf, sizeof(buf)), 5);
	ck_assert_int_eq(memcmp(buf, "v4321", 5), 0);
	ck_assert_int_eq(czfs_xattr_get(fs, 100 + 4321, "user.tag", NULL, 0), 5);
	ck_assert_int_eq(czfs_xattr_get(fs, 100 + 4321, "user.tag", buf, 2), -ERANGE);
	ck_assert_int_eq(czfs_xattr_get(fs, 100 + 4321, "user.none", buf, 64), -ENODATA);
	ck_assert_int_eq(czfs_xattr_list(fs, 100 + 7, buf, sizeof(buf)), 9);
	ck_assert_str_eq(buf, "user.tag");
	ck_assert_int_eq(czfs_xattr_list(fs, 100 + 7, buf, 3), -ERANGE);
	ck_assert_int_eq(czfs_xattr_list(fs, CZFS_ROOT_INO, buf, sizeof(buf)), 0);
	free_fs(fs);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("meta");
	TCase *tc = tcase_create("items");
	TCase *tt = tcase_create("tree");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, inode_round_trip);
	tcase_add_test(tc, inode_attr_flags);
	tcase_add_loop_test(tc, inode_corruption_table, 0, 11);
	tcase_add_test(tc, dentry_records);
	tcase_add_test(tc, xattr_records);
	tcase_set_timeout(tt, 60);
	tcase_add_test(tt, lookup_reads_few_nodes_in_a_big_directory);
	tcase_add_test(tt, readdir_resumes_at_every_cookie);
	tcase_add_test(tt, xattr_get_and_list);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, tt);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
