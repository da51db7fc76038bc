#!/bin/bash
# fsck.czfs and shared packs: each kind of damage to the pack accounting in
# a copy of a good image is named with the exact exit code; a wrong count,
# a lost PACK item and a PACK item no cluster uses are repaired by -y (then
# clean, and the files still read and can all be deleted, freeing every
# pack; the unused item's blocks freed); a damaged PACKED item
# or damaged pack data is an error, and the mount fails only the files of
# that pack with EIO.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/fscklib.sh"
require_fuse

mkdir -p "$T/src/a" "$T/src/b"
head -c 300000 < <(cat /usr/include/*.h) >"$T/text"
for i in $(seq 1 300); do
	head -c $((i * 13)) "$T/text" >"$T/src/a/f$i"
	echo "copy" >"$T/src/b/same$i"
done
head -c 200000 "$T/text" >"$T/src/big"
cp "$T/src/big" "$T/src/big.copy"	# a whole copy: shared clusters
"$MKFS" -q -s 64M -d "$T/src" "$T/good"
# the packs lie in runs (sliced packs); see fsck_runs.sh for packs of
# their own
"$DUMP" -j "$T/good" | python3 -c '
import json, sys
p = json.load(sys.stdin)["statistics"]["packs"]
sys.exit(0 if p["in_runs"] > 0 else 1)' || fail "no sliced packs in the image"

expect_fsck "$T/good" 0 clean -n

# refs_of PATH IDX: "blkaddr refs" of the pack cluster IDX of PATH uses
refs_of() {
	cp "$T/good" "$T/probe"
	"$CORRUPT" "$T/probe" pack-refs "$1" "$2" 1
}

note "the copy shares the clusters of big: its packs count two"
read -r blk refs < <(refs_of big 0)
[ "$refs" = 2 ] || fail "big's first cluster: $refs references, want 2"
[ "$("$LOCATE" "$T/good" /big.copy cluster 1)" = "$("$LOCATE" "$T/good" /big cluster 1)" ] ||
	fail "big.copy does not share big's cluster 1"

note "a wrong reference count: fixable"
cp "$T/good" "$T/bad"
read -r blk refs < <("$CORRUPT" "$T/bad" pack-refs a/f5 0 1)
expect_fsck "$T/bad" 4 "pack at block $blk: 1 references, $refs clusters use it" -n
expect_fsck "$T/bad" 1 "references" -y
expect_fsck "$T/bad" 0 clean -n
cp "$T/good" "$T/bad"
"$CORRUPT" "$T/bad" pack-refs a/f5 0 $((refs + 7)) >/dev/null
expect_fsck "$T/bad" 4 "$((refs + 7)) references, $refs clusters use it" -n
expect_fsck "$T/bad" 1 "references" -y
expect_fsck "$T/bad" 0 clean -n
czfs_mount "$T/bad" "$T/mnt"
diff -r "$T/src" "$T/mnt" >&2 || fail "files differ after the repair"
rm -rf "${T:?}/mnt/"*
czfs_umount "$T/mnt"
expect_fsck "$T/bad" 0 clean -n
[ "$("$DUMP" "$T/bad" | grep -c '^  packs:')" = 0 ] || fail "packs left after deleting every file"

note "packs in blocks of their own (--no-slice): a wrong count, fixable"
"$MKFS" -q -s 64M --no-slice -d "$T/src" "$T/plain"
read -r blk nb kind < <("$LOCATE" "$T/plain" /a/f5 cluster 0)
[ "$kind" = 7 ] || fail "--no-slice: a/f5 is not packed (kind $kind)"
read -r pblk refs < <("$CORRUPT" "$T/plain" pack-refs a/f5 0 1)
[ "$pblk" = "$blk" ] || fail "--no-slice: the pack of a/f5 is at $pblk, its cluster says $blk"
expect_fsck "$T/plain" 4 "pack at block $blk: 1 references, $refs clusters use it" -n
expect_fsck "$T/plain" 1 "references" -y
expect_fsck "$T/plain" 0 clean -n

note "a lost PACK item: its blocks kept, the item made again"
cp "$T/good" "$T/bad"
"$CORRUPT" "$T/bad" pack-drop a/f100 0 >/dev/null
expect_fsck "$T/bad" 4 "clusters use it, no PACK item" -n
run_fsck "$T/bad" -n
grep -qi "leak" <<<"$out" && fail "a lost PACK item's blocks taken for leaked: $out"
expect_fsck "$T/bad" 1 "no PACK item" -y
expect_fsck "$T/bad" 0 clean -n
czfs_mount "$T/bad" "$T/mnt" -o ro
diff -r "$T/src" "$T/mnt" >&2 || fail "files differ after the item was made again"
czfs_umount "$T/mnt"

note "a PACK item no cluster uses: deleted, its blocks freed"
cp "$T/good" "$T/bad"
read -r blk nb kind < <("$LOCATE" "$T/good" /big cluster 0)
[ "$kind" = 7 ] || fail "big's cluster 0 is not packed (kind $kind)"
# one reference too many: deleting both files that use it leaves the item
"$CORRUPT" "$T/bad" pack-refs big 0 3 >/dev/null
czfs_mount "$T/bad" "$T/mnt"
rm "$T/mnt/big" "$T/mnt/big.copy"
czfs_umount "$T/mnt"
[ "$("$LOCATE" "$T/bad" - used "$blk" "$nb")" = "$nb" ] ||
	fail "the unused pack's $nb blocks are not all in use before the repair"
unused="pack at block $blk: 1 references, no cluster uses it"
# a damaged PACK item (no references) makes every count doubtful: kept
cp "$T/bad" "$T/bad2"
"$CORRUPT" "$T/bad2" pack-refs a/f5 0 0 >/dev/null
expect_fsck "$T/bad2" 4 "$unused" -y
expect_fsck "$T/bad2" 4 "$unused" -n
[ "$("$LOCATE" "$T/bad2" - used "$blk" "$nb")" = "$nb" ] ||
	fail "an unused pack's blocks freed while a PACK item was damaged"
expect_fsck "$T/bad" 4 "$unused" -n
grep -q "blocks $blk-$((blk + nb - 1)) marked used but not referenced" <<<"$out" ||
	fail "the unused pack's blocks are not the leak to free: $out"
expect_fsck "$T/bad" 1 "no cluster uses it" -y
expect_fsck "$T/bad" 0 clean -n
[ "$("$LOCATE" "$T/bad" - used "$blk" "$nb")" = 0 ] ||
	fail "the deleted pack's blocks $blk+$nb are still in use"
czfs_mount "$T/bad" "$T/mnt"
diff -r -x big -x big.copy "$T/src" "$T/mnt" >&2 ||
	fail "files differ after the unused PACK item was deleted"
cp "$T/src/big" "$T/mnt/big.new"	# may take the freed blocks
czfs_umount "$T/mnt"
expect_fsck "$T/bad" 0 clean -n
czfs_mount "$T/bad" "$T/mnt" -o ro
cmp "$T/src/big" "$T/mnt/big.new" || fail "a file written after the repair differs"
czfs_umount "$T/mnt"

note "a damaged PACKED item (its range past its pack): an error"
cp "$T/good" "$T/bad"
"$CORRUPT" "$T/bad" poke a/f200 cluster 0 27 0x7f >/dev/null
expect_fsck "$T/bad" 4 "damaged cluster item 0" -n

note "damaged pack data: every file of that pack, and only those, fail"
cp "$T/good" "$T/bad"
read -r blk nb kind < <("$LOCATE" "$T/bad" /a/f3 cluster 0)
[ "$kind" = 7 ] || fail "a/f3 is not packed (kind $kind)"
at=$("$LOCATE" "$T/bad" /a/f3 payload 0)	# a sliced pack's, in its run
python3 - "$T/bad" $((at + 100)) <<'PY'
import sys
p, off = sys.argv[1], int(sys.argv[2])
with open(p, 'r+b') as f:
    f.seek(off); b = f.read(1); f.seek(off); f.write(bytes([b[0] ^ 0xff]))
PY
expect_fsck "$T/bad" 4 "a/f3\|data damaged" -n
czfs_mount "$T/bad" "$T/mnt" -o ro
! cat "$T/mnt/a/f3" >/dev/null 2>&1 || fail "a file of the damaged pack read"
cmp "$T/src/big" "$T/mnt/big" || fail "big (not in that pack) differs"
czfs_umount "$T/mnt"
