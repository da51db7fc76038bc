#!/usr/bin/env python3
"""Differential POSIX oracle: czfs against a kernel filesystem (issue 31).

    posix_oracle.py REF CZFS [--seeds LIST] [--ops N] [--replay FILE]
                    [--out DIR] [--no-known-bugs]

REF is a directory on an ext4 mount (posix_oracle.sh makes one), CZFS one
on a czfs mount, both mounted nodev; run as root.  The REGRESSIONS run
first, then the seeds (CZFS_ORACLE_SEEDS, CZFS_ORACLE_OPS: the default
is the CI set, seeds 1-80 of 50 ops).  For each seed a
random but reproducible sequence of operations runs on both, each in a
fresh directory, one operation at a time, every one in a forked child
with the credentials it names (root, root without CAP_FOWNER and
CAP_FSETID, users and groups 65534, 12345, 12346 with and without
CAP_FSETID).  After each operation the results (return values, errno
names) and the state of every path (type, mode, owner, group, link count
and which names are one inode, size, rdev, symlink target, contents,
xattrs with ACLs, chattr flags i a A d; times as relations: changed or
not since the operation before, mtime equal to ctime, and the values the
sequence set explicitly) must be the same.  A difference prints the seed
and the shortest sequence found to show it (ops removed in chunks, then
one at a time, each try replayed on fresh directories of both) and a
--replay file of it in DIR.  LIST: "1-30" or "4,17,99"; N: ops per seed.

What differs by design, hence not compared (keep this list short):
- st_blocks: czfs compresses and packs small files; directory st_size:
  ext4 counts its blocks, czfs its entries.
- atime, but right after a utimens set it: ext4 (relatime) moves it as
  the snapshots list and read, FUSE does not.
- with chattr +i or +a somewhere, an op ext4 refuses with EPERM may fail
  on czfs with another errno (or be a no-op): ext4 checks the flags
  before the permissions and the type, and the kernel's FUSE inodes do
  not carry them, so its own checks come first.
- no device is opened: both mounts are nodev (a FUSE mount always is).
- not generated: O_TMPFILE (FUSE has no tmpfile); chattr flags but
  i a A d (czfs keeps these and c/m, which ext4 lacks; ext4's e is
  masked); utimensat(now, now), as FUSE sends it as utimensat(NULL),
  which an append-only file takes (it is drawn as NULL).
- a chown(-1, -1) of a setuid or setgid file by a caller neither its
  owner nor CAP_FOWNER: EPERM on ext4, nothing on czfs.  FUSE sends it
  as the same empty SETATTR as a writer's file_remove_privs, and the
  writer must not get EPERM (the WRITE drops the bits).
- ext4's own ways, which POSIX leaves open: an xattr set to the value it
  has keeps its ctime; a RENAME_WHITEOUT that fails may have moved the
  directories' times; mtime = ctime after an op that sets times twice
  (open(O_TRUNC) then a write) holds on ext4 by timing (multigrain
  timestamps keep the first ctime within a clock tick), so it is not
  compared then.
"""
import ctypes
import errno
import fcntl
import hashlib
import json
import os
import random
import re
import stat
import struct
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64,
                           ctypes.c_int64]
AT_FDCWD = -100
AT_SYMLINK_NOFOLLOW = 0x100
UTIME_NOW, UTIME_OMIT = (1 << 30) - 1, (1 << 30) - 2
RENAME_NOREPLACE, RENAME_EXCHANGE, RENAME_WHITEOUT = 1, 2, 4
FS_IOC_GETFLAGS, FS_IOC_SETFLAGS = 0x80086601, 0x40086602
FL_BITS = {"i": 0x10, "a": 0x20, "d": 0x40, "A": 0x80}
FL_MASK = sum(FL_BITS.values())
CAP_FOWNER, CAP_FSETID = 3, 4
EXPLICIT_NS = 10 ** 18      # times below this one were set by the sequence

# Known czfs bugs, being fixed elsewhere: a difference one explains ends
# its sequence with a note instead of failing (--no-known-bugs: fail).
# DELETE each line when its fix is merged (known_bug() says what each
# matches).
KNOWN_BUGS = [
    # by design (see the list above): a stranger's chown(-1, -1) of a
    # setuid or setgid file, EPERM on ext4, changes nothing on czfs
    "chown-kill-eperm",
]

