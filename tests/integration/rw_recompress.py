#!/usr/bin/env python3
"""Random rewrites that compress, checked against a model.

rw_recompress.py FILE MODEL SEED OPS [SECONDS | STOPFILE]: FILE (already
written) is rewritten in place by OPS writes (or, with SECONDS, as many as
fit in that time; with STOPFILE, until that file exists) of whole 4 KiB
blocks and of unaligned spans up to 12 KiB, of text
that compresses as the file did (spans of the file as it was, from
elsewhere in it), fsync'd every 64 and at the end; MODEL holds the file's
bytes before and gets what FILE must hold after.  Exits 1 when a read-back
of the whole file differs from the model.  Timed so, it pauses 10 ms
every 64 writes, so that clusters it left a second ago go cold while it
writes others, and every 512 writes cuts the file's end off and grows it
back (the end must then read as zeros).
"""
import os
import random
import sys
import time

path, model, seed, ops = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
until = stop = None
if len(sys.argv) > 5:
    try:
        until = time.monotonic() + float(sys.argv[5])
    except ValueError:
        stop = sys.argv[5]
timed = until is not None or stop is not None


def going(k):
    if stop is not None:
        return not os.path.exists(stop)
    return time.monotonic() < until if timed else k < ops


rnd = random.Random(seed)
ref = bytearray(open(model, 'rb').read())
orig = bytes(ref)
fd = os.open(path, os.O_RDWR)
k = 0
while going(k):
    if rnd.randrange(2):
        n = 4096
        off = rnd.randrange(len(ref) // 4096) * 4096
    else:
        n = rnd.randrange(1, 12288)
        off = rnd.randrange(len(ref) - n)
    src = rnd.randrange(len(orig) - n)
    data = bytes(orig[src:src + n])
    if os.pwrite(fd, data, off) != n:
        sys.exit('short write')
    ref[off:off + n] = data
    k += 1
    if timed and k % 512 == 0:
        # cut the file's end off and grow it back: what recompression
        # had of that end must not come back (it reads as zeros)
        size = len(ref)
        cut = rnd.randrange(size // 2, size)
        os.ftruncate(fd, cut)
        os.ftruncate(fd, size)
        ref[cut:] = bytes(size - cut)
    if k % 64 == 0:
        os.fsync(fd)
        if timed:
            time.sleep(0.01)
os.fsync(fd)
os.close(fd)
with open(model, 'wb') as f:
    f.write(ref)
with open(path, 'rb') as f:
    if f.read() != bytes(ref):
        sys.exit('%s differs from its model after the rewrites' % path)
print(k)
