// SPDX-License-Identifier: MIT
/* czfs-fuse: mount a czfs image with libfuse3 (low-level API). */
#include "config.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <syslog.h>
#include <unistd.h>

#include "ccache.h"
#include "coldmap.h"
#include "compress.h"
#include "daemon.h"
#include "flusher.h"
#include "fs.h"
#include "log.h"
#include "killpriv.h"
#include "loop.h"
#include "minode.h"
#include "ops.h"
#include "packcache.h"
#include "pagepool.h"
#include "recompress.h"
#include "remote.h"
#include "remount.h"
#include "room.h"
#include "staging.h"
#include "stream.h"
#include "url.h"
#include "utab.h"
#include "util.h"

#define DEFAULT_CACHE_SIZE	(256ull << 20)
#define DEFAULT_READAHEAD	(4ull << 20)
#define DEFAULT_TREE_READAHEAD	(1ull << 20)
#define DEFAULT_MAX_REQUEST	(512u << 10)
#define REMOTE_MAX_REQUEST	(2u << 20)	/* measured: bench/remote, 2M best or
						 * level with 1M, 4M last */
#define MIN_CACHE_SIZE		(4ull << 20)
/* Checkpoints that bring up to 4 MiB into use are made with one flush:
 * a mount reads back that much at most to check the last one. */
#define COVER_BLOCKS		1024u
#define RO_TIMEOUT		86400.0	/* an image mounted ro never changes */
#define RW_TIMEOUT		1.0
#define DEFAULT_COMMIT		5	/* seconds between checkpoints */
/* A block-mapped cluster unwritten this long is compressed again: six
 * checkpoints, well past the bursts of a database's commits, and short
 * enough that a file written at random and left compresses again within
 * a minute.  Compressing too early costs one rewrite of the cluster (its
 * next partial write stores it block-mapped again): at most one per
 * cluster per interval. */
#define DEFAULT_RECOMPRESS	30

static const char usage_text[] =
"usage: czfs-fuse IMAGE MOUNTPOINT [options]\n"
"\n"
"Mount the czfs image IMAGE on MOUNTPOINT.  IMAGE may be a URL, http://,\n"
"https:// or s3://BUCKET/KEY: it is mounted read-only.\n"
"\n"
"czfs options:\n"
"    -o ro                  mount read-only (default: read-write)\n"
"    -o commit=SECONDS      checkpoint interval (default 5); fsync and unmount\n"
"                           checkpoint at once\n"
"    -o recompress=SECONDS  a cluster written in part, stored block by block,\n"
"                           is compressed again in the background once it\n"
"                           has not been written for SECONDS (default 30;\n"
"                           0: never)\n"
"    -o compress=ALG[:LEVEL]  compression of new files: lz4, lz4hc, zstd,\n"
"                           none (default: the image's)\n"
"    -o compress_extension=EXT, nocompress_extension=EXT  (repeatable) new\n"
"                           files named *.EXT always / never compressed\n"
"    -o noatime, relatime (default), strictatime  access time updates\n"
"    -o cache_size=SIZE     page pool for decompressed clusters (default 256M,\n"
"                           at least 4M)\n"
"    -o reserved_pages=N    pages reserved for decompression (default 0;\n"
"                           64 covers most bursts)\n"
"    -o reclaim=keep|punch  evicted clusters keep their memory in the pool\n"
"                           (default) or give it back (low-memory mode)\n"
"    -o workers=N           prefetch threads (default: online CPUs)\n"
"    -o sync_prefetch       no workers: a reader loads its prefetch window\n"
"                           itself before its reply (requests that do not\n"
"                           depend on scheduling, for tests)\n"
"    -o readahead=SIZE      largest prefetch window (default 4M)\n"
"    -o kernel_readahead=SIZE  readahead of the mount in the kernel: the size\n"
"                           of FUSE read requests (default 1M; 0: leave it)\n"
"    -o direct_io           read and write the image with O_DIRECT\n"
"    -o direct_reads        read data (reads of 128 KiB and more) with\n"
"                           O_DIRECT, not through the host's page cache\n"
"    -o map=vm_map_ram|vmap how the codecs see pool pages: per-thread cached\n"
"                           windows (default) or a fresh mapping each time\n"
"    -o map_scattered=bounce|slot  vm_map_ram: copy pages that are not one\n"
"                           run through a buffer (default, measured faster)\n"
"                           or map them into a slot of the window\n"
"    -o max_request=SIZE    largest read of the image (default 512k, 4M for\n"
"                           a URL)\n"
"    -o unaligned_requests  cut requests from each run's start, not at\n"
"                           max_request boundaries (for comparison)\n"
"    -o no_zero_detect      write all-zero clusters as data, not holes (to\n"
"                           measure decompression of zeros)\n"
"    -o opens=skip|send     read-only mounts: the kernel opens files and\n"
"                           directories without asking the daemon (skip, the\n"
"                           default: two requests fewer per file) or asks\n"
"                           at every open and close (send)\n"
"    -o tree_readahead=SIZE read-only mounts: after a small file is read\n"
"                           whole, store up to SIZE of the files that follow\n"
"                           it into the kernel's page cache (default 1M; 0:\n"
"                           off)\n"
"    -o discard, nodiscard  punch the blocks each checkpoint frees out of\n"
"                           IMAGE, giving them back to the host (default:\n"
"                           discard)\n"
"    -o pack, nopack        at writeback, put the data of small files (one\n"
"                           partial cluster) of many files into shared packs,\n"
"                           compressed together, as mkfs.czfs does (default:\n"
"                           pack)\n"
"    -o remote_timeout=SECONDS  a URL: time one request may take (default 30)\n"
"    -o remote_retries=N    a URL: tries after a failed request, with backoff\n"
"                           (default 3); then the read fails with EIO\n"
"    -o cafile=FILE         https: the CA certificates to trust (default: the\n"
"                           system's, or $CURL_CA_BUNDLE)\n"
"    -o cache_dir=DIR       a URL: keep fetched pieces in DIR, across mounts\n"
"                           (checked by CRC, keyed by the image's UUID and\n"
"                           the object's ETag or Last-Modified)\n"
"    -o cache_limit=SIZE    the size DIR is held under, least recently used\n"
"                           pieces evicted first (default 1G)\n"
"    -o s3_endpoint=URL     s3://: the store's address (default\n"
"                           $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL or AWS)\n"
"    -o s3_region=REGION    s3://: the signing region (default $AWS_REGION,\n"
"                           $AWS_DEFAULT_REGION or us-east-1)\n"
"    -o s3_style=path|virtual  s3://: ENDPOINT/BUCKET/KEY or BUCKET.HOST/KEY\n"
"                           (default: virtual on AWS, path elsewhere)\n"
"    -h, --help             this help\n"
"    -V, --version          print the version\n"
"\n";

