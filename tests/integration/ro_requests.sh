#!/bin/bash
# A read-only mount costs about one FUSE request per file on a cold walk:
# it declines open and close (-o opens=skip, the default), lists every
# directory with attributes (READDIRPLUS throughout; a walk that does not
# stat files, find, gets them without: rdplus.h), and reads come with
# no handle.  With readahead across files (-o tree_readahead, on by
# default) most files are stored into the page cache before they are
# asked for, and a walk costs far fewer requests than files.  The data
# read so is the source's; a big file still streams through the prefetch
# workers (their stream is kept per inode; on a writable mount, per open,
# made by the first read beyond a cluster); and -o opens=send brings the
# opens back.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/mktree.sh"
require_fuse

STAT="$top_builddir/src/fuse/czfs-stat"
UUID=3e60611a-dd4f-47c9-a03e-c5752b46189e
tmpfs_mount "$T/src"
"$top_srcdir/tests/sample-data" --tree "$T/src/tree" 24 ||
	fail "tests/sample-data could not build the tree"
mkdir "$T/src/big"
sample_files "$T/src/big" mixed
: >"$T/src/big/empty"
truncate -s 3M "$T/src/big/sparse"
printf 'tail' >>"$T/src/big/sparse"
nfiles=$(find "$T/src" -type f | wc -l)
ndirs=$(find "$T/src" -type d | wc -l)
note "$nfiles files, $ndirs directories"

# count LOG OPCODE: requests of that opcode in a daemon's debug log
count() {
	grep -cE "^unique: [0-9]+, opcode: $2 " "$1" || true
}

# forgotten LOG: inodes the kernel forgot, by FORGET and BATCH_FORGET
# (48 bytes of headers, then 16 a node).  No test's walk makes it forget:
# a drop of the caches or memory pressure elsewhere on the machine does,
# and each inode forgotten costs a LOOKUP and a READ when it comes back.
forgotten() {
	awk '/opcode: FORGET / { n++ }
	     /opcode: BATCH_FORGET / { sub(/.*insize: /, ""); n += ($1 - 48) / 16 }
	     END { print n + 0 }' "$1"
}

# walk ALG OPTIONS [TRIES]: a cold tar walk of the mount, checked against
# the source; leaves the request log in $T/walk.log, the stats in $T/stats
# and in $forgot the inodes the kernel forgot meanwhile.  A walk during
# which the machine made the kernel forget inodes is walked again (TRIES
# times in all, 3 by default; 1 for a walk that changes what the next
# would see): the counts below are those of an undisturbed walk, or allow
# for what was forgotten.
walk() {
	local try
	for try in $(seq 1 "${3:-3}"); do
		czfs_mount "$T/img" "$T/mnt" -o "$2" -d
		mkdir -p "$T/out"
		rm -rf "${T:?}/out/"*
		caches_lock			# no other test's drop within the walk
		drop_caches
		tar -C "$T/mnt" -cf - . | tar -C "$T/out" -xf -
		czfs_log "$T/mnt" | grep -E '^unique: [0-9]+, opcode' >"$T/walk.log" || true
		"$STAT" "$T/mnt" >"$T/stats" || fail "czfs-stat"
		caches_unlock
		compare_trees "$T/src" "$T/mnt"
		czfs_umount "$T/mnt"
		diff -r --no-dereference "$T/src" "$T/out" >/dev/null ||
			fail "$1 $2: tar's copy differs from the source"
		forgot=$(forgotten "$T/walk.log")
		[ "$forgot" = 0 ] && break
		note "$1 $2: the kernel forgot $forgot inodes during walk $try"
	done
	note "$1 $2: requests $(sed 's/.*opcode: \([A-Z_]*\).*/\1/' "$T/walk.log" |
		sort | uniq -c | tr -s ' \n' ' ')"
}

stat_of() {
	awk -v k="$1" '$1 == k { print $2 }' "$T/stats"
}

