#!/bin/bash
# Read-write mounts: files written through the mount read back identical,
# across unmount and remount (read-write and read-only), after truncates,
# renames, links, xattrs; fsync'd data survives a killed daemon.
. "$top_srcdir/tests/integration/lib.sh"
require_fuse

sample_files "$T/c" "text docs"
"$MKFS" -q -s 2G "$T/img"
czfs_mount "$T/img" "$T/mnt"
M=$T/mnt

note "files of every kind written through the mount"
cp "$T/c/text" "$M/text"
cp "$T/c/docs" "$M/docs"
head -c 3000000 /dev/urandom >"$T/rand"; cp "$T/rand" "$M/rand"
head -c 1000000 /dev/zero >"$M/zeros"
for n in 0 1 4095 4096 4097 65535 65536 65537 200000; do
	head -c "$n" "$T/c/text" >"$M/part.$n"
done
mkdir -p "$M/d1/d2"
echo deep >"$M/d1/d2/f"
ln -s ../text "$M/d1/link"
ln "$M/part.4096" "$M/d1/hard"
mkfifo "$M/fifo"
setfattr -n user.small -v value "$M/text"
setfattr -n user.big -v "0x$(head -c 5000 /dev/urandom | xxd -p | tr -d '\n')" "$M/rand"
# sparse: data far out, holes between
dd if="$T/c/text" of="$M/sparse" bs=4096 count=10 seek=100000 status=none
# overwrite parts of a compressed file in place (read-modify-write)
cp "$T/c/text" "$T/text.mod"
cp "$T/c/text" "$M/text.mod"
sync "$M/text.mod"		# stored compressed: the overwrites below read it
for off in 0 70000 131072 500000 5000000; do
	for f in "$M/text.mod" "$T/text.mod"; do
		printf 'OVERWRITTEN' | dd of="$f" bs=1 seek="$off" conv=notrunc status=none
	done
done
# truncate down into a cluster, then up again
cp "$T/c/docs" "$M/trunc"; cp "$T/c/docs" "$T/trunc"
truncate -s 100001 "$M/trunc" "$T/trunc"
truncate -s 300000 "$M/trunc" "$T/trunc"
# rename over a file, unlink
cp "$T/rand" "$M/victim"; mv "$M/part.1" "$M/victim"
rm "$M/part.0"

check_all() {
	cmp "$T/c/text" "$M/text" && cmp "$T/c/docs" "$M/docs" &&
	cmp "$T/rand" "$M/rand" && cmp <(head -c 1000000 /dev/zero) "$M/zeros" &&
	cmp "$T/text.mod" "$M/text.mod" && cmp "$T/trunc" "$M/trunc" ||
		fail "$1: contents differ"
	for n in 4095 4096 4097 65535 65536 65537 200000; do
		cmp <(head -c "$n" "$T/c/text") "$M/part.$n" || fail "$1: part.$n"
	done
	[ "$(cat "$M/d1/d2/f")" = deep ] || fail "$1: deep file"
	[ "$(readlink "$M/d1/link")" = ../text ] || fail "$1: symlink"
	[ "$(stat -c %h "$M/part.4096")" = 2 ] || fail "$1: hard link count"
	[ "$(stat -c %i "$M/part.4096")" = "$(stat -c %i "$M/d1/hard")" ] || fail "$1: hard link inode"
	[ -p "$M/fifo" ] || fail "$1: fifo"
	[ "$(getfattr --absolute-names --only-values -n user.small "$M/text")" = value ] || fail "$1: xattr"
	[ "$(getfattr --absolute-names --only-values -n user.big "$M/rand" | wc -c)" = 5000 ] || fail "$1: big xattr"
	[ "$(stat -c %s "$M/sparse")" = $((100010 * 4096)) ] || fail "$1: sparse size"
	cmp <(head -c 40960 "$T/c/text") <(tail -c 40960 "$M/sparse") || fail "$1: sparse data"
	cmp -n 409600000 /dev/zero "$M/sparse" || fail "$1: sparse hole"
	[ "$(stat -c %s "$M/victim")" = 1 ] || fail "$1: rename over a file"
	[ ! -e "$M/part.0" ] && [ ! -e "$M/part.1" ] || fail "$1: removed names"
	[ "$(stat -c %h "$M/d1")" = 3 ] || fail "$1: directory link count"
}
check_all "while mounted"
czfs_umount "$M"

