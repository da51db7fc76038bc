#!/bin/bash
# Writeback compresses on every core (issue 34): with -o write_threads=2,
# the clusters of a big sequential write are encoded by the pool's worker
# as well as by the writeback's own thread (czfs-stat:
# writeback.encoded_by_workers, and writeback.encoders_max, the most
# seen encoding at once), and still placed and linked in order: the files
# read back equal after a remount, and fsck is clean.  With
# write_threads=1 nothing is encoded ahead: writeback is as before.
# Memory while writing: the pool never holds more than twice dirty_max
# (its default: 8 MiB per write thread; pool.used_max) over a write of
# twelve times that, and the clusters written whole leave it once linked
# (ccache.recycled).  What holds a writer back is timed: every WRITE
# (write.request_count) and the fsync's checkpoint (checkpoint.hold_count).
# Writeback's passes (the throttle's, the flusher's, packing's) look at
# the inodes that hold dirty data, not at every inode in memory: copying
# 3,000 small files, each is looked at a few times (writeback.inode_visits),
# not once a pass; an fsync among them looks at what changed, not at all.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/rwlib.sh"
require_fuse
[ "$RW_TARGET" = czfs ] || { note "czfs only (its writeback's counters)"; exit 0; }

stat_of() {	# NAME: a counter of the mount's
	czfs_counter "$M" "$1"
}

# 48 MiB that compresses about as real data does, different in each
# cluster of 64 KiB (a repeated text, shifted by a line each round)
cat /usr/include/*.h >"$T/text"
[ "$(stat -c %s "$T/text")" -gt 1000000 ] || fail "no headers to make data from"
: >"$T/data"
for i in $(seq 1 100); do
	[ "$(stat -c %s "$T/data")" -lt $((48 << 20)) ] || break
	tail -n +"$i" "$T/text" >>"$T/data"
done
truncate -s 48M "$T/data"

RW_MOUNT_OPTS=(-o allow_other,commit=3600,write_threads=2)
rw_setup 1G
four() { cat "$T/data" "$T/data" "$T/data" "$T/data"; }
four | dd of="$M/a" bs=1M iflag=fullblock conv=fsync status=none || fail "dd to a"
used=$(stat_of pool.used_max)
note "192 MiB written: at most $used pool pages in use, $(stat_of ccache.recycled) clusters recycled"
[ "${used:-0}" -gt 0 ] && [ "$used" -le $((2 * (16 << 20) / 4096)) ] ||
	fail "the pool held $used pages while writing (dirty_max 16M)"
[ "$(stat_of ccache.recycled)" -ge 3000 ] ||
	fail "clusters written whole stayed in the pool ($(stat_of ccache.recycled) of 3072 left)"
[ "$(stat_of write.request_count)" = "$(stat_of fuse.write_requests)" ] ||
	fail "$(stat_of write.request_count) WRITEs timed of $(stat_of fuse.write_requests)"
[ "$(stat_of checkpoint.hold_count)" -ge 1 ] || fail "the fsync's checkpoint was not timed"
workers=$(stat_of writeback.encoded_by_workers)
ahead=$(stat_of writeback.encoded_ahead)
most=$(stat_of writeback.encoders_max)
note "write_threads=2: $ahead clusters encoded ahead, $workers by the worker, at most $most at once"
[ "${workers:-0}" -gt 0 ] || fail "the worker encoded nothing"
[ "${ahead:-0}" -ge 2800 ] || fail "$ahead of 3072 clusters encoded ahead"
[ "${most:-0}" -ge 2 ] || fail "never two encoders at once (most: $most)"

RW_MOUNT_OPTS=(-o allow_other,commit=3600,dirty_max=8M)
rw_remount
mkdir "$M/small"
v0=$(stat_of writeback.inode_visits)
for d in $(seq 1 30); do
	mkdir "$M/small/$d"
	for f in $(seq 1 100); do
		head -c $((4096 + f * 37)) "$T/text" >"$M/small/$d/$f"
	done
done
sync -f "$M/small/1/1"
visits=$(( $(stat_of writeback.inode_visits) - v0 ))
note "3000 small files: writeback looked at $visits inodes"
[ "$visits" -le 12000 ] ||
	fail "writeback's passes looked at $visits inodes for 3000 files written"
[ "$(stat_of pack.written)" -gt 0 ] || fail "the small files were not packed"
# nor do checkpoints: with the 3,000 in memory (the kernel holds them), an
# fsync's checkpoint looks at what changed since the last one
ls -lR "$M/small" >/dev/null
# (first a checkpoint of what is pending: the last packs; FUSE has no syncfs)
python3 -c 'import os, sys; os.fsync(os.open(sys.argv[1], os.O_RDONLY))' \
	"$M/small/1/1" || fail "fsync"
v0=$(stat_of writeback.inode_visits)
python3 - "$M/small/1/1" <<'PY' || fail "appends with fsync"
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
for i in range(20):
    os.write(fd, b"x" * 100)
    os.fsync(fd)
os.close(fd)
PY
visits=$(( $(stat_of writeback.inode_visits) - v0 ))
note "20 appends with fsync among 3000 files in memory: $visits inodes looked at"
[ "$visits" -le 200 ] || fail "20 fsyncs looked at $visits inodes"
# then files written one after another, as head and cp write them: the
# throttle's passes take the oldest dirty files first, not the growing end
# of the newest, which would be written back again and again
c0=$(stat_of writeback.clusters)
for j in $(seq 1 16); do
	head -c 4M "$T/data" >"$M/seq.$j" || fail "seq.$j"
done
sync -f "$M/seq.1"
wb=$(( $(stat_of writeback.clusters) - c0 ))
note "16 files of 4 MiB: $wb clusters written back (1024 in the files)"
[ "$wb" -le 1200 ] || fail "16 files of 4 MiB: $wb clusters written back for 1024"

RW_MOUNT_OPTS=(-o allow_other,commit=3600,write_threads=1)
rw_remount
cmp <(four) "$M/a" || fail "a differs after a remount"
dd if="$T/data" of="$M/b" bs=1M conv=fsync status=none || fail "dd to b"
[ "$(stat_of writeback.encoded_ahead)" = 0 ] ||
	fail "write_threads=1 encoded ahead"
[ "$(stat_of writeback.clusters)" -ge 768 ] || fail "b was not written back"
rw_umount
"$FSCK" -n "$RW_IMG" >"$T/fsck.log" 2>&1 || { cat "$T/fsck.log" >&2; fail "fsck"; }
rw_mount_existing
cmp <(four) "$M/a" || fail "a differs after the second remount"
cmp "$T/data" "$M/b" || fail "b differs after a remount"
