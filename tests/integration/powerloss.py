#!/usr/bin/env python3
"""Workloads of the power-loss test (powerloss.sh), on a czfs mount whose
daemon records its writes (-o log_writes=LOG).

    powerloss.py WORKLOAD MNT LOG JOURNAL REFDIR SEED

Each workload changes files and fsyncs them, and writes a journal of what
it made durable (czfs_replay.c reads it): one line per version of a file,
"FROM UNTIL PATH REF".  FROM is the log's size once fsync returned (the
daemon records its flush before it replies), UNTIL the log's size before
the workload began to change that path again ("-": it never did), REF a
file in REFDIR of the bytes it must hold.  Between UNTIL and the next
version's FROM either may be on disk, which the journal does not claim.
"""
import os
import random
import sys
import time

WORKLOADS = ("small", "append", "overwrite", "rename", "recompress", "pack",
             "falloc", "big", "parallel")


class Journal:
    def __init__(self, mnt, log, path, refdir):
        self.mnt, self.log, self.refdir = mnt, log, refdir
        self.out = open(path, "w")
        self.open = {}          # path -> (from, ref) of its durable version
        self.nref = 0

    def pos(self):
        return os.stat(self.log).st_size

    def changing(self, path):
        """Before a change to path: its durable version ends here."""
        if path in self.open:
            frm, ref = self.open.pop(path)
            self.out.write("%d %d %s %s\n" % (frm, self.pos(), path, ref))

    def durable(self, path, data):
        """After the fsync that made data path's content."""
        pos = self.pos()
        self.nref += 1
        ref = os.path.join(self.refdir, "r%05d" % self.nref)
        with open(ref, "wb") as f:
            f.write(data)
        self.open[path] = (pos, ref)

    def close(self):
        for path, (frm, ref) in sorted(self.open.items()):
            self.out.write("%d - %s %s\n" % (frm, path, ref))
        self.out.close()


def data(rng, n):
    """Compressible but not trivial bytes: words of a small alphabet."""
    words = [bytes(rng.choice(b"abcdefghij") for _ in range(rng.randint(2, 9)))
             for _ in range(64)]
    out = bytearray()
    while len(out) < n:
        out += rng.choice(words) + b" "
        if rng.random() < 0.05:
            out += rng.randbytes(rng.randint(1, 64))
    return bytes(out[:n])


