# unit tests of the superblock, checkpoints and space map
check_PROGRAMS += tests/unit/check_super
tests_unit_check_super_SOURCES = tests/unit/check_super.c
tests_unit_check_super_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_super_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/check_checkpoint
tests_unit_check_checkpoint_SOURCES = tests/unit/check_checkpoint.c
tests_unit_check_checkpoint_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_checkpoint_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/check_spacemap
tests_unit_check_spacemap_SOURCES = tests/unit/check_spacemap.c
tests_unit_check_spacemap_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_spacemap_LDADD = $(UNIT_LDADD)
