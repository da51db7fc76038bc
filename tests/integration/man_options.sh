#!/bin/bash
# The man pages match the code: every option a tool's --help names is
# documented as an entry of its man page's OPTIONS section, and every
# option an entry there documents is in --help; --version prints
# "TOOL (czfs) VERSION"; the page's NAME line names the tool.
#
# The pages are read as roff source (no man(1) needed): escapes such as
# \- and font changes are undone, the arguments of .B, .BI, .BR, ... are
# joined as roff joins them, and the entries are the lines that follow
# .TP and .TQ.  For czfs-fuse only its own options are compared with
# --help (what --help prints after "FUSE options:" is libfuse's); the
# FUSE options its page documents must still be among those libfuse
# prints.  Options are -x, --long and, for czfs-fuse and mount.czfs,
# the names given to -o (and name=value alternatives such as
# reclaim=keep|punch).
. "$top_srcdir/tests/integration/lib.sh"

version=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"$/\1/p' "$top_builddir/config.h")
[ -n "$version" ] || fail "no PACKAGE_VERSION in $top_builddir/config.h"
man="$top_srcdir/man"
errors=0

bad() {
	echo "FAIL: $*" >&2
	errors=$((errors + 1))
}

# roff_text PAGE: the page as text, one output line per input line; macro
# lines other than the font macros keep their macro (".TP", ".SH NAME").
roff_text() {
	awk '
	function unescape(s) {
		gsub(/\\f(\[[A-Z]*\]|\(..|.)/, "", s)	# font changes
		gsub(/\\\(lq|\\\(rq|\\\(dq/, "\"", s)
		gsub(/\\\(bu/, "*", s)
		gsub(/\\\(em|\\\(en/, "-", s)
		gsub(/\\-/, "-", s)
		gsub(/\\[&c%]/, "", s)
		gsub(/\\ /, " ", s)
		gsub(/\\e/, "\\", s)
		return s
	}
	# the arguments of a macro line, as roff splits them
	function split_args(s, a,    n, i, c, q, cur, have) {
		n = 0; q = 0; cur = ""; have = 0
		for (i = 1; i <= length(s); i++) {
			c = substr(s, i, 1)
			if (c == "\\") {
				cur = cur substr(s, i, 2); i++; have = 1
			} else if (c == "\"") {
				if (q && substr(s, i + 1, 1) == "\"") {
					cur = cur "\""; i++
				} else {
					q = !q; have = 1
				}
			} else if (c == " " && !q) {
				if (have) a[++n] = cur
				cur = ""; have = 0
			} else {
				cur = cur c; have = 1
			}
		}
		if (have) a[++n] = cur
		return n
	}
	/^\.\\"/ || /^'\''\\"/ { print ""; next }
	/^\.[A-Z][A-Z]?([ \t]|$)/ {
		mac = $1; rest = $0; sub(/^\.[A-Z][A-Z]?[ \t]*/, "", rest)
		n = split_args(rest, a)
		if (mac == ".B" || mac == ".I" || mac == ".SM" || mac == ".SB") {
			out = ""
			for (i = 1; i <= n; i++) out = out (i > 1 ? " " : "") unescape(a[i])
			print out
		} else if (mac ~ /^\.(BI|BR|IB|IR|RB|RI)$/) {
			out = ""
			for (i = 1; i <= n; i++) out = out unescape(a[i])
			print out
		} else {
			out = mac
			for (i = 1; i <= n; i++) out = out " " unescape(a[i])
			print out
		}
		next
	}
	{ print unescape($0) }
	' "$1"
}

# entries PAGE [SUBSECTION]: the heads of the entries (.TP, .TQ) of the
# OPTIONS section, or of one of its subsections (.SS SUBSECTION).
entries() {
	roff_text "$1" | awk -v sub_want="${2:-}" '
	/^\.SH / { in_opts = ($0 == ".SH OPTIONS"); in_sub = (sub_want == ""); next }
	/^\.SS / { if (in_opts && sub_want != "") in_sub = (substr($0, 5) == sub_want); next }
	!in_opts || !in_sub { next }
	/^\.(TP|TQ)( |$)/ { head = 1; next }
	head && /^\./ { next }		# a macro between .TP and its head
	head { print; head = 0 }
	'
}

# options [o|o=]: the options named in the text on stdin, one per line:
# -x, --long; with "o", also the names given to -o (and to comma lists
# after it) and every name=a|b as name=a, name=b; with "o=", also every
# name= anywhere.
options() (
	set +e +o pipefail	# a text may name no option of a kind
	text=$(cat)
	{
		grep -oE '(^|[][ ,(|])-[A-Za-z]([^A-Za-z0-9]|$)' <<<"$text" |
			grep -oE -- '-[A-Za-z]'
		grep -oE '(^|[^A-Za-z0-9-])--[a-z][a-z0-9-]*' <<<"$text" |
			grep -oE -- '--[a-z][a-z0-9-]*'
		if [ -n "${1:-}" ]; then
			grep -oE -- '-o [a-z_][a-z0-9_]*(=[^ ,]*)?( \(default\))?(, ?[a-z_][a-z0-9_]*(=[^ ,]*)?( \(default\))?)*' <<<"$text" |
				sed -e 's/^-o //' -e 's/ (default)//g' | tr ',' '\n' |
				sed -e 's/^ *//' -e 's/=.*//' | grep -E '^[a-z_][a-z0-9_]*$'
			[ "$1" != o= ] ||
				grep -oE '(^|[^A-Za-z0-9_-])[a-z_][a-z0-9_]*=' <<<"$text" |
				grep -oE '[a-z_][a-z0-9_]*'
			grep -oE '[a-z_][a-z0-9_]*=[a-z0-9_]+(\|[a-z0-9_]+)+' <<<"$text" |
				awk -F'[=|]' '{ for (i = 2; i <= NF; i++) print $1 "=" $i }'
		fi
	} | sort -u
)

# check_tool TOOL BINARY PAGE [SUBSECTION] [o|o=] [HELP_END]
check_tool() {
	local tool=$1 bin=$2 page=$3 sub=${4:-} o=${5:-} end=${6:-} help doc
	local name opt n_help n_doc

	[ -x "$bin" ] || { bad "$tool: no program $bin"; return; }
	[ -f "$page" ] || { bad "$tool: no man page $page"; return; }
	help=$("$bin" --help) || bad "$tool --help: exit status $?"
	"$bin" --version >"$T/version" || bad "$tool --version: exit status $?"
	[ "$(head -n 1 "$T/version")" = "$tool (czfs) $version" ] ||
		bad "$tool --version prints '$(head -n 1 "$T/version")', not '$tool (czfs) $version'"

	name=$(roff_text "$page" | awk 'f == 1 { print; f = 2 } /^\.SH NAME$/ && !f { f = 1 }')
	name=${name%% - *}
	grep -qE "(^|, )${tool//./\\.}(,|$)" <<<"$name" ||
		bad "$(basename "$page"): the NAME line ('$name') does not name $tool"

	[ -z "$end" ] || help=$(awk -v end="$end" '$0 == end { exit } { print }' <<<"$help")
	options $o <<<"$help" >"$T/help.opts"
	entries "$page" "$sub" >"$T/entries"
	options $o <"$T/entries" >"$T/doc.opts"
	n_help=$(wc -l <"$T/help.opts")
	n_doc=$(wc -l <"$T/doc.opts")
	[ "$n_help" -gt 0 ] || bad "$tool: no option found in --help"
	[ "$n_doc" -gt 0 ] || bad "$tool: no option found in the OPTIONS entries of $(basename "$page")${sub:+ ($sub)}"
	while read -r opt; do
		bad "$tool: '$opt' is in --help but not an entry of $(basename "$page")'s OPTIONS${sub:+ ($sub)}"
	done < <(comm -23 "$T/help.opts" "$T/doc.opts")
	while read -r opt; do
		bad "$tool: '$opt' is documented in $(basename "$page")${sub:+ ($sub)} but not in --help"
	done < <(comm -13 "$T/help.opts" "$T/doc.opts")
	note "$tool: $n_help options in --help, $n_doc in $(basename "$page")${sub:+ ($sub)}"
}

B=$top_builddir
check_tool mkfs.czfs "$B/mkfs/mkfs.czfs" "$man/mkfs.czfs.8"
check_tool fsck.czfs "$B/fsck/fsck.czfs" "$man/fsck.czfs.8"
check_tool dump.czfs "$B/dump/dump.czfs" "$man/dump.czfs.8"
check_tool czfs-stat "$B/src/fuse/czfs-stat" "$man/czfs-stat.1"
check_tool czfs-fuse "$B/src/fuse/czfs-fuse" "$man/czfs-fuse.1" "czfs options" o= "FUSE options:"
check_tool mount.czfs "$B/mount/mount.czfs" "$man/mount.czfs.8" mount.czfs o
check_tool umount.fuse.czfs "$B/mount/umount.fuse.czfs" "$man/mount.czfs.8" umount.fuse.czfs

# The FUSE options czfs-fuse's page documents are libfuse's.
"$B/src/fuse/czfs-fuse" --help | awk '$0 == "FUSE options:" { f = 1 } f' |
	options o= >"$T/fuse.help"
entries "$man/czfs-fuse.1" "FUSE options" | options o= >"$T/fuse.doc"
[ -s "$T/fuse.doc" ] || bad "czfs-fuse.1: no entry in its FUSE options"
while read -r opt; do
	bad "czfs-fuse.1 documents the FUSE option '$opt', which czfs-fuse --help does not list"
done < <(comm -13 "$T/fuse.help" "$T/fuse.doc")

# The options mount.czfs drops as mount(8)'s (its --help lists them) are
# named in its page.
"$B/mount/mount.czfs" --help | tr '\n' ' ' | tr -s ' ' |
	sed -n "s/.*; \(.*\) are mount(8)'s.*/\1/p" | sed 's/ and /, /g' | tr ',' '\n' |
	sed -e 's/^ *//' -e 's/ *$//' -e 's/\.\.\.$//' >"$T/dropped"
[ "$(wc -l <"$T/dropped")" -ge 5 ] || bad "mount.czfs --help: cannot find the options it drops"
roff_text "$man/mount.czfs.8" >"$T/mount.txt"
while read -r opt; do
	grep -qF -- "$opt" "$T/mount.txt" || bad "mount.czfs drops '$opt' (--help), mount.czfs.8 does not say so"
done <"$T/dropped"

# The link pages lead to a real page.
for p in mount.fuse.czfs.8 umount.fuse.czfs.8; do
	[ -f "$man/$p" ] || { bad "no man page $p"; continue; }
	target=$(sed -n 's/^\.so //p' "$man/$p")
	[ -f "$man/$(basename "$target")" ] || bad "$p: .so $target: no such page"
done

[ "$errors" = 0 ] || fail "$errors discrepancies between --help and the man pages"
note "ok"
