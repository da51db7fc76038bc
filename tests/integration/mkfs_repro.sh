#!/bin/bash
# mkfs.czfs images are reproducible: with -U and -T (or SOURCE_DATE_EPOCH)
# the same tree gives the same bytes whatever -j and the readdir order;
# sparse files cost no time, compressible data gets smaller.
. "$top_srcdir/tests/integration/lib.sh"

UUID=0b5e4a1c-7d2f-4e60-9a3b-c1d2e3f4a5b6
EPOCH=1700000000

# make_src DIR ORDER: the test tree; ORDER "rev" creates entries in reverse.
make_src() {
	local d=$1 order=$2 names n
	mkdir -p "$d"
	names="dir-b dir-a empty one 4095 4096 65537 corpus sparse zeros link"
	[ "$order" = rev ] && names=$(echo "$names" | tr ' ' '\n' | tac)
	for n in $names; do
		case $n in
		dir-a) mkdir -p "$d/dir-a/nested" "$d/dir-a/empty-dir"
			echo nested >"$d/dir-a/nested/f";;
		dir-b) mkdir "$d/dir-b"; mkfifo "$d/dir-b/fifo";;
		empty) : >"$d/empty";;
		one) printf x >"$d/one";;
		4095|4096|65537) head -c "$n" "$T/random" >"$d/f$n";;
		corpus) cp "$T/corpus" "$d/corpus";;
		sparse)
			truncate -s 5G "$d/sparse"
			printf 'begin' | dd of="$d/sparse" bs=1 conv=notrunc status=none
			printf 'middle' | dd of="$d/sparse" bs=1 seek=2147483648 conv=notrunc status=none
			printf 'end' | dd of="$d/sparse" bs=1 seek=5368709117 conv=notrunc status=none;;
		zeros) head -c 1048576 /dev/zero >"$d/zeros";;
		link) ln -s dir-a/nested/f "$d/link";;
		esac
	done
	ln "$d/f65537" "$d/dir-b/hard"
	setfattr -n user.small -v tiny "$d/one" 2>/dev/null || true
	setfattr -n user.large -v "0x$(head -c 3000 "$T/random" | xxd -p | tr -d '\n')" \
		"$d/one" 2>/dev/null || true
	chown -R 0:0 "$d"
	chmod -R u=rwX,go=rX "$d"
}

head -c 200000 /dev/urandom >"$T/random"
sample_files "$T/c" text
head -c 3145728 "$T/c/text" >"$T/corpus"
make_src "$T/a" fwd
make_src "$T/b" rev

note "-j1 and -j4 give the same image"
"$MKFS" -q -j1 -U $UUID -T $EPOCH -d "$T/a" "$T/img1"
"$MKFS" -q -j4 -U $UUID -T $EPOCH -d "$T/a" "$T/img2"
cmp "$T/img1" "$T/img2" || fail "-j1 and -j4 images differ"

note "entries created in another order give the same image"
"$MKFS" -q -j2 -U $UUID -T $EPOCH -d "$T/b" "$T/img3"
cmp "$T/img1" "$T/img3" || fail "the image depends on creation/readdir order"

note "SOURCE_DATE_EPOCH works like -T"
SOURCE_DATE_EPOCH=$EPOCH "$MKFS" -q -j3 -U $UUID -d "$T/a" "$T/img4"
cmp "$T/img1" "$T/img4" || fail "SOURCE_DATE_EPOCH differs from -T"

note "other codecs are reproducible too"
for spec in zstd:3 lz4hc none; do
	"$MKFS" -q -f -j1 -c $spec -C 16k -U $UUID -T $EPOCH -d "$T/a" "$T/z1"
	"$MKFS" -q -f -j3 -c $spec -C 16k -U $UUID -T $EPOCH -d "$T/a" "$T/z2"
	cmp "$T/z1" "$T/z2" || fail "$spec images differ between -j1 and -j3"
done

note "a different uuid or time changes the image"
"$MKFS" -q -U $UUID -T $((EPOCH + 1)) -d "$T/a" "$T/img5"
! cmp -s "$T/img1" "$T/img5" || fail "-T is ignored"

note "the image starts with the superblock, slot 1 holds the checkpoint"
[ "$(head -c 4 "$T/img1")" = CZFS ] || fail "no superblock magic"
[ "$(dd if="$T/img1" bs=1 skip=8196 count=4 status=none)" = CZCP ] ||
	fail "no checkpoint magic in slot 1 (block 2)"

note "compressible data shrinks, holes cost nothing"
size=$(stat -c %s "$T/img1")
input=$((3145728 + 1048576 + 200000))
[ "$size" -lt $((input / 2)) ] || fail "image of $size bytes for $input bytes of input"
[ "$(du -k "$T/img1" | cut -f1)" -lt 4096 ] || fail "the image is not small on disk"

note "of the 5 GiB sparse file only the clusters with data are read"
mkdir "$T/s"
mv "$T/a/sparse" "$T/s/"
"$MKFS" -d "$T/s" "$T/img6" >"$T/mkfs6.out"
read=$(sed -n 's/^mkfs.czfs: read \([0-9]*\) bytes of the files .*/\1/p' "$T/mkfs6.out")
# three writes of a few bytes: three 64 KiB clusters (192 KiB here; more
# where the host file system allocates in larger extents)
[ -n "$read" ] || fail "mkfs said nothing of the bytes it read: $(cat "$T/mkfs6.out")"
[ "$read" -ge $((3 * 65536)) ] || fail "a sparse 5 GiB file: mkfs read $read bytes, less than its data"
[ "$read" -le $((1 << 20)) ] || fail "a sparse 5 GiB file: mkfs read $read bytes: holes were read"

note "--no-zero-detect stores zero clusters"
mkdir "$T/zero"
head -c 4194304 /dev/zero >"$T/zero/z"
"$MKFS" -q -d "$T/zero" "$T/img7"
"$MKFS" -q --no-zero-detect -d "$T/zero" "$T/img8"
[ "$(stat -c %s "$T/img8")" -gt "$(stat -c %s "$T/img7")" ] ||
	fail "--no-zero-detect made no difference"
exit 0
