# Unit tests: one Check program per module, tests/unit/check_<module>.c.
# They link the library and Check (LDADD below is the default of every
# program that does not set its own).
LDADD = $(CZFS_LIBS) $(CHECK_LIBS)
AM_CFLAGS += $(CHECK_CFLAGS)

UNIT_TESTS = \
	tests/unit/check_base \
	tests/unit/check_compress \
	tests/unit/check_cluster \
	tests/unit/check_cluster_item \
	tests/unit/check_hash \
	tests/unit/check_node \
	tests/unit/check_btree \
	tests/unit/check_btree_cow \
	tests/unit/check_leafpack \
	tests/unit/check_nodecache \
	tests/unit/check_super \
	tests/unit/check_checkpoint \
	tests/unit/check_spacemap \
	tests/unit/check_spacemap_io \
	tests/unit/check_discard \
	tests/unit/check_blockcrc \
	tests/unit/check_meta \
	tests/unit/check_pagepool \
	tests/unit/check_ccache \
	tests/unit/check_packcache \
	tests/unit/check_window \
	tests/unit/check_iobatch \
	tests/unit/check_commit \
	tests/unit/check_update \
	tests/unit/check_blockmap \
	tests/unit/check_pack \
	tests/unit/check_slice \
	tests/unit/check_slicedpack \
	tests/unit/check_acl \
	tests/unit/check_chattr \
	tests/unit/check_imagelock \
	tests/unit/check_url \
	tests/unit/check_rcache \
	tests/unit/check_prefetch \
	tests/unit/check_runs \
	tests/unit/check_preenc \
	tests/unit/check_coldmap \
	tests/unit/check_room \
	tests/unit/check_load \
	tests/unit/check_writeback \
	tests/unit/check_worker \
	tests/unit/check_lookups \
	tests/unit/check_wlog
check_PROGRAMS += $(UNIT_TESTS)
TESTS += $(UNIT_TESTS)

CLUSTER_TESTLIB = tests/unit/cluster_testlib.c tests/unit/cluster_testlib.h
tests_unit_check_cluster_SOURCES = tests/unit/check_cluster.c $(CLUSTER_TESTLIB)
tests_unit_check_cluster_item_SOURCES = tests/unit/check_cluster_item.c \
	$(CLUSTER_TESTLIB)

FS_TESTLIB = tests/unit/fs_testlib.c tests/unit/fs_testlib.h
tests_unit_check_commit_SOURCES = tests/unit/check_commit.c $(FS_TESTLIB)
tests_unit_check_update_SOURCES = tests/unit/check_update.c $(FS_TESTLIB)
tests_unit_check_blockmap_SOURCES = tests/unit/check_blockmap.c $(FS_TESTLIB)
tests_unit_check_pack_SOURCES = tests/unit/check_pack.c $(FS_TESTLIB)
tests_unit_check_slice_SOURCES = tests/unit/check_slice.c $(FS_TESTLIB)
tests_unit_check_wlog_SOURCES = tests/unit/check_wlog.c $(FS_TESTLIB)
tests_unit_check_slicedpack_SOURCES = tests/unit/check_slicedpack.c \
	$(FS_TESTLIB)

# mkfs's read-ahead thread, built from its source.
tests_unit_check_prefetch_SOURCES = tests/unit/check_prefetch.c \
	mkfs/prefetch.c mkfs/prefetch.h
tests_unit_check_prefetch_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/mkfs
# mkfs's runs of slices, with its block writer.
tests_unit_check_runs_SOURCES = tests/unit/check_runs.c \
	mkfs/runs.c mkfs/runs.h mkfs/writer.c mkfs/writer.h
tests_unit_check_runs_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/mkfs
# mkfs's clusters encoded while a tar is read.
tests_unit_check_preenc_SOURCES = tests/unit/check_preenc.c \
	mkfs/preenc.c mkfs/preenc.h
tests_unit_check_preenc_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/mkfs
# The remote client's URL parsing and range cache (src/remote).
tests_unit_check_url_CPPFLAGS = $(CZFS_REMOTE_CPPFLAGS)
tests_unit_check_url_LDADD = $(CZFS_REMOTE_LIBS) $(CHECK_LIBS)
tests_unit_check_rcache_CPPFLAGS = $(CZFS_REMOTE_CPPFLAGS)
tests_unit_check_rcache_LDADD = $(CZFS_REMOTE_LIBS) $(CHECK_LIBS)
tests_unit_check_coldmap_SOURCES = tests/unit/check_coldmap.c \
	src/fuse/write/coldmap.c src/fuse/write/coldmap.h
