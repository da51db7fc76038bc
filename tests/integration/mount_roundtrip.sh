#!/bin/bash
# Images built by mkfs.czfs from a real tree read back identical through
# the mount, for every codec and cluster size.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/mktree.sh"
require_fuse

tmpfs_mount "$T/src"
make_tree "$T/src"
for alg in lz4 lz4hc zstd none; do
	for cs in 4k 16k 64k 256k; do
		note "$alg, $cs clusters"
		"$MKFS" -q -f -c "$alg" -C "$cs" -d "$T/src" "$T/img"
		czfs_mount "$T/img" "$T/mnt"
		compare_trees "$T/src" "$T/mnt"
		czfs_umount "$T/mnt"
	done
done
note "zstd:19 and lz4hc:12 levels"
for spec in zstd:19 lz4hc:12; do
	"$MKFS" -q -c "$spec" -d "$T/src" "$T/img" -f
	czfs_mount "$T/img" "$T/mnt"
	compare_trees "$T/src" "$T/mnt"
	czfs_umount "$T/mnt"
done
note "all the sample data and more of /usr/include, lz4 64k"
rm -rf "$T/src"/*
make_tree "$T/src" full
"$MKFS" -q -f -d "$T/src" "$T/img"
czfs_mount "$T/img" "$T/mnt"
compare_trees "$T/src" "$T/mnt"
czfs_umount "$T/mnt"
