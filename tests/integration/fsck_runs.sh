#!/bin/bash
# Runs of slices (compressed clusters laid back to back, czfs(5) "Sliced
# clusters"): mkfs.czfs lays them, --no-slice does not; the image is
# smaller and reads back; each kind of damage to a run's accounting is
# named by fsck.czfs with the exact exit code and repaired by -y (a wrong
# count, a wrong live count, a lost PACK item: its blocks kept, the item
# made again); through a mount, rewriting, truncating and deleting the
# files frees the runs with their last slice, and a file written in order
# is laid in runs of its own.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/fscklib.sh"
require_fuse
STAT="$top_builddir/src/fuse/czfs-stat"

mkdir -p "$T/src/d"
head -c 2000000 < <(cat /usr/include/*.h /usr/include/*/*.h 2>/dev/null) >"$T/text"
for i in 1 2 3 4 5; do	# several clusters each, not whole (a packed tail)
	head -c $((i * 150000 + 777)) "$T/text" | tail -c $((i * 120000 + 777)) >"$T/src/d/f$i"
done
head -c 1000000 "$T/text" >"$T/src/big"
"$MKFS" -q -s 64M -d "$T/src" "$T/good"
"$MKFS" -q -s 64M --no-slice -d "$T/src" "$T/noslice"
expect_fsck "$T/good" 0 clean -n
expect_fsck "$T/noslice" 0 clean -n

note "mkfs lays compressed clusters back to back: fewer blocks, same files"
read -r blk nb kind < <("$LOCATE" "$T/good" /big cluster 0)
[ "$kind" = 8 ] || fail "big's cluster 0 is not a slice (kind $kind)"
read -r _ _ kind < <("$LOCATE" "$T/noslice" /big cluster 0)
[ "$kind" = 2 ] || fail "--no-slice: big's cluster 0 is not compressed (kind $kind)"
used() { "$FSCK" -n "$1" | sed -n 's|.*, \([0-9]*\)/[0-9]* blocks used.*|\1|p'; }
u_slice=$(used "$T/good") u_plain=$(used "$T/noslice")
note "blocks used: $u_slice with runs, $u_plain without"
[ "$u_slice" -lt "$u_plain" ] || fail "runs saved nothing: $u_slice against $u_plain blocks"
czfs_mount "$T/good" "$T/mnt" -o ro
diff -r "$T/src" "$T/mnt" >&2 || fail "files differ"
czfs_umount "$T/mnt"

# run_of PATH IDX: "blkaddr refs" of the run cluster IDX of PATH is in
run_of() {
	cp "$T/good" "$T/probe"
	"$CORRUPT" "$T/probe" pack-refs "$1" "$2" 1
}
read -r run refs < <(run_of big 0)
[ "$refs" -ge 2 ] || fail "big's run holds $refs slices, want several"

note "a wrong reference count of a run: fixable"
cp "$T/good" "$T/bad"
"$CORRUPT" "$T/bad" pack-refs big 0 $((refs + 3)) >/dev/null
expect_fsck "$T/bad" 4 "run at block $run: $((refs + 3)) references, $refs clusters use it" -n
expect_fsck "$T/bad" 1 "references" -y
expect_fsck "$T/bad" 0 clean -n

note "a wrong live count of a run: fixable"
cp "$T/good" "$T/bad"
read -r _ live < <("$CORRUPT" "$T/bad" run-live big 0 1)
expect_fsck "$T/bad" 4 "run at block $run: 1 live bytes, its slices hold $live" -n
expect_fsck "$T/bad" 1 "live bytes" -y
expect_fsck "$T/bad" 0 clean -n
cp "$T/good" "$T/bad"
"$CORRUPT" "$T/bad" run-live big 0 $((live + 5000000)) >/dev/null
expect_fsck "$T/bad" 4 "damaged PACK item" -n

