#!/bin/bash
# The Linux file API beyond POSIX, as the kernel filesystems behave
# (CZFS_RW_TARGET=ext4 runs the same checks on ext4):
# - buffered readers see what O_DIRECT wrote (AIO and sync, several sizes,
#   readers busy during the writes): a fresh open after the writer is done
#   reads the new bytes;
# - an ACL set by a user outside the file's group clears setgid (files and
#   directories), one set by a member keeps it;
# - overlayfs with czfs as its upper and its lower layer: create, copy-up,
#   delete (a whiteout), rename, and the same view after a remount;
# - file handles (name_to_handle_at, open_by_handle_at) of files, hard
#   links and directories, after the kernel dropped its inodes, across a
#   remount, and ESTALE once the file is gone.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/rwlib.sh"
require_fuse
rw_need setpriv
rw_need setfacl
rw_need fio
rw_setup 1G

note "$RW_TARGET: O_DIRECT writes, then a buffered open reads them"
for spec in "libaio 4k randwrite 4194304" "libaio 256k write 16777216" \
	    "psync 64k write 8388608" "libaio 1M write 8388608"; do
	read -r eng bs rw size <<<"$spec"
	f="$M/direct.$eng.$bs"
	python3 -c 'import sys; open(sys.argv[1], "wb").write(b"\xaa" * int(sys.argv[2]))' "$f" "$size"
	sync "$f"
	for r in 1 2; do	# buffered readers fill the page cache meanwhile
		( for _ in $(seq 1 200); do dd if="$f" of=/dev/null bs=4k status=none; done ) &
		RW_PIDS+=($!)
	done
	fio --name=direct --filename="$f" --rw="$rw" --bs="$bs" --ioengine="$eng" \
		--iodepth=16 --direct=1 --size="$size" --buffer_pattern=0x55 \
		--verify_state_save=0 --output="$T/fio.log" || { cat "$T/fio.log" >&2; fail "fio $spec"; }
	for pid in "${RW_PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	RW_PIDS=()
	python3 - "$f" "$size" <<'PY' || fail "$spec: a buffered read after O_DIRECT writes"
import os, sys
p, size = sys.argv[1], int(sys.argv[2])
fd = os.open(p, os.O_RDONLY)
d = os.pread(fd, size, 0)
os.close(fd)
bad = [i for i in range(0, size, 4096) if d[i:i + 4096] != b"\x55" * 4096]
if bad:
    sys.exit("%d stale pages, the first at %#x" % (len(bad), bad[0]))
PY
done

note "$RW_TARGET: setgid and ACLs set by the owner, in the group or not"
as_user() { setpriv --reuid=1000 --regid=1000 --clear-groups "$@"; }
mkdir -p "$M/sg"
chmod 0777 "$M/sg"
for kind in file dir; do
	for g in 2000 1000; do	# 2000: the owner is not in it; 1000: is
		p="$M/sg/$kind.$g"
		if [ $kind = file ]; then touch "$p"; else mkdir "$p"; fi
		chown "1000:$g" "$p"
		chmod 2777 "$p"
		as_user setfacl -m u:1001:rwx "$p" || fail "setfacl on $p"
		mode=$(stat -c %a "$p")
		if [ $g = 2000 ]; then
			[ "$mode" = 777 ] || fail "$kind: ACL by a non-member kept setgid ($mode)"
		else
			[ "$mode" = 2777 ] || fail "$kind: ACL by a member cleared setgid ($mode)"
		fi
		getfacl -p "$p" 2>/dev/null | grep -q '^user:1001:rwx' || fail "$kind: the ACL"
	done
done
# chmod by the same user: the same rule (the kernel's own)
touch "$M/sg/chmod"; chown 1000:2000 "$M/sg/chmod"; chmod 2777 "$M/sg/chmod"
as_user chmod 2775 "$M/sg/chmod"
[ "$(stat -c %a "$M/sg/chmod")" = 775 ] || fail "chmod by a non-member kept setgid"

note "$RW_TARGET: fallocate and hole punch drop setuid/setgid as a write does"
# mode before | group of the file | mode after (the caller is uid/gid 1000)
while read -r before g after; do
	for op in "fallocate -l 16384" "fallocate -p -o 0 -l 4096"; do
		p="$M/sg/falloc.$before.$g"
		rm -f "$p"
		head -c 8192 /dev/zero | tr '\0' x >"$p"
		chown "1000:$g" "$p"
		chmod "$before" "$p"
		# shellcheck disable=SC2086 # op is words
		as_user $op "$p" || fail "$op on $p"
		[ "$(stat -c %a "$p")" = "$after" ] ||
			fail "$op: mode $before (group $g) became $(stat -c %a "$p"), not $after"
	done
done <<'EOT'
2666 2000 666
2666 1000 2666
2676 1000 676
4766 1000 766
6766 2000 766
EOT

note "$RW_TARGET: overlayfs with an upper and a lower layer on it"
mkdir -p "$T/lsrc/d" "$M/ov/upper" "$M/ov/work" "$T/merged"
echo lower >"$T/lsrc/keep"
echo gone >"$T/lsrc/gone"
echo moved >"$T/lsrc/moved"
echo deep >"$T/lsrc/d/inner"
if [ "$RW_TARGET" = czfs ]; then
	"$MKFS" -q -d "$T/lsrc" "$T/lower.img"
	czfs_mount "$T/lower.img" "$T/lower" -o ro
else
	cp -a "$T/lsrc" "$T/lower"