enum { KEY_HELP, KEY_VERSION, KEY_RW, KEY_RO, KEY_COMPRESS, KEY_CACHE,
       KEY_READAHEAD, KEY_MAP,
       KEY_MAX_REQUEST, KEY_KERNEL_RA, KEY_SCATTERED, KEY_RECLAIM,
       KEY_NOATIME, KEY_RELATIME, KEY_STRICTATIME, KEY_COMPRESS_EXT,
       KEY_NOCOMPRESS_EXT, KEY_OPENS, KEY_TREE_RA, KEY_S3_STYLE,
       KEY_CACHE_LIMIT, KEY_COUNT };

#define CZFS_OPT(t, m) { t, offsetof(struct czfs_mount_opts, m), 1 }

static const struct fuse_opt czfs_opts[] = {
	CZFS_OPT("reserved_pages=%u", reserved_pages),
	CZFS_OPT("workers=%u", workers),
	CZFS_OPT("direct_io", direct_io),
	CZFS_OPT("direct_reads", direct_reads),
	FUSE_OPT_KEY("map_scattered=", KEY_SCATTERED),
	FUSE_OPT_KEY("reclaim=", KEY_RECLAIM),
	CZFS_OPT("unaligned_requests", unaligned),
	CZFS_OPT("sync_prefetch", sync_prefetch),
	CZFS_OPT("no_zero_detect", no_zero_detect),
	CZFS_OPT("nodiscard", nodiscard),
	CZFS_OPT("nopack", nopack),
	{ "pack", offsetof(struct czfs_mount_opts, nopack), 0 },
	FUSE_OPT_KEY("opens=", KEY_OPENS),
	FUSE_OPT_KEY("tree_readahead=", KEY_TREE_RA),
	{ "discard", offsetof(struct czfs_mount_opts, nodiscard), 0 },
	FUSE_OPT_KEY("map=", KEY_MAP),
	FUSE_OPT_KEY("max_request=", KEY_MAX_REQUEST),
	FUSE_OPT_KEY("cache_size=", KEY_CACHE),
	FUSE_OPT_KEY("readahead=", KEY_READAHEAD),
	FUSE_OPT_KEY("kernel_readahead=", KEY_KERNEL_RA),
	CZFS_OPT("commit=%u", commit),
	CZFS_OPT("recompress=%u", recompress),
	CZFS_OPT("remote_timeout=%u", remote.timeout),
	CZFS_OPT("remote_retries=%d", remote.retries),
	CZFS_OPT("cafile=%s", remote.cafile),
	CZFS_OPT("s3_endpoint=%s", remote.s3_endpoint),
	CZFS_OPT("s3_region=%s", remote.s3_region),
	FUSE_OPT_KEY("s3_style=", KEY_S3_STYLE),
	CZFS_OPT("cache_dir=%s", remote.cache_dir),
	FUSE_OPT_KEY("cache_limit=", KEY_CACHE_LIMIT),
	FUSE_OPT_KEY("compress=", KEY_COMPRESS),
	FUSE_OPT_KEY("compress_extension=", KEY_COMPRESS_EXT),
	FUSE_OPT_KEY("nocompress_extension=", KEY_NOCOMPRESS_EXT),
	FUSE_OPT_KEY("noatime", KEY_NOATIME),
	FUSE_OPT_KEY("relatime", KEY_RELATIME),
	FUSE_OPT_KEY("strictatime", KEY_STRICTATIME),
	FUSE_OPT_KEY("rw", KEY_RW),
	FUSE_OPT_KEY("ro", KEY_RO),
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION),
	FUSE_OPT_KEY("--version", KEY_VERSION),
	FUSE_OPT_END
};

