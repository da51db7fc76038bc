# unit tests of the codec work
check_PROGRAMS += tests/unit/check_compress tests/unit/check_cluster \
	tests/unit/check_hash
tests_unit_check_compress_SOURCES = tests/unit/check_compress.c
tests_unit_check_compress_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_compress_LDADD = $(UNIT_LDADD)
tests_unit_check_cluster_SOURCES = tests/unit/check_cluster.c
tests_unit_check_cluster_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_cluster_LDADD = $(UNIT_LDADD)
tests_unit_check_hash_SOURCES = tests/unit/check_hash.c
tests_unit_check_hash_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_hash_LDADD = $(UNIT_LDADD)