# Sequences that showed a difference once, run before the seeds: each
# named after what was wrong (the seeds might not draw them again).
REGRESSIONS = {
    "planted: chgrp of a fifo 06555 by its owner keeps S_ISUID, S_ISGID": [
        ["mknod", "root", "p", "fifo", 0o644, [0, 0]],
        ["chown", "root", "p", 65534, 65533, True],
        ["chmod", "root", "p", 0o6555],
        ["chown", "u1", "p", -1, 65532, True]],
    "chown(-1, -1) of a setuid regular file kills S_ISUID": [
        ["mknod", "root", "a", "reg", 0o644, [0, 0]],
        ["chmod", "root", "a", 0o4755],
        ["chown", "root", "a", -1, -1, True]],
    "a chown that kills S_ISUID needs the owner or CAP_FOWNER": [
        ["mknod", "root", "a", "chr", 0o644, [250, 1]],
        ["chmod", "root", "a", 0o6555],
        ["chown", "u2", "a", -1, -1, True],
        ["mknod", "u1", "b", "fifo", 0o6555, [0, 0]],
        ["chown", "root-fown", "b", 0, 0, True]],
    "truncate (killing S_ISGID too): mtime = ctime": [
        ["mknod", "u1", "b", "reg", 0o644, [0, 0]],
        ["truncate", "u1", "b", 1],
        ["mknod", "u1", "a", "reg", 0o2770, [0, 0]],
        ["truncate", "root-fown", "a", 4096]],
    "RENAME_EXCHANGE: the ctime of both": [
        ["symlink", "u2", "a/b", "b"],
        ["mknod", "root-fown", "d", "chr", 0o550, [0, 0]],
        ["rename", "u1", "b", "d", RENAME_EXCHANGE]],
    "removing an ACL that is not there succeeds": [
        ["mknod", "u1", "c", "reg", 0o1777, [0, 0]],
        ["removexattr", "u1", "c", "system.posix_acl_access", False]],
    "an ACL the mode says, the mode the same: no ctime": [
        ["mkdir", "root", "d", 0o777],
        ["setacl", "root", "d", "access", [[1, 7, 0xffffffff],
                                           [4, 5, 0xffffffff],
                                           [0x20, 5, 0xffffffff]]]],
    "fallocate KEEP_SIZE: mtime too": [
        ["open", "u1", "a", os.O_WRONLY | os.O_CREAT, 0o644, ["none"]],
        ["open", "root", "a", os.O_WRONLY, 0, ["fallocate", 1, 0, 5000]]],
    "a whiteout has the ACL its directory's default gives": [
        ["mkdir", "root", "a", 0o4755],
        ["setacl", "root", ".", "default", [[1, 1, 0xffffffff], [2, 5, 65534],
                                            [4, 3, 0xffffffff], [8, 3, 65532],
                                            [0x10, 7, 0xffffffff],
                                            [0x20, 2, 0xffffffff]]],
        ["rename", "root-fown", "a", "c", RENAME_WHITEOUT]],
    "append-only: utimensat(omit, now) refused, chown(-1, -1) not": [
        ["open", "u1", "c", os.O_RDWR | os.O_CREAT, 0o600, ["none"]],
        ["chattr", "root", "c", FL_BITS["a"], 0],
        ["utimens", "u1", "c", "omit", "now", True],
        ["chown", "u3", "c", -1, -1, True]],
}

# name: (uid, gid, groups, capabilities: None all, else the set kept)
CREDS = {
    "root": (0, 0, [0], None),
    "root-fown": (0, 0, [0], "all-but-fowner-fsetid"),
    "u1": (65534, 65533, [65533, 65532], set()),
    "u1+fsetid": (65534, 65533, [65533, 65532], {CAP_FSETID}),
    "u2": (12345, 65533, [65533], set()),
    "u3": (12346, 12346, [], set()),
}
CRED_WEIGHTS = {"root": 4, "root-fown": 1, "u1": 4, "u1+fsetid": 1,
                "u2": 2, "u3": 1}
UIDS = [-1, 0, 65534, 12345, 12346]
GIDS = [-1, 0, 65533, 65532, 12346]
NAMES = ["a", "b", "c", "d"]
MODES = [0o644, 0o755, 0o600, 0o777, 0o000, 0o6555, 0o2775, 0o4755,
         0o1777, 0o2770, 0o6755, 0o7777, 0o550, 0o2555, 0o4711, 0o3777]
XNAMES = ["user.a", "user.b", "trusted.t"]
KINDS = {"fifo": stat.S_IFIFO, "chr": stat.S_IFCHR, "blk": stat.S_IFBLK,
         "sock": stat.S_IFSOCK, "reg": stat.S_IFREG}
RDEVS = [(1, 3), (7, 9), (250, 1), (0, 0)]


def ename(e):
    return errno.errorcode.get(e, str(e))


# ---- credentials ---------------------------------------------------------

class CapHdr(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32),
                ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def set_caps(keep):
    """Effective and permitted: KEEP (a set, or all but two) of those held."""
    hdr, data = CapHdr(0x20080522, 0), (CapData * 2)()
    if libc.capget(ctypes.byref(hdr), data):
        raise OSError(ctypes.get_errno(), "capget")
    perm = data[0].permitted | data[1].permitted << 32
    if keep == "all-but-fowner-fsetid":
        want = perm & ~(1 << CAP_FOWNER | 1 << CAP_FSETID)
    else:
        want = perm & sum(1 << c for c in keep)
    for i in range(2):
        data[i].effective = data[i].permitted = want >> (32 * i) & 0xffffffff
        data[i].inheritable = 0
    if libc.capset(ctypes.byref(hdr), data):
        raise OSError(ctypes.get_errno(), "capset")