/* "bad value" for the option arg, with what is allowed when hint is set. */
static int bad_value(const char *arg, const char *hint)
{
	if (hint)
		fprintf(stderr, "czfs-fuse: bad value in '%s' (%s)\n", arg, hint);
	else
		fprintf(stderr, "czfs-fuse: bad value in '%s'\n", arg);
	return -1;
}

static int parse_size_opt(const char *arg, uint64_t *out)
{
	const char *v = strchr(arg, '=') + 1;

	if (czfs_parse_size(v, out) || !*out)
		return bad_value(arg, NULL);
	return 0;
}

/* NAME=A or NAME=B: *is_b says which; anything else is refused. */
static int parse_choice(const char *arg, const char *a, const char *b,
			bool *is_b)
{
	const char *v = strchr(arg, '=') + 1;
	char hint[64];

	if (!strcmp(v, a) || !strcmp(v, b)) {
		*is_b = !strcmp(v, b);
		return 0;
	}
	snprintf(hint, sizeof(hint), "%s or %s", a, b);
	return bad_value(arg, hint);
}

/* compress_extension=EXT (repeatable): one more name suffix. */
static int add_extension(const char *arg, char **list, unsigned *n)
{
	const char *ext = strchr(arg, '=') + 1;
	char hint[64];

	if (!*ext || strlen(ext) > 32 || strchr(ext, '/') || *n == CZFS_MAX_EXTENSIONS) {
		snprintf(hint, sizeof(hint), "an extension, at most %d",
			 CZFS_MAX_EXTENSIONS);
		return bad_value(arg, hint);
	}
	list[(*n)++] = strdup(ext);
	return 0;
}

/*
 * One handler per option key (czfs_opts): returns 0 when the option is
 * taken, 1 when libfuse and the kernel should see it too, -1 when it is
 * refused (the message printed).
 */
typedef int opt_fn(struct czfs_mount_opts *o, const char *arg, int key);

/* The first argument that is no option is the image; the next one, the
 * mount point, is libfuse's. */
static int opt_image(struct czfs_mount_opts *o, const char *arg, int key)
{
	if (o->image)
		return 1;
	if (czfs_url_kind(arg) != CZFS_URL_NONE) {
		o->image = strdup(arg);
		o->image_shown = czfs_url_redact(arg);
		o->ro = true;		/* a URL is read-only */
		return o->image && o->image_shown ? 0 : -1;
	}
	o->image = realpath(arg, NULL);
	o->image_shown = o->image ? strdup(o->image) : NULL;
	if (!o->image) {
		fprintf(stderr, "czfs-fuse: %s: %s\n", arg, strerror(errno));
		return -1;
	}
	return 0;
}

