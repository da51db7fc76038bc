// SPDX-License-Identifier: MIT
/* czfs-fuse: mount a czfs image with libfuse3 (low-level API). */
#include "config.h"

#include <limits.h>
#include <malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <syslog.h>
#include <unistd.h>

#include "btree.h"
#include "ccache.h"
#include "coldmap.h"
#include "compress.h"
#include "daemon.h"
#include "flusher.h"
#include "fs.h"
#include "image.h"
#include "log.h"
#include "killpriv.h"
#include "loop.h"
#include "minode.h"
#include "ops.h"
#include "options.h"
#include "packcache.h"
#include "push.h"
#include "recompress.h"
#include "remote.h"
#include "remount.h"
#include "room.h"
#include "setup.h"
#include "staging.h"
#include "stream.h"
#include "url.h"
#include "utab.h"
#include "wbpool.h"
#include "util.h"

/* Checkpoints that bring up to 4 MiB into use are made with one flush:
 * a mount reads back that much at most to check the last one. */
#define COVER_BLOCKS		1024u
#define RO_TIMEOUT		86400.0	/* an image mounted ro never changes */
#define RW_TIMEOUT		1.0


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
	 * them (ENOSYS, ops_file.c) spares two of the three or four requests
	 * a small file costs, and the kernel then keeps the page cache by
	 * itself.  Read-write mounts keep the files' opens: O_TRUNC, chattr
	 * checks, O_DIRECT writers' cache drops, the writers push.c waits
	 * for. */
	dm->skip_opens = dm->opts.ro && !dm->opts.send_opens &&
			 (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT);
	/* A directory's open does nothing on any mount, and declined
	 * (ops_dir.c) the kernel caches its listing by itself.  That holds
	 * on a writable mount too: every change reaches the image through
	 * this kernel (the image is locked), and the kernel drops its
	 * cached listing of a directory it changes (fuse_dir_changed). */
	dm->skip_opendirs = !dm->opts.send_opens &&
			    (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT);
	/* Every listing comes with the attributes (READDIRPLUS, not only
	 * its first part): a walk that lists a big directory then stats
	 * each entry needs no LOOKUP per entry; rdplus.c leaves them out
	 * for a walk that does not stat. */
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	if (dm->skip_opens)
		conn->want |= FUSE_CAP_NO_OPEN_SUPPORT;
	if (dm->skip_opendirs)
		conn->want |= FUSE_CAP_NO_OPENDIR_SUPPORT;
}

/*
 * glibc gives each thread that allocates while another holds an arena an
 * arena of its own, up to eight per core: the ten loop threads, the
 * prefetch workers and writeback's encoders end up with one each, and what
 * one frees (a decoded pack, a node) is memory only it reuses.  Measured
 * on a cold tar of 19,000 files: 8 arenas, 80 MiB taken from the system
 * for 61 MiB in use.  As many arenas as cores keep contention where it
 * was (no two threads allocate on one core at once).
 *
 * And a fixed mmap threshold: glibc raises its own to the size of any
 * mapped block freed (up to 32 MiB), after which the big buffers (each
 * thread's scratch and libfuse's 1 MiB request buffer, pack buffers)
 * came from the arenas, and the arenas kept the holes they left: a cold
 * tar of the 17,800-file tree ended with 10 MB free in them beside 13 MB
 * in use.  Mapped, a buffer's untouched pages take no memory and a freed
 * one goes back at once.
 */
#define MMAP_THRESHOLD		(128 << 10)

static void limit_arenas(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	mallopt(M_ARENA_MAX, (int)MAX(cpus, 2));
	mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
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
	else if (!czfs_room_free(dm) && czfs_room_grow(dm, 1))
		czfs_info("the image is full: writes fail with ENOSPC and access "
			  "times are not kept; fsck.czfs --grow=SIZE raises its "
			  "size limit, -o ro or noatime mounts it as it is");
	return err;
}

/* The image is a file here, not a URL (HTTP, S3: remote.h). */
static bool image_is_local(const struct czfs_daemon *dm)
{
	return czfs_url_kind(dm->opts.image) == CZFS_URL_NONE;
}

/* B-tree nodes a daemon keeps until refaults show it needs more (up to
 * the library's 16,384): a cold walk of 19,000 files ended with 1,400
 * nodes, 5.6 MiB, each asked for a few times close together and never
 * again; random lookups over /usr grow it. */
#define NODES_BASE		512

