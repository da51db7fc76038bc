#!/bin/bash
# Each kind of damage in turn, in a copy of a good image: fsck.czfs -n
# exits with exactly the expected code and names the problem; what is
# repairable, fsck -y repairs (exit 1) and fsck -n then finds clean (0);
# the mount refuses the image, or fails the damaged file with EIO while
# the rest reads.  Then random byte flips: fsck (-n, --extract, -y) and
# dump never crash or hang, and report no sanitizer error.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/fscklib.sh"
require_fuse

sample_files "$T/src" "text docs"
mkdir -p "$T/src/many" "$T/src/d1/d2"
(cd "$T/src/many" && seq -f 'f%04g' 1 3000 | xargs touch)
echo x >"$T/src/d1/d2/f"
echo single >"$T/src/single"
head -c 40000 /dev/urandom >"$T/src/rand"
setfattr -n user.s -v small "$T/src/d1"
setfattr -n user.big -v "0x$(head -c 3000 /dev/urandom | xxd -p | tr -d '\n')" "$T/src/single"
# room to grow: repairs are transactions and need free blocks
# plain leaves, to damage one leaf; leaf packs (the default) further down
"$MKFS" -q -s 64M -C 16k --plain-leaves -d "$T/src" "$T/good"
"$MKFS" -q -s 64M -C 16k -d "$T/src" "$T/packed"
[ "$("$LOCATE" "$T/good" - rootlevel)" -ge 2 ] || fail "test tree too small: no internal node below the root"


flip_block() {	# IMAGE BLOCK BYTE
	flip "$1" $(( $2 * 4096 + $3 ))
}


# expect_refused IMAGE PATTERN: czfs-fuse fails, says PATTERN
expect_refused() {
	local o s=0
	mkdir -p "$T/mnt"
	o=$(timeout 120 "$FUSE" "$1" "$T/mnt" -f 2>&1) || s=$?	# hang guard
	[ "$s" -ne 0 ] || fail "damaged image $1 mounted"
	[ "$s" -ne 124 ] && [ "$s" -lt 128 ] || fail "czfs-fuse status $s on $1"
	! mountpoint -q "$T/mnt" || fail "$T/mnt is mounted"
	grep -qi -- "$2" <<<"$o" || fail "mount message '$o' lacks '$2'"
}

# expect_eio CMD...: CMD fails with EIO on the mount
expect_eio() {
	! "$@" >/dev/null 2>"$T/err" || fail "'$*' worked on damaged data"
	grep -q "Input/output error" "$T/err" || fail "'$*': $(cat "$T/err")"
}

# rest_reads [FILE...]: the rest of the tree reads back
rest_reads() {
	local f
	for f in "${@:-docs}" d1/d2/f; do
		cmp "$T/src/$f" "$T/mnt/$f" || fail "$f unreadable"
	done
}

# repairs IMAGE: -y repairs everything (1), then -n finds it clean (0)
repairs() {
	expect_fsck "$1" 1 "repaired" -y
	expect_fsck "$1" 0 "clean"
}

damage() {	# NAME CMD...: a fresh copy of the image, damaged by CMD
	note "$1"
	shift
	cp "$T/good" "$T/bad"
	"$@" >/dev/null || fail "damage '$*' failed"
}

expect_fsck "$T/good" 0 "clean"

# ---- structures: fsck reports, mount refuses or fails the damaged part ----

damage "superblock field (block_shift, checksum fixed)" \
	"$CORRUPT" "$T/bad" sb-byte 24 13
expect_fsck "$T/bad" 4 "bad superblock block_shift 13"
expect_refused "$T/bad" "block_shift"

damage "the only checkpoint" flip_block "$T/bad" 2 100
expect_fsck "$T/bad" 4 "no valid checkpoint"
expect_refused "$T/bad" "checkpoint"

damage "the older of two checkpoints" "$CORRUPT" "$T/bad" commit
flip_block "$T/bad" 2 100
expect_fsck "$T/bad" 0 "warning: checkpoint in block 2 is damaged"
czfs_mount "$T/bad" "$T/mnt"
rest_reads
czfs_umount "$T/mnt"

damage "a leaf" flip_block "$T/bad" "$("$LOCATE" "$T/good" many/f2500 leaf)" 2000
expect_fsck "$T/bad" 4 "node [0-9]*: damaged; the items from key"
grep -q "bad checksum" <<<"$out" || fail "no checksum message: $out"
before=$(grep "^fsck.czfs: [a-z]" <<<"$out" | grep -v "problem")
[ -n "$before" ] || fail "no problem lines: $out"
czfs_mount "$T/bad" "$T/mnt"
expect_eio stat "$T/mnt/many/f2500"
cmp "$T/src/text" "$T/mnt/text" || fail "text unreadable"
# writes: through the damage they fail, elsewhere they work and commit
expect_eio touch "$T/mnt/many/f2500"
expect_eio rm "$T/mnt/many/f2500"
echo new >"$T/mnt/d1/new" || fail "write beside the damage"
czfs_umount "$T/mnt"
# the damage did not spread: the same error, nothing else
expect_fsck "$T/bad" 4 "node [0-9]*: damaged; the items from key"
[ "$(grep "^fsck.czfs: [a-z]" <<<"$out" | grep -v "problem")" = "$before" ] ||
	fail "the problems changed after writes beside the damage: $out"
