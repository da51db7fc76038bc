#!/bin/bash
# Files past 4 GiB (sparse source), holes and all-zero clusters.
. "$top_srcdir/tests/integration/lib.sh"
require_fuse

mkdir -p "$T/src"
f="$T/src/big"
truncate -s 5G "$f"
for off in 0 4294967295 4294971392 5368705024; do
	printf 'czfs@%s' "$off" | dd of="$f" bs=1 seek="$off" conv=notrunc status=none
done
truncate -s 5G "$f"
head -c 300000 /dev/urandom | dd of="$f" bs=4096 seek=262144 conv=notrunc status=none
truncate -s 5G "$f"
head -c 10485760 /dev/zero >"$T/src/zeros"
: >"$T/src/empty"
# a 1 TiB file: data in its last cluster
truncate -s 1T "$T/src/tera"
printf 'the end' | dd of="$T/src/tera" bs=1 seek=$(( (1 << 40) - 7 )) conv=notrunc status=none

# the holes are not read: the data (the zeros file, 300000 bytes and a
# few clusters around the small writes) is read, not 1 TiB and 5 GiB
"$MKFS" -d "$T/src" "$T/img" >"$T/mkfs.out"
read=$(sed -n 's/^mkfs.czfs: read \([0-9]*\) bytes of the files .*/\1/p' "$T/mkfs.out")
[ -n "$read" ] || fail "mkfs said nothing of the bytes it read: $(cat "$T/mkfs.out")"
[ "$read" -ge $((10485760 + 300000)) ] || fail "mkfs read $read bytes, less than the data"
[ "$read" -le $((12 << 20)) ] || fail "mkfs read $read bytes of sparse files: holes were read"
size=$(stat -c %s "$T/img")
[ "$size" -lt $((8 << 20)) ] || fail "image of sparse and zero files is $size bytes"

czfs_mount "$T/img" "$T/mnt"
[ "$(stat -c %s "$T/mnt/big")" = 5368709120 ] || fail "size of the 5 GiB file"
for off in 0 4294967295 4294971392 5368705024; do
	want="czfs@$off"
	got=$(dd if="$T/mnt/big" bs=1 skip="$off" count=${#want} status=none)
	[ "$got" = "$want" ] || fail "at offset $off: '$got'"
done
cmp <(dd if="$f" bs=4096 skip=262144 count=80 status=none) \
    <(dd if="$T/mnt/big" bs=4096 skip=262144 count=80 status=none) ||
	fail "random data at 1 GiB"
cmp "$f" "$T/mnt/big" || fail "whole 5 GiB file differs"
cmp "$T/src/zeros" "$T/mnt/zeros" || fail "all-zero file"
[ "$(stat -c %b "$T/mnt/zeros")" = 0 ] || fail "all-zero file takes blocks"
[ "$(stat -c %s "$T/mnt/empty")" = 0 ] || fail "empty file"
[ "$(stat -c %s "$T/mnt/tera")" = $((1 << 40)) ] || fail "size of the 1 TiB file"
[ "$(tail -c 7 "$T/mnt/tera")" = "the end" ] || fail "end of the 1 TiB file"
cmp -n 1048576 /dev/zero "$T/mnt/tera" || fail "start of the 1 TiB file"
czfs_umount "$T/mnt"
