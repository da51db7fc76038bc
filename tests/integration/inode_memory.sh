#!/bin/bash
# An inode only the kernel holds costs a compact record, not a full
# in-memory inode: after a walk the kernel holds every inode it met, and
# the daemon keeps their lookup counts (inodes.compact) with only the
# inodes in use in full (inodes.full).  Attributes come back from the
# tree when a request needs them, changes made through a compact inode
# stick, the kernel's forgets reach the compact records, a file that is
# open after its unlink lives until its close, and readahead across files
# still stores files listed but never opened.
. "$top_srcdir/tests/integration/lib.sh"
require_fuse

FSCK="$top_builddir/fsck/fsck.czfs"
ndir=20 per=150
mkdir -p "$T/src"
for d in $(seq 1 $ndir); do
	mkdir "$T/src/d$d"
	for f in $(seq 1 $per); do
		echo "file $d/$f $((d * f))" >"$T/src/d$d/f$f"
	done
done
sample_files "$T/src" mixed		# several clusters
ln "$T/src/d1/f1" "$T/src/d1/hard"
ln -s f2 "$T/src/d1/sym"
files=$((ndir * per))
# access times a day old: each file's first read moves its own
find "$T/src" -type f -exec touch -a -d @1000000000 {} +
"$MKFS" -q -C 16k -s 256M -d "$T/src" "$T/img"

stat_of() {
	czfs_counter "$T/mnt" "$1"
}

# few_full WHEN: inodes nobody uses are all compact.  (An inode whose
# access time a read moved is in full until a checkpoint stores it: the
# caller makes one.)  Compaction follows the checkpoint's store: wait for
# it (a state; 60 s guards against a hang on a loaded machine).
few_full() {
	local full compact i
	for i in $(seq 1 600); do
		full=$(stat_of inodes.full)
		compact=$(stat_of inodes.compact)
		[ "$compact" -ge "$files" ] && [ "$full" -le 16 ] && break
		sleep 0.1
	done
	note "$1: inodes.full $full, inodes.compact $compact"
	[ "$compact" -ge "$files" ] ||
		fail "$1: $compact compact inodes, the kernel holds $files files"
	[ "$full" -le 16 ] || fail "$1: $full inodes kept in full"
}

# checkpoint: an fsync commits one (and with it the access times)
checkpoint() {
	dd if=/dev/zero of="$T/mnt/cp" bs=4k count=1 conv=fsync status=none ||
		fail "fsync"
}

# the writable mount (the default)
czfs_mount "$T/img" "$T/mnt"
caches_lock
drop_caches 2
ls -lR "$T/mnt" >/dev/null
few_full "after ls -lR"
diff -r "$T/src" "$T/mnt" || fail "the mount does not read as its source"
[ "$(stat_of inodes.full)" -ge $((files / 2)) ] ||
	fail "no read moved an access time: the test proves nothing"
checkpoint
rm "$T/mnt/cp"
few_full "after reading every file and a checkpoint"

# changes through compact inodes: attributes, data, names
chmod 600 "$T/mnt"/d2/*
touch -d @1000000000 "$T/mnt/d3/f7"
echo appended >>"$T/mnt/d4/f9"
mv "$T/mnt/d5/f1" "$T/mnt/d6/moved"
echo "linked" >>"$T/mnt/d1/hard"
sync
drop_caches 2			# the kernel forgets: attributes from the tree
[ "$(stat -c %a "$T/mnt/d2/f$per")" = 600 ] || fail "chmod lost"
[ "$(stat -c %Y "$T/mnt/d3/f7")" = 1000000000 ] || fail "mtime lost"
[ "$(tail -n 1 "$T/mnt/d4/f9")" = appended ] || fail "append lost"
[ -e "$T/mnt/d6/moved" ] && [ ! -e "$T/mnt/d5/f1" ] || fail "rename lost"
[ "$(tail -n 1 "$T/mnt/d1/f1")" = linked ] || fail "write through a link lost"
[ "$(stat -c %h "$T/mnt/d1/f1")" = 2 ] || fail "link count lost"

# forgets reach compact records
ls -lR "$T/mnt" >/dev/null
before=$(stat_of inodes.compact)
drop_caches 2
after=$(stat_of inodes.compact)
note "inodes.compact $before before the kernel forgot, $after after"
[ "$after" -lt $((before / 2)) ] || fail "forgets left $after of $before compact inodes"

# open, then unlinked: lives until its close, then goes
ls -l "$T/mnt/d7" >/dev/null
exec 3<"$T/mnt/d7/f3"
rm "$T/mnt/d7/f3"
ls -lR "$T/mnt" >/dev/null
[ "$(cat <&3)" = "file 7/3 21" ] || fail "an unlinked open file cannot be read"
exec 3<&-
caches_unlock
czfs_umount "$T/mnt"
"$FSCK" -n "$T/img" >"$T/fsck.out" 2>&1 || { cat "$T/fsck.out"; fail "fsck after the writable mount"; }

# the read-only mount: a walk stores files listed but not opened
czfs_mount "$T/img" "$T/mnt" -o ro
caches_lock
drop_caches 3
mkdir "$T/back"
tar -C "$T/mnt" -cf - . | tar -C "$T/back" -xf - ||
	fail "tar of the read-only mount"
pushed=$(stat_of push.files)
caches_unlock
few_full "after tar on -o ro"
note "push.files $pushed"
[ "$pushed" -ge $((files / 4)) ] || fail "only $pushed files stored ahead of their reads"
cmp "$T/back/mixed" "$T/src/mixed" || fail "the multi-cluster file differs"
[ "$(cat "$T/back/d4/f9" | tail -n 1)" = appended ] || fail "the append differs"
czfs_umount "$T/mnt"
