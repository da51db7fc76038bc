// SPDX-License-Identifier: MIT
/*
 * Test helper: damage an image in one precise way, for the fsck tests.
 * Semantic damage (a wrong count, a lost inode, a leaked block) is made
 * through a transaction, so every checksum stays right and only the
 * meaning is wrong; byte damage inside an item is written in place with
 * the leaf's checksum recomputed.
 *
 *   czfs-corrupt IMAGE nlink PATH N        set PATH's link count
 *   czfs-corrupt IMAGE parent PATH INO     set directory PATH's parent
 *   czfs-corrupt IMAGE blocks PATH N       set PATH's blocks field
 *   czfs-corrupt IMAGE size PATH N         set PATH's size, its clusters kept
 *   czfs-corrupt IMAGE unlink PATH         drop PATH's entry: its inode is lost
 *   czfs-corrupt IMAGE orphan PATH         unlink PATH as if it were open
 *   czfs-corrupt IMAGE leak N              mark N free blocks used
 *   czfs-corrupt IMAGE unmark PATH IDX     mark cluster IDX's blocks free
 *   czfs-corrupt IMAGE inode-count DELTA   add DELTA to the checkpoint's count
 *   czfs-corrupt IMAGE prealloc-count N    the checkpoint promises N more
 *                                          blocks than its clusters do
 *   czfs-corrupt IMAGE reserve PATH FIRST END  no damage: the holes of
 *        clusters [FIRST, END) of PATH become RESERVED, as fallocate does
 *        (room not checked; for the fuzzer's seeds)
 *   czfs-corrupt IMAGE blockmap PATH IDX   no damage: RAW cluster IDX of
 *        PATH becomes a BLOCKMAP keeping its blocks, as a writeback of a
 *        hot cluster leaves it (for the fuzzer's seeds and fsck's tests)
 *   czfs-corrupt IMAGE pack-refs PATH IDX N  the pack (or run) cluster IDX
 *        of PATH points into counts N references
 *   czfs-corrupt IMAGE pack-drop PATH IDX  delete that pack's (or run's)
 *        PACK item
 *   czfs-corrupt IMAGE run-live PATH IDX N  the run the slice IDX of PATH
 *        lies in counts N live bytes (prints "blkaddr live")
 *   czfs-corrupt IMAGE used-count DELTA    a checkpoint with a wrong used count
 *   czfs-corrupt IMAGE commit              an empty transaction
 *   czfs-corrupt IMAGE covered PATH        no damage: PATH's inode stored
 *        again by a one-flush (COVERED) checkpoint, as a mount's fsync
 *   czfs-corrupt IMAGE tear                the newest checkpoint's first
 *        covered block zeroed: a one-flush commit a crash cut
 *   czfs-corrupt IMAGE poke PATH KIND ARG BYTE VALUE
 *        set byte BYTE of an item of PATH to VALUE: KIND inode (ARG -),
 *        xattr (ARG the name), dentry (PATH a directory, ARG the entry
 *        name), cluster (ARG the index)
 *   czfs-corrupt IMAGE sb-byte BYTE VALUE  a superblock byte, checksum fixed
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bdev.h"
#include "btree.h"
#include "btree_int.h"
#include "cluster.h"
#include "compress.h"
#include "crc32c.h"
#include "dir.h"
#include "fs.h"
#include "hash.h"
#include "inode.h"
#include "log.h"
#include "pack.h"
#include "super.h"
#include "util.h"

struct cmd {
	struct czfs_fs *fs;
	char **argv;
	int argc;
};

static uint64_t num(const char *s)
{
	return strtoull(s, NULL, 0);
}

/* PATH's inode number, and its directory and last name if asked. */
static int walk(struct czfs_fs *fs, const char *path, uint64_t *ino,
		uint64_t *dir, char *last)
{
	char buf[4096], *save, *name;
	unsigned type;
	int err = 0;

	snprintf(buf, sizeof(buf), "%s", path);
	*ino = CZFS_ROOT_INO;
	for (name = strtok_r(buf, "/", &save); name && !err;
	     name = strtok_r(NULL, "/", &save)) {
		if (dir)
			*dir = *ino;
		if (last)
			snprintf(last, CZFS_NAME_MAX + 1, "%s", name);
		err = czfs_dir_lookup(fs, *ino, name, strlen(name), ino, &type);
	}
	return err;
}