def become(cred):
    uid, gid, groups, caps = CREDS[cred]
    if uid:
        libc.prctl(8, 1 if caps else 0, 0, 0, 0)    # PR_SET_KEEPCAPS
        os.setgroups(groups)
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    if caps is not None and (uid == 0 or caps):
        set_caps(caps)


# ---- the operations (run in the child, cwd the run's directory) -----------

def call(fn, *args):
    """FN's result, or the errno name it failed with."""
    try:
        r = fn(*args)
        return "ok" if r is None else r
    except OSError as e:
        return ename(e.errno)


def check_rc(rc):
    if rc < 0:
        raise OSError(ctypes.get_errno(), "")
    return rc


def c_utimens(path, at, mt, follow):
    if at == "null":
        ts = None
    else:
        ts = (ctypes.c_long * 4)()
    for i, t in enumerate((at, mt) if ts else ()):
        t = {"now": UTIME_NOW, "omit": UTIME_OMIT}.get(t, t)
        ts[2 * i], ts[2 * i + 1] = (0, t) if t in (UTIME_NOW, UTIME_OMIT) \
            else divmod(t, 10 ** 9)
    check_rc(libc.utimensat(AT_FDCWD, path.encode(), ts,
                            0 if follow else AT_SYMLINK_NOFOLLOW))


def c_rename(src, dst, flags):
    check_rc(libc.renameat2(AT_FDCWD, src.encode(), AT_FDCWD, dst.encode(),
                            flags))


def acl_blob(entries):
    return struct.pack("<I", 2) + b"".join(
        struct.pack("<HHI", tag, perm, xid) for tag, perm, xid in entries)


def get_flags(fd):
    return struct.unpack("i", fcntl.ioctl(fd, FS_IOC_GETFLAGS,
                                          bytes(8))[:4])[0]


def c_chattr(path, on, off):
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    try:
        old = get_flags(fd)
        new = (old | on) & ~off
        fcntl.ioctl(fd, FS_IOC_SETFLAGS, struct.pack("i", new) + bytes(4))
    finally:
        os.close(fd)


def fd_action(fd, act):
    kind = act[0]
    if kind == "write":
        _, off, n, byte = act
        os.lseek(fd, off, os.SEEK_SET)
        w = os.write(fd, bytes([byte]) * n)
        return [w, os.lseek(fd, 0, os.SEEK_CUR)]
    if kind == "read":
        return hashlib.sha1(os.read(fd, 1 << 20)).hexdigest()[:12]
    if kind == "ftruncate":
        return os.ftruncate(fd, act[1])
    if kind == "fallocate":
        return check_rc(libc.fallocate(fd, act[1], act[2], act[3]))
    if kind == "fchmod":
        return os.fchmod(fd, act[1])
    if kind == "fchown":
        return os.fchown(fd, act[1], act[2])
    return None


def c_open(path, flags, mode, act):
    fd = os.open(path, flags | os.O_NONBLOCK, mode)
    try:
        return [fd >= 0, call(fd_action, fd, act)]
    finally:
        os.close(fd)


def execute(op):
    """Run OP (already as its credentials); its results, JSON-able."""
    kind, a = op[0], op[2:]
    if kind == "mkdir":
        return call(os.mkdir, a[0], a[1])
    if kind == "mknod":
        path, k, mode, rdev = a
        return call(os.mknod, path, KINDS[k] | mode, os.makedev(*rdev))
    if kind == "symlink":
        return call(os.symlink, a[0], a[1])
    if kind == "link":
        return call(lambda: os.link(a[0], a[1], follow_symlinks=a[2]))
    if kind == "open":
        return call(c_open, *a)
    if kind == "truncate":
        return call(os.truncate, a[0], a[1])
    if kind == "chmod":
        return call(os.chmod, a[0], a[1])
    if kind == "chown":
        return call(lambda: os.chown(a[0], a[1], a[2],
                                     follow_symlinks=a[3]))
    if kind == "utimens":
        return call(c_utimens, *a)
    if kind == "rename":
        return call(c_rename, *a)
    if kind == "unlink":
        return call(os.unlink, a[0])
    if kind == "rmdir":
        return call(os.rmdir, a[0])
    if kind == "setxattr":
        path, name, value, flags, follow = a
        return call(lambda: os.setxattr(path, name, bytes.fromhex(value),
                                        flags, follow_symlinks=follow))
    if kind == "removexattr":
        return call(lambda: os.removexattr(a[0], a[1],
                                           follow_symlinks=a[2]))
    if kind == "setacl":
        path, which, entries = a
        return call(os.setxattr, path, "system.posix_acl_" + which,
                    acl_blob(entries))
    if kind == "chattr":
        return call(c_chattr, *a)
    raise ValueError(f"unknown op {kind}")


