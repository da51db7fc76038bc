# dump.czfs: show the superblock, checkpoints, one inode, statistics.
sbin_PROGRAMS += dump/dump.czfs
dump_dump_czfs_SOURCES = \
	dump/main.c dump/dump.h \
	dump/show.c \
	dump/inode.c \
	dump/stats.c \
	dump/out.c dump/out.h
dump_dump_czfs_CFLAGS = $(AM_CFLAGS)
dump_dump_czfs_CPPFLAGS = $(CZFS_REMOTE_CPPFLAGS)
dump_dump_czfs_LDADD = $(CZFS_REMOTE_LIBS) -lm
