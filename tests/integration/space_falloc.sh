#!/bin/bash
# fallocate keeps its promise (issue 11): on a 256 MiB image, a fallocate
# past the free room fails with ENOSPC and changes nothing; a fallocate of
# all the room succeeds, df shows it used, st_blocks counts it, and the
# whole range then takes incompressible data without ENOSPC.  The promise
# (RESERVED clusters) survives a remount and a kill -9 after fsync, fsck
# agrees with it, and gives it back on punch, truncate and unlink.  fsck
# finds a damaged promise.  ZERO_RANGE gives the bytes a model computes;
# COLLAPSE_RANGE and INSERT_RANGE are refused (the kernel's FUSE does).
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/rwlib.sh"
require_fuse
DUMP="$top_builddir/dump/dump.czfs"
CORRUPT="$top_builddir/tests/czfs-corrupt"
MIB=1048576
CLUSTER=65536

# field IMAGE PATH FIELD: a field of dump.czfs -j's inode.
field() {
	"$DUMP" -j "$1" "$2" | python3 -c \
		'import json, sys; print(json.load(sys.stdin)["inode"][sys.argv[1]])' "$3"
}

# cp_prealloc IMAGE: the current checkpoint's prealloc_blocks.
cp_prealloc() {
	"$DUMP" -j "$1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
cp = [v for k, v in d.items() if k.startswith("checkpoint") and v.get("current")]
print(cp[0]["prealloc_blocks"])'
}

# repeat TEXT BYTES: TEXT over and over (compresses well).
repeat() {
	(set +o pipefail; yes "$1" | head -c "$2")
}

blocks_of() {
	stat -c %b "$1"
}

# fsck_repairs WHAT: -y repairs everything (exit 1), then -n finds it clean.
fsck_repairs() {
	local st=0
	"$FSCK" -y "$RW_IMG" >"$T/out" 2>&1 || st=$?
	[ $st = 1 ] && grep -q "0 left" "$T/out" ||
		{ cat "$T/out" >&2; fail "fsck -y of $1: exit $st"; }
	fsck_clean "after fsck -y of $1"
}

# fsck_clean: -n finds nothing on the unmounted image.
fsck_clean() {
	"$FSCK" -n "$RW_IMG" >"$T/fsck.log" 2>&1 ||
		{ cat "$T/fsck.log" >&2; fail "fsck -n $1"; }
}

rw_setup 256M

note "past the room: ENOSPC, nothing changed"
room=$(rw_bavail)
if fallocate -l $((room + 16 * MIB)) "$M/big" 2>"$T/err"; then
	fail "fallocate of $((room + 16 * MIB)) bytes with $room free succeeded"
fi
grep -q "No space left on device" "$T/err" || { cat "$T/err" >&2; fail "fallocate past the room: not ENOSPC"; }
[ "$(stat -c %s "$M/big")" = 0 ] || fail "a refused fallocate changed the size"
[ "$(blocks_of "$M/big")" = 0 ] || fail "a refused fallocate set blocks aside"
rm "$M/big"

note "all the room: df shows it, the data then fits"
# a file with a tail: its partial cluster is promised the rest too
printf 'czfs tail' >"$M/f"
sync "$M/f"
room=$(rw_bavail)
len=$((room / CLUSTER * CLUSTER))
[ $len -gt $((200 * MIB)) ] || fail "only $room bytes free on a 256 MiB image"
fallocate -l $len "$M/f" || fail "fallocate of the free room ($len of $room bytes) failed"
[ "$(stat -c %s "$M/f")" = $len ] || fail "fallocate -l $len: size $(stat -c %s "$M/f")"
# the promise of every cluster, and the tail's 9 bytes (one sector)
[ "$(blocks_of "$M/f")" = $((len / 512 + 1)) ] || fail "st_blocks $(blocks_of "$M/f"), want $((len / 512 + 1))"
left=$(rw_bavail)
[ "$left" -lt $((2 * MIB)) ] || fail "df shows $left bytes free after the room was set aside"
if (head -c $((4 * MIB)) /dev/urandom >"$M/other" && sync "$M/other") 2>/dev/null; then
	fail "4 MiB written beside a fallocate of all the room"
fi
rm -f "$M/other"
cmp -n $len "$M/f" <(printf 'czfs tail'; head -c $((len - 9)) /dev/zero) ||
	fail "a fallocated file does not read as its tail and zeros"
head -c $len /dev/urandom >"$T/data"
dd if="$T/data" of="$M/f" bs=1M conv=notrunc,fsync status=none ||
	fail "writing incompressible data into the fallocated range failed"