# A fixed UUID seeds the names' hash: the listings come in the same order
# in every run, and so do the requests counted below (which directories a
# walk lists before it stats its first file, for one).
for alg in lz4 zstd; do
	"$MKFS" -q -f -c "$alg" -C 64k -U "$UUID" -d "$T/src" "$T/img"

	walk "$alg" ro,tree_readahead=0
	opens=$(count "$T/walk.log" OPEN)
	releases=$(count "$T/walk.log" RELEASE)
	opendirs=$(count "$T/walk.log" OPENDIR)
	lookups=$(count "$T/walk.log" LOOKUP)
	reads=$(count "$T/walk.log" READ)
	plain=$(count "$T/walk.log" READDIR)
	# FORGETs come when the kernel drops inodes (a drop_caches elsewhere
	# on the machine), not from the walk.
	total=$(grep -cv 'FORGET' "$T/walk.log")
	# one declined OPEN and OPENDIR each; the kernel opens by itself after
	[ "$opens" -le 1 ] || fail "$alg: $opens OPEN requests (at most 1 wanted)"
	[ "$opendirs" -le 1 ] || fail "$alg: $opendirs OPENDIR requests"
	[ "$releases" -eq 0 ] || fail "$alg: $releases RELEASE requests"
	[ "$plain" -eq 0 ] || fail "$alg: $plain plain READDIR requests (READDIRPLUS wanted)"
	# tar stats every entry: the listings gave them all
	[ "$lookups" -le $((nfiles / 50 + forgot)) ] ||
		fail "$alg: $lookups LOOKUP requests for $nfiles files ($forgot inodes forgotten)"
	[ "$reads" -ge $((nfiles - 2)) ] || fail "$alg: only $reads READ requests"
	[ "$(stat_of push.files)" -eq 0 ] || fail "$alg: files stored with tree_readahead=0"
	# (the empty file needs none: walk, listings, the files' reads)
	[ "$total" -le $((nfiles * 12 / 10 + ndirs * 2 + 20 + 2 * forgot)) ] ||
		fail "$alg: $total requests for $nfiles files and $ndirs directories"

	walk "$alg" ro
	reads=$(count "$T/walk.log" READ)
	pushed=$(stat_of push.files)
	[ "$reads" -le $((nfiles / 3 + forgot)) ] ||
		fail "$alg: $reads READ requests for $nfiles files with readahead across files ($forgot inodes forgotten)"
	[ "$pushed" -ge $((nfiles / 2)) ] ||
		fail "$alg: only $pushed of $nfiles files stored into the page cache"
	[ "$(count "$T/walk.log" OPEN)" -le 1 ] || fail "$alg: OPEN requests"
	# reads are passed on, to more than one thread
	[ "$(stat_of fuse.loop_handoffs)" -ge "$reads" ] ||
		fail "$alg: $(stat_of fuse.loop_handoffs) handoffs for $reads READ requests"
	[ "$(stat_of fuse.loop_threads)" -ge 2 ] || fail "$alg: one thread served the reads"

	note "$alg: a big file streams through the prefetch workers, two readers at once"
	czfs_mount "$T/img" "$T/mnt" -o ro
	want=$(sha256sum <"$T/src/big/mixed")
	caches_lock
	drop_caches
	dd if="$T/mnt/big/mixed" bs=128k status=none | sha256sum >"$T/sum1" &
	dd if="$T/mnt/big/mixed" bs=64k status=none | sha256sum >"$T/sum2"
	wait $!
	[ "$(cat "$T/sum1")" = "$want" ] || fail "$alg: first reader's data differ"
	[ "$(cat "$T/sum2")" = "$want" ] || fail "$alg: second reader's data differ"
	cmp "$T/src/big/sparse" "$T/mnt/big/sparse" || fail "$alg: sparse file differs"
	[ ! -s "$T/mnt/big/empty" ] || fail "$alg: empty file has data"
	"$STAT" "$T/mnt" >"$T/stats" || fail "czfs-stat"
	caches_unlock
	pre=$(awk '$1 == "cluster.loads_prefetch" { print $2 }' "$T/stats")
	[ "${pre:-0}" -gt 0 ] || fail "$alg: no cluster was prefetched (loads_prefetch ${pre:-none})"
	# a read of a directory or an open for writing is still refused
	! cat "$T/mnt/tree" 2>/dev/null || fail "$alg: a directory read as a file"
	! sh -c "echo x >>'$T/mnt/big/empty'" 2>/dev/null || fail "$alg: a write on a read-only mount"
	czfs_umount "$T/mnt"
done

