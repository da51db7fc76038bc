#!/bin/bash
# A full filesystem (tests/integration/rw_enospc.py): fill a 64 MiB target
# with incompressible files until ENOSPC; the writer must get ENOSPC (not
# EIO, not a crash), every complete file must read back, unlink must work
# on the full filesystem, deleting files must give the space back (statfs
# f_bavail grows), and the space must fill again; with remounts between
# where the target allows.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/rwlib.sh"
require_fuse

py="$top_srcdir/tests/integration/rw_enospc.py"
side="$T/side"
mkdir -p "$side"
size=$((64 << 20))
rw_setup 64M
MiB=$((1 << 20))

# bavail: what statfs says is free now.  The filesystem may hand freed
# blocks back at its next checkpoint (5 s apart): wait for at least WANT
# (60 s, a hang guard).
wait_bavail_above() {
	local want=$1 i
	for i in $(seq 1 600); do
		[ "$(rw_bavail)" -ge "$want" ] && return 0
		sleep 0.1
	done
	fail "f_bavail $(rw_bavail) did not reach $want ($2)"
}

remount_verify() {
	if rw_can_remount; then
		rw_remount
		python3 "$py" verify "$M" "$side" || fail "verify after a remount ($1)"
	fi
}

free0=$(rw_bavail)
filled=$(python3 "$py" fill "$M" "$side" a) || fail "first fill"
note "$RW_TARGET: ${free0} bytes free at first, $((filled / MiB)) MiB written before ENOSPC"
# 70%: a 64 MiB ext4 keeps a journal and inode tables; czfs must not
# report ENOSPC long before the image is full
[ "$filled" -ge $((size * 7 / 10)) ] ||
	fail "ENOSPC after only $((filled / MiB)) MiB of a 64 MiB target"
full=$(rw_bavail)
[ "$full" -lt $((4 * MiB)) ] || fail "full, but statfs says $full bytes are free"
python3 "$py" verify "$M" "$side" || fail "verify of the full filesystem"
remount_verify "full"

deleted=$(python3 "$py" delete "$M" "$side") || fail "delete"
wait_bavail_above $((full + deleted * 8 / 10)) "after deleting $((deleted / MiB)) MiB"
python3 "$py" verify "$M" "$side" || fail "verify after deleting"
remount_verify "after deleting"
[ "$(rw_bavail)" -ge $((full + deleted * 8 / 10)) ] ||
	fail "the freed space is gone after a remount"

refilled=$(python3 "$py" fill "$M" "$side" b) || fail "refill"
note "refilled $((refilled / MiB)) MiB after deleting $((deleted / MiB)) MiB"
[ "$refilled" -ge $((deleted * 8 / 10)) ] ||
	fail "only $((refilled / MiB)) of $((deleted / MiB)) MiB deleted could be written again"
python3 "$py" verify "$M" "$side" || fail "verify after refilling"
remount_verify "refilled"

# everything deleted: (nearly) all the space of the start is back
python3 "$py" deleteall "$M" "$side" >/dev/null || fail "delete all"
rm -rf "${M:?}/a" "${M:?}/b"
wait_bavail_above $((free0 * 9 / 10)) "after deleting everything (at first $free0)"
if rw_can_remount; then
	rw_umount
	rw_fsck
fi