tests_unit_check_coldmap_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/fuse/write
# The daemon's middle, against an image in memory (libczfsdaemon.a).
tests_unit_check_room_SOURCES = tests/unit/check_room.c $(FS_TESTLIB)
tests_unit_check_room_CPPFLAGS = $(CZFS_DAEMON_CPPFLAGS)
tests_unit_check_room_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS)
tests_unit_check_room_LDADD = $(CZFS_DAEMON_LIBS) $(CHECK_LIBS)

BTREE_TESTLIB = tests/unit/btree_testlib.c tests/unit/btree_testlib.h
tests_unit_check_btree_SOURCES = tests/unit/check_btree.c $(BTREE_TESTLIB)
tests_unit_check_btree_cow_SOURCES = tests/unit/check_btree_cow.c $(BTREE_TESTLIB)
tests_unit_check_leafpack_SOURCES = tests/unit/check_leafpack.c $(BTREE_TESTLIB)
tests_unit_check_nodecache_SOURCES = tests/unit/check_nodecache.c $(BTREE_TESTLIB)

# The memory runtime's modules (src/cache) link its library too.
tests_unit_check_pagepool_CPPFLAGS = $(CZFS_CACHE_CPPFLAGS)
tests_unit_check_pagepool_LDADD = $(CZFS_CACHE_LIBS) $(CHECK_LIBS)
tests_unit_check_ccache_CPPFLAGS = $(CZFS_CACHE_CPPFLAGS)
tests_unit_check_ccache_LDADD = $(CZFS_CACHE_LIBS) $(CHECK_LIBS)
tests_unit_check_packcache_CPPFLAGS = $(CZFS_CACHE_CPPFLAGS)
tests_unit_check_packcache_LDADD = $(CZFS_CACHE_LIBS) $(CHECK_LIBS)
tests_unit_check_window_CPPFLAGS = $(CZFS_CACHE_CPPFLAGS)
tests_unit_check_window_LDADD = $(CZFS_CACHE_LIBS) $(CHECK_LIBS)

SMAP_TESTLIB = tests/unit/smap_testlib.c tests/unit/smap_testlib.h
tests_unit_check_spacemap_SOURCES = tests/unit/check_spacemap.c $(SMAP_TESTLIB)
tests_unit_check_spacemap_io_SOURCES = tests/unit/check_spacemap_io.c $(SMAP_TESTLIB)
tests_unit_check_discard_SOURCES = tests/unit/check_discard.c $(SMAP_TESTLIB) \
	$(FS_TESTLIB)
DAEMON_TESTLIB = $(FS_TESTLIB) tests/unit/daemon_testlib.c \
	tests/unit/daemon_testlib.h
tests_unit_check_load_SOURCES = tests/unit/check_load.c $(DAEMON_TESTLIB)
tests_unit_check_load_CPPFLAGS = $(CZFS_DAEMON_CPPFLAGS)
tests_unit_check_load_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS)
tests_unit_check_load_LDADD = $(CZFS_DAEMON_LIBS) $(CHECK_LIBS)
tests_unit_check_writeback_SOURCES = tests/unit/check_writeback.c \
	$(DAEMON_TESTLIB)
tests_unit_check_writeback_CPPFLAGS = $(CZFS_DAEMON_CPPFLAGS)
tests_unit_check_writeback_CFLAGS = $(AM_CFLAGS) $(FUSE_CFLAGS)
tests_unit_check_writeback_LDADD = $(CZFS_DAEMON_LIBS) $(CHECK_LIBS)
# The daemon's background threads, built from their source.
tests_unit_check_worker_SOURCES = tests/unit/check_worker.c \
	src/fuse/worker.c src/fuse/worker.h
tests_unit_check_worker_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/fuse
# The compact inodes' table, built from its source.
tests_unit_check_lookups_SOURCES = tests/unit/check_lookups.c \
	src/fuse/lookups.c src/fuse/lookups.h
tests_unit_check_lookups_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/fuse