def run_as(base, op):
    """Fork, become OP's credentials in BASE, run OP; its results."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(rfd)
            os.chdir(base)
            become(op[1])
            os.write(wfd, json.dumps(execute(op)).encode())
        except BaseException as e:      # noqa: B902 the child must exit
            os.write(wfd, json.dumps(f"harness: {e!r}").encode())
            code = 1
        os._exit(code)
    os.close(wfd)
    out = b""
    while True:
        b = os.read(rfd, 65536)
        if not b:
            break
        out += b
    os.close(rfd)
    _, st = os.waitpid(pid, 0)
    res = json.loads(out)
    if st or (isinstance(res, str) and res.startswith("harness:")):
        raise RuntimeError(f"{op}: {res}")
    return res


# ---- the state of a run's directory --------------------------------------

def file_info(path, st):
    """What is compared of one path but its times."""
    mode = st.st_mode
    d = {"type": stat.filemode(mode)[0], "perm": f"{stat.S_IMODE(mode):04o}",
         "uid": st.st_uid, "gid": st.st_gid, "nlink": st.st_nlink}
    if not stat.S_ISDIR(mode):
        d["size"] = st.st_size
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        d["rdev"] = [os.major(st.st_rdev), os.minor(st.st_rdev)]
    if stat.S_ISLNK(mode):
        d["target"] = os.readlink(path)
    x = {}
    for name in sorted(os.listxattr(path, follow_symlinks=False)):
        x[name] = os.getxattr(path, name, follow_symlinks=False).hex()
    d["xattrs"] = x
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK |
                     os.O_NOATIME)
        try:
            d["flags"] = "".join(k for k, v in sorted(FL_BITS.items())
                                 if get_flags(fd) & v)
            if stat.S_ISREG(mode):
                d["data"] = hashlib.sha1(os.read(fd, 1 << 22)).hexdigest()[:12]
        finally:
            os.close(fd)
    return d


def snapshot(base):
    """path -> (info, (atime, mtime, ctime) in ns, inode number)."""
    sts, todo = {}, ["."]
    while todo:     # every lstat first: a readlink moves ext4's atime
        rel = todo.pop()
        path = os.path.join(base, rel)
        sts[rel] = st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            todo += [os.path.normpath(os.path.join(rel, n))
                     for n in os.listdir(path)]
    return {rel: (file_info(os.path.join(base, rel), st),
                  (st.st_atime_ns, st.st_mtime_ns, st.st_ctime_ns),
                  st.st_ino) for rel, st in sts.items()}


def two_changes(op):
    """Whether OP may change a time twice: ext4 then keeps the first
    ctime when the clock's coarse tick has not moved (multigrain
    timestamps), so mtime = ctime holds or not by timing."""
    return op[0] == "open" and op[5][0] not in ("none", "read")


def acl_made(op, prev):
    """The node OP makes in a directory with a default ACL, or None: ext4
    writes the ACL it inherits after setting its times, a second change
    of ctime that the coarse tick may or may not show (two_changes)."""
    if op[0] not in ("mkdir", "mknod", "open"):
        return None
    path = os.path.normpath(op[2])
    parent = prev.get(os.path.dirname(path) or ".")
    if parent is None or \
       "system.posix_acl_default" not in parent[0]["xattrs"]:
        return None
    return path


def atime_set(op, res):
    """The path whose atime OP, which gave RES, set, or None."""
    if op[0] != "utimens" or res != "ok" or op[3] == "omit":
        return None
    return os.path.normpath(op[2])


def same_xattr(op, prev):
    """The path OP sets an xattr of to the value it has in PREV, or None:
    ext4 then leaves its ctime alone (tmpfs and czfs do not)."""
    if op[0] not in ("setxattr", "setacl"):
        return None
    path = os.path.normpath(op[2])
    if path not in prev or prev[path][0]["type"] == "l":
        return None
    if op[0] == "setxattr":
        name, value = op[3], op[4]
    else:
        name, value = "system.posix_acl_" + op[3], acl_blob(op[4]).hex()
    return path if prev[path][0]["xattrs"].get(name) == value else None


def relations(snap, prev, op, res):
    """What is compared of SNAP, the state after OP, which gave RES: its
    infos, times as relations to PREV; atime only of the path a utimens
    just set (ext4 moves it as the snapshots read and list, FUSE not)."""
    first = {}
    timed = atime_set(op, res)
    same = same_xattr(op, prev)
    made = acl_made(op, prev)
    # ext4 makes a whiteout before it checks the target: when the rename
    # then fails, the directories' times may have moved all the same
    untimed = op[0] == "rename" and op[4] & RENAME_WHITEOUT and res != "ok"
    for rel in sorted(snap):
        first.setdefault(snap[rel][2], rel)
    # times relate to the same inode's before, wherever it was (a rename
    # moves it, a link adds a name): never to another's
    before = {}
    for rel in sorted(prev):
        before.setdefault(prev[rel][2], prev[rel])
    out = {}
    for rel, (info, (at, mt, ct), ino) in snap.items():
        d = dict(info)
        old = before.get(ino)
        if old is not None and old[0]["type"] != info["type"]:
            old = None      # a number freed and taken again in one op
        d["linked"] = first[ino]
        if rel == timed and not (info["type"] == "l" and op[5]):
            d["atime"] = at if at < EXPLICIT_NS else "now"
        d["ctime"] = "fresh" if old is None else \
            ("same" if old[1][2] == ct else "new")
        if mt < EXPLICIT_NS:
            d["mtime"] = mt
        else:
            d["mtime"] = "fresh" if old is None else \
                ("same" if old[1][1] == mt else "new")
            # of what this op changed: the rest kept what was compared
            if d["ctime"] != "same" and not two_changes(op) and rel != made:
                d["mtime=ctime"] = mt == ct
        if rel == same or untimed and info["type"] == "d":
            for k in ("ctime", "mtime", "mtime=ctime"):
                d.pop(k, None)
        out[rel] = d
    return out


def differences(ra, rb):
    """[(path, field, ref value, czfs value)] of two relations()."""
    diffs = []
    for rel in sorted(set(ra) | set(rb)):
        a, b = ra.get(rel), rb.get(rel)
        if a is None or b is None:
            diffs.append((rel, "exists", a is not None, b is not None))
            continue
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                diffs.append((rel, k, a.get(k), b.get(k)))
    return diffs


# ---- generation -----------------------------------------------------------

class Gen:
    """Ops drawn from RNG, looking at the reference's current tree."""

    def __init__(self, rng):
        self.r = rng

    def cred(self):
        names = list(CRED_WEIGHTS)
        return self.r.choices(names, [CRED_WEIGHTS[n] for n in names])[0]

    def existing(self, tree, types=None, dot=False):
        paths = [p for p, t in tree.items() if (dot or p != ".") and
                 (types is None or t in types)]
        if not paths or self.r.random() < 0.1:
            return self.new(tree)
        return self.r.choice(sorted(paths))

    def new(self, tree):
        dirs = [p for p, t in tree.items() if t == "d" and p.count("/") < 1]
        d = self.r.choice(sorted(dirs))
        name = self.r.choice(NAMES)
        return name if d == "." else f"{d}/{name}"

    def mode(self):
        if self.r.random() < 0.2:
            return self.r.randrange(0o10000)
        return self.r.choice(MODES)

    def owner(self, cred):
        """uid, gid of a chown: CRED's own ones half of the time."""
        uid, gid, groups, _ = CREDS[cred]
        if uid and self.r.random() < 0.5:
            return (self.r.choice([-1, uid]),
                    self.r.choice([-1, gid] + groups))
        return self.r.choice(UIDS), self.r.choice(GIDS)

    def time(self):
        x = self.r.random()
        if x < 0.2:
            return "now"
        if x < 0.35:
            return "omit"
        return self.r.choice([10 ** 17, 123456789 * 10 ** 9 + 42,
                              10 ** 9 * 7])

    def acl(self):
        r = self.r
        ents = [(1, r.randrange(8), 0xffffffff), (4, r.randrange(8),
                0xffffffff), (0x20, r.randrange(8), 0xffffffff)]
        named = r.random() < 0.6
        if named:
            ents.append((2, r.randrange(8), r.choice([65534, 12345])))
            if r.random() < 0.5:
                ents.append((8, r.randrange(8), r.choice([65532, 65533])))
        if named and r.random() < 0.9 or r.random() < 0.1:
            ents.append((0x10, r.randrange(8), 0xffffffff))
        return sorted(ents)

    def open_flags(self, act):
        r = self.r
        if act[0] in ("write", "ftruncate", "fallocate") and \
                r.random() < 0.85:
            flags = r.choice([os.O_WRONLY, os.O_RDWR])
        else:
            flags = r.choice([os.O_RDONLY, os.O_WRONLY, os.O_RDWR])
        for f, p in ((os.O_CREAT, 0.5), (os.O_EXCL, 0.2), (os.O_TRUNC, 0.3),
                     (os.O_APPEND, 0.25), (os.O_NOFOLLOW, 0.15),
                     (os.O_DIRECTORY, 0.08)):
            if r.random() < p:
                flags |= f
        return flags

    def action(self):
        r = self.r
        k = r.choice(["none", "write", "write", "read", "ftruncate",
                      "fallocate", "fchmod", "fchown"])
        if k == "write":
            return [k, r.choice([0, 1, 4095, 5000, 70000]),
                    r.choice([1, 100, 4096, 9000]), r.randrange(1, 256)]
        if k == "ftruncate":
            return [k, self.size()]
        if k == "fallocate":
            return [k, r.choice([0, 1, 3, 0x10, 0x11]),
                    r.choice([0, 100, 4096]), r.choice([1, 5000, 70000])]
        if k == "fchmod":
            return [k, self.mode()]
        if k == "fchown":
            return [k, r.choice(UIDS), r.choice(GIDS)]
        return [k]

    def size(self):
        return self.r.choice([0, 1, 4095, 4096, 5000, 70000, 200000])

    def op(self, tree):
        r, c = self.r, self.cred()
        few = len(tree) < 6
        kinds = {"mkdir": 3, "mknod": 6 if few else 3, "symlink": 2,
                 "link": 2, "open": 8 if few else 6, "truncate": 2,
                 "chmod": 5, "chown": 6, "utimens": 3, "rename": 4,
                 "unlink": 2, "rmdir": 1, "setxattr": 3, "removexattr": 1,
                 "setacl": 2, "chattr": 2}
        k = r.choices(list(kinds), list(kinds.values()))[0]
        any_ = self.existing
        if k == "mkdir":
            return [k, c, self.new(tree), self.mode()]
        if k == "mknod":
            kind = r.choice(list(KINDS))
            return [k, c, self.new(tree), kind, self.mode(),
                    list(r.choice(RDEVS))]
        if k == "symlink":
            # never out of the run's directory: an O_CREAT through it
            # would leave a file there that the next runs see
            return [k, c, r.choice(NAMES + ["a/b", "b/a", ".", "e"]),
                    self.new(tree)]
        if k == "link":
            return [k, c, any_(tree), self.new(tree), r.random() < 0.3]
        if k == "open":
            act = self.action()
            flags = self.open_flags(act)
            if flags & os.O_CREAT and r.random() < 0.5:
                path = self.new(tree)
            else:
                path = any_(tree, "-" if r.random() < 0.7 else "-dlp")
            return [k, c, path, flags, self.mode(), act]
        if k == "truncate":
            return [k, c, any_(tree, "-l"), self.size()]
        if k == "chmod":
            return [k, c, any_(tree, dot=True), self.mode()]
        if k == "chown":
            return [k, c, any_(tree, dot=True), *self.owner(c),
                    r.random() < 0.7]
        if k == "utimens":
            at, mt = self.time(), self.time()
            if at == mt == "now":   # by design: FUSE sends it as NULL
                at = mt = "null"
            return [k, c, any_(tree, dot=True), at, mt, r.random() < 0.7]
        if k == "rename":
            flags = r.choice([0, 0, RENAME_NOREPLACE, RENAME_EXCHANGE,
                              RENAME_WHITEOUT])
            dst = any_(tree) if r.random() < 0.5 else self.new(tree)
            return [k, c, any_(tree), dst, flags]
        if k == "unlink":
            return [k, c, any_(tree, "-lpcbs")]
        if k == "rmdir":
            return [k, c, any_(tree, "d")]
        if k == "setxattr":
            value = bytes([r.randrange(256)]) * r.choice([0, 1, 5, 40])
            return [k, c, any_(tree, dot=True), r.choice(XNAMES),
                    value.hex(), r.choice([0, 0, 1, 2]), r.random() < 0.7]
        if k == "removexattr":
            return [k, c, any_(tree, dot=True),
                    r.choice(XNAMES + ["system.posix_acl_access",
                                       "system.posix_acl_default"]),
                    r.random() < 0.7]
        if k == "setacl":
            return [k, c, any_(tree, dot=True),
                    r.choice(["access", "access", "default"]), self.acl()]
        on = sum(v for v in FL_BITS.values() if r.random() < 0.25)
        off = FL_MASK & ~on if r.random() < 0.5 else 0
        return ["chattr", c, any_(tree, "-d", dot=True), on, off]


