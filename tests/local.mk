# Unit tests (Check) and mounted integration tests.
UNIT_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
UNIT_LDADD = $(CZFS_LIBS) $(CHECK_LIBS)

check_PROGRAMS += tests/unit/check_base
tests_unit_check_base_SOURCES = tests/unit/check_base.c
tests_unit_check_base_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_base_LDADD = $(UNIT_LDADD)

TESTS += $(check_PROGRAMS)
