#!/usr/bin/env python3
"""Readers of a file's end while another process appends to it
(run by rw_append_read.sh).

    rw_append_read.py MNT SECONDS
    rw_append_read.py MNT verify

One process appends records of 50 bytes to a few KiB with O_APPEND, so
that most appends end inside a page; three others fstat the file and
read its last pages over and over, one of them its last MiB.  Every
byte read must be the record stream's byte at that offset: an append
that a reader sees as zeros (a page cached with the old end of file)
fails.  Exits 1 on the first reads that disagree, after printing where.
"verify" checks the whole file against the stream (after a remount).
"""
import multiprocessing
import os
import random
import sys
import time

MNT = sys.argv[1]
SECONDS = 0.0 if sys.argv[2] == "verify" else float(sys.argv[2])
PATH = os.path.join(MNT, "append.log")


def record(k):
    """Record k: deterministic, of varying length, no zero byte."""
    r = random.Random(k)
    n = r.randrange(50, 6000)
    unit = bytes(r.randrange(33, 126) for _ in range(16))
    return (b"%08d " % k + unit * (n // 16 + 1))[:n] + b"\n"


class Stream:
    """The first bytes of the record stream, grown on demand."""

    def __init__(self):
        self.buf, self.k = bytearray(), 0

    def upto(self, n):
        while len(self.buf) < n:
            self.buf += record(self.k)
            self.k += 1
        return self.buf


def appender():
    fd = os.open(PATH, os.O_WRONLY | os.O_APPEND)
    end, k = time.time() + SECONDS, 0
    while time.time() < end:
        rec = record(k)
        if os.write(fd, rec) != len(rec):
            sys.exit(f"FAIL: short append of record {k}")
        k += 1
    os.close(fd)
    print(f"# appender: {k} records", flush=True)


def reader(span):
    stream, bad, n = Stream(), 0, 0
    end = time.time() + SECONDS
    fd = os.open(PATH, os.O_RDONLY)
    while time.time() < end:
        off = max(0, os.fstat(fd).st_size - span)
        got = os.pread(fd, span + 8192, off)
        want = stream.upto(off + len(got))[off:off + len(got)]
        n += 1
        if want != got:
            i = next(i for i in range(len(got)) if want[i] != got[i])
            bad += 1
            if bad <= 3:
                print(f"FAIL: reader {span}: byte {off + i} (page offset "
                      f"{(off + i) % 4096}): got {bytes(got[i:i + 8])!r}, "
                      f"expected {bytes(want[i:i + 8])!r}", flush=True)
    os.close(fd)
    print(f"# reader of the last {span} bytes: {n} reads, {bad} wrong",
          flush=True)
    sys.exit(1 if bad else 0)


def verify():
    with open(PATH, "rb") as f:
        got = f.read()
    want = Stream().upto(len(got))[:len(got)]
    if got != want or (got and got[-1:] != b"\n"):
        sys.exit(f"FAIL: append.log ({len(got)} bytes) is not whole "
                 "records of the stream")
    print(f"# append.log: {len(got)} bytes verified")


def main():
    if sys.argv[2] == "verify":
        return verify()
    os.close(os.open(PATH, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
    procs = [multiprocessing.Process(target=appender)]
    procs += [multiprocessing.Process(target=reader, args=(span,))
              for span in (1 << 20, 16384, 16384)]
    for p in procs:
        p.start()
    st = 0
    for p in procs:
        p.join()
        st |= p.exitcode != 0
    sys.exit(st)


if __name__ == "__main__":
    main()