def describe(op):
    kind, cred, a = op[0], op[1], op[2:]
    if kind in ("mkdir", "chmod"):
        a = [a[0], f"{a[1]:04o}"]
    elif kind == "mknod":
        a = [a[0], a[1], f"{a[2]:04o}", "%d:%d" % tuple(a[3])]
    elif kind == "open":
        names = [n for n in ("O_WRONLY", "O_RDWR", "O_CREAT", "O_EXCL",
                             "O_TRUNC", "O_APPEND", "O_NOFOLLOW",
                             "O_DIRECTORY") if a[1] & getattr(os, n)]
        a = [a[0], "|".join(names) or "O_RDONLY", f"{a[2]:04o}", *a[3]]
    elif kind == "chown":
        a = [a[0], f"{a[1]}:{a[2]}", "follow" if a[3] else "nofollow"]
    elif kind == "rename":
        a = [a[0], a[1], "|".join(n for n, v in (
            ("RENAME_NOREPLACE", RENAME_NOREPLACE),
            ("RENAME_EXCHANGE", RENAME_EXCHANGE),
            ("RENAME_WHITEOUT", RENAME_WHITEOUT)) if a[2] & v) or "0"]
    elif kind == "setacl":
        tags = {1: "u:", 2: "u:", 4: "g:", 8: "g:", 0x10: "m:", 0x20: "o:"}
        a = [a[0], a[1], ",".join(
            tags[t] + ("" if i == 0xffffffff else str(i)) + ":" +
            "".join(c if p & b else "-" for c, b in zip("rwx", (4, 2, 1)))
            for t, p, i in a[2])]
    elif kind == "chattr":
        a = [a[0], "+" + "".join(k for k, v in FL_BITS.items() if a[1] & v),
             "-" + "".join(k for k, v in FL_BITS.items() if a[2] & v)]
    return f"{cred:10} {kind} " + " ".join(str(x) for x in a)