class W:
    def __init__(self, mnt, j, rng):
        self.mnt, self.j, self.rng = mnt, j, rng
        self.content = {}

    def p(self, path):
        return self.mnt + path

    def put(self, path, buf, fsync=True):
        """Write path anew (created or truncated) and fsync it."""
        self.j.changing(path)
        fd = os.open(self.p(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, buf)
        self.content[path] = buf
        if fsync:
            self.sync(path, fd)
        os.close(fd)

    def sync(self, path, fd=None):
        own = fd is None
        if own:
            fd = os.open(self.p(path), os.O_RDONLY)
        os.fsync(fd)
        if own:
            os.close(fd)
        self.j.durable(path, self.content[path])

    def pwrite(self, path, buf, off):
        self.j.changing(path)
        fd = os.open(self.p(path), os.O_WRONLY)
        os.pwrite(fd, buf, off)
        old = self.content[path]
        if off > len(old):
            old += bytes(off - len(old))
        self.content[path] = old[:off] + buf + old[off + len(buf):]
        self.sync(path, fd)
        os.close(fd)

    def fsync_dir(self, d):
        fd = os.open(self.p(d), os.O_RDONLY | os.O_DIRECTORY)
        os.fsync(fd)
        os.close(fd)

    # ---- the workloads ----

    def small(self):
        os.mkdir(self.p("/small"))
        for i in range(40):
            self.put("/small/f%02d" % i, data(self.rng, self.rng.randint(1, 20000)))

    def append(self):
        os.mkdir(self.p("/log"))
        names = ["/log/a", "/log/b", "/log/c"]
        for n in names:
            self.put(n, b"")
        for _ in range(60):
            n = self.rng.choice(names)
            buf = data(self.rng, self.rng.randint(100, 9000))
            self.j.changing(n)
            fd = os.open(self.p(n), os.O_WRONLY | os.O_APPEND)
            os.write(fd, buf)
            self.content[n] += buf
            self.sync(n, fd)
            os.close(fd)

    def overwrite(self):
        os.mkdir(self.p("/ow"))
        names = ["/ow/x", "/ow/y", "/ow/z"]
        for n in names:
            self.put(n, data(self.rng, self.rng.randint(150000, 400000)))
        for _ in range(50):
            n = self.rng.choice(names)
            size = len(self.content[n])
            ln = self.rng.choice((1, 100, 4096, 10000, 70000))
            off = self.rng.randrange(0, size)
            if self.rng.random() < 0.5:
                off &= ~4095
            self.pwrite(n, self.rng.randbytes(ln), off)

    def rename(self):
        os.mkdir(self.p("/ren"))
        targets = ["/ren/t0", "/ren/t1", "/ren/t2"]
        for i in range(30):
            tmp = "/ren/tmp%02d" % i
            self.put(tmp, data(self.rng, self.rng.randint(10, 60000)))
            t = self.rng.choice(targets)
            self.j.changing(tmp)
            self.j.changing(t)
            os.rename(self.p(tmp), self.p(t))
            self.content[t] = self.content.pop(tmp)
            self.fsync_dir("/ren")
            self.j.durable(t, self.content[t])

    def recompress(self):
        # hot clusters (written in part, block by block) that the worker
        # compresses again once they are a second old, under the test
        os.mkdir(self.p("/rc"))
        names = ["/rc/h%d" % i for i in range(4)]
        for n in names:
            self.put(n, data(self.rng, 300000))
        for rnd in range(4):
            for n in names:
                off = self.rng.randrange(0, 290000) & ~4095
                self.pwrite(n, data(self.rng, 8192), off)
            for i in range(5):
                self.put("/rc/s%d-%d" % (rnd, i), data(self.rng, 3000))
            time.sleep(1.6)     # cold now: recompressed, checkpointed
        self.put("/rc/last", b"after the recompression\n")

    def pack(self):
        # small files written, then fsync'd: the first fsync's writeback
        # packs them all together
        os.mkdir(self.p("/pk"))
        for rnd in range(3):
            names = ["/pk/r%d-%02d" % (rnd, i) for i in range(40)]
            for n in names:
                self.put(n, data(self.rng, self.rng.randint(200, 6000)), fsync=False)
            for n in names:
                self.sync(n)
            # rewrite some: they leave their packs
            for n in self.rng.sample(names, 8):
                self.put(n, data(self.rng, self.rng.randint(200, 6000)))

    def falloc(self):
        os.mkdir(self.p("/fa"))
        for i in range(4):
            n = "/fa/p%d" % i
            size = self.rng.choice((65536, 300000, 1 << 20))
            self.j.changing(n)
            fd = os.open(self.p(n), os.O_WRONLY | os.O_CREAT, 0o644)
            os.posix_fallocate(fd, 0, size)
            self.content[n] = bytes(size)
            self.sync(n, fd)
            os.close(fd)
            for _ in range(6):
                off = self.rng.randrange(0, size)
                self.pwrite(n, data(self.rng, self.rng.randint(1, 20000)), off)

    def big(self):
        # more than an fsync's 1024 blocks: a commit with two flushes
        os.mkdir(self.p("/big"))
        self.put("/big/b0", data(self.rng, 6 << 20))
        self.put("/big/s0", b"small after big\n")
        self.pwrite("/big/b0", self.rng.randbytes(5 << 20), 1 << 20)
        self.put("/big/s1", b"small after the overwrite\n")


    def mix(self, tag):
        """One of parallel's writers: new files, appends and overwrites
        in a directory of its own, each fsync'd."""
        d = "/par%d" % tag
        os.mkdir(self.p(d))
        names = []
        for i in range(40):
            op = self.rng.random()
            if op < 0.4 or not names:
                n = "%s/f%02d" % (d, i)
                names.append(n)
                self.put(n, data(self.rng, self.rng.randint(1, 40000)))
            elif op < 0.7:
                n = self.rng.choice(names)
                self.pwrite(n, data(self.rng, self.rng.randint(1, 9000)),
                            len(self.content[n]))
            else:
                n = self.rng.choice(names)
                off = self.rng.randrange(0, len(self.content[n]) + 1)
                self.pwrite(n, self.rng.randbytes(self.rng.randint(1, 20000)), off)


def parallel(mnt, log, jpath, refdir, seed, writers=3):
    """Writers at once, each with its own files and journal (a file's
    versions are its writer's alone), concatenated at the end: fsyncs and
    writebacks of several threads of the daemon overlap."""
    pids = []
    for k in range(writers):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                j = Journal(mnt, log, "%s.%d" % (jpath, k),
                            os.path.join(refdir, "w%d" % k))
                os.makedirs(j.refdir, exist_ok=True)
                try:
                    W(mnt, j, random.Random(seed * 100 + k)).mix(k)
                    code = 0
                finally:
                    j.close()
            finally:
                os._exit(code)
        pids.append(pid)
    bad = [pid for pid in pids if os.waitpid(pid, 0)[1] != 0]
    with open(jpath, "w") as out:
        for k in range(writers):
            with open("%s.%d" % (jpath, k)) as f:
                out.write(f.read())
    if bad:
        sys.exit("parallel: %d writer(s) failed" % len(bad))


def main():
    if len(sys.argv) != 7 or sys.argv[1] not in WORKLOADS:
        sys.exit("usage: powerloss.py {%s} MNT LOG JOURNAL REFDIR SEED"
                 % "|".join(WORKLOADS))
    name, mnt, log, jpath, refdir, seed = sys.argv[1:]
    os.makedirs(refdir, exist_ok=True)
    if name == "parallel":
        parallel(mnt, log, jpath, refdir, int(seed))
        return
    j = Journal(mnt, log, jpath, refdir)
    w = W(mnt, j, random.Random(int(seed)))
    try:
        getattr(w, name)()
    finally:
        j.close()


if __name__ == "__main__":
    main()