static int put_inode(struct czfs_fs *fs, const struct czfs_inode_info *ii)
{
	struct czfs_key key = { ii->ino, CZFS_ITEM_INODE, 0 };
	struct czfs_inode di;

	czfs_inode_encode(ii, &di);
	return czfs_btree_update(&fs->tree, &key, &di, sizeof(di));
}

/* ---- transactions -------------------------------------------------------- */

/* The inode of the PATH argument (argv[3]). */
static int path_inode(struct cmd *c, struct czfs_inode_info *ii)
{
	uint64_t ino;
	int err = walk(c->fs, c->argv[3], &ino, NULL, NULL);

	return err ?: czfs_inode_read(&c->fs->tree, ino, ii);
}

static int set_field(struct cmd *c)
{
	struct czfs_inode_info ii;
	uint64_t v = num(c->argv[4]);
	int err = path_inode(c, &ii);

	if (err)
		return err;
	if (!strcmp(c->argv[2], "nlink"))
		ii.nlink = (uint32_t)v;
	else if (!strcmp(c->argv[2], "parent"))
		ii.parent = v;
	else if (!strcmp(c->argv[2], "size"))
		ii.size = v;
	else
		ii.blocks = v;
	return put_inode(c->fs, &ii);
}

static int cover_inode(struct cmd *c)
{
	struct czfs_inode_info ii;
	int err = path_inode(c, &ii);

	c->fs->cover_blocks = 1024;	/* as czfs-fuse, mounted */
	c->fs->cp.flags &= ~CZFS_CP_CLEAN_UMOUNT;
	return err ?: put_inode(c->fs, &ii);
}

static int reserve(struct cmd *c)
{
	struct czfs_stored delta = { 0 };
	struct czfs_inode_info ii;
	int err = path_inode(c, &ii);

	if (!err)
		err = czfs_clusters_reserve(c->fs, ii.ino, num(c->argv[4]),
					    num(c->argv[5]),
					    1u << ii.cluster_shift, &delta);
	if (err)
		return err;
	czfs_inode_add_stored(&ii, &delta);
	return put_inode(c->fs, &ii);
}

static int blockmap(struct cmd *c)
{
	uint8_t inl[CZFS_INLINE_MAX], map[CZFS_INLINE_MAX], blk[CZFS_BLOCK_SIZE];
	struct czfs_stored delta = { 0 };
	struct czfs_cluster_info ci, bm;
	struct czfs_inode_info ii;
	int err = path_inode(c, &ii);

	if (!err)
		err = czfs_cluster_lookup(c->fs, &ii, num(c->argv[4]), 1, &ci, inl);
	if (!err && ci.kind != CZFS_CLUSTER_RAW)
		err = -EINVAL;
	bm = (struct czfs_cluster_info){ .kind = CZFS_CLUSTER_BLOCKMAP,
					 .nblocks = ci.nblocks, .ulen = ci.ulen,
					 .inline_data = map,
					 .inline_len = ci.nblocks *
					 (unsigned)sizeof(struct czfs_cluster_block) };
	for (unsigned i = 0; !err && i < ci.nblocks; i++) {
		err = czfs_bdev_read(c->fs->bdev, blk, sizeof(blk),
				     (ci.blkaddr + i) * CZFS_BLOCK_SIZE);
		czfs_blockmap_set(map, i, ci.blkaddr + i,
				  czfs_crc32c(0, blk, sizeof(blk)));
	}
	if (!err)
		err = czfs_cluster_set(c->fs, ii.ino, num(c->argv[4]), &bm, &delta);
	if (err)
		return err;
	czfs_inode_add_stored(&ii, &delta);
	return put_inode(c->fs, &ii);
}