# ---- running and comparing ------------------------------------------------

class Runner:
    def __init__(self, ref, czfs):
        self.roots = (ref, czfs)
        self.runs = 0

    def fresh(self):
        """A new, empty run directory on both: its two paths."""
        self.runs += 1
        while any(os.path.lexists(os.path.join(r, f"run{self.runs}"))
                  for r in self.roots):
            self.runs += 1
        bases = []
        for root in self.roots:
            b = os.path.join(root, f"run{self.runs}")
            old = os.umask(0)       # one change: mtime = ctime on both
            os.mkdir(b, 0o777)
            os.umask(old)
            bases.append(b)
        return bases

    def step(self, bases, prevs, op):
        """Run OP on both; (results, relations, snapshots) of each."""
        res, rels, snaps = [], [], []
        for b, prev in zip(bases, prevs):
            res.append(run_as(b, op))
            snaps.append(snapshot(b))
            rels.append(relations(snaps[-1], prev, op, res[-1]))
        return res, rels, snaps

    def run(self, ops, gen=None, nops=0):
        """Run OPS (or NOPS drawn from GEN) on fresh directories: (the
        ops run, the index of the first one that differed, its diffs, the
        last snapshots), index and diffs None when none did."""
        bases = self.fresh()
        prevs = [snapshot(b) for b in bases]
        ops = list(ops)
        i = 0
        while i < (nops if gen else len(ops)):
            if gen:
                tree = {p: s[0]["type"] for p, s in prevs[0].items()}
                ops.append(gen.op(tree))
            flagged = any("i" in s[0].get("flags", "") or
                          "a" in s[0].get("flags", "")
                          for s in prevs[0].values())
            res, rels, prevs = self.step(bases, prevs, ops[i])
            diffs = differences(*rels)
            if res[0] != res[1] and not (flagged and not diffs and
                                         flag_errno(*res)):
                diffs.insert(0, ("", "result", res[0], res[1]))
            if diffs:
                return ops[:i + 1], i, diffs, prevs
            i += 1
        return ops, None, None, prevs


