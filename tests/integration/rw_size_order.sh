#!/bin/bash
# A file's size is never durable before its data (issue 31, item 3).
#
# A checkpoint writes every dirty inode back, then commits; meanwhile a
# writer goes on.  An append that comes after the checkpoint has written
# its file back stays dirty in the daemon, but the size it grew was stored
# in the file's inode by whatever stored that inode next (a chmod, a
# rename, fallocate, another cluster's writeback) and committed with the
# checkpoint: after a crash the file was as long as the append made it,
# and the appended blocks read as zeros, which nobody wrote (rw_crash.sh
# met it once: "block 2 is b'\x00...'").
#
# Made certain here: file x is clean when an fsync of file y starts its
# checkpoint, which visits x first (its walk of the in-memory inodes goes
# bucket by bucket, minode.c bucket(): y is picked so that it comes
# after x) and then compresses y slowly (zstd:19); while it does, x is
# appended to and chmod'ed (stored), and the checkpoint commits.  After
# kill -9 and a new mount, x must hold what was written: its old size, or
# the new one with the appended data, never zeros.  The test checks its
# own premise from the daemon's counters (the checkpoint was in y's
# writeback before the append, and had not committed when the chmod
# returned, and wrote back y's clusters alone), so that it cannot pass
# without having made the race.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/rwlib.sh"
require_fuse
[ "$RW_TARGET" = czfs ] || { note "czfs only (its checkpoint's order)"; exit 0; }
STAT="$top_builddir/src/fuse/czfs-stat"

# commit=3600: only the fsync checkpoints; recompress=0: nothing else
# stores x; zstd:19: y's writeback takes long enough to act in
# dirty_max=64M: y (12 MiB) wakes no flusher, whose writeback of y the
# test would take for the checkpoint's
RW_MOUNT_OPTS=(-o allow_other,commit=3600,recompress=0,compress=zstd:19,dirty_max=64M)
rw_setup 1G

python3 - "$M" "$STAT" <<'PY' || fail "the race was not made"
import os, subprocess, sys, time

mnt, stat_prog = sys.argv[1], sys.argv[2]
BS = 4096


def stats():
    out = subprocess.run([stat_prog, mnt], check=True, capture_output=True,
                         text=True).stdout
    return {k: v for k, v in (l.split()[:2] for l in out.splitlines()
                              if len(l.split()) >= 2)}


def bucket(ino):        # minode.c bucket(): the checkpoint's walk order
    return ((ino * 0x9e3779b97f4a7c15) & (2**64 - 1)) >> 48


def fsync_path(p):
    fd = os.open(p, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)


x = os.path.join(mnt, "x")
head = b"x block 0 " * 410
data = (head[:BS]) + (b"x block 1 " * 410)[:BS]
with open(x, "wb") as fh:
    fh.write(data)
fsync_path(x)
fsync_path(mnt)
bx = bucket(os.stat(x).st_ino)
# y: after x in the walk (a few candidates; the others are removed)
y = None
for i in range(64):
    p = os.path.join(mnt, f"y{i}")
    open(p, "wb").close()
    if bucket(os.stat(p).st_ino) > bx:
        y = p
        break
    os.unlink(p)
if y is None:
    sys.exit("no file after x in the checkpoint's walk")
fsync_path(mnt)
# 12 MiB, compressible: zstd:19 takes seconds over it
text = b"".join(b"line %08d of y, words to compress, sixty-four bytes a line!\n"
               % i for i in range(12 << 20 >> 6))
assert len(text) == 12 << 20
# how many clusters writeback encodes for y: 1 MiB of it counted alone
s = stats()
with open(os.path.join(mnt, "probe"), "wb") as fh:
    fh.write(text[:1 << 20])
fsync_path(os.path.join(mnt, "probe"))
per_mib = int(stats()["writeback.clusters"]) - int(s["writeback.clusters"])
with open(y, "wb") as fh:
    fh.write(text)
s0 = stats()
child = os.fork()
if child == 0:
    fsync_path(y)
    os._exit(0)
while int(stats()["writeback.clusters"]) == int(s0["writeback.clusters"]):
    if os.waitpid(child, os.WNOHANG)[0]:
        sys.exit("the fsync of y ended before its writeback was seen")
    time.sleep(0.01)
# the checkpoint is in y's writeback: x, visited before, stays dirty
fd = os.open(x, os.O_WRONLY)
os.pwrite(fd, (b"x block 2 " * 410)[:BS], 2 * BS)
os.close(fd)
os.chmod(x, 0o600)
s1 = stats()
os.waitpid(child, 0)
if s1["checkpoint.written"] != s0["checkpoint.written"]:
    sys.exit("the checkpoint committed before the chmod")
# x was not written back by that checkpoint (it came before y in the walk)
wb = int(stats()["writeback.clusters"]) - int(s0["writeback.clusters"])
if wb != 12 * per_mib:
    sys.exit(f"the checkpoint wrote {wb} clusters back, y has {12 * per_mib}")
print(f"# x appended and stored during y's writeback "
      f"({int(s1['writeback.clusters']) - int(s0['writeback.clusters'])} "
      "clusters in)")
PY
# the crash: right after y's fsync, nothing committed since
rw_kill_daemon
rw_fsck
rw_mount_existing
python3 - "$M/x" <<'PY' || fail "x's size was durable before its data"
import sys
BS = 4096
want = ((b"x block 0 " * 410)[:BS] + (b"x block 1 " * 410)[:BS] +
        (b"x block 2 " * 410)[:BS])
got = open(sys.argv[1], "rb").read()
if len(got) not in (2 * BS, 3 * BS) or got != want[:len(got)]:
    blocks = [got[i:i + 16] for i in range(0, len(got), BS)]
    sys.exit(f"FAIL: x after the crash: {len(got)} bytes, blocks begin {blocks}")
print(f"# x after the crash: {len(got) // BS} blocks, as written")
PY
rw_umount
rw_fsck
