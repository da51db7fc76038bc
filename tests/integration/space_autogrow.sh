#!/bin/bash
# Room to grow by default (issue 35): an image mkfs.czfs makes from a
# directory without -s has no fixed limit (feature grow).  Mounted
# read-write it takes writes at once, raising its limit as it fills, as
# far as the filesystem holding it has room: a 96 MiB host here.  df
# shows what the host allows; past it a writer gets ENOSPC (never EIO)
# and what was written and fsync'd stays; fsck is clean.  With -s the
# limit stays fixed, and a read-only mount never grows.
. "$top_srcdir/tests/integration/lib.sh"
require_fuse

DUMP="$top_builddir/dump/dump.czfs"
FSCK="$top_builddir/fsck/fsck.czfs"
host="$T/host"
mkdir -p "$host" "$T/src/docs"
mount -t tmpfs -o size=96M,mode=0755 czfs-host "$host"
EXTRA_MOUNTS+=("$host")
"$top_srcdir/tests/sample-data" --tree "$T/src/docs" 2 ||
	fail "tests/sample-data could not build the tree"
echo "a line" >"$T/src/a.txt"

stat_of() { czfs_counter "$M" "$1"; }
# the mount's size as df shows it, in MiB
df_mib() { stat -f -c '%b %S' "$M" | awk '{ print int($1 * $2 / 1048576) }'; }

M="$T/mnt"
"$MKFS" -q -d "$T/src" "$host/img"
"$DUMP" "$host/img" | grep -qE "^ *feature_compat: 0x1\$" ||
	{ "$DUMP" "$host/img" | grep feature >&2; fail "mkfs -d without -s: no grow feature"; }
start_mib=$(( $(stat -c %s "$host/img") / 1048576 ))

note "the first write works, and more than the image held"
czfs_mount "$host/img" "$M"
[ "$(df_mib)" -ge 64 ] || fail "df shows $(df_mib) MiB on a host with 96 MiB free"
[ "$(df_mib)" -le 96 ] || fail "df shows $(df_mib) MiB, more than the host holds"
echo "another line" >>"$M/a.txt" || fail "an append to a file of the image"
mkdir "$M/new" || fail "mkdir"
head -c 24M /dev/urandom >"$T/r24"
cp "$T/r24" "$M/new/r24" && sync "$M/new/r24" || fail "24 MiB written to an image of $start_mib MiB"
cp -a "$T/src/docs" "$M/new/" || fail "cp -a of a tree"
[ "$(stat_of space.grows)" -ge 1 ] || fail "the limit was never raised"

note "past the host's room: ENOSPC, not EIO; what was written stays"
i=0 err=
while :; do
	if ! head -c 4M "$T/r24" >"$M/new/fill.$i" 2>"$T/err" ||
	   ! sync "$M/new/fill.$i" 2>>"$T/err"; then
		err=$(cat "$T/err")
		break
	fi
	i=$((i + 1))
	[ $i -lt 40 ] || fail "a 96 MiB host took more than 160 MiB"
done
grep -q "No space left on device" <<<"$err" || fail "the writer past the room got: $err"
[ $i -ge 6 ] || fail "only $i files of 4 MiB fit next to 24 MiB on a 96 MiB host"
rm -f "$M/new/fill.$i"
cmp "$T/r24" "$M/new/r24" || fail "the 24 MiB file changed"
diff -r "$T/src/docs" "$M/new/docs" >/dev/null || fail "the copied tree changed"
czfs_umount "$M"
"$FSCK" "$host/img" >"$T/fsck.out" 2>&1 || { cat "$T/fsck.out" >&2; fail "fsck after the fill"; }
czfs_mount "$host/img" "$M"
cmp "$T/r24" "$M/new/r24" || fail "the 24 MiB file changed across a remount"
grep -q "another line" "$M/a.txt" || fail "the append is gone after a remount"
czfs_umount "$M"

note "with -s the limit is fixed; a read-only mount never grows"
rm -f "$host/img"
"$MKFS" -q -s 16M -d "$T/src" "$host/img"
"$DUMP" "$host/img" | grep -qE "^ *feature_compat: 0x0\$" || fail "mkfs -s: the grow feature set"
czfs_mount "$host/img" "$M"
[ "$(df_mib)" -eq 16 ] || fail "a 16 MiB image shows $(df_mib) MiB"
if cp "$T/r24" "$M/r24" 2>"$T/err" && sync "$M/r24"; then fail "24 MiB fit in a 16 MiB image"; fi
[ "$(stat_of space.grows)" -eq 0 ] || fail "a fixed limit was raised"
czfs_umount "$M"
rm -f "$host/img"
"$MKFS" -q -d "$T/src" "$host/img"
czfs_mount "$host/img" "$M" -o ro
size0=$(stat -c %s "$host/img")
[ "$(stat_of space.grows)" -eq 0 ] || fail "a read-only mount raised the limit"
czfs_umount "$M"
[ "$(stat -c %s "$host/img")" -eq "$size0" ] || fail "a read-only mount changed the image's size"
