// SPDX-License-Identifier: MIT
/* The on-disk range cache of remote images (see rcache.h). */
#include "config.h"

#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "crc32c.h"
#include "rcache.h"
#include "util.h"

/* One chunk file of dir, for the LRU. */
struct entry {
	char *name;			/* "KEY/OFFSET" below dir */
	uint64_t bytes;
	uint64_t used;			/* the use time, ns */
	uint64_t stamped;		/* the mtime last given the file, ns */
};

/* A hit refreshes its file's mtime (the use time other mounts see) only
 * once it is this old, and the exact use time is written before dir is
 * read again and at close: a warm read hits each chunk several times a
 * second, a utimensat each (measured: 220 for 67 chunks). */
#define STAMP_NS	1000000000ull

struct czfs_rcache {
	int dirfd;			/* dir */
	char *key;
	uint64_t limit, total;
	uint64_t since_scan;		/* bytes stored since dir was read */
	pthread_mutex_t lock;		/* the entries */
	struct entry *e;
	size_t n, cap;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

void czfs_rcache_key(const uint8_t uuid[16], const char *identity,
		     uint64_t size, char *out, size_t cap)
{
	char id[40];
	size_t k = 0;

	/* A readable, safe part of the identity; its CRC tells apart two
	 * that differ only in the characters cut. */
	for (const char *p = identity; *p && k < sizeof(id) - 1; p++)
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '-')
			id[k++] = *p;
	id[k] = '\0';
	snprintf(out, cap, "%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x"
		 "%02x%02x%02x%02x-%s-%08x-%llx", uuid[0], uuid[1], uuid[2],
		 uuid[3], uuid[4], uuid[5], uuid[6], uuid[7], uuid[8], uuid[9],
		 uuid[10], uuid[11], uuid[12], uuid[13], uuid[14], uuid[15], id,
		 czfs_crc32c(0, identity, strlen(identity)),
		 (unsigned long long)size);
}

static int add_entry(struct czfs_rcache *rc, const char *name, uint64_t bytes,
		     uint64_t used)
{
	if (CZFS_GROW(rc->e, rc->n, rc->cap, 256))
		return -ENOMEM;
	rc->e[rc->n].name = strdup(name);
	if (!rc->e[rc->n].name)
		return -ENOMEM;
	rc->e[rc->n].bytes = bytes;
	rc->e[rc->n].used = used;
	rc->e[rc->n].stamped = used;
	rc->n++;
	rc->total += bytes;
	return 0;
}

