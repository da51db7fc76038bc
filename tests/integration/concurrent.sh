#!/bin/bash
# Several readers at once, on different files and on the same file, with a
# small cache so clusters are evicted and reloaded under the readers.
. "$top_srcdir/tests/integration/lib.sh"
require_fuse

sample_files "$T/src" "libs bins mixed"
"$MKFS" -q -C 16k -d "$T/src" "$T/img"
czfs_mount "$T/img" "$T/mnt" -o cache_size=4M,workers=2

(cd "$T/src" && md5sum libs bins mixed) >"$T/want"
pids=()
for r in 1 2 3 4; do
	for f in libs bins mixed libs; do
		(cd "$T/mnt" && md5sum "$f" >"$T/got.$r.$f.$RANDOM") &
		pids+=($!)
	done
done
for p in "${pids[@]}"; do wait "$p" || fail "a reader failed"; done
for g in "$T"/got.*; do
	grep -qF "$(cat "$g")" "$T/want" || fail "reader got $(cat "$g")"
done
# random-offset reads against the source
python3 - "$T/src/libs" "$T/mnt/libs" <<'PY' || fail "random reads differ"
import os, random, sys
a, b = (open(p, 'rb') for p in sys.argv[1:3])
size = os.path.getsize(sys.argv[1])
rnd = random.Random(7)
for _ in range(2000):
    off = rnd.randrange(size); n = rnd.choice([1, 100, 4096, 70000, 300000])
    a.seek(off); b.seek(off)
    assert a.read(n) == b.read(n), (off, n)
PY
czfs_umount "$T/mnt"
