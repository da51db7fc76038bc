#!/bin/bash
# The seed mechanisms as mount options: every map= mode, bounce copies,
# reserved pages, request sizes and alignment, O_DIRECT and small caches
# all read back identical data; the counters show each mechanism at work.
. "$top_srcdir/tests/integration/lib.sh"
require_fuse
STAT="$top_builddir/src/fuse/czfs-stat"

sample_files "$T/c" "libs bins text"
mkdir -p "$T/src"
cat "$T/c/libs" "$T/c/bins" >"$T/src/data"
cp "$T/c/text" "$T/src/text"
head -c 5000000 /dev/urandom >"$T/src/random"
"$MKFS" -q -C 16k -d "$T/src" "$T/img"
(cd "$T/src" && md5sum data text random) >"$T/want"

# stat_of NAME: a counter of the mount at $T/mnt
stat_of() {
	czfs_counter "$T/mnt" "$1"
}

# read_all OPTS [ARGS...]: mount with OPTS (and the daemon's ARGS), read
# every file (sequentially, and one of them at random offsets), check the
# data, keep the counters in $T/stats (and those of the sequential reads
# alone in $T/stats.seq).
# Counts that depend on what reaches the image are taken with "$QUIET":
# one thread (-s) and sync_prefetch (a reader loads its prefetch window
# itself, no worker races it): the same at every run, loaded machine or
# not.  The other runs show that the data is right whatever the timing.
QUIET=(-s)
QUIET_OPTS=sync_prefetch
read_all() {
	czfs_mount "$T/img" "$T/mnt" -o "$1" "${@:2}"
	(cd "$T/mnt" && md5sum data text random) >"$T/got"
	diff "$T/want" "$T/got" || fail "data differs with -o $1"
	"$STAT" "$T/mnt" >"$T/stats.seq"
	# DROP=1: the random reads reach the daemon, not the kernel's copy
	# from the reads above; they keep what they load, and so fill a small
	# pool (a sequential reader's pages are recycled as it goes).
	# READERS=1: first twelve readers at once (O_DIRECT, each at its own
	# place in data), each with its prefetch stream and staging: they
	# once held the whole pool between them, each waiting for the
	# others' pages.  No reader may fail, nor any wait for a page give up.
	local f k files=text pids=()
	if [ -n "${DROP:-}" ]; then
		drop_caches
		files="text data"
	fi
	if [ -n "${READERS:-}" ]; then
		for k in $(seq 1 12); do
			dd if="$T/mnt/data" of=/dev/null bs=1M iflag=direct \
				skip=$((k * 2)) 2>/dev/null &
			pids+=($!)
		done
		for k in "${pids[@]}"; do
			wait "$k" || fail "a concurrent reader failed with -o $1"
		done
		! log_has "$T/mnt" 'pool exhausted\|no page for' ||
			fail "a wait for pages gave up with -o $1"
	fi
	for f in $files; do
		python3 - "$T/src/$f" "$T/mnt/$f" <<'PY' || fail "random reads of $f differ with -o $1"
import os, random, sys
a, b = (open(p, 'rb') for p in sys.argv[1:3])
rnd = random.Random(3)
for _ in range(300):
    off = rnd.randrange(os.path.getsize(sys.argv[1])); n = rnd.choice([1, 5000, 70000])
    a.seek(off); b.seek(off)
    assert a.read(n) == b.read(n), (off, n)
PY
	done
	"$STAT" "$T/mnt" >"$T/stats"
	czfs_umount "$T/mnt"
}

counter() {
	awk -v k="$1" '$1 == k { print $2 }' "$T/stats"
}

seq_counter() {	# of the sequential reads: request shaping is theirs
	awk -v k="$1" '$1 == k { print $2 }' "$T/stats.seq"
}

note "map=vm_map_ram (default): runs need no mapping, the rest is copied"
read_all cache_size=64M
maps=$(counter window.maps)
[ "$maps" -gt 1000 ] || fail "window.maps $maps"
[ "$(counter window.syscalls)" = 0 ] || fail "vm_map_ram made mapping syscalls"
[ "$(counter window.identity)" -gt $((maps / 2)) ] || fail "identity maps"
[ $(( $(counter window.identity) + $(counter window.bounce) )) = "$maps" ] ||
	fail "maps neither identity nor bounce"

