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
