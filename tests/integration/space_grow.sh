#!/bin/bash
# Growing an image in place (issue 11): fill a 64 MiB image until ENOSPC,
# fsck.czfs --grow=160M, and df shows the new size, more data fits, what
# was there is intact, fsck is clean.  Shrinking and bad sizes are refused.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/rwlib.sh"
require_fuse

df_kib() {
	stat -f -c '%b' "$M" | awk '{ print $1 * 4 }'
}

rw_setup 64M
[ "$(df_kib)" -eq 65536 ] || fail "a 64 MiB image shows $(df_kib) KiB"
note "fill it"
i=0
while head -c 4M /dev/urandom >"$M/fill.$i" 2>/dev/null && sync "$M/fill.$i" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 40 ] || fail "a 64 MiB image took 160 MiB"
done
rm -f "$M/fill.$i"
[ $i -ge 10 ] || fail "only $i files of 4 MiB fit in 64 MiB"
sha256sum "$M"/fill.* | sed "s|$M/||" >"$T/sums"
rw_umount
rw_fsck

note "grow: refused below the limit, with bad sizes, when mounted"
if "$FSCK" --grow=32M "$RW_IMG" >"$T/out" 2>&1; then fail "--grow below the limit accepted"; fi
grep -q "shrinking is not supported" "$T/out" || { cat "$T/out" >&2; fail "--grow below: no reason given"; }
if "$FSCK" --grow=lots "$RW_IMG" >"$T/out" 2>&1; then fail "--grow=lots accepted"; fi
if "$FSCK" -n --grow=1G "$RW_IMG" >"$T/out" 2>&1; then fail "-n --grow accepted"; fi
rw_mount_existing
if "$FSCK" --grow=1G "$RW_IMG" >"$T/out" 2>&1; then fail "--grow of a mounted image accepted"; fi
rw_umount

note "grow to 160 MiB, write more"
"$FSCK" --grow=160M "$RW_IMG" >"$T/grow.log" || { cat "$T/grow.log" >&2; fail "--grow=160M failed"; }
grep -q "size limit 16384 -> 40960 blocks" "$T/grow.log" || { cat "$T/grow.log" >&2; fail "--grow summary"; }
rw_fsck
rw_mount_existing
[ "$(df_kib)" -eq $((160 * 1024)) ] || fail "df shows $(df_kib) KiB after growing to 160 MiB"
(cd "$M" && sha256sum -c --quiet "$T/sums") || fail "data changed by --grow"
for j in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19; do
	head -c 4M /dev/urandom >"$M/more.$j" || fail "more.$j: no room after growing"
done
sync "$M"/more.*
rw_remount
[ "$(df_kib)" -eq $((160 * 1024)) ] || fail "df shows $(df_kib) KiB after a remount"
(cd "$M" && sha256sum -c --quiet "$T/sums") || fail "data changed after writing more"
rw_umount
rw_fsck
"$FSCK" --grow=160M "$RW_IMG" >"$T/out" || fail "--grow to the current limit is not a no-op"

note "grow past one space-map index block (31.75 GiB): 8 GiB -> 40 GiB"
rw_setup 8G
head -c 1M /dev/urandom >"$T/one"
cp "$T/one" "$M/one"
rw_umount
"$FSCK" --grow=40G "$RW_IMG" >"$T/grow.log" || { cat "$T/grow.log" >&2; fail "--grow=40G failed"; }
rw_fsck
rw_mount_existing
[ "$(df_kib)" -eq $((40 * 1024 * 1024)) ] || fail "df shows $(df_kib) KiB after growing to 40 GiB"
cmp "$T/one" "$M/one" || fail "data changed by --grow=40G"
cp "$T/one" "$M/two"
rw_umount
rw_fsck