/* Remove the entry name from dir (and count it out of nentries). */
static int drop_entry(struct czfs_fs *fs, uint64_t dir, const char *name)
{
	struct czfs_key key = { dir, CZFS_ITEM_DENTRY,
				czfs_name_hash(fs->sb.hash_seed, name, strlen(name)) };
	uint8_t val[CZFS_MAX_ITEM_SIZE], out[CZFS_MAX_ITEM_SIZE];
	struct czfs_inode_info di;
	struct czfs_dirent de;
	unsigned pos = 0, len = 0;
	int size = czfs_btree_lookup(&fs->tree, &key, val, sizeof(val)), err;

	if (size < 0)
		return size;
	while (czfs_dentry_next(val, (unsigned)size, &pos, &de) > 0)
		if (de.name_len != strlen(name) || memcmp(de.name, name, de.name_len))
			len += czfs_dentry_encode(out + len, de.ino, de.type,
						  de.name, de.name_len);
	err = len ? czfs_btree_update(&fs->tree, &key, out, len) :
		    czfs_btree_delete(&fs->tree, &key);
	if (!err)
		err = czfs_inode_read(&fs->tree, dir, &di);
	if (err)
		return err;
	di.nentries--;
	di.size--;
	return put_inode(fs, &di);
}

static int unlink_path(struct cmd *c, bool orphan)
{
	struct czfs_key okey = { CZFS_ORPHAN_OBJECTID, CZFS_ITEM_ORPHAN, 0 };
	char name[CZFS_NAME_MAX + 1];
	struct czfs_inode_info ii;
	uint64_t ino, dir;
	int err = walk(c->fs, c->argv[3], &ino, &dir, name);

	if (!err)
		err = drop_entry(c->fs, dir, name);
	if (err || !orphan)
		return err;
	err = czfs_inode_read(&c->fs->tree, ino, &ii);
	if (err)
		return err;
	ii.nlink = 0;
	okey.offset = ino;
	err = put_inode(c->fs, &ii);
	return err ? err : czfs_btree_insert(&c->fs->tree, &okey, NULL, 0);
}

static int leak(struct cmd *c)
{
	uint64_t addr;
	int err = czfs_smap_alloc(&c->fs->smap, num(c->argv[3]), &addr);

	if (!err)
		printf("%llu\n", (unsigned long long)addr);
	return err;
}

static int unmark(struct cmd *c)
{
	uint8_t inl[CZFS_INLINE_MAX];
	struct czfs_cluster_info ci;
	struct czfs_inode_info ii;
	int err = path_inode(c, &ii);

	if (!err)
		err = czfs_cluster_lookup(c->fs, &ii, num(c->argv[4]), 1, &ci, inl);
	if (!err && !ci.nblocks)
		err = -EINVAL;
	if (!err) {
		czfs_smap_free(&c->fs->smap, ci.blkaddr, ci.nblocks);
		printf("%llu %u\n", (unsigned long long)ci.blkaddr, ci.nblocks);
	}
	return err;
}

/* The PACK item of the pack or run cluster argv[4] of argv[3] points into. */
static int pack_item(struct cmd *c, struct czfs_key *key,
		     struct czfs_pack_info *pi)
{
	uint8_t inl[CZFS_INLINE_MAX], val[sizeof(struct czfs_pack)];
	struct czfs_cluster_info ci;
	struct czfs_inode_info ii;
	int err = path_inode(c, &ii), n;
	uint64_t at;

	if (!err)
		err = czfs_cluster_lookup(c->fs, &ii, num(c->argv[4]), 1, &ci, inl);
	if (!err && !czfs_cluster_is_shared(ci.kind))
		err = -EINVAL;
	if (err)
		return err;
	at = ci.kind == CZFS_CLUSTER_SLICE ? ci.run : czfs_cluster_pack_key(&ci);
	*key = (struct czfs_key){ CZFS_PACK_OBJECTID, CZFS_ITEM_PACK, at };
	n = czfs_btree_lookup(&c->fs->tree, key, val, sizeof(val));
	if (n < 0)
		return n;
	return czfs_pack_item_decode(at, val, (unsigned)n,
				     c->fs->cp.max_blocks, pi);
}

