#!/bin/bash
# Background recompression (issue 12): clusters written back block by
# block while hot are compressed again once cold (-o recompress=SECONDS).
# For each CODEC:CLUSTER: random rewrites of a compressible file make
# block-mapped clusters, the worker compresses them all again, the data
# reads back right, fsck is clean, and the image's blocks come within 5%
# of a fresh mkfs.czfs -d of the same file.  Then: block-mapped clusters
# an unmount left are found and compressed at the next mount; a kill -9
# in the middle of recompression loses nothing fsync'd and leaves fsck
# clean; a file written at random while recompression runs reads back
# right (cut short and grown back now and then); fsx's random
# operations run over both kinds of cluster mixed;
# setting user.czfs.compress on a file with data recompresses it
# now, with another algorithm, and "none" stores it raw.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/rwlib.sh"
require_fuse
[ "$RW_TARGET" = czfs ] || { note "czfs only"; exit 0; }
rw_need setfattr
DUMP="$top_builddir/dump/dump.czfs"
RC="$top_srcdir/tests/integration/rw_recompress.py"
base_opts=("${RW_MOUNT_OPTS[@]}")
stat_of() { czfs_counter "$M" "$1"; }
# kind_count KIND: clusters of /f of that kind (dump.czfs of the image)
kind_count() { "$DUMP" "$RW_IMG" /f | awk -v k="$1:" '$1 == k { print $2 }'; }
# used IMAGE: blocks in use, as fsck.czfs counts them
used() { "$FSCK" -n "$1" | sed -n 's|.*, \([0-9]*\)/[0-9]* blocks used.*|\1|p'; }
# settle: wait (at most 120 s) until recompression has nothing pending
settle() {
	local i
	for i in $(seq 1 600); do
		[ "$(stat_of recompress.pending)" = 0 ] &&
			[ "$(stat_of recompress.clusters)" -gt 0 ] && return 0
		sleep 0.2
	done
	fail "$1: recompression did not finish in 120 s ($(stat_of recompress.pending) pending)"
}

# 8 MiB of text that compresses as prose does (lz4 2.5x, zstd 3.8x):
# with runs of slices a file that compresses 50x would be mostly
# metadata, and a copy-on-write tree is less dense than mkfs's bulk load
python3 -c '
import random, sys
r = random.Random(12)
words = ["".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(r.randint(2, 9)))
         for _ in range(400)]
weights = [1.0 / (k + 1) for k in range(len(words))]
out, n = [], 0
while n < 8388608:
    line = ("%d: " % len(out) + " ".join(r.choices(words, weights, k=r.randint(4, 14))) + ".\n").encode()
    out.append(line)
    n += len(line)
sys.stdout.buffer.write(b"".join(out)[:8388608])' >"$T/text"

