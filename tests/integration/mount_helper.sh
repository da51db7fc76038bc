#!/bin/bash
# The mount helpers as mount(8) and umount(8) run them: an fstab line
# mounts and unmounts; remount ro then rw changes the running mount and
# keeps the data (the image is final while read-only); remount rw of a
# daemon started read-only is refused with a message; after umount
# returns the image is final and free (20 rounds: write 50 MiB, umount,
# then at once mount again, fsck, or copy the image); the tools wait for a
# daemon that is still finishing after fusermount3 -u.
#
# It runs in a private mount namespace: the helpers are laid over the
# directory mount(8) searches (/sbin) and a tmpfs over libmount's utab
# (/run/mount), so nothing of the host changes.
if [ -z "${CZFS_MOUNT_NS:-}" ]; then
	# A chroot whose root is not a mount of its own cannot have a private
	# mount namespace, and without one the helpers would be laid over the
	# host's /sbin: skip there (scripts/fresh-check's chroot has one).
	if ! err=$(unshare -m --propagation private true 2>&1); then
		echo "SKIP: no private mount namespace here: $err" >&2
		exit 77
	fi
	CZFS_MOUNT_NS=1 exec unshare -m --propagation private "$0" "$@"
fi
. "$top_srcdir/tests/integration/lib.sh"
require_fuse
FSCK="$top_builddir/fsck/fsck.czfs"
export CZFS_FUSE="$FUSE"	# mount.czfs runs this one, not an installed one

note "helpers over $(realpath /sbin), a private utab"
mkdir -p "$T/sbin" "$T/mnt" "$T/mnt2" "$T/mnt3"
for h in mount.czfs mount.fuse.czfs umount.fuse.czfs; do
	cp -P "$top_builddir/mount/$h" "$T/sbin/$h"
done
sbin=$(realpath /sbin)
mount -t overlay czfs-helpers -o "lowerdir=$T/sbin:$sbin" "$sbin"
mkdir -p /run/mount
mount -t tmpfs czfs-utab /run/mount
EXTRA_MOUNTS+=("$T/mnt" "$T/mnt2" "$T/mnt3")

daemons() {	# the czfs-fuse processes serving IMAGE
	pgrep -f "czfs-fuse $1 " || true
}

note "--help, --version, usage errors"
for h in mount.czfs umount.fuse.czfs; do
	"/sbin/$h" --help | grep -q "^usage: $h" || fail "$h --help"
	"/sbin/$h" --version | grep -q "^$h (czfs) [0-9]" || fail "$h --version"
	st=0; "/sbin/$h" >/dev/null 2>&1 || st=$?
	[ "$st" = 1 ] || fail "$h without arguments: exit $st, not 1"
done

note "an fstab line mounts and unmounts"
sample_files "$T/src" "text bins"
"$MKFS" -q -s 1G -d "$T/src" "$T/img"
printf '%s %s czfs defaults,nofail,commit=2 0 0\n' "$T/img" "$T/mnt" >"$T/fstab"
mount -T "$T/fstab" "$T/mnt" || fail "mount -T fstab"
grep -q " $T/mnt .* - fuse.czfs $T/img " /proc/self/mountinfo || fail "not a fuse.czfs mount"
cmp "$T/src/text" "$T/mnt/text" || fail "data through the fstab mount"
grep -q "helper=fuse.czfs" /run/mount/utab || fail "no umount helper in utab"
cp "$T/src/bins" "$T/mnt/copy"
umount "$T/mnt" || fail "umount"
[ -z "$(daemons "$T/img")" ] || fail "daemon still running after umount returned"
"$FSCK" -n "$T/img" >"$T/fsck" || fail "fsck right after umount: $(cat "$T/fsck")"

note "remount ro, then rw, keeps the mount and the data"
mount -T "$T/fstab" "$T/mnt" || fail "mount -T fstab again"
cmp "$T/src/bins" "$T/mnt/copy" || fail "data written before umount"
pid=$(daemons "$T/img")
echo more >"$T/mnt/more"
mount -o remount,ro "$T/mnt" || fail "remount,ro"
[ "$(daemons "$T/img")" = "$pid" ] || fail "remount ro started another daemon"
! touch "$T/mnt/new" 2>"$T/err" || fail "write after remount,ro"
grep -q "Read-only file system" "$T/err" || fail "remount ro: $(cat "$T/err")"
grep -q '^daemon.readonly 1$' <("$top_builddir/src/fuse/czfs-stat" "$T/mnt") ||
	fail "daemon did not follow remount ro"
# read-only: the image is final, a copy of it is a clean image
cp "$T/img" "$T/copy.img"
"$FSCK" -n "$T/copy.img" >"$T/fsck" || fail "copy taken while ro: $(cat "$T/fsck")"
"$FSCK" --extract="$T/x" "$T/copy.img" >/dev/null || fail "extract the copy"
[ "$(cat "$T/x/more")" = more ] || fail "copy taken while ro lacks the last write"
mount -o remount,rw "$T/mnt" || fail "remount,rw"
[ "$(daemons "$T/img")" = "$pid" ] || fail "remount rw started another daemon"
echo after >"$T/mnt/new" || fail "write after remount,rw"
umount "$T/mnt"
mount -T "$T/fstab" "$T/mnt"
[ "$(cat "$T/mnt/new")" = after ] && [ "$(cat "$T/mnt/more")" = more ] ||
	fail "data lost across remounts"
umount "$T/mnt"