# A store can wait for a page under a READ that another FUSE thread must
# answer: a single-threaded daemon stores nothing, and one with two
# threads stores in one at most.
for opt in -s "-o max_threads=2"; do
	note "a walk with $opt finishes"
	# shellcheck disable=SC2086 # the option and its value are two words
	czfs_mount "$T/img" "$T/mnt" -o ro $opt
	drop_caches
	rm -rf "${T:?}/out/"*
	if ! timeout 120 tar -C "$T/mnt" -cf - . | tar -C "$T/out" -xf -; then
		czfs_abort "$T/mnt"
		fail "$opt: the walk did not finish within 120 s"
	fi
	diff -r --no-dereference "$T/src" "$T/out" >/dev/null ||
		fail "$opt: tar's copy differs from the source"
	czfs_umount "$T/mnt"
done

# requests of the opcode logged after line FROM of the mount's log
count_from() {
	czfs_log "$T/mnt" | tail -n +"$2" | grep -cE "^unique: [0-9]+, opcode: $1 " || true
}

note "find needs names and types only: its listings give files without attributes"
czfs_mount "$T/img" "$T/mnt" -o ro -d
caches_lock
drop_caches
from=$(( $(czfs_log "$T/mnt" | wc -l) + 1 ))
for t in f d l; do
	cmp <(cd "$T/src" && find . -type $t | sort) \
	    <(cd "$T/mnt" && find . -type $t | sort) || fail "find -type $t: the names differ"
done
"$STAT" "$T/mnt" >"$T/stats" || fail "czfs-stat"
caches_unlock
bare=$(stat_of dir.entries_bare)
lookups=$(count_from LOOKUP "$from")
forgot=$(czfs_log "$T/mnt" | tail -n +"$from" | forgotten /dev/stdin)
listings=$(count_from READDIRPLUS "$from")
note "find: $listings READDIRPLUS, $lookups LOOKUP, $bare entries without attributes, $(stat_of dir.entries_attrs) with; $(stat_of fuse.loop_handoffs) handoffs, $(stat_of fuse.loop_threads) threads"
# one thread answered the walk: it passed the device on only at INIT
[ "$(stat_of fuse.loop_handoffs)" -le 2 ] || fail "find: the reader passed the device on $(stat_of fuse.loop_handoffs) times"
[ "$bare" -ge $((nfiles / 2)) ] || fail "find: only $bare of $nfiles files listed without attributes"
# (a directory comes with its attributes: find descends with no LOOKUP)
[ "$lookups" -le $((2 + forgot)) ] || fail "find: $lookups LOOKUP requests ($forgot inodes forgotten)"
# (two a directory; the kernel keeps the listings for the later walks)
[ "$listings" -le $((ndirs * 4 + 10)) ] || fail "find: $listings listings of $ndirs directories"

note "a walk that stats files brings the attributes back, and sees the right ones"
caches_lock
drop_caches
from=$(( $(czfs_log "$T/mnt" | wc -l) + 1 ))
attrs=$(stat_of dir.entries_attrs)
# (the sizes of all but directories, which differ from the source's)
attrs_of() {
	(cd "$1" && find . -type d -printf '%y %m %p\n' -o -printf '%y %s %m %p\n' | sort)
}
cmp <(attrs_of "$T/src") <(attrs_of "$T/mnt") || fail "find -printf: the attributes differ"
"$STAT" "$T/mnt" >"$T/stats" || fail "czfs-stat"
caches_unlock
lookups=$(count_from LOOKUP "$from")
forgot=$(czfs_log "$T/mnt" | tail -n +"$from" | forgotten /dev/stdin)
note "find -printf: $lookups LOOKUP, $(( $(stat_of dir.entries_attrs) - attrs )) entries with attributes"
# (it begins without attributes, as find left them: each file of the
# directories it lists before it stats one costs a LOOKUP, in this order
# the 70 of tree/usr/include (one that lists include/linux first pays its
# 500 as well); then each probe costs one)
[ "$lookups" -le $((nfiles / 20 + forgot)) ] ||
	fail "find -printf: $lookups LOOKUP requests for $nfiles files ($forgot inodes forgotten)"
[ "$(stat_of dir.entries_attrs)" -ge $((attrs + nfiles / 2)) ] ||
	fail "find -printf: the listings did not bring attributes back"
czfs_umount "$T/mnt"

note "-o opens=send: every open and close reaches the daemon"
czfs_mount "$T/img" "$T/mnt" -o ro,opens=send -d
drop_caches
tar -C "$T/mnt" -cf - . | wc -c >/dev/null
czfs_log "$T/mnt" >"$T/walk.log"
opens=$(count "$T/walk.log" OPEN)
releases=$(count "$T/walk.log" RELEASE)
[ "$opens" -ge $((nfiles - 1)) ] || fail "opens=send: $opens OPEN requests for $nfiles files"
[ "$releases" -ge $((nfiles - 1)) ] || fail "opens=send: $releases RELEASE requests"
compare_trees "$T/src" "$T/mnt"
czfs_umount "$T/mnt"

