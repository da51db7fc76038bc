#!/bin/bash
# Faults between a remote mount and its server, made by a proxy
# (faultproxy.py) in front of nginx: 503 answers, dropped connections, a
# stalled server and truncated bodies.  A few faults are cured by the
# retries; a lasting one gives the reader EIO after the tries the
# retries bound (never a hang) and a log line saying what
# happened; once the server is back the same file reads whole, and the
# daemon ends cleanly.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/remotelib.sh"
require_fuse

mkdir -p "$T/src" "$T/www"
for f in ok retry e503 drop delay trunc wait; do
	head -c $((6 << 20)) /dev/urandom >"$T/src/$f"
done
"$MKFS" -q -c none -d "$T/src" "$T/www/img.czfs"
nginx_start
proxy_start
# until CMD... holds, polled; 60 s only guards against a hang
until_true() {
	local i
	for i in $(seq 1 600); do
		"$@" && return 0
		sleep 0.1
	done
	fail "never: $*"
}
czfs_mount "http://127.0.0.1:$PROXY_PORT/img.czfs" "$T/mnt" \
	-o remote_timeout=2,remote_retries=2,max_request=1M

note "no fault: the data"
cmp "$T/src/ok" "$T/mnt/ok" || fail "a read through the proxy differs"

note "two 503 answers: cured by the retries"
proxy_mode 2 503
cmp "$T/src/retry" "$T/mnt/retry" || fail "two 503s were not retried away"
[ "$(proxy_count 503)" -eq 2 ] || fail "the proxy answered 503 $(proxy_count 503) times, not 2"
log_has "$T/mnt" "HTTP 503" && fail "a cured fault was logged as a failure"
[ "$(stat_of "$T/mnt" remote.retries)" -ge 2 ] || fail "czfs-stat counts no retries"
[ "$(stat_of "$T/mnt" remote.errors)" -eq 0 ] || fail "czfs-stat counts an error for a cured fault"

# A read that waits for another thread's fetch of its chunk takes that
# fetch's error: with a stalled server, two readers of one chunk get EIO
# from one fetch, not one fetch after the other.  A second mount whose
# timeout (120 s) only guards against a hang: the proxy holds the first
# reader's request until the second reader waits for it, then fails it.
LOCATE="$top_builddir/tests/czfs-locate"
chunk_of() {	# cluster N of wait: the 1 MiB chunk its blocks start in
	local blk
	read -r blk _ < <("$LOCATE" "$T/www/img.czfs" /wait cluster "$1")
	echo $(( blk * 4096 >> 20 ))
}
read -r _ nb _ < <("$LOCATE" "$T/www/img.czfs" /wait cluster 0)
n=0
while [ "$(chunk_of $n)" != "$(chunk_of $((n + 3)))" ]; do n=$((n + 1)); done
far=$((n + 24))	# away from the metadata, after the data
[ "$(chunk_of $far)" != "$(chunk_of $n)" ] || fail "cluster $far shares a chunk"
direct() {	# direct (no page cache) 4 KiB read of cluster N of wait on mnt2
	dd if="$T/mnt2/wait" of=/dev/null bs=4k count=1 iflag=direct \
		skip=$(( $1 * nb )) 2>/dev/null
}
held() { [ "$(proxy_count hold)" -ge "$1" ]; }
waits_at_least() { [ "$(stat_of "$T/mnt2" remote.waits)" -ge "$1" ]; }
czfs_mount "http://127.0.0.1:$PROXY_PORT/img.czfs" "$T/mnt2" \
	-o remote_timeout=120,remote_retries=0,max_request=1M
direct $far || fail "a read of cluster $far on the second mount"	# its metadata
proxy_mode hold
direct $n & p1=$!
until_true held 1
direct $((n + 3)) & p2=$!
until_true waits_at_least 1
proxy_mode 503
wait $p1 && fail "a failed read succeeded"
wait $p2 && fail "a failed read succeeded"
proxy_mode pass
note "two readers of one chunk: $(proxy_count hold) request, $(stat_of "$T/mnt2" remote.waits) wait"
[ "$(proxy_count hold)" = 1 ] || fail "the proxy held $(proxy_count hold) requests, not 1"
[ "$(proxy_count 503)" = 2 ] || fail "the second reader fetched again ($(proxy_count 503) 503 answers since the retries' 2)"
[ "$(stat_of "$T/mnt2" remote.waits)" = 1 ] || fail "czfs-stat counts $(stat_of "$T/mnt2" remote.waits) waits, not 1"
cmp "$T/src/wait" "$T/mnt2/wait" || fail "wait does not read whole once the server is back"
czfs_umount "$T/mnt2"

# Since r0, t0, e0: errors >= 1, and 3 requests and 2 retries each.
each_fetch_gave_up() {
	local r t e
	r=$(( $(stat_of "$T/mnt" remote.requests) - r0 ))
	t=$(( $(stat_of "$T/mnt" remote.retries) - t0 ))
	e=$(( $(stat_of "$T/mnt" remote.errors) - e0 ))
	[ "$e" -ge 1 ] && [ "$r" = $((3 * e)) ] && [ "$t" = $((2 * e)) ]
}

# fault_then_back FILE MODE... [WORD]: a lasting fault fails the read
# with EIO after 1 + remote_retries tries a fetch, the log names it; then
# the file reads whole.
fault_then_back() {
	local f=$1 word=$2 before
	shift 2
	before=$(proxy_count "$1")
	r0=$(stat_of "$T/mnt" remote.requests)
	t0=$(stat_of "$T/mnt" remote.retries)
	e0=$(stat_of "$T/mnt" remote.errors)
	proxy_mode "$@"
	# one cluster read directly, in the middle (no prefetch, no chunk
	# shared with a file read before): its reply comes once its fetch is
	# over; 120 s only guards against a hang
	if timeout 120 dd if="$T/mnt/$f" of=/dev/null bs=4k count=1 iflag=direct \
		skip=$((48 * nb)) 2>"$T/$f.err"; then
		fail "$*: the read succeeded"
	fi
	grep -q "Input/output error" "$T/$f.err" || fail "$*: not EIO: $(cat "$T/$f.err")"
	# the fetch tried 1 + remote_retries times, then gave up
	each_fetch_gave_up || fail "$*: $(( $(stat_of "$T/mnt" remote.requests) - r0 )) requests and $(( $(stat_of "$T/mnt" remote.retries) - t0 )) retries for $(( $(stat_of "$T/mnt" remote.errors) - e0 )) failed fetches, not 3 and 2 each"
	[ $(( $(proxy_count "$1") - before )) -ge 3 ] || fail "$*: the proxy met fewer than 3 requests"
	log_has "$T/mnt" "$word" || fail "$*: no log line with '$word'"
	note "$*: EIO; $(( $(stat_of "$T/mnt" remote.errors) - e0 )) fetch of 3 tries"
	proxy_mode pass
	cmp "$T/src/$f" "$T/mnt/$f" || fail "$*: the file does not read whole once the server is back"
}

note "lasting faults: EIO, a log line, then recovery"
fault_then_back e503 "HTTP 503" 503
fault_then_back drop "gave up" drop
fault_then_back delay "imeout" delay 10
fault_then_back trunc "gave up" truncate
ls "$T/mnt" >/dev/null || fail "the mount died"
[ "$(stat_of "$T/mnt" remote.errors)" -gt 0 ] || fail "czfs-stat counts no failed reads"
czfs_umount "$T/mnt"
note "ok"
