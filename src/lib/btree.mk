# filled by the btree work
src_lib_libczfs_a_SOURCES += \
	src/lib/btree.h src/lib/btree_int.h \
	src/lib/node.c src/lib/nodecache.c \
	src/lib/btree.c src/lib/btree_cow.c src/lib/btree_build.c \
	src/lib/btree_alloc.c src/lib/btree_leafpack.c src/lib/btree_unpack.c
