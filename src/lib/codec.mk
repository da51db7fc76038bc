# Compressors, the cluster codec and the name hash.
src_lib_libczfs_a_SOURCES += \
	src/lib/compress.c src/lib/compress.h src/lib/compress_int.h \
	src/lib/compress_lz4.c src/lib/compress_zstd.c \
	src/lib/cluster.c src/lib/cluster.h src/lib/cluster_int.h \
	src/lib/cluster_check.c \
	src/lib/cluster_blockmap.c src/lib/cluster_slice.c \
	src/lib/hash.c src/lib/hash.h
