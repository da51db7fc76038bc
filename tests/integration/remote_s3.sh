#!/bin/bash
# s3:// images from a local S3-compatible server that checks every
# request's SigV4 signature (s3server.py; its checker is first proved on
# the AWS documentation's example): path style and virtual-host style
# (BUCKET.localhost), keys from the environment and from a credentials
# file with a session token; a wrong secret or region is refused at mount
# with a clear message; the secret never reaches the log, the mount table
# or the process title.  (remote_swift.sh runs the same mounts against a
# real store, OpenStack Swift's s3api; this server checks more: every
# signature, session tokens, regions.)
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/remotelib.sh"
require_fuse
DUMP="$top_builddir/dump/dump.czfs"

sample_files "$T/src" "text docs"
mkdir -p "$T/s3/images"
"$MKFS" -q -d "$T/src" "$T/s3/images/img.czfs"
REGION=czfs-test-1
SECRET=wJalrXUtnFEMI/K7MDENG+bPxRfiCYzEXAMPLE
s3_start "$T/s3" "$REGION" AKIACZFSTEST "$SECRET"
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3
export AWS_ACCESS_KEY_ID=AKIACZFSTEST AWS_SECRET_ACCESS_KEY=$SECRET AWS_REGION=$REGION
export AWS_SHARED_CREDENTIALS_FILE=$T/none

note "path style, keys from the environment"
czfs_mount s3://images/img.czfs "$T/mnt" -o s3_endpoint=http://127.0.0.1:$S3_PORT
diff -r "$T/src" "$T/mnt" || fail "the tree over s3 (path style) differs"
pid=${CZFS_PIDS[-1]}
tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$SECRET" && fail "the process title shows the secret"
czfs_umount "$T/mnt"
grep -q "^path GET /images/img.czfs 206" "$T/s3.log" || fail "no signed path-style range GET: $(head -3 "$T/s3.log")"
grep -v " 20[06]$" "$T/s3.log" && fail "the server refused requests"
[ "$(grep -c " 206$" "$T/s3.log")" -ge 2 ] || fail "too few signed range GETs"

note "virtual-host style, region and endpoint from options"
AWS_REGION=elsewhere czfs_mount s3://images/img.czfs "$T/mnt" \
	-o s3_endpoint=http://localhost:$S3_PORT,s3_style=virtual,s3_region=$REGION
diff -r "$T/src" "$T/mnt" || fail "the tree over s3 (virtual host) differs"
czfs_umount "$T/mnt"
grep -q "^virtual GET /images/img.czfs 206" "$T/s3.log" || fail "no signed virtual-host GET"

note "dump.czfs with the endpoint from AWS_ENDPOINT_URL"
AWS_ENDPOINT_URL=http://127.0.0.1:$S3_PORT "$DUMP" s3://images/img.czfs >"$T/dump.out" ||
	fail "dump.czfs on s3://"
grep -q "superblock:" "$T/dump.out" || fail "dump.czfs on s3:// shows no superblock"

note "a wrong secret, a wrong region: refused, and said so"
mkdir -p "$T/mnt2"
if AWS_SECRET_ACCESS_KEY=wrong timeout 60 "$FUSE" s3://images/img.czfs "$T/mnt2" -f \
	-o s3_endpoint=http://127.0.0.1:$S3_PORT 2>"$T/bad.err"; then
	fail "a wrong secret mounted"
fi
grep -qi "permission denied\|HTTP 403" "$T/bad.err" || fail "a wrong secret: $(cat "$T/bad.err")"
grep -q " 403 SignatureDoesNotMatch$" "$T/s3.log" || fail "the server saw no bad signature"
if AWS_REGION=us-west-2 timeout 60 "$FUSE" s3://images/img.czfs "$T/mnt2" -f \
	-o s3_endpoint=http://127.0.0.1:$S3_PORT 2>"$T/region.err"; then
	fail "a wrong region mounted"
fi
grep -q " 403 AuthorizationHeaderMalformed$" "$T/s3.log" || fail "the server saw no wrong region"
if env -u AWS_ACCESS_KEY_ID "$FUSE" s3://images/img.czfs "$T/mnt2" -f \
	-o s3_endpoint=http://127.0.0.1:$S3_PORT 2>"$T/nokey.err"; then
	fail "no credentials mounted"
fi
grep -q "no S3 credentials" "$T/nokey.err" || fail "no credentials: $(cat "$T/nokey.err")"
grep -qF "$SECRET" "$T"/*.err "$T"/daemon.*.log && fail "a message shows the secret"

note "a credentials file with a session token; a key with a ':' (Swift's account:user)"
remote_stop
s3_start "$T/s3" "$REGION" "acct:user" "s3cr3t/file" "tok+en/123=="
printf '[default]\naws_access_key_id = wrong\n[czfs]\naws_access_key_id = acct:user\naws_secret_access_key = s3cr3t/file\naws_session_token = tok+en/123==\n' >"$T/creds"
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY AWS_SHARED_CREDENTIALS_FILE="$T/creds" \
	AWS_PROFILE=czfs "$FUSE" s3://images/img.czfs "$T/mnt" -f \
	-o s3_endpoint=http://127.0.0.1:$S3_PORT 2>"$T/daemon.mnt.log" &
CZFS_PIDS+=($!)
CZFS_MOUNTS+=("$T/mnt")
for i in $(seq 1 1200); do mountpoint -q "$T/mnt" && break; sleep 0.1; done	# hang guard
mountpoint -q "$T/mnt" || fail "no mount with a credentials file: $(cat "$T/daemon.mnt.log")"
diff -r "$T/src" "$T/mnt" || fail "the tree with a session token differs"
czfs_umount "$T/mnt"
note "ok"
