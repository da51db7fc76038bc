noinst_LIBRARIES += src/lib/libczfs.a
src_lib_libczfs_a_CFLAGS = $(AM_CFLAGS) $(LZ4_CFLAGS) $(ZSTD_CFLAGS)
src_lib_libczfs_a_SOURCES = \
	src/czfs_fs.h \
	src/lib/util.c src/lib/util.h \
	src/lib/log.c src/lib/log.h \
	src/lib/crc32c.c src/lib/crc32c.h \
	src/lib/bdev.c src/lib/bdev_mem.c src/lib/bdev.h \
	src/lib/blockcrc.c src/lib/blockcrc.h

# Write logs for power-loss replay: the recording device and the reader.
src_lib_libczfs_a_SOURCES += \
	src/lib/bdev_log.c src/lib/wlog.c src/lib/wlog.h

include src/lib/codec.mk
include src/lib/btree.mk
include src/lib/space.mk

src_lib_libczfs_a_SOURCES += \
	src/lib/alloc.h \
	src/lib/inode.c src/lib/inode.h \
	src/lib/dir.c src/lib/dir.h \
	src/lib/xattr.c src/lib/xattr.h \
	src/lib/acl.c src/lib/acl.h \
	src/lib/chattr.c src/lib/chattr.h \
	src/lib/fs.c src/lib/fs.h \
	src/lib/imagelock.c src/lib/imagelock.h \
	src/lib/mountinfo.c src/lib/mountinfo.h \
	src/lib/commit.c \
	src/lib/dir_update.c src/lib/inode_update.c \
	src/lib/cluster_update.c src/lib/xattr_update.c \
	src/lib/item_free.c src/lib/item_free.h \
	src/lib/fileread.c src/lib/pack.c src/lib/pack.h

# Batched reads of the image's data blocks (the daemon's read path).
src_lib_libczfs_a_SOURCES += \
	src/lib/iobatch.c src/lib/iobatch.h
