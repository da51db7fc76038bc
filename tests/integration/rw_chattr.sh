#!/bin/bash
# chattr flags (issue 14), as ext4 has them (CZFS_RW_TARGET=ext4 runs the
# same checks on ext4):
# - lsattr shows and chattr sets i, a, A, d on files and directories;
# - immutable: every change of the file, its attributes, xattrs and names
#   fails with EPERM (also through a descriptor opened before), its data
#   is still read; no name added to or removed from an immutable directory;
# - append-only: opened for writing only with O_APPEND, written at the end,
#   no truncate, chmod, chown, explicit times, xattr or name change; an
#   append-only directory takes names but loses none;
# - only the owner changes flags, i and a need CAP_LINUX_IMMUTABLE, an
#   immutable file keeps its other flags; noatime: no atime update; A and
#   d are inherited from the directory;
# - the flags survive a remount, a read-only mount shows them and refuses
#   changes with EROFS, and fsck finds the image clean (czfs: with the
#   attr_flags feature set, which fsck -y restores); czfs alone: +c and +m
#   map on its compression flags, other flags give EOPNOTSUPP, and an
#   append-only file is written at its end only, also through a descriptor
#   opened before chattr +a (ext4 lets that one write anywhere).
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/rwlib.sh"
require_fuse
rw_need chattr
rw_need lsattr
rw_need setpriv
rw_need setfattr
rw_need getfattr
rw_setup 256M

# flags PATH: the letters lsattr shows for PATH (without ext4's e).
flags() {
	lsattr -d "$1" | awk '{ print $1 }' | tr -d 'e-'
}

# expect_flags PATH LETTERS
expect_flags() {
	local got
	got=$(flags "$1")
	[ "$got" = "$2" ] || fail "lsattr $1: '$got', expected '$2'"
}

# Each check: an operation and the errno name it must give (ok: none).
cat >"$T/ops.py" <<'PY'
import ctypes, errno, fcntl, os, struct, subprocess, sys

FS_IOC_GETFLAGS, FS_IOC_SETFLAGS = 0x80086601, 0x40086602
FS_IMMUTABLE_FL, FS_APPEND_FL, FS_NODUMP_FL = 0x10, 0x20, 0x40
FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE = 1, 2
libc = ctypes.CDLL(None, use_errno=True)
phase, M = sys.argv[1], sys.argv[2]
fails = []


def P(name):
    return os.path.join(M, name)


def chk(name, expect, fn, *args):
    try:
        fn(*args)
        got = "ok"
    except OSError as e:
        got = errno.errorcode.get(e.errno, str(e.errno))
    if got != expect:
        fails.append("%s %s: %s, expected %s" % (phase, name, got, expect))


def open_close(path, flags, mode=0o644):
    os.close(os.open(path, flags, mode))


