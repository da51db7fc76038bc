#!/usr/bin/env python3
"""Roles of the read-write stress test (run by rw_stress.sh).

    rw_stress.py ROLE ID MNT SIDE SECONDS SEED

ROLE is one of
  writer   makes files w<ID>_<k> of random size and data (text, zeros,
           patterns, random), with overwrites and truncates, in MNT/work;
           records "sha256 size name" in SIDE/sums.<ID>, then renames the
           file into MNT/done/d<n>/; also moves its finished files between
           done/ directories (some with RENAME_WHITEOUT, which leaves a
           whiteout at the old name, as overlayfs does), reopens some by
           their file handle (open_by_handle_at) and compares them, makes
           some immutable for a moment (unlink and writes must fail with
           EPERM), marks some nodump ("nodump name" recorded), and
           deletes some ("deleted name" recorded)
  appender appends numbered records to MNT/shared.log (O_APPEND); the
           record count goes to SIDE/appended
  striper  pwrites 4 KiB blocks of MNT/striped: stripers share every 64 KiB
           cluster, each owns the blocks b with b % NSTRIPERS == ID; the
           final version of each block goes to SIDE/striped.<ID>
  reader   meanwhile reads: shared.log must be a prefix of the record
           stream; a finished file must match its recorded checksum
  verify   at the end: every file against the records, exactly
Side files live outside the mount, so a broken filesystem cannot hide its
own mistakes.
"""
import ctypes
import errno
import fcntl
import hashlib
import json
import os
import random
import stat
import struct
import sys
import time

ROLE, ID, MNT, SIDE = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
SECONDS, SEED = float(sys.argv[5]), int(sys.argv[6])
NSTRIPERS = 3
STRIPED_BLOCKS = 2048            # 8 MiB
NDONE = 4
rnd = random.Random(SEED * 1000 + ID)
WORDS = b"the of a cluster write read block inode extent space map".split()


def die(msg):
    print(f"FAIL: {ROLE} {ID}: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_WHITEOUT = -100, 4


class Handle(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_uint), ("type", ctypes.c_int),
                ("data", ctypes.c_ubyte * 128)]


def rename_whiteout(old, new):
    if libc.renameat2(AT_FDCWD, old.encode(), AT_FDCWD, new.encode(),
                      RENAME_WHITEOUT):
        die(f"renameat2 WHITEOUT {old}: {os.strerror(ctypes.get_errno())}")


def is_whiteout(path):
    st = os.lstat(path)
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


FS_IOC_GETFLAGS, FS_IOC_SETFLAGS = 0x80086601, 0x40086602
FS_IMMUTABLE_FL, FS_NODUMP_FL = 0x10, 0x40