static int opt_cache(struct czfs_mount_opts *o, const char *arg, int key)
{
	if (parse_size_opt(arg, &o->cache_size))
		return -1;
	return o->cache_size >= MIN_CACHE_SIZE ? 0 : bad_value(arg, "at least 4M");
}

static int opt_readahead(struct czfs_mount_opts *o, const char *arg, int key)
{
	return parse_size_opt(arg, &o->readahead);
}

/* A size, or 0 for "off". */
static int parse_size_or_off(const char *arg, uint64_t *out)
{
	if (strcmp(strchr(arg, '=') + 1, "0"))
		return parse_size_opt(arg, out);
	*out = 0;
	return 0;
}

static int opt_kernel_ra(struct czfs_mount_opts *o, const char *arg, int key)
{
	return parse_size_or_off(arg, &o->kernel_readahead);
}

static int opt_reclaim(struct czfs_mount_opts *o, const char *arg, int key)
{
	return parse_choice(arg, "keep", "punch", &o->reclaim_punch);
}

static int opt_scattered(struct czfs_mount_opts *o, const char *arg, int key)
{
	return parse_choice(arg, "bounce", "slot", &o->map_slots);
}

static int opt_opens(struct czfs_mount_opts *o, const char *arg, int key)
{
	return parse_choice(arg, "skip", "send", &o->send_opens);
}

static int opt_tree_ra(struct czfs_mount_opts *o, const char *arg, int key)
{
	return parse_size_or_off(arg, &o->tree_readahead);
}

static int opt_map(struct czfs_mount_opts *o, const char *arg, int key)
{
	if (czfs_map_mode_parse(strchr(arg, '=') + 1, &o->map))
		return bad_value(arg, "vmap or vm_map_ram");
	return 0;
}

static int opt_max_request(struct czfs_mount_opts *o, const char *arg, int key)
{
	if (parse_size_opt(arg, &o->max_request))
		return -1;
	if (czfs_io_check_max_request(o->max_request))
		return bad_value(arg, "4k..4M, a multiple of 4k");
	return 0;
}

static int opt_s3_style(struct czfs_mount_opts *o, const char *arg, int key)
{
	bool virt;

	if (parse_choice(arg, "path", "virtual", &virt))
		return -1;
	o->remote.s3_style = virt ? CZFS_S3_STYLE_VIRTUAL : CZFS_S3_STYLE_PATH;
	return 0;
}

static int opt_cache_limit(struct czfs_mount_opts *o, const char *arg, int key)
{
	return parse_size_opt(arg, &o->remote.cache_limit);
}

static int opt_atime(struct czfs_mount_opts *o, const char *arg, int key)
{
	o->atime = key == KEY_NOATIME ? CZFS_ATIME_NOATIME :
		   key == KEY_STRICTATIME ? CZFS_ATIME_STRICT :
		   CZFS_ATIME_RELATIME;
	return 1;		/* the kernel sees it too */
}

static int opt_compress_ext(struct czfs_mount_opts *o, const char *arg, int key)
{
	return add_extension(arg, o->compress_ext, &o->n_compress_ext);
}

static int opt_nocompress_ext(struct czfs_mount_opts *o, const char *arg,
			      int key)
{
	return add_extension(arg, o->nocompress_ext, &o->n_nocompress_ext);
}

static int opt_ro(struct czfs_mount_opts *o, const char *arg, int key)
{
	if (key == KEY_RW && o->image && czfs_url_kind(o->image)) {
		fprintf(stderr, "czfs-fuse: %s: a URL mounts read-only only\n",
			o->image_shown);
		return -1;
	}
	o->ro = key == KEY_RO || (o->image && czfs_url_kind(o->image));
	return 0;
}

static int opt_compress(struct czfs_mount_opts *o, const char *arg, int key)
{
	enum czfs_alg alg;
	int level;

	if (czfs_alg_parse(strchr(arg, '=') + 1, &alg, &level))
		return bad_value(arg, NULL);
	o->alg = (int)alg;
	o->level = level;
	return 0;
}

static int opt_help(struct czfs_mount_opts *o, const char *arg, int key)
{
	o->show_help = true;
	return 0;
}

static int opt_version(struct czfs_mount_opts *o, const char *arg, int key)
{
	o->show_version = true;
	return 0;
}

