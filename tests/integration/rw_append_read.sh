#!/bin/bash
# Readers of a file's last pages while it is appended to
# (tests/integration/rw_append_read.py): every byte they read is the
# appended one.  It fails on a mount that lets the kernel drop its page
# cache when a GETATTR sees a new mtime (FUSE_CAP_AUTO_INVAL_DATA): the
# drop races with the write-through append, and a reader then caches the
# old end of file, with zeros where the append went (seen 1-3 times in
# 30 s before main.c declined it).
#   CZFS_APPEND_SECONDS  how long it runs (default 20)
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/rwlib.sh"
require_fuse

rw_setup 4G
timeout -s KILL $((${CZFS_APPEND_SECONDS:-20} + 120)) \
	python3 "$top_srcdir/tests/integration/rw_append_read.py" "$M" \
	"${CZFS_APPEND_SECONDS:-20}" || fail "a reader saw bytes that were not appended"
if rw_can_remount; then
	rw_remount
	python3 "$top_srcdir/tests/integration/rw_append_read.py" "$M" verify ||
		fail "append.log after a remount"
	rw_umount
	rw_fsck
fi
