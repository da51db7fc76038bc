# fsck.czfs: check an image, repair what is safe, extract its tree (or tar it).
# The check itself (everything but main.c) is also linked into the fuzz
# target and the fuzz-regression test.
FSCK_CHECK_SOURCES = \
	fsck/fsck.h \
	fsck/check.c \
	fsck/report.c \
	fsck/walk.c \
	fsck/items.c \
	fsck/links.c \
	fsck/space.c \
	fsck/packs.c
sbin_PROGRAMS += fsck/fsck.czfs
fsck_fsck_czfs_SOURCES = \
	fsck/main.c \
	$(FSCK_CHECK_SOURCES) \
	fsck/open.c \
	fsck/repair.c \
	fsck/tune.c \
	fsck/extract.c fsck/extract.h \
	fsck/extract_tar.c
fsck_fsck_czfs_CFLAGS = $(AM_CFLAGS) $(ARCHIVE_CFLAGS)
fsck_fsck_czfs_CPPFLAGS = $(CZFS_REMOTE_CPPFLAGS)
fsck_fsck_czfs_LDADD = $(CZFS_REMOTE_LIBS) $(ARCHIVE_LIBS)
