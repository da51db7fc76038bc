#!/bin/bash
# s3:// images in a real S3-compatible store from Debian's packages:
# OpenStack Swift with s3api (tests/integration/swiftlib.sh), one node on
# 127.0.0.1, SigV4.  The image goes up with a signed PUT; path-style and
# virtual-host-style (BUCKET.localhost) mounts read the tree back equal;
# fsck.czfs and dump.czfs read the same s3:// address; a wrong secret and
# a missing object are refused at mount with a clear message, and the
# secret never reaches a message or the process title.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/remotelib.sh"	# stat_of
. "$top_srcdir/tests/integration/swiftlib.sh"
require_fuse
DUMP="$top_builddir/dump/dump.czfs"
FSCK="$top_builddir/fsck/fsck.czfs"
# set +e: a failing (exit $rc) must not end the trap before the cleanup.
trap 'rc=$?; set +e; swift_stop; remote_stop; (exit $rc); czfs_cleanup' EXIT

unset AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3
export AWS_SHARED_CREDENTIALS_FILE=$T/none
swift_start "$T/swift" || fail "swift did not start"
EP=http://127.0.0.1:$SWIFT_PORT

sample_files "$T/src" "text docs bins"
head -c 2000000 /dev/urandom >"$T/src/random"
"$MKFS" -q -d "$T/src" "$T/img.czfs"
swift_put /images || fail "the bucket was not made"
swift_put /images/img.czfs -T "$T/img.czfs" || fail "the image was not stored"

note "path style"
czfs_mount s3://images/img.czfs "$T/mnt" -o s3_endpoint=$EP
diff -r "$T/src" "$T/mnt" || fail "the tree over swift (path style) differs"
pid=${CZFS_PIDS[-1]}
tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$SWIFT_SECRET" && fail "the process title shows the secret"
[ "$(stat_of "$T/mnt" remote.requests)" -ge 2 ] || fail "czfs-stat counts no requests"
czfs_umount "$T/mnt"

note "virtual-host style"
czfs_mount s3://images/img.czfs "$T/mnt" \
	-o s3_endpoint=http://localhost:$SWIFT_PORT,s3_style=virtual
diff -r "$T/src" "$T/mnt" || fail "the tree over swift (virtual host) differs"
czfs_umount "$T/mnt"

note "fsck.czfs and dump.czfs on the s3:// address"
AWS_ENDPOINT_URL=$EP "$FSCK" s3://images/img.czfs >"$T/fsck.out" 2>&1 ||
	fail "fsck.czfs on s3://: $(tail -3 "$T/fsck.out")"
AWS_ENDPOINT_URL=$EP "$DUMP" s3://images/img.czfs >"$T/dump.out" ||
	fail "dump.czfs on s3://"
grep -q "superblock:" "$T/dump.out" || fail "dump.czfs on s3:// shows no superblock"

note "a wrong secret, a missing object: refused, and said so"
mkdir -p "$T/mnt2"
if AWS_SECRET_ACCESS_KEY=wrong timeout 60 "$FUSE" s3://images/img.czfs "$T/mnt2" -f \
	-o s3_endpoint=$EP 2>"$T/bad.err"; then
	fail "a wrong secret mounted"
fi
grep -qi "permission denied\|HTTP 403" "$T/bad.err" || fail "a wrong secret: $(cat "$T/bad.err")"
if timeout 60 "$FUSE" s3://images/none.czfs "$T/mnt2" -f -o s3_endpoint=$EP 2>"$T/none.err"; then
	fail "a missing object mounted"
fi
grep -qi "no such file\|HTTP 404" "$T/none.err" || fail "a missing object: $(cat "$T/none.err")"
grep -qF "$SWIFT_SECRET" "$T"/*.err "$T"/daemon.*.log "$T/fsck.out" &&
	fail "a message shows the secret"
note "ok"
