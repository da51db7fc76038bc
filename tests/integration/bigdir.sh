#!/bin/bash
# A directory of 100,000 entries: complete listing, every lookup works.
. "$top_srcdir/tests/integration/lib.sh"
require_fuse

mkdir -p "$T/src/big"
(cd "$T/src/big" && seq -f 'entry-%06g-with-a-longer-name' 1 100000 | xargs touch)
echo payload >"$T/src/big/entry-054321-with-a-longer-name"
"$MKFS" -q -d "$T/src" "$T/img"
czfs_mount "$T/img" "$T/mnt"

n=$(ls -f "$T/mnt/big" | wc -l)
[ "$n" -eq 100002 ] || fail "listing has $n entries, want 100002"
ls "$T/mnt/big" | LC_ALL=C sort >"$T/got"
ls "$T/src/big" | LC_ALL=C sort >"$T/want"
cmp -s "$T/got" "$T/want" || fail "listing differs from the source"
for i in 1 777 54321 99999 100000; do
	name=$(printf 'entry-%06d-with-a-longer-name' "$i")
	[ -e "$T/mnt/big/$name" ] || fail "lookup of $name failed"
done
[ "$(cat "$T/mnt/big/entry-054321-with-a-longer-name")" = payload ] ||
	fail "content of a file in the big directory"
[ ! -e "$T/mnt/big/entry-100001-with-a-longer-name" ] || fail "phantom entry"
# readdir resumed at every offset: getdents with a tiny buffer
python3 - "$T/mnt/big" <<'PY' || fail "small-buffer readdir lost or repeated entries"
import os, sys
names = []
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
with os.scandir(fd) as it:
    names = [e.name for e in it]
assert len(names) == 100000 and len(set(names)) == 100000, len(names)
PY
czfs_umount "$T/mnt"