/* A new option: its KEY_*, its line in czfs_opts, its handler here. */
static opt_fn *const opt_handlers[KEY_COUNT] = {
	[KEY_HELP] = opt_help,
	[KEY_VERSION] = opt_version,
	[KEY_RW] = opt_ro,
	[KEY_RO] = opt_ro,
	[KEY_COMPRESS] = opt_compress,
	[KEY_CACHE] = opt_cache,
	[KEY_READAHEAD] = opt_readahead,
	[KEY_MAP] = opt_map,
	[KEY_MAX_REQUEST] = opt_max_request,
	[KEY_OPENS] = opt_opens,
	[KEY_TREE_RA] = opt_tree_ra,
	[KEY_KERNEL_RA] = opt_kernel_ra,
	[KEY_SCATTERED] = opt_scattered,
	[KEY_RECLAIM] = opt_reclaim,
	[KEY_NOATIME] = opt_atime,
	[KEY_RELATIME] = opt_atime,
	[KEY_STRICTATIME] = opt_atime,
	[KEY_COMPRESS_EXT] = opt_compress_ext,
	[KEY_NOCOMPRESS_EXT] = opt_nocompress_ext,
	[KEY_S3_STYLE] = opt_s3_style,
	[KEY_CACHE_LIMIT] = opt_cache_limit,
};

static int opt_proc(void *data, const char *arg, int key,
		    struct fuse_args *outargs)
{
	if (key == FUSE_OPT_KEY_NONOPT)
		return opt_image(data, arg, key);
	if (key < 0 || key >= KEY_COUNT || !opt_handlers[key])
		return 1;	/* libfuse's own, or the kernel's */
	return opt_handlers[key](data, arg, key);
}

static void czfs_init(void *userdata, struct fuse_conn_info *conn)
{
	struct czfs_daemon *dm = userdata;

	/* Large requests: 1 MiB reads where the kernel allows them. */
	conn->max_write = 1u << 20;
	conn->max_read = 0;
	conn->want |= FUSE_CAP_ASYNC_READ;
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	/* File handles: inode numbers are never reused with the same
	 * generation, and lookups of "." and ".." find any inode by number. */
	if (conn->capable & FUSE_CAP_EXPORT_SUPPORT)
		conn->want |= FUSE_CAP_EXPORT_SUPPORT;
	/* lsattr -d and chattr of a directory: FUSE_IOCTL on a directory */
	if (conn->capable & FUSE_CAP_IOCTL_DIR)
		conn->want |= FUSE_CAP_IOCTL_DIR;
	/* The kernel enforces POSIX ACLs (stored as system.posix_acl_*
	 * xattrs) and keeps modes in step; new inodes inherit default ACLs
	 * here, so the umask comes to us (DONT_MASK) to apply only without. */
	if ((conn->capable & FUSE_CAP_POSIX_ACL) && (conn->capable & FUSE_CAP_DONT_MASK))
		conn->want |= FUSE_CAP_POSIX_ACL | FUSE_CAP_DONT_MASK;
	/* No FUSE writeback cache: measured, the kernel then hands over each
	 * dirty 4 KiB page alone (fio 4k randwrite: 7100 IOPS without it,
	 * 410 with), every one a read-modify-write of a compressed cluster;
	 * 1 MiB writes already arrive whole without it. */
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	/* Every change to the image goes through this daemon and the
	 * kernel, so its page cache never needs dropping when a GETATTR
	 * sees a new mtime.  It must not be: that drop races with a
	 * write-through write (the kernel's invalidate_inode_pages2 takes a
	 * page the write just filled, before the WRITE reaches us; a read
	 * then caches the old end of file, zeros where the write went). */
	conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
	conn->want &= ~(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
			FUSE_CAP_SPLICE_MOVE);
	/* A read-only image has nothing to do at open and close: declining
	 * them (ENOSYS, ops_file.c and ops_dir.c) spares two of the three or
	 * four requests a small file costs.  The kernel then keeps the page
	 * cache and caches directory listings by itself.  Read-write mounts
	 * keep them: O_TRUNC, chattr checks, O_DIRECT writers' cache drops. */
	dm->skip_opens = dm->opts.ro && !dm->opts.send_opens &&
			 (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT);
	/* Every listing of a read-only image comes with the attributes
	 * (READDIRPLUS, not only its first part): a walk that lists a big
	 * directory then stats each entry needs no LOOKUP per entry. */
	if (dm->opts.ro)
		conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	if (dm->skip_opens) {
		conn->want |= FUSE_CAP_NO_OPEN_SUPPORT;
		if (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT)
			conn->want |= FUSE_CAP_NO_OPENDIR_SUPPORT;
	}
}