czfs_mount "$T/bad" "$T/mnt" -o ro
cmp <(echo new) "$T/mnt/d1/new" || fail "the write beside the damage is lost"
czfs_umount "$T/mnt"

note "a leaf pack"
# one in the middle: new inodes go to the last leaf, d1's entries to its own
pack=$("$LOCATE" "$T/packed" many/f1000 leaf)
for other in text d1 many/f0001 many/f3000; do
	[ "$pack" != "$("$LOCATE" "$T/packed" "$other" leaf)" ] ||
		fail "test tree too small: $other is in the pack of many/f1000"
done
expect_fsck "$T/packed" 0 "clean"
cp "$T/packed" "$T/bad"
flip_block "$T/bad" "$pack" 40	# in the payload: a zstd pack may end before 3000
expect_fsck "$T/bad" 4 "leaf pack at $pack: bad checksum"
grep -q "node [0-9]*: damaged; the items from key" <<<"$out" || fail "no lost-items line: $out"
before=$(grep "^fsck.czfs: [a-z]" <<<"$out" | grep -v "problem")
czfs_mount "$T/bad" "$T/mnt"
expect_eio stat "$T/mnt/many/f1000"
cmp "$T/src/text" "$T/mnt/text" || fail "text unreadable"
# changes under the same parents store the other packed leaves plain;
# the damaged pack stays as it is, still referenced
for i in $(seq 1 50); do echo "$i" >"$T/mnt/d1/w$i" || fail "write $i beside the damaged pack"; done
rm -f "$T/mnt/many/f0001" || fail "a change beside the damaged pack"
czfs_umount "$T/mnt"
expect_fsck "$T/bad" 4 "leaf pack at $pack: bad checksum"
[ "$(grep "^fsck.czfs: [a-z]" <<<"$out" | grep -v "problem")" = "$before" ] ||
	fail "the problems changed after writes beside the damaged pack: $out"
czfs_mount "$T/bad" "$T/mnt" -o ro
cmp <(echo 50) "$T/mnt/d1/w50" || fail "a write beside the damaged pack is lost"
[ ! -e "$T/mnt/many/f0001" ] || fail "the unlink beside the damaged pack is lost"
czfs_umount "$T/mnt"

node=$("$LOCATE" "$T/good" many/f2500 node 1)
[ "$node" != "$("$LOCATE" "$T/good" - root)" ] || fail "node 1 is the root"
damage "an internal node (not the root)" flip_block "$T/bad" "$node" 1000
expect_fsck "$T/bad" 4 "node $node: damaged"
czfs_mount "$T/bad" "$T/mnt"
expect_eio stat "$T/mnt/many/f2500"
cmp "$T/src/text" "$T/mnt/text" || fail "text unreadable"
cmp "$T/src/docs" "$T/mnt/docs" || fail "docs unreadable"
czfs_umount "$T/mnt"

damage "the root node" flip_block "$T/bad" "$("$LOCATE" "$T/good" - root)" 300
expect_fsck "$T/bad" 4 "damaged beyond checking"
expect_refused "$T/bad" "checksum"

damage "an inode item field (file type)" \
	"$CORRUPT" "$T/bad" poke many/f2500 inode - 1 0xf0
expect_fsck "$T/bad" 4 "inode [0-9]*: damaged INODE item"
grep -q "unknown file type" <<<"$out" || fail "no field message: $out"
czfs_mount "$T/bad" "$T/mnt"
expect_eio stat "$T/mnt/many/f2500"
rest_reads
czfs_umount "$T/mnt"

damage "a directory entry (name length 0)" \
	"$CORRUPT" "$T/bad" poke d1 dentry d2 8 0
expect_fsck "$T/bad" 4 "malformed entry item"
czfs_mount "$T/bad" "$T/mnt"
expect_eio ls "$T/mnt/d1"
cmp "$T/src/docs" "$T/mnt/docs" || fail "docs unreadable"
czfs_umount "$T/mnt"

damage "an xattr record (unknown flag)" \
	"$CORRUPT" "$T/bad" poke d1 xattr user.s 0 0x80
expect_fsck "$T/bad" 4 "malformed xattr item"
czfs_mount "$T/bad" "$T/mnt"
expect_eio getfattr -n user.s "$T/mnt/d1"
rest_reads
czfs_umount "$T/mnt"

