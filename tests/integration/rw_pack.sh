#!/bin/bash
# Packed files under the random-operation exerciser and a killed daemon:
# an image made by mkfs.czfs with packed small files and tails, the
# packs in runs (and a whole copy sharing its clusters), is mounted
# read-write; czfs_fsx -e
# starts from each packed file's bytes and rewrites, appends to,
# truncates and punches it, checked against the model after every op and
# again after a remount; fsck is clean.  Then writers rewrite and delete
# packed files while the daemon is killed with SIGKILL: the image stays
# consistent (fsck -n clean) and mounts, every time.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/rwlib.sh"
require_fuse
[ "$RW_TARGET" = czfs ] || { note "packs are czfs's: nothing to do on $RW_TARGET"; exit 0; }
[ -x "$FSX" ] || fail "$FSX not built"
FSCK="$top_builddir/fsck/fsck.czfs"
ops=${CZFS_FSX_OPS:-1500}

make_src() {	# DIR: small files and tails of every size, and a copy
	local d=$1 n
	mkdir -p "$d/s"
	head -c 2000000 < <(cat /usr/include/*.h) >"$T/text"
	for n in 1 100 2047 2049 4095 4097 20000 65535 65537 140000; do
		head -c "$n" "$T/text" >"$d/s/f$n"
	done
	for n in $(seq 1 200); do
		tail -c $((n * 17)) "$T/text" >"$d/s/g$n"
	done
	head -c 300000 "$T/text" >"$d/big"
	cp "$d/big" "$d/big.copy"
}

make_src "$T/src"
"$MKFS" -q -s 512M -d "$T/src" "$RW_IMG"
"$top_builddir/dump/dump.czfs" "$RW_IMG" | grep -q "^  packs:" || fail "the image has no packs"
# mkfs lays the compressed packs in runs (czfs(5) "Sliced packs"): the
# exerciser moves files out of packs that share their runs' blocks
"$top_builddir/dump/dump.czfs" "$RW_IMG" | grep -q "^    in_runs: [1-9]" ||
	fail "the image has no packs in runs"
rw_mount_existing

note "czfs_fsx -e on packed files ($ops ops each)"
seed=1
for f in s/f1 s/f2049 s/f4097 s/f20000 s/f65537 s/f140000 s/g7 big.copy; do
	"$FSX" -e -N "$ops" -S "$seed" -c 64k -l 1M -d "$T/m.$seed" "$M/$f" \
		>"$T/fsx.$seed.log" 2>&1 || { cat "$T/fsx.$seed.log" >&2; fail "czfs_fsx -e on $f"; }
	echo "$f" >"$T/name.$seed"
	seed=$((seed + 1))
done
cmp "$T/src/big" "$M/big" || fail "big changed while its copy was exercised"
rw_remount
for m in "$T"/m.*; do
	f=$(cat "$T/name.${m##*.}")
	cmp "$m" "$M/$f" || fail "$f differs from its model after a remount"
done
cmp "$T/src/s/g8" "$M/s/g8" || fail "a neighbour in the pack changed"
rw_umount
rw_fsck

note "SIGKILL while packed files are rewritten and deleted"
for round in 1 2 3; do
	rm -rf "$T/src2"
	make_src "$T/src2"
	"$MKFS" -q -f -s 512M -d "$T/src2" "$RW_IMG"
	rw_mount_existing
	(
		i=0
		while :; do
			i=$((i + 1))
			echo "new $i" >"$M/s/g$((i % 200 + 1))" 2>/dev/null || exit 0
			rm -f "$M/s/g$(((i + 100) % 200 + 1))" 2>/dev/null || exit 0
			printf x >>"$M/s/f2049" 2>/dev/null || exit 0
			[ $((i % 20)) -ne 0 ] || sync "$M/s/f2049" 2>/dev/null || exit 0
		done
	) &
	writer=$!
	sleep $((round + 1))
	kill -9 "${CZFS_PIDS[-1]}"
	wait "$writer" 2>/dev/null || true
	fusermount3 -u "$M" 2>/dev/null || umount -l "$M" || true
	wait "${CZFS_PIDS[-1]}" 2>/dev/null || true
	CZFS_MOUNTS[-1]=""
	"$FSCK" -n "$RW_IMG" >"$T/fsck.out" 2>&1 ||
		{ cat "$T/fsck.out" >&2; fail "round $round: fsck -n after SIGKILL"; }
	rw_mount_existing
	cmp "$T/src2/big" "$M/big" || fail "round $round: big differs"
	cmp "$T/src2/s/f140000" "$M/s/f140000" || fail "round $round: an untouched packed file differs"
	rw_umount
	rw_fsck
done
