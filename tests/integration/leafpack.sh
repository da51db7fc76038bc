#!/bin/bash
# Leaf packs (czfs(5) "Leaf packs"): mkfs.czfs compresses the metadata
# leaves of a tree of small files in packs, --plain-leaves does not; the
# image is smaller and reads back the same, through every algorithm;
# through a read-write mount, changes store the leaves they reach plain
# and free their packs, fsck stays clean, and deleting everything gives
# back every block.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/fscklib.sh"
require_fuse

mkdir -p "$T/src/many" "$T/src/d1/d2" "$T/src/docs"
(cd "$T/src/many" && seq -f 'file-%05g' 1 2500 | xargs touch)
for i in $(seq 1 400); do echo "small file $i of d1" >"$T/src/d1/s$i"; done
for i in $(seq 1 40); do head -c $((i * 911)) /usr/include/stdio.h >"$T/src/docs/t$i"; done
echo deep >"$T/src/d1/d2/f"
ln -s ../d1/s1 "$T/src/docs/link"
setfattr -n user.k -v value "$T/src/d1/s2"

used() { "$FSCK" -n "$1" | sed -n 's|.*, \([0-9]*\)/[0-9]* blocks used.*|\1|p'; }
dump_n() { "$DUMP" "$1" | awk -v k="$2:" '$1 == k { print $2 }'; }

note "mkfs packs the leaves, --plain-leaves does not; both read back the same"
for alg in lz4 zstd lz4hc; do
	"$MKFS" -q -s 64M -c $alg -d "$T/src" "$T/packed-$alg"
	"$MKFS" -q -s 64M -c $alg --plain-leaves -d "$T/src" "$T/plain-$alg"
	expect_fsck "$T/packed-$alg" 0 clean -n
	expect_fsck "$T/plain-$alg" 0 clean -n
	packs=$(dump_n "$T/packed-$alg" leaf_packs) leaves=$(dump_n "$T/packed-$alg" tree_leaves)
	[ "$packs" -ge 2 ] || fail "$alg: $packs leaf packs"
	[ "$(dump_n "$T/packed-$alg" packed_leaves)" = "$leaves" ] || fail "$alg: not every leaf packed"
	[ "$(dump_n "$T/plain-$alg" leaf_packs)" = 0 ] || fail "$alg --plain-leaves made leaf packs"
	tb=$(dump_n "$T/packed-$alg" tree_blocks) pb=$(dump_n "$T/plain-$alg" tree_blocks)
	[ $((tb * 3)) -lt "$pb" ] || fail "$alg: the tree takes $tb blocks packed, $pb plain"
	[ "$(used "$T/packed-$alg")" -lt "$(used "$T/plain-$alg")" ] || fail "$alg: no block saved"
	czfs_mount "$T/packed-$alg" "$T/mnt" -o ro
	diff -r "$T/src" "$T/mnt" >&2 || fail "$alg: files differ"
	[ "$(tree_manifest "$T/mnt" | awk '{print $1, $2, $3, ($2 == "d" ? "" : $7)}')" = \
	  "$(tree_manifest "$T/src" | awk '{print $1, $2, $3, ($2 == "d" ? "" : $7)}')" ] ||
		fail "$alg: names, types, modes or sizes differ"
	getfattr -n user.k --only-values "$T/mnt/d1/s2" | grep -qx value || fail "$alg: xattr"
	czfs_umount "$T/mnt"
done
"$MKFS" -s 64M -c lz4 -d "$T/src" "$T/summary" | grep -q "metadata leaves .* into [0-9]* leaf packs" ||
	fail "no leaf pack line in the summary"
"$MKFS" -q -s 64M -c none -d "$T/src" "$T/none"
[ "$(dump_n "$T/none" leaf_packs)" = 0 ] || fail "an uncompressed image has leaf packs"

note "through a mount: changes store the leaves they reach plain; fsck clean"
cp "$T/packed-lz4" "$T/rw"
packs0=$(dump_n "$T/rw" leaf_packs)
czfs_mount "$T/rw" "$T/mnt"
echo changed >"$T/mnt/d1/s7"
for i in $(seq 1 100); do echo "new $i" >"$T/mnt/d1/new$i"; done
rm "$T/mnt/many/file-01000"
mv "$T/mnt/many/file-02000" "$T/mnt/d1/moved"
sync "$T/mnt"
czfs_umount "$T/mnt"
expect_fsck "$T/rw" 0 clean -n
packs1=$(dump_n "$T/rw" leaf_packs)
note "leaf packs: $packs0 before the changes, $packs1 after"
[ "$packs1" -lt "$packs0" ] || fail "no pack was stored plain ($packs1 of $packs0 left)"
czfs_mount "$T/rw" "$T/mnt" -o ro
cmp <(echo changed) "$T/mnt/d1/s7" || fail "the rewritten file"
cmp <(echo "new 100") "$T/mnt/d1/new100" || fail "a new file"
[ ! -e "$T/mnt/many/file-01000" ] || fail "the deleted file is back"
[ -e "$T/mnt/d1/moved" ] && [ ! -e "$T/mnt/many/file-02000" ] || fail "the rename"
diff -r "$T/src/docs" "$T/mnt/docs" >&2 || fail "untouched files differ"
[ "$(find "$T/mnt/many" -type f | wc -l)" = 2498 ] || fail "files of many lost"
czfs_umount "$T/mnt"

note "every leaf stored plain, then everything deleted: every block back"
empty_used=$("$MKFS" -q -f -s 64M "$T/empty" && used "$T/empty")
czfs_mount "$T/rw" "$T/mnt"
find "$T/mnt" -type f -name 'file-*' -exec touch {} +	# every inode changes
czfs_umount "$T/mnt"
expect_fsck "$T/rw" 0 clean -n
[ "$(dump_n "$T/rw" leaf_packs)" = 0 ] || fail "$(dump_n "$T/rw" leaf_packs) leaf packs left after touching every file"
czfs_mount "$T/rw" "$T/mnt"
rm -rf "${T:?}/mnt/"*
czfs_umount "$T/mnt"
expect_fsck "$T/rw" 0 clean -n
[ "$(used "$T/rw")" -le $((empty_used + 8)) ] ||
	fail "$(used "$T/rw") blocks used after deleting everything, an empty image uses $empty_used"

note "a damaged pack: fsck names it, the mount fails its files only"
cp "$T/packed-zstd" "$T/bad"
pack=$("$LOCATE" "$T/bad" many/file-01200 leaf)
[ "$pack" != "$("$LOCATE" "$T/bad" docs/t1 leaf)" ] || fail "test tree too small: one pack"
flip "$T/bad" $(( pack * 4096 + 40 ))	# in the payload
expect_fsck "$T/bad" 4 "leaf pack at $pack: bad checksum" -n
czfs_mount "$T/bad" "$T/mnt" -o ro
! stat "$T/mnt/many/file-01200" 2>/dev/null || fail "stat through a damaged pack"
diff -r "$T/src/docs" "$T/mnt/docs" >&2 || fail "files outside the damaged pack"
czfs_umount "$T/mnt"
