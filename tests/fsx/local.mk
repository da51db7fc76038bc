# Helpers of the read-write tests (tests/integration/rw.mk): built, not run
# as tests.  They need neither the library nor Check, so their LDADD is
# empty (tests/unit/local.mk sets a global LDADD with both).
noinst_PROGRAMS += tests/fsx/czfs_fsx tests/fsx/renameat2
tests_fsx_czfs_fsx_SOURCES = tests/fsx/czfs_fsx.c tests/fsx/fsx_ops.c \
	tests/fsx/fsx_api.c tests/fsx/fsx_util.c tests/fsx/fsx.h
tests_fsx_czfs_fsx_LDADD =
tests_fsx_renameat2_SOURCES = tests/fsx/renameat2.c
tests_fsx_renameat2_LDADD =
