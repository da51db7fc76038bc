#!/bin/bash
# POSIX corner cases on the target (tests/integration/rw_posix.py, one clear
# check per function: creation of every kind, link counts, rename with its
# flags and errors, unlink of open files, name and path limits, O_APPEND,
# O_TRUNC, chmod/chown/utimens, ctime/mtime/atime, setgid and sticky
# directories, permissions as other users, xattrs, statfs); then, where the
# target can be remounted, the whole tree (inode numbers, link counts,
# modes, owners, times, xattrs, contents) must be the same after a remount.
#   RW_POSIX_ONLY=NAME runs the checks whose name contains NAME.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/rwlib.sh"
require_fuse
rw_need setpriv
[ -x "$RENAMEAT2" ] || fail "$RENAMEAT2 not built"
export RENAMEAT2

rw_setup 2G
python3 "$top_srcdir/tests/integration/rw_posix.py" "$M" "$RW_TARGET" ||
	fail "POSIX checks failed on $RW_TARGET"

# %i %n: stable inode numbers and link counts; %C@: no ctime change
manifest() {
	(cd "$M" && find . -mindepth 1 -printf '%p %i %y %m %U %G %n %s %T@ %C@ %l\n' |
		LC_ALL=C sort
	 find . -type f -exec md5sum {} + | LC_ALL=C sort)
	tree_xattrs "$M"
}
if rw_can_remount; then
	manifest >"$T/before"
	rw_remount
	manifest >"$T/after"
	diff "$T/before" "$T/after" >&2 || fail "the tree changed across a remount"
	rw_umount
	rw_fsck
else
	note "tmpfs: no remount check"
fi
