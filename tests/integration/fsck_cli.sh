#!/bin/bash
# fsck.czfs's command line and its exit codes for operational errors
# (8): bad options, no image, not a czfs image, an output --extract
# cannot write all of, and an image in use by a
# mount (czfs-fuse locks the image, shared when read-only, exclusive when
# writable; fsck needs it exclusive, dump shared).
. "$top_srcdir/tests/integration/lib.sh"
require_fuse
FSCK="$top_builddir/fsck/fsck.czfs"
DUMP="$top_builddir/dump/dump.czfs"

# expect RC PATTERN CMD...: CMD exits RC and says PATTERN (stdout+stderr)
expect() {
	local rc=$1 pat=$2 st=0 out
	shift 2
	out=$("$@" 2>&1) || st=$?
	[ "$st" -eq "$rc" ] || fail "'$*': exit $st, expected $rc: $out"
	grep -qi -- "$pat" <<<"$out" || fail "'$*': '$out' lacks '$pat'"
}

mkdir -p "$T/src/dir"
echo hello >"$T/src/dir/file"
"$MKFS" -q -s 16M -d "$T/src" "$T/img"

expect 0 "Usage: fsck.czfs" "$FSCK" --help
expect 0 "--extract" "$FSCK" -h
expect 0 "fsck.czfs (czfs)" "$FSCK" --version
expect 8 "unknown option" "$FSCK" --bogus "$T/img"
expect 8 "no IMAGE" "$FSCK"
expect 8 "too many" "$FSCK" "$T/img" "$T/img"
expect 8 "exclude each other" "$FSCK" -n -y "$T/img"
expect 8 "missing argument" "$FSCK" "$T/img" --extract
expect 8 "No such file" "$FSCK" "$T/nonexistent"
head -c 65536 /dev/urandom >"$T/random"
expect 8 "not a czfs image" "$FSCK" "$T/random"
expect 0 "clean" "$FSCK" -n "$T/img"
expect 0 "clean" "$FSCK" -y "$T/img"
expect 0 "clean" "$FSCK" -p -f "$T/img"

note "an image in use"
# a writable mount locks the image exclusively: fsck and dump refuse it
czfs_mount "$T/img" "$T/mnt"
expect 8 "in use" "$FSCK" "$T/img"
expect 8 "in use" "$FSCK" -n "$T/img"
expect 8 "in use" "$FSCK" -y "$T/img"
expect 8 "in use" "$FSCK" --extract "$T/x" "$T/img"
[ ! -e "$T/x" ] || fail "fsck --extract wrote a mounted image's tree"
expect 2 "in use" "$DUMP" -S "$T/img"
echo more >>"$T/mnt/dir/file"
cmp <(printf 'hello\nmore\n') "$T/mnt/dir/file" || fail "the mount was disturbed"
czfs_umount "$T/mnt"
expect 0 "clean" "$FSCK" -n "$T/img"

note "an output --extract cannot write all of"
mkdir -p "$T/y/dir"
echo other >"$T/y/dir/file"
expect 8 "y/dir: mkdir: File exists" "$FSCK" --extract "$T/y" "$T/img"
[ "$(cat "$T/y/dir/file")" = other ] || fail "fsck --extract overwrote a file"

# a full output: the reason once, then the walk stops (not a line for each
# of the 300 files left)
mkdir -p "$T/many" "$T/full"
for i in $(seq 1 300); do head -c 8192 /dev/urandom >"$T/many/f$i"; done
"$MKFS" -q -d "$T/many" "$T/many.img"
mount -t tmpfs -o size=256k czfs-test "$T/full"
EXTRA_MOUNTS+=("$T/full")
expect 8 "No space left on device" "$FSCK" --extract "$T/full/out" "$T/many.img"
"$FSCK" --extract "$T/full/out2" "$T/many.img" >"$T/full.out" 2>&1 || true
[ "$(grep -c 'No space left' "$T/full.out")" = 1 ] && grep -q "stopped" "$T/full.out" ||
	{ cat "$T/full.out" >&2; fail "fsck --extract to a full filesystem: not one ENOSPC and a stop"; }
note "an output that fills: $(tr '\n' ' ' <"$T/full.out")"

# a read-only mount shares its lock: fsck still refuses, dump reads
czfs_mount "$T/img" "$T/mnt" -o ro
expect 8 "in use" "$FSCK" -n "$T/img"
expect 8 "in use" "$FSCK" -y "$T/img"
expect 0 "inode_count" "$DUMP" -S "$T/img"
cmp <(printf 'hello\nmore\n') "$T/mnt/dir/file" || fail "the mount was disturbed"
czfs_umount "$T/mnt"

# while fsck holds the image, the daemon refuses to mount it
flock -x "$T/img" -c "! timeout 120 '$FUSE' '$T/img' '$T/mnt' -f 2>'$T/m.err'" ||
	fail "czfs-fuse mounted an image locked exclusively"
grep -q "in use" "$T/m.err" || fail "mount refusal: $(cat "$T/m.err")"
! mountpoint -q "$T/mnt" || fail "$T/mnt is mounted"
expect 0 "clean" "$FSCK" "$T/img"