static void log_syslog(enum czfs_log_level level, const char *msg)
{
	syslog((int)level, "%s", msg);
}

/* A writable mount finishes what a crash left (orphans) and commits. */
static int mount_rw(struct czfs_daemon *dm)
{
	struct czfs_fs *fs = dm->fs;
	unsigned orphans;
	int err;

	err = czfs_fs_begin(fs);
	if (!err)
		err = czfs_orphans_reap(fs, &orphans);
	if (!err && orphans)
		czfs_info("%u orphan inode(s) removed", orphans);
	if (!err)
		err = czfs_fs_commit_mount(fs);
	if (err)
		czfs_err("cannot mount read-write: %s", strerror(-err));
	else if (!czfs_room_free(dm))	/* mkfs -d without -s: no room left */
		czfs_info("the image is full: writes fail with ENOSPC and access "
			  "times are not kept; fsck.czfs --grow=SIZE raises its "
			  "size limit, -o ro or noatime mounts it as it is");
	return err;
}

static int daemon_setup(struct czfs_daemon *dm)
{
	struct czfs_fs_opts fo = {
		.flags = (dm->opts.ro ? CZFS_OPEN_RDONLY | CZFS_OPEN_NOSMAP : 0) |
			 (dm->opts.direct_io ? CZFS_OPEN_DIRECT : 0) |
			 (dm->opts.direct_reads ? CZFS_OPEN_DIRECT_DATA : 0) |
			 (dm->opts.nodiscard ? 0 : CZFS_OPEN_DISCARD),
		.remote = &dm->opts.remote,
	};
	pthread_rwlockattr_t rwa;
	int err;

	pthread_mutex_init(&dm->open_lock, NULL);
	pthread_mutex_init(&dm->partial_lock, NULL);
	pthread_rwlockattr_init(&rwa);
	pthread_rwlockattr_setkind_np(&rwa, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&dm->take_lock, &rwa);
	pthread_rwlockattr_destroy(&rwa);
	czfs_rdplus_init(&dm->rdp);
	err = czfs_fs_open(dm->opts.image, &fo, &dm->fs);
	if (!err && !dm->opts.ro)
		err = mount_rw(dm);
	if (!err)	/* checkpoints punch after fs->lock (flusher.c) */
		dm->fs->defer_discard = true;
	if (!err && !dm->opts.ro)	/* an fsync's checkpoint: one flush */
		err = czfs_fs_cover(dm->fs, COVER_BLOCKS);
	if (!err)
		err = czfs_itable_create(&dm->it);
	if (!err && !dm->opts.ro && dm->opts.recompress)
		err = czfs_cold_create(&dm->cold);
	if (err)
		return err;
	err = czfs_pool_create(dm->opts.cache_size, dm->opts.reserved_pages,
			       &dm->pool);
	if (err) {
		czfs_err("cannot create the page pool: %s", strerror(-err));
		return err;
	}
	err = czfs_ccache_create(dm->pool, 0, &dm->cc);
	if (err)
		return err;
	czfs_ccache_set_punch(dm->cc, dm->opts.reclaim_punch);
	err = czfs_pcache_create((unsigned)MAX(CZFS_PACKS_CACHED_MIN,
		dm->opts.cache_size / 8 / CZFS_PACK_MAX_ULEN), &dm->pc);
	if (err)
		return err;
	/* An eighth of the pool for staged requests, half for what FUSE
	 * reads hold (their clusters and compressed input); the rest stays
	 * free to load into, so every load can make progress. */
	dm->stage_budget = dm->opts.cache_size / CZFS_BLOCK_SIZE / 8;
	dm->admit_total = dm->admit_free = dm->opts.cache_size / CZFS_BLOCK_SIZE / 2;
	pthread_mutex_init(&dm->admit_lock, NULL);
	pthread_cond_init(&dm->admit_cond, NULL);
	pthread_mutex_init(&dm->stg_lock, NULL);
	czfs_ccache_set_shrinker(dm->cc, czfs_staging_reclaim, dm);
	dm->io.max_request = (uint32_t)dm->opts.max_request;
	dm->io.aligned = !dm->opts.unaligned;
	dm->io.st = &dm->st.io;
	return czfs_wincache_create(dm->pool, &(struct czfs_wincache_opts){
		.mode = dm->opts.map, .bounce = !dm->opts.map_slots }, &dm->wc);
}

