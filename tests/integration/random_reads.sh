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

mkdir -p "$T/src"
cat /usr/include/*.h /usr/include/*/*.h >"$T/text" 2>/dev/null || true
head -c 1M "$T/text" >"$T/src/f"
[ "$(stat -c %s "$T/src/f")" = 1048576 ] || fail "no headers to make data from"
"$MKFS" -q -f -c lz4 -C 64k -s 64M -d "$T/src" "$T/img" || fail "mkfs"

stat_of() {	# NAME: a counter of the mount's
	czfs_counter "$T/mnt" "$1"
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

# cluster_reads MODE: the checks above on a new mount; returns 1 when the
# page cache lost pages meanwhile (a drop of the caches outside this
# suite's lock, such as a suite in another chroot), for another try: a
# real loss of the stored pages fails every try
cluster_reads() {
	local mode=$1 tries=0 reads
	czfs_mount "$T/img" "$T/mnt" -o "$mode"
	caches_lock		# no drop by this suite while pages are counted
	pread "$T/mnt/f" $((72 << 10))
	# the store runs after the reply: wait for it
	until [ "$(stat_of push.cluster_rests)" = 1 ]; do
		tries=$((tries + 1))
		[ "$tries" -le 100 ] || fail "$mode: the cluster read was not stored"
		sleep 0.1
	done
	[ "$(stat_of push.cluster_rest_bytes)" = 61440 ] ||
		fail "$mode: $(stat_of push.cluster_rest_bytes) bytes stored"
	[ "$(cached "$T/mnt/f")" -le 65536 ] ||
		fail "$mode: $(cached "$T/mnt/f") bytes cached after a 4 KiB read (its cluster: 65536)"
	reads=$(stat_of fuse.read_requests)
	if [ "$(cached "$T/mnt/f")" = 65536 ]; then
		pread "$T/mnt/f" $((100 << 10))
		pread "$T/mnt/f" $((64 << 10))
	fi
	# A drop between the count and the reads makes one of them a READ,
	# which, random too, stores the cluster again (all 16 pages cached
	# once more): a second store tells it from a read the kernel's pages
	# should have answered.  The store follows the reply: wait for it.
	if [ "$(stat_of fuse.read_requests)" != "$reads" ]; then
		for tries in $(seq 1 50); do
			[ "$(stat_of push.cluster_rests)" = 1 ] || break
			sleep 0.1
		done
	fi
	if [ "$(cached "$T/mnt/f")" != 65536 ] ||
	   [ "$(stat_of push.cluster_rests)" != 1 ]; then
		caches_unlock
		czfs_umount "$T/mnt"
		return 1
	fi
	[ "$(stat_of fuse.read_requests)" = "$reads" ] ||
		fail "$mode: reads in a stored cluster made $(( $(stat_of fuse.read_requests) - reads )) READs"
	cmp <(dd if="$T/mnt/f" bs=64k skip=1 count=1 status=none) \
	    <(dd if="$T/src/f" bs=64k skip=1 count=1 status=none) ||
		fail "$mode: the stored cluster differs from the file"
	# O_DIRECT: the kernel keeps nothing, nor does the daemon store
	pread "$T/mnt/f" $((520 << 10)) direct
	[ "$(stat_of push.cluster_rests)" = 1 ] || fail "$mode: an O_DIRECT read stored its cluster"
	caches_unlock
	czfs_umount "$T/mnt"
}

for mode in ro rw; do
	for try in 1 2 3 4; do
		cluster_reads "$mode" && break
		[ "$try" -lt 4 ] || fail "$mode: the page cache was emptied during every try"
		note "$mode: the page cache lost pages meanwhile; again"
	done
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

note "a read into a hole stores only the cluster that holds data"
mkdir -p "$T/src3"
head -c 64K "$T/text" >"$T/src3/s"		# a cluster, a hole, a cluster
head -c 64K "$T/text" | dd of="$T/src3/s" bs=64k seek=2 conv=notrunc status=none
"$MKFS" -q -f -c lz4 -C 64k -s 64M -d "$T/src3" "$T/img3" || fail "mkfs (sparse)"
czfs_mount "$T/img3" "$T/mnt" -o ro
python3 - "$T/mnt/s" "$T/src3/s" <<'PY' || fail "a read across a hole differs"
import os, sys
m, s = os.open(sys.argv[1], os.O_RDONLY), os.open(sys.argv[2], os.O_RDONLY)
assert os.pread(m, 8192, 60 << 10) == os.pread(s, 8192, 60 << 10)
PY
tries=0
until [ "$(stat_of push.cluster_rest_bytes)" = 61440 ]; do
	tries=$((tries + 1))
	[ "$tries" -le 100 ] || fail "hole: $(stat_of push.cluster_rest_bytes) bytes stored (the data cluster's 61440)"
	sleep 0.1
done
cmp "$T/mnt/s" "$T/src3/s" || fail "hole: the file differs after the store"
czfs_umount "$T/mnt"

note "-o random_reads=page"
czfs_mount "$T/img" "$T/mnt" -o ro,random_reads=page
caches_lock
pread "$T/mnt/f" $((72 << 10))
[ "$(stat_of push.cluster_rests)" = 0 ] || fail "random_reads=page stored a cluster"
# (no more than the page read; less if a drop came meanwhile)
[ "$(cached "$T/mnt/f")" -le 4096 ] || fail "random_reads=page: $(cached "$T/mnt/f") bytes cached"
caches_unlock
czfs_umount "$T/mnt"

# Many readers at once on a pool smaller than the file (cache_size=4M),
# random ones beside sequential ones whose readahead READs arrive out of
# order (and so look random): a store waits for pages that a READ in
# flight holds, so it must hold nothing that READ needs (its admission,
# its clusters: push.h).  Every byte read is checked; a hang is caught.
note "random and sequential readers at once, a 4 MiB pool"
mkdir -p "$T/src2"
python3 - "$T/text" "$T/src2/g" <<'PY' || fail "making the data"
import sys
text = open(sys.argv[1], "rb").read()[:1 << 20]
with open(sys.argv[2], "wb") as f:
    for i in range(6144):		# 24 MiB, each 4 KiB marked by its place
        at = (i * 4099) % (len(text) - 4096)
        f.write(b"%08d" % i + text[at:at + 4088])
PY
"$MKFS" -q -f -c lz4 -C 64k -s 64M -d "$T/src2" "$T/img2" || fail "mkfs"
# reader KIND SEED [SIZE]: 3000 reads, random (1-20 KiB anywhere) or
# sequential (SIZE each), each compared with the source; the file's pages
# are dropped every 64 reads so that reads keep reaching the daemon
reader() {
	python3 - "$T/mnt/g" "$T/src2/g" "$@" <<'PY'
import os, random, sys
m, s = os.open(sys.argv[1], os.O_RDONLY), os.open(sys.argv[2], os.O_RDONLY)
size, kind, r = os.fstat(s).st_size, sys.argv[3], random.Random(sys.argv[4])
off = 0
for n in range(3000):
    if n % 64 == 0:
        os.posix_fadvise(m, 0, 0, os.POSIX_FADV_DONTNEED)
    if kind == "random":
        ln = r.randrange(1, 20 << 10)
        off = r.randrange(0, size - ln)
    else:
        ln = int(sys.argv[5])
        off = (off + ln) % (size - ln)
    if os.pread(m, ln, off) != os.pread(s, ln, off):
        sys.exit("%s reader: %d bytes at %d differ" % (kind, ln, off))
PY
}
for mode in rw ro; do
	czfs_mount "$T/img2" "$T/mnt" -o "$mode,cache_size=4M"
	pids=()
	for seed in 1 2 3; do
		reader random "$seed$mode" & pids+=($!)
	done
	for bs in 4096 65536; do
		reader sequential "$bs" "$bs" & pids+=($!)
	done
	# 240 s: a sanitizer build on a loaded machine, not a hang
	for i in $(seq 1 2400); do
		alive=0
		for p in "${pids[@]}"; do
			kill -0 "$p" 2>/dev/null && alive=1
		done
		[ "$alive" = 1 ] || break
		sleep 0.1
	done
	if [ "$alive" = 1 ]; then
		czfs_abort "$T/mnt"
		fail "$mode: readers still stuck after 240 s (a store waiting for a READ that waits for it?)"
	fi
	for p in "${pids[@]}"; do
		wait "$p" || fail "$mode: a reader read wrong data"
	done
	[ "$(stat_of push.cluster_rests)" -gt 0 ] ||
		fail "$mode: no random read stored its clusters"
	note "$mode: $(stat_of push.cluster_rests) stores, $(stat_of fuse.read_requests) READs"
	czfs_umount "$T/mnt"
done