/* The chunks of one key directory of dir, into the LRU. */
static int scan_key(struct czfs_rcache *rc, const char *key)
{
	int fd = openat(rc->dirfd, key, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	DIR *d;
	int err = 0;

	if (fd < 0)
		return 0;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	while (!err && (de = readdir(d))) {
		char name[512];
		struct stat st;

		/* another writer's chunk in the making (write_chunk) */
		if (de->d_name[0] == '.' || strstr(de->d_name, ".tmp") ||
		    fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		snprintf(name, sizeof(name), "%s/%s", key, de->d_name);
		err = add_entry(rc, name, (uint64_t)st.st_size,
				(uint64_t)st.st_mtim.tv_sec * 1000000000 +
				(uint64_t)st.st_mtim.tv_nsec);
	}
	closedir(d);
	return err;
}

static int scan(struct czfs_rcache *rc)
{
	int fd = dup(rc->dirfd);
	struct dirent *de;
	DIR *d;
	int err = 0;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	rewinddir(d);		/* the dup shares dirfd's offset: the last scan's end */
	while (!err && (de = readdir(d)))
		if (de->d_name[0] != '.')
			err = scan_key(rc, de->d_name);
	closedir(d);
	return err;
}

/* Give the files of the entries hit since their mtime was last set that
 * use time, which touch left unwritten. Lock held. */
static void stamp_locked(struct czfs_rcache *rc)
{
	for (size_t i = 0; i < rc->n; i++) {
		struct entry *e = &rc->e[i];
		struct timespec ts[2];

		if (e->used <= e->stamped)
			continue;
		ts[0].tv_sec = (time_t)(e->used / 1000000000);
		ts[0].tv_nsec = (long)(e->used % 1000000000);
		ts[1] = ts[0];
		utimensat(rc->dirfd, e->name, ts, 0);
		e->stamped = e->used;
	}
}

/* Forget the entries and read dir again (the use times kept in the
 * files first). Lock held. */
static void rescan_locked(struct czfs_rcache *rc)
{
	stamp_locked(rc);
	for (size_t i = 0; i < rc->n; i++)
		free(rc->e[i].name);
	rc->n = 0;
	rc->total = 0;
	rc->since_scan = 0;
	scan(rc);		/* a failure leaves fewer entries: evicts less */
}

/* Remove the least recently used entries until dir fits. Lock held. */
static void evict(struct czfs_rcache *rc)
{
	while (rc->total > rc->limit && rc->n) {
		size_t old = 0;

		for (size_t i = 1; i < rc->n; i++)
			if (rc->e[i].used < rc->e[old].used)
				old = i;
		unlinkat(rc->dirfd, rc->e[old].name, 0);
		rc->total -= rc->e[old].bytes;
		free(rc->e[old].name);
		rc->e[old] = rc->e[--rc->n];
	}
}

int czfs_rcache_open(const char *dir, uint64_t limit, const char *key,
		     struct czfs_rcache **out)
{
	struct czfs_rcache *rc;
	int err = 0;

	if (!*key || strchr(key, '/') || key[0] == '.')
		return -EINVAL;
	rc = calloc(1, sizeof(*rc));
	if (!rc)
		return -ENOMEM;
	pthread_mutex_init(&rc->lock, NULL);
	rc->limit = limit;
	rc->dirfd = -1;
	if (mkdir(dir, 0700) && errno != EEXIST)
		err = -errno;
	if (!err && (rc->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		err = -errno;
	if (!err && mkdirat(rc->dirfd, key, 0700) && errno != EEXIST)
		err = -errno;
	if (!err && !(rc->key = strdup(key)))
		err = -ENOMEM;
	if (!err)
		err = scan(rc);
	if (err) {
		czfs_rcache_close(rc);
		return err;
	}
	pthread_mutex_lock(&rc->lock);
	evict(rc);		/* a smaller limit than last time */
	pthread_mutex_unlock(&rc->lock);
	*out = rc;
	return 0;
}

static void chunk_name(const struct czfs_rcache *rc, uint64_t off, char *out,
		       size_t cap)
{
	snprintf(out, cap, "%s/%012llx", rc->key, (unsigned long long)off);
}

/* A hit is a use: the entry says when, and the file's mtime within
 * STAMP_NS. */
static void touch(struct czfs_rcache *rc, const char *name)
{
	uint64_t t = now_ns();
	bool stamp = true;

	pthread_mutex_lock(&rc->lock);
	for (size_t i = 0; i < rc->n; i++)
		if (!strcmp(rc->e[i].name, name)) {
			rc->e[i].used = t;
			stamp = t - rc->e[i].stamped >= STAMP_NS;
			if (stamp)
				rc->e[i].stamped = t;
			break;
		}
	pthread_mutex_unlock(&rc->lock);
	if (stamp)
		utimensat(rc->dirfd, name, NULL, 0);
}

/* Take name's entry out of the LRU (the file stays). Lock held. */
static void drop_locked(struct czfs_rcache *rc, const char *name)
{
	for (size_t i = 0; i < rc->n; i++)
		if (!strcmp(rc->e[i].name, name)) {
			rc->total -= rc->e[i].bytes;
			free(rc->e[i].name);
			rc->e[i] = rc->e[--rc->n];
			break;
		}
}

static void forget(struct czfs_rcache *rc, const char *name)
{
	pthread_mutex_lock(&rc->lock);
	unlinkat(rc->dirfd, name, 0);
	drop_locked(rc, name);
	pthread_mutex_unlock(&rc->lock);
}

/* crc32c of the len bytes an iovec holds */
static uint32_t iov_crc(const struct iovec *iov, int cnt)
{
	uint32_t crc = 0;

	for (int i = 0; i < cnt; i++)
		crc = czfs_crc32c(crc, iov[i].iov_base, iov[i].iov_len);
	return crc;
}

static size_t iov_len(const struct iovec *iov, int cnt)
{
	size_t len = 0;

	for (int i = 0; i < cnt; i++)
		len += iov[i].iov_len;
	return len;
}

/* A chunk file into the cnt pieces of all and its CRC into all[cnt]
 * (which has room for one byte more: a longer file reads len + 5), in
 * one read where the pieces allow: the bytes read. */
static ssize_t read_tail(int fd, const struct iovec *all, int cnt, size_t len)
{
	ssize_t n;

	if (cnt < IOV_MAX)
		return preadv(fd, all, cnt + 1, 0);
	n = preadv(fd, all, cnt, 0);
	if (n == (ssize_t)len)
		n += MAX(pread(fd, all[cnt].iov_base, all[cnt].iov_len,
			       (off_t)len), 0);
	return n;
}

int czfs_rcache_getv(struct czfs_rcache *rc, uint64_t off,
		     const struct iovec *iov, int cnt)
{
	struct iovec few[17], *all = few;	/* a malloc only past 16 pieces */
	size_t len = iov_len(iov, cnt);
	char name[512];
	uint8_t tail[5];
	uint32_t crc;
	bool hit = false;
	int fd;

	if ((size_t)cnt >= ARRAY_SIZE(few) &&
	    !(all = malloc(((size_t)cnt + 1) * sizeof(*all))))
		return -ENOMEM;
	chunk_name(rc, off, name, sizeof(name));
	/* the bytes and the CRC after them in one read */
	memcpy(all, iov, (size_t)cnt * sizeof(*all));
	all[cnt] = (struct iovec){ tail, sizeof(tail) };
	fd = openat(rc->dirfd, name, O_RDONLY | O_CLOEXEC);
	/* exactly len bytes and the CRC: a longer or shorter file is not it */
	if (fd >= 0 && read_tail(fd, all, cnt, len) == (ssize_t)len + 4) {
		memcpy(&crc, tail, 4);
		hit = le32toh(crc) == iov_crc(iov, cnt);
	}
	if (all != few)
		free(all);
	if (fd < 0)
		return -ENOENT;
	close(fd);
	if (hit)
		touch(rc, name);
	else
		forget(rc, name);
	return hit ? 0 : -ENOENT;
}

int czfs_rcache_get(struct czfs_rcache *rc, uint64_t off, void *buf,
		    size_t len)
{
	struct iovec iov = { buf, len };

	return czfs_rcache_getv(rc, off, &iov, 1);
}

void czfs_rcache_willneed(struct czfs_rcache *rc, uint64_t off)
{
	char name[512];
	int fd;

	chunk_name(rc, off, name, sizeof(name));
	fd = openat(rc->dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
		close(fd);
	}
}

int czfs_rcache_has(struct czfs_rcache *rc, uint64_t off)
{
	char name[512];

	chunk_name(rc, off, name, sizeof(name));
	return faccessat(rc->dirfd, name, F_OK, 0) == 0;
}

/* Write the chunk file whole under a temporary name, then rename it in:
 * a crash or a full disk never leaves a cut chunk under the real name. */
static int write_chunk(struct czfs_rcache *rc, const char *name,
		       const struct iovec *iov, int cnt, size_t len)
{
	uint32_t crc = htole32(iov_crc(iov, cnt));
	char tmp[600];
	int fd, err = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp%d-%lx", name, (int)getpid(),
		 (unsigned long)pthread_self());
	fd = openat(rc->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (pwritev(fd, iov, cnt, 0) != (ssize_t)len ||
	    pwrite(fd, &crc, 4, (off_t)len) != 4)
		err = -EIO;
	if (close(fd) && !err)
		err = -errno;
	if (!err && renameat(rc->dirfd, tmp, rc->dirfd, name))
		err = -errno;
	if (err)
		unlinkat(rc->dirfd, tmp, 0);
	return err;
}

void czfs_rcache_putv(struct czfs_rcache *rc, uint64_t off,
		      const struct iovec *iov, int cnt)
{
	size_t len = iov_len(iov, cnt);
	char name[512];

	chunk_name(rc, off, name, sizeof(name));
	if (len + 4 > rc->limit || write_chunk(rc, name, iov, cnt, len))
		return;
	pthread_mutex_lock(&rc->lock);
	drop_locked(rc, name);		/* another thread stored it too */
	if (add_entry(rc, name, len + 4, now_ns()))
		unlinkat(rc->dirfd, name, 0);
	/* Other mounts may share dir: past an eighth of the limit stored
	 * since dir was last read, read it again, so that their chunks
	 * count too and the last one to store keeps dir under the limit. */
	rc->since_scan += len + 4;
	if (rc->since_scan > rc->limit / 8)
		rescan_locked(rc);
	evict(rc);
	pthread_mutex_unlock(&rc->lock);
}

void czfs_rcache_put(struct czfs_rcache *rc, uint64_t off, const void *buf,
		     size_t len)
{
	struct iovec iov = { (void *)buf, len };

	czfs_rcache_putv(rc, off, &iov, 1);
}

void czfs_rcache_close(struct czfs_rcache *rc)
{
	if (!rc)
		return;
	pthread_mutex_lock(&rc->lock);
	stamp_locked(rc);		/* for the next mounts' LRU */
	pthread_mutex_unlock(&rc->lock);
	for (size_t i = 0; i < rc->n; i++)
		free(rc->e[i].name);
	free(rc->e);
	free(rc->key);
	if (rc->dirfd >= 0)
		close(rc->dirfd);
	pthread_mutex_destroy(&rc->lock);
	free(rc);
}