fi
ovl_mount() {
	mount -t overlay czfs-ovl -o "lowerdir=$T/lower,upperdir=$M/ov/upper,workdir=$M/ov/work" \
		"$T/merged" || fail "overlay mount: $(dmesg 2>/dev/null | grep overlayfs | tail -3)"
	EXTRA_MOUNTS+=("$T/merged")
}
ovl_mount
echo new >"$T/merged/new"
echo appended >>"$T/merged/keep"		# copy-up
rm "$T/merged/gone"				# a whiteout
mv "$T/merged/moved" "$T/merged/renamed"	# copy-up, then a whiteout
echo more >>"$T/merged/d/inner"
ovl_check() {
	[ "$(cat "$T/merged/new")" = new ] || fail "$1: created file"
	[ "$(cat "$T/merged/keep")" = "$(printf 'lower\nappended')" ] || fail "$1: copied-up file"
	[ ! -e "$T/merged/gone" ] || fail "$1: deleted file is back"
	[ ! -e "$T/merged/moved" ] && [ "$(cat "$T/merged/renamed")" = moved ] || fail "$1: renamed file"
	[ "$(cat "$T/merged/d/inner")" = "$(printf 'deep\nmore')" ] || fail "$1: file in a copied-up dir"
	[ "$(stat -c '%F %t:%T' "$M/ov/upper/gone")" = "character special file 0:0" ] ||
		fail "$1: no whiteout in the upper layer"
	[ "$(cat "$T/lower/keep")" = lower ] && [ -e "$T/lower/gone" ] || fail "$1: lower layer changed"
}
ovl_check "overlay"
umount "$T/merged"
rw_remount
ovl_mount
ovl_check "overlay after a remount of the upper layer"
umount "$T/merged"

note "$RW_TARGET: file handles, after the inode cache is dropped and across a remount"
mkdir -p "$M/h/dir"
echo one >"$M/h/file"
ln "$M/h/file" "$M/h/link"
echo doomed >"$M/h/doomed"
cat >"$T/handles.py" <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
class Handle(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_uint), ("type", ctypes.c_int),
                ("data", ctypes.c_ubyte * 128)]
def get(path):
    h, mid = Handle(bytes=128), ctypes.c_int()
    if libc.name_to_handle_at(-100, path.encode(), ctypes.byref(h), ctypes.byref(mid), 0):
        sys.exit("name_to_handle_at %s: %s" % (path, os.strerror(ctypes.get_errno())))
    return bytes(h)
def opened(mnt, raw, flags=os.O_RDONLY):
    h = Handle.from_buffer_copy(raw)
    mfd = os.open(mnt, os.O_RDONLY | os.O_DIRECTORY)
    fd = libc.open_by_handle_at(mfd, ctypes.byref(h), flags)
    err = ctypes.get_errno()
    os.close(mfd)
    return fd, err
mode, mnt, store = sys.argv[1:4]
names = ["file", "link", "dir", "doomed"]
if mode == "save":
    with open(store, "wb") as f:
        for n in names:
            f.write(get(os.path.join(mnt, "h", n)))
    sys.exit(0)
raw = open(store, "rb").read()
size = len(raw) // len(names)
hs = {n: raw[i * size:(i + 1) * size] for i, n in enumerate(names)}
for n in ("file", "link"):
    fd, err = opened(mnt, hs[n])
    if fd < 0:
        sys.exit("open_by_handle_at %s: %s" % (n, os.strerror(err)))
    if os.read(fd, 100) != b"one\n":
        sys.exit("%s: wrong data through its handle" % n)
    if os.fstat(fd).st_ino != os.stat(os.path.join(mnt, "h", "file")).st_ino:
        sys.exit("%s: wrong inode through its handle" % n)
    os.close(fd)
fd, err = opened(mnt, hs["dir"], os.O_RDONLY | os.O_DIRECTORY)
if fd < 0:
    sys.exit("open_by_handle_at dir: %s" % os.strerror(err))
if os.fstat(fd).st_ino != os.stat(os.path.join(mnt, "h", "dir")).st_ino:
    sys.exit("dir: wrong inode through its handle")
os.close(fd)
fd, err = opened(mnt, hs["doomed"])
if mode == "gone":
    if fd >= 0 or err != 116:	# ESTALE
        sys.exit("a deleted file's handle: fd %d, %s" % (fd, os.strerror(err)))
elif fd < 0:
    sys.exit("open_by_handle_at doomed: %s" % os.strerror(err))
PY
python3 "$T/handles.py" save "$M" "$T/handles" || fail "handles"
drop_caches 2	# dentries and inodes
python3 "$T/handles.py" check "$M" "$T/handles" || fail "handles after drop_caches"
rw_remount
python3 "$T/handles.py" check "$M" "$T/handles" || fail "handles across a remount"
rm "$M/h/doomed"
drop_caches 2
python3 "$T/handles.py" gone "$M" "$T/handles" || fail "handle of a deleted file"

if [ "$RW_TARGET" = czfs ]; then
	note "czfs: O_TMPFILE is refused with EOPNOTSUPP (libfuse 3.14 has no tmpfile)"
	python3 - "$M" <<'PY' || fail "O_TMPFILE"
import errno, os, sys
try:
    os.close(os.open(sys.argv[1], os.O_TMPFILE | os.O_RDWR, 0o600))
    sys.exit("O_TMPFILE worked: the manual and this test say it cannot")
except OSError as e:
    if e.errno != errno.EOPNOTSUPP:
        sys.exit("O_TMPFILE: %s, not EOPNOTSUPP" % e)
PY
fi

rw_umount
[ "$RW_TARGET" != czfs ] || czfs_umount "$T/lower"
rw_fsck
note "$RW_TARGET: ok"