def write_at_end(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        if os.write(fd, data) != len(data):
            raise OSError(errno.EIO, "short write")
    finally:
        os.close(fd)


def fallocate(path, mode, off, length):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        if libc.fallocate(fd, mode, ctypes.c_long(off), ctypes.c_long(length)):
            raise OSError(ctypes.get_errno(), "fallocate")
    finally:
        os.close(fd)


def getflags(path):
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        return struct.unpack("i", fcntl.ioctl(fd, FS_IOC_GETFLAGS, b"\0" * 4))[0]
    finally:
        os.close(fd)


def setflags(path, add=0, remove=0):
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        old = struct.unpack("i", fcntl.ioctl(fd, FS_IOC_GETFLAGS, b"\0" * 4))[0]
        fcntl.ioctl(fd, FS_IOC_SETFLAGS, struct.pack("i", (old | add) & ~remove))
    finally:
        os.close(fd)


def size_is(path, want):
    if os.stat(path).st_size != want:
        raise OSError(errno.EIO, "size %d" % os.stat(path).st_size)


def read_is(path, want):
    with open(path, "rb") as f:
        got = f.read()
    if got != want:
        raise OSError(errno.EIO, "read %r" % got[:40])


def punch(fd):
    if libc.fallocate(fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE,
                      ctypes.c_long(0), ctypes.c_long(4096)):
        raise OSError(ctypes.get_errno(), "fallocate")


def shared_file_checks(f, fd):
    """What immutable and append-only both forbid (EPERM); fd: the file
    open for writing (from before chattr +i, or O_APPEND)."""
    chk("open O_WRONLY", "EPERM", open_close, f, os.O_WRONLY)
    chk("open O_RDWR", "EPERM", open_close, f, os.O_RDWR)
    chk("open O_RDONLY|O_TRUNC", "EPERM", open_close, f, os.O_RDONLY | os.O_TRUNC)
    chk("open O_APPEND|O_TRUNC", "EPERM", open_close, f,
        os.O_WRONLY | os.O_APPEND | os.O_TRUNC)
    chk("truncate", "EPERM", os.truncate, f, 0)
    chk("ftruncate", "EPERM", os.ftruncate, fd, 0)
    chk("punch hole", "EPERM", punch, fd)
    chk("chmod", "EPERM", os.chmod, f, 0o600)
    chk("chown", "EPERM", os.chown, f, 1000, 1000)
    chk("utimes given", "EPERM", os.utime, f, (1, 1))
    chk("setxattr", "EPERM", os.setxattr, f, "user.k", b"w")
    chk("removexattr", "EPERM", os.removexattr, f, "user.k")
    chk("getxattr", "ok", os.getxattr, f, "user.k")
    chk("unlink", "EPERM", os.unlink, f)
    chk("rename from", "EPERM", os.rename, f, P("renamed"))
    chk("rename over", "EPERM", os.rename, P("other"), f)
    chk("link", "EPERM", os.link, f, P("linked"))


if phase == "immutable":
    f = P("imm")
    HELD = os.open(f, os.O_RDWR)	# opened before chattr +i
    subprocess.run(["chattr", "+i", f], check=True)
    shared_file_checks(f, HELD)
    chk("open O_APPEND", "EPERM", open_close, f, os.O_WRONLY | os.O_APPEND)
    chk("utimes now", "EPERM", os.utime, f, None)
    chk("read", "ok", read_is, f, b"data\n")
    chk("write, fd from before", "EPERM", os.pwrite, HELD, b"x", 0)
    chk("fallocate, fd from before", "EPERM", os.posix_fallocate, HELD, 0, 8192)
    chk("chattr +d while immutable", "EPERM", setflags, f, FS_NODUMP_FL)
    os.close(HELD)
    d = P("idir")
    chk("create in", "EPERM", open_close, os.path.join(d, "new"),
        os.O_CREAT | os.O_WRONLY)
    chk("mkdir in", "EPERM", os.mkdir, os.path.join(d, "nd"))
    chk("symlink in", "EPERM", os.symlink, "x", os.path.join(d, "sl"))
    chk("mkfifo in", "EPERM", os.mkfifo, os.path.join(d, "fifo"))
    chk("link into", "EPERM", os.link, P("other"), os.path.join(d, "l"))
    chk("unlink in", "EPERM", os.unlink, os.path.join(d, "x"))
    chk("rename in", "EPERM", os.rename, os.path.join(d, "x"), os.path.join(d, "y"))
    chk("rename out", "EPERM", os.rename, os.path.join(d, "x"), P("y"))
    chk("rename into", "EPERM", os.rename, P("other"), os.path.join(d, "z"))
    chk("rmdir in", "EPERM", os.rmdir, os.path.join(d, "sub"))
    chk("write a file in it", "ok", write_at_end, os.path.join(d, "x"), b"more\n")
    chk("rmdir of it", "EPERM", os.rmdir, P("idir2"))
    chk("rename of it", "EPERM", os.rename, P("idir2"), P("idir3"))
elif phase == "append":
    f = P("app")
    fd = os.open(f, os.O_WRONLY | os.O_APPEND)
    shared_file_checks(f, fd)
    os.close(fd)
    chk("utimes now", "ok", os.utime, f, None)
    chk("write O_APPEND", "ok", write_at_end, f, b"more\n")
    chk("read", "ok", read_is, f, b"data\nmore\n")
    chk("fallocate keep size", "ok", fallocate, f, FALLOC_FL_KEEP_SIZE, 0, 8192)
    chk("fallocate grow", "ok", fallocate, f, 0, 0, 65536)
    chk("size grown", "ok", size_is, f, 65536)
    d = P("adir")
    chk("create in", "ok", open_close, os.path.join(d, "new"), os.O_CREAT | os.O_WRONLY)
    chk("mkdir in", "ok", os.mkdir, os.path.join(d, "nd"))
    chk("symlink in", "ok", os.symlink, "x", os.path.join(d, "sl"))
    chk("link into", "ok", os.link, P("other"), os.path.join(d, "l"))
    chk("rename into", "ok", os.rename, P("other2"), os.path.join(d, "o2"))
    chk("unlink in", "EPERM", os.unlink, os.path.join(d, "x"))
    chk("rename in", "EPERM", os.rename, os.path.join(d, "x"), os.path.join(d, "y"))
    chk("rename out", "EPERM", os.rename, os.path.join(d, "x"), P("y"))
    chk("rename over a name in it", "EPERM", os.rename, P("other3"),
        os.path.join(d, "x"))
    chk("rmdir in", "EPERM", os.rmdir, os.path.join(d, "sub"))
    chk("write a file in it", "ok", write_at_end, os.path.join(d, "x"), b"more\n")
elif phase == "nobody":
    chk("owner sets d", "ok", setflags, P("own"), FS_NODUMP_FL)
    chk("owner sets i", "EPERM", setflags, P("own"), FS_IMMUTABLE_FL)
    chk("owner sets a", "EPERM", setflags, P("own"), FS_APPEND_FL)
    chk("other sets d", "EPERM", setflags, P("other"), FS_NODUMP_FL)
    chk("other clears i", "EPERM", setflags, P("imm"), 0, FS_IMMUTABLE_FL)
    chk("other reads flags", "ok", getflags, P("imm"))
elif phase == "xflags":	# the xfs interface to the same flags (xfs_io chattr)
    FS_IOC_FSGETXATTR, FS_IOC_FSSETXATTR = 0x801c581f, 0x401c5820
    FS_XFLAG_NODUMP, FS_XFLAG_NOATIME = 0x80, 0x40
    fd = os.open(P("xf"), os.O_RDONLY)
    fsx = bytearray(fcntl.ioctl(fd, FS_IOC_FSGETXATTR, b"\0" * 28))
    struct.pack_into("I", fsx, 0, FS_XFLAG_NODUMP | FS_XFLAG_NOATIME)
    chk("FSSETXATTR nodump noatime", "ok", fcntl.ioctl, fd, FS_IOC_FSSETXATTR, bytes(fsx))
    got = struct.unpack_from("I", fcntl.ioctl(fd, FS_IOC_FSGETXATTR, b"\0" * 28))[0]
    if got & (FS_XFLAG_NODUMP | FS_XFLAG_NOATIME) != FS_XFLAG_NODUMP | FS_XFLAG_NOATIME:
        fails.append("FSGETXATTR after FSSETXATTR: %#x" % got)
    if getflags(P("xf")) & (FS_NODUMP_FL | 0x80) != FS_NODUMP_FL | 0x80:
        fails.append("GETFLAGS after FSSETXATTR: %#x" % getflags(P("xf")))
    os.close(fd)
elif phase == "append-held":	# czfs: stricter than ext4, which lets it write anywhere
    f = P("apph")
    fd = os.open(f, os.O_RDWR)	# opened before chattr +a
    subprocess.run(["chattr", "+a", f], check=True)
    chk("pwrite inside, fd from before", "EPERM", os.pwrite, fd, b"X", 0)
    chk("pwrite at the end, fd from before", "ok", os.pwrite, fd, b"Y", 5)
    chk("read", "ok", read_is, f, b"data\nY")
    os.close(fd)
elif phase == "persist":
    chk("unlink immutable", "EPERM", os.unlink, P("imm"))
    chk("open O_WRONLY append-only", "EPERM", open_close, P("app"), os.O_WRONLY)
    chk("write O_APPEND append-only", "ok", write_at_end, P("app"), b"end\n")
    chk("create in immutable dir", "EPERM", open_close, P("idir/n2"),
        os.O_CREAT | os.O_WRONLY)
    chk("unlink in append-only dir", "EPERM", os.unlink, P("adir/x"))
elif phase == "ro":
    chk("getflags", "ok", getflags, P("imm"))
    chk("setflags", "EROFS", setflags, P("other"), FS_NODUMP_FL)
for line in fails:
    print(line)
sys.exit(1 if fails else 0)
PY

note "$RW_TARGET: lsattr and chattr of each flag"
printf 'data\n' >"$M/imm"
printf 'data\n' >"$M/app"
for f in imm app other other2 other3; do
	[ -e "$M/$f" ] || printf 'x\n' >"$M/$f"
	setfattr -n user.k -v v "$M/$f"
done
mkdir "$M/idir" "$M/idir/sub" "$M/idir2" "$M/adir" "$M/adir/sub"
printf 'x\n' >"$M/idir/x"
printf 'x\n' >"$M/adir/x"
expect_flags "$M/imm" ""
expect_flags "$M/idir" ""
chattr +i "$M/idir" "$M/idir2"
chattr +a "$M/app" "$M/adir"
chattr +d "$M/other"
expect_flags "$M/idir" i
expect_flags "$M/app" a
expect_flags "$M/adir" a
expect_flags "$M/other" d
chattr -d "$M/other"
expect_flags "$M/other" ""

note "$RW_TARGET: immutable files and directories (EPERM)"
python3 "$T/ops.py" immutable "$M" || fail "immutable"
expect_flags "$M/imm" i
note "$RW_TARGET: append-only files and directories"
python3 "$T/ops.py" append "$M" || fail "append-only"

note "$RW_TARGET: the same flags through FS_IOC_FSSETXATTR"
printf 'x\n' >"$M/xf"
python3 "$T/ops.py" xflags "$M" || fail "xflags"
expect_flags "$M/xf" dA

note "$RW_TARGET: who may change flags"
printf 'x\n' >"$M/own"
chown nobody "$M/own"
# nobody may not reach a python of root's (pyenv): the system's
SYS_PYTHON=/usr/bin/python3
[ -x "$SYS_PYTHON" ] || SYS_PYTHON=python3
rw_as_nobody "$SYS_PYTHON" "$T/ops.py" nobody "$M" || fail "flags changed by a user"
expect_flags "$M/own" d

note "$RW_TARGET: noatime (+A), and A and d inherited from the directory"
head -c 4096 /dev/zero >"$M/na"
head -c 4096 /dev/zero >"$M/ya"
touch -a -d '2001-02-03 04:05:06' "$M/na" "$M/ya"
chattr +A "$M/na"
old=$(stat -c %X "$M/na")
drop_caches
cat "$M/na" "$M/ya" >/dev/null
[ "$(stat -c %X "$M/na")" = "$old" ] || fail "a read updated the atime of a noatime file"
[ "$(stat -c %X "$M/ya")" != "$old" ] || fail "a read did not update atime (the control)"
mkdir "$M/inh"
chattr +A +d "$M/inh"
touch "$M/inh/f"
mkdir "$M/inh/s"
expect_flags "$M/inh" dA
expect_flags "$M/inh/f" dA
expect_flags "$M/inh/s" dA

if [ "$RW_TARGET" = czfs ]; then
	note "czfs: +c and +m are its compression flags; others EOPNOTSUPP"
	printf 'x\n' >"$M/comp"
	chattr +c "$M/comp"
	expect_flags "$M/comp" c
	err=$(chattr +m "$M/comp" 2>&1) && fail "chattr +m on +c worked"
	case $err in *"Invalid argument"*) ;; *) fail "chattr +m on +c: $err" ;; esac
	chattr -c +m "$M/comp"
	expect_flags "$M/comp" m
	[ "$(getfattr --absolute-names --only-values -n user.czfs.compress "$M/comp")" = none ] ||
		fail "chattr +m: user.czfs.compress is not none"
	err=$(chattr +C "$M/comp" 2>&1) && fail "chattr +C worked"
	case $err in *"Operation not supported"*) ;; *) fail "chattr +C: $err" ;; esac
	printf 'data\n' >"$M/apph"
	python3 "$T/ops.py" append-held "$M" || fail "append-only, descriptor from before"
	lsattr "$M/imm" | grep -qx -- "----i----------------- $M/imm" ||
		fail "lsattr line: $(lsattr "$M/imm")"