note "after remounting read-write and read-only"
czfs_mount "$T/img" "$M"
check_all "after a remount"
# overwrites of clusters read back from the image (read-modify-write)
for off in 3 65530 262144; do
	for f in "$M/text.mod" "$T/text.mod"; do
		printf 'AGAIN' | dd of="$f" bs=1 seek="$off" conv=notrunc status=none
	done
done
cmp "$T/text.mod" "$M/text.mod" || fail "read-modify-write of stored clusters"
czfs_umount "$M"
czfs_mount "$T/img" "$M" -o ro
check_all "read-only"
! touch "$M/new" 2>/dev/null || fail "read-only mount took a write"
czfs_umount "$M"

note "compression control: the user.czfs.compress xattr and extensions"
czfs_mount "$T/img" "$M" -o nocompress_extension=txt,compress=zstd:5
seq 1 300000 >"$T/text"
cp "$T/text" "$M/plain.txt"
cp "$T/text" "$M/packed.dat"
: >"$M/switched"
[ "$(getfattr --absolute-names --only-values -n user.czfs.compress "$M/packed.dat")" = zstd:5 ] ||
	fail "compress= of new files"
[ "$(getfattr --absolute-names --only-values -n user.czfs.compress "$M/plain.txt")" = none ] ||
	fail "nocompress_extension"
setfattr -n user.czfs.compress -v none "$M/switched"
cp "$T/text" "$M/switched"
sync "$M/plain.txt" "$M/packed.dat" "$M/switched"	# fsync: written back
blocks_text=$(( $(stat -c %s "$T/text") / 4096 ))
[ "$(stat -c %b "$M/plain.txt")" -ge $((blocks_text * 8)) ] || fail "a .txt file was compressed"
[ "$(stat -c %b "$M/switched")" -ge $((blocks_text * 8)) ] || fail "compress=none was not applied"
[ "$(stat -c %b "$M/packed.dat")" -lt $((blocks_text * 4)) ] || fail "a .dat file was not compressed"
! setfattr -n user.czfs.compress -v brotli "$M/switched" 2>/dev/null || fail "bad algorithm accepted"
cmp "$T/text" "$M/switched" && cmp "$T/text" "$M/plain.txt" && cmp "$T/text" "$M/packed.dat" ||
	fail "compression control changed data"
czfs_umount "$M"

note "all-zero clusters are holes, or data with -o no_zero_detect"
czfs_mount "$T/img" "$M" -o no_zero_detect
head -c 1000000 /dev/zero >"$M/zeros.kept"
sync "$M/zeros.kept"
[ "$(stat -c %b "$M/zeros.kept")" -gt 0 ] || fail "no_zero_detect: zeros became holes"
[ "$(stat -c %b "$M/zeros")" -eq 0 ] || fail "zeros written without it take blocks"
cmp <(head -c 1000000 /dev/zero) "$M/zeros.kept" || fail "no_zero_detect: zeros read back"
note "relatime: a read after a change updates the access time"
# (reads the kernel serves from its page cache never reach the daemon:
# drop it, so that this one does).  The change comes first: an earlier
# read that reached the daemon (the cmp above, if the kernel had dropped
# its pages) has already moved atime past mtime, and relatime then rightly
# leaves it.
touch -m "$M/packed.dat"
old=$(stat -c %X "$M/packed.dat")
sleep 1.1
drop_caches
cat "$M/packed.dat" >/dev/null
# the kernel keeps the old attributes for up to a second (more on a
# loaded machine): wait for the new atime (60 s, a hang guard)
for i in $(seq 1 300); do
	[ "$(stat -c %X "$M/packed.dat")" -gt "$old" ] && break
	sleep 0.2
done
[ "$(stat -c %X "$M/packed.dat")" -gt "$old" ] || fail "atime not updated"
czfs_umount "$M"

