#!/bin/bash
# st_blocks never lies (issue 11): a file whose data lives inline in the
# metadata counts its stored payload rounded up to 512-byte sectors, for
# every inline size class (raw 1..2048 bytes, compressed 4 KiB and 64 KiB
# clusters, a file of many clusters), written through the mount and
# by mkfs -d; the count survives a remount and fsck agrees.  GNU tar
# --sparse and cp --sparse=always copy such files byte for byte.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/rwlib.sh"
require_fuse
DUMP="$top_builddir/dump/dump.czfs"

# repeat TEXT BYTES: TEXT over and over, BYTES of it (compresses well).
repeat() {
	(set +o pipefail; yes "$1" | head -c "$2")
}

# make_files DIR: the size classes, named by what they should be stored as.
make_files() {
	local d=$1 n
	mkdir -p "$d"
	# no zero bytes: a raw.1 of one zero byte (1 in 256) is all zeros,
	# stored as a hole, with no inline bytes to count
	for n in 1 100 511 512 513 2047 2048; do
		head -c "$n" /dev/urandom | tr '\0' '\1' >"$d/raw.$n"
	done
	head -c 2049 /dev/urandom >"$d/block.2049"
	repeat 'czfs inline data' 4096 >"$d/zip.4k"
	repeat 'czfs inline data' 65536 >"$d/zip.64k"
	repeat 'many clusters' 1048576 >"$d/many.1m"
	{ head -c 66000 /dev/urandom; repeat tail 70000; } >"$d/mixed"
}

# inode_field IMAGE PATH FIELD: a field of dump.czfs -j's inode.
inode_field() {
	"$DUMP" -j "$1" "$2" | python3 -c \
		'import json, sys; print(json.load(sys.stdin)["inode"][sys.argv[1]])' "$3"
}

