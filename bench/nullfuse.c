/* nullfuse: the FUSE floor of bench/ddread.  A low-level FUSE server with
 * one read-only file, /data, of SIZE bytes whose reads are answered from a
 * static 1 MiB buffer with no work at all: no lookup structures, no I/O, no
 * decoding, no copies in the daemon.  Reading it measures what any FUSE
 * filesystem could reach at best on this kernel and libfuse (the requests,
 * the reply copies into the page cache, the wakeups of the threads), so a
 * benchmark can print the peers' figures against it.
 *
 *   cc -O2 -o nullfuse nullfuse.c $(pkg-config --cflags --libs fuse3)
 *   nullfuse MNT [-o size=BYTES] [-s] [-f]
 *
 * Multi-threaded like the peers (libfuse's loop, up to 10 threads) unless
 * -s.  It asks for 1 MiB of kernel readahead; the mount's bdi
 * read_ahead_kb decides what the kernel really does: set it like the
 * filesystems compared with (bench/lib.sh set_ra).  Not part of czfs: it is
 * built by the benchmark that uses it.
 */
#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>

#define NF_BUF (1u << 20)	/* the buffer every read is answered from */
#define NF_IOV 64
#define NF_DATA_INO 2

struct nf {
	char *buf;		/* NF_BUF bytes of a fixed non-zero pattern */
	unsigned long long size;	/* of /data */
};

struct nf_opts {
	char *size;
};

static const struct fuse_opt nf_optspec[] = {
	{ "size=%s", offsetof(struct nf_opts, size), 0 },
	FUSE_OPT_END
};

static void nf_attr(const struct nf *nf, fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = nf->size;
		st->st_blocks = nf->size / 512;
	}
}

static void nf_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->max_readahead = 1u << 20;
	if (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT)
		conn->want |= FUSE_CAP_NO_OPEN_SUPPORT;
}

static int do_lookup(const struct nf *nf, fuse_ino_t parent, const char *name,
		     struct fuse_entry_param *e)
{
	if (parent != FUSE_ROOT_ID || strcmp(name, "data"))
		return ENOENT;
	memset(e, 0, sizeof(*e));
	e->ino = NF_DATA_INO;
	e->attr_timeout = e->entry_timeout = 3600;
	nf_attr(nf, NF_DATA_INO, &e->attr);
	return 0;
}

static void nf_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	int err = do_lookup(fuse_req_userdata(req), parent, name, &e);

	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_entry(req, &e);
}

static void nf_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	nf_attr(fuse_req_userdata(req), ino, &st);
	fuse_reply_attr(req, &st, 3600);
}

static void nf_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

/* The iovec of N bytes at OFF of /data, all pointing into the one buffer;
 * returns the number of entries. */
static int do_read(const struct nf *nf, size_t n, off_t off, struct iovec *iov)
{
	int k = 0;

	if ((unsigned long long)off >= nf->size)
		return 0;
	if (off + n > nf->size)
		n = nf->size - off;
	while (n && k < NF_IOV) {
		size_t o = off % NF_BUF, len = NF_BUF - o < n ? NF_BUF - o : n;

		iov[k].iov_base = nf->buf + o;
		iov[k++].iov_len = len;
		off += len;
		n -= len;
	}
	return k;
}

static void nf_read(fuse_req_t req, fuse_ino_t ino, size_t n, off_t off,
		    struct fuse_file_info *fi)
{
	struct iovec iov[NF_IOV];

	(void)ino;
	(void)fi;
	fuse_reply_iov(req, iov, do_read(fuse_req_userdata(req), n, off, iov));
}

static void nf_readdir(fuse_req_t req, fuse_ino_t ino, size_t n, off_t off,
		       struct fuse_file_info *fi)
{
	char b[512];
	size_t len = 0;
	struct stat st;

	(void)fi;
	if (ino != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if (off == 0) {
		nf_attr(fuse_req_userdata(req), NF_DATA_INO, &st);
		len = fuse_add_direntry(req, b, sizeof(b), "data", &st, 1);
	}
	fuse_reply_buf(req, b, len < n ? len : n);
}

static const struct fuse_lowlevel_ops nf_ops = {
	.init = nf_init,
	.lookup = nf_lookup,
	.getattr = nf_getattr,
	.open = nf_open,
	.read = nf_read,
	.readdir = nf_readdir,
};

static int nf_serve(struct fuse_session *se, const struct fuse_cmdline_opts *o)
{
	struct fuse_loop_config *cfg;
	int ret;

	fuse_daemonize(o->foreground);
	if (o->singlethread)
		return fuse_session_loop(se);
	cfg = fuse_loop_cfg_create();
	if (!cfg)
		return -1;
	fuse_loop_cfg_set_max_threads(cfg, 10);
	ret = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	return ret;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts o = { 0 };
	struct nf_opts opts = { 0 };
	struct nf nf = { .size = 1000ull << 20 };
	struct fuse_session *se = NULL;
	int ret = 1;

	if (fuse_opt_parse(&args, &opts, nf_optspec, NULL) == -1)
		return 1;
	if (fuse_parse_cmdline(&args, &o) || !o.mountpoint) {
		fprintf(stderr, "usage: %s MNT [-o size=BYTES] [-s] [-f]\n", argv[0]);
		goto out;
	}
	if (opts.size)
		nf.size = strtoull(opts.size, NULL, 0);
	nf.buf = aligned_alloc(4096, NF_BUF);
	if (!nf.buf)
		goto out;
	for (size_t i = 0; i < NF_BUF; i++)	/* not zeros: nothing special */
		nf.buf[i] = (char)((i * 2654435761u) >> 24);
	se = fuse_session_new(&args, &nf_ops, sizeof(nf_ops), &nf);
	if (!se || fuse_set_signal_handlers(se) || fuse_session_mount(se, o.mountpoint))
		goto out;
	ret = nf_serve(se, &o) ? 1 : 0;
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
out:
	if (se)
		fuse_session_destroy(se);
	free(nf.buf);
	free(o.mountpoint);
	fuse_opt_free_args(&args);
	return ret;
}
