// SPDX-License-Identifier: MIT
/* czfs-fuse's command line: its usage, its -o table and handlers (options.h). */
#include "config.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compress.h"
#include "daemon.h"
#include "options.h"
#include "url.h"
#include "util.h"

#define DEFAULT_CACHE_SIZE	(256ull << 20)
/* What the pool keeps of clean clusters when they are not read again:
 * little, since a random read's clusters go to the page cache
 * (random_reads); the target grows while clusters come back soon after
 * they left (several streams decoding ahead), and falls when idle. */
#define DEFAULT_CACHE_MIN	(4ull << 20)
#define DEFAULT_READAHEAD	(4ull << 20)
#define DEFAULT_TREE_READAHEAD	(1ull << 20)
#define DEFAULT_MAX_REQUEST	(512u << 10)
#define REMOTE_MAX_REQUEST	(2u << 20)	/* measured: bench/remote, 2M best or
						 * level with 1M, 4M last */
#define MIN_CACHE_SIZE		(4ull << 20)
/* Dirty data per writeback encoder: a batch (4 MiB, writeback.c)
 * compressing while the writer fills the next; more only holds memory. */
#define DIRTY_PER_ENCODER	(8ull << 20)
#define MIN_DIRTY_MAX		(8ull << 20)
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
"                           at least 4M): a ceiling\n"
"    -o cache_min=SIZE      what the pool keeps of clusters nobody reads\n"
"                           again (default 4M, also the least); it grows while\n"
"                           clusters are read again soon after they left, up\n"
"                           to cache_size, and falls back when idle\n"
"    -o reserved_pages=N    pages reserved for decompression (default 0;\n"
"                           64 covers most bursts)\n"
"    -o reclaim=keep|punch  evicted clusters keep their memory in the pool\n"
"                           (default) or give it back (low-memory mode)\n"
"    -o workers=N           prefetch threads (default: online CPUs)\n"
"    -o dirty_max=SIZE      dirty data writers leave for writeback (default\n"
"                           8M per write thread, at most cache_size/4)\n"
"    -o write_threads=N     threads that compress dirty clusters at\n"
"                           writeback (default: online CPUs; 1: the\n"
"                           writing thread alone)\n"
"    -o sync_prefetch       no workers: a reader loads its prefetch window\n"
"                           itself before its reply (requests that do not\n"
"                           depend on scheduling, for tests)\n"
"    -o readahead=SIZE      largest prefetch window (default 4M)\n"
"    -o kernel_readahead=SIZE  readahead of the mount in the kernel: the size\n"
"                           of FUSE read requests (default 1M; 0: leave it)\n"
"    -o direct_io           read and write the image with O_DIRECT\n"
"    -o direct_reads, buffered_reads  read data (reads of 128 KiB and more)\n"
"                           with O_DIRECT (default), or through the host's\n"
"                           page cache\n"
"    -o map=vm_map_ram|vmap how the codecs see pool pages: per-thread cached\n"
"                           windows (default) or a fresh mapping each time\n"
"    -o map_scattered=bounce|slot  vm_map_ram: copy pages that are not one\n"
"                           run through a buffer (default, measured faster)\n"
"                           or map them into a slot of the window\n"
"    -o max_request=SIZE    largest read of the image (default 512k, 2M for\n"
"                           a URL)\n"
"    -o unaligned_requests  cut requests from each run's start, not at\n"
"                           max_request boundaries (for comparison)\n"
"    -o no_zero_detect      write all-zero clusters as data, not holes (to\n"
"                           measure decompression of zeros)\n"
"    -o opens=skip|send     the kernel opens directories, and on read-only\n"
"                           mounts files, without asking the daemon (skip,\n"
"                           the default: two requests fewer per file) or\n"
"                           asks at every open and close (send)\n"
"    -o tree_readahead=SIZE after a small file is read\n"
"                           whole, store up to SIZE of the files that follow\n"
"                           it into the kernel's page cache (default 1M; 0:\n"
"                           off)\n"
"    -o random_reads=cluster|page  a read that is not sequential stores the\n"
"                           rest of the clusters it decoded into the kernel's\n"
"                           page cache too (cluster, the default: reads\n"
"                           near it then cost no request) or only what was\n"
"                           asked (page: random reads with no locality)\n"
"    -o discard, nodiscard  punch the blocks each checkpoint frees out of\n"
"                           IMAGE, giving them back to the host (default:\n"
"                           discard)\n"
"    -o pack, nopack        at writeback, put the data of small files (one\n"
"                           partial cluster) of many files into shared packs,\n"
"                           compressed together, as mkfs.czfs does (default:\n"
"                           pack)\n"
"    -o log_writes=FILE     testing: record every write, punch, resize and\n"
"                           flush of IMAGE, with its data, to FILE (created\n"
"                           anew), for power-loss replay (tests/czfs_replay)\n"
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
       KEY_CACHE_LIMIT, KEY_CACHE_MIN, KEY_DIRTY_MAX, KEY_RANDOM_READS,
       KEY_COUNT };

#define CZFS_OPT(t, m) { t, offsetof(struct czfs_mount_opts, m), 1 }

