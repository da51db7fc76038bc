# Unit tests (Check, one program per module) and mounted integration tests.
TESTS_ENVIRONMENT = top_builddir='$(abs_top_builddir)' \
	top_srcdir='$(abs_top_srcdir)' CZFS_SANITIZE='$(CZFS_SANITIZE)' \
	CZFS_CORPUS="$$($(abs_top_srcdir)/tests/find-corpus 2>/dev/null)"; \
	export top_builddir top_srcdir CZFS_SANITIZE CZFS_CORPUS;
EXTRA_DIST += tests/find-corpus
UNIT_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
UNIT_LDADD = $(CZFS_LIBS) $(CHECK_LIBS)

check_PROGRAMS += tests/unit/check_base
tests_unit_check_base_SOURCES = tests/unit/check_base.c
tests_unit_check_base_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_base_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/check_pagepool
tests_unit_check_pagepool_SOURCES = tests/unit/check_pagepool.c
tests_unit_check_pagepool_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_pagepool_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/check_ccache
tests_unit_check_ccache_SOURCES = tests/unit/check_ccache.c
tests_unit_check_ccache_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_ccache_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/check_meta
tests_unit_check_meta_SOURCES = tests/unit/check_meta.c
tests_unit_check_meta_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_meta_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/check_window
tests_unit_check_window_SOURCES = tests/unit/check_window.c
tests_unit_check_window_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_window_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/check_iobatch
tests_unit_check_iobatch_SOURCES = tests/unit/check_iobatch.c
tests_unit_check_iobatch_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_iobatch_LDADD = $(UNIT_LDADD)

include tests/unit/codec.mk
include tests/unit/btree.mk
include tests/unit/space.mk
include tests/integration/local.mk

TESTS += $(check_PROGRAMS)
