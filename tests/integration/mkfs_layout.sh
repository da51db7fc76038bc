#!/bin/bash
# What mkfs.czfs promises about the tree, checked through a mount: inode
# numbers in breadth-first order of names sorted bytewise, hard links as one
# inode with its link count, directory link counts and sizes, forced owners
# and times, block counts.
. "$top_srcdir/tests/integration/lib.sh"
require_fuse

EPOCH=1234567890
mkdir -p "$T/src/a/y"
echo b >"$T/src/b"
echo c >"$T/src/c"
ln "$T/src/c" "$T/src/a/hl"
head -c 102400 /dev/urandom >"$T/src/a/x"
echo z >"$T/src/a/y/z"
ln -s ../c "$T/src/a/y/link"
mkfifo "$T/src/a/y/fifo"
chown -R 1234:5678 "$T/src"
"$MKFS" -q --all-root -T $EPOCH -d "$T/src" "$T/img"
czfs_mount "$T/img" "$T/mnt"

# expect PATH FORMAT VALUE: stat -c FORMAT of PATH in the mount is VALUE
expect() {
	local got
	got=$(stat -c "$2" "$T/mnt/$1")
	[ "$got" = "$3" ] || fail "$1: stat -c '$2' is '$got', want '$3'"
}

note "breadth-first inode numbers, names in byte order"
expect .        %i 1
expect a        %i 2
expect b        %i 3
expect c        %i 4
expect a/hl     %i 4
expect a/x      %i 5
expect a/y      %i 6
expect a/y/fifo %i 7
expect a/y/link %i 8
expect a/y/z    %i 9

note "link counts and directory sizes"
expect .   %h 3
expect a   %h 3
expect a/y %h 2
expect c   %h 2
expect b   %h 1
expect a   %s 3
expect a/y %s 3

note "forced owner and time"
for p in . a b c a/x a/y/link a/y/fifo; do
	expect "$p" %u:%g 0:0
	expect "$p" %Y $EPOCH
done

note "blocks: 100 KiB of random data is 16 raw blocks and a share of a raw pack"
# cluster 0: 16 blocks; the 36864-byte tail's share of the 10 blocks of the
# pack of 36870 bytes it is in (with b, c, z): 40954 bytes, 80 sectors
expect a/x %b 208
cmp "$T/src/a/x" "$T/mnt/a/x" || fail "a/x differs"
[ "$(readlink "$T/mnt/a/y/link")" = ../c ] || fail "symlink target"
czfs_umount "$T/mnt"

note "packed: the pack of the tails of b, c, a/x and z first, at block 3"
LOCATE="$top_builddir/tests/czfs-locate"
for p in "/b cluster 0" "/c cluster 0" "/a/x cluster 1" "/a/y/z cluster 0"; do
	# shellcheck disable=SC2086
	[ "$("$LOCATE" "$T/img" $p)" = "3 10 7" ] ||
		fail "$p at '$("$LOCATE" "$T/img" $p)', want '3 10 7' (packed)"
done
[ "$("$LOCATE" "$T/img" /a/x cluster 0)" = "13 16 1" ] ||
	fail "a/x cluster 0 at '$("$LOCATE" "$T/img" /a/x cluster 0)', want '13 16 1'"

note "unpacked: data laid out in inode order from block 3 (small tails inline)"
"$MKFS" -q -f --no-pack -T $EPOCH -d "$T/src" "$T/img"
[ "$("$LOCATE" "$T/img" /a/x cluster 0)" = "3 16 1" ] ||
	fail "a/x cluster 0 at '$("$LOCATE" "$T/img" /a/x cluster 0)', want '3 16 1'"
[ "$("$LOCATE" "$T/img" /a/x cluster 1)" = "19 9 1" ] ||
	fail "a/x cluster 1 at '$("$LOCATE" "$T/img" /a/x cluster 1)', want '19 9 1'"
"$MKFS" -q -f --no-pack --no-inline -T $EPOCH -d "$T/src" "$T/img"
[ "$("$LOCATE" "$T/img" /b cluster 0)" = "3 1 1" ] ||
	fail "with --no-inline, b at '$("$LOCATE" "$T/img" /b cluster 0)', want '3 1 1'"
[ "$("$LOCATE" "$T/img" /a/x cluster 0)" = "5 16 1" ] ||
	fail "with --no-inline, a/x at '$("$LOCATE" "$T/img" /a/x cluster 0)', want '5 16 1'"