cmp "$T/data" "$M/f" || fail "the data written into the range differs"
rw_umount
fsck_clean "after filling the range"
[ "$(field "$RW_IMG" f prealloc)" = 0 ] || fail "a written range keeps a promise: $(field "$RW_IMG" f prealloc)"
[ "$(cp_prealloc "$RW_IMG")" = 0 ] || fail "checkpoint prealloc_blocks $(cp_prealloc "$RW_IMG") with nothing reserved"
rw_mount_existing
cmp "$T/data" "$M/f" || fail "the data differs after a remount"
rm "$M/f"
rw_umount
fsck_clean "after the unlink"
rw_mount_existing

note "remount and kill -9 keep the promise"
touch "$M/k"
fallocate -n -l $((64 * MIB)) "$M/k"
fallocate -l $((32 * MIB)) "$M/m"
[ "$(stat -c %s "$M/k")" = 0 ] || fail "KEEP_SIZE changed the size"
[ "$(blocks_of "$M/k")" = $((64 * MIB / 512)) ] || fail "KEEP_SIZE: st_blocks $(blocks_of "$M/k")"
held=$(rw_bavail)
rw_remount
[ "$(blocks_of "$M/k")" = $((64 * MIB / 512)) ] || fail "after a remount: st_blocks $(blocks_of "$M/k")"
now=$(rw_bavail)
[ $((now - held)) -lt $MIB ] && [ $((held - now)) -lt $MIB ] ||
	fail "df free $held before the remount, $now after"
fallocate -n -o $((64 * MIB)) -l $((16 * MIB)) "$M/k"
sync "$M/k"
rw_kill_daemon
fsck_clean "after kill -9"
want=$(((80 + 32) * MIB / 4096))
[ "$(cp_prealloc "$RW_IMG")" = $want ] || fail "after kill -9: prealloc_blocks $(cp_prealloc "$RW_IMG"), want $want"
[ "$(field "$RW_IMG" k prealloc)" = $((80 * MIB / 4096)) ] || fail "after kill -9: k prealloc $(field "$RW_IMG" k prealloc)"
rw_mount_existing
[ "$(blocks_of "$M/k")" = $((80 * MIB / 512)) ] || fail "after kill -9: st_blocks $(blocks_of "$M/k")"
now=$(rw_bavail)
[ $((held - now)) -gt $((15 * MIB)) ] && [ $((held - now)) -lt $((17 * MIB)) ] ||
	fail "df free $held before, $now after 16 MiB more and kill -9"

note "punch, truncate and unlink give it back"
before=$(rw_bavail)
fallocate -p -o 0 -l $((32 * MIB)) "$M/k"
[ "$(blocks_of "$M/k")" = $((48 * MIB / 512)) ] || fail "punch: st_blocks $(blocks_of "$M/k")"
truncate -s $((8 * MIB)) "$M/m"
[ "$(blocks_of "$M/m")" = $((8 * MIB / 512)) ] || fail "truncate: st_blocks $(blocks_of "$M/m")"
gain=$(( $(rw_bavail) - before))
[ $gain -ge $((56 * MIB)) ] && [ $gain -le $((57 * MIB)) ] || fail "punch and truncate gave back $gain bytes, want 56 MiB"
# a zero write keeps the promise; data takes it at its stored size
head -c $((4 * MIB)) /dev/zero | dd of="$M/k" bs=1M seek=40 conv=notrunc status=none
repeat czfs $((4 * MIB)) | dd of="$M/k" bs=1M seek=44 conv=notrunc status=none
sync "$M/k"
rw_umount
fsck_clean "after punch and truncate"
[ "$(field "$RW_IMG" k prealloc)" = $((44 * MIB / 4096)) ] || fail "k prealloc $(field "$RW_IMG" k prealloc), want 44 MiB"
[ "$(field "$RW_IMG" k blocks)" -lt 64 ] || fail "compressible data took $(field "$RW_IMG" k blocks) blocks"
rw_mount_existing
cmp -n $((48 * MIB)) "$M/k" <(head -c $((44 * MIB)) /dev/zero; repeat czfs $((4 * MIB))) ||
	fail "k does not read as zeros and its data"
before=$(rw_bavail)
rm "$M/k" "$M/m"
# An unlinked inode is destroyed when the kernel forgets it, and its
# FORGET comes after rm has returned (seen in CI: one file of the two
# not given back yet): wait for it (60 s, a hang guard).
for _ in $(seq 300); do
	gain=$(( $(rw_bavail) - before))
	[ $gain -ge $((52 * MIB)) ] && break
	sleep 0.2
done
[ $gain -ge $((52 * MIB)) ] || fail "unlink gave back $gain bytes, want 52 MiB"
rw_umount
fsck_clean "after the unlink"
[ "$(cp_prealloc "$RW_IMG")" = 0 ] || fail "prealloc_blocks $(cp_prealloc "$RW_IMG") after every promise was given back"

