#!/bin/bash
# Damaged images: the mount is refused with a clear message, or the
# operation that meets the damage fails with EIO and a log line, while the
# rest of the tree stays readable.  The daemon never crashes or hangs.
. "$top_srcdir/tests/integration/lib.sh"
require_fuse
LOCATE="$top_builddir/tests/czfs-locate"
DUMP="$top_builddir/dump/dump.czfs"

sample_files "$T/src" "text docs"
mkdir -p "$T/src/many"
(cd "$T/src/many" && seq -f 'f%04g' 1 3000 | xargs touch)
# plain leaves, to damage one leaf; leaf packs (the default) below
"$MKFS" -q -C 16k --plain-leaves -d "$T/src" "$T/good"
"$MKFS" -q -C 16k -d "$T/src" "$T/packed"

# flip BYTE at byte offset OFF of image copy IMG (xor 0xff)
flip() {
	python3 - "$1" "$2" <<'PY'
import sys
p, off = sys.argv[1], int(sys.argv[2])
with open(p, 'r+b') as f:
    f.seek(off); b = f.read(1); f.seek(off); f.write(bytes([b[0] ^ 0xff]))
PY
}

# expect_refused IMAGE MESSAGE: czfs-fuse fails, says MESSAGE, mounts nothing
expect_refused() {
	local out st=0
	mkdir -p "$T/mnt"
	out=$(timeout 120 "$FUSE" "$1" "$T/mnt" -f 2>&1) || st=$?	# hang guard
	[ "$st" -ne 0 ] || fail "damaged image $1 mounted"
	[ "$st" -ne 124 ] || fail "czfs-fuse hung on $1"
	[ "$st" -lt 128 ] || fail "czfs-fuse crashed on $1 (status $st): $out"
	! mountpoint -q "$T/mnt" || fail "$T/mnt is mounted"
	grep -qi -- "$2" <<<"$out" || fail "message for $1: '$out' lacks '$2'"
	note "refused: $(tail -2 <<<"$out" | head -1)"
}

note "truncated image"
cp "$T/good" "$T/bad"
truncate -s $(( $(stat -c %s "$T/good") / 2 )) "$T/bad"
expect_refused "$T/bad" "truncated"
truncate -s 6000 "$T/bad"
expect_refused "$T/bad" "truncated\|too small\|checkpoint"

note "superblock"
cp "$T/good" "$T/bad"; flip "$T/bad" 0
expect_refused "$T/bad" "not a czfs image"
cp "$T/good" "$T/bad"; flip "$T/bad" 40
expect_refused "$T/bad" "superblock checksum"

note "checkpoint"
cp "$T/good" "$T/bad"; flip "$T/bad" $((4096 * 2 + 100))
expect_refused "$T/bad" "checkpoint"

note "root node"
cp "$T/good" "$T/bad"; flip "$T/bad" $(( $("$LOCATE" "$T/good" - root) * 4096 + 300 ))
expect_refused "$T/bad" "checksum"

note "the leaf holding one file's inode"
leaf=$("$LOCATE" "$T/good" many/f2500 leaf)
rootleaf=$("$LOCATE" "$T/good" text leaf)
[ "$leaf" != "$rootleaf" ] || fail "test tree too small: one leaf"
cp "$T/good" "$T/bad"; flip "$T/bad" $(( leaf * 4096 + 2000 ))
czfs_mount "$T/bad" "$T/mnt"
! stat "$T/mnt/many/f2500" 2>"$T/err" || fail "stat of a damaged inode worked"
grep -q "Input/output error" "$T/err" || fail "stat error: $(cat "$T/err")"
cmp "$T/src/text" "$T/mnt/text" || fail "an undamaged file became unreadable"
log_has "$T/mnt" "checksum" || fail "no log line for the damaged node"
czfs_umount "$T/mnt"

