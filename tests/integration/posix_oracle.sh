#!/bin/bash
# Differential POSIX oracle (issue 31): random, seeded sequences of file
# operations by several users run on ext4 and on czfs side by side, and
# every result and the state of every path after each one must be the
# same; a difference fails with its seed and the shortest sequence found
# (tests/integration/posix_oracle.py: what is compared, what differs by
# design).  The reference is an ext4 loop image, mounted nodev and
# nosuid as FUSE mounts are.  Without one (no mkfs.ext4, no loop device)
# the test is skipped: tmpfs is no fair reference, it differs from ext4
# in a dozen ways POSIX leaves open (ctime of no-op ACL changes,
# fallocate modes, chattr), which the list of the oracle would then have
# to carry too.
#   CZFS_ORACLE_SEEDS=1-500 CZFS_ORACLE_OPS=80: more by hand ("4,17" too)
#   CZFS_ORACLE_REPLAY=FILE: run one saved sequence (a failure says which;
#   CZFS_KEEP_TMP=1 keeps it)
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/rwlib.sh"
require_fuse

REF="$T/ext4"
CZ="$T/czfs"
chmod 0755 "$T"
mkdir -p "$REF"
if ! command -v mkfs.ext4 >/dev/null; then
	echo "SKIP: no mkfs.ext4 for the reference (scripts/install-deps test)" >&2
	exit 77
fi
truncate -s 512M "$T/ext4.img"
mkfs.ext4 -q -F "$T/ext4.img"
if ! mount -o loop,nodev,nosuid "$T/ext4.img" "$REF" 2>"$T/ext4.err"; then
	echo "SKIP: no ext4 loop mount here: $(cat "$T/ext4.err")" >&2
	exit 77
fi
EXTRA_MOUNTS+=("$REF")
"$MKFS" -q -s 1G "$T/czfs.img"
czfs_mount "$T/czfs.img" "$CZ" -o allow_other

args=("$REF" "$CZ" --out "$T")
[ -z "${CZFS_ORACLE_REPLAY:-}" ] || args+=(--replay "$CZFS_ORACLE_REPLAY")
python3 "$top_srcdir/tests/integration/posix_oracle.py" "${args[@]}" ||
	fail "czfs and ext4 differ: the sequences above"

czfs_umount "$CZ"
if [ -x "$FSCK" ]; then
	"$FSCK" -n "$T/czfs.img" >"$T/fsck.log" 2>&1 ||
		{ cat "$T/fsck.log" >&2; fail "fsck.czfs -n found errors after the sequences"; }
fi
