#!/bin/bash
# Data reads by O_DIRECT (the default, -o direct_reads) and through the
# host's page cache (-o buffered_reads): both read back what mkfs stored and what a
# read-write mount wrote, and backing.direct_reads shows which way each
# went.  A read-write mount's writes may still be dirty in the host's page
# cache when their clusters are read again: the kernel writes them back
# before a direct read, which must return the new data, not the old.
# A load wakes waiting readers only when one waits for its cluster.
. "$top_srcdir/tests/integration/lib.sh"
require_fuse

stat_of() {	# stat_of NAME: a counter of the mount at $T/mnt
	czfs_counter "$T/mnt" "$1"
}

sample_files "$T/c" "libs bins"
mkdir -p "$T/src"
cat "$T/c/libs" "$T/c/bins" >"$T/src/data"
want=$(md5sum <"$T/src/data")
"$MKFS" -q -d "$T/src" "$T/img"

# Does the filesystem under $T take O_DIRECT?  If not, czfs-fuse must fall
# back to buffered reads, and the counter stays 0.
if dd if="$T/src/data" of=/dev/null bs=1M count=1 iflag=direct 2>/dev/null; then
	direct=1
else
	direct=0
	note "$T refuses O_DIRECT: every read must be buffered"
fi

note "mkfs-made data: direct by default and with -o direct_reads, buffered with -o buffered_reads"
for o in ro ro,direct_reads ro,buffered_reads ro,buffered_reads,direct_reads; do
	drop_caches
	czfs_mount "$T/img" "$T/mnt" -o "$o"
	got=$(md5sum <"$T/mnt/data")
	[ "$got" = "$want" ] || fail "data differs with -o $o"
	n=$(stat_of backing.direct_reads)
	reads=$(stat_of backing.reads)
	if [ "$o" != ro,buffered_reads ] && [ "$direct" = 1 ]; then
		# 26 MiB, about 12 stored: a stream's requests of 512 KiB
		# go direct, the superblock's and the tree's reads do not
		[ "$n" -ge 10 ] || fail "-o $o: $n direct reads of $reads, want 10 or more"
		[ "$n" -lt "$reads" ] || fail "-o $o: metadata read direct too ($n of $reads)"
	else
		[ "$n" = 0 ] || fail "-o $o: $n direct reads, want none"
	fi
	# a load wakes the threads waiting for clusters only when one
	# waits for its own: not at every cluster the prefetch loads
	wakes=$(stat_of ccache.wakes)
	loads=$(( $(stat_of cluster.loads_reader) + $(stat_of cluster.loads_prefetch) ))
	[ "$wakes" -le "$(stat_of ccache.waits)" ] && [ "$wakes" -lt "$loads" ] ||
		fail "-o $o: $wakes wakeups for $(stat_of ccache.waits) waits, $loads loads"
	czfs_umount "$T/mnt"
done

note "a read-write mount reads back its own writes, dirty on the host or not"
"$MKFS" -q -s 1G "$T/rw.img"
# a small pool: the clusters written are evicted and read from the image
# again; no checkpoint meanwhile (commit=600), so nothing syncs the image
czfs_mount "$T/rw.img" "$T/mnt" -o cache_size=4M,commit=600,direct_reads
dd if="$T/src/data" of="$T/mnt/data" bs=1M 2>/dev/null ||
	fail "write through the mount"
# O_DIRECT on the mount: past the kernel's copy, to the daemon
got=$(dd if="$T/mnt/data" bs=1M iflag=direct 2>/dev/null | md5sum)
[ "$got" = "$want" ] || fail "read-write mount: data differs when read back"
n=$(stat_of backing.direct_reads)
if [ "$direct" = 1 ]; then
	[ "$n" -gt 0 ] || fail "read-write mount: no direct read"
fi
# overwrite the first half in place, and read it all again
head -c 8M /dev/urandom >"$T/half"
dd if="$T/half" of="$T/mnt/data" bs=1M conv=notrunc 2>/dev/null ||
	fail "overwrite through the mount"
cp "$T/src/data" "$T/want2"
dd if="$T/half" of="$T/want2" bs=1M conv=notrunc 2>/dev/null
want2=$(md5sum <"$T/want2")
got=$(dd if="$T/mnt/data" bs=1M iflag=direct 2>/dev/null | md5sum)
[ "$got" = "$want2" ] || fail "read-write mount: overwritten data differs"
czfs_umount "$T/mnt"
czfs_mount "$T/rw.img" "$T/mnt" -o ro
got=$(md5sum <"$T/mnt/data")
[ "$got" = "$want2" ] || fail "read-write mount: data differs after remount"
czfs_umount "$T/mnt"
"$top_builddir/fsck/fsck.czfs" -n "$T/rw.img" >/dev/null ||
	fail "fsck after the read-write mount"
