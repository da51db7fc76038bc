#!/bin/bash
# Memory follows use: a cold sequential read of a file many times the
# pool's low-water mark (cache_min) leaves the pool holding about that
# mark, not what was read: the clusters went to the kernel's page cache,
# and the idle trimmer gives the free pages back (pool.resident_pages).
# Random reads afterwards still return the right data, and a read of
# another block of a cluster read just before is a cluster-cache hit
# (where it is not in the page cache already: -o random_reads=page).
# The node cache of a local image keeps its base of 512 nodes.
. "$top_srcdir/tests/integration/lib.sh"
require_fuse

sample_files "$T/c" "libs bins mixed"
mkdir -p "$T/src"
cat "$T/c/libs" "$T/c/bins" "$T/c/mixed" "$T/c/libs" "$T/c/bins" >"$T/src/data"
"$MKFS" -q -C 64k -d "$T/src" "$T/img"
size=$(stat -c %s "$T/src/data")
low=$((4 << 20))

stat_of() {
	czfs_counter "$T/mnt" "$1"
}

# trimmed WHAT: wait (a state, not a time) until the trimmer has left at
# most cache_min resident, or fail; 60 s guards against a hang on a
# loaded machine.
bound=$((low / 4096))
trimmed() {
	local i
	for i in $(seq 1 600); do
		[ "$(stat_of pool.resident_pages)" -le "$bound" ] && return 0
		sleep 0.1
	done
	fail "the pool kept $(stat_of pool.resident_pages) pages after $1"
}

# (random_reads=page: by default the second block of a cluster read at
# random is in the page cache already, no request at all: random_reads.sh)
czfs_mount "$T/img" "$T/mnt" -o ro,cache_min=4M,random_reads=page
drop_caches
cmp "$T/src/data" "$T/mnt/data" || fail "sequential read differs"
[ "$(stat_of ccache.target_pages)" -le $((low / 4096 * 2)) ] ||
	fail "a sequential read grew the target: $(stat_of ccache.target_pages) pages"
[ "$(stat_of ccache.lru_pages)" -le "$(stat_of ccache.target_pages)" ] ||
	fail "the LRU list holds more than its target"

trimmed "the read"
res=$(stat_of pool.resident_pages)
note "read $((size >> 20)) MiB: pool.resident_pages $res (bound $bound)"
[ "$res" -lt $((size / 4096 / 8)) ] || fail "resident pages not well below what was read"
# the node cache of a local image keeps its base (fuse/main.c) after a
# read that asked for no evicted node again
[ "$(stat_of nodecache.limit)" = 512 ] ||
	fail "the node cache keeps $(stat_of nodecache.limit) nodes, not 512"

# Random 4 KiB reads, the kernel told not to read ahead: right data, and
# the second block of a cluster is served by the cluster cache.
drop_caches
hits0=$(stat_of ccache.hits)
python3 - "$T/src/data" "$T/mnt/data" <<'PY' || fail "random reads differ"
import os, random, sys
a, b = (os.open(p, os.O_RDONLY) for p in sys.argv[1:3])
os.posix_fadvise(b, 0, 0, os.POSIX_FADV_RANDOM)
size = os.fstat(a).st_size
rnd = random.Random(5)
for _ in range(200):
    c = rnd.randrange(size // 65536) * 65536
    for off in (c, c + 32768):
        assert os.pread(a, 4096, off) == os.pread(b, 4096, off), off
PY
hits=$(( $(stat_of ccache.hits) - hits0 ))
note "random reads: $hits cluster-cache hits for 200 second blocks"
[ "$hits" -ge 150 ] || fail "a cluster read just before was not a hit ($hits)"
czfs_umount "$T/mnt"

# The write path: dirty clusters are never the trimmer's; written data
# reads back after the idle trims.
"$MKFS" -q -s 256M "$T/rw.img"
czfs_mount "$T/rw.img" "$T/mnt" -o cache_min=4M
cp "$T/src/data" "$T/mnt/data"
trimmed "writeback"	# (commit=5 s), then the idle ticks
drop_caches
cmp "$T/src/data" "$T/mnt/data" || fail "written data differs after the trims"
czfs_umount "$T/mnt"
czfs_mount "$T/rw.img" "$T/mnt" -o ro
cmp "$T/src/data" "$T/mnt/data" || fail "written data differs after remount"
czfs_umount "$T/mnt"