/* Threads start after fuse_daemonize(): a fork keeps only its caller. */
static int daemon_start_threads(struct czfs_daemon *dm)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int err;

	err = czfs_prefetch_start(dm, dm->opts.sync_prefetch ? 0 :
				  dm->opts.workers ? dm->opts.workers :
				  (unsigned)MAX(cpus, 1));
	if (!err && !dm->opts.ro)
		err = czfs_flusher_start(dm);
	if (!err)
		err = czfs_recomp_start(dm);
	if (err)
		czfs_err("cannot start threads: %s", strerror(-err));
	return err;
}

static void daemon_teardown(struct czfs_daemon *dm)
{
	czfs_fuse_release_all(dm);
	czfs_prefetch_stop(dm);
	czfs_recomp_stop(dm);
	czfs_flusher_stop(dm);		/* the last checkpoint */
	czfs_cold_destroy(dm->cold);	/* no writeback notes any more */
	czfs_itable_destroy(dm);
	czfs_wincache_destroy(dm->wc);
	czfs_ccache_destroy(dm->cc);
	czfs_pcache_destroy(dm->pc);
	czfs_pool_destroy(dm->pool);
	czfs_fs_close(dm->fs);
	czfs_rdplus_destroy(&dm->rdp);
}

static int run_session(struct czfs_daemon *dm, struct fuse_args *args,
		       struct fuse_cmdline_opts *cli)
{
	struct fuse_lowlevel_ops ops = { .init = czfs_init };
	struct fuse_loop_config *lc;
	struct fuse_session *se;
	int ret = 1;

	czfs_fuse_ops_inode(&ops);
	czfs_fuse_ops_dir(&ops);
	czfs_fuse_ops_file(&ops);
	czfs_fuse_ops_ioctl(&ops);	/* lsattr read-only too */
	if (!dm->opts.ro) {
		czfs_fuse_ops_write(&ops);
		czfs_fuse_ops_copy(&ops);
		czfs_fuse_ops_ns(&ops);
	}
	se = fuse_session_new(args, &ops, sizeof(ops), dm);
	if (!se)
		return 1;
	dm->se = se;
	if (fuse_set_signal_handlers(se))
		goto out_destroy;
	if (fuse_session_mount(se, cli->mountpoint))
		goto out_signals;
	/* writable: spare the kernel's security.capability question before
	 * every write (killpriv.h) */
	if (!dm->opts.ro && czfs_killpriv_setup(dm))
		czfs_warn("cannot watch the device's requests: the kernel will "
			  "ask for security.capability before every write");
	dm->mountpoint = realpath(cli->mountpoint, NULL);
	if (dm->mountpoint)
		czfs_utab_register(dm->opts.image_shown, dm->mountpoint);
	if (fuse_daemonize(cli->foreground))
		goto out_unmount;
	if (!cli->foreground)
		czfs_log_set_sink(log_syslog, CZFS_LOG_INFO);
	if (czfs_remount_start(dm) || daemon_start_threads(dm))
		goto out_unmount;
	/* A store may wait for a page under a READ that another FUSE
	 * thread must answer: never let every thread store (push.h). */
	atomic_init(&dm->push_slots, cli->singlethread ? 0 :
		    (int)MIN(2u, cli->max_threads ? cli->max_threads - 1 : 0));
	lc = fuse_loop_cfg_create();
	if (!lc)
		goto out_unmount;
	fuse_loop_cfg_set_clone_fd(lc, (unsigned)cli->clone_fd);
	fuse_loop_cfg_set_max_threads(lc, cli->max_threads);
	if (cli->max_idle_threads != UINT_MAX)
		fuse_loop_cfg_set_idle_threads(lc, cli->max_idle_threads);
	atomic_store(&dm->serving, true);
	if (cli->singlethread)
		ret = fuse_session_loop(se);
	else if (!cli->clone_fd &&
		 czfs_url_kind(dm->opts.image) == CZFS_URL_NONE)	/* local */
		ret = czfs_loop_run(dm, cli->max_threads);	/* loop.h */
	else
		ret = fuse_session_loop_mt(se, lc);
	atomic_store(&dm->serving, false);	/* the device may be gone */
	ret = ret ? 1 : 0;
	fuse_loop_cfg_destroy(lc);
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_destroy:
	czfs_remount_stop(dm);
	czfs_fuse_release_all(dm);	/* releases lost with the connection */
	czfs_recomp_stop(dm);		/* what it rewrote goes in the last checkpoint */
	czfs_flusher_stop(dm);		/* the last checkpoint, before the session goes */
	dm->se = NULL;
	fuse_session_destroy(se);
	return ret;
}