note "a compressed cluster (a slice of a run, as mkfs lays them)"
read -r blk nblocks kind < <("$LOCATE" "$T/good" text cluster 3)
[ "$kind" = 8 ] || fail "cluster 3 of text is not a slice (kind $kind)"
cp "$T/good" "$T/bad"; flip "$T/bad" $(( $("$LOCATE" "$T/good" text payload 3) + 100 ))
czfs_mount "$T/bad" "$T/mnt"
! cat "$T/mnt/text" >/dev/null 2>"$T/err" || fail "read of a damaged cluster worked"
grep -q "Input/output error" "$T/err" || fail "read error: $(cat "$T/err")"
cmp <(head -c 49152 "$T/src/text") <(head -c 49152 "$T/mnt/text") ||
	fail "clusters before the damaged one"
cmp <(tail -c +65537 "$T/src/text") <(tail -c +65537 "$T/mnt/text") ||
	fail "clusters after the damaged one"
cmp "$T/src/docs" "$T/mnt/docs" || fail "another file"
log_has "$T/mnt" "block $blk" || fail "no log line naming block $blk"
czfs_umount "$T/mnt"

note "a damaged leaf pack fails the leaves it holds, not the others"
pack=$("$LOCATE" "$T/packed" many/f2500 leaf)
textpack=$("$LOCATE" "$T/packed" text leaf)
[ "$pack" != "$textpack" ] || fail "test tree too small: one leaf pack"
"$DUMP" "$T/packed" | grep -q "leaf_packs: [1-9]" || fail "no leaf packs"
cp "$T/packed" "$T/bad"; flip "$T/bad" $(( pack * 4096 + 40 ))	# in the payload
czfs_mount "$T/bad" "$T/mnt"
! stat "$T/mnt/many/f2500" 2>"$T/err" || fail "stat in a damaged leaf pack worked"
grep -q "Input/output error" "$T/err" || fail "stat error: $(cat "$T/err")"
cmp "$T/src/text" "$T/mnt/text" || fail "a file outside the damaged pack became unreadable"
log_has "$T/mnt" "leaf pack at $pack: bad checksum" ||
	fail "no log line for the damaged pack"
czfs_umount "$T/mnt"

note "random byte flips in metadata never crash or hang"
meta_start=$("$LOCATE" "$T/good" many/f0001 leaf)
size_blocks=$(( $(stat -c %s "$T/good") / 4096 ))
pmeta_start=$("$LOCATE" "$T/packed" many/f0001 leaf)
psize_blocks=$(( $(stat -c %s "$T/packed") / 4096 ))
for i in $(seq 1 "${CZFS_FLIPS:-30}"); do
	img=$T/good start=$meta_start end=$size_blocks
	if [ $((i % 3)) = 0 ]; then	# a third of them in a packed image
		img=$T/packed start=$pmeta_start end=$psize_blocks
	fi
	cp "$img" "$T/bad"
	off=$(( (start + RANDOM % (end - start)) * 4096 + RANDOM % 4096 ))
	flip "$T/bad" "$off"
	"$FUSE" "$T/bad" "$T/mnt" -f 2>"$T/flip.log" &
	pid=$!
	for _ in $(seq 1 600); do	# 60 s, a hang guard
		mountpoint -q "$T/mnt" || kill -0 $pid 2>/dev/null || break
		mountpoint -q "$T/mnt" && break
		sleep 0.1
	done
	if mountpoint -q "$T/mnt"; then
		st=0
		timeout 120 find "$T/mnt" -type f -exec cat {} + >/dev/null 2>&1 || st=$?
		[ "$st" -ne 124 ] || fail "reading hung after a flip at $off"
		ls -lR "$T/mnt" >/dev/null 2>&1 || true
		fusermount3 -u "$T/mnt"
	fi
	st=0
	wait $pid || st=$?
	[ "$st" -lt 128 ] || { cat "$T/flip.log" >&2; fail "daemon crashed after a flip at $off"; }
	if [ "$st" -ne 0 ] && grep -q "runtime error\|AddressSanitizer" "$T/flip.log"; then
		cat "$T/flip.log" >&2; fail "sanitizer report after a flip at $off"
	fi
done
