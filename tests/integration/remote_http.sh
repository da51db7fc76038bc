#!/bin/bash
# Remote images over HTTP and HTTPS from a real nginx on 127.0.0.1: a
# mount reads the whole tree back equal to its source, over http:// and
# https:// (a self-signed certificate: trusted with -o cafile, refused
# without); fsck.czfs and dump.czfs work on the URL; a URL's credentials
# never reach the process title or the mount table; a missing object
# fails the mount with a clear message.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/remotelib.sh"
require_fuse
FSCK="$top_builddir/fsck/fsck.czfs"
DUMP="$top_builddir/dump/dump.czfs"

sample_files "$T/src" "text docs bins"
head -c 3000000 /dev/urandom >"$T/src/random"
mkdir -p "$T/www"
"$MKFS" -q -d "$T/src" "$T/www/img.czfs"
nginx_start
URL=http://127.0.0.1:$HTTP_PORT/img.czfs

note "http: the tree reads back equal"
czfs_mount "$URL" "$T/mnt"
diff -r "$T/src" "$T/mnt" || fail "the tree over http differs from its source"
[ "$(tree_manifest "$T/src" | cut -d' ' -f1-7)" = \
  "$(tree_manifest "$T/mnt" | cut -d' ' -f1-7)" ] || fail "attributes over http differ"
touch "$T/mnt/new" 2>/dev/null && fail "a URL mount took a write"
grep -q " $T/mnt fuse.czfs ro," /proc/mounts || fail "a URL mount is not read-only"
[ "$(requests)" -gt 0 ] || fail "nginx saw no request"
czfs_umount "$T/mnt"

note "each piece of the image is fetched about once, though threads share chunks"
# the reader and the prefetch workers load neighbouring clusters, whose
# stored blocks share the 1 MiB chunks at their edges: one fetches, the
# other waits for it (before, a big file's cold read fetched 1.6x the
# image)
mkdir -p "$T/bigsrc"
"$top_srcdir/tests/sample-data" --cat libs >"$T/bigsrc/libs"
"$top_srcdir/tests/sample-data" --cat bins >"$T/bigsrc/bins"
"$MKFS" -q -d "$T/bigsrc" "$T/www/big.czfs"
czfs_mount "http://127.0.0.1:$HTTP_PORT/big.czfs" "$T/mnt"
cat "$T/mnt/libs" "$T/mnt/bins" | cmp - <(cat "$T/bigsrc/libs" "$T/bigsrc/bins") ||
	fail "the big files over http differ"
got=$(stat_of "$T/mnt" remote.bytes)
img=$(stat -c %s "$T/www/big.czfs")
note "fetched $got bytes of a $img-byte image"
# (a chunk that leaves the 16 kept in memory before a waiter takes it is
# fetched again: a little slack for a loaded machine)
[ "$got" -le $((img * 5 / 4)) ] ||
	fail "a cold read fetched $got bytes of a $img-byte image: chunks fetched twice"
czfs_umount "$T/mnt"

note "https: trusted with -o cafile, refused without"
czfs_mount "https://127.0.0.1:$HTTPS_PORT/img.czfs" "$T/mnt" -o cafile="$CERT"
diff -r "$T/src" "$T/mnt" || fail "the tree over https differs from its source"
czfs_umount "$T/mnt"
mkdir -p "$T/mnt2"
if timeout 60 "$FUSE" "https://127.0.0.1:$HTTPS_PORT/img.czfs" "$T/mnt2" -f \
	-o remote_retries=0 2>"$T/untrusted.err"; then
	fail "an untrusted certificate was accepted"
fi
grep -qi "certificate" "$T/untrusted.err" || fail "no word of the certificate: $(cat "$T/untrusted.err")"

note "fsck.czfs and dump.czfs on the URL"
"$FSCK" "$URL" >"$T/fsck.out" 2>&1 || fail "fsck.czfs on the URL: $(cat "$T/fsck.out")"
"$DUMP" -j "$URL" >"$T/dump.json" || fail "dump.czfs on the URL"
[ "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["statistics"]["inodes"]["files"])' "$T/dump.json")" = \
  "$(find "$T/src" -type f | wc -l)" ] || fail "dump.czfs counts other files over the URL"
if "$FSCK" -y "$URL" 2>"$T/fsck-y.err"; then fail "fsck.czfs -y took a URL"; fi
grep -q "read-only" "$T/fsck-y.err" || fail "fsck.czfs -y on a URL: $(cat "$T/fsck-y.err")"
CURL_CA_BUNDLE=$CERT "$DUMP" "https://127.0.0.1:$HTTPS_PORT/img.czfs" >/dev/null ||
	fail "dump.czfs over https with CURL_CA_BUNDLE"

note "credentials stay out of the process title and the mount table"
czfs_mount "http://reader:s3cretpw@127.0.0.1:$HTTP_PORT/img.czfs?token=t0psecret" "$T/mnt"
cmp "$T/src/random" "$T/mnt/random" || fail "read through a URL with credentials"
pid=${CZFS_PIDS[-1]}
tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "s3cretpw\|t0psecret" &&
	fail "the process title shows the credentials"
grep -q "s3cretpw\|t0psecret" /proc/mounts && fail "the mount table shows the credentials"
grep -q "127.0.0.1:$HTTP_PORT/img.czfs" /proc/mounts || fail "the mount table lacks the URL"
"$top_builddir/src/fuse/czfs-stat" "$T/mnt" >"$T/stat.out" || fail "czfs-stat"
grep -q "s3cretpw\|t0psecret" "$T/stat.out" && fail "czfs-stat shows the credentials"
[ "$(stat_of "$T/mnt" remote.url)" = "http://127.0.0.1:$HTTP_PORT/img.czfs" ] ||
	fail "czfs-stat remote.url: $(stat_of "$T/mnt" remote.url)"
[ "$(stat_of "$T/mnt" remote.requests)" -gt 1 ] || fail "czfs-stat counts no requests"
[ "$(stat_of "$T/mnt" remote.bytes)" -gt 3000000 ] || fail "czfs-stat counts too few bytes"
[ "$(stat_of "$T/mnt" remote.latency_p50_us)" -gt 0 ] || fail "czfs-stat has no latency"
# a remote node miss is a round trip: the node cache keeps its ceiling
[ "$(stat_of "$T/mnt" nodecache.limit)" = 16384 ] ||
	fail "a remote image's node cache keeps $(stat_of "$T/mnt" nodecache.limit) nodes"
czfs_umount "$T/mnt"
log_has "$T/mnt" "s3cretpw\|t0psecret" && fail "the log shows the credentials"

note "a missing object: a clear message, no mount"
if timeout 60 "$FUSE" "http://127.0.0.1:$HTTP_PORT/none.czfs" "$T/mnt2" -f 2>"$T/404.err"; then
	fail "a missing object mounted"
fi
grep -q "none.czfs" "$T/404.err" || fail "the message does not name the URL"
grep -qi "no such file\|404" "$T/404.err" || fail "the message does not say it is missing: $(cat "$T/404.err")"
if "$FUSE" "$URL" "$T/mnt2" -f -o rw 2>"$T/rw.err"; then
	fail "a URL mounted read-write"
fi
grep -q "read-only" "$T/rw.err" || fail "no word of read-only: $(cat "$T/rw.err")"
note "ok"
