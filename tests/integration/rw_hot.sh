#!/bin/bash
# Hot clusters (issue 12): a cluster rewritten in part is written back
# block by block (BLOCKMAP), its other blocks kept, so random rewrites do
# not rewrite whole clusters.  For each CODEC:CLUSTER: a compressible file
# written sequentially is compressed; random rewrites (aligned blocks,
# unaligned spans, zeros) read back right, live and after a remount, and
# turn the clusters they touch into block-mapped ones; the image writes
# a bounded multiple of what the rewrites wrote (czfs-stat); fsck is
# clean; a daemon killed -9 after an fsync loses nothing; and the file
# rewritten whole is compressed again.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/rwlib.sh"
require_fuse
[ "$RW_TARGET" = czfs ] || { note "czfs only"; exit 0; }
# the block-mapped form itself: nothing compresses it again underneath
# (rw_recompress.sh tests that); commit=3600: only the writers' fsyncs
# checkpoint, so what the image writes depends on the writes, not on how
# many 5 s periods a loaded machine spends on them (each periodic
# checkpoint writes back what is dirty then, and metadata)
RW_MOUNT_OPTS+=(-o recompress=0,commit=3600)
DUMP="$top_builddir/dump/dump.czfs"
HOT="$top_srcdir/tests/integration/rw_hot.py"
stat_of() { czfs_counter "$M" "$1"; }
# kind_count KIND: clusters of /f of that kind (dump.czfs of the image)
kind_count() { "$DUMP" "$RW_IMG" /f | awk -v k="$1:" '$1 == k { print $2 }'; }
# compressed clusters of /f: of their own, or slices of runs
compressed_count() { echo $(( $(kind_count compressed) + $(kind_count sliced) )); }

# 8 MiB of compressible text
python3 -c '
import sys
t = b"".join(b"line %d of a text that compresses well\n" % i for i in range(240000))
sys.stdout.buffer.write(t[:8388608])' >"$T/text"
[ "$(stat -c %s "$T/text")" -eq 8388608 ] || fail "sample text not 8 MiB"

for cfg in lz4:64k zstd:16k lz4hc:256k none:32k; do
	alg=${cfg%%:*} cl=${cfg##*:}
	note "$cfg: a file written whole is compressed"
	rw_setup 256M -c "$alg" -C "$cl"
	cp "$T/text" "$M/f"
	sync "$M/f"
	cp "$T/text" "$T/model"
	rw_umount
	if [ "$alg" != none ]; then
		[ "$(compressed_count)" -gt 0 ] || fail "$cfg: nothing compressed"
	fi
	[ "$(kind_count block-mapped)" -eq 0 ] || fail "$cfg: block-mapped before any rewrite"
	rw_mount_existing

	note "$cfg: random rewrites"
	w0=$(stat_of backing.write_bytes) f0=$(stat_of fuse.write_bytes)
	python3 "$HOT" "$M/f" "$T/model" 7 3000 || fail "$cfg: rewrites read back wrong"
	w1=$(stat_of backing.write_bytes) f1=$(stat_of fuse.write_bytes)
	hot=$(stat_of writeback.hot) kept=$(stat_of writeback.hot_kept)
	[ "$hot" -gt 0 ] && [ "$kept" -gt 0 ] ||
		fail "$cfg: no cluster written back block by block ($hot hot, $kept kept)"
	# whole clusters rewritten cost 6.7x here with 64 KiB clusters (3.0x
	# with 16 KiB); block by block about 2.5x, most of it metadata
	amp=$(( (w1 - w0) * 10 / (f1 - f0) ))
	note "$cfg: image wrote $((w1 - w0)) bytes for $((f1 - f0)): amplification $((amp / 10)).$((amp % 10))x"
	[ "$amp" -le 40 ] || fail "$cfg: write amplification $((amp / 10)).$((amp % 10))x (4x at most)"

	note "$cfg: after a remount, and fsck"
	rw_umount
	rw_fsck
	bm=$(kind_count block-mapped)
	[ "$bm" -gt 0 ] || fail "$cfg: no block-mapped cluster in the image"
	rw_mount_existing
	cmp "$M/f" "$T/model" || fail "$cfg: differs after a remount"

	note "$cfg: whole blocks written without a load, then a kill -9 after an fsync"
	python3 "$HOT" "$M/f" "$T/model" 8 500 || fail "$cfg: rewrites read back wrong"
	[ "$(stat_of cluster.partial_writes)" -gt 0 ] ||
		fail "$cfg: every cluster was loaded before its whole blocks were written"
	[ "$(stat_of cluster.partial_completed)" -gt 0 ] ||
		fail "$cfg: the read-back completed no partial cluster"
	rw_kill_daemon
	rw_fsck
	rw_mount_existing
	cmp "$M/f" "$T/model" || fail "$cfg: fsync'd rewrites lost to a kill -9"

	note "$cfg: rewritten whole, compressed again"
	cp "$T/text" "$M/f"
	sync "$M/f"
	rw_umount
	rw_fsck
	[ "$(kind_count block-mapped)" -eq 0 ] || fail "$cfg: block-mapped clusters left after a whole rewrite"
	if [ "$alg" != none ]; then
		[ "$(compressed_count)" -gt 0 ] || fail "$cfg: not compressed again"
	fi
done

# A file its writer fsyncs (a log, a journal, a database's WAL): its
# partial last cluster is written back block by block, so that the next
# append and fsync write the new blocks and not the cluster compressed
# again; the same bytes written without an fsync are compressed.
note "an fsync'd log's tail is written back block by block"
rw_setup 64M -c lz4 -C 64k
python3 - "$M/log" "$M/plain" "$T/logmodel" <<'PY'
import os, sys
log, plain, model = sys.argv[1:]
text = b"".join(b"record %06d: a line of a log that compresses well\n" % i
                for i in range(900))[:45000]
fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
for k in range(0, len(text), 9000):
    os.write(fd, text[k:k + 9000])
    os.fsync(fd)
os.close(fd)
open(plain, "wb").write(text)
open(model, "wb").write(text)
PY
cmp "$M/log" "$T/logmodel" || fail "the fsync'd log reads back wrong"
rw_umount
rw_fsck
log_kinds=$("$DUMP" "$RW_IMG" /log)
plain_kinds=$("$DUMP" "$RW_IMG" /plain)
echo "$log_kinds" | grep -q "^ *block-mapped: 1" ||
	fail "the fsync'd log's tail is not block-mapped: $(echo "$log_kinds" | grep -E '^ *[a-z-]+: [0-9]+$' | tr '\n' ' ')"
echo "$plain_kinds" | grep -q "^ *block-mapped: 0" ||
	fail "a file never fsync'd has a block-mapped cluster"
rw_mount_existing
cmp "$M/log" "$T/logmodel" || fail "the log differs after a remount"
cmp "$M/plain" "$T/logmodel" || fail "the plain file differs after a remount"
