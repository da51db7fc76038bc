#!/bin/bash
# The image gives freed space back to the host (issue 11).
#
#  - czfs_fsx with mapped writes on an 8 MiB file of an 8 GiB image: du of
#    the image on the host stays within what the mount counts in use (live
#    data + metadata, statfs) plus a slack of SLACK_MIB (what two
#    checkpoints' worth of rewrites may hold: freed blocks wait for the
#    checkpoint that frees them before they are punched or reused);
#  - after rm of everything and an unmount the host holds only the
#    metadata (the blocks fsck counts in use, plus 64 KiB);
#  - fsync'd rewrites (a database's commits) take the blocks their
#    checkpoints free again before a punch: few punches;
#  - -o nodiscard keeps freed blocks on the host; fsck.czfs --trim gives
#    them back; the next mount with discard trims what a crash left;
#  - kill -9 while files are freed: nothing is lost, fsck is clean;
#  - every option is in --help and in the man page.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/rwlib.sh"
require_fuse
[ -x "$FSX" ] || fail "$FSX not built"
SLACK_MIB=16

du_kib() {
	du -k "$RW_IMG" | cut -f1
}

# KiB the mount counts in use (statfs: data, metadata, dirty data's room).
used_kib() {
	stat -f -c '%b %f' "$M" | awk '{ print ($1 - $2) * 4 }'
}

# KiB in use by the unmounted image's checkpoint (fsck's summary).
fsck_used_kib() {
	"$FSCK" -n "$RW_IMG" >"$T/fsck.log" 2>&1 ||
		{ cat "$T/fsck.log" >&2; fail "fsck.czfs -n found errors"; }
	sed -n 's|.*, \([0-9]*\)/[0-9]* blocks used|\1|p' "$T/fsck.log" |
		awk '{ print $1 * 4 }'
}

# The unmounted image holds no more on the host than its metadata.
assert_only_metadata() {
	local du used
	du=$(du_kib)
	used=$(fsck_used_kib)
	[ "$du" -le $((used + 64)) ] ||
		fail "$1: the host holds $du KiB for $used KiB in use"
	note "$1: host $du KiB, in use $used KiB"
}

note "options are documented where they are offered"
"$FUSE" --help >"$T/fuse.help" 2>&1 || true
"$FSCK" --help >"$T/fsck.help"
for o in discard nodiscard; do
	grep -q -- "$o" "$T/fuse.help" || fail "czfs-fuse --help lacks $o"
	grep -q -- "$o" "$top_srcdir/man/czfs-fuse.1" || fail "czfs-fuse.1 lacks $o"
done
for o in --trim --grow; do
	grep -q -- "$o" "$T/fsck.help" || fail "fsck.czfs --help lacks $o"
	grep -q -- "\\\\-\\\\-${o#--}" "$top_srcdir/man/fsck.czfs.8" || fail "fsck.czfs.8 lacks $o"
done

note "fsx with mapped writes on an 8 GiB image: host size tracks what is used"
rw_setup 8G
"$FSX" -N "${CZFS_SPACE_FSX_OPS:-20000}" -l 8M -S 7 "$M/fsx" >"$T/fsx.log" 2>&1 &
fsx_pid=$!
RW_PIDS+=("$fsx_pid")
peak=0
while kill -0 "$fsx_pid" 2>/dev/null; do
	du=$(du_kib)
	used=$(used_kib)
	[ "$du" -le $((used + SLACK_MIB * 1024)) ] ||
		fail "the host holds $du KiB while $used KiB are in use (slack $SLACK_MIB MiB)"
	[ $((du - used)) -gt "$peak" ] && peak=$((du - used))
	sleep 0.2
done
wait "$fsx_pid" || { cat "$T/fsx.log" >&2; fail "czfs_fsx failed"; }
note "peak host size beyond the blocks in use: $peak KiB"
rm -f "$M/fsx"
rw_umount
assert_only_metadata "after rm of everything and an unmount"

note "fsync'd rewrites take their freed blocks again, unpunched"
# As a database commits: rewrite the same 8 blocks of a file and fsync,
# 300 times.  Each fsync's checkpoint frees the blocks the one before
# used; the next takes them again before any punch, so the host is asked
# for few punches (before: one pass per 1024 freed blocks, 100 and more).
rw_mount_existing
stat_of() { czfs_counter "$M" "$1"; }
python3 - "$M/db" <<'PY2' || fail "the fsync'd rewrites failed"
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
os.pwrite(fd, os.urandom(1 << 20), 0)
os.fsync(fd)
for i in range(300):
    os.pwrite(fd, os.urandom(8 * 4096), (i % 32) * 4096 * 8)
    os.fsync(fd)