static int daemon_setup(struct czfs_daemon *dm)
{
	struct czfs_fs_opts fo = {
		.flags = (dm->opts.ro ? CZFS_OPEN_RDONLY | CZFS_OPEN_NOSMAP : 0) |
			 (dm->opts.direct_io ? CZFS_OPEN_DIRECT : 0) |
			 (dm->opts.direct_reads ? CZFS_OPEN_DIRECT_DATA : 0) |
			 (dm->opts.nodiscard ? 0 : CZFS_OPEN_DISCARD),
		.log_writes = dm->opts.log_writes,
	};
	int err = czfs_daemon_init(dm);

	czfs_rdplus_init(&dm->rdp);
	if (!err)
		err = czfs_image_open(dm->opts.image, &fo, &dm->opts.remote,
				      &dm->fs);
	/* a remote image's miss is a round trip: its nodes stay */
	if (!err && image_is_local(dm))
		err = czfs_nodecache_set_adaptive(dm->fs->nc, NODES_BASE);
	if (!err && !dm->opts.ro)
		err = mount_rw(dm);
	if (!err)	/* checkpoints punch after fs->lock (flusher.c) */
		dm->fs->defer_discard = true;
	if (!err && !dm->opts.ro)	/* an fsync's checkpoint: one flush */
		err = czfs_fs_cover(dm->fs, COVER_BLOCKS);
	if (!err && !dm->opts.ro && dm->opts.recompress)
		err = czfs_cold_create(&dm->cold);
	return err;
}

/* B-tree nodes an idle daemon keeps: the top of the tree (a walk of
 * 19,000 files leaves 1,400 of them, 5.6 MiB, that the kernel's caches
 * of names and attributes spare it from asking for again). */
#define NODES_KEPT_IDLE		64

/* Nothing read for a tick: staged reads ahead, decoded packs and most
 * nodes wait for nobody now, their memory goes back (the pool's
 * trimmer). */
static void daemon_idle(void *arg)
{
	struct czfs_daemon *dm = arg;

	czfs_staging_reclaim(dm);
	czfs_pcache_drop(dm->pc);
	czfs_nodecache_trim(dm->fs->nc, NODES_KEPT_IDLE);
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
		err = czfs_wbpool_start(dm->opts.write_threads ?
					dm->opts.write_threads :
					(unsigned)MAX(cpus, 1),
					&dm->st.wb_by_workers, &dm->wp);
	if (!err && !dm->opts.ro)
		err = czfs_flusher_start(dm);
	if (!err)
		err = czfs_recomp_start(dm);
	if (!err)
		err = czfs_ccache_start_trimmer(dm->cc, daemon_idle, dm);
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
	czfs_wbpool_stop(dm->wp);	/* no writeback any more */
	dm->wp = NULL;
	czfs_cold_destroy(dm->cold);	/* no writeback notes any more */
	czfs_daemon_free(dm);
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
	czfs_push_init(dm, cli->singlethread ? 0 : cli->max_threads);
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
	else if (!cli->clone_fd && image_is_local(dm))
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
	struct czfs_daemon dm = { 0 };
	int ret = 1;

	limit_arenas();
	openlog("czfs-fuse", LOG_PID, LOG_DAEMON);
	czfs_log_set_sink(czfs_log_stderr, CZFS_LOG_INFO);
	czfs_opts_init(&dm.opts);
	if (czfs_opts_parse(&args, &dm.opts))
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
		czfs_opts_usage(stdout);
		printf("FUSE options:\n");
		fuse_cmdline_help();
		fuse_lowlevel_help();
		ret = 0;
		goto out_args;
	}
	if (fuse_parse_cmdline(&args, &cli))
		goto out_args;
	if (!dm.opts.image || !cli.mountpoint) {
		czfs_opts_usage(stderr);
		goto out_args;
	}
	if (czfs_opts_settle(&dm.opts))
		goto out_args;
	dm.attr_timeout = dm.opts.ro ? RO_TIMEOUT : RW_TIMEOUT;
	if (add_mount_opts(&args, dm.opts.image_shown, dm.opts.ro))
		goto out_args;
	if (daemon_setup(&dm) == 0)
		ret = run_session(&dm, &args, &cli);
	else
		fprintf(stderr, "czfs-fuse: cannot mount %s\n",
			dm.opts.image_shown);
	daemon_teardown(&dm);
out_args:
	czfs_opts_free(&dm.opts);
	free(dm.mountpoint);
	free(cli.mountpoint);
	fuse_opt_free_args(&args);
	return ret;
}
