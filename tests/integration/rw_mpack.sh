#!/bin/bash
# Small files written through the mount are packed at writeback (-o pack,
# the default): thousands of tiny files (0 bytes to a few KiB, and every
# size around the packing limit, one partial cluster) copied into an
# empty image read back exactly after a remount, fsck is clean, dump
# shows packs, and the image uses well under half the blocks of the same
# copy with -o nopack.  Packed files are then rewritten, appended to,
# truncated and deleted (some while checkpoints pack their neighbours),
# checked after a remount, with fsck clean; deleting every file frees
# every pack.  Then the daemon is killed with SIGKILL while small files
# are made, rewritten, deleted and fsynced: the image stays consistent
# (fsck -n clean), mounts, and what an fsync made durable reads back.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/rwlib.sh"
require_fuse
[ "$RW_TARGET" = czfs ] || { note "packs are czfs's: nothing to do on $RW_TARGET"; exit 0; }
DUMP="$top_builddir/dump/dump.czfs"
STAT="$top_builddir/src/fuse/czfs-stat"

# used_blocks: the blocks fsck counts in use in the unmounted image
used_blocks() {
	"$FSCK" -n "$RW_IMG" >"$T/fsck.log" 2>&1 ||
		{ cat "$T/fsck.log" >&2; fail "fsck.czfs -n found errors"; }
	sed -n 's|.*, \([0-9]*\)/[0-9]* blocks used.*|\1|p' "$T/fsck.log"
}

head -c 3000000 < <(cat /usr/include/*.h /usr/include/*/*.h 2>/dev/null) >"$T/text"
mkdir -p "$T/src/d" "$T/src/e"
for i in $(seq 0 2999); do	# 0 .. 9 KiB, sizes spread by a prime step
	head -c $(((i * 7919) % 9000)) "$T/text" >"$T/src/d/f$i"
done
# around the limit of the image's 64 KiB clusters and of a 256 KiB pack
for n in 0 1 2 4095 4096 4097 8191 8192 32768 65535 65536 65537 100000 \
	 131071 262143 262144 262145; do
	head -c "$n" "$T/text" >"$T/src/e/s$n"
done

declare -A used
for mode in nopack pack; do
	RW_MOUNT_OPTS=(-o allow_other -o "$mode")
	rw_setup 1G
	cp -a "$T/src/." "$M/" || fail "$mode: cp"
	[ "$mode" = nopack ] ||
		{ sync "$M/e/s1"; "$STAT" "$M" >"$T/stats"; }
	rw_remount
	diff -r "$T/src" "$M" || fail "$mode: files differ after a remount"
	# st_blocks never lies: a packed file counts its share of its pack
	zero=$(find "$M" -type f -size +0 -exec stat -c %b {} + | grep -c '^0$' || true)
	[ "$zero" = 0 ] || fail "$mode: $zero files with data have st_blocks 0"
	rw_umount
	used[$mode]=$(used_blocks)
	note "$mode: ${used[$mode]} blocks used"
done
grep -q '^pack.written [1-9]' "$T/stats" || fail "czfs-stat counts no pack: $(grep '^pack' "$T/stats")"
grep -q '^pack.files [1-9][0-9][0-9]' "$T/stats" || fail "czfs-stat counts few packed files"
"$DUMP" "$RW_IMG" >"$T/dump"
grep -q "^  packs:" "$T/dump" || fail "dump shows no packs"
packed=$(sed -n 's/^    packed: //p' "$T/dump")
[ "${packed:-0}" -ge 2900 ] || fail "dump: only ${packed:-0} packed clusters"
# measured: 555 blocks packed, 2712 alone (20%)
[ $((used[pack] * 100)) -lt $((used[nopack] * 40)) ] ||
	fail "packed image uses ${used[pack]} blocks, not under 40% of ${used[nopack]}"

note "rewrite, append, truncate, delete packed files"
RW_MOUNT_OPTS=(-o allow_other)
rw_mount_existing
for i in $(seq 0 7 2999); do
	case $((i % 4)) in
	0) echo "rewritten $i" >"$M/d/f$i"; echo "rewritten $i" >"$T/src/d/f$i" ;;
	1) head -c 70000 "$T/text" >>"$M/d/f$i"; head -c 70000 "$T/text" >>"$T/src/d/f$i" ;;
	2) truncate -s $((i % 50)) "$M/d/f$i" "$T/src/d/f$i" ;;
	3) rm "$M/d/f$i" "$T/src/d/f$i" ;;
	esac