damage "an external xattr value" \
	flip_block "$T/bad" "$("$LOCATE" "$T/good" single xattr user.big)" 10
expect_fsck "$T/bad" 4 "xattr 'user.big': value at block [0-9]*: checksum mismatch"
czfs_mount "$T/bad" "$T/mnt"
expect_eio getfattr -n user.big "$T/mnt/single"
rest_reads
czfs_umount "$T/mnt"

damage "a cluster item (unknown kind)" \
	"$CORRUPT" "$T/bad" poke text cluster 3 0 9
expect_fsck "$T/bad" 4 "damaged cluster item 3"
czfs_mount "$T/bad" "$T/mnt"
expect_eio cat "$T/mnt/text"
rest_reads
czfs_umount "$T/mnt"

read -r blk nblk kind < <("$LOCATE" "$T/good" text cluster 3)
[ "$kind" = 8 ] || fail "cluster 3 of text is not a slice (kind $kind)"
damage "a compressed cluster's payload (a slice)" \
	flip "$T/bad" $(( $("$LOCATE" "$T/good" text payload 3) + 100 ))
expect_fsck "$T/bad" 4 "cluster 3 (block $blk): data damaged"
expect_fsck "$T/bad" 0 "clean" --fast
czfs_mount "$T/bad" "$T/mnt"
expect_eio cat "$T/mnt/text"
rest_reads
# a write into the damaged cluster needs its old data: EIO; elsewhere fine
expect_eio dd if=/dev/zero of="$T/mnt/text" bs=100 count=1 \
	seek=$(( 3 * 16384 / 100 + 1 )) conv=notrunc status=none
dd if=/dev/zero of="$T/mnt/text" bs=4096 count=1 conv=notrunc status=none ||
	fail "write to an undamaged cluster"
czfs_umount "$T/mnt"
expect_fsck "$T/bad" 4 "cluster 3 (block $blk): data damaged"

read -r rblk rnblk rkind < <("$LOCATE" "$T/good" rand cluster 0)
[ "$rkind" = 1 ] && [ "$rnblk" -ge 3 ] ||
	fail "cluster 0 of rand is not raw (kind $rkind, $rnblk blocks)"
damage "a block of a block-mapped cluster" \
	"$CORRUPT" "$T/bad" blockmap rand 0
expect_fsck "$T/bad" 0 "clean"
flip_block "$T/bad" $((rblk + 2)) 7
expect_fsck "$T/bad" 4 "cluster 0 (block-mapped): data damaged"
czfs_mount "$T/bad" "$T/mnt"
expect_eio cat "$T/mnt/rand"
rest_reads
czfs_umount "$T/mnt"

damage "a space-map bitmap block" \
	flip_block "$T/bad" "$("$LOCATE" "$T/good" - bitmap 0)" 10
expect_fsck "$T/bad" 4 "space map damaged"
grep -q "bitmap block .* bad checksum" <<<"$out" || fail "no bitmap message: $out"
expect_fsck "$T/bad" 4 "no repairs" -y
# a writable mount needs the map: it refuses the image
expect_refused "$T/bad" "bitmap block .* bad checksum"
# read-only mounts do not load the map: everything reads
czfs_mount "$T/bad" "$T/mnt" -o ro
rest_reads text docs
czfs_umount "$T/mnt"

# ---- semantic damage, made through transactions: fsck -y repairs it -------

damage "a leaked block" "$CORRUPT" "$T/bad" leak 3
expect_fsck "$T/bad" 4 "blocks [0-9]*-[0-9]* marked used but not referenced (leaked)"
repairs "$T/bad"

damage "a used block marked free" "$CORRUPT" "$T/bad" unmark text 3
if [ "$nblk" = 1 ]; then span="block $blk"; else span="blocks $blk-$((blk + nblk - 1))"; fi
expect_fsck "$T/bad" 4 "$span referenced but marked free"
repairs "$T/bad"

damage "a wrong link count" "$CORRUPT" "$T/bad" nlink single 5
expect_fsck "$T/bad" 4 "link count 5, 1 entry name it"
repairs "$T/bad"
czfs_mount "$T/bad" "$T/mnt"
[ "$(stat -c %h "$T/mnt/single")" = 1 ] || fail "link count not repaired"
rest_reads
czfs_umount "$T/mnt"

damage "a wrong directory link count" "$CORRUPT" "$T/bad" nlink d1 7
expect_fsck "$T/bad" 4 "directory [0-9]*: link count 7, expected 3"
repairs "$T/bad"

damage "a wrong blocks count" "$CORRUPT" "$T/bad" blocks single 99
expect_fsck "$T/bad" 4 "blocks 99, it stores 1"
repairs "$T/bad"