note "a lost run item: its blocks kept, the item made again"
cp "$T/good" "$T/bad"
"$CORRUPT" "$T/bad" pack-drop big 0 >/dev/null
expect_fsck "$T/bad" 4 "run at block $run: $refs clusters use it, no PACK item" -n
grep -qi "leak" <<<"$out" && fail "a lost run item's blocks taken for leaked: $out"
expect_fsck "$T/bad" 1 "no PACK item" -y
expect_fsck "$T/bad" 0 clean -n
czfs_mount "$T/bad" "$T/mnt" -o ro
diff -r "$T/src" "$T/mnt" >&2 || fail "files differ after the run item was made again"
czfs_umount "$T/mnt"

note "a damaged slice: EIO for its file only, fsck names it"
cp "$T/good" "$T/bad"
flip "$T/bad" $(( $("$LOCATE" "$T/good" big payload 1) + 50 ))
expect_fsck "$T/bad" 4 "cluster 1 (block" -n
czfs_mount "$T/bad" "$T/mnt" -o ro
! cat "$T/mnt/big" >/dev/null 2>&1 || fail "a damaged slice read"
cmp <(head -c 65536 "$T/src/big") <(head -c 65536 "$T/mnt/big") ||
	fail "the slice before the damaged one"
diff -r "$T/src/d" "$T/mnt/d" >&2 || fail "other files differ"
czfs_umount "$T/mnt"

note "through a mount: rewrite, truncate, delete; runs freed with their last slice"
empty_used=$("$MKFS" -q -f -s 64M "$T/empty" && used "$T/empty")
cp "$T/good" "$T/rw"
czfs_mount "$T/rw" "$T/mnt"
cp "$T/src/d/f1" "$T/mnt/d/f2"		# rewritten whole
truncate -s 70000 "$T/mnt/d/f3"		# cut inside its second cluster
dd if=/dev/urandom of="$T/mnt/d/f4" bs=4096 count=2 seek=20 conv=notrunc status=none
rm "$T/mnt/d/f5"
cp "$T/src/d/f1" "$T/model2"
truncate -s 70000 "$T/model3"; head -c 70000 "$T/src/d/f3" >"$T/model3"
czfs_umount "$T/mnt"
expect_fsck "$T/rw" 0 clean -n
czfs_mount "$T/rw" "$T/mnt"
cmp "$T/model2" "$T/mnt/d/f2" || fail "the rewritten file"
cmp "$T/model3" "$T/mnt/d/f3" || fail "the truncated file"
cmp "$T/src/d/f1" "$T/mnt/d/f1" || fail "a file sharing their runs"
cmp "$T/src/big" "$T/mnt/big" || fail "big"
rm -rf "${T:?}/mnt/"*
czfs_umount "$T/mnt"
expect_fsck "$T/rw" 0 clean -n
[ "$("$DUMP" "$T/rw" | grep -c '^  runs:')" = 0 ] || fail "runs left after deleting every file"
[ "$(used "$T/rw")" -le $((empty_used + 8)) ] ||
	fail "$(used "$T/rw") blocks used after deleting everything, an empty image uses $empty_used"

note "a file written through the mount in order is laid in runs too"
"$MKFS" -q -f -s 64M "$T/w"
czfs_mount "$T/w" "$T/mnt"
head -c 1500000 "$T/text" >"$T/mnt/seq"
sync "$T/mnt/seq"
slices=$("$STAT" "$T/mnt" | awk '$1 == "writeback.slices" { print $2 }')
[ "${slices:-0}" -ge 2 ] || fail "writeback laid $slices slices"
czfs_umount "$T/mnt"
expect_fsck "$T/w" 0 clean -n
[ "$("$DUMP" "$T/w" /seq | grep -c 'kind sliced')" -ge 2 ] || fail "seq has no slices"
czfs_mount "$T/w" "$T/mnt" -o ro
cmp <(head -c 1500000 "$T/text") "$T/mnt/seq" || fail "seq differs"
czfs_umount "$T/mnt"
