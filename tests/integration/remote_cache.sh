#!/bin/bash
# The disk cache of remote images (-o cache_dir): a second mount reads
# everything from it (a handful of requests: the size and the superblock);
# an object changed on the server (a new ETag, even with the same UUID)
# never meets its old pieces; a damaged piece is fetched again; the cache
# stays under cache_limit, also shared by two mounts; an object replaced under a live mount fails
# reads with EIO and a log line, never old and new data mixed.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/remotelib.sh"
require_fuse

sample_files "$T/src" "text docs bins"
head -c 3000000 /dev/urandom >"$T/src/random"
mkdir -p "$T/www"
uuid=6e0b9a53-6f5b-4d43-9a52-0c1b6b0c2f11
"$MKFS" -q -U $uuid -d "$T/src" "$T/www/img.czfs"
nginx_start
URL=http://127.0.0.1:$HTTP_PORT/img.czfs
C=$T/cache

note "first mount: fetched and kept"
czfs_mount "$URL" "$T/mnt" -o cache_dir="$C"
diff -r "$T/src" "$T/mnt" || fail "the tree through the cache differs (cold)"
[ "$(stat_of "$T/mnt" remote.cache_misses)" -gt 0 ] || fail "czfs-stat: no cache misses when cold"
czfs_umount "$T/mnt"
cold=$(requests)
[ "$cold" -gt 3 ] || fail "a cold read made only $cold requests"
[ -n "$(find "$C" -type f)" ] || fail "nothing was kept in $C"

note "second mount: read from the cache"
czfs_mount "$URL" "$T/mnt" -o cache_dir="$C"
diff -r "$T/src" "$T/mnt" || fail "the tree through the cache differs (warm)"
st_reqs=$(stat_of "$T/mnt" remote.requests)
[ "$st_reqs" -le 2 ] || fail "czfs-stat: a warm mount made $st_reqs requests"
[ "$(stat_of "$T/mnt" remote.cache_hits)" -gt 0 ] || fail "czfs-stat: no cache hits when warm"
czfs_umount "$T/mnt"
warm=$(( $(requests) - cold ))
note "requests: cold $cold, warm $warm"
[ "$warm" -le 2 ] || fail "a warm mount made $warm requests (cold: $cold)"

note "a damaged piece is fetched again"
piece=$(find "$C" -type f -size +100k | head -1)
printf 'XXXX' | dd of="$piece" bs=1 seek=1000 conv=notrunc status=none
before=$(requests)
czfs_mount "$URL" "$T/mnt" -o cache_dir="$C"
diff -r "$T/src" "$T/mnt" || fail "a damaged piece reached a reader"
czfs_umount "$T/mnt"
[ $(( $(requests) - before )) -gt 1 ] || fail "the damaged piece was not fetched again"

note "a changed object (same UUID, new ETag) does not meet the old pieces"
sample_files "$T/src2" "text"
echo "the second image" >"$T/src2/marker"
"$MKFS" -q -U $uuid -d "$T/src2" "$T/www/img2.czfs"
mv "$T/www/img2.czfs" "$T/www/img.czfs"
czfs_mount "$URL" "$T/mnt" -o cache_dir="$C"
diff -r "$T/src2" "$T/mnt" || fail "the changed object read through old pieces"
czfs_umount "$T/mnt"
[ "$(find "$C" -mindepth 1 -maxdepth 1 -type d | wc -l)" -eq 2 ] ||
	fail "the two objects do not have a directory each"

note "the cache stays under cache_limit"
czfs_mount "$URL" "$T/mnt" -o cache_dir="$T/small",cache_limit=2M
diff -r "$T/src2" "$T/mnt" || fail "the tree through a small cache differs"
czfs_umount "$T/mnt"
used=$(find "$T/small" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
[ "$used" -le $((2 << 20)) ] || fail "the cache holds $used bytes, over 2M"
[ "$used" -gt 0 ] || fail "the small cache kept nothing"

note "two live mounts sharing one cache stay under its limit together"
for k in a b; do
	mkdir -p "$T/src-$k"
	head -c 3000000 /dev/urandom >"$T/src-$k/random"
	"$MKFS" -q -d "$T/src-$k" "$T/www/$k.czfs"
done
for k in a b; do
	czfs_mount "http://127.0.0.1:$HTTP_PORT/$k.czfs" "$T/mnt-$k" \
		-o cache_dir="$T/shared",cache_limit=2M
done
cmp "$T/src-a/random" "$T/mnt-a/random" || fail "a read through the shared cache differs"
cmp "$T/src-b/random" "$T/mnt-b/random" || fail "a read through the shared cache differs"
used=$(find "$T/shared" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
for k in a b; do czfs_umount "$T/mnt-$k"; done
note "two mounts: the shared cache holds $used bytes"
[ "$used" -le $((2 << 20)) ] || fail "two mounts' shared cache holds $used bytes, over 2M"
[ "$used" -gt 0 ] || fail "the shared cache kept nothing"

note "an object replaced under a live mount: EIO and a log line"
"$MKFS" -q -f -d "$T/src" "$T/www/img.czfs"	# the first tree again, new ETag
czfs_mount "$URL" "$T/mnt" -o remote_retries=1
cat "$T/mnt/marker" >/dev/null 2>&1 && fail "the old tree has no marker"
mv "$T/www/img.czfs" "$T/www/old.czfs"
"$MKFS" -q -d "$T/src2" "$T/www/img.czfs"
if timeout 60 cat "$T/mnt/random" >/dev/null 2>"$T/changed.err"; then
	fail "a read after the object changed succeeded"
fi
grep -q "Input/output error" "$T/changed.err" || fail "not EIO: $(cat "$T/changed.err")"
log_has "$T/mnt" "changed" || fail "no log line says the object changed"
ls "$T/mnt" >/dev/null || fail "the mount died"
czfs_umount "$T/mnt"
note "ok"