def flag_errno(ref, got):
    """By design: with a chattr flag i or a set, an op ext4 refuses with
    EPERM, as it checks the flag before the permissions and the type,
    fails on czfs with the errno of those, or is one the kernel does
    without asking the daemon (removing no default ACL of a file): the
    kernel's FUSE inodes do not carry the flags.  (The caller makes sure
    that the states are the same.)"""
    ref, got = json.dumps(ref), json.dumps(got)
    pattern = re.escape(ref).replace(re.escape('"EPERM"'), '("E[A-Z]+"|"ok")')
    return ref.count("EPERM") == 1 and re.fullmatch(pattern, got) is not None


def signature(op, diffs):
    return (op[0], frozenset(d[1] for d in diffs))


def is_chown(op):
    return op[0] == "chown" or op[0] == "open" and op[5][0] == "fchown"


def is_nochange_chown(op):
    """chown(-1, -1) or fchown(-1, -1)."""
    ids = op[3:5] if op[0] == "chown" else op[5][1:3] if is_chown(op) else []
    return list(ids) == [-1, -1]


def known_bug(op, diffs, snaps):
    """The name of the KNOWN_BUGS entry that explains DIFFS, or None."""
    res = [d for d in diffs if d[1] == "result"]
    if "chown-kill-eperm" in KNOWN_BUGS and is_nochange_chown(op) and res and \
            "EPERM" in json.dumps(res[0][2]) and \
            "EPERM" not in json.dumps(res[0][3]):
        path = os.path.normpath(op[2])
        info = snaps[0].get(path, [{}])[0]
        if info.get("type") == "l":
            path = os.path.normpath(os.path.join(os.path.dirname(path),
                                                 info["target"]))
            info = snaps[0].get(path, [{}])[0]
        if int(info.get("perm", "0"), 8) & 0o6000:
            return "chown-kill-eperm"
    if "suidgid-chown" in KNOWN_BUGS and is_chown(op):
        for path, field, a, b in diffs:
            kept = int(b, 8) & ~int(a, 8)       # czfs has, ext4 not
            if field != "perm" or snaps[1][path][0]["type"] == "d" or \
                    int(a, 8) & ~int(b, 8) or kept & ~0o6000:
                return None
        return "suidgid-chown"
    return None