note "a file unlinked while open gives its promise back after a crash"
rw_mount_existing
before=$(rw_bavail)
fallocate -l $((32 * MIB)) "$M/o"
exec 9<"$M/o"
rm "$M/o"
sync "$M"
[ $((before - $(rw_bavail))) -ge $((32 * MIB)) ] || fail "an open unlinked file lost its promise"
rw_kill_daemon
exec 9<&-
rw_mount_existing	# the mount destroys the orphan
now=$(rw_bavail)
[ $((before - now)) -lt $MIB ] || fail "df free $before before, $now after the orphan was reaped"
rw_umount
fsck_clean "after the orphan was reaped"
[ "$(cp_prealloc "$RW_IMG")" = 0 ] || fail "prealloc_blocks $(cp_prealloc "$RW_IMG") after the orphan was reaped"

note "fsck finds a damaged promise"
rw_mount_existing
fallocate -l $((1 * MIB)) "$M/d"
rw_umount
cp "$RW_IMG" "$T/good"
"$CORRUPT" "$RW_IMG" prealloc-count 5 >/dev/null
if "$FSCK" -n "$RW_IMG" >"$T/out" 2>&1; then fail "fsck -n passed a wrong prealloc_blocks"; fi
grep -q "prealloc_blocks 261, the reserved clusters promise 256" "$T/out" || { cat "$T/out" >&2; fail "fsck: no word of prealloc_blocks"; }
fsck_repairs "a wrong prealloc_blocks"
cp "$T/good" "$RW_IMG"
# the low byte of the inode's prealloc field (byte 128): 256 -> 257
"$CORRUPT" "$RW_IMG" poke d inode - 128 1 >/dev/null
if "$FSCK" -n "$RW_IMG" >"$T/out" 2>&1; then fail "fsck -n passed a wrong inode prealloc"; fi
grep -q "prealloc 257, its reserved clusters promise 256" "$T/out" || { cat "$T/out" >&2; fail "fsck: no word of the inode's prealloc"; }
fsck_repairs "a wrong inode prealloc"
cp "$T/good" "$RW_IMG"
"$CORRUPT" "$RW_IMG" poke d cluster 3 20 4 >/dev/null	# prealloc 16 -> 4
if "$FSCK" -n "$RW_IMG" >"$T/out" 2>&1; then fail "fsck -n passed a short promise"; fi
grep -q "reserved cluster 3 promises 4 blocks, expected 16" "$T/out" || { cat "$T/out" >&2; fail "fsck: no word of the short promise"; }
cp "$T/good" "$RW_IMG"
"$CORRUPT" "$RW_IMG" poke d cluster 5 16 1 >/dev/null	# ulen 1
if "$FSCK" -n "$RW_IMG" >"$T/out" 2>&1; then fail "fsck -n passed a damaged reserved item"; fi
grep -q "damaged cluster item 5" "$T/out" || { cat "$T/out" >&2; fail "fsck: no word of the damaged item"; }
cp "$T/good" "$RW_IMG"

note "ZERO_RANGE as a model computes it; COLLAPSE and INSERT refused"
rw_mount_existing
head -c $((2 * MIB + 12345)) /dev/urandom >"$T/z"
cp "$T/z" "$M/z"
# offset length keep: aligned, unaligned, inside one cluster, past the end
while read -r off len keep; do
	opt=()
	[ "$keep" = k ] && opt=(-n)
	fallocate -z "${opt[@]}" -o "$off" -l "$len" "$M/z" ||
		fail "fallocate -z -o $off -l $len failed"
	python3 - "$T/z" "$off" "$len" "$keep" <<'EOF'
import sys
path, off, n, keep = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
b = bytearray(open(path, 'rb').read())
end = off + n if keep != 'k' else min(off + n, len(b))
if end > len(b):
    b.extend(bytes(end - len(b)))
b[off:end] = bytes(end - off)
open(path, 'wb').write(b)
EOF
	cmp "$T/z" "$M/z" || fail "ZERO_RANGE -o $off -l $len $keep: bytes differ from the model"
done <<'EOF'
65536 131072 k
100000 300000 k
70000 1000 k
2000000 500000 k
2097152 1048576 -
EOF
[ "$(stat -c %s "$M/z")" = $((3 * MIB)) ] || fail "ZERO_RANGE past the end: size $(stat -c %s "$M/z")"
for op in -c -i; do
	if fallocate $op -o 0 -l $CLUSTER "$M/z" 2>"$T/err"; then fail "fallocate $op accepted"; fi
	grep -q "Operation not supported" "$T/err" || { cat "$T/err" >&2; fail "fallocate $op: not EOPNOTSUPP"; }
done
cmp "$T/z" "$M/z" || fail "a refused collapse or insert changed the file"
rw_remount
cmp "$T/z" "$M/z" || fail "ZERO_RANGE: bytes differ after a remount"
rw_umount
fsck_clean "after ZERO_RANGE"
