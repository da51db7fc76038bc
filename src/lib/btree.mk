# filled by the btree work
src_lib_libczfs_a_SOURCES +=