note "a read-write mount keeps its files' opens, declines its directories', and reads a tree ahead"
"$MKFS" -q -f -c lz4 -C 64k -U "$UUID" -s 256M -d "$T/src" "$T/img"
# relatime: with every access time older than its file's mtime, the first
# walk updates them all.  Files are stored ahead all the same: a file's
# open reaches the daemon on a writable mount, and moves the access time
# of data stored ahead (or the store does, if the file is open already)
old_atimes() {
	czfs_mount "$T/img" "$T/mnt" -o noatime
	find "$T/mnt" -type f -exec touch -a -d @1000000000 {} +
	czfs_umount "$T/mnt"
}
old_atimes
walk rw rw 1		# (it updates the access times: once)
# a stream (prefetch state) only for a file read beyond its first cluster,
# not one an open
nbig=$(find "$T/src" -type f -size +64k | wc -l)
note "rw: $(stat_of staging.streams) streams made; $nbig of $nfiles files over a cluster"
[ "$nbig" -ge 1 ] && [ "$nbig" -lt $((nfiles / 2)) ] || fail "$nbig of $nfiles files over a cluster"
[ "$(stat_of staging.streams)" -ge 1 ] && [ "$(stat_of staging.streams)" -le "$nbig" ] ||
	fail "rw: $(stat_of staging.streams) streams made for $nbig files over a cluster"
[ "$(count "$T/walk.log" OPEN)" -ge $((nfiles / 2)) ] || fail "rw: $(count "$T/walk.log" OPEN) OPEN requests"
[ "$(count "$T/walk.log" OPENDIR)" -le 1 ] || fail "rw: $(count "$T/walk.log" OPENDIR) OPENDIR requests"
[ "$(count "$T/walk.log" RELEASEDIR)" -eq 0 ] || fail "rw: RELEASEDIR requests"
[ "$(count "$T/walk.log" READDIR)" -eq 0 ] || fail "rw: plain READDIR requests (READDIRPLUS wanted)"
[ "$(stat_of push.files)" -ge $((nfiles / 2)) ] ||
	fail "rw, access times due: only $(stat_of push.files) of $nfiles files stored into the page cache"
[ "$(count "$T/walk.log" READ)" -le $((nfiles / 3 + forgot)) ] ||
	fail "rw, access times due: $(count "$T/walk.log" READ) READ requests ($forgot inodes forgotten)"
czfs_mount "$T/img" "$T/mnt"
stale=$(cd "$T/mnt" && find . -type f -size +0 -printf '%A@ %p\n' | awk '$1 < 1000000001 { print $2 }')
[ -z "$stale" ] || fail "rw: the walk left old access times on: $(echo $stale | head -c 300)"
czfs_umount "$T/mnt"
# a file stored ahead but not opened keeps its access time; an open
# that reads nothing moves it
dir=$(cd "$T/src/tree" && find . -type f -size +0 -size -16k -printf '%h\n' | sort | uniq -c |
	sort -k1,1nr -k2 | awk 'NR == 1 { print $2 }')
