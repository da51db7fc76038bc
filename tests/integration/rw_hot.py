#!/usr/bin/env python3
"""Random rewrites of part of a file, checked against a model.

rw_hot.py FILE MODEL SEED OPS: FILE (already written) is rewritten in
place by OPS writes of 1 byte to 12 KiB (aligned 4 KiB blocks, unaligned
spans, zeros and random bytes), fsync'd every 64 and at the end; MODEL
holds the file's bytes before and is rewritten with what FILE must hold
after.  Exits 1 when a read-back of the whole file differs from the model.
"""
import os
import random
import sys

path, model, seed, ops = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rnd = random.Random(seed)
ref = bytearray(open(model, 'rb').read())
fd = os.open(path, os.O_RDWR)
for k in range(ops):
    kind = rnd.randrange(4)
    if kind == 0:           # one aligned block
        n = 4096
        off = rnd.randrange(len(ref) // 4096) * 4096
    elif kind == 1:         # a few bytes anywhere
        n = rnd.randrange(1, 200)
        off = rnd.randrange(len(ref) - n)
    else:                   # an unaligned span of up to three blocks
        n = rnd.randrange(1, 12288)
        off = rnd.randrange(len(ref) - n)
    data = bytes(n) if rnd.randrange(5) == 0 else rnd.randbytes(n)
    if os.pwrite(fd, data, off) != n:
        sys.exit('short write')
    ref[off:off + n] = data
    if k % 64 == 63:
        os.fsync(fd)
os.fsync(fd)
os.close(fd)
with open(model, 'wb') as f:
    f.write(ref)
with open(path, 'rb') as f:
    if f.read() != bytes(ref):
        sys.exit('%s differs from its model after the rewrites' % path)
