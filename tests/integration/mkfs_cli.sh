#!/bin/bash
# mkfs.czfs command line: help, version, every bad value refused with a
# message naming it, -f, --size limits, unreadable sources, sparse images.
. "$top_srcdir/tests/integration/lib.sh"

# expect_fail PATTERN ARGS...: mkfs.czfs ARGS fails, stderr matches PATTERN,
# and no image was left behind.
expect_fail() {
	local pattern=$1 st=0
	shift
	rm -f "$T/img"
	"$MKFS" "$@" >"$T/out" 2>"$T/err" || st=$?
	[ "$st" -ne 0 ] || fail "mkfs.czfs $* succeeded"
	grep -qF -- "$pattern" "$T/err" ||
		{ cat "$T/err" >&2; fail "mkfs.czfs $*: no message with '$pattern'"; }
	[ ! -e "$T/img" ] || fail "mkfs.czfs $* left $T/img behind"
}

mkdir -p "$T/src/sub"
echo hello >"$T/src/sub/file"
head -c 3000000 /dev/urandom >"$T/src/random"

note "help and version"
"$MKFS" --help >"$T/out"
grep -q '^Usage: mkfs.czfs \[options\] IMAGE' "$T/out" || fail "--help: no usage"
grep -q -- '--cluster-size' "$T/out" || fail "--help: options missing"
"$MKFS" -V >"$T/out"
grep -qx 'mkfs.czfs (czfs) [0-9][0-9.]*' "$T/out" || fail "--version: $(cat "$T/out")"

note "bad option values"
expect_fail "'foo'" -c foo -d "$T/src" "$T/img"
expect_fail "'lz4:99'" -c lz4:99 -d "$T/src" "$T/img"
expect_fail "bad cluster size '3k' (4k..256k, a power of two)" -C 3k "$T/img"
expect_fail "'512k'" -C 512k "$T/img"
expect_fail "'48k'" -C 48k "$T/img"
expect_fail "'abc'" -s abc "$T/img"
expect_fail "'0'" -j 0 "$T/img"
expect_fail "'x1'" -j x1 "$T/img"
expect_fail "'1234-nope'" -U 1234-nope "$T/img"
expect_fail "'0123456789abcdef0123456789abcdefxyzw'" \
	-U 0123456789abcdef0123456789abcdefxyzw "$T/img"
label=$(printf 'l%.0s' $(seq 1 65))
expect_fail "'$label'" -L "$label" "$T/img"
expect_fail "'soon'" -T soon "$T/img"
expect_fail "'-5'" --uid=-5 "$T/img"
expect_fail "'--bogus'" --bogus "$T/img"
expect_fail "no IMAGE" -d "$T/src"
expect_fail "$T/nope: No such file or directory" -d "$T/nope" "$T/img"
expect_fail "$T/src/random: Not a directory" -d "$T/src/random" "$T/img"
SOURCE_DATE_EPOCH=yesterday expect_fail "'yesterday'" "$T/img"

note "a 64-byte label is fine"
"$MKFS" -q -L "${label:1}" "$T/img"
rm -f "$T/img"

note "an existing image needs -f"
echo precious >"$T/img"
st=0
"$MKFS" -q -d "$T/src" "$T/img" 2>"$T/err" || st=$?
[ "$st" -ne 0 ] || fail "overwrote an existing image without -f"
grep -qF "$T/img exists; use -f to overwrite" "$T/err" || fail "no -f message"
[ "$(cat "$T/img")" = precious ] || fail "the existing file was changed"
"$MKFS" -q -f -d "$T/src" "$T/img" || fail "-f did not overwrite"
[ "$(head -c 4 "$T/img")" = CZFS ] || fail "no superblock magic after -f"

note "the image inside the source tree is left out of it"
"$MKFS" -q -f -U 11111111-2222-3333-4444-555555555555 -T 1 -d "$T/src" "$T/src/self.img"
cp "$T/src/self.img" "$T/first.img"
"$MKFS" -q -f -U 11111111-2222-3333-4444-555555555555 -T 1 -d "$T/src" "$T/src/self.img"
cmp -s "$T/first.img" "$T/src/self.img" || fail "the old image was packed into the new one"
rm -f "$T/src/self.img" "$T/first.img"