/* Mount options every czfs mount gets: the kernel checks permissions. */
static int add_mount_opts(struct fuse_args *args, const char *image, bool ro)
{
	char *opts = NULL, *fsname;
	int err;

	if (asprintf(&fsname, "fsname=%s", image) < 0)
		return -1;
	/* libfuse splits -o values on commas: the path is escaped. */
	err = fuse_opt_add_opt(&opts, ro ? "subtype=czfs,default_permissions,ro" :
			       "subtype=czfs,default_permissions") ||
	      fuse_opt_add_opt_escaped(&opts, fsname) ||
	      fuse_opt_add_arg(args, "-o") || fuse_opt_add_arg(args, opts);
	free(fsname);
	free(opts);
	return err ? -1 : 0;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts cli = { 0 };
	struct czfs_daemon dm = {
		.opts = { .cache_size = DEFAULT_CACHE_SIZE,
			  .readahead = DEFAULT_READAHEAD,
			  .tree_readahead = DEFAULT_TREE_READAHEAD,
			  .kernel_readahead = 1u << 20,
			  .map = CZFS_MAP_VM_MAP_RAM,
			  .remote = { .retries = -1 },
			  .commit = DEFAULT_COMMIT,
			  .recompress = DEFAULT_RECOMPRESS,
			  .alg = -1 },
	};
	int ret = 1;

	openlog("czfs-fuse", LOG_PID, LOG_DAEMON);
	czfs_log_set_sink(czfs_log_stderr, CZFS_LOG_INFO);
	if (fuse_opt_parse(&args, &dm.opts, czfs_opts, opt_proc))
		goto out_args;
	/* fuse_opt_parse copied the arguments: a URL's credentials leave
	 * the process title (/proc/PID/cmdline shows argv). */
	for (int i = 1; i < argc; i++)
		czfs_url_redact_inplace(argv[i]);
	if (dm.opts.show_version) {
		printf("czfs-fuse (czfs) %s\nFUSE library version %s\n",
		       CZFS_VERSION, fuse_pkgversion());
		ret = 0;
		goto out_args;
	}
	if (dm.opts.show_help) {
		fputs(usage_text, stdout);
		printf("FUSE options:\n");
		fuse_cmdline_help();
		fuse_lowlevel_help();
		ret = 0;
		goto out_args;
	}
	if (fuse_parse_cmdline(&args, &cli))
		goto out_args;
	if (!dm.opts.image || !cli.mountpoint) {
		fputs(usage_text, stderr);
		goto out_args;
	}
	if (!dm.opts.commit) {
		fputs("czfs-fuse: bad value in 'commit=0' (at least 1)\n", stderr);
		goto out_args;
	}
	dm.attr_timeout = dm.opts.ro ? RO_TIMEOUT : RW_TIMEOUT;
	if (!dm.opts.max_request)
		dm.opts.max_request = czfs_url_kind(dm.opts.image) ?
				      REMOTE_MAX_REQUEST : DEFAULT_MAX_REQUEST;
	if (add_mount_opts(&args, dm.opts.image_shown, dm.opts.ro))
		goto out_args;
	/* A FUSE read holds its clusters: keep reads well inside the pool. */
	dm.opts.kernel_readahead = MIN(dm.opts.kernel_readahead,
				       MAX(dm.opts.cache_size / 8, 128u << 10));
	if (daemon_setup(&dm) == 0)
		ret = run_session(&dm, &args, &cli);
	else
		fprintf(stderr, "czfs-fuse: cannot mount %s\n",
			dm.opts.image_shown);
	daemon_teardown(&dm);
out_args:
	for (unsigned i = 0; i < dm.opts.n_compress_ext; i++)
		free(dm.opts.compress_ext[i]);
	for (unsigned i = 0; i < dm.opts.n_nocompress_ext; i++)
		free(dm.opts.nocompress_ext[i]);
	free(dm.opts.image);
	free(dm.opts.image_shown);
	free((char *)dm.opts.remote.cafile);
	free((char *)dm.opts.remote.cache_dir);
	free((char *)dm.opts.remote.s3_endpoint);
	free((char *)dm.opts.remote.s3_region);
	free(dm.mountpoint);
	free(cli.mountpoint);
	fuse_opt_free_args(&args);
	return ret;
}
