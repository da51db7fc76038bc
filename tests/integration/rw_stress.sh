#!/bin/bash
# Several writers and readers at once (tests/integration/rw_stress.py):
# writers on their own files with renames across directories, an appender
# and readers checking that the shared log is always a prefix of what was
# appended, stripers writing interleaved 4 KiB blocks of one file (several
# in each 64 KiB cluster), readers checking finished files against the
# writers' checksums; then everything verified exactly, again after a
# remount where the target allows one.
#   CZFS_STRESS_SECONDS  how long the workload runs (default 20)
#   CZFS_STRESS_SEED     seed of the workload (default 1)
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/rwlib.sh"
require_fuse

secs=${CZFS_STRESS_SECONDS:-20}
seed=${CZFS_STRESS_SEED:-1}
py="$top_srcdir/tests/integration/rw_stress.py"
side="$T/side"
mkdir -p "$side"

rw_setup 2G
mkdir -p "$M/work" "$M"/done/d{0,1,2,3}
truncate -s 8M "$M/striped"
: >"$M/shared.log"

pids=()
run() {
	python3 "$py" "$1" "$2" "$M" "$side" "$secs" "$seed" &
	pids+=($!)
}
for i in 1 2 3; do run writer "$i"; done
run appender 0
for i in 0 1 2; do run striper "$i"; done
for i in 0 1 2; do run reader "$i"; done
st=0
for p in "${pids[@]}"; do wait "$p" || st=1; done
[ $st = 0 ] || fail "a stress process failed"

python3 "$py" verify 0 "$M" "$side" 0 "$seed" || fail "final verify"
if rw_can_remount; then
	rw_remount
	python3 "$py" verify 0 "$M" "$side" 0 "$seed" || fail "verify after a remount"
	rw_umount
	rw_fsck
else
	note "tmpfs: no remount, verified on the live mount"
fi
