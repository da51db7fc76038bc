#!/bin/bash
# An fsync's checkpoint is made with one flush (issue 12, item 4): it names
# the blocks it brings into use and their crc (COVERED, czfs(5)), so that a
# crash that cut the flush is seen at the next mount, which then takes the
# checkpoint before it, whole.
#
#  - small fsyncs: one flush per checkpoint (czfs-stat), the data survives
#    kill -9, fsck is clean, dump shows the newest checkpoint covered;
#  - a big one (more than 4 MiB new) still takes two flushes;
#  - a clean unmount leaves an image whose checkpoint is not covered;
#  - a covered checkpoint a crash cut (one of its blocks as it was before:
#    czfs-corrupt tear) is refused for the one before, with a log line, by
#    the mount, fsck (a note, exit 0) and dump ("incomplete"); the mount
#    then goes on from there and fsck stays clean.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/rwlib.sh"
require_fuse
DUMP="$top_builddir/dump/dump.czfs"
CORRUPT="$top_builddir/tests/czfs-corrupt"

stat_of() {
	czfs_counter "$M" "$1"
}

# The current checkpoint's "covered" field, as dump.czfs shows it.
dump_current_covered() {
	"$DUMP" "$RW_IMG" 2>/dev/null | awk '
		/^checkpoint/ { cur = 0 }
		$1 == "current:" && $2 == "yes" { cur = 1 }
		cur && $1 == "covered:" { print $2; exit }'
}

note "small fsyncs: one flush each"
# commit=3600: only the fsyncs checkpoint; nodiscard: nothing a cut
# checkpoint's predecessor holds is punched (as when the crash came before
# the flush returned)
RW_MOUNT_OPTS=(-o allow_other,commit=3600,nodiscard)
rw_setup 256M
cp0=$(stat_of checkpoint.written) f0=$(stat_of backing.flushes)
python3 - "$M/db" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
for i in range(40):
    os.pwrite(fd, (b"%04d" % i) * 1024, (i * 7919 % 64) * 4096)
    os.fsync(fd)
os.close(fd)
PY
cp1=$(stat_of checkpoint.written) f1=$(stat_of backing.flushes)
one=$(stat_of checkpoint.one_flush)
note "checkpoints $((cp1 - cp0)), one-flush $one, flushes $((f1 - f0))"
[ $((cp1 - cp0)) -ge 40 ] || fail "40 fsyncs made $((cp1 - cp0)) checkpoints"
# all but those after a superblock write (the first cluster of a new kind
# sets a feature bit: then two flushes)
[ "$one" -ge 37 ] || fail "only $one of the fsyncs' checkpoints took one flush"
[ $((f1 - f0)) -le $((cp1 - cp0 + 3)) ] ||
	fail "$((f1 - f0)) flushes for $((cp1 - cp0)) checkpoints"
python3 - "$M/db" "$T/db.want" <<'PY'
import shutil, sys
shutil.copyfile(sys.argv[1], sys.argv[2])
PY

note "a big fsync takes two flushes"
one0=$(stat_of checkpoint.one_flush) f0=$(stat_of backing.flushes)
head -c 16M /dev/urandom >"$M/big"
sync "$M/big"
one1=$(stat_of checkpoint.one_flush) f1=$(stat_of backing.flushes)
[ "$one1" = "$one0" ] || fail "16 MiB of new blocks committed with one flush"
[ $((f1 - f0)) -ge 2 ] || fail "a 16 MiB fsync made $((f1 - f0)) flushes"
cp "$M/big" "$T/big.want"

note "kill -9 after the fsyncs: the data is there, fsck clean, checkpoint covered"
python3 - "$M/db" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
os.pwrite(fd, b"last" * 1024, 0)
os.fsync(fd)
os.close(fd)
PY
python3 - "$T/db.want" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
os.pwrite(fd, b"last" * 1024, 0)
os.close(fd)
PY
rw_kill_daemon
[ "$(dump_current_covered)" = yes ] || fail "the last fsync's checkpoint is not covered"
rw_fsck
rw_mount_existing
cmp "$T/db.want" "$M/db" || fail "fsync'd writes lost after kill -9"
cmp "$T/big.want" "$M/big" || fail "the big file differs after kill -9"
rw_umount
[ "$(dump_current_covered)" = no ] || fail "a clean unmount left a covered checkpoint"
rw_fsck

note "a covered checkpoint a crash cut gives way to the one before"
rw_mount_existing
python3 - "$M/db" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
os.pwrite(fd, b"torn" * 1024, 4096)
os.fsync(fd)
os.close(fd)
PY
rw_kill_daemon
"$CORRUPT" "$RW_IMG" tear >/dev/null
"$FSCK" -n "$RW_IMG" >"$T/fsck.torn" 2>&1 ||
	{ cat "$T/fsck.torn" >&2; fail "fsck.czfs -n on a cut checkpoint found errors"; }
grep -q "its flush did not complete" "$T/fsck.torn" ||
	{ cat "$T/fsck.torn" >&2; fail "fsck.czfs does not say the newest checkpoint was cut"; }
"$DUMP" "$RW_IMG" 2>/dev/null | grep -q "state: incomplete" ||
	fail "dump.czfs does not show the cut checkpoint incomplete"
rw_mount_existing
grep -q "written by a flush that did not complete" "$T/daemon.$(basename "$M").log" ||
	fail "the mount did not say it took the checkpoint before"
cmp "$T/db.want" "$M/db" || fail "the checkpoint before the cut one is not what it held"
echo after >"$M/after"
sync "$M/after"
rw_umount
rw_fsck
rw_mount_existing
[ "$(cat "$M/after")" = after ] || fail "the image did not go on after the cut checkpoint"
rw_umount
