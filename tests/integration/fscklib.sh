# Helpers of the fsck tests (sourced after lib.sh): the tools, and fsck
# runs checked for hangs, crashes and sanitizer reports.
FSCK="$top_builddir/fsck/fsck.czfs"
DUMP="$top_builddir/dump/dump.czfs"
LOCATE="$top_builddir/tests/czfs-locate"
CORRUPT="$top_builddir/tests/czfs-corrupt"

# run_fsck IMAGE ARGS...: sets $st and $out
run_fsck() {
	local img=$1
	shift
	st=0
	out=$(timeout 120 "$FSCK" "$@" "$img" 2>&1) || st=$?
	[ "$st" -ne 124 ] || fail "fsck $* hung on $img"
	[ "$st" -lt 128 ] || fail "fsck $* crashed on $img (status $st): $out"
	if grep -q "runtime error\|AddressSanitizer" <<<"$out"; then
		echo "$out" >&2
		fail "sanitizer report from fsck $*"
	fi
}

# expect_fsck IMAGE RC PATTERN [ARGS...]
expect_fsck() {
	local img=$1 rc=$2 pat=$3
	shift 3
	run_fsck "$img" "$@"
	[ "$st" -eq "$rc" ] || fail "fsck $* exit $st, expected $rc: $out"
	grep -qi -- "$pat" <<<"$out" || fail "fsck $*: '$out' lacks '$pat'"
}

# flip IMAGE OFFSET: invert the byte at OFFSET
flip() {
	python3 - "$1" "$2" <<'PY'
import sys
p, off = sys.argv[1], int(sys.argv[2])
with open(p, 'r+b') as f:
    f.seek(off); b = f.read(1); f.seek(off); f.write(bytes([b[0] ^ 0xff]))
PY
}
