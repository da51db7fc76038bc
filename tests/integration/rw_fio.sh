#!/bin/bash
# fio's write-and-verify job from the brd seed (rw=randwrite, bs=4k,
# ioengine=libaio, iodepth=16, verify=crc32c, do_verify=1), sized for CI
# (64 MiB per file); buffered, then direct=1 where the target takes
# O_DIRECT, then with mixed block sizes (read-modify-write of clusters).
# After a remount (where the target allows one) each file is verified
# again with verify_only, which replays the same offsets and checksums.
#   CZFS_FIO_SIZE  size of each job's file (default 64M)
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/rwlib.sh"
# with recompression at work underneath: a cluster written in part and
# left a second is compressed again while the test goes on
[ "$RW_TARGET" != czfs ] || RW_MOUNT_OPTS+=(-o recompress=1)
require_fuse
rw_need fio

size=${CZFS_FIO_SIZE:-64M}
rw_setup 2G

# job NAME [fio options...]: one write-and-verify run on $M/NAME
job() {
	local name=$1
	shift
	fio --name=write-and-verify --filename="$M/$name" --rw=randwrite \
		--bs=4k --ioengine=libaio --iodepth=16 --verify=crc32c \
		--do_verify=1 --verify_fatal=1 --size="$size" --randseed=1234 \
		--verify_state_save=0 \
		"$@" >"$T/fio.$name.log" 2>&1 || {
		cat "$T/fio.$name.log" >&2
		fail "fio job $name failed"
	}
	grep -q 'err= 0' "$T/fio.$name.log" ||
		{ cat "$T/fio.$name.log" >&2; fail "fio job $name reported errors"; }
}

declare -A opts=([buffered]="" [mixed]="--bsrange=512-256k")
names=(buffered mixed)
if python3 -c 'import os, sys; os.close(os.open(sys.argv[1], os.O_RDWR | os.O_CREAT | os.O_DIRECT))' \
	"$M/odirect-probe" 2>/dev/null; then
	opts[direct]="--direct=1"
	names+=(direct)
else
	note "$RW_TARGET: no O_DIRECT: the direct=1 job skipped"
fi
rm -f "$M/odirect-probe"

for n in "${names[@]}"; do
	# shellcheck disable=SC2086 # the options are words
	job "$n" ${opts[$n]}
done
if rw_can_remount; then
	rw_remount
	for n in "${names[@]}"; do
		# shellcheck disable=SC2086
		job "$n" ${opts[$n]} --verify_only=1
	done
	rw_umount
	rw_fsck
else
	note "tmpfs: no remount: verify_only not run"
fi
note "$RW_TARGET: fio jobs ${names[*]} passed ($size each)"