def get_flags(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        got = fcntl.ioctl(fd, FS_IOC_GETFLAGS, bytes(8))
    finally:
        os.close(fd)
    return struct.unpack("i", got[:4])[0]


def set_flags(path, flags):
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.ioctl(fd, FS_IOC_SETFLAGS, struct.pack("i", flags) + bytes(4))
    finally:
        os.close(fd)


def must_fail_eperm(what, fn):
    try:
        fn()
    except PermissionError as e:
        if e.errno == errno.EPERM:
            return
        raise
    die(f"{what} of an immutable file worked")


def immutable_moment(path):
    """chattr +i: the name and the data are fixed, then -i."""
    set_flags(path, get_flags(path) | FS_IMMUTABLE_FL)
    must_fail_eperm("unlink", lambda: os.unlink(path))
    must_fail_eperm("open for writing", lambda: os.close(os.open(path, os.O_WRONLY)))
    set_flags(path, get_flags(path) & ~FS_IMMUTABLE_FL)


def by_handle(path):
    """The content of path read through its file handle."""
    h, mid = Handle(bytes=128), ctypes.c_int()
    if libc.name_to_handle_at(AT_FDCWD, path.encode(), ctypes.byref(h),
                              ctypes.byref(mid), 0):
        die(f"name_to_handle_at {path}: {os.strerror(ctypes.get_errno())}")
    mfd = os.open(MNT, os.O_RDONLY | os.O_DIRECTORY)
    fd = libc.open_by_handle_at(mfd, ctypes.byref(h), os.O_RDONLY)
    err = ctypes.get_errno()
    os.close(mfd)
    if fd < 0:
        die(f"open_by_handle_at {path}: {os.strerror(err)}")
    with os.fdopen(fd, "rb") as f:
        return f.read()


def data(r, n):
    kind = r.randrange(4)
    if kind == 0:
        return r.randbytes(n)
    if kind == 1:
        return bytes(n)
    if kind == 2:
        pat = r.randbytes(r.randrange(1, 64))
        return (pat * (n // len(pat) + 1))[:n]
    out = bytearray()
    while len(out) < n:
        out += r.choice(WORDS) + (b"\n" if r.randrange(12) == 0 else b" ")
    return bytes(out[:n])


def record(k):
    """Record k of shared.log: deterministic, of varying length."""
    r = random.Random(k)
    return b"%08d " % k + data(r, r.randrange(1, 20000)) + b"\n"


def pick_size(r):
    return r.choice([0, r.randrange(1, 100), 4096 + r.randrange(-5, 6),
                     65536 + r.randrange(-5, 6), r.randrange(1, 3 << 20)])


def write_one(path, r):
    """Write a file in random chunks, overwrite and truncate some;
    returns its final content."""
    size = pick_size(r)
    content = bytearray(data(r, size))
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    off = 0
    while off < size:
        n = min(size - off, r.choice([1, 100, 4096, 65536, 300000]))
        os.pwrite(fd, content[off:off + n], off)
        off += n
    for _ in range(r.randrange(3)):
        if not size:
            break
        o = r.randrange(size)
        new = data(r, min(size - o, r.randrange(1, 70000)))
        os.pwrite(fd, new, o)
        content[o:o + len(new)] = new
    if size and r.randrange(4) == 0:
        size = r.randrange(size)
        os.ftruncate(fd, size)
        del content[size:]
    if r.randrange(3) == 0:
        os.fsync(fd)
    os.close(fd)
    return bytes(content)


def writer():
    sums = open(os.path.join(SIDE, f"sums.{ID}"), "a", buffering=1)
    where, end, k = {}, time.time() + SECONDS, 0
    while time.time() < end:
        name = f"w{ID}_{k}"
        k += 1
        content = write_one(os.path.join(MNT, "work", name), rnd)
        sums.write(f"{hashlib.sha256(content).hexdigest()} {len(content)} "
                   f"{name}\n")
        where[name] = rnd.randrange(NDONE)
        done = os.path.join(MNT, "done", f"d{where[name]}", name)
        os.rename(os.path.join(MNT, "work", name), done)
        if rnd.randrange(5) == 0 and by_handle(done) != content:
            die(f"{name} read through its file handle differs")
        if rnd.randrange(6) == 0:
            immutable_moment(done)
        if rnd.randrange(6) == 0:
            set_flags(done, get_flags(done) | FS_NODUMP_FL)
            sums.write(f"nodump {name}\n")
        if where and rnd.randrange(3) == 0:    # move one across dirs
            old = rnd.choice(sorted(where))
            new = rnd.randrange(NDONE)
            src = os.path.join(MNT, "done", f"d{where[old]}", old)
            dst = os.path.join(MNT, "done", f"d{new}", old)
            if new != where[old] and rnd.randrange(2):
                rename_whiteout(src, dst)
            else:
                os.rename(src, dst)
            where[old] = new
        if len(where) > 30 and rnd.randrange(4) == 0:
            old = rnd.choice(sorted(where))
            sums.write(f"deleted {old}\n")
            os.unlink(os.path.join(MNT, "done", f"d{where.pop(old)}", old))
    print(f"# writer {ID}: {k} files")


def appender():
    fd = os.open(os.path.join(MNT, "shared.log"),
                 os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    end, k = time.time() + SECONDS, 0
    while time.time() < end:
        rec = record(k)
        if os.write(fd, rec) != len(rec):
            die(f"short append of record {k}")
        k += 1
        if k % 100 == 0:
            os.fsync(fd)
    os.close(fd)
    with open(os.path.join(SIDE, "appended"), "w") as f:
        f.write(f"{k}\n")
    print(f"# appender: {k} records")


def block(owner, b, version):
    """A 4 KiB block that names its owner, index and version."""
    head = b"owner %d block %d version %d\n" % (owner, b, version)
    return (head + data(random.Random(b * 7919 + version), 4096))[:4096]


def striper():
    fd = os.open(os.path.join(MNT, "striped"), os.O_WRONLY)
    versions, end, n = {}, time.time() + SECONDS, 0
    mine = list(range(ID, STRIPED_BLOCKS, NSTRIPERS))
    while time.time() < end:
        b = rnd.choice(mine)
        versions[b] = versions.get(b, 0) + 1
        os.pwrite(fd, block(ID, b, versions[b]), b * 4096)
        n += 1
    os.close(fd)
    with open(os.path.join(SIDE, f"striped.{ID}"), "w") as f:
        json.dump(versions, f)
    print(f"# striper {ID}: {n} block writes")


def known_sums():
    sums = {}
    for fn in os.listdir(SIDE):
        if fn.startswith("sums."):
            with open(os.path.join(SIDE, fn)) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) == 3:
                        sums[parts[2]] = (parts[0], int(parts[1]))
    return sums


def check_prefix(stream, got):
    """GOT must be the first len(GOT) bytes of the record stream (a
    bytearray, grown in place: the log gets long)."""
    while len(stream[0]) < len(got):
        stream[0] += record(stream[1])
        stream[1] += 1
    if memoryview(stream[0])[:len(got)] != got:
        i = next(i for i in range(len(got)) if stream[0][i] != got[i])
        j = i
        while j < len(got) and stream[0][j] != got[j]:
            j += 1
        # what a second read sees tells a passing race from damage
        with open(os.path.join(MNT, "shared.log"), "rb") as f:
            again = f.read(len(got))
        die(f"shared.log differs from the record stream at byte {i} "
            f"(cluster offset {i % 65536}) for {j - i} bytes of "
            f"{len(got)} read; got {bytes(got[i:i + 16])!r}, expected "
            f"{bytes(stream[0][i:i + 16])!r}; read again: "
            + ("same" if again == stream[0][:len(again)] else "differs"))


def read_done(sums):
    d = os.path.join(MNT, "done", f"d{rnd.randrange(NDONE)}")
    names = os.listdir(d)
    if not names:
        return 0
    name = rnd.choice(names)
    try:
        if is_whiteout(os.path.join(d, name)):
            return 0    # the file moved on, with a whiteout
        with open(os.path.join(d, name), "rb") as f:
            content = f.read()
    except FileNotFoundError:
        return 0        # moved or deleted meanwhile: allowed
    except PermissionError:
        # it moved on with a whiteout between the check and the open: the
        # name is now a device node, which a nodev mount refuses to open
        try:
            if is_whiteout(os.path.join(d, name)):
                return 0
        except FileNotFoundError:
            return 0
        raise
    if name not in sums:
        sums.update(known_sums())
    want = sums.get(name)
    if want is None:
        die(f"{name} is in done/ with no recorded checksum")
    if hashlib.sha256(content).hexdigest() != want[0]:
        try:
            with open(os.path.join(d, name), "rb") as f:
                again = hashlib.sha256(f.read()).hexdigest() == want[0]
        except OSError:
            again = False
        die(f"{name}: {len(content)} bytes, expected {want[1]}, "
            "checksum differs; read again: "
            + ("matches" if again else "differs"))
    return 1


def reader():
    stream, sums, end = [bytearray(), 0], {}, time.time() + SECONDS
    nlog = nfiles = 0
    while time.time() < end:
        if rnd.randrange(2):
            with open(os.path.join(MNT, "shared.log"), "rb") as f:
                check_prefix(stream, f.read())
            nlog += 1
        else:
            nfiles += read_done(sums)
    print(f"# reader {ID}: {nlog} log reads, {nfiles} file reads verified")


def verify_files():
    sums, deleted, nodump = known_sums(), set(), set()
    for fn in os.listdir(SIDE):
        if fn.startswith("sums."):
            with open(os.path.join(SIDE, fn)) as f:
                for l in f:
                    if l.startswith("deleted"):
                        deleted.add(l.split()[1])
                    elif l.startswith("nodump"):
                        nodump.add(l.split()[1])
    found, whiteouts = {}, set()
    for i in range(NDONE):
        d = os.path.join(MNT, "done", f"d{i}")
        for name in os.listdir(d):
            if is_whiteout(os.path.join(d, name)):
                whiteouts.add(name)    # where a file was, before a move
                continue
            if name in found:
                die(f"{name} is in two directories")
            found[name] = os.path.join(d, name)
    if whiteouts - set(sums):
        die(f"whiteouts of files never made: {sorted(whiteouts - set(sums))[:5]}")
    want = set(sums) - deleted
    if set(found) != want:
        die(f"done/ has {sorted(set(found) - want)[:5]} too many, "
            f"{sorted(want - set(found))[:5]} missing")
    for name, path in found.items():
        with open(path, "rb") as f:
            if hashlib.sha256(f.read()).hexdigest() != sums[name][0]:
                die(f"{name} does not match its checksum")
        flags = get_flags(path)
        if flags & FS_IMMUTABLE_FL:
            die(f"{name} is still immutable")
        if bool(flags & FS_NODUMP_FL) != (name in nodump):
            die(f"{name}: nodump is {bool(flags & FS_NODUMP_FL)}, recorded "
                f"{name in nodump}")
    if os.listdir(os.path.join(MNT, "work")):
        die(f"work/ not empty: {os.listdir(os.path.join(MNT, 'work'))[:5]}")
    print(f"# {len(whiteouts)} whiteouts left by moves")
    return len(found)


def verify():
    nfiles = verify_files()
    with open(os.path.join(SIDE, "appended")) as f:
        n = int(f.read())
    with open(os.path.join(MNT, "shared.log"), "rb") as f:
        got = f.read()
    if got != b"".join(record(k) for k in range(n)):
        die(f"shared.log is not exactly the {n} appended records")
    with open(os.path.join(MNT, "striped"), "rb") as f:
        got = f.read()
    if len(got) != STRIPED_BLOCKS * 4096:
        die(f"striped has {len(got)} bytes")
    for owner in range(NSTRIPERS):
        with open(os.path.join(SIDE, f"striped.{owner}")) as f:
            versions = {int(b): v for b, v in json.load(f).items()}
        for b in range(owner, STRIPED_BLOCKS, NSTRIPERS):
            want = block(owner, b, versions[b]) if b in versions \
                else bytes(4096)
            if got[b * 4096:(b + 1) * 4096] != want:
                die(f"striped block {b} (owner {owner}, version "
                    f"{versions.get(b)}) differs: "
                    f"{got[b * 4096:b * 4096 + 40]!r}")
    print(f"# verified {nfiles} files, {n} log records, "
          f"{STRIPED_BLOCKS} striped blocks")


{"writer": writer, "appender": appender, "striper": striper,
 "reader": reader, "verify": verify}[ROLE]()
