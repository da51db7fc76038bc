# filled by the codec work
src_lib_libczfs_a_SOURCES +=
