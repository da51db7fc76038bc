bin_PROGRAMS += src/fuse/czfs-fuse
src_fuse_czfs_fuse_SOURCES = \
	src/fuse/daemon.h \
	src/fuse/main.c \
	src/fuse/thread.c src/fuse/thread.h \
	src/fuse/stream.c src/fuse/stream.h \
	src/fuse/load.c src/fuse/load.h \
	src/fuse/push.c src/fuse/push.h \
	src/fuse/staging.c src/fuse/staging.h \
	src/fuse/temp.c src/fuse/temp.h \
	src/fuse/stats.c src/fuse/stats.h \
	src/fuse/bdi.c src/fuse/bdi.h \
	src/fuse/ops.h \
	src/fuse/rdplus.c src/fuse/rdplus.h \
	src/fuse/loop.c src/fuse/loop.h \
	src/fuse/caller.c src/fuse/caller.h \
	src/fuse/killpriv.c src/fuse/killpriv.h \
	src/fuse/remount.c src/fuse/remount.h \
	src/fuse/utab.c src/fuse/utab.h \
	src/fuse/ops_inode.c \
	src/fuse/ops_dir.c \
	src/fuse/ops_file.c \
	src/fuse/ops_write.c \
	src/fuse/ops_copy.c \
	src/fuse/ops_ns.c \
	src/fuse/ops_ioctl.c \
	src/fuse/minode.c src/fuse/minode.h \
	src/fuse/room.c src/fuse/room.h \
	src/fuse/writeback.c src/fuse/writeback.h \
	src/fuse/flusher.c src/fuse/flusher.h \
	src/fuse/flushreq.c src/fuse/flushreq.h \
	src/fuse/coldmap.c src/fuse/coldmap.h \
	src/fuse/recompress.c src/fuse/recompress.h \
	src/fuse/wbpack.c src/fuse/wbpack.h \
	src/fuse/wbrun.c src/fuse/wbrun.h \
	src/fuse/wbblocks.c src/fuse/wbblocks.h
src_fuse_czfs_fuse_CPPFLAGS = $(CZFS_CACHE_CPPFLAGS)
src_fuse_czfs_fuse_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS)
src_fuse_czfs_fuse_LDADD = $(CZFS_CACHE_LIBS) $(FUSE_LIBS)

bin_PROGRAMS += src/fuse/czfs-stat
src_fuse_czfs_stat_SOURCES = src/fuse/czfs_stat.c
src_fuse_czfs_stat_LDADD =