note "statfs: writing takes space, deleting gives it back"
czfs_mount "$T/img" "$M"
# data not written back yet counts in st_blocks (du, cp's sparse test)
head -c 300000 "$T/c/text" >"$M/fresh"
[ "$(stat -c %b "$M/fresh")" -gt 0 ] || fail "st_blocks of data not written back is 0"
free0=$(stat -f -c %a "$M")
head -c 20000000 /dev/urandom >"$M/big"
sync "$M/big"
free1=$(stat -f -c %a "$M")
[ "$free1" -lt $((free0 - 4000)) ] || fail "statfs: $free0 -> $free1 after 20 MB"
rm "$M/big"
sync -f "$M"
free2=$(stat -f -c %a "$M")
[ "$free2" -gt $((free1 + 4000)) ] || fail "statfs: space not given back ($free1 -> $free2)"

note "czfs-stat counts the bytes written and what the image took for them"
stat_of() { czfs_counter "$M" "$1"; }
w0=$(stat_of fuse.write_bytes) r0=$(stat_of fuse.write_requests) b0=$(stat_of backing.write_bytes)
dd if=/dev/urandom of="$M/counted" bs=64k count=32 conv=fsync status=none
w1=$(stat_of fuse.write_bytes) r1=$(stat_of fuse.write_requests) b1=$(stat_of backing.write_bytes)
[ $((w1 - w0)) = 2097152 ] || fail "fuse.write_bytes grew by $((w1 - w0)), not 2097152"
[ $((r1 - r0)) -ge 32 ] || fail "fuse.write_requests grew by $((r1 - r0)) for 32 writes"
# incompressible: stored raw, 2 MiB of data blocks at least, plus metadata
[ $((b1 - b0)) -ge 2097152 ] || fail "backing.write_bytes grew by $((b1 - b0)) for 2 MiB fsync'd"

note "a checkpoint after 16 MiB flushes the data before its commit"
f0=$(stat_of backing.flushes)
dd if=/dev/urandom of="$M/flushed" bs=1M count=16 conv=fsync status=none
f1=$(stat_of backing.flushes)
# the data's own flush outside fs->lock, then the commit's two
[ $((f1 - f0)) -ge 3 ] || fail "a 16 MiB fsync made $((f1 - f0)) flushes, not 3 or more"
rm "$M/flushed"

note "an fsync with nothing new since the last checkpoint writes none"
fsyncs() {	# fsyncs PATH N [BYTES]: N fsyncs of PATH, BYTES appended before each
	python3 - "$@" <<'PY'
import os, sys
path, n, add = sys.argv[1], int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else ""
fd = os.open(path, os.O_RDONLY if os.path.isdir(path) else os.O_WRONLY | os.O_APPEND)
for _ in range(n):
    if add:
        os.write(fd, add.encode())
    os.fsync(fd)
os.close(fd)
PY
}
fsyncs "$M/counted" 1
c0=$(stat_of checkpoint.written) s0=$(stat_of checkpoint.skipped)
fsyncs "$M/counted" 5
fsyncs "$M" 3
c1=$(stat_of checkpoint.written) s1=$(stat_of checkpoint.skipped)
[ "$c1" = "$c0" ] || fail "fsyncs of a clean file and directory wrote $((c1 - c0)) checkpoints"
[ $((s1 - s0)) -ge 8 ] || fail "checkpoint.skipped grew by $((s1 - s0)) for 8 clean fsyncs"
fsyncs "$M/counted" 3 x
c2=$(stat_of checkpoint.written)
[ $((c2 - c1)) -ge 3 ] || fail "3 fsyncs after appends wrote $((c2 - c1)) checkpoints"

note "one warm thread reads a writer's requests; an fsync is passed on"
h0=$(stat_of fuse.loop_handoffs) q0=$(stat_of fuse.write_requests)
python3 - "$M/small-writes" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
for i in range(400):
    os.pwrite(fd, b"%d" % i * 100, (i * 7919 % 400) * 4096)
    if i % 40 == 39:
        os.fsync(fd)
os.close(fd)
PY
h1=$(stat_of fuse.loop_handoffs) q1=$(stat_of fuse.write_requests)
[ $((q1 - q0)) -ge 400 ] || fail "$((q1 - q0)) write requests for 400 writes"
[ $((h1 - h0)) -ge 10 ] || fail "the reader kept the device through 10 fsyncs ($((h1 - h0)) handoffs)"
[ $((h1 - h0)) -lt 100 ] || fail "small writes were passed on: $((h1 - h0)) handoffs for 400 writes and 10 fsyncs"
[ "$(stat_of fuse.loop_threads)" -ge 1 ] || fail "a writable mount does not use the daemon's loop"