fi

note "$RW_TARGET: the flags after a remount"
rw_remount
expect_flags "$M/imm" i
expect_flags "$M/idir" i
expect_flags "$M/app" a
expect_flags "$M/adir" a
expect_flags "$M/own" d
expect_flags "$M/na" A
expect_flags "$M/inh/f" dA
[ "$RW_TARGET" != czfs ] || expect_flags "$M/comp" m
python3 "$T/ops.py" persist "$M" || fail "enforcement after a remount"

note "$RW_TARGET: a read-only mount shows the flags and refuses changes (EROFS)"
rw_umount
case $RW_TARGET in
ext4)
	mount -o loop,ro "$RW_IMG" "$M"
	EXTRA_MOUNTS+=("$M")
	;;
czfs)
	czfs_mount "$RW_IMG" "$M" "${RW_MOUNT_OPTS[@]}" -o ro
	;;
esac
expect_flags "$M/imm" i
expect_flags "$M/adir" a
python3 "$T/ops.py" ro "$M" || fail "read-only mount"
rw_umount

rw_fsck
if [ "$RW_TARGET" = czfs ]; then
	"$top_builddir/dump/dump.czfs" "$RW_IMG" >"$T/dump.log"
	grep -q '^  incompat_names: .*attr_flags' "$T/dump.log" ||
		fail "no attr_flags feature: $(grep incompat "$T/dump.log")"

	note "czfs: fsck finds inodes with chattr flags but no attr_flags bit, and sets it"
	inc=$("$top_builddir/dump/dump.czfs" -j -S "$RW_IMG" | python3 -c 'import json, sys
print(json.load(sys.stdin)["superblock"]["feature_incompat"])')
	"$top_builddir/tests/czfs-corrupt" "$RW_IMG" sb-byte 16 $(( inc & ~4 & 0xff ))
	st=0
	"$FSCK" -n "$RW_IMG" >"$T/fsck.log" 2>&1 || st=$?
	[ "$st" = 4 ] && grep -q "chattr flags, but no attr_flags feature bit" "$T/fsck.log" ||
		{ cat "$T/fsck.log" >&2; fail "fsck -n without the attr_flags bit: status $st"; }
	st=0
	"$FSCK" -y "$RW_IMG" >"$T/fsck.log" 2>&1 || st=$?
	[ "$st" = 1 ] || { cat "$T/fsck.log" >&2; fail "fsck -y: status $st, expected 1"; }
	rw_fsck
	"$top_builddir/dump/dump.czfs" "$RW_IMG" | grep -q '^  incompat_names: .*attr_flags' ||
		fail "fsck -y did not set the attr_flags bit"
fi
note "$RW_TARGET: ok"
