#!/usr/bin/env python3
"""Writer and verifier of the crash test (run by rw_crash.sh).

    rw_crash.py writer DIR LOG SEED   write until killed
    rw_crash.py verify MNT SIDE       check every writer's files
    rw_crash.py corrupt MNT SIDE      (self-test) spoil one synced block

The writer creates files, appends to them (some after setting room aside
past their end with fallocate KEEP_SIZE, which changes nothing a reader
sees, but leaves fsck promises to check after the crash), overwrites
block ranges, fsyncs and deletes, in DIR (on the mount).  Every 4 KiB block it writes encodes
(file id, block index, version) in a header followed by data derived from
those three (random, text-like or a repeated pattern: compressible or
not), so any block read back can be checked on its own.  LOG (outside the
mount) gets, line-buffered:
    w F B0 N    before writing blocks B0..B0+N-1 of file F (each block's
                version goes up by one; new blocks start at 1)
    s F         after fsync of F and of DIR: F's state so far is durable
    u F         before unlinking F
    d F         after the unlink and the fsync of DIR
    m F         before moving fF to tF with RENAME_WHITEOUT (a whiteout is
                left at fF) and back over that whiteout
    M F         after both renames and the fsync of DIR
The verifier replays a log and requires, after a crash:
  - a file that was synced and not unlinked exists; one with "d" does not;
    no file exists that the log does not name;
  - the size is whole blocks, at least the synced block count, at most the
    most ever written;
  - every block is exactly some version of that block between the synced
    one and the last one written (no torn block, no zeros, no stranger);
  - a file caught between its two renames ("m" without "M") is fF, or tF
    with a whiteout (a character device 0:0) at fF.
Files of earlier rounds (in SIDE/snapshot) must be unchanged.
"""
import ctypes
import hashlib
import json
import os
import random
import stat
import sys

libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_WHITEOUT = -100, 4


def rename(old, new, flags=0):
    if libc.renameat2(AT_FDCWD, old.encode(), AT_FDCWD, new.encode(), flags):
        raise OSError(ctypes.get_errno(), f"renameat2 {old} {new}")


FALLOC_FL_KEEP_SIZE = 1


def keep_size(path, off, n):
    """fallocate(KEEP_SIZE) of [off, off + n): neither size nor data move."""
    fd = os.open(path, os.O_WRONLY)
    try:
        if libc.fallocate(fd, FALLOC_FL_KEEP_SIZE, ctypes.c_long(off),
                          ctypes.c_long(n)):
            raise OSError(ctypes.get_errno(), f"fallocate {path}")
    finally:
        os.close(fd)


def is_whiteout(path):
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0

BS = 4096
HEAD = 30


