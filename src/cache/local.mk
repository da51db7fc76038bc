# The daemon's memory runtime: page pool, cluster cache, window cache, pack
# cache and latency counters.  It knows pages and clusters, not the format; it uses
# only the library's helpers (util.h).  czfs-fuse and the unit tests of
# these modules link it.
noinst_LIBRARIES += src/cache/libczfscache.a
src_cache_libczfscache_a_CPPFLAGS = $(CZFS_CACHE_CPPFLAGS)
src_cache_libczfscache_a_SOURCES = \
	src/cache/pagepool.c src/cache/pagepool.h \
	src/cache/ccache.c src/cache/ccache.h \
	src/cache/window.c src/cache/window.h \
	src/cache/packcache.c src/cache/packcache.h \
	src/cache/latency.c src/cache/latency.h
