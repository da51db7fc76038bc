# Build a source tree with everything czfs must preserve (sourced).
#
# make_tree DIR [full]: file sizes around every boundary, sparse and
# all-zero files, Silesia data, part of /usr/include, symlinks (short and
# 4000 bytes), hard links, devices, fifo, socket, xattrs inline and
# external, odd names, modes, owners and nanosecond timestamps.

make_tree() {
	local d=$1 full=${2:-}
	mkdir -p "$d/inc" "$d/data" "$d/special" "$d/deep/a/b/c/d/e/f/g"
	cp -a /usr/include/linux "$d/inc/"
	if [ -n "$full" ]; then
		cp -a /usr/include/asm-generic /usr/include/x86_64-linux-gnu \
			"$d/inc/" 2>/dev/null || true
		sample_files "$d/data"
	else
		sample_files "$d/data" "text docs"
	fi
	for n in 0 1 4095 4096 4097 65535 65536 65537 262144 300000; do
		head -c "$n" /dev/urandom >"$d/data/rand.$n"
	done
	head -c 1000000 "$d/data/text" >"$d/data/text.partial"
	head -c 1048576 /dev/zero >"$d/data/zeros.1M"
	truncate -s 100M "$d/data/sparse"
	printf 'middle' | dd of="$d/data/sparse" bs=1 seek=52428800 conv=notrunc status=none
	printf 'end' | dd of="$d/data/sparse" bs=1 seek=104857597 conv=notrunc status=none
	echo deep >"$d/deep/a/b/c/d/e/f/g/file"
	# links
	ln -s ../data/text "$d/special/link-rel"
	ln -s "$(printf 'x%.0s' $(seq 1 4000))" "$d/special/link-long"
	ln -s /nonexistent "$d/special/link-dangling"
	echo shared >"$d/special/hard1"
	ln "$d/special/hard1" "$d/special/hard2"
	ln "$d/special/hard1" "$d/deep/hard3"
	# special files
	mknod "$d/special/null" c 1 3
	mknod "$d/special/loop" b 7 200
	mkfifo "$d/special/fifo"
	python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])" \
		"$d/special/socket"
	# names
	touch "$d/special/with space" "$d/special/ünïcödé" "$d/special/-dash"
	touch "$d/special/$(printf 'n%.0s' $(seq 1 255))"
	# modes, owners, times
	echo m >"$d/special/setuid"; chmod 4755 "$d/special/setuid"
	mkdir "$d/special/sticky"; chmod 1777 "$d/special/sticky"
	echo o >"$d/special/owned"; chown 1234:5678 "$d/special/owned"
	echo z >"$d/special/nomode"; chmod 000 "$d/special/nomode"
	touch -h -d '2001-02-03 04:05:06.123456789' "$d/special/link-rel"
	touch -d '1999-12-31 23:59:59.999999999' "$d/data/rand.1"
	touch -d '1960-01-01 00:00:00.5' "$d/special/owned"
	# xattrs: small, one past the inline limit, near the 64 KiB maximum
	setfattr -n user.small -v hello "$d/data/rand.1"
	setfattr -n user.mid -v "0x$(head -c 1500 /dev/urandom | xxd -p | tr -d '\n')" "$d/data/rand.1"
	setfattr -n user.big -v "0x$(head -c 60000 /dev/urandom | xxd -p | tr -d '\n')" "$d/special/hard1"
	setfattr -n trusted.t -v trusted-value "$d/special/owned"
	setfattr -n security.s -v sec "$d/special/sticky"
	setfattr -n user.empty "$d/deep"
	for i in $(seq 1 50); do setfattr -n "user.many$i" -v "v$i" "$d/data/rand.0"; done
}

# Compare two trees: contents, then every preserved attribute.
compare_trees() {
	local a=$1 b=$2
	# diff cannot compare special files; their type, mode and rdev are
	# compared by the manifest below.
	diff -r --no-dereference "$a" "$b" 2>&1 |
		grep -Ev '^File .* is a (fifo|socket|character special file|block special file) while file .* is a \1$' \
		>"$T/diff.out" || true
	[ ! -s "$T/diff.out" ] || { head -20 "$T/diff.out" >&2; fail "contents differ"; }
	manifest "$a" >"$T/m.a"
	manifest "$b" >"$T/m.b"
	diff "$T/m.a" "$T/m.b" >&2 || fail "attributes differ"
	tree_xattrs "$a" >"$T/x.a"
	tree_xattrs "$b" >"$T/x.b"
	diff "$T/x.a" "$T/x.b" >/dev/null || { diff "$T/x.a" "$T/x.b" | head >&2; fail "xattrs differ"; }
}

# name|type|mode|uid|gid|links|size (not for dirs)|mtime|ctime-less|rdev|target
manifest() {
	(cd "$1" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
		xargs -0 stat -c '%n|%F|%a|%u|%g|%h|%s|%y|%t:%T|%N' |
		awk -F'|' 'BEGIN{OFS="|"} $2=="directory"{$7="-"} {print}')
}
