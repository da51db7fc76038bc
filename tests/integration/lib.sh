# Shared helpers for the mounted integration tests (sourced, bash).
#
# Every test runs in its own temporary directory; mounts and daemons are
# torn down by an EXIT trap even when a check fails.  A daemon that exits
# with an error (a crash, a sanitizer report) fails the test.
# CZFS_KEEP_TMP=1 keeps the temporary directory (images, daemon logs).

set -euo pipefail

: "${top_builddir:?run through make check (top_builddir unset)}"
: "${top_srcdir:?run through make check (top_srcdir unset)}"

MKFS="$top_builddir/mkfs/mkfs.czfs"
FUSE="$top_builddir/src/fuse/czfs-fuse"

T=$(mktemp -d "${TMPDIR:-/tmp}/czfs-test.XXXXXX")
declare -a CZFS_MOUNTS=() CZFS_PIDS=() EXTRA_MOUNTS=()
# Background helpers a test started (HELPER_PIDS+=($!)): killed first at
# the end, so that one a failure left waiting holds nothing open.
declare -a HELPER_PIDS=()

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

note() {
	echo "# $*"
}

# Unmount everything we mounted, stop the daemons, check how they ended.
czfs_cleanup() {
	local rc=$? i log
	for i in "${HELPER_PIDS[@]}"; do
		kill "$i" 2>/dev/null || true
	done
	caches_unlock
	for i in "${!CZFS_MOUNTS[@]}"; do
		czfs_umount_at "$i" || rc=1
	done
	for i in "${EXTRA_MOUNTS[@]}"; do
		mountpoint -q "$i" || continue
		umount "$i" || umount -l "$i" || rc=1
	done
	if [ $rc -ne 0 ]; then		# what the daemons said helps the most
		for log in "$T"/daemon.*.log; do
			[ -s "$log" ] || continue
			echo "# last lines of $(basename "$log"):" >&2
			tail -n 20 "$log" >&2
		done
	fi
	if [ -n "${CZFS_KEEP_TMP:-}" ]; then
		echo "# CZFS_KEEP_TMP: kept $T" >&2
	else
		rm -rf "$T"
	fi
	exit $rc
}
trap czfs_cleanup EXIT

# tmpfs_mount DIR: a tmpfs (it takes xattr values up to 64 KiB, which ext4
# without ea_inode does not), unmounted at exit.
tmpfs_mount() {
	mkdir -p "$1"
	mount -t tmpfs -o size=2G,mode=0755 czfs-test "$1"
	EXTRA_MOUNTS+=("$1")
}

# czfs_mount IMAGE MNT [czfs-fuse options...]: mount in the foreground
# daemon mode (-f) in the background, wait until the mount is live.
czfs_mount() {
	local image=$1 mnt=$2 log i
	shift 2
	mkdir -p "$mnt"
	log="$T/daemon.$(basename "$mnt").log"
	"$FUSE" "$image" "$mnt" -f "$@" 2>"$log" &
	CZFS_PIDS+=($!)
	CZFS_MOUNTS+=("$mnt")
	# 120 s, a hang guard: a sanitizer build on a loaded machine is slow
	# to start
	for i in $(seq 1 1200); do
		if mountpoint -q "$mnt"; then
			return 0
		fi
		if ! kill -0 "${CZFS_PIDS[-1]}" 2>/dev/null; then
			break
		fi
		sleep 0.1
	done
	czfs_stop_late "${CZFS_PIDS[-1]}" "$mnt"
	cat "$log" >&2
	fail "mount of $image on $mnt did not come up"
}

# czfs_stop_late PID MNT: a daemon that has not mounted (yet) is stopped;
# had it mounted meanwhile, the mount goes too, never left behind.
czfs_stop_late() {
	local pid=$1 mnt=$2 i
	kill -0 "$pid" 2>/dev/null || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 1 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
	if mountpoint -q "$mnt"; then
		umount -l "$mnt" 2>/dev/null || true
	fi
}

czfs_umount_at() {
	local i=$1 mnt=${CZFS_MOUNTS[$1]} pid=${CZFS_PIDS[$1]} st=0
	[ -n "$mnt" ] || return 0
	if mountpoint -q "$mnt"; then
		fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt" || true
	fi
	wait "$pid" || st=$?
	CZFS_MOUNTS[$i]=""
	if [ "$st" -ne 0 ]; then
		echo "daemon for $mnt exited with status $st:" >&2
		cat "$T/daemon.$(basename "$mnt").log" >&2
		return 1
	fi
	return 0
}

# czfs_umount MNT: unmount one mount and check its daemon ended cleanly.
czfs_umount() {
	local i
	for i in "${!CZFS_MOUNTS[@]}"; do
		if [ "${CZFS_MOUNTS[$i]}" = "$1" ]; then
			czfs_umount_at "$i" || fail "daemon for $1 failed"
			return 0
		fi
	done
	fail "$1 is not mounted by this test"
}

# czfs_abort MNT: abort the FUSE connection of a mount (fusectl), so that
# a daemon stuck in the kernel (a test that caught a hang) can be reaped.
czfs_abort() {
	local dev
	dev=$(mountpoint -d "$1" 2>/dev/null) || return 0
	mountpoint -q /sys/fs/fuse/connections ||
		mount -t fusectl none /sys/fs/fuse/connections 2>/dev/null || true
	echo 1 >"/sys/fs/fuse/connections/${dev#*:}/abort" 2>/dev/null || true
}

# The daemon log of a mount point.
czfs_log() {
	cat "$T/daemon.$(basename "$1").log"
}

# czfs_counter MOUNTPOINT NAME: one of the mount's live counters
# (czfs-stat), empty when it has none of that name.
czfs_counter() {
	"$top_builddir/src/fuse/czfs-stat" "$1" | awk -v k="$2" '$1 == k { print $2 }'
}

# log_has MOUNTPOINT PATTERN: whether the daemon's log has a line matching
# PATTERN.  Not `czfs_log | grep -q`: under pipefail, grep's early exit
# kills cat with SIGPIPE once the log outgrows a pipe's buffer, and the
# pipeline then fails although the line is there.
log_has() {
	grep -q -- "$2" "$T/daemon.$(basename "$1").log"
}

# sample_files DIR ["NAME..."]: the suite's sample data (tests/sample-data:
# text, docs, bins, libs, mixed, packed; all of them by default), built
# from the system's own files, so no test needs a corpus.
sample_files() {
	local dir=$1
	shift
	# shellcheck disable=SC2068 # word splitting of the name list is meant
	"$top_srcdir/tests/sample-data" "$dir" ${@:-} ||
		fail "tests/sample-data could not build its files"
}

# Listing of a tree with every attribute czfs preserves, for comparison.
tree_manifest() {
	(cd "$1" && find . -mindepth 1 -printf '%p %y %m %U %G %n %s %T@ %l\n' |
		LC_ALL=C sort)
}

tree_xattrs() {
	(cd "$1" && getfattr -R -h -d -m - --absolute-names . 2>/dev/null |
		grep -v '^$' | LC_ALL=C sort) || true
}

. "$top_srcdir/tests/integration/cacheslib.sh"

# Require root and /dev/fuse: CI has both, so this is a hard failure.
require_fuse() {
	[ "$(id -u)" = 0 ] || fail "mounted tests need root"
	[ -c /dev/fuse ] || fail "mounted tests need /dev/fuse"
}
