# filled by the space work
src_lib_libczfs_a_SOURCES +=