done
# appends to packed files while fsync packs their neighbours
(
	for r in $(seq 1 40); do
		for j in $(seq 1 5 400); do
			printf '%d.' "$r" >>"$M/d/f$j"
			printf '%d.' "$r" >>"$T/src/d/f$j"
		done
	done
) &
writer=$!
RW_PIDS+=("$writer")
while kill -0 "$writer" 2>/dev/null; do
	sync "$M/e/s1"
	echo x >"$M/e/tmp.$RANDOM"
done
wait "$writer" || fail "the appending writer failed"
rm -f "$M"/e/tmp.*
rw_remount
diff -r "$T/src" "$M" || fail "files differ after changes and a remount"
rw_umount
rw_fsck

note "deleting every file frees every pack"
rw_mount_existing
rm -rf "${M:?}"/d "${M:?}"/e
rw_umount
"$DUMP" "$RW_IMG" >"$T/dump"
! grep -q "^  packs:" "$T/dump" || { grep -A4 "^  packs:" "$T/dump" >&2; fail "packs left in an empty image"; }
empty=$(used_blocks)
note "empty again: $empty blocks used"
[ "$empty" -lt 100 ] || fail "an empty image still uses $empty blocks"

note "small files of zeros stay holes, beside packed neighbours"
rw_mount_existing
mkdir -p "$M/z"
for i in $(seq 1 40); do
	head -c $((i * 97)) /dev/zero >"$M/z/zero$i"
	head -c $((i * 97)) "$T/text" >"$M/z/text$i"
done
rw_remount
for i in $(seq 1 40); do
	cmp -s "$M/z/zero$i" <(head -c $((i * 97)) /dev/zero) || fail "z/zero$i: not its zeros"
	cmp -s "$M/z/text$i" <(head -c $((i * 97)) "$T/text") || fail "z/text$i differs"
	[ "$(stat -c %b "$M/z/zero$i")" = 0 ] ||
		fail "z/zero$i: st_blocks $(stat -c %b "$M/z/zero$i"), a file of zeros takes space"
done
rm -rf "${M:?}/z"
rw_umount

note "SIGKILL while small files are packed"
for round in 1 2 3; do
	rw_mount_existing
	mkdir -p "$M/k"
	for i in $(seq 1 300); do
		head -c $((i * 13)) "$T/text" >"$M/k/keep$i"
	done
	sync "$M/k/keep1"	# durable: must survive the kill
	(
		i=0
		while :; do
			i=$((i + 1))
			head -c $((i % 5000)) "$T/text" >"$M/k/n$((i % 400))" 2>/dev/null || exit 0
			echo "new $i" >"$M/k/keep$((i % 300 + 1))" 2>/dev/null || exit 0
			rm -f "$M/k/n$(((i + 200) % 400))" 2>/dev/null || exit 0
			[ $((i % 50)) -ne 0 ] || sync "$M/k/n1" 2>/dev/null || exit 0
		done
	) &
	writer=$!
	sleep $((round + 1))
	rw_kill_daemon
	wait "$writer" 2>/dev/null || true
	"$FSCK" -n "$RW_IMG" >"$T/fsck.out" 2>&1 ||
		{ cat "$T/fsck.out" >&2; fail "round $round: fsck -n after SIGKILL"; }
	rw_mount_existing
	n=$(find "$M/k" -name 'keep*' | wc -l)
	[ "$n" -eq 300 ] || fail "round $round: $n of 300 synced files left"
	# each is its first bytes, a rewrite, or empty (truncated by the
	# rewrite's open, its write lost with the daemon)
	for i in $(seq 1 300); do
		f="$M/k/keep$i"
		cmp -s "$f" <(head -c $((i * 13)) "$T/text") || [ ! -s "$f" ] ||
			grep -qx 'new [0-9]*' "$f" ||
			fail "round $round: keep$i is neither its bytes nor a rewrite"
	done
	# (none may be left: on a loaded machine the writer may not have
	# synced one before the kill, and a bare glob would name 'n*' itself)
	find "$M/k" -name 'n*' -exec cat {} + >/dev/null ||
		fail "round $round: a file cannot be read"
	rm -rf "${M:?}/k"
	rw_umount
	rw_fsck
done
