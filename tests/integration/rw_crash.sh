#!/bin/bash
# Crash loop (tests/integration/rw_crash.py): writers create, append,
# overwrite, fsync and delete files, logging outside the mount what they
# wrote and what they made durable; the czfs daemon is killed with -9 at a
# random moment; the dead mount is detached, fsck.czfs -n checks the image
# (when it is built), the image is mounted again and every file is checked:
# all fsync'd data there byte for byte, nothing the writers never wrote,
# files of earlier rounds unchanged.  The image carries over between
# rounds, so later rounds crash an image that has crashed before.
#
# Only czfs has a daemon to kill.  On tmpfs and ext4 the writers are killed
# instead (ext4 is then remounted) and the same verifier runs: that proves
# the harness, not crash safety; and a deliberately spoiled block must fail
# the verifier.
#   CZFS_CRASH_ITERS  rounds (default 5; bench/crash runs 100)
#   CZFS_CRASH_SEED   seed of the kill moments and the writers (default 1)
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/rwlib.sh"
# with recompression at work underneath: a cluster written in part and
# left a second is compressed again while the test goes on
[ "$RW_TARGET" != czfs ] || RW_MOUNT_OPTS+=(-o recompress=1)
require_fuse

iters=${CZFS_CRASH_ITERS:-5}
RANDOM=${CZFS_CRASH_SEED:-1}
py="$top_srcdir/tests/integration/rw_crash.py"
side="$T/side"
mkdir -p "$side"
[ "$RW_TARGET" = czfs ] ||
	note "$RW_TARGET: no daemon to kill: the writers are killed instead (checks the harness only)"

# czfs starts from mkfs -d of a tree of small files: its metadata leaves are
# in leaf packs, so the writes copy their parents out of them as they go
# (czfs(5) "Leaf packs"), crash after crash; the tree must not change.
seed=$T/seed
mkdir -p "$seed/a" "$seed/b"
(cd "$seed/a" && seq -f 'seed-file-%05g' 1 1500 | xargs touch)
for i in $(seq 1 300); do echo "seed $i" >"$seed/b/s$i"; done
if [ "$RW_TARGET" = czfs ]; then
	"$MKFS" -q -d "$seed" "$T/probe.img"
	"$top_builddir/dump/dump.czfs" "$T/probe.img" | grep -q "leaf_packs: [1-9]" ||
		fail "the seed tree makes no leaf packs"
	rw_setup 2G -d "$seed"
else
	rw_setup 2G
	cp -a "$seed/a" "$seed/b" "$M/"
fi

crash() {
	local p
	# The writers stop first, each where it is: one inside a request
	# stays there, and the daemon dies with the request in flight, but
	# none goes on once the dead mount is detached.  Killed only after
	# the detach, a writer could go on in the empty directory under $M
	# (one still starting makes its directory there), log its fsyncs
	# there as synced, and the next mount hides them: "it8/w0: missing,
	# though files in it synced", blamed on czfs.
	for p in "${RW_PIDS[@]}"; do
		kill -STOP "$p" 2>/dev/null || true
	done
	if [ "$RW_TARGET" = czfs ]; then
		rw_kill_daemon
		mountpoint -q "$M" && fail "$M still mounted after the kill"
	fi
	for p in "${RW_PIDS[@]}"; do
		kill -9 "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	RW_PIDS=()
	# nor did one before the crash, a mount gone mid-round
	if [ "$RW_TARGET" = czfs ] && [ -n "$(ls -A "$M")" ]; then
		ls -AR "$M" >&2
		fail "a writer wrote under the detached mount point $M"
	fi
	case $RW_TARGET in
	czfs)
		rw_fsck
		rw_mount_existing
		;;
	ext4)
		rw_remount
		;;
	esac
}

for i in $(seq 1 "$iters"); do
	for w in 0 1; do
		: >"$side/it$i+w$w.log"	# verified even if killed before it starts
		python3 "$py" writer "$M/it$i/w$w" "$side/it$i+w$w.log" \
			"$((RANDOM * 10 + w))" 2>"$T/writer.$i.$w.err" &
		RW_PIDS+=($!)
	done
	# the kill: 0.3 to 3 s into the round
	sleep "$(printf '%d.%03d' $((RANDOM % 3)) $((300 + RANDOM % 700)))"
	for p in "${RW_PIDS[@]}"; do
		kill -0 "$p" 2>/dev/null || {
			cat "$T"/writer.$i.*.err >&2
			fail "a writer of round $i died before the crash"
		}
	done
	crash
	python3 "$py" verify "$M" "$side" || fail "round $i: verify after the crash"
done

if [ "$RW_TARGET" != czfs ]; then
	python3 "$py" corrupt "$M" "$side"
	if python3 "$py" verify "$M" "$side" 2>"$T/selftest.err"; then
		fail "the verifier accepted a spoiled block"
	fi
	grep -q "block 0" "$T/selftest.err" || fail "the verifier failed for another reason"
fi
diff -r "$seed/a" "$M/a" >&2 || fail "the seed tree changed"
diff -r "$seed/b" "$M/b" >&2 || fail "the seed tree changed"
rw_umount
rw_fsck