static int run_live(struct cmd *c)
{
	uint8_t val[sizeof(struct czfs_pack)];
	struct czfs_pack_info pi;
	struct czfs_key key;
	int err = pack_item(c, &key, &pi);

	if (!err && !pi.run)
		err = -EINVAL;
	if (err)
		return err;
	printf("%llu %u\n", (unsigned long long)pi.blkaddr, pi.live);
	pi.live = (uint32_t)num(c->argv[5]);
	return czfs_btree_update(&c->fs->tree, &key, val,
				 czfs_pack_item_encode(&pi, val));
}

static int pack_change(struct cmd *c, bool drop)
{
	uint8_t val[sizeof(struct czfs_pack)];
	struct czfs_pack_info pi;
	struct czfs_key key;
	int err = pack_item(c, &key, &pi);

	if (err)
		return err;
	printf("%llu %u\n", (unsigned long long)pi.blkaddr, pi.refs);
	if (drop)
		return czfs_btree_delete(&c->fs->tree, &key);
	pi.refs = (uint32_t)num(c->argv[5]);
	return czfs_btree_update(&c->fs->tree, &key, val,
				 czfs_pack_item_encode(&pi, val));
}

static int transaction(struct cmd *c)
{
	const char *op = c->argv[2];
	int err;

	pthread_rwlock_wrlock(&c->fs->lock);
	err = czfs_fs_begin(c->fs);
	if (err)
		goto out;
	if (!strcmp(op, "nlink") || !strcmp(op, "parent") || !strcmp(op, "blocks") ||
	    !strcmp(op, "size"))
		err = c->argc > 4 ? set_field(c) : -EINVAL;
	else if (!strcmp(op, "unlink") || !strcmp(op, "orphan"))
		err = c->argc > 3 ? unlink_path(c, op[0] == 'o') : -EINVAL;
	else if (!strcmp(op, "leak"))
		err = c->argc > 3 ? leak(c) : -EINVAL;
	else if (!strcmp(op, "unmark"))
		err = c->argc > 4 ? unmark(c) : -EINVAL;
	else if (!strcmp(op, "pack-refs"))
		err = c->argc > 5 ? pack_change(c, false) : -EINVAL;
	else if (!strcmp(op, "pack-drop"))
		err = c->argc > 4 ? pack_change(c, true) : -EINVAL;
	else if (!strcmp(op, "run-live"))
		err = c->argc > 5 ? run_live(c) : -EINVAL;
	else if (!strcmp(op, "reserve"))
		err = c->argc > 5 ? reserve(c) : -EINVAL;
	else if (!strcmp(op, "blockmap"))
		err = c->argc > 4 ? blockmap(c) : -EINVAL;
	else if (!strcmp(op, "covered"))
		err = c->argc > 3 ? cover_inode(c) : -EINVAL;
	else if (!strcmp(op, "inode-count"))
		c->fs->cp.inode_count += c->argc > 3 ? num(c->argv[3]) : 1;
	else if (!strcmp(op, "prealloc-count"))
		czfs_smap_prealloc_add(&c->fs->smap, c->argc > 3 ?
				       (int64_t)num(c->argv[3]) : 1);
	else if (strcmp(op, "commit"))
		err = -EINVAL;
	if (!err)
		err = czfs_fs_commit(c->fs);
out:
	pthread_rwlock_unlock(&c->fs->lock);
	return err;
}

/* ---- raw changes ----------------------------------------------------------- */


static int rw_blocks(const char *image, uint64_t blk, unsigned count,
		     void *buf, bool write)
{
	size_t len = (size_t)count * CZFS_BLOCK_SIZE;
	int fd = open(image, O_RDWR), err = 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write ? pwrite(fd, buf, len, (off_t)blk * CZFS_BLOCK_SIZE) :
		    pread(fd, buf, len, (off_t)blk * CZFS_BLOCK_SIZE);
	if (n != (ssize_t)len)
		err = n < 0 ? -errno : -EIO;
	close(fd);
	return err;
}