# check_blocks IMAGE DIR: with IMAGE unmounted, each file's stored counts;
# then mounted at $M, st_blocks = blocks * 8 + ceil(inline_bytes / 512).
check_blocks() {
	local img=$1 dir=$2 f name b inl want got
	declare -A expect=()
	for f in "$T/src"/*; do
		name=$(basename "$f")
		b=$(inode_field "$img" "$dir/$name" blocks)
		inl=$(inode_field "$img" "$dir/$name" inline_bytes)
		case $name in
		raw.*) [ "$b" = 0 ] && [ "$inl" = "${name#raw.}" ] ||
			fail "$dir/$name: blocks $b inline_bytes $inl, want 0 and ${name#raw.}" ;;
		zip.*) [ "$b" = 0 ] && [ "$inl" -gt 0 ] ||
			fail "$dir/$name: blocks $b inline_bytes $inl, want inline only" ;;
		block.*) [ "$b" = 1 ] && [ "$inl" = 0 ] ||
			fail "$dir/$name: blocks $b inline_bytes $inl, want one block" ;;
		mixed) [ "$b" -ge 1 ] && [ "$inl" -gt 0 ] ||
			fail "$dir/$name: blocks $b inline_bytes $inl, want both" ;;
		esac
		expect[$name]=$((b * 8 + (inl + 511) / 512))
	done
	czfs_mount "$img" "$M"
	for name in "${!expect[@]}"; do
		got=$(stat -c %b "$M/$dir/$name")
		want=${expect[$name]}
		[ "$got" = "$want" ] || fail "$dir/$name: st_blocks $got, want $want"
		[ "$got" -gt 0 ] || fail "$dir/$name: st_blocks 0 for a file with data"
		cmp -s "$T/src/$name" "$M/$dir/$name" || fail "$dir/$name: data differs"
	done
}

# archive_roundtrip DIR: tar --sparse and cp --sparse=always of $M/DIR.
archive_roundtrip() {
	local d=$1 out="$T/out.$1" f
	mkdir -p "$out/tar" "$out/cp"
	tar --sparse -C "$M/$d" -cf "$out/a.tar" .
	tar -C "$out/tar" -xf "$out/a.tar"
	cp -r --sparse=always "$M/$d/." "$out/cp/"
	for f in "$T/src"/*; do
		cmp "$f" "$out/tar/$(basename "$f")" ||
			fail "tar --sparse of $d/$(basename "$f") gave other bytes"
		cmp "$f" "$out/cp/$(basename "$f")" ||
			fail "cp --sparse=always of $d/$(basename "$f") gave other bytes"
	done
}

make_files "$T/src"

note "written through the mount, counted after writeback and a remount"
# the layout of tails inline and in blocks, so no packs at writeback
# (packed files' counts: rw_mpack.sh)
RW_MOUNT_OPTS+=(-o nopack)
rw_setup 256M
mkdir "$M/w"
cp "$T/src"/* "$M/w/"
for f in "$M"/w/*; do
	[ "$(stat -c %b "$f")" -gt 0 ] || fail "$f: st_blocks 0 before writeback"
done
sync
archive_roundtrip w
rw_umount
check_blocks "$RW_IMG" w
archive_roundtrip w

note "a rewrite changes the count: raw inline -> block -> inline again"
head -c 3000 /dev/urandom >"$M/w/raw.100"
sync
# the room set aside for dirty data shows until the attributes time out
# (60 s, a hang guard)
for i in $(seq 1 300); do
	[ "$(stat -c %b "$M/w/raw.100")" = 8 ] && break
	sleep 0.1
done
[ "$(stat -c %b "$M/w/raw.100")" = 8 ] || fail "rewritten to a block: st_blocks $(stat -c %b "$M/w/raw.100")"
head -c 100 /dev/urandom >"$T/src/raw.100"
cp "$T/src/raw.100" "$M/w/raw.100"
rw_umount
rw_fsck
check_blocks "$RW_IMG" w
rw_umount

note "made by mkfs -d"
mkdir -p "$T/tree"
cp -r "$T/src" "$T/tree/w"
# the layout of tails inline and in blocks (packs: mkfs_pack.sh)
"$MKFS" -q -s 64M --no-pack -d "$T/tree" "$T/img2"
check_blocks "$T/img2" w
archive_roundtrip w
czfs_umount "$M"
"$FSCK" -n "$T/img2" >"$T/fsck2.log" 2>&1 || { cat "$T/fsck2.log" >&2; fail "fsck of the mkfs image"; }

note "an image made before INLINE_BYTES: fsck -n is clean, fsck -y counts it"
CORRUPT="$top_builddir/tests/czfs-corrupt"
cp "$T/img2" "$T/old"
# as an older mkfs wrote it: no feature, inline_bytes 0 (offset 120)
for f in raw.100 raw.2048 zip.64k mixed; do
	for b in 120 121 122 123; do
		"$CORRUPT" "$T/old" poke "w/$f" inode - "$b" 0 >/dev/null
	done
done
"$CORRUPT" "$T/old" sb-byte 20 0 >/dev/null
[ "$(inode_field "$T/old" w/raw.100 inline_bytes)" = 0 ] || fail "the old image's field was not cleared"
"$FSCK" -n "$T/old" >"$T/fsck.old" 2>&1 || { cat "$T/fsck.old" >&2; fail "fsck -n of an old image is not clean"; }
"$FSCK" -y "$T/old" >"$T/fsck.up" 2>&1 || { cat "$T/fsck.up" >&2; fail "fsck -y of an old image: exit $?"; }
grep -q "INLINE_BYTES feature set, inline_bytes of 4 inodes counted" "$T/fsck.up" ||
	{ cat "$T/fsck.up" >&2; fail "fsck -y did not upgrade the old image"; }
"$FSCK" -n "$T/old" >"$T/fsck.old" 2>&1 || { cat "$T/fsck.old" >&2; fail "fsck -n after the upgrade"; }
"$DUMP" "$T/old" | grep -q "feature_ro_compat: 0x1$" || fail "INLINE_BYTES not in the superblock"
check_blocks "$T/old" w
czfs_umount "$M"