def block(f, b, v):
    head = b"F%08d B%08d V%08d\n" % (f, b, v)
    r = random.Random((f * 1000003 + b) * 1000003 + v)
    kind = r.randrange(3)
    n = BS - len(head)
    if kind == 0:
        body = r.randbytes(n)
    elif kind == 1:
        pat = r.randbytes(r.randrange(1, 40))
        body = (pat * (n // len(pat) + 1))[:n]
    else:
        words = [b"crash", b"block", b"version", b"fsync", b"cluster"]
        body = b" ".join(r.choice(words) for _ in range(n // 4))[:n]
        body += b"\n" * (n - len(body))
    return head + body


def fsync_path(path):
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)


def writer(d, log_path, seed):
    r = random.Random(seed)
    log = open(log_path, "a", buffering=1)
    os.makedirs(d)
    p = d
    while True:         # the new directories themselves are durable
        p = os.path.dirname(p)
        fsync_path(p)
        if os.path.ismount(p):
            break
    vers, nid = {}, 0

    def write(f, b0, n):
        log.write(f"w {f} {b0} {n}\n")
        vs = vers[f]
        for b in range(b0, b0 + n):
            if b < len(vs):
                vs[b] += 1
            else:
                vs.append(1)
        data = b"".join(block(f, b, vs[b]) for b in range(b0, b0 + n))
        fd = os.open(os.path.join(d, f"f{f}"), os.O_WRONLY | os.O_CREAT,
                     0o644)
        os.pwrite(fd, data, b0 * BS)
        os.close(fd)

    while True:
        op = r.randrange(100)
        live = sorted(vers)
        if not live or op < 15:
            f, nid = nid, nid + 1
            vers[f] = []
            write(f, 0, r.choice([1, 3, 16, r.randrange(1, 200)]))
        elif op < 40:
            f = r.choice(live)
            n = r.choice([1, 2, 16, r.randrange(1, 64)])
            if op < 20:     # as a preallocating writer: room first
                keep_size(os.path.join(d, f"f{f}"), len(vers[f]) * BS,
                          (n + r.randrange(64)) * BS)
            write(f, len(vers[f]), n)
        elif op < 75:
            f = r.choice(live)
            if vers[f]:
                b0 = r.randrange(len(vers[f]))
                write(f, b0, min(len(vers[f]) - b0, r.randrange(1, 40)))
        elif op < 92:
            f = r.choice(live)
            fsync_path(os.path.join(d, f"f{f}"))
            fsync_path(d)
            log.write(f"s {f}\n")
        elif op < 95:
            f = r.choice(live)
            log.write(f"m {f}\n")
            rename(os.path.join(d, f"f{f}"), os.path.join(d, f"t{f}"),
                   RENAME_WHITEOUT)
            rename(os.path.join(d, f"t{f}"), os.path.join(d, f"f{f}"))
            fsync_path(d)
            log.write(f"M {f}\n")
        elif len(live) > 5:
            f = r.choice(live)
            log.write(f"u {f}\n")
            os.unlink(os.path.join(d, f"f{f}"))
            fsync_path(d)
            log.write(f"d {f}\n")
            del vers[f]


class State:
    def __init__(self):
        self.vers, self.synced = [], []
        self.unlinking = self.deleted = self.moving = False


def replay(log_path):
    files = {}
    with open(log_path) as log:
        for line in log:
            if not line.endswith("\n"):
                break           # a line cut by the kill
            op, f, *rest = line.split()
            st = files.setdefault(int(f), State())
            if op == "w":
                b0, n = map(int, rest)
                for b in range(b0, b0 + n):
                    if b < len(st.vers):
                        st.vers[b] += 1
                    else:
                        st.vers.append(1)
            elif op == "s":
                st.synced = list(st.vers)
            elif op == "u":
                st.unlinking = True
            elif op == "d":
                st.deleted = True
            elif op in "mM":
                st.moving = op == "m"
    return files


def check_file(path, f, st, errors):
    moved = os.path.join(os.path.dirname(path), f"t{f}")
    if os.path.lexists(moved):
        if not st.moving or not is_whiteout(path):
            errors.append(f"{moved}: there, with {path} "
                          f"{'a whiteout' if is_whiteout(path) else 'no whiteout'}"
                          f", {'inside' if st.moving else 'outside'} a move")
            return
        path = moved            # caught between the renames
    elif is_whiteout(path):
        errors.append(f"{path}: a whiteout, and no t{f}")
        return
    exists = os.path.exists(path)
    if st.deleted or not exists:
        if exists:
            errors.append(f"{path}: unlinked and its directory synced, "
                          "but it is there")
        elif st.synced and not st.unlinking:
            errors.append(f"{path}: synced with {len(st.synced)} blocks, "
                          "missing")
        return
    with open(path, "rb") as fh:
        data = fh.read()
    nb = len(data) // BS
    if len(data) % BS or not len(st.synced) <= nb <= len(st.vers):
        errors.append(f"{path}: {len(data)} bytes; synced "
                      f"{len(st.synced)} blocks, written {len(st.vers)}")
        return
    for b in range(nb):
        got = data[b * BS:(b + 1) * BS]
        lo = st.synced[b] if b < len(st.synced) else 1
        try:
            hf, hb, hv = (int(x[1:]) for x in got[:HEAD].split())
        except ValueError:
            hf = hb = hv = -1
        if (hf, hb) != (f, b) or not lo <= hv <= st.vers[b] or \
                got != block(f, b, hv):
            errors.append(f"{path}: block {b} is {got[:HEAD - 1]!r}, "
                          f"expected a version in {lo}..{st.vers[b]}")
            return


def sha(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def verify(mnt, side):
    snap_path = os.path.join(side, "snapshot")
    snap = json.load(open(snap_path)) if os.path.exists(snap_path) else {}
    errors, nfiles = [], 0
    for name in sorted(os.listdir(side)):
        if not name.endswith(".log"):
            continue
        d = os.path.join(mnt, name[:-4].replace("+", "/"))
        files = replay(os.path.join(side, name))
        if not os.path.isdir(d):
            if any(st.synced for st in files.values()):
                errors.append(f"{d}: missing, though files in it synced")
            continue
        for fn in os.listdir(d):
            if fn[0] not in "ft" or not fn[1:].isdigit() or \
                    int(fn[1:]) not in files:
                errors.append(f"{d}/{fn}: a file the writer never made")
        for f, st in files.items():
            check_file(os.path.join(d, f"f{f}"), f, st, errors)
            nfiles += 1
    for path, digest in snap.items():
        if not os.path.exists(path) or sha(path) != digest:
            errors.append(f"{path}: changed since it was verified after an "
                          "earlier crash")
    for e in errors[:20]:
        print(f"FAIL: {e}", file=sys.stderr)
    if errors:
        sys.exit(1)
    for name in os.listdir(side):     # from now on, these must not change
        if name.endswith(".log"):
            d = os.path.join(mnt, name[:-4].replace("+", "/"))
            if os.path.isdir(d):
                for fn in os.listdir(d):
                    if not is_whiteout(os.path.join(d, fn)):
                        snap[os.path.join(d, fn)] = sha(os.path.join(d, fn))
    json.dump(snap, open(snap_path, "w"))
    print(f"# crash verify: {nfiles} files of "
          f"{sum(n.endswith('.log') for n in os.listdir(side))} writers ok")


def corrupt(mnt, side):
    """Self-test: overwrite a synced block with a version never written."""
    for name in sorted(os.listdir(side)):
        if not name.endswith(".log"):
            continue
        d = os.path.join(mnt, name[:-4].replace("+", "/"))
        for f, st in replay(os.path.join(side, name)).items():
            path = os.path.join(d, f"f{f}")
            if st.synced and not st.unlinking and os.path.exists(path):
                fd = os.open(path, os.O_WRONLY)
                os.pwrite(fd, block(f, 0, st.vers[0] + 1), 0)
                os.close(fd)
                print(f"# corrupted block 0 of {path}")
                return
    sys.exit("nothing synced to corrupt")


if __name__ == "__main__":
    if sys.argv[1] == "writer":
        writer(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1] == "verify":
        verify(sys.argv[2], sys.argv[3])
    else:
        corrupt(sys.argv[2], sys.argv[3])
