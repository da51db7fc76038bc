# unit tests of the btree work
check_PROGRAMS += tests/unit/check_node
tests_unit_check_node_SOURCES = tests/unit/check_node.c
tests_unit_check_node_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_node_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/check_btree
tests_unit_check_btree_SOURCES = tests/unit/check_btree.c \
	tests/unit/btree_testlib.c tests/unit/btree_testlib.h
tests_unit_check_btree_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_btree_LDADD = $(UNIT_LDADD)

check_PROGRAMS += tests/unit/check_btree_cow
tests_unit_check_btree_cow_SOURCES = tests/unit/check_btree_cow.c \
	tests/unit/btree_testlib.c tests/unit/btree_testlib.h
tests_unit_check_btree_cow_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_btree_cow_LDADD = $(UNIT_LDADD)
