# The fuzz targets (./configure CC=clang --enable-fuzzing; bench/fuzz runs
# them): images (fuzz_image) and mkfs.czfs --tar's reader (fuzz_tar,
# CZFS_FUZZ_TARGET=tar); and the test that replays the image regressions
# in every build.  Images parse through czfs_fuzz_image (fuzz_parse.c), which
# also runs fsck's check and repairs.
FUZZ_PARSE_SOURCES = \
	tests/fuzz/fuzz.h \
	tests/fuzz/fuzz_parse.c \
	tests/fuzz/fuzz_fixup.c \
	$(FSCK_CHECK_SOURCES) \
	fsck/repair.c
FUZZ_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/fsck -I$(top_srcdir)/tests/fuzz

check_PROGRAMS += tests/unit/check_fuzz_regressions
TESTS += tests/unit/check_fuzz_regressions
tests_unit_check_fuzz_regressions_SOURCES = \
	tests/unit/check_fuzz_regressions.c $(FUZZ_PARSE_SOURCES)
tests_unit_check_fuzz_regressions_CPPFLAGS = $(FUZZ_CPPFLAGS)

if FUZZING
noinst_PROGRAMS += tests/fuzz/fuzz_image
tests_fuzz_fuzz_image_SOURCES = tests/fuzz/fuzz_image.c $(FUZZ_PARSE_SOURCES)
tests_fuzz_fuzz_image_CPPFLAGS = $(FUZZ_CPPFLAGS)
tests_fuzz_fuzz_image_LDFLAGS = -fsanitize=fuzzer
tests_fuzz_fuzz_image_LDADD = $(CZFS_LIBS)

# mkfs.czfs --tar's reader over the fuzzer's bytes.
noinst_PROGRAMS += tests/fuzz/fuzz_tar
tests_fuzz_fuzz_tar_SOURCES = tests/fuzz/fuzz_tar.c \
	mkfs/tar.c mkfs/tardata.c mkfs/pathtree.c mkfs/scan.c mkfs/copies.c \
	mkfs/progress.c mkfs/preenc.c mkfs/unpack.c
tests_fuzz_fuzz_tar_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/mkfs
tests_fuzz_fuzz_tar_CFLAGS = $(AM_CFLAGS) $(ARCHIVE_CFLAGS)
tests_fuzz_fuzz_tar_LDFLAGS = -fsanitize=fuzzer
tests_fuzz_fuzz_tar_LDADD = $(CZFS_LIBS) $(ARCHIVE_LIBS)
endif

EXTRA_DIST += tests/fuzz/make-corpus tests/fuzz/make-tar-corpus \
	tests/fuzz/regressions
