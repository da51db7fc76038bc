#!/bin/bash
# An fsync covers a cluster written while a batch that holds it is being
# written back.  A batch takes its clusters off the file's dirty list and
# puts back at its end those written meanwhile; an fsync's writeback
# counted the list before that batch ended, so it stopped short of such
# a cluster: the checkpoint committed the batch's older copy and the
# fsync'd bytes stayed in memory (powerloss.sh's recompress workload
# lost a block so, the batch being the recompression's).
#
# Made certain here: the flusher writes file x back (a writer past the
# dirty limit kicks it) slowly (zstd:22, one encoder), and while its
# first batch, which holds x's first cluster, is still encoding, that
# cluster is written again and x fsync'd; then the daemon is killed.
# After a new mount the block must hold what the fsync covered.  The
# test checks its premise from the daemon's counters (the batch had
# encoded that cluster, and had not begun the last of its smallest
# possible size, when the write returned); with the bug, it failed 4
# times out of 4.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/rwlib.sh"
require_fuse
[ "$RW_TARGET" = czfs ] || { note "czfs only (its writeback's batches)"; exit 0; }

# cache_size=16M: the dirty limit of a file is 2 MiB (32 clusters of
# 64 KiB; ops_write.c DIRTY_LIMIT_PAGES), its throttle twice that
RW_MOUNT_OPTS=(-o allow_other,commit=3600,recompress=0,compress=zstd:22,cache_size=16M,write_threads=1)
rw_setup 256M

python3 - "$M" <<'PY' || fail "the race was not made"
import os, random, sys, time

mnt = sys.argv[1]
CL, N, KICK = 65536, 60, 33     # cluster, clusters written, kick after


def clusters():         # as czfs-stat reads it, without a process each time
    out = os.getxattr(mnt, "user.czfs.stats").decode()
    return int(next(l.split()[1] for l in out.splitlines()
                    if l.startswith("writeback.clusters ")))


rng = random.Random(7)
words = [bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz")
               for _ in range(rng.randint(2, 9))) for _ in range(4000)]
text = bytearray()
while len(text) < N * CL:
    text += rng.choice(words) + b" "
x = os.path.join(mnt, "x")
c0 = clusters()
fd = os.open(x, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, bytes(text[:N * CL]))
deadline = time.monotonic() + 60        # a hang guard, not a measure
# clusters are counted as their encoding begins, in the batch's order:
# two begun, the first (x's cluster 0) is encoded
while clusters() < c0 + 2:
    if time.monotonic() > deadline:
        sys.exit("the flusher never began x's writeback")
    time.sleep(0.002)
new = (b"the fsync'd block! " * 300)[:4096]
os.pwrite(fd, new, 0)
done = clusters() - c0
if done >= KICK:
    sys.exit(f"x's first batch may have ended before the write ({done} in)")
os.fsync(fd)
os.close(fd)
print(f"# cluster 0 written again {done} clusters into x's first batch")
PY
rw_kill_daemon
rw_fsck
rw_mount_existing
python3 - "$M/x" <<'PY' || fail "the fsync'd block was lost"
import sys
got = open(sys.argv[1], "rb").read(4096)
want = (b"the fsync'd block! " * 300)[:4096]
if got != want:
    sys.exit(f"FAIL: block 0 after the crash begins {got[:32]!r}")
print("# block 0 after the crash: as fsync'd")
PY
rw_umount
rw_fsck
