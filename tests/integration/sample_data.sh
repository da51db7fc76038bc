#!/bin/bash
# The suite's data builder works with no corpus anywhere: every sample has
# its size, is the same on a second run, and has the shape tests rely on
# (text compresses well, packed data does not).
. "$(dirname "$0")/lib.sh"

note "no corpus in the environment; the builder names none"
unset CZFS_CORPUS
! grep -v '^[[:space:]]*#' "$top_srcdir/tests/sample-data" |
	grep -q -i -e '\.\./' -e silesia -e CZFS_CORPUS ||
	fail "tests/sample-data names the corpus"

"$top_srcdir/tests/sample-data" "$T/a" || fail "builder failed"
"$top_srcdir/tests/sample-data" "$T/b" || fail "builder failed the second time"
n=0
while read -r name size _; do
	[ "$(stat -c %s "$T/a/$name")" = "$size" ] || fail "$name: not $size bytes"
	cmp "$T/a/$name" "$T/b/$name" || fail "$name differs between two runs"
	n=$((n + 1))
done < <("$top_srcdir/tests/sample-data" --list)
[ "$n" -ge 6 ] || fail "only $n samples"

ratio() {	# percent of the input that gzip -1 leaves
	echo $(($(gzip -1 -c "$T/a/$1" | wc -c) * 100 / $(stat -c %s "$T/a/$1")))
}
note "shapes: text $(ratio text)%, docs $(ratio docs)%, libs $(ratio libs)%, mixed $(ratio mixed)%, packed $(ratio packed)% after gzip -1"
[ "$(ratio text)" -lt 35 ] || fail "text does not compress like text"
[ "$(ratio docs)" -lt 50 ] || fail "docs do not compress like text"
[ "$(ratio libs)" -lt 70 ] || fail "libs do not compress like binaries"
[ "$(ratio packed)" -gt 90 ] || fail "packed data compresses"

note "one sample alone, and to standard output"
"$top_srcdir/tests/sample-data" "$T/c" text
cmp "$T/c/text" "$T/a/text" || fail "one sample alone differs"
[ ! -e "$T/c/docs" ] || fail "unasked sample made"
"$top_srcdir/tests/sample-data" --cat docs | cmp - "$T/a/docs" || fail "--cat differs"
! "$top_srcdir/tests/sample-data" "$T/d" nosuch 2>"$T/err" || fail "unknown name accepted"
grep -q "unknown sample 'nosuch'" "$T/err" || fail "no message for an unknown name"
note "ok"