note "content larger than --size"
expect_fail "content needs 3 MiB, more than --size 1 MiB" -s 1M -d "$T/src" "$T/img"
echo old >"$T/img"
st=0
"$MKFS" -q -f -s 1M -d "$T/src" "$T/img" 2>"$T/err" || st=$?
[ "$st" -ne 0 ] || fail "-s 1M with 3 MB of random data succeeded"
[ ! -e "$T/img" ] || fail "the image that did not fit was not removed"
"$MKFS" -q -s 8M -d "$T/src" "$T/img" || fail "-s 8M does not hold 3 MB"
size=$(stat -c %s "$T/img")
[ "$size" -lt 4194304 ] || fail "-s with -d: image is $size bytes, not its content's size"
rm -f "$T/img"

note "-s without -d: a sparse empty image of exactly SIZE"
"$MKFS" -q -s 64M "$T/img"
[ "$(stat -c %s "$T/img")" -eq 67108864 ] || fail "size is $(stat -c %s "$T/img")"
used=$(du -k "$T/img" | cut -f1)
[ "$used" -lt 1024 ] || fail "the empty image uses $used KiB: not sparse"
[ "$(head -c 4 "$T/img")" = CZFS ] || fail "no superblock magic"
[ "$(dd if="$T/img" bs=1 skip=8196 count=4 status=none)" = CZCP ] ||
	fail "no checkpoint in slot 1 (block 2)"
rm -f "$T/img"

note "no -s, no -d: a small empty image"
"$MKFS" -q "$T/img"
size=$(stat -c %s "$T/img")
[ "$size" -gt 12288 ] && [ "$size" -le 65536 ] || fail "empty image is $size bytes"
[ $((size % 4096)) -eq 0 ] || fail "image size $size is not whole blocks"
rm -f "$T/img"

note "summary unless -q"
"$MKFS" -d "$T/src" "$T/img" >"$T/out" 2>"$T/err"
grep -q 'files, .* directories, .* input bytes, .* image bytes, ratio .* MB/s' "$T/out" ||
	fail "no summary: $(cat "$T/out")"
rm -f "$T/img"
"$MKFS" -q -d "$T/src" "$T/img" >"$T/out" 2>"$T/err"
[ ! -s "$T/out" ] && [ ! -s "$T/err" ] || fail "-q printed something"
rm -f "$T/img"

note "a signal half-way removes the image"
head -c 20000000 /dev/urandom >"$T/src/big"
"$MKFS" -q -j1 -c zstd:19 -C 4k -d "$T/src" "$T/img" 2>/dev/null &
pid=$!
for i in $(seq 1 100); do [ -e "$T/img" ] && break; sleep 0.05; done
kill -TERM "$pid" 2>/dev/null || true
st=0
wait "$pid" || st=$?
if [ "$st" -eq 0 ]; then
	note "mkfs.czfs finished before the signal: nothing to check"
	rm -f "$T/img"
else
	[ "$st" -eq 143 ] || fail "killed mkfs.czfs exited with $st"
	[ ! -e "$T/img" ] || fail "the image of a killed mkfs.czfs is left behind"
fi
rm -f "$T/src/big"

note "unreadable sources (as nobody)"
if [ "$(id -u)" = 0 ] && setpriv --reuid=nobody --regid=nogroup --clear-groups true 2>/dev/null; then
	chmod 755 "$T"
	mkdir -m 777 "$T/out.d"
	echo secret >"$T/src/secret"
	chmod 000 "$T/src/secret"
	st=0
	setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$MKFS" -q -d "$T/src" "$T/out.d/img" 2>"$T/err" || st=$?
	[ "$st" -ne 0 ] || fail "an unreadable file did not fail"
	grep -qF "cannot read $T/src/secret: Permission denied" "$T/err" ||
		{ cat "$T/err" >&2; fail "no message for the unreadable file"; }
	[ ! -e "$T/out.d/img" ] || fail "image left behind after a read error"
	rm -f "$T/src/secret"
	chmod 000 "$T/src/sub"
	st=0
	setpriv --reuid=nobody --regid=nogroup --clear-groups \
		"$MKFS" -q -d "$T/src" "$T/out.d/img" 2>"$T/err" || st=$?
	chmod 755 "$T/src/sub"
	[ "$st" -ne 0 ] || fail "an unreadable directory did not fail"
	grep -qF "cannot read $T/src/sub: Permission denied" "$T/err" ||
		{ cat "$T/err" >&2; fail "no message for the unreadable directory"; }
	[ ! -e "$T/out.d/img" ] || fail "image left behind after a scan error"
else
	note "SKIP unreadable-source cases: needs root and setpriv to become nobody"
fi
exit 0