static int rw_block(const char *image, uint64_t blk, void *buf, bool write)
{
	return rw_blocks(image, blk, 1, buf, write);
}

/*
 * Byte at of a leaf in a leaf pack: the pack decoded, the leaf changed and
 * sealed again, the pack encoded again into the same number of blocks
 * (trying the levels until one fits exactly).
 */
static int poke_packed(const char *image, uint64_t ptr, unsigned at, uint8_t v)
{
	unsigned nb = czfs_leafpack_nblocks(ptr), n = 0;
	uint64_t base = czfs_leafpack_base(ptr);
	size_t cap = CZFS_LEAFPACK_MAX * CZFS_BLOCK_SIZE;
	uint8_t *raw = malloc(cap), *leaves = malloc(cap), *out = malloc(cap);
	struct czfs_codec *codec = czfs_codec_new();
	struct czfs_leafpack h;
	int err = raw && leaves && out && codec ? 0 : -ENOMEM, got = 0;

	if (!err)
		err = rw_blocks(image, base, nb, raw, false);
	if (!err)
		err = czfs_leafpack_decode(raw, ptr, codec, leaves, &n);
	if (!err) {
		uint8_t *leaf = leaves + (size_t)czfs_leafpack_index(ptr) * CZFS_BLOCK_SIZE;

		memcpy(&h, raw, sizeof(h));
		leaf[at] = v;
		czfs_node_seal(leaf);
		for (int level = 0; level <= 19 && got != (int)nb; level++)
			got = czfs_leafpack_encode(codec, h.alg, level, leaves, n,
						   le64_to_cpu(h.generation), out);
		err = got == (int)nb ? 0 : -ENOSPC;
	}
	if (!err) {
		czfs_leafpack_seal(out, base);
		err = rw_blocks(image, base, nb, out, true);
	}
	czfs_codec_free(codec);
	free(raw);
	free(leaves);
	free(out);
	return err;
}

/* Zero the first block the newest (COVERED) checkpoint names. */
static int tear(struct cmd *c, const char *image)
{
	uint8_t zero[CZFS_BLOCK_SIZE] = { 0 };
	const struct czfs_cp_info *cp = &c->fs->cp;

	if (!(cp->flags & CZFS_CP_COVERED)) {
		fprintf(stderr, "czfs-corrupt: the newest checkpoint is not covered\n");
		return -EINVAL;
	}
	return rw_block(image, CZFS_CP_EXTENT_ADDR(cp->covered[0]), zero, true);
}

/* Where the item of PATH named by KIND ARG lives: block and byte offset. */
static int find_item(struct cmd *c, uint64_t *blk, unsigned *off,
		     unsigned *size)
{
	const char *kind = c->argv[4], *arg = c->argv[5];
	struct czfs_btree_path path = { 0 };
	struct czfs_key key = { 0 }, found;
	const void *data;
	uint64_t ino;
	int err = walk(c->fs, c->argv[3], &ino, NULL, NULL);

	key.objectid = ino;
	if (!strcmp(kind, "inode")) {
		key.type = CZFS_ITEM_INODE;
	} else if (!strcmp(kind, "cluster")) {
		key.type = CZFS_ITEM_CLUSTER;
		key.offset = num(arg);
	} else if (!strcmp(kind, "xattr") || !strcmp(kind, "dentry")) {
		key.type = kind[0] == 'x' ? CZFS_ITEM_XATTR : CZFS_ITEM_DENTRY;
		key.offset = czfs_name_hash(c->fs->sb.hash_seed, arg, strlen(arg));
	} else {
		err = -EINVAL;
	}
	if (!err && czfs_btree_search(&c->fs->tree, &key, &path) != 0)
		err = -ENOENT;
	if (!err) {
		czfs_btree_item(&path, &found, &data, size);
		*blk = path.nodes[0]->blkaddr;
		*off = (unsigned)((const uint8_t *)data - path.nodes[0]->data);
	}
	czfs_btree_path_release(&c->fs->tree, &path);
	return err;
}

