#!/bin/bash
# Power-loss replay (issue 31): a kill -9 leaves every write the daemon
# made in the host's page cache, a power cut does not.  Each workload of
# powerloss.py (small fsync'd files, appends, random overwrites, renames,
# recompression at work, packs, fallocate promises, a commit too big for
# one flush, three writers at once with -o direct_io) runs on a fresh
# image mounted with -o log_writes, which records every write, punch,
# resize and flush of the daemon.
# tests/czfs-replay then rebuilds, at many cuts of the log, images a disk
# may hold after a power cut (what the last flush covers, and subsets,
# torn writes included, of what followed), opens each as the daemon
# mounts it and checks every file fsync'd before the cut, byte for byte.
# It also checks that the whole log replayed gives the image as the
# unmount left it, so the log misses no write, and runs fsck.czfs -n on
# a sample of the images.
#   CZFS_POWERLOSS_IMAGES  images in all, over the workloads (default
#                          10000)
#   CZFS_POWERLOSS_SEED    seed of the workloads and the subsets (default 1)
#   CZFS_POWERLOSS_OPTS    more czfs-fuse options (e.g. "-o direct_io")
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/rwlib.sh"
require_fuse
[ "$RW_TARGET" = czfs ] || { note "powerloss: czfs only (its daemon logs)"; exit 77; }

REPLAY="$top_builddir/tests/czfs-replay"
py="$top_srcdir/tests/integration/powerloss.py"
images=${CZFS_POWERLOSS_IMAGES:-10000}
seed=${CZFS_POWERLOSS_SEED:-1}
workloads=(small append overwrite rename recompress pack falloc big parallel)
read -r -a more_opts <<<"${CZFS_POWERLOSS_OPTS:-}"
per=$(((images + ${#workloads[@]} - 1) / ${#workloads[@]}))
total=0 fscked=0

# refused WHAT MESSAGE REPLAY-ARGS...: czfs-replay exits 2 with MESSAGE.
refused() {
	local what=$1 msg=$2 rc=0
	shift 2
	"$REPLAY" "$@" 2>"$T/bad.err" || rc=$?
	[ "$rc" = 2 ] && grep -q "$msg" "$T/bad.err" ||
		{ cat "$T/bad.err" >&2; fail "$what: exit $rc"; }
}

# Bad input is refused with a clear message, never replayed.
printf "%100s" "not a log" >"$T/bad.log"
: >"$T/empty.journal"
"$MKFS" -q -s 32M "$T/bad.img"
refused "a file that is not a write log" "bad magic" \
	"$T/bad.img" "$T/bad.log" "$T/empty.journal"

# More, on the first workload's files: a journal line that is not one,
# an image that is not the one the log began on.
bad_input() {
	echo "12 oops /x $T/bad.img" >"$T/bad.journal"
	refused "a bad journal line" "bad.journal:1: want FROM UNTIL /PATH REF" \
		"$T/$w.start" "$T/$w.wlog" "$T/bad.journal"
	refused "an image the log did not begin on" "must be copied before the mount" \
		"$T/bad.img" "$T/$w.wlog" "$T/$w.journal"
}

for w in "${workloads[@]}"; do
	opts=(-o "log_writes=$T/$w.wlog")
	[ "$w" != recompress ] || opts+=(-o recompress=1 -o commit=1)
	# the image written with O_DIRECT: writeback's buffers aligned
	[ "$w" != parallel ] || opts+=(-o direct_io)
	RW_IMG="$T/$w.img"
	"$MKFS" -q -s 64M "$RW_IMG"
	cp --sparse=always "$RW_IMG" "$T/$w.start"
	RW_MOUNT_OPTS=(-o allow_other "${opts[@]}" "${more_opts[@]}")
	rw_mount_existing
	python3 "$py" "$w" "$M" "$T/$w.wlog" "$T/$w.journal" "$T/$w.ref" "$seed" ||
		fail "workload $w failed"
	rw_umount
	# two images of each workload saved as the power cut left them, for
	# fsck.czfs below (the failing ones too, to look at)
	mkdir -p "$T/$w.saved"
	out=$("$REPLAY" -s "$seed" -i "$per" -F "$RW_IMG" -k "$T/$w.saved" \
		-S $((per / 3 + 1)) "$T/$w.start" "$T/$w.wlog" "$T/$w.journal" \
		2>"$T/$w.err") ||
		{ cat "$T/$w.err" >&2; echo "$out" >&2
		  fail "$w: replay found an image that loses fsync'd data (above)"; }
	grep -v '^saved ' <<<"$out" | sed "s/^/$w: /"
	[ "$w" != small ] || bad_input

	n=$(sed -n 's/.* images \([0-9]*\),.*/\1/p' <<<"$out")
	checks=$(sed -n 's/.* file checks \([0-9]*\),.*/\1/p' <<<"$out")
	[ "${checks:-0}" -gt 0 ] || fail "$w: no file was checked"
	total=$((total + n))
	saved=$(sed -n 's/^saved //p' <<<"$out")
	[ -n "$saved" ] || fail "$w: no image saved for fsck"
	for img in $saved; do
		"$FSCK" -n "$img" >"$T/fsck.log" 2>&1 ||
			{ cat "$T/fsck.log" >&2; fail "$w: fsck.czfs -n $img found errors"; }
		fscked=$((fscked + 1))
	done
	rm -f "$T/$w.wlog" "$T/$w.img" "$T/$w.start"
	rm -rf "$T/$w.ref" "$T/$w.saved"
done
echo "images in all: $total (asked: $images), $fscked of them checked by fsck.czfs -n"
[ "$total" -ge "$images" ] || fail "only $total images tried, $images asked"