note "the kernel does not ask for security.capability before every write"
# FUSE_HANDLE_KILLPRIV_V2 (src/fuse/killpriv.h): a file found without it
# is not asked about again; the setuid rules are rw_posix.py's to check.
[ "$(stat_of fuse.killpriv_v2)" = 1 ] || fail "FUSE_HANDLE_KILLPRIV_V2 was not negotiated"
x0=$(stat_of fuse.getxattr_requests)
python3 - "$M/small-writes" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
for i in range(200):
    os.pwrite(fd, b"w" * 100, i * 4096)
os.close(fd)
PY
x1=$(stat_of fuse.getxattr_requests)
[ $((x1 - x0)) -le 5 ] || fail "200 writes cost $((x1 - x0)) GETXATTR requests"

note "a writeback that only replaces blocks leaves the kernel's attributes"
# Rewriting blocks in place (a database's pages) keeps the block count:
# nothing to tell the kernel.  Appends change it: st_blocks right after
# the fsync says so.
python3 - "$M/pages" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
os.pwrite(fd, os.urandom(256 << 10), 0)
os.fsync(fd)
os.close(fd)
PY
n0=$(stat_of fuse.attr_notifies)
python3 - "$M/pages" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
for i in range(20):
    os.pwrite(fd, os.urandom(4096), (i * 7 % 64) * 4096)
    os.fsync(fd)
os.close(fd)
PY
n1=$(stat_of fuse.attr_notifies)
[ $((n1 - n0)) -le 2 ] || fail "20 fsync'd rewrites in place sent $((n1 - n0)) attribute notifications"
for i in 1 2 3 4 5; do
	head -c 65536 /dev/urandom >>"$M/pages"
	sync "$M/pages"
done
n2=$(stat_of fuse.attr_notifies)
[ $((n2 - n1)) -ge 5 ] || fail "5 fsync'd appends sent $((n2 - n1)) attribute notifications"
[ "$(stat -c %b "$M/pages")" -ge $(((256 + 5 * 64) * 2)) ] ||
	fail "st_blocks after appends: $(stat -c %b "$M/pages")"

# The kernel asks for security.capability before every write and drops
# it when there is one; the daemon remembers an inode has none until its
# xattrs change: one set after writes is still found (and dropped) by
# the next write.
note "security.capability: remembered absent, found once set"
python3 - "$M/capfile" <<'PY'
import errno, os, struct, sys
path = sys.argv[1]
fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o755)
for i in range(20):
    os.pwrite(fd, b"x" * 100, i * 100)
caps = struct.pack("<IIIII", 0x02000001, 1 << 13, 0, 0, 0)  # cap_net_raw+ep
os.setxattr(path, "security.capability", caps)
if os.getxattr(path, "security.capability") != caps:
    sys.exit("security.capability does not read back")
os.pwrite(fd, b"y", 0)              # the kernel drops it now
try:
    os.getxattr(path, "security.capability")
    sys.exit("a write kept security.capability")
except OSError as e:
    if e.errno != errno.ENODATA:
        raise
os.close(fd)
PY
[ $? -eq 0 ] || fail "security.capability"

note "fsync'd data survives a killed daemon"
head -c 2000000 /dev/urandom >"$T/durable"
cp "$T/durable" "$M/durable"
sync "$M/durable"		# fsync
echo "not synced" >"$M/volatile"
pkill -9 -f "czfs-fuse $T/img $M" || fail "no daemon to kill"
sleep 0.5
umount -l "$M" 2>/dev/null || true
for i in "${!CZFS_MOUNTS[@]}"; do [ "${CZFS_MOUNTS[$i]}" = "$M" ] && CZFS_MOUNTS[$i]=""; done
czfs_mount "$T/img" "$M"
cmp "$T/durable" "$M/durable" || fail "fsync'd file lost after a crash"
check_all "after a crash"
czfs_umount "$M"
