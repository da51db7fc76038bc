# mkfs.czfs: scan a tree or read a tar, compress in parallel, bulk-load the B-tree.
sbin_PROGRAMS += mkfs/mkfs.czfs
mkfs_mkfs_czfs_SOURCES = \
	mkfs/main.c \
	mkfs/scan.c mkfs/scan.h \
	mkfs/tar.c mkfs/tar.h \
	mkfs/tardata.c mkfs/tardata.h \
	mkfs/preenc.c mkfs/preenc.h \
	mkfs/unpack.c mkfs/unpack.h \
	mkfs/pathtree.c mkfs/pathtree.h \
	mkfs/pipeline.c mkfs/pipeline.h \
	mkfs/prefetch.c mkfs/prefetch.h \
	mkfs/image.c mkfs/image.h \
	mkfs/writer.c mkfs/writer.h \
	mkfs/packing.c mkfs/packing.h \
	mkfs/runs.c mkfs/runs.h \
	mkfs/copies.c mkfs/copies.h \
	mkfs/progress.c mkfs/progress.h
mkfs_mkfs_czfs_CFLAGS = $(AM_CFLAGS) $(ARCHIVE_CFLAGS)
mkfs_mkfs_czfs_LDADD = $(CZFS_LIBS) $(ARCHIVE_LIBS)
