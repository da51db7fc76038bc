#!/bin/bash
# fsck.czfs on clean images from mkfs.czfs, for every codec and several
# cluster sizes: exit 0, "clean"; --extract writes the tree back out
# identical to the one the image was made from (contents, types, modes,
# owners, links, ns times, devices, xattrs), holes left as holes.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/mktree.sh"
require_fuse
FSCK="$top_builddir/fsck/fsck.czfs"

tmpfs_mount "$T/src"
tmpfs_mount "$T/out"
make_tree "$T/src"

for spec in lz4:64k zstd:16k lz4hc:4k none:256k; do
	note "${spec%%:*}, ${spec##*:} clusters"
	"$MKFS" -q -f -c "${spec%%:*}" -C "${spec##*:}" -d "$T/src" "$T/img"
	st=0
	"$FSCK" "$T/img" >"$T/log" 2>&1 || st=$?
	[ "$st" -eq 0 ] || { cat "$T/log" >&2; fail "fsck of a clean $spec image: exit $st"; }
	grep -q "clean, .* inodes" "$T/log" || fail "no 'clean' summary: $(cat "$T/log")"
	rm -rf "$T/out/x"
	st=0
	"$FSCK" -q --extract "$T/out/x" "$T/img" >"$T/log" 2>&1 || st=$?
	[ "$st" -eq 0 ] || { cat "$T/log" >&2; fail "extract of $spec: exit $st"; }
	compare_trees "$T/src" "$T/out/x"
	# the 100 MiB sparse file holds two short runs of data
	used=$(stat -c %b "$T/out/x/data/sparse")
	[ "$used" -lt 2048 ] || fail "extracted sparse file takes $used sectors"
done

note "fast mode skips the data but checks the same metadata"
st=0
"$FSCK" --fast "$T/img" >"$T/log" 2>&1 || st=$?
[ "$st" -eq 0 ] || fail "fsck --fast: exit $st"

note "an empty image"
"$MKFS" -q -f -s 1M "$T/empty"
"$FSCK" "$T/empty" >"$T/log" 2>&1 || fail "fsck of an empty image: $(cat "$T/log")"
grep -q "clean, 1 inodes" "$T/log" || fail "empty image summary: $(cat "$T/log")"

# An image changed through the writable mount: new and rewritten files
# (copy-on-write of compressed clusters), a second algorithm, renames of
# files and directories, unlinks (one while open), hard links, truncates,
# xattrs and an ACL.  fsck finds it clean, and extracts what the daemon
# shows.
note "an image written through the mount"
DUMP="$top_builddir/dump/dump.czfs"
M=$T/mnt
"$MKFS" -q -f -s 512M -c lz4 -d "$T/src" "$T/rw.img"
czfs_mount "$T/rw.img" "$M"
cp -a "$T/src/data" "$M/copy"
mkdir "$M/z"
touch "$M/z/text"
setfattr -n user.czfs.compress -v zstd "$M/z/text"
cat "$T/src/data/text" >"$M/z/text"
mv "$M/inc" "$M/moved"
mv "$M/deep/a/b" "$M/special/b"
rm -rf "$M/copy/rand.300000" "$M/moved/linux/usb"
ln "$M/copy/text" "$M/text-link"
dd if=/dev/urandom of="$M/copy/docs" bs=4096 seek=10 count=3 conv=notrunc status=none
truncate -s 100000 "$M/copy/text.partial"
truncate -s 300M "$M/copy/sparse"
setfattr -n user.new -v value "$M/copy/text"
setfattr -x user.small "$M/copy/rand.1"
setfacl -m u:1234:rw "$M/copy/rand.4096"
chmod 640 "$M/copy/rand.4096"
setfacl -m u::rw,g::r,o::r "$M/copy/rand.4097"
exec 7<"$M/copy/rand.65536"
rm "$M/copy/rand.65536"
exec 7<&-
czfs_umount "$M"
st=0
"$FSCK" -n "$T/rw.img" >"$T/log" 2>&1 || st=$?
[ "$st" -eq 0 ] || { cat "$T/log" >&2; fail "fsck -n of an image written through the mount: exit $st"; }
grep -q "clean, .* inodes" "$T/log" || fail "no 'clean' summary: $(cat "$T/log")"
rm -rf "$T/out/x"
"$FSCK" -q --extract "$T/out/x" "$T/rw.img" >"$T/log" 2>&1 ||
	{ cat "$T/log" >&2; fail "extract of the written image"; }
czfs_mount "$T/rw.img" "$M" -o ro
compare_trees "$M" "$T/out/x"
czfs_umount "$M"
# the daemon keeps ACL and mode in step both ways (chmod, setfacl)
[ "$(getfacl -cnp "$T/out/x/copy/rand.4096" | grep -c '^user:1234:rw-')" = 1 ] ||
	fail "the ACL was not extracted"
[ "$(stat -c %a "$T/out/x/copy/rand.4096")" = 640 ] || fail "chmod over an ACL"
getfacl -cnp "$T/out/x/copy/rand.4096" | grep -q '^mask::r--$' ||
	fail "chmod did not change the ACL's mask"
[ "$(stat -c %a "$T/out/x/copy/rand.4097")" = 644 ] || fail "setfacl did not set the mode"
algs=$("$DUMP" -j "$T/rw.img" | python3 -c 'import json,sys
print(" ".join(a["alg"] for a in json.load(sys.stdin)["statistics"]["algorithms"]))')
[[ " $algs " = *" lz4 "* && " $algs " = *" zstd "* ]] || fail "dump: algorithms '$algs', expected lz4 and zstd"
