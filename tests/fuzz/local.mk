# The image-parsing fuzz target (./configure CC=clang --enable-fuzzing;
# run it with bench/fuzz) and the test that replays its regressions in
# every build.  Both parse through czfs_fuzz_image (fuzz_parse.c), which
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
endif

EXTRA_DIST += tests/fuzz/make-corpus tests/fuzz/regressions
