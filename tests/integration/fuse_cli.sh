#!/bin/bash
# czfs-fuse command line: help, version, and clear errors for bad input.
. "$top_srcdir/tests/integration/lib.sh"

"$FUSE" --help >"$T/out" || fail "--help exit status"
grep -q "usage: czfs-fuse IMAGE MOUNTPOINT" "$T/out" || fail "--help text"
grep -q "cache_size" "$T/out" || fail "--help lists czfs options"
"$FUSE" --version >"$T/out" || fail "--version exit status"
grep -q "czfs-fuse (czfs) [0-9]" "$T/out" || fail "--version text"

# expect_error MESSAGE ARGS...: czfs-fuse exits non-zero saying MESSAGE
expect_error() {
	local msg=$1 st=0
	shift
	timeout 120 "$FUSE" "$@" -f >"$T/out" 2>&1 || st=$?	# hang guard
	[ "$st" -ne 0 ] && [ "$st" -lt 124 ] || fail "czfs-fuse $* exited $st"
	grep -qi -- "$msg" "$T/out" || fail "czfs-fuse $*: '$(cat "$T/out")' lacks '$msg'"
}

mkdir -p "$T/src" "$T/mnt"
echo hi >"$T/src/f"
"$MKFS" -q -d "$T/src" "$T/img"
head -c 100000 /dev/urandom >"$T/junk"

expect_error "usage" "$T/img"
expect_error "No such file" "$T/nonexistent" "$T/mnt"
expect_error "not a czfs image" "$T/junk" "$T/mnt"
expect_error "bad value" "$T/img" "$T/mnt" -o cache_size=abc
expect_error "bad value" "$T/img" "$T/mnt" -o readahead=0
expect_error "at least 4M" "$T/img" "$T/mnt" -o cache_min=1M
expect_error "at least 8M" "$T/img" "$T/mnt" -o dirty_max=1M
expect_error "bad value" "$T/img" "$T/mnt" -o compress=brotli
expect_error "bad value" "$T/img" "$T/mnt" -o commit=0
expect_error "invalid argument\|unknown option" "$T/img" "$T/mnt" -o no_such_option
! mountpoint -q "$T/mnt" || fail "something got mounted"

# each access-time option its help names mounts (the daemon keeps the
# times; libfuse's own mount knows noatime only)
for o in noatime relatime strictatime; do
	czfs_mount "$T/img" "$T/mnt" -o "$o"
	cat "$T/mnt/f" >/dev/null || fail "-o $o: read"
	czfs_umount "$T/mnt"
done

# Without -f the daemon forks into the background: it must serve reads
# (its prefetch threads start after the fork) and exit when unmounted.
head -c 3000000 /dev/urandom >"$T/src/big"
seq 1 200000 >"$T/src/text"
"$MKFS" -q -f -C 16k -d "$T/src" "$T/img"
EXTRA_MOUNTS+=("$T/mnt")
"$FUSE" "$T/img" "$T/mnt" || fail "background mount"
cmp "$T/src/big" "$T/mnt/big" || fail "read through a background daemon"
cmp "$T/src/text" "$T/mnt/text" || fail "read through a background daemon"
# live counters of the mount
STAT="$top_builddir/src/fuse/czfs-stat"
"$STAT" "$T/mnt" >"$T/stats" || fail "czfs-stat"
grep -q "^fuse.read_bytes $((3000000 + $(stat -c %s "$T/src/text")))\$" "$T/stats" || fail "read bytes in: $(head -3 "$T/stats")"
grep -q '^decompress.bytes [1-9]' "$T/stats" || fail "decompressed bytes counted"
! "$STAT" "$T" 2>"$T/err" || fail "czfs-stat on a non-czfs directory"
grep -q "not the root of a czfs mount" "$T/err" || fail "czfs-stat message: $(cat "$T/err")"
"$STAT" --version | grep -q "czfs-stat (czfs)" || fail "czfs-stat --version"
fusermount3 -u "$T/mnt"
for _ in $(seq 1 600); do	# 60 s, a hang guard
	pgrep -f "czfs-fuse $T/img" >/dev/null || break
	sleep 0.1
done
! pgrep -f "czfs-fuse $T/img" >/dev/null || fail "background daemon did not exit"
