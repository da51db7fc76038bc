# czfs-fuse, the daemon, in wings that depend one way (DEVELOPERS.md):
# the session and the shared base here, read/ (the data read path), write/
# (writeback and its room), ops/ (the FUSE operations, over both).  All
# but main.c make libczfsdaemon.a, which the daemon's unit tests link too.
noinst_LIBRARIES += src/fuse/libczfsdaemon.a
bin_PROGRAMS += src/fuse/czfs-fuse
src_fuse_czfs_fuse_SOURCES = src/fuse/main.c
src_fuse_libczfsdaemon_a_SOURCES = \
	src/fuse/daemon.h src/fuse/wentry.h \
	src/fuse/options.c src/fuse/options.h \
	src/fuse/setup.c src/fuse/setup.h \
	src/fuse/thread.c src/fuse/thread.h \
	src/fuse/worker.c src/fuse/worker.h \
	src/fuse/stats.c src/fuse/stats.h \
	src/fuse/bdi.c src/fuse/bdi.h \
	src/fuse/loop.c src/fuse/loop.h \
	src/fuse/caller.c src/fuse/caller.h \
	src/fuse/killpriv.c src/fuse/killpriv.h \
	src/fuse/remount.c src/fuse/remount.h \
	src/fuse/utab.c src/fuse/utab.h \
	src/fuse/rdplus.c src/fuse/rdplus.h \
	src/fuse/minode.c src/fuse/minode.h \
	src/fuse/lookups.c src/fuse/lookups.h
# read/: prefetch streams, loading clusters, staged image reads, temporary
# pages.
src_fuse_libczfsdaemon_a_SOURCES += \
	src/fuse/read/temp.c src/fuse/read/temp.h \
	src/fuse/read/staging.c src/fuse/read/staging.h \
	src/fuse/read/load.c src/fuse/read/load.h \
	src/fuse/read/stream.c src/fuse/read/stream.h
# write/: room for blocks, writeback (blocks, runs, packs), the flusher
# and its requests, recompression of cold clusters.
src_fuse_libczfsdaemon_a_SOURCES += \
	src/fuse/write/room.c src/fuse/write/room.h \
	src/fuse/write/flushreq.c src/fuse/write/flushreq.h \
	src/fuse/write/wbblocks.c src/fuse/write/wbblocks.h \
	src/fuse/write/wbrun.c src/fuse/write/wbrun.h \
	src/fuse/write/wbpack.c src/fuse/write/wbpack.h \
	src/fuse/write/wbpool.c src/fuse/write/wbpool.h \
	src/fuse/write/wbencode.c src/fuse/write/wbencode.h \
	src/fuse/write/writeback.c src/fuse/write/writeback.h \
	src/fuse/write/flusher.c src/fuse/write/flusher.h \
	src/fuse/write/coldmap.c src/fuse/write/coldmap.h \
	src/fuse/write/recompress.c src/fuse/write/recompress.h
# ops/: the libfuse low-level operations, and the push of whole small
# files into the kernel's page cache after a read (tree readahead).
src_fuse_libczfsdaemon_a_SOURCES += \
	src/fuse/ops/ops.h \
	src/fuse/ops/push.c src/fuse/ops/push.h \
	src/fuse/ops/ops_inode.c \
	src/fuse/ops/ops_dir.c \
	src/fuse/ops/ops_file.c \
	src/fuse/ops/ops_write.c \
	src/fuse/ops/ops_copy.c \
	src/fuse/ops/ops_ns.c \
	src/fuse/ops/ops_ioctl.c
CZFS_DAEMON_CPPFLAGS = $(CZFS_CACHE_CPPFLAGS) $(CZFS_REMOTE_CPPFLAGS) \
	-I$(top_srcdir)/src/fuse -I$(top_srcdir)/src/fuse/read \
	-I$(top_srcdir)/src/fuse/write -I$(top_srcdir)/src/fuse/ops
CZFS_DAEMON_LIBS = src/fuse/libczfsdaemon.a src/cache/libczfscache.a \
	$(CZFS_REMOTE_LIBS) $(FUSE_LIBS)
src_fuse_libczfsdaemon_a_CPPFLAGS = $(CZFS_DAEMON_CPPFLAGS)
src_fuse_libczfsdaemon_a_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS)
src_fuse_czfs_fuse_CPPFLAGS = $(CZFS_DAEMON_CPPFLAGS)
src_fuse_czfs_fuse_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS)
src_fuse_czfs_fuse_LDADD = $(CZFS_DAEMON_LIBS)

bin_PROGRAMS += src/fuse/czfs-stat
src_fuse_czfs_stat_SOURCES = src/fuse/czfs_stat.c
src_fuse_czfs_stat_LDADD =
