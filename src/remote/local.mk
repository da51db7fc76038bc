# Remote images (http, https, s3) through libcurl, read-only, on the
# format library: a backing device, and the one image open the front ends
# call (image.h), which tells a URL from a path.
noinst_LIBRARIES += src/remote/libczfsremote.a
src_remote_libczfsremote_a_CPPFLAGS = $(CZFS_REMOTE_CPPFLAGS)
src_remote_libczfsremote_a_CFLAGS = $(AM_CFLAGS) $(CURL_CFLAGS)
src_remote_libczfsremote_a_SOURCES = \
	src/remote/image.c src/remote/image.h \
	src/remote/remote.h src/remote/bdev_http.c \
	src/remote/http.c src/remote/http.h \
	src/remote/rcache.c src/remote/rcache.h \
	src/remote/url.c src/remote/url.h \
	src/remote/s3auth.c src/remote/s3auth.h
