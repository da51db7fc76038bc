# The lock around a drop of the kernel's caches (sourced by
# tests/integration/lib.sh and bench/lib.sh).
#
# The kernel's caches are the machine's, and the suite runs tests side by
# side: a test that counts a walk's requests holds this lock from its drop
# to its count, so that no other test's drop empties the caches mid-walk
# (dentries listed with attributes would come back as LOOKUPs).  A fixed
# path: every test of every suite on the machine takes the same lock, in
# /dev/shm, which CI's and fresh-machine's chroots share with the host
# (/dev is bound into them; each has its own /tmp).
CZFS_CACHES_LOCK=${CZFS_CACHES_LOCK:-/dev/shm/czfs-test-caches.lock}
[ -w "${CZFS_CACHES_LOCK%/*}" ] || CZFS_CACHES_LOCK=/tmp/czfs-test-caches.lock
CZFS_CACHES_FD=

# caches_lock: hold the lock until caches_unlock (or the end of the test).
caches_lock() {
	[ -z "$CZFS_CACHES_FD" ] || { echo "caches_lock: already held" >&2; exit 1; }
	exec {CZFS_CACHES_FD}>>"$CZFS_CACHES_LOCK"
	flock -x "$CZFS_CACHES_FD"
}

# caches_unlock: unlock the open file itself, not only our descriptor: a
# process started under the lock shares it.
caches_unlock() {
	[ -n "$CZFS_CACHES_FD" ] || return 0
	flock -u "$CZFS_CACHES_FD"
	exec {CZFS_CACHES_FD}>&-
	CZFS_CACHES_FD=
}

# drop_caches [LEVEL]: sync, then drop the kernel's caches (3: pages,
# dentries and inodes; 2: dentries and inodes), under the lock.
drop_caches() {
	local held=$CZFS_CACHES_FD
	[ -n "$held" ] || caches_lock
	sync
	echo "${1:-3}" >/proc/sys/vm/drop_caches
	[ -n "$held" ] || caches_unlock
}