for cfg in lz4:64k zstd:16k lz4hc:256k; do
	alg=${cfg%%:*} cl=${cfg##*:}
	note "$cfg: rewrites at random, then compressed again once cold"
	RW_MOUNT_OPTS=("${base_opts[@]}" -o recompress=1)
	rw_setup 256M -c "$alg" -C "$cl"
	cp "$T/text" "$M/f"
	sync "$M/f"
	cp "$T/text" "$T/model"
	python3 "$RC" "$M/f" "$T/model" 1 2000 >/dev/null || fail "$cfg: rewrites read back wrong"
	[ "$(stat_of writeback.hot)" -gt 0 ] || fail "$cfg: no cluster written back block by block"
	settle "$cfg"
	note "$cfg: $(stat_of recompress.clusters) clusters recompressed, $(stat_of recompress.bytes_saved) bytes saved"
	[ "$(stat_of recompress.bytes_saved)" -gt 0 ] || fail "$cfg: recompression saved nothing"
	cmp "$M/f" "$T/model" || fail "$cfg: differs after recompression"
	rw_umount
	rw_fsck
	[ "$(kind_count block-mapped)" -eq 0 ] || fail "$cfg: block-mapped clusters left"
	mkdir -p "$T/fresh"
	cp "$T/model" "$T/fresh/f"
	"$MKFS" -q -f -s 256M -c "$alg" -C "$cl" -d "$T/fresh" "$T/fresh.img"
	after=$(used "$RW_IMG") fresh=$(used "$T/fresh.img")
	note "$cfg: $after blocks in use, a fresh mkfs of the same file $fresh"
	[ $((after * 100)) -le $((fresh * 105)) ] ||
		fail "$cfg: $after blocks after recompression, more than 5% over a fresh mkfs's $fresh"
	rw_mount_existing
	cmp "$M/f" "$T/model" || fail "$cfg: differs after a remount"
	rw_umount
done

# fsx-style random operations on a file whose clusters are block-mapped,
# compressed again, and then operated on again: both kinds mixed
for cfg in lz4:64k zstd:16k lz4hc:256k; do
	alg=${cfg%%:*} cl=${cfg##*:}
	note "$cfg: fsx over raw and recompressed clusters mixed"
	RW_MOUNT_OPTS=("${base_opts[@]}" -o recompress=1,cache_size=4M)
	rw_setup 256M -c "$alg" -C "$cl"
	"$FSX" -N 4000 -S 11 -c "$cl" -l 8M -Z "$M/x" >"$T/fsx.log" 2>&1 ||
		{ cat "$T/fsx.log" >&2; fail "$cfg: czfs_fsx failed"; }
	before=$(stat_of recompress.clusters)
	sync "$M/x"	# written back: its hot clusters are block-mapped now
	# what it left goes cold and is compressed again (a second, and the
	# worker's round; a loaded machine takes longer: 120 s, as settle,
	# only guards against a hang)
	for _ in $(seq 1 1200); do
		[ "$(stat_of recompress.clusters)" -gt "$before" ] && break
		sleep 0.1
	done
	[ "$(stat_of recompress.clusters)" -gt "$before" ] ||
		fail "$cfg: nothing recompressed in 120 s after fsx stopped ($(stat_of recompress.pending) pending)"
	"$FSX" -N 4000 -S 12 -c "$cl" -l 8M -Z -e -d "$T/x.model" "$M/x" >"$T/fsx.log" 2>&1 ||
		{ cat "$T/fsx.log" >&2; fail "$cfg: czfs_fsx over recompressed clusters failed"; }
	note "$cfg: $(stat_of recompress.clusters) clusters recompressed, $(stat_of writeback.hot) written back block by block"
	rw_umount
	rw_fsck
	rw_mount_existing
	cmp "$M/x" "$T/x.model" || fail "$cfg: differs from fsx's model after a remount"
	rw_umount
done

note "what an unmount left is recompressed at the next mount"
RW_MOUNT_OPTS=("${base_opts[@]}" -o recompress=0)
rw_setup 256M
cp "$T/text" "$M/f"
cp "$T/text" "$T/model"
python3 "$RC" "$M/f" "$T/model" 2 1000 >/dev/null || fail "rewrites read back wrong"
[ "$(stat_of recompress.clusters)" -eq 0 ] || fail "recompress=0 recompressed"
rw_umount
left=$(kind_count block-mapped)
[ "$left" -gt 0 ] || fail "no block-mapped cluster left by the unmount"
RW_MOUNT_OPTS=("${base_opts[@]}" -o recompress=1)
rw_mount_existing
settle "next mount"
[ "$(stat_of recompress.scans)" -ge 1 ] || fail "the mount did not scan the tree"
[ "$(stat_of recompress.clusters)" -ge "$left" ] ||
	fail "$(stat_of recompress.clusters) of $left block-mapped clusters recompressed"
cmp "$M/f" "$T/model" || fail "differs after recompression at the next mount"
rw_umount
rw_fsck
[ "$(kind_count block-mapped)" -eq 0 ] || fail "block-mapped clusters left after the next mount"

note "a kill -9 in the middle of recompression"
RW_MOUNT_OPTS=("${base_opts[@]}" -o recompress=0)
rw_setup 512M
for i in $(seq 1 8); do cat "$T/text"; done >"$T/model"
cp "$T/model" "$M/f"
python3 "$RC" "$M/f" "$T/model" 3 12000 >/dev/null || fail "rewrites read back wrong"
rw_umount
left=$(kind_count block-mapped)
RW_MOUNT_OPTS=("${base_opts[@]}" -o recompress=1,commit=1)
rw_mount_existing
killed=
for i in $(seq 1 600); do
	done_=$(stat_of recompress.clusters) pending=$(stat_of recompress.pending)
	if [ "$done_" -gt 0 ] && [ "$pending" -gt 0 ]; then
		killed="$done_ of $left ($pending pending)"
		rw_kill_daemon
		break
	fi
	sleep 0.05
done
[ -n "$killed" ] || fail "never caught recompression under way ($left block-mapped)"
note "killed with $killed block-mapped clusters recompressed"
rw_fsck
RW_MOUNT_OPTS=("${base_opts[@]}" -o recompress=0)
rw_mount_existing
cmp "$M/f" "$T/model" || fail "fsync'd data lost to a kill -9 during recompression"
rw_umount
note "$(kind_count block-mapped) of $left block-mapped clusters left after the kill"

note "a file written at random while recompression runs"
# The writer runs until the worker has recompressed clusters since it
# started (what the kill left, or the writer's own clusters once cold),
# not for a time a loaded machine may fill with no recompression at all.
RW_MOUNT_OPTS=("${base_opts[@]}" -o recompress=1)
rw_mount_existing
rc0=$(stat_of recompress.clusters)
rm -f "$T/stop"
python3 "$RC" "$M/f" "$T/model" 4 0 "$T/stop" >"$T/rc.out" &
writer=$!
HELPER_PIDS+=("$writer")
for _ in $(seq 1 1200); do	# 120 s, a hang guard
	[ "$(stat_of recompress.clusters)" -gt "$rc0" ] && break
	kill -0 "$writer" 2>/dev/null || break
	sleep 0.1
done
rc=$(( $(stat_of recompress.clusters) - rc0 ))
kill -0 "$writer" 2>/dev/null || { wait "$writer" || true; fail "the writer ended before it was told to"; }
touch "$T/stop"
wait "$writer" || fail "rewrites under recompression read back wrong"
note "$(cat "$T/rc.out") rewrites, $rc clusters recompressed meanwhile"
[ "$rc" -gt 0 ] || fail "no cluster recompressed while the file was written"
rw_umount
rw_fsck
rw_mount_existing
cmp "$M/f" "$T/model" || fail "differs after a remount"

note "user.czfs.compress on a file with data recompresses it now"
RW_MOUNT_OPTS=("${base_opts[@]}" -o recompress=0)
rw_umount
rw_setup 256M -c lz4
cp "$T/text" "$M/f"
sync "$M/f"
python3 "$RC" "$M/f" "$T/text" 5 300 >/dev/null || fail "rewrites read back wrong"
cp "$T/text" "$T/model"
setfattr -n user.czfs.compress -v zstd:9 "$M/f" || fail "setfattr zstd:9"
[ "$(getfattr --absolute-names --only-values -n user.czfs.compress "$M/f")" = zstd:9 ] ||
	fail "user.czfs.compress does not read zstd:9"
cmp "$M/f" "$T/model" || fail "differs after recompression with zstd"
blocks_zstd=$(stat -c %b "$M/f")
rw_umount
rw_fsck
nz=$("$DUMP" "$RW_IMG" /f | grep -c ' alg zstd ' || true)
nl=$("$DUMP" "$RW_IMG" /f | grep -c ' alg lz4 ' || true)
[ "$(kind_count block-mapped)" -eq 0 ] || fail "block-mapped clusters left after setfattr"
[ "$nz" -gt 0 ] && [ "$nl" -eq 0 ] || fail "after setfattr zstd:9: $nz zstd clusters, $nl lz4"
rw_mount_existing
setfattr -n user.czfs.compress -v none "$M/f" || fail "setfattr none"
cmp "$M/f" "$T/model" || fail "differs after rewriting it raw"
blocks_none=$(stat -c %b "$M/f")
note "st_blocks: $blocks_zstd with zstd:9, $blocks_none raw"
[ "$blocks_none" -gt "$blocks_zstd" ] || fail "stored raw, the file takes no more room"
rw_umount
rw_fsck
[ "$(kind_count compressed)" -eq 0 ] && [ "$(kind_count sliced)" -eq 0 ] ||
	fail "compressed clusters left after setting none"

# A log's tail, written back block by block while its writer appends and
# fsyncs, is compressed once cold, the file still open: the worker's
# rewrite is never taken for a log's.
note "an fsync'd log's tail is compressed once cold"
RW_MOUNT_OPTS=("${base_opts[@]}" -o recompress=1)
rw_setup 64M -c lz4 -C 64k
head -c 45000 "$T/text" >"$T/logmodel"
mkfifo "$T/logdone"
python3 - "$M/log" "$T/logmodel" "$T/logdone" <<'PY' &
import os, sys
log, model, done = sys.argv[1:]
text = open(model, "rb").read()
fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
for k in range(0, len(text), 9000):
    os.write(fd, text[k:k + 9000])
    os.fsync(fd)
open(done).read()		# the file stays open until the shell says
os.close(fd)
PY
logpid=$!
HELPER_PIDS+=("$logpid")
for _ in $(seq 1 100); do
	[ "$(stat -c %s "$M/log" 2>/dev/null)" = 45000 ] && break
	sleep 0.1
done
[ "$(stat_of writeback.hot)" -gt 0 ] || fail "the log's tail was not written back block by block"
settle "log"
echo >"$T/logdone"
wait "$logpid" || fail "the log writer failed"
cmp "$M/log" "$T/logmodel" || fail "the log differs after recompression"
rw_umount
rw_fsck
"$DUMP" "$RW_IMG" /log | grep -q "^ *block-mapped: 0" ||
	fail "the log's tail is still block-mapped once cold"