# stored_next: read the directory's first small file on a new mount and
# wait for the next one's pages.  Only known inodes are stored (push.c):
# a drop of the caches elsewhere on the machine (another chroot's tests
# do not share our lock) can make the kernel forget it first; then the
# daemon's log shows a FORGET and it is tried again.  Leaves the mount.
stored_next() {
	local try tries forgot
	for try in 1 2 3; do
		old_atimes
		czfs_mount "$T/img" "$T/mnt" -o rw -d
		caches_lock
		drop_caches
		ls -l "$T/mnt/tree/$dir" >/dev/null	# the kernel knows them (push.c)
		mapfile -t files < <(cd "$T/mnt/tree/$dir" && find . -maxdepth 1 -type f -size +0 -size -16k -printf '%i %f\n' | sort -n)
		[ "${#files[@]}" -ge 3 ] || fail "the directory $dir holds too few small files"
		cat "$T/mnt/tree/$dir/${files[0]#* }" >/dev/null
		# the store runs after the READ's reply (fincore opens it: that
		# open may move its access time, not the others')
		for tries in $(seq 1 100); do
			[ "$(fincore -n -b -o RES "$T/mnt/tree/$dir/${files[1]#* }")" -gt 0 ] && return 0
			sleep 0.1
		done
		czfs_log "$T/mnt" | grep -E '^unique: [0-9]+, opcode' >"$T/next.log" || true
		forgot=$(forgotten "$T/next.log")
		[ "$forgot" -gt 0 ] ||
			fail "rw: ${files[1]#* } was not stored after reading ${files[0]#* }"
		note "rw: the kernel forgot $forgot inodes before the store, try $try"
		caches_unlock
		czfs_umount "$T/mnt"
	done
	fail "rw: ${files[1]#* } not stored in 3 tries, inodes forgotten in each"
}
stored_next
"$STAT" "$T/mnt" >"$T/stats" || fail "czfs-stat"
[ "$(stat_of push.files)" -gt 0 ] || fail "rw: nothing stored after reading ${files[0]#* }"
for f in "${files[@]:2}"; do
	[ "$(stat -c %X "$T/mnt/tree/$dir/${f#* }")" = 1000000000 ] ||
		fail "rw: ${f#* }, stored ahead and never opened, had its access time moved"
done
caches_unlock
# fincore's open, which reads nothing, found it stored: that open moved it
[ "$(stat -c %X "$T/mnt/tree/$dir/${files[1]#* }")" -gt 1000000000 ] ||
	fail "rw: opening ${files[1]#* }, stored ahead, did not move its access time"
czfs_umount "$T/mnt"
# within the day, the next walk reads them ahead, as a read-only mount
walk rw2 rw
pushed=$(stat_of push.files)
[ "$pushed" -ge $((nfiles / 2)) ] || fail "rw: only $pushed of $nfiles files stored into the page cache"
[ "$(count "$T/walk.log" READ)" -le $((nfiles / 3 + forgot)) ] ||
	fail "rw: $(count "$T/walk.log" READ) READ requests ($forgot inodes forgotten)"
walk rw-noatime noatime
[ "$(stat_of push.files)" -ge $((nfiles / 2)) ] || fail "rw noatime: only $(stat_of push.files) files stored"
# find lists files without attributes on a writable mount too (rdplus.h)
czfs_mount "$T/img" "$T/mnt"
caches_lock
drop_caches
find "$T/mnt" -type f >/dev/null
"$STAT" "$T/mnt" >"$T/stats" || fail "czfs-stat"
caches_unlock
[ "$(stat_of dir.entries_bare)" -gt 0 ] || fail "rw: find's listings all gave attributes"
czfs_umount "$T/mnt"

note "a file open for writing is never stored ahead of its read"
# every file of one directory is held open by a writer: the walk must
# READ each of them (tar reads them whole), none is stored
dir=$(cd "$T/src/tree" && find . -type f -size +0 -size -64k -printf '%h\n' | sort | uniq -c |
	sort -k1,1nr -k2 | awk 'NR == 1 { print $2 }')
czfs_mount "$T/img" "$T/mnt" -o noatime -d
held=()
for f in "$T/mnt/tree/$dir"/*; do
	[ -f "$f" ] && [ -s "$f" ] || continue
	exec {fd}>>"$f"
	held+=("$fd:$(stat -c %i "$f")")
done
[ "${#held[@]}" -ge 2 ] || fail "the directory $dir holds too few files"
caches_lock
drop_caches
tar -C "$T/mnt" -cf - . | tar -C "$T/out" -xf -
caches_unlock
czfs_log "$T/mnt" | grep -E '^unique: [0-9]+, opcode' >"$T/walk.log" || true
"$STAT" "$T/mnt" >"$T/stats" || fail "czfs-stat"
[ "$(stat_of push.files)" -gt 0 ] || fail "no file stored ahead (the check below would prove nothing)"
for h in "${held[@]}"; do
	grep -qE "opcode: READ \([0-9]+\), nodeid: ${h#*:}," "$T/walk.log" ||
		fail "inode ${h#*:}, open for writing, was stored ahead instead of read"
	fd=${h%%:*}
	exec {fd}>&-
done
czfs_umount "$T/mnt"

note "a bad value is refused"
! "$FUSE" "$T/img" "$T/mnt" -o ro,opens=maybe 2>"$T/err" || fail "opens=maybe accepted"
grep -q "opens=maybe" "$T/err" || { cat "$T/err" >&2; fail "no message for opens=maybe"; }
