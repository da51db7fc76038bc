# superblock, checkpoints, space map
src_lib_libczfs_a_SOURCES += \
	src/lib/super.c src/lib/checkpoint.c src/lib/super.h \
	src/lib/spacemap.c src/lib/spacemap_io.c src/lib/spacemap_int.h src/lib/spacemap.h \
	src/lib/discard.c src/lib/discard.h \
	src/lib/grow.c