damage "a wrong parent" "$CORRUPT" "$T/bad" parent d1/d2 1
expect_fsck "$T/bad" 4 "parent 1, but directory [0-9]* names it"
repairs "$T/bad"

damage "a wrong used count" "$CORRUPT" "$T/bad" used-count -1
expect_fsck "$T/bad" 4 "used_blocks [0-9]*, the space map marks"
expect_refused "$T/bad" "blocks used, checkpoint says"
czfs_mount "$T/bad" "$T/mnt" -o ro
rest_reads
czfs_umount "$T/mnt"
repairs "$T/bad"

damage "clusters past the end (a truncate that raced a writeback)" \
	"$CORRUPT" "$T/bad" size text 32768
expect_fsck "$T/bad" 4 "inode [0-9]*: cluster 2 (16384 bytes) past the end of the file (32768 bytes)"
expect_fsck "$T/bad" 1 "repaired" -y
expect_fsck "$T/bad" 0 "clean"
czfs_mount "$T/bad" "$T/mnt"
cmp <(head -c 32768 "$T/src/text") "$T/mnt/text" || fail "text's first two clusters"
# the dropped data does not come back when the file grows again
truncate -s 65536 "$T/mnt/text"
cmp <(head -c 32768 "$T/src/text"; head -c 32768 /dev/zero) "$T/mnt/text" ||
	fail "stale data past the old end came back"
czfs_umount "$T/mnt"
expect_fsck "$T/bad" 0 "clean"

damage "a missing feature bit" "$CORRUPT" "$T/bad" sb-byte 16 0
expect_fsck "$T/bad" 4 "lz4 clusters, but no lz4 feature bit"
repairs "$T/bad"
"$DUMP" -j -S "$T/bad" | python3 -c 'import json, sys
sys.exit(json.load(sys.stdin)["superblock"]["feature_incompat"] & 1 == 0)' ||
	fail "the lz4 bit is not back in the superblock"

damage "a wrong inode count" "$CORRUPT" "$T/bad" inode-count 2
expect_fsck "$T/bad" 4 "inode_count [0-9]*, the tree holds"
repairs "$T/bad"

damage "a lost inode" "$CORRUPT" "$T/bad" unlink d1/d2/f
expect_fsck "$T/bad" 4 "inode [0-9]* (file) is not reachable from the root"
repairs "$T/bad"
ino=$("$DUMP" -j "$T/bad" lost+found | python3 -c \
	'import json,sys; print(json.load(sys.stdin)["entries"][0]["name"])')
czfs_mount "$T/bad" "$T/mnt"
cmp "$T/src/d1/d2/f" "$T/mnt/lost+found/$ino" || fail "lost file not in lost+found"
czfs_umount "$T/mnt"

damage "a lost directory" "$CORRUPT" "$T/bad" unlink d1
expect_fsck "$T/bad" 4 "(directory) is not reachable from the root"
repairs "$T/bad"

damage "an orphan (unlinked while open)" "$CORRUPT" "$T/bad" orphan d1/d2/f
expect_fsck "$T/bad" 0 "is an orphan"

# ---- random byte flips over the metadata: never a crash or a hang --------

# run_dump ARGS...: dump never crashes, hangs or trips a sanitizer
run_dump() {
	local o s=0
	o=$(timeout 60 "$DUMP" "$@" 2>&1 >/dev/null) || s=$?
	[ "$s" -ne 124 ] && [ "$s" -lt 128 ] ||
		fail "dump $* status $s after a flip at $off: $o"
	! grep -q "runtime error\|AddressSanitizer" <<<"$o" ||
		fail "sanitizer report from dump $* after a flip at $off: $o"
}

note "random byte flips in metadata"
tmpfs_mount "$T/xt"
"$DUMP" -j "$T/good" >"$T/stats.json"
read -r meta_start size_blocks < <(python3 -c '
import json, sys
b = json.load(open(sys.argv[1]))["statistics"]["blocks"]
print(b["image"] - b["tree_nodes"] - b["space_map"], b["image"])' "$T/stats.json")
for i in $(seq 1 "${CZFS_FLIPS:-25}"); do
	cp "$T/good" "$T/bad"
	if [ $((i % 5)) = 0 ]; then	# the superblock and checkpoints too
		off=$(( RANDOM % (3 * 4096) ))
	else
		off=$(( (meta_start + RANDOM % (size_blocks - meta_start)) * 4096 + RANDOM % 4096 ))
	fi
	flip "$T/bad" "$off"
	run_fsck "$T/bad"
	run_dump "$T/bad"
	run_dump -j "$T/bad"
	run_dump -j "$T/bad" many/f0100
	run_dump "$T/bad" d1
	rm -rf "$T/xt/x"
	run_fsck "$T/bad" --extract "$T/xt/x"
	run_fsck "$T/bad" -y
done
