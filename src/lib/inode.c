// SPDX-License-Identifier: MIT
/* Inode items: decode with per-field validation, encode, read, stat. */
#include "config.h"

#include <dirent.h>
#include <sys/sysmacros.h>

#include "btree.h"
#include "inode.h"
#include "log.h"
#include "util.h"

static int inode_bad(uint64_t ino, const char *what)
{
	czfs_err("inode %llu: %s", (unsigned long long)ino, what);
	return -EFSCORRUPTED;
}

static int valid_type(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: case S_IFDIR: case S_IFLNK: case S_IFCHR:
	case S_IFBLK: case S_IFIFO: case S_IFSOCK:
		return 1;
	default:
		return 0;
	}
}

static void ts_decode(struct timespec *ts, __le64 sec, __le32 nsec)
{
	ts->tv_sec = (time_t)(int64_t)le64_to_cpu(sec);
	ts->tv_nsec = le32_to_cpu(nsec);
}

int czfs_inode_decode(const void *val, unsigned len, uint64_t ino,
		      struct czfs_inode_info *ii)
{
	struct czfs_inode di;

	if (len != sizeof(di))
		return inode_bad(ino, "bad item size");
	memcpy(&di, val, sizeof(di));
	ii->ino = ino;
	ii->mode = le32_to_cpu(di.mode);
	ii->nlink = le32_to_cpu(di.nlink);
	ii->uid = le32_to_cpu(di.uid);
	ii->gid = le32_to_cpu(di.gid);
	ii->size = le64_to_cpu(di.size);
	ii->blocks = le64_to_cpu(di.blocks);
	ts_decode(&ii->atime, di.atime, di.atime_nsec);
	ts_decode(&ii->mtime, di.mtime, di.mtime_nsec);
	ts_decode(&ii->ctime, di.ctime, di.ctime_nsec);
	ts_decode(&ii->btime, di.btime, di.btime_nsec);
	ii->rdev_major = le32_to_cpu(di.rdev_major);
	ii->rdev_minor = le32_to_cpu(di.rdev_minor);
	ii->parent = le64_to_cpu(di.parent);
	ii->generation = le64_to_cpu(di.generation);
	ii->flags = le32_to_cpu(di.flags);
	ii->alg = di.alg;
	ii->level = di.level;
	ii->cluster_shift = di.cluster_shift;
	ii->nentries = le64_to_cpu(di.nentries);
	ii->inline_bytes = le64_to_cpu(di.inline_bytes);
	ii->prealloc = le64_to_cpu(di.prealloc);

	if (!valid_type(ii->mode))
		return inode_bad(ino, "unknown file type");
	if (ii->atime.tv_nsec >= 1000000000 || ii->mtime.tv_nsec >= 1000000000 ||
	    ii->ctime.tv_nsec >= 1000000000 || ii->btime.tv_nsec >= 1000000000)
		return inode_bad(ino, "nanoseconds out of range");
	if (ii->cluster_shift > CZFS_MAX_CLUSTER_SHIFT)
		return inode_bad(ino, "bad cluster size");
	if (ii->alg > CZFS_ALG_MAX)
		return inode_bad(ino, "unknown compression algorithm");
	if (ii->flags & ~CZFS_INODE_FLAGS_KNOWN)
		return inode_bad(ino, "unknown flags");
	if (ii->size > CZFS_MAX_FILE_SIZE)
		return inode_bad(ino, "size too large");
	if (S_ISLNK(ii->mode) && (ii->size < 1 || ii->size > CZFS_SYMLINK_MAX))
		return inode_bad(ino, "bad symlink length");
	if (S_ISDIR(ii->mode) && (ii->parent < CZFS_ROOT_INO ||
				  ii->parent > CZFS_MAX_INO))
		return inode_bad(ino, "directory without a parent");
	return 0;
}

static void ts_encode(const struct timespec *ts, __le64 *sec, __le32 *nsec)
{
	*sec = cpu_to_le64((uint64_t)(int64_t)ts->tv_sec);
	*nsec = cpu_to_le32((uint32_t)ts->tv_nsec);
}