def shrink(runner, ops, sig):
    """The shortest OPS found that still fails with signature SIG."""
    def fails(cand):
        got, idx, diffs, _ = runner.run(cand)
        if idx is not None and signature(got[idx], diffs) == sig:
            return got
        return None

    n = 2
    while len(ops) > 1:
        chunk = max(1, len(ops) // n)
        removed = False
        for start in range(0, len(ops), chunk):
            cand = ops[:start] + ops[start + chunk:]
            got = fails(cand) if cand else None
            if got:
                ops, removed = got, True
                break
        if removed:
            n = max(n - 1, 2)
        elif chunk == 1:
            break
        else:
            n = min(n * 2, len(ops))
    return ops


def print_ops(ops, diffs):
    for i, op in enumerate(ops, 1):
        print(f"    {i:2} {describe(op)}")
    for d in diffs or []:
        print(f"    after op {len(ops)}: {d[0] or '(result)'}: {d[1]}: "
              f"reference {d[2]!r}, czfs {d[3]!r}")


def report(seed, ops, diffs, runner, replay_dir):
    print(f"FAIL: seed {seed}: czfs differs from the reference at op "
          f"{len(ops)}:")
    for d in diffs:
        print(f"    {d[0] or '(result)'}: {d[1]}: reference {d[2]!r}, "
              f"czfs {d[3]!r}")
    sig = signature(ops[-1], diffs)
    small = shrink(runner, ops, sig)
    _, _, sdiffs, _ = runner.run(small)
    print(f"  shortest sequence found ({len(small)} ops, seed {seed}):")
    print_ops(small, sdiffs)
    path = os.path.join(replay_dir, f"oracle-seed{seed}.json")
    with open(path, "w") as f:
        json.dump(small, f)
    print(f"  replay: posix_oracle.py REF CZFS --replay {path}")


def parse_seeds(s):
    seeds = []
    for part in s.split(","):
        lo, _, hi = part.partition("-")
        seeds += range(int(lo), int(hi or lo) + 1)
    return seeds


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ref")
    ap.add_argument("czfs")
    ap.add_argument("--seeds", default=os.environ.get("CZFS_ORACLE_SEEDS",
                                                      "1-80"))
    ap.add_argument("--ops", type=int,
                    default=int(os.environ.get("CZFS_ORACLE_OPS", "50")))
    ap.add_argument("--replay", help="a JSON list of ops to run once")
    ap.add_argument("--no-known-bugs", action="store_true",
                    help="fail on the KNOWN_BUGS too")
    ap.add_argument("--out", default=os.environ.get("T", "/tmp"),
                    help="where the shrunk sequences are saved")
    args = ap.parse_args(argv)
    os.umask(0o022)
    if args.no_known_bugs:
        KNOWN_BUGS.clear()
    runner = Runner(args.ref, args.czfs)
    if args.replay:
        with open(args.replay) as f:
            ops = json.load(f)
        got, idx, diffs, _ = runner.run(ops)
        print_ops(got, diffs)
        return 1 if diffs else 0
    failed = bad = 0
    for name, ops in REGRESSIONS.items():
        got, idx, diffs, snaps = runner.run(ops)
        if idx is None:
            continue
        bug = known_bug(got[idx], diffs, snaps)
        if bug:
            print(f"# {name}: known bug {bug}")
            continue
        bad += 1
        print(f"FAIL: {name}:")
        print_ops(got, diffs)
    for seed in parse_seeds(args.seeds):
        ops, idx, diffs, snaps = runner.run(
            [], Gen(random.Random(seed)), args.ops)
        if idx is None:
            continue
        bug = known_bug(ops[idx], diffs, snaps)
        if bug:
            print(f"# seed {seed}: known bug {bug} at op {idx + 1} "
                  f"({describe(ops[idx])}): rest of the sequence skipped")
            continue
        failed += 1
        report(seed, ops, diffs, runner, args.out)
    n = len(parse_seeds(args.seeds))
    print(f"# {len(REGRESSIONS) - bad}/{len(REGRESSIONS)} regressions, "
          f"{n - failed}/{n} seeds of {args.ops} ops: same results and "
          f"states on both")
    return 1 if failed or bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
