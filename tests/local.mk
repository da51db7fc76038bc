# Unit tests (Check, one program per module) and mounted integration tests.
UNIT_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
UNIT_LDADD = $(CZFS_LIBS) $(CHECK_LIBS)

check_PROGRAMS += tests/unit/check_base
tests_unit_check_base_SOURCES = tests/unit/check_base.c
tests_unit_check_base_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_base_LDADD = $(UNIT_LDADD)

include tests/unit/codec.mk
include tests/unit/btree.mk
include tests/unit/space.mk
include tests/integration/local.mk

TESTS += $(check_PROGRAMS)