void czfs_inode_encode(const struct czfs_inode_info *ii, struct czfs_inode *di)
{
	memset(di, 0, sizeof(*di));
	di->mode = cpu_to_le32(ii->mode);
	di->nlink = cpu_to_le32(ii->nlink);
	di->uid = cpu_to_le32(ii->uid);
	di->gid = cpu_to_le32(ii->gid);
	di->size = cpu_to_le64(ii->size);
	di->blocks = cpu_to_le64(ii->blocks);
	ts_encode(&ii->atime, &di->atime, &di->atime_nsec);
	ts_encode(&ii->mtime, &di->mtime, &di->mtime_nsec);
	ts_encode(&ii->ctime, &di->ctime, &di->ctime_nsec);
	ts_encode(&ii->btime, &di->btime, &di->btime_nsec);
	di->rdev_major = cpu_to_le32(ii->rdev_major);
	di->rdev_minor = cpu_to_le32(ii->rdev_minor);
	di->parent = cpu_to_le64(ii->parent);
	di->generation = cpu_to_le64(ii->generation);
	di->flags = cpu_to_le32(ii->flags);
	di->alg = (uint8_t)ii->alg;
	di->level = (int8_t)ii->level;
	di->cluster_shift = (uint8_t)ii->cluster_shift;
	di->nentries = cpu_to_le64(ii->nentries);
	di->inline_bytes = cpu_to_le64(ii->inline_bytes);
	di->prealloc = cpu_to_le64(ii->prealloc);
}

int czfs_inode_read_near(struct czfs_btree *t, uint64_t ino,
			 struct czfs_inode_info *ii, struct czfs_btree_hint *h)
{
	struct czfs_key key = { ino, CZFS_ITEM_INODE, 0 };
	struct czfs_inode di;
	int len;

	if (ino < CZFS_ROOT_INO || ino > CZFS_MAX_INO)
		return -ENOENT;
	len = czfs_btree_lookup_near(t, &key, &di, sizeof(di), h);
	if (len < 0)
		return len;
	return czfs_inode_decode(&di, (unsigned)len, ino, ii);
}

int czfs_inode_read(struct czfs_btree *t, uint64_t ino,
		    struct czfs_inode_info *ii)
{
	return czfs_inode_read_near(t, ino, ii, NULL);
}

blkcnt_t czfs_inode_stat_blocks(const struct czfs_inode_info *ii)
{
	return (blkcnt_t)((ii->blocks + ii->prealloc) * (CZFS_BLOCK_SIZE / 512) +
			  DIV_ROUND_UP(ii->inline_bytes, 512));
}

void czfs_inode_to_stat(const struct czfs_inode_info *ii, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ii->ino;
	st->st_mode = ii->mode;
	st->st_nlink = ii->nlink;
	st->st_uid = ii->uid;
	st->st_gid = ii->gid;
	st->st_rdev = makedev(ii->rdev_major, ii->rdev_minor);
	st->st_size = (off_t)ii->size;
	st->st_blksize = CZFS_BLOCK_SIZE;
	st->st_blocks = czfs_inode_stat_blocks(ii);
	st->st_atim = ii->atime;
	st->st_mtim = ii->mtime;
	st->st_ctim = ii->ctime;
}

static uint64_t add_clamped(uint64_t v, int64_t d)
{
	if (d < 0 && (uint64_t)-d > v)
		return 0;
	return v + (uint64_t)d;
}

void czfs_inode_add_stored(struct czfs_inode_info *ii,
			   const struct czfs_stored *d)
{
	ii->blocks = add_clamped(ii->blocks, d->blocks);
	ii->inline_bytes = add_clamped(ii->inline_bytes, d->inline_bytes);
	ii->prealloc = add_clamped(ii->prealloc, d->prealloc);
}

unsigned czfs_mode_to_dtype(uint32_t mode)
{
	return (mode & S_IFMT) >> 12;	/* DT_* == S_IFMT >> 12 on Linux */
}

const char *czfs_inode_type_name(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "regular file";
	case S_IFDIR: return "directory";
	case S_IFLNK: return "symlink";
	case S_IFCHR: return "character device";
	case S_IFBLK: return "block device";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "socket";
	default: return "unknown";
	}
}
