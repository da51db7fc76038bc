#!/bin/bash
# Faults between a remote mount and its server, made by a proxy
# (faultproxy.py) in front of nginx: 503 answers, dropped connections, a
# stalled server and truncated bodies.  A few faults are cured by the
# retries; a lasting one gives the reader EIO within the time the
# timeouts and retries bound (never a hang) and a log line saying what
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
# in the time of one fetch, not of one fetch after the other.  Before
# any read of wait: none of its chunks is in memory.
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
direct() {	# direct (no page cache) 4 KiB read of cluster N of wait
	dd if="$T/mnt/wait" of=/dev/null bs=4k count=1 iflag=direct \
		skip=$(( $1 * nb )) 2>/dev/null
}
ms() { echo $(( $(date +%s%N) / 1000000 )); }
proxy_mode delay 10
start=$(ms)
direct $far && fail "a stalled read succeeded"
one=$(( $(ms) - start ))
start=$(ms)
direct $n & p1=$!
direct $((n + 3)) & p2=$!
wait $p1 && fail "a stalled read succeeded"
wait $p2 && fail "a stalled read succeeded"
two=$(( $(ms) - start ))
note "one reader: EIO after ${one} ms; two of one chunk: ${two} ms"
[ "$two" -lt $(( one * 3 / 2 )) ] || fail "the second reader fetched again: ${two} ms against ${one}"
proxy_mode pass
cmp "$T/src/wait" "$T/mnt/wait" || fail "wait does not read whole once the server is back"

# fault_then_back FILE MODE... [WORD]: a lasting fault fails the read
# with EIO in bounded time, the log names it; then the file reads whole.
fault_then_back() {
	local f=$1 word=$2 start took
	shift 2
	proxy_mode "$@"
	start=$(date +%s)
	if timeout 120 cat "$T/mnt/$f" >/dev/null 2>"$T/$f.err"; then
		fail "$*: the read succeeded"
	fi
	took=$(( $(date +%s) - start ))
	grep -q "Input/output error" "$T/$f.err" || fail "$*: not EIO: $(cat "$T/$f.err")"
	[ "$took" -le 60 ] || fail "$*: EIO came after ${took}s"
	log_has "$T/mnt" "$word" || fail "$*: no log line with '$word'"
	note "$*: EIO after ${took}s"
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