os.close(fd)
PY2
punches=$(stat_of backing.punches)
unpunched=$(stat_of backing.unpunched_blocks)
note "300 fsync'd rewrites: $punches punches, $unpunched blocks unpunched"
[ -n "$punches" ] && [ -n "$unpunched" ] || fail "czfs-stat lacks the punch counters"
[ "$punches" -le 30 ] || fail "fsync'd rewrites made $punches punches: freed blocks are not reused"
[ "$unpunched" -gt 0 ] || fail "no freed block is left unpunched after fsync'd rewrites"
[ "$(du_kib)" -le $(($(used_kib) + SLACK_MIB * 1024)) ] ||
	fail "the host holds $(du_kib) KiB while $(used_kib) KiB are in use"
rm -f "$M/db"
rw_umount
assert_only_metadata "after the fsync'd rewrites, rm and an unmount"

note "scattered blocks random rewrites free stay while they write, go once they stop"
# Random 4 KiB rewrites free single blocks here and there: passes while
# the writer runs leave them to the next writes (punched one by one they
# stalled every write); once a period passes with nothing changed, a pass
# punches them all, so the host gives back and an unmount has none left.
# recompress=0: the recompression of these clusters, 30 s after their last
# write (sooner than that under a loaded CI), holds a cluster's new copy
# and its old blocks on the host until the checkpoint after it; that
# would race the measure (rw_recompress.sh covers its space).
czfs_mount "$RW_IMG" "$M" -o commit=1,recompress=0
python3 - "$M/rnd" <<'PY3' || fail "the random rewrites failed"
import os, random, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
os.pwrite(fd, os.urandom(16 << 20), 0)
os.fsync(fd)
r = random.Random(3)
for i in range(3000):
    os.pwrite(fd, os.urandom(4096), r.randrange(4096) * 4096)
    if i % 100 == 99:
        os.fsync(fd)
os.fsync(fd)
os.close(fd)
PY3
left=$(stat_of backing.unpunched_blocks)
note "right after the rewrites: $left blocks unpunched, host $(du_kib) KiB, in use $(used_kib) KiB"
[ "$left" -gt 100 ] || fail "random rewrites left $left freed blocks unpunched: punched one by one"
# the flusher's quiet pass comes a period after the last change: 120 s
# only guards against a hang
for _ in $(seq 1 600); do
	[ "$(stat_of backing.unpunched_blocks)" = 0 ] &&
		[ "$(du_kib)" -le $(($(used_kib) + 1024)) ] && break
	sleep 0.2
done
[ "$(stat_of backing.unpunched_blocks)" = 0 ] ||
	fail "$(stat_of backing.unpunched_blocks) blocks still unpunched 120 s after the writer stopped"
[ "$(du_kib)" -le $(($(used_kib) + 1024)) ] ||
	fail "quiet again, the host holds $(du_kib) KiB while $(used_kib) KiB are in use"
note "quiet: host $(du_kib) KiB, in use $(used_kib) KiB"
rm -f "$M/rnd"
rw_umount

note "nodiscard keeps freed blocks, fsck --trim gives them back"
czfs_mount "$RW_IMG" "$M" -o nodiscard
head -c 24M /dev/urandom >"$M/big"
sync "$M/big"		# fsync: written back and checkpointed
rm "$M/big"
rw_umount
[ "$(du_kib)" -ge $((20 * 1024)) ] || fail "nodiscard: freed blocks were given back ($(du_kib) KiB)"
"$FSCK" --trim "$RW_IMG" >"$T/trim.log" || { cat "$T/trim.log" >&2; fail "fsck --trim failed"; }
grep -q "trimmed" "$T/trim.log" || fail "fsck --trim said nothing"
assert_only_metadata "after fsck --trim"

note "kill -9 while blocks are freed: nothing lost, the next mount trims"
rw_mount_existing
head -c 4M /dev/urandom >"$T/keep"
cp "$T/keep" "$M/keep"
sync "$M/keep"
for round in 1 2 3; do
	for i in 1 2 3 4; do
		head -c 6M /dev/urandom >"$M/churn.$i"
	done
	sync "$M"/churn.*
	rm -f "$M"/churn.*
	# the rm's checkpoint may or may not be written, or punched, yet
	sleep "0.$((round * 3))"
	rw_kill_daemon
	"$FSCK" -n "$RW_IMG" >"$T/fsck.log" 2>&1 ||
		{ cat "$T/fsck.log" >&2; fail "round $round: fsck after kill -9"; }
	rw_mount_existing
	cmp "$T/keep" "$M/keep" || fail "round $round: a synced file changed after kill -9"
done
rm -f "$M"/churn.*
rw_umount
czfs_mount "$RW_IMG" "$M" -o discard	# at mount: what the kills left
rw_umount
assert_only_metadata "after the crashes and a mount"