note "map=vmap: a fresh mapping for every buffer"
read_all map=vmap,cache_size=64M
[ "$(counter window.vmaps)" = "$(counter window.maps)" ] || fail "vmap: every map is fresh"
[ "$(counter window.syscalls)" -ge $((3 * $(counter window.maps))) ] || fail "vmap syscalls"

note "scattered pages mapped into slots; tiny caches"
read_all map_scattered=slot,cache_size=4M
[ "$(counter window.bounce)" = 0 ] || fail "slot mode copied pages"
[ $(( $(counter window.identity) + $(counter window.slot_maps) + $(counter window.slot_reuse) )) = \
  "$(counter window.maps)" ] || fail "slot mode: maps neither identity nor slots"
read_all cache_size=4M,reserved_pages=16
[ "$(counter pool.reserve_size)" = 16 ] || fail "reserve size"
# punch: evicted pages go back to the kernel; without a reserve, a 4 MiB
# pool must reclaim for decompression; with one, the reserve serves first.
# The random reads, which keep what they load, fill the pool.
DROP=1 READERS=1 read_all cache_size=4M,reclaim=punch
DROP=1 READERS=1 read_all cache_size=4M,reserved_pages=64,reclaim=punch
DROP=1 read_all cache_size=4M,reclaim=punch,$QUIET_OPTS "${QUIET[@]}"
[ "$(counter alloc.reclaims)" -gt 0 ] || fail "no reclaim with a 4M pool"
[ "$(counter pool.reserve_hits)" = 0 ] || fail "reserve hits without a reserve"
DROP=1 read_all cache_size=4M,reserved_pages=64,reclaim=punch,$QUIET_OPTS "${QUIET[@]}"
[ "$(counter pool.reserve_hits)" -gt 0 ] || { grep -E "^(pool|alloc|ccache)\." "$T/stats" >&2; fail "the reserve served nothing with a 4M pool"; }

note "request sizes: aligned against unaligned, O_DIRECT"
# One run of each mode, quiet: with prefetch workers a reader that
# overtakes prefetch loads clusters itself, and the two may read a window
# twice, as many times as the timing makes.
declare -A n_req=() part=() whole=()
for mode in aligned unaligned; do
	o=direct_io,max_request=128k,cache_size=64M,$QUIET_OPTS
	[ "$mode" = unaligned ] && o=$o,unaligned_requests
	read_all "$o" "${QUIET[@]}"
	[ "$(counter backing.max_request)" = 131072 ] || fail "max_request"
	[ "$(counter 'backing.read_size.<=256k')" = 0 ] || fail "a request above max_request"
	n_req[$mode]=$(seq_counter backing.data_requests)
	whole[$mode]=$(seq_counter backing.data_whole_requests)
	part[$mode]=$((n_req[$mode] - whole[$mode]))
done
note "data requests: aligned ${n_req[aligned]} (${part[aligned]} partial), unaligned ${n_req[unaligned]} (${part[unaligned]} partial)"
# aligned streams read up to a boundary past each file's end: 3 files
[ "${n_req[aligned]}" -le $((n_req[unaligned] + 3)) ] || fail "alignment adds requests"
[ "${part[aligned]}" -lt "${part[unaligned]}" ] ||
	fail "alignment does not reduce the partial requests"
[ $((whole[aligned] * 10)) -gt $((n_req[aligned] * 7)) ] || fail "aligned requests are mostly not whole"
# and with prefetch workers (timing decides how many requests) the data
# is the same
read_all direct_io,max_request=128k,cache_size=64M

note "requests larger than one temp allocation (1 MiB) are staged too"
# a URL mount's default is 4M; a staged request of 4 MiB is taken in
# parts (before, its allocation failed and every cluster was read apart)
read_all max_request=4M,cache_size=64M,$QUIET_OPTS "${QUIET[@]}"
[ "$(counter backing.max_request)" = 4194304 ] || fail "max_request=4M"
[ "$(seq_counter alloc.stage_count)" -gt 0 ] || fail "max_request=4M: nothing was staged"
[ "$(seq_counter 'backing.read_size.>2048k')" -gt 0 ] ||
	fail "max_request=4M: no request above 2 MiB"

note "bad option values"
for o in map=vmalloc map_scattered=copy reclaim=drop max_request=3k max_request=8M cache_size=0; do
	st=0
	"$FUSE" "$T/img" "$T/mnt" -f -o "$o" 2>"$T/err" || st=$?
	[ "$st" -ne 0 ] || fail "-o $o accepted"
	grep -q "bad value" "$T/err" || fail "-o $o: $(cat "$T/err")"
done
