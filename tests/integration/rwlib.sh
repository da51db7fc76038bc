# Shared helpers of the read-write tests (sourced after lib.sh, bash).
#
# The target comes from the environment, so each harness can first be
# proven on a kernel filesystem and then run on czfs:
#
#   CZFS_RW_TARGET=czfs   (default) mkfs.czfs -s SIZE IMAGE, czfs-fuse
#   CZFS_RW_TARGET=tmpfs  a tmpfs of SIZE (cannot be remounted with data)
#   CZFS_RW_TARGET=ext4   mkfs.ext4 on a sparse SIZE file, mount -o loop
#
# CZFS_RW_MOUNT_OPTS: czfs-fuse options (default "-o allow_other", so that
# other users reach the mount and the daemon's permission checks count).
#
# rw_setup mounts the target at $M; the EXIT trap unmounts it even when a
# check fails, kills a czfs daemon that does not end after its unmount and
# the workload processes listed in RW_PIDS.

RW_TARGET=${CZFS_RW_TARGET:-czfs}
FSX="$top_builddir/tests/fsx/czfs_fsx"
RENAMEAT2="$top_builddir/tests/fsx/renameat2"
FSCK="$top_builddir/fsck/fsck.czfs"
M="$T/mnt"
RW_IMG="$T/img"
RW_SIZE=2G
declare -a RW_MKFS_OPTS=()
declare -a RW_PIDS=()	# workload processes: killed at exit if still there
read -r -a RW_MOUNT_OPTS <<<"${CZFS_RW_MOUNT_OPTS:--o allow_other}"

case $RW_TARGET in
czfs | tmpfs | ext4) ;;
*) fail "CZFS_RW_TARGET='$RW_TARGET': use czfs, tmpfs or ext4" ;;
esac

# Ends a czfs daemon still alive 10 s after its unmount (a hung daemon must
# not outlive the test), then runs lib.sh's cleanup with our status.
rw_cleanup() {
	local rc=$? i pid n
	set +e	# clean up everything, whatever fails on the way
	for pid in "${RW_PIDS[@]}"; do
		kill -9 "$pid" 2>/dev/null || true
	done
	for i in "${!CZFS_MOUNTS[@]}"; do
		[ -n "${CZFS_MOUNTS[$i]}" ] || continue
		pid=${CZFS_PIDS[$i]}
		if mountpoint -q "${CZFS_MOUNTS[$i]}"; then
			fusermount3 -u "${CZFS_MOUNTS[$i]}" 2>/dev/null ||
				umount -l "${CZFS_MOUNTS[$i]}" || true
		fi
		# 120 s, a hang guard: the last checkpoint of a sanitizer
		# build on a loaded machine is slow
		for n in $(seq 1 1200); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			echo "daemon $pid still running 120 s after its unmount: killed" >&2
			kill -9 "$pid" 2>/dev/null || true
			rc=1
		fi
	done
	(exit "$rc")
	czfs_cleanup
}
trap rw_cleanup EXIT

rw_need() {
	command -v "$1" >/dev/null || fail "$1 is needed (scripts/install-deps test)"
}

rw_mount_existing() {
	case $RW_TARGET in
	ext4)
		mkdir -p "$M"
		mount -o loop "$RW_IMG" "$M"
		EXTRA_MOUNTS+=("$M")
		;;
	czfs)
		czfs_mount "$RW_IMG" "$M" "${RW_MOUNT_OPTS[@]}"
		;;
	tmpfs)
		fail "a tmpfs cannot be mounted again with its data"
		;;
	esac
}

# rw_setup [SIZE [mkfs.czfs options...]]: a fresh, empty target at $M.
# SIZE (default 2G) is the tmpfs size, the ext4 image size or the czfs
# size limit.  A mount that is not writable is a failure, not a skip.
rw_setup() {
	RW_SIZE=${1:-2G}
	shift || true
	RW_MKFS_OPTS=("$@")
	chmod 0755 "$T"	# other users (setpriv tests) reach $M through $T
	case $RW_TARGET in
	tmpfs)
		mkdir -p "$M"
		mount -t tmpfs -o "size=$RW_SIZE,mode=0755" czfs-rw "$M"
		EXTRA_MOUNTS+=("$M")
		;;
	ext4)
		rm -f "$RW_IMG"
		truncate -s "$RW_SIZE" "$RW_IMG"
		# ea_inode: xattr values up to 64 KiB, as the issue asks
		mkfs.ext4 -q -F -O ea_inode "$RW_IMG"
		rw_mount_existing
		;;
	czfs)
		rm -f "$RW_IMG"
		"$MKFS" -q -s "$RW_SIZE" "${RW_MKFS_OPTS[@]}" "$RW_IMG"
		rw_mount_existing
		;;
	esac
	touch "$M/.rw-probe" 2>/dev/null ||
		fail "$RW_TARGET mount at $M is not writable (czfs: no read-write support in this build?)"
	rm -f "$M/.rw-probe"
}

# Can the target be unmounted and mounted again with its data?
rw_can_remount() {
	[ "$RW_TARGET" != tmpfs ]
}

# Unmount $M (a czfs daemon must end cleanly) and mount the same target.
rw_remount() {
	rw_umount
	rw_mount_existing
}

# rw_umount: unmount $M for good; the daemon must exit with status 0.
rw_umount() {
	case $RW_TARGET in
	czfs)
		czfs_umount "$M"
		;;
	*)
		sync
		umount "$M"
		;;
	esac
}

# rw_fsck: check the unmounted image: e2fsck for ext4, fsck.czfs when it
# has been built; nothing for tmpfs.
rw_fsck() {
	case $RW_TARGET in
	ext4)
		e2fsck -fn "$RW_IMG" >"$T/fsck.log" 2>&1 ||
			{ cat "$T/fsck.log" >&2; fail "e2fsck found errors"; }
		;;
	czfs)
		if [ -x "$FSCK" ]; then
			"$FSCK" -n "$RW_IMG" >"$T/fsck.log" 2>&1 ||
				{ cat "$T/fsck.log" >&2; fail "fsck.czfs -n found errors"; }
		else
			note "fsck.czfs not built: image not checked"
		fi
		;;
	esac
}

# Bytes free for an unprivileged user (f_bavail * f_frsize) on $M.
rw_bavail() {
	stat -f -c '%a %S' "$M" | awk '{ printf "%d\n", $1 * $2 }'
}

# rw_as_nobody CMD...: run CMD as nobody:nogroup with no extra groups.
rw_as_nobody() {
	setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"
}

# The pid of the daemon serving $M (czfs only).
rw_daemon_pid() {
	local i
	for i in "${!CZFS_MOUNTS[@]}"; do
		if [ "${CZFS_MOUNTS[$i]}" = "$M" ]; then
			echo "${CZFS_PIDS[$i]}"
			return 0
		fi
	done
	fail "$M is not a czfs mount of this test"
}

# rw_kill_daemon: kill -9 the czfs daemon of $M (by its pid, never by a
# name), detach the dead mount, reap the daemon; as a crash would.
rw_kill_daemon() {
	local i
	for i in "${!CZFS_MOUNTS[@]}"; do
		[ "${CZFS_MOUNTS[$i]}" = "$M" ] || continue
		kill -9 "${CZFS_PIDS[$i]}" 2>/dev/null || true
		wait "${CZFS_PIDS[$i]}" 2>/dev/null || true
		umount -l "$M" 2>/dev/null || true
		CZFS_MOUNTS[$i]=""
		return 0
	done
	fail "$M is not a czfs mount of this test"
}
