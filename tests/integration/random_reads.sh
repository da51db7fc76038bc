#!/bin/bash
# A read that is not sequential leaves its whole clusters in the kernel's
# page cache (-o random_reads=cluster, the default; push.h): a 4 KiB read
# of a 64 KiB cluster stores the other 60 KiB after its reply (fincore:
# the cluster's 16 pages, not the file's), the next reads in that cluster
# cost no READ, and what was stored is the file's data.  Not for a
# sequential reader (the kernel's readahead asks for what it reads), not
# for O_DIRECT reads, not while the file is open for writing, and not
# with -o random_reads=page.
. "$top_srcdir/tests/integration/lib.sh"
require_fuse
STAT="$top_builddir/src/fuse/czfs-stat"

mkdir -p "$T/src"
cat /usr/include/*.h /usr/include/*/*.h >"$T/text" 2>/dev/null || true
head -c 1M "$T/text" >"$T/src/f"
[ "$(stat -c %s "$T/src/f")" = 1048576 ] || fail "no headers to make data from"
"$MKFS" -q -f -c lz4 -C 64k -s 64M -d "$T/src" "$T/img" || fail "mkfs"

stat_of() {	# NAME: a counter of the mount's
	"$STAT" "$T/mnt" | awk -v k="$1" '$1 == k { print $2 }'
}
cached() {	# FILE: its bytes in the page cache
	fincore -n -b -o RES "$1" | tr -d " "
}
# pread FILE OFFSET [direct]: 4 KiB, as a random reader reads
pread() {
	python3 - "$@" <<'PY' || fail "pread $*"
import mmap, os, sys
flags = os.O_RDONLY | (os.O_DIRECT if len(sys.argv) > 3 else 0)
fd = os.open(sys.argv[1], flags)
buf = mmap.mmap(-1, 4096)
assert os.preadv(fd, [buf], int(sys.argv[2])) == 4096
PY
}

for mode in ro rw; do
	czfs_mount "$T/img" "$T/mnt" -o "$mode"
	caches_lock		# no other test's drop while pages are counted
	pread "$T/mnt/f" $((72 << 10))
	# the store runs after the reply: wait for it
	tries=0
	until [ "$(cached "$T/mnt/f")" -ge 65536 ]; do
		tries=$((tries + 1))
		[ "$tries" -le 100 ] || fail "$mode: the cluster read was not stored ($(cached "$T/mnt/f") bytes)"
		sleep 0.1
	done
	[ "$(cached "$T/mnt/f")" = 65536 ] ||
		fail "$mode: $(cached "$T/mnt/f") bytes cached after a 4 KiB read (its cluster: 65536)"
	[ "$(stat_of push.cluster_rests)" = 1 ] || fail "$mode: $(stat_of push.cluster_rests) stores"
	[ "$(stat_of push.cluster_rest_bytes)" = 61440 ] ||
		fail "$mode: $(stat_of push.cluster_rest_bytes) bytes stored"
	reads=$(stat_of fuse.read_requests)
	pread "$T/mnt/f" $((100 << 10))
	pread "$T/mnt/f" $((64 << 10))
	cmp <(dd if="$T/mnt/f" bs=64k skip=1 count=1 status=none) \
	    <(dd if="$T/src/f" bs=64k skip=1 count=1 status=none) ||
		fail "$mode: the stored cluster differs from the file"
	[ "$(stat_of fuse.read_requests)" = "$reads" ] ||
		fail "$mode: reads in a stored cluster made $(( $(stat_of fuse.read_requests) - reads )) READs"
	# O_DIRECT: the kernel keeps nothing, nor does the daemon store
	pread "$T/mnt/f" $((520 << 10)) direct
	[ "$(stat_of push.cluster_rests)" = 1 ] || fail "$mode: an O_DIRECT read stored its cluster"
	caches_unlock
	czfs_umount "$T/mnt"
done

note "a sequential reader stores nothing"
czfs_mount "$T/img" "$T/mnt" -o ro
dd if="$T/mnt/f" of=/dev/null bs=128k status=none
[ "$(stat_of push.cluster_rests)" = 0 ] || fail "dd: $(stat_of push.cluster_rests) clusters stored"
czfs_umount "$T/mnt"

note "nor does a file open for writing"
czfs_mount "$T/img" "$T/mnt"
exec {w}>>"$T/mnt/f"
pread "$T/mnt/f" $((200 << 10))
pread "$T/mnt/f" $((330 << 10))
exec {w}>&-
[ "$(stat_of push.cluster_rests)" = 0 ] || fail "a file open for writing had its clusters stored"
czfs_umount "$T/mnt"

note "-o random_reads=page"
czfs_mount "$T/img" "$T/mnt" -o ro,random_reads=page
caches_lock
pread "$T/mnt/f" $((72 << 10))
[ "$(stat_of push.cluster_rests)" = 0 ] || fail "random_reads=page stored a cluster"
[ "$(cached "$T/mnt/f")" = 4096 ] || fail "random_reads=page: $(cached "$T/mnt/f") bytes cached"
caches_unlock
czfs_umount "$T/mnt"
