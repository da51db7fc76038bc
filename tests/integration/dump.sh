#!/bin/bash
# dump.czfs: a known file's inode and cluster map (count, kinds, blocks),
# a directory's entries, inode number and path agree, the statistics add
# up (per-algorithm disk blocks = the data blocks in use; referenced +
# holes = file bytes; inode counts = the source tree), JSON parses, and
# the command line's errors.
. "$top_srcdir/tests/integration/lib.sh"
DUMP="$top_builddir/dump/dump.czfs"

sample_files "$T/src" "text"
mkdir -p "$T/src/dir/sub"
for i in $(seq 1 20); do echo "$i" >"$T/src/dir/f$i"; done
head -c 100000 /dev/urandom >"$T/src/random"
truncate -s 10M "$T/src/sparse"
echo end >>"$T/src/sparse"
ln -s text "$T/src/link"
setfattr -n user.big -v "0x$(head -c 3000 /dev/urandom | xxd -p | tr -d '\n')" "$T/src/random"
"$MKFS" -q -c zstd -C 64k -d "$T/src" "$T/img"

# json FILE EXPR: evaluate a Python expression over the JSON in FILE (as d)
json() {
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

note "the superblock, checkpoints and statistics"
"$DUMP" "$T/img" >"$T/text" || fail "dump exit $?"
for f in "superblock:" "version_major: 1" "cluster_size: 65536" "default_alg: zstd" \
	 "checkpoint1:" "state: empty" "checkpoint2:" "state: valid" "statistics:" \
	 "alg zstd" "tree_nodes:"; do
	grep -q "$f" "$T/text" || fail "text output lacks '$f'"
done
"$DUMP" -j "$T/img" >"$T/all.json" || fail "dump -j exit $?"
python3 -m json.tool "$T/all.json" >/dev/null || fail "dump -j is not JSON"
[ "$(json "$T/all.json" 'd["checkpoint2"]["current"]')" = True ] || fail "checkpoint 2 not current"
[ "$(json "$T/all.json" 'd["statistics"]["inodes"]["files"]')" = \
  "$(find "$T/src" -type f | wc -l)" ] || fail "file count"
[ "$(json "$T/all.json" 'd["statistics"]["inodes"]["directories"]')" = \
  "$(find "$T/src" -type d | wc -l)" ] || fail "directory count"
[ "$(json "$T/all.json" 'd["statistics"]["inodes"]["symlinks"]')" = 1 ] || fail "symlink count"
# compsize: the algorithms' disk blocks are exactly the data blocks in use
[ "$(json "$T/all.json" 'sum(a["disk_blocks"] for a in d["statistics"]["algorithms"] if a["alg"] != "TOTAL")')" = \
  "$(json "$T/all.json" 'd["statistics"]["blocks"]["data"]')" ] || fail "disk blocks do not add up to the data blocks"
[ "$(json "$T/all.json" 'd["statistics"]["algorithms"][0]["disk_blocks"]')" = \
  "$(json "$T/all.json" 'd["statistics"]["blocks"]["data"]')" ] || fail "TOTAL row"
[ "$(json "$T/all.json" 'd["statistics"]["blocks"]["used"] == d["statistics"]["blocks"]["data"] + d["statistics"]["blocks"]["metadata"]')" = True ] ||
	fail "used blocks are not data + metadata"
s=$(json "$T/all.json" 'd["statistics"]["algorithms"][0]["referenced_bytes"] + d["statistics"]["hole_bytes"]')
[ "$s" = "$(json "$T/all.json" 'd["statistics"]["apparent_bytes"]')" ] || fail "referenced + holes != file bytes"
[ "$(json "$T/all.json" 'd["statistics"]["hole_bytes"] >= 10 * 2**20 - 65536')" = True ] || fail "the sparse file's hole"
[ "$(json "$T/all.json" 'd["statistics"]["blocks"]["xattr_values"]')" = 1 ] || fail "xattr value blocks"

note "a known file: text"
size=$(stat -c %s "$T/src/text")
want=$(( (size + 65535) / 65536 ))
"$DUMP" "$T/img" text >"$T/text" || fail "dump text exit $?"
grep -q "type: regular file" "$T/text" || fail "no type"
grep -q "size: $size" "$T/text" || fail "no size"
[ "$(grep -c "kind sliced" "$T/text")" -ge $((want - 1)) ] || fail "text is not compressed in slices"
grep -q "total: $want" "$T/text" || fail "cluster count is not $want"
"$DUMP" -j "$T/img" text >"$T/text.json" || fail "dump -j text exit $?"
python3 -m json.tool "$T/text.json" >/dev/null || fail "not JSON"
[ "$(json "$T/text.json" 'len(d["clusters"])')" = "$want" ] || fail "cluster rows"
[ "$(json "$T/text.json" 'set(c["kind"] for c in d["clusters"]) <= {"sliced", "raw", "inline-compressed", "packed"}')" = True ] ||
	fail "kinds"
# a slice's blocks are its run's: the inode counts its payload bytes
[ "$(json "$T/text.json" 'sum(c["blocks"] for c in d["clusters"] if c["kind"] not in ("sliced", "packed")) == d["inode"]["blocks"]')" = True ] ||
	fail "cluster blocks differ from the inode's blocks"
[ "$(json "$T/text.json" 'sum(c["stored"] for c in d["clusters"] if c["kind"] == "sliced") <= d["inode"]["inline_bytes"]')" = True ] ||
	fail "slices' bytes are not in the inode's inline_bytes"
# slices lie back to back: each starts where the one before ended
[ "$(json "$T/text.json" 'all(b["offset"] == a["offset"] + a["stored"] for a, b in zip(d["clusters"], d["clusters"][1:]) if a["kind"] == b["kind"] == "sliced" and a["run"] == b["run"])')" = True ] ||
	fail "slices are not back to back"
[ "$(json "$T/all.json" '(lambda r: r["count"] >= 1 and r["live_bytes"] == r["bytes"] == r["slice_bytes"] and r["blocks_saved"] > 0)(d["statistics"]["runs"])')" = True ] ||
	fail "runs statistics"
[ "$(json "$T/text.json" 'sum(c["ulen"] for c in d["clusters"])')" = "$size" ] || fail "ulen sum"
[ "$(json "$T/text.json" 'all(c["ratio"] > 1 for c in d["clusters"] if c["kind"] == "sliced")')" = True ] ||
	fail "ratios"
ino=$(json "$T/text.json" 'd["inode"]["ino"]')
"$DUMP" -j "$T/img" "$ino" | cmp - "$T/text.json" || fail "by inode number differs from by path"

note "sparse file, xattrs, a directory, a symlink"
"$DUMP" -j "$T/img" sparse >"$T/sparse.json"
[ "$(json "$T/sparse.json" 'd["cluster_counts"]["holes"]')" -ge 159 ] || fail "holes"
"$DUMP" -j "$T/img" random >"$T/random.json"
[ "$(json "$T/random.json" 'd["xattrs"][0]["stored"]')" = external ] || fail "external xattr"
[ "$(json "$T/random.json" 'd["clusters"][0]["kind"]')" = raw ] || fail "random data stored raw"
"$DUMP" -j "$T/img" /dir >"$T/dir.json"
[ "$(json "$T/dir.json" 'len(d["entries"])')" = 21 ] || fail "entries of dir"
[ "$(json "$T/dir.json" 'd["inode"]["nlink"]')" = 3 ] || fail "nlink of dir"
"$DUMP" "$T/img" link | grep -q "type: symlink" || fail "symlink"

note "errors"
st=0; "$DUMP" "$T/img" nonexistent 2>"$T/err" || st=$?
[ "$st" = 1 ] && grep -q "not found" "$T/err" || fail "missing path: $st $(cat "$T/err")"
st=0; "$DUMP" --bogus "$T/img" 2>/dev/null || st=$?
[ "$st" = 2 ] || fail "bad option: exit $st"
st=0; "$DUMP" "$T/nonexistent" 2>"$T/err" || st=$?
[ "$st" = 2 ] && grep -q "No such file" "$T/err" || fail "missing image: $st"
"$DUMP" --help | grep -q "Usage: dump.czfs" || fail "--help"
"$DUMP" --version | grep -q "dump.czfs (czfs)" || fail "--version"