note "remount rw of a read-only daemon: refused, the mount stays"
mount -t czfs -o ro "$T/img" "$T/mnt" || fail "mount -t czfs -o ro"
! mount -o remount,rw "$T/mnt" 2>"$T/err" || fail "remount rw of an ro daemon worked"
grep -q "started read-only" "$T/err" || fail "message: $(cat "$T/err")"
grep -q " $T/mnt ro,.* - fuse.czfs " /proc/self/mountinfo || fail "mount changed"
cmp "$T/src/text" "$T/mnt/text" || fail "ro mount broken by the refused remount"
umount "$T/mnt"

note "dev and suid as mount(8) means them for root: on unless nodev, nosuid"
mount_opts() { awk -v m="$T/mnt" '$5 == m {print $6}' /proc/self/mountinfo; }
mount -t czfs -o dev,suid "$T/img" "$T/mnt" || fail "mount -o dev,suid"
! grep -q -e nodev -e nosuid <<<"$(mount_opts)" || fail "dev,suid not applied: $(mount_opts)"
mknod "$T/mnt/null" c 1 3
echo x >"$T/mnt/null" || fail "a device node on a dev mount"
umount "$T/mnt"
mount -t czfs "$T/img" "$T/mnt"
! grep -q -e nodev -e nosuid <<<"$(mount_opts)" || fail "root's default mount: $(mount_opts)"
umount "$T/mnt"
mount -t czfs -o nodev,nosuid "$T/img" "$T/mnt"
[ "$(grep -o -e nodev -e nosuid <<<"$(mount_opts)" | sort | tr '\n' ' ')" = "nodev nosuid " ] ||
	fail "nodev,nosuid not applied: $(mount_opts)"
! sh -c "echo x >'$T/mnt/null'" 2>/dev/null || fail "a device node worked on a nodev mount"

note "two mounts of one image: a second one is refused while the first is writable"
! "$FUSE" "$T/img" "$T/mnt2" -f 2>"$T/err" || fail "a second mount of a mounted image"
grep -q "image is in use: mounted on $T/mnt" "$T/err" || fail "second mount: $(cat "$T/err")"
umount "$T/mnt"
mount -t czfs -o ro "$T/img" "$T/mnt" && mount -t czfs -o ro "$T/img" "$T/mnt2" ||
	fail "two read-only mounts of one image"
cmp "$T/mnt/text" "$T/mnt2/text" || fail "two read-only mounts read alike"
! "$FUSE" "$T/img" "$T/mnt3" -f 2>"$T/err" || fail "a writable mount beside read-only ones"
umount "$T/mnt2"
umount "$T/mnt"

note "20 rounds: write 50 MiB, umount, then at once mount / fsck / copy"
cat "$T/src/bins" "$T/src/text" "$T/src/bins" "$T/src/text" "$T/src/bins" \
	"$T/src/text" "$T/src/bins" 2>/dev/null | head -c 52428800 >"$T/50M" || true
[ "$(stat -c %s "$T/50M")" = 52428800 ] || fail "50 MiB of data"
"$MKFS" -q -f -s 2G "$T/img"
ms=()
for r in $(seq 1 20); do
	mount -t czfs "$T/img" "$T/mnt" || fail "round $r: mount"
	dd if="$T/50M" of="$T/mnt/f$((r % 3))" bs=1M status=none conv=notrunc
	printf '%08d' "$r" | dd of="$T/mnt/f$((r % 3))" bs=1 seek=1000 conv=notrunc status=none
	t0=$(date +%s%N)
	umount "$T/mnt" || fail "round $r: umount"
	ms+=($(( ($(date +%s%N) - t0) / 1000000 )))
	case $((r % 3)) in
	0)	mount -t czfs "$T/img" "$T/mnt2" || fail "round $r: mount at once"
		[ "$(dd if="$T/mnt2/f0" bs=1 skip=1000 count=8 status=none)" = "$(printf '%08d' "$r")" ] ||
			fail "round $r: the remount does not show the last write"
		umount "$T/mnt2" ;;
	1)	"$FSCK" -n "$T/img" >"$T/fsck" || fail "round $r: fsck at once: $(cat "$T/fsck")" ;;
	2)	cp "$T/img" "$T/snap"
		[ -z "$(daemons "$T/img")" ] || fail "round $r: daemon still running"
		sleep 0.5
		cmp "$T/img" "$T/snap" || fail "round $r: the image changed after umount returned" ;;
	esac
done
"$FSCK" -n "$T/img" >/dev/null || fail "fsck after the rounds"
note "20 rounds passed; umount took $(printf '%s\n' "${ms[@]}" | sort -n |
	awk '{a[NR] = $1} END {printf "median %d ms, max %d ms", a[int((NR + 1) / 2)], a[NR]}')"

note "fusermount3 -u returns early: the next mount and fsck wait for the daemon"
for r in 1 2 3; do
	"$FUSE" "$T/img" "$T/mnt" || fail "mount"
	dd if="$T/50M" of="$T/mnt/g" bs=1M status=none
	fusermount3 -u "$T/mnt"
	if [ "$r" = 2 ]; then
		"$FSCK" -n "$T/img" >"$T/fsck" 2>&1 || fail "fsck after fusermount3 -u: $(cat "$T/fsck")"
	else
		"$FUSE" "$T/img" "$T/mnt" 2>"$T/err" || fail "mount after fusermount3 -u: $(cat "$T/err")"
		cmp "$T/50M" "$T/mnt/g" || fail "data after fusermount3 -u and a mount"
		fusermount3 -u "$T/mnt"
	fi
done
for _ in $(seq 1 100); do [ -z "$(daemons "$T/img")" ] && break; sleep 0.1; done
note "ok"
