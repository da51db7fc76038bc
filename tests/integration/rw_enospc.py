#!/usr/bin/env python3
"""Helpers of rw_enospc.sh: fill a filesystem, verify, delete.

    rw_enospc.py fill MNT SIDE PREFIX   write incompressible files until
        ENOSPC (4 MiB files, then 64 KiB, then 4 KiB ones, so the last
        blocks are used too); a failure must be ENOSPC, nothing else; an
        incomplete file is unlinked (which must work on a full filesystem);
        complete files are recorded in SIDE/sums as "sha256 size name"
    rw_enospc.py verify MNT SIDE        every recorded file that is not in
        SIDE/deleted is there, byte for byte
    rw_enospc.py delete MNT SIDE        unlink every other recorded file,
        record it in SIDE/deleted; prints the bytes deleted
    rw_enospc.py deleteall MNT SIDE     unlink every recorded file
The data is random: the filesystem cannot compress its way out of filling.
"""
import errno
import hashlib
import os
import sys

MODE, MNT, SIDE = sys.argv[1:4]
SUMS, DELETED = os.path.join(SIDE, "sums"), os.path.join(SIDE, "deleted")


def die(msg):
    print(f"FAIL: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


def only_enospc(e, what):
    if e.errno != errno.ENOSPC:
        die(f"{what}: {errno.errorcode.get(e.errno, e.errno)} "
            f"({e.strerror}), expected ENOSPC")


def write_all(fd, data):
    """write() may be short on a full filesystem; the next one fails."""
    view = memoryview(data)
    off = 0
    while off < len(data):
        off += os.write(fd, view[off:off + (1 << 20)])


def write_file(path, size):
    """True: written and fsync'd; False: ENOSPC (file unlinked)."""
    data = os.urandom(size)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError as e:
        only_enospc(e, f"create {path}")
        return False
    ok = True
    try:
        write_all(fd, data)
        os.fsync(fd)
    except OSError as e:
        only_enospc(e, f"write/fsync {path}")
        ok = False
    try:
        os.close(fd)        # FUSE may report a failed flush here
    except OSError as e:
        only_enospc(e, f"close {path}")
        ok = False
    if not ok:
        try:
            os.unlink(path)
        except OSError as e:
            die(f"unlink of {path} on a full filesystem: {e}")
        return False
    with open(SUMS, "a") as f:
        f.write(f"{hashlib.sha256(data).hexdigest()} {size} {path}\n")
    return True


def fill(prefix):
    os.makedirs(os.path.join(MNT, prefix), exist_ok=True)
    total = k = 0
    for size in (4 << 20, 64 << 10, 4 << 10):
        while True:
            path = os.path.join(MNT, prefix, f"f{k:05d}")
            k += 1
            if not write_file(path, size):
                break
            total += size
    # a full filesystem keeps saying ENOSPC, not EIO
    if write_file(os.path.join(MNT, prefix, "again"), 1 << 20):
        die("a 1 MiB file fitted after ENOSPC on 4 KiB files")
    print(total)


def recorded():
    deleted = set()
    if os.path.exists(DELETED):
        with open(DELETED) as f:
            deleted = set(f.read().split())
    with open(SUMS) as f:
        for line in f:
            sha, size, path = line.split()
            if path not in deleted:
                yield sha, int(size), path


def verify():
    n = nbytes = 0
    for sha, size, path in recorded():
        try:
            with open(path, "rb") as f:
                got = f.read()
        except OSError as e:
            die(f"{path}: {e}")
        if len(got) != size or hashlib.sha256(got).hexdigest() != sha:
            die(f"{path}: {len(got)} bytes (want {size}), content differs")
        n += 1
        nbytes += size
    print(f"# verified {n} files, {nbytes >> 20} MiB")


def delete(every):
    total, dirs = 0, {MNT}
    with open(DELETED, "a") as out:
        for i, (_, size, path) in enumerate(list(recorded())):
            if i % every == 0:
                os.unlink(path)
                out.write(path + "\n")
                total += size
                dirs.add(os.path.dirname(path))
    for d in dirs:      # fsyncdir: a checkpoint, so the space is free
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
        os.fsync(fd)
        os.close(fd)
    print(total)


if MODE == "fill":
    fill(sys.argv[4])
elif MODE == "verify":
    verify()
elif MODE == "delete":
    delete(2)
elif MODE == "deleteall":
    delete(1)
else:
    die(f"unknown mode {MODE}")
