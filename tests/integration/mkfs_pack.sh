#!/bin/bash
# Packed small files and tails: a tree of thousands of tiny files (every
# size around the packing and inline limits, copies, tails of bigger
# files) round-trips through mkfs.czfs, fsck --extract and the mount for
# every codec, sort order and several cluster sizes; rewriting, appending
# to, truncating and deleting packed files through a read-write mount
# moves them out of their packs, and the last one frees the pack.
. "$top_srcdir/tests/integration/lib.sh"
require_fuse
FSCK="$top_builddir/fsck/fsck.czfs"
DUMP="$top_builddir/dump/dump.czfs"

tmpfs_mount "$T/src"
S=$T/src
# every size class: 0, around the 2048-byte inline limit, blocks, clusters
sizes="0 1 2 100 2047 2048 2049 4095 4096 4097 8191 8193 16383 16385
	32767 32769 65535 65536 65537 131071 131073 262143 262144 262145"
head -c 1000000 < <(cat /usr/include/*.h) >"$T/text"
head -c 300000 /dev/urandom >"$T/rand"
for d in a b c; do
	mkdir -p "$S/$d/sub"
	for n in $sizes; do
		head -c "$n" "$T/text" >"$S/$d/t.$n.h"
		tail -c "$n" "$T/rand" >"$S/$d/sub/r.$n.bin"
	done
done
# thousands of tiny files, many alike (copies share a range)
mkdir -p "$S/many"
for i in $(seq 1 2000); do
	case $((i % 4)) in
	0) echo "file $i" >"$S/many/f$i.txt" ;;
	1) head -c $((i * 7 % 5000)) "$T/text" >"$S/many/f$i.c" ;;
	2) echo "the same small file" >"$S/many/f$i.same" ;;
	3) head -c $((i % 300)) "$T/rand" >"$S/many/f$i.bin" ;;
	esac
done
: >"$S/many/empty"
# a sparse file is never packed
dd if="$T/text" of="$S/sparse" bs=4096 count=2 seek=50 status=none
truncate -s 300001 "$S/sparse"

packs() { "$DUMP" -j "$1" | python3 -c 'import json,sys
s = json.load(sys.stdin)["statistics"]
print(s.get("packs", {}).get("count", 0), s["clusters"]["packed"])'; }

for spec in "lz4 64k" "zstd 64k" "none 64k" "lz4 4k" "lz4hc 256k" \
	    "lz4 64k --sort=ext" "zstd 16k --no-dedup"; do
	# shellcheck disable=SC2086
	set -- $spec
	note "$spec: mkfs, fsck, extract, mount"
	"$MKFS" -q -f -c "$1" -C "$2" "${@:3}" -d "$S" "$T/img"
	read -r np nc < <(packs "$T/img")
	[ "$np" -gt 0 ] && [ "$nc" -gt 2000 ] || fail "$spec: $np packs, $nc packed clusters"
	"$FSCK" "$T/img" >"$T/fsck.out" || { cat "$T/fsck.out" >&2; fail "$spec: fsck"; }
	rm -rf "$T/out"
	"$FSCK" --extract "$T/out" "$T/img" >/dev/null || fail "$spec: extract"
	diff -r "$S" "$T/out" >&2 || fail "$spec: extracted tree differs"
	czfs_mount "$T/img" "$T/mnt" -o ro
	diff -r "$S" "$T/mnt" >&2 || fail "$spec: mounted tree differs"
	czfs_umount "$T/mnt"
done

note "--no-pack: no packs, and a bigger image"
"$MKFS" -q -f --no-pack -d "$S" "$T/img0"
read -r np nc < <(packs "$T/img0")
[ "$np" = 0 ] && [ "$nc" = 0 ] || fail "--no-pack made $np packs"
"$MKFS" -q -f -d "$S" "$T/img"
[ "$(stat -c %s "$T/img")" -lt "$(stat -c %s "$T/img0")" ] ||
	fail "packed image not smaller than unpacked"

note "read-write: rewrite, append, truncate, delete packed files"
"$MKFS" -q -f -s 256M -d "$S" "$T/img"
cp -a "$S" "$T/want"
czfs_mount "$T/img" "$T/mnt"
M=$T/mnt
for d in "$M" "$T/want"; do
	echo appended >>"$d/a/t.2049.h"
	printf 'XY' | dd of="$d/a/t.4097.h" bs=1 seek=10 conv=notrunc status=none
	truncate -s 10 "$d/b/t.65537.h"
	truncate -s 0 "$d/b/t.4095.h"
	truncate -s 100000 "$d/b/t.100.h"
	head -c 5000 "$T/rand" >"$d/c/t.8193.h"
	rm -f "$d/many/f1"*.same "$d/c/sub/r.131073.bin"
done
diff -r "$T/want" "$M" >&2 || fail "changed tree differs in the mount"
czfs_umount "$T/mnt"
"$FSCK" "$T/img" >"$T/fsck.out" || { cat "$T/fsck.out" >&2; fail "fsck after changes"; }
czfs_mount "$T/img" "$T/mnt" -o ro
diff -r "$T/want" "$T/mnt" >&2 || fail "changed tree differs after remount"
czfs_umount "$T/mnt"

note "deleting every file frees every pack"
czfs_mount "$T/img" "$T/mnt"
rm -rf "${T:?}/mnt/"*
czfs_umount "$T/mnt"
read -r np nc < <(packs "$T/img")
[ "$np" = 0 ] && [ "$nc" = 0 ] || fail "after deleting all: $np packs, $nc packed clusters left"
"$FSCK" "$T/img" >"$T/fsck.out" || { cat "$T/fsck.out" >&2; fail "fsck after deleting all"; }