static int poke(struct cmd *c, const char *image)
{
	uint8_t blk[CZFS_BLOCK_SIZE];
	unsigned off, size, byte = (unsigned)num(c->argv[6]);
	uint64_t addr;
	int err = find_item(c, &addr, &off, &size);

	czfs_fs_close(c->fs);
	c->fs = NULL;
	if (!err && byte >= size)
		err = -ERANGE;
	if (!err && czfs_leafpack_is(addr)) {
		printf("%llu %u\n", (unsigned long long)czfs_leafpack_base(addr),
		       off + byte);
		return poke_packed(image, addr, off + byte, (uint8_t)num(c->argv[7]));
	}
	if (!err)
		err = rw_block(image, addr, blk, false);
	if (err)
		return err;
	blk[off + byte] = (uint8_t)num(c->argv[7]);
	czfs_node_seal(blk);
	printf("%llu %u\n", (unsigned long long)addr, off + byte);
	return rw_block(image, addr, blk, true);
}

static int sb_byte(const char *image, unsigned byte, uint8_t v)
{
	uint8_t blk[CZFS_BLOCK_SIZE];
	struct czfs_super_block sb;
	int err = byte < sizeof(sb) ? rw_block(image, 0, blk, false) : -ERANGE;

	if (err)
		return err;
	blk[byte] = v;
	memcpy(&sb, blk, sizeof(sb));
	sb.checksum = 0;
	sb.checksum = cpu_to_le32(czfs_crc32c(0, &sb, sizeof(sb)));
	memcpy(blk, &sb, sizeof(sb));
	return rw_block(image, 0, blk, true);
}

/* A checkpoint like the current one, but counting delta more blocks. */
static int used_count(struct cmd *c)
{
	struct czfs_cp_info cp = c->fs->cp;

	cp.generation++;
	cp.used_blocks += num(c->argv[3]);
	return czfs_cp_write(c->fs->bdev, &c->fs->sb, &cp);
}

int main(int argc, char **argv)
{
	/* SOURCE_DATE_EPOCH: checkpoints of that time, the same image twice */
	const char *epoch = getenv("SOURCE_DATE_EPOCH");
	struct czfs_fs_opts o = { .flags = CZFS_OPEN_RDONLY | CZFS_OPEN_NOSMAP };
	struct czfs_fs_opts rw = { .fixed_time = epoch ? atoll(epoch) : 0 };
	struct cmd c = { .argv = argv, .argc = argc };
	const char *op = argc > 2 ? argv[2] : "";
	bool raw = !strcmp(op, "poke") || !strcmp(op, "used-count") ||
		   !strcmp(op, "tear");
	int err;

	if (argc < 3) {
		fprintf(stderr, "usage: czfs-corrupt IMAGE OP ARGS... (see the source)\n");
		return 2;
	}
	czfs_log_set_sink(czfs_log_stderr, CZFS_LOG_WARN);
	if (!strcmp(op, "sb-byte"))
		err = argc > 4 ? sb_byte(argv[1], (unsigned)num(argv[3]),
					 (uint8_t)num(argv[4])) : -EINVAL;
	else if (!strcmp(op, "used-count") && argc > 3)
		err = czfs_fs_open(argv[1], &rw, &c.fs) ?: used_count(&c);
	else if (!strcmp(op, "tear"))
		err = czfs_fs_open(argv[1], &o, &c.fs) ?: tear(&c, argv[1]);
	else if (raw && argc > 7)
		err = czfs_fs_open(argv[1], &o, &c.fs) ?: poke(&c, argv[1]);
	else if (raw)
		err = -EINVAL;
	else
		err = czfs_fs_open(argv[1], &rw, &c.fs) ?: transaction(&c);
	if (err)
		fprintf(stderr, "czfs-corrupt: %s: %s\n", op, strerror(-err));
	czfs_fs_close(c.fs);
	return err ? 1 : 0;
}