static const struct fuse_opt czfs_opts[] = {
	CZFS_OPT("reserved_pages=%u", reserved_pages),
	CZFS_OPT("workers=%u", workers),
	CZFS_OPT("write_threads=%u", write_threads),
	CZFS_OPT("direct_io", direct_io),
	CZFS_OPT("direct_reads", direct_reads),
	{ "buffered_reads", offsetof(struct czfs_mount_opts, direct_reads), 0 },
	FUSE_OPT_KEY("map_scattered=", KEY_SCATTERED),
	FUSE_OPT_KEY("reclaim=", KEY_RECLAIM),
	CZFS_OPT("unaligned_requests", unaligned),
	CZFS_OPT("sync_prefetch", sync_prefetch),
	CZFS_OPT("no_zero_detect", no_zero_detect),
	CZFS_OPT("nodiscard", nodiscard),
	CZFS_OPT("nopack", nopack),
	CZFS_OPT("log_writes=%s", log_writes),
	{ "pack", offsetof(struct czfs_mount_opts, nopack), 0 },
	FUSE_OPT_KEY("opens=", KEY_OPENS),
	FUSE_OPT_KEY("tree_readahead=", KEY_TREE_RA),
	FUSE_OPT_KEY("random_reads=", KEY_RANDOM_READS),
	{ "discard", offsetof(struct czfs_mount_opts, nodiscard), 0 },
	FUSE_OPT_KEY("map=", KEY_MAP),
	FUSE_OPT_KEY("max_request=", KEY_MAX_REQUEST),
	FUSE_OPT_KEY("cache_size=", KEY_CACHE),
	FUSE_OPT_KEY("cache_min=", KEY_CACHE_MIN),
	FUSE_OPT_KEY("dirty_max=", KEY_DIRTY_MAX),
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

/* A size, or 0 for "off". */
static int parse_size_or_off(const char *arg, uint64_t *out)
{
	if (strcmp(strchr(arg, '=') + 1, "0"))
		return parse_size_opt(arg, out);
	*out = 0;
	return 0;
}

static int opt_cache(struct czfs_mount_opts *o, const char *arg, int key)
{
	if (parse_size_opt(arg, &o->cache_size))
		return -1;
	return o->cache_size >= MIN_CACHE_SIZE ? 0 : bad_value(arg, "at least 4M");
}

static int opt_cache_min(struct czfs_mount_opts *o, const char *arg, int key)
{
	if (parse_size_opt(arg, &o->cache_min))
		return -1;
	/* below a prefetch window, prefetched clusters would be dropped
	 * before their reader came */
	return o->cache_min >= MIN_CACHE_SIZE ? 0 : bad_value(arg, "at least 4M");
}

static int opt_dirty_max(struct czfs_mount_opts *o, const char *arg, int key)
{
	if (parse_size_opt(arg, &o->dirty_max))
		return -1;
	/* two batches: one compressing, one being written */
	return o->dirty_max >= MIN_DIRTY_MAX ? 0 : bad_value(arg, "at least 8M");
}

static int opt_readahead(struct czfs_mount_opts *o, const char *arg, int key)
{
	return parse_size_opt(arg, &o->readahead);
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

static int opt_random_reads(struct czfs_mount_opts *o, const char *arg, int key)
{
	return parse_choice(arg, "cluster", "page", &o->random_pages);
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
	/* the daemon keeps access times (FUSE inodes are S_NOATIME); of the
	 * three, libfuse's mount knows noatime only, for the mount table */
	return key == KEY_NOATIME;
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
	[KEY_RANDOM_READS] = opt_random_reads,
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
	[KEY_CACHE_MIN] = opt_cache_min,
	[KEY_DIRTY_MAX] = opt_dirty_max,
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

void czfs_opts_init(struct czfs_mount_opts *o)
{
	*o = (struct czfs_mount_opts){
		.cache_size = DEFAULT_CACHE_SIZE,
		.cache_min = DEFAULT_CACHE_MIN,
		.readahead = DEFAULT_READAHEAD,
		.tree_readahead = DEFAULT_TREE_READAHEAD,
		.kernel_readahead = 1u << 20,
		.direct_reads = 1,
		.map = CZFS_MAP_VM_MAP_RAM,
		.remote = { .retries = -1 },
		.commit = DEFAULT_COMMIT,
		.recompress = DEFAULT_RECOMPRESS,
		.alg = -1,
	};
}

int czfs_opts_parse(struct fuse_args *args, struct czfs_mount_opts *o)
{
	return fuse_opt_parse(args, o, czfs_opts, opt_proc) ? -EINVAL : 0;
}

void czfs_opts_usage(FILE *f)
{
	fputs(usage_text, f);
}

int czfs_opts_settle(struct czfs_mount_opts *o)
{
	if (!o->commit) {
		fputs("czfs-fuse: bad value in 'commit=0' (at least 1)\n", stderr);
		return -EINVAL;
	}
	if (!o->max_request)
		o->max_request = czfs_url_kind(o->image) ? REMOTE_MAX_REQUEST :
							   DEFAULT_MAX_REQUEST;
	o->cache_min = MIN(o->cache_min, o->cache_size);
	if (!o->dirty_max) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		unsigned enc = o->write_threads ? o->write_threads :
						  (unsigned)MAX(cpus, 1);

		o->dirty_max = MAX(MIN_DIRTY_MAX, enc * DIRTY_PER_ENCODER);
	}
	/* dirty clusters live in the pool, beside what reads hold */
	o->dirty_max = MIN(o->dirty_max, o->cache_size / 4);
	/* A FUSE read holds its clusters: keep reads well inside the pool. */
	o->kernel_readahead = MIN(o->kernel_readahead,
				  MAX(o->cache_size / 8, 128u << 10));
	return 0;
}

void czfs_opts_free(struct czfs_mount_opts *o)
{
	for (unsigned i = 0; i < o->n_compress_ext; i++)
		free(o->compress_ext[i]);
	for (unsigned i = 0; i < o->n_nocompress_ext; i++)
		free(o->nocompress_ext[i]);
	free(o->image);
	free(o->image_shown);
	free(o->log_writes);
	free((char *)o->remote.cafile);
	free((char *)o->remote.cache_dir);
	free((char *)o->remote.s3_endpoint);
	free((char *)o->remote.s3_region);
}
