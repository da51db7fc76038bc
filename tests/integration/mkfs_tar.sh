#!/bin/bash
# mkfs.czfs --tar: a tarball made by GNU tar or bsdtar (PAX with xattrs,
# ACLs, sparse members; GNU format; plain, gzip, xz, zstd, from a file or
# stdin) gives the very bytes of mkfs.czfs -d of the tree it came from
# (with -U and -T), and mounted, the same tree: names, types, modes,
# owners, sub-second times, link counts, link targets, device numbers,
# xattrs, ACLs, contents.  fsck.czfs --tar turns the image back into a
# stream that gives the same image, and that GNU tar extracts to the same
# tree.  Chattr flags (SCHILY.fflags) reach lsattr and come back out;
# mkfs.czfs -d reads the same flags from the tree itself (the very image
# bsdtar's stream gives), and fsck.czfs --extract sets them again (+c
# dropped where refused; on a ramfs, which takes none, said once).
# Hostile tarballs fail with the member's name and leave no image.
# --tar-whiteouts=overlay makes overlayfs whiteouts.
. "$top_srcdir/tests/integration/lib.sh"

UUID=0b5e4a1c-7d2f-4e60-9a3b-c1d2e3f4a5b6
EPOCH=1700000000
command -v bsdtar >/dev/null || fail "bsdtar missing: scripts/install-deps test"
command -v zstd >/dev/null || fail "zstd missing: scripts/install-deps test"

S=$T/src
tmpfs_mount "$S"		# xattrs in every namespace, ACLs, holes
head -c 4000000 /dev/urandom >"$T/random"

make_src() {
	local d=$1 long
	long=$(printf 'n%.0s' $(seq 1 120))
	mkdir -p "$d/a/b" "$d/$long/$long" "$d/empty-dir"
	echo hello >"$d/a/hello"
	: >"$d/empty"
	head -c 300000 "$T/random" >"$d/a/b/rand"
	cp "$d/a/b/rand" "$d/a/b/rand-copy"	# a whole copy
	head -c 3000000 "$T/random" >"$d/big"	# many clusters
	seq 1 200000 >"$d/$long/$long/text-$long"
	ln "$d/a/hello" "$d/hard1"
	ln "$d/a/hello" "$d/a/b/hard2"
	ln -s a/hello "$d/rel-link"
	ln -s /etc/passwd "$d/abs-link"
	ln -s "$long/$long/text-$long" "$d/long-link"
	mknod "$d/cdev" c 1 3
	mknod "$d/bdev" b 7 200
	mkfifo "$d/fifo"
	truncate -s 10M "$d/sparse"
	printf data | dd of="$d/sparse" bs=1 seek=5242880 conv=notrunc status=none
	printf head | dd of="$d/sparse" conv=notrunc status=none
	setfattr -n user.x -v value "$d/a/hello"
	setfattr -n trusted.t -v "0x$(head -c 2000 "$T/random" | xxd -p | tr -d '\n')" "$d/a"
	setfacl -m u:1234:rwx,g:55:r-x "$d/a/b/rand"
	setfacl -d -m u:1234:rwx,g::r-x "$d/a"
	chown 1234:5678 "$d/a/b/rand" "$d/fifo"
	chown -h 99:98 "$d/rel-link"
	chmod 4755 "$d/big"
	touch -h -d '2020-01-02 03:04:05.123456789' "$d/a/hello" "$d/rel-link" "$d/a/b"
}
make_src "$S"

# manifest DIR: every attribute czfs keeps, times to the nanosecond.
manifest() {
	(cd "$1" && find . -printf '%p %y %m %U %G %n %s %T@ %C@ %l\n' |
		LC_ALL=C sort
	 find . \( -type b -o -type c \) -exec stat -c '%n %t:%T' {} + | LC_ALL=C sort
	 find . -type f -print0 | LC_ALL=C sort -z | xargs -0 md5sum
	 find . -print0 | LC_ALL=C sort -z | xargs -0 getfacl -P -n 2>/dev/null)
	tree_xattrs "$1"
}

# The reference: -d of the tree; images from its tarballs must equal it.
"$MKFS" -q -d "$S" -U $UUID -T $EPOCH "$T/ref.img"
"$MKFS" -q -d "$S" "$T/dir.img"
czfs_mount "$T/dir.img" "$T/mdir" -o ro
manifest "$T/mdir" >"$T/want"
grep -q 'user:1234:rwx' "$T/want" || fail "the reference has no ACL"
grep -q 'trusted.t=' "$T/want" || fail "the reference has no trusted xattr"

GNU=(tar --format=posix --xattrs --xattrs-include='*' --acls --sparse -C "$S")
"${GNU[@]}" -cf "$T/gnu.tar" .
"${GNU[@]}" -czf "$T/gnu.tgz" .
"${GNU[@]}" -cJf "$T/gnu.txz" .
bsdtar --format=pax -C "$S" -cf "$T/bsd.tar" .
bsdtar --format=pax -C "$S" --zstd -cf "$T/bsd.tzst" .

# same_as_ref NAME MKFS-ARGS...: the image of a tarball is ref.img's bytes
same_as_ref() {
	local name=$1
	shift
	"$MKFS" -q "$@" -U $UUID -T $EPOCH "$T/$name.img" ||
		fail "$name: mkfs.czfs --tar failed"
	cmp -s "$T/ref.img" "$T/$name.img" ||
		fail "$name: the image differs from mkfs.czfs -d of the tree"
	rm -f "$T/$name.img"
}
for t in gnu.tar gnu.tgz gnu.txz bsd.tar bsd.tzst; do
	same_as_ref "$t" --tar="$T/$t"
done
zstd -q -c "$T/gnu.tar" | same_as_ref stdin-zstd --tar
same_as_ref stdin-dash --tar=- <"$T/bsd.tar"
# a pipe by name: what mkfs.czfs reads to learn the format is not read again
same_as_ref pipe --tar=<(cat "$T/gnu.tar")
same_as_ref pipe-zstd --tar=<(zstd -q -c "$T/bsd.tar")
note "GNU tar and bsdtar, plain, gzip, xz, zstd, stdin, a pipe by name: the bytes of -d"

# Mounted, with the tarballs' own times: the tree of the -d image.
for t in gnu.tar bsd.tar; do
	"$MKFS" -q --tar="$T/$t" "$T/$t.img"
	czfs_mount "$T/$t.img" "$T/m-$t" -o ro
	manifest "$T/m-$t" >"$T/got-$t"
	diff -u "$T/want" "$T/got-$t" || fail "$t: the mounted tree differs"
	czfs_umount "$T/m-$t"
done
note "mounted: modes, owners, ns times, links, devices, xattrs, ACLs, data"

# GNU format: long names and sparse members without PAX (no xattrs, times
# to the second).
tar --format=gnu --sparse -C "$S" -cf "$T/old.tar" .
"$MKFS" -q --tar="$T/old.tar" "$T/old.img"
czfs_mount "$T/old.img" "$T/m-old" -o ro
plain() { (cd "$1" && find . -printf '%p %y %m %U %G %n %s %Ts %l\n' | LC_ALL=C sort
	find . -type f -print0 | LC_ALL=C sort -z | xargs -0 md5sum); }
diff -u <(plain "$T/mdir") <(plain "$T/m-old") || fail "GNU format: the tree differs"
[ "$(stat -c %b "$T/old.img")" -le $(($(stat -c %b "$T/dir.img") + 64)) ] ||
	fail "GNU format: the image is larger than -d's: the sparse member's holes took space"
czfs_umount "$T/m-old"
note "GNU format: long names, sparse member (holes take no space)"

# A sparse member last, its hole at the end (fuzz_tar's seeds): the spool
# must reach its size, or the pipeline reads short.
tar --format=posix --sparse -C "$S" -cf "$T/last.tar" sparse
"$MKFS" -q --tar="$T/last.tar" "$T/last.img" 2>"$T/err" || fail "sparse last: mkfs.czfs failed"
[ ! -s "$T/err" ] || { cat "$T/err" >&2; fail "sparse last: a message"; }
czfs_mount "$T/last.img" "$T/m-last" -o ro
cmp "$S/sparse" "$T/m-last/sparse" || fail "sparse last: the data differs"
czfs_umount "$T/m-last"
note "a sparse member last, with a hole at its end"

# The spool is freed as the pipeline reads it, a chunk (2 MiB) once every
# file in it was read (pipeline.c), not file by file: in a stream whose
# order is not the image's (three directories' files interleaved), a
# punch per file made as many calls as files.  And never too early: what
# a later file still needed would read as zeros.  (A stream on stdin is
# spooled; a tar file is not: below.)
mkdir -p "$T/many"
python3 - "$T/many" <<'PY'
import os, random, sys
r = random.Random(7)
for d in "abc":
    os.makedirs(os.path.join(sys.argv[1], d), exist_ok=True)
    for i in range(600):
        with open(os.path.join(sys.argv[1], d, "f%03d" % i), "wb") as f:
            f.write(("%s%03d " % (d, i)).encode() * r.randrange(600, 1800))
PY
(cd "$T/many" && for i in $(seq -w 0 599); do printf '%s\n' a/f$i b/f$i c/f$i; done) >"$T/many.list"
tar -C "$T/many" -cf "$T/many.tar" -T "$T/many.list"
# (LeakSanitizer cannot work under ptrace: the sanitizer build's leak
# check is off for these runs)
traced() {	# OUT CMD...: CMD under strace, its calls in OUT
	local out=$1
	shift
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	strace -f -e trace=fallocate,pwrite64,write -o "$out" "$@"
}
traced "$T/many.strace" "$MKFS" -q -j2 -U $UUID -T $EPOCH --tar=- "$T/many.img" <"$T/many.tar" ||
	fail "many small files: mkfs.czfs failed"
punches=$(grep -c PUNCH_HOLE "$T/many.strace" || true)
chunks=$(find "$T/many" -type f -printf '%s\n' |	# the spool: files by 4 KiB
	awk '{ s += int(($1 + 4095) / 4096) * 4096 } END { print int(s / 2097152) + 1 }')
[ "$punches" -ge 1 ] && [ "$punches" -le "$chunks" ] ||
	fail "many small files: $punches punches of the spool (1..$chunks chunks of 2 MiB)"
czfs_mount "$T/many.img" "$T/m-many" -o ro
diff -r "$T/many" "$T/m-many" || fail "many small files: the mounted tree differs"
czfs_umount "$T/m-many"
note "1,800 files interleaved: the spool freed in $punches punches, the data intact"

# An uncompressed tar file is not copied: its members are read where
# they lie (tardata.c), so mkfs writes the image and nothing else (11 MiB of
# files, an image of a few hundred KiB); and the image is the spooled one's.
written() {	# STRACE: the bytes its pwrite64 and write calls wrote
	awk -F'= ' '/(pwrite64|write)\(/ && $NF ~ /^[0-9]+$/ { s += $NF } END { print s + 0 }' "$1"
}
traced "$T/inplace.strace" "$MKFS" -q -j2 -U $UUID -T $EPOCH --tar="$T/many.tar" "$T/inplace.img" ||
	fail "in place: mkfs.czfs failed"
cmp -s "$T/many.img" "$T/inplace.img" || fail "in place: the image differs from the spooled one's"
data=$(du -sb "$T/many" | cut -f1)
w_in=$(written "$T/inplace.strace") w_sp=$(written "$T/many.strace")
[ "$w_in" -le "$(stat -c %s "$T/inplace.img")" ] && [ "$w_in" -lt $((data / 4)) ] ||
	fail "in place: mkfs.czfs wrote $w_in bytes for an image of $(stat -c %s "$T/inplace.img") ($data bytes of files)"
[ "$w_sp" -gt "$data" ] || fail "stdin: $w_sp bytes written, not the spool's $data"
grep -q PUNCH_HOLE "$T/inplace.strace" && fail "in place: a punch (of the tar file?)"
note "a tar file read in place: $w_in bytes written (spooled from stdin: $w_sp)"

# ... unless the image overwrites it: the tar file that is the image
# itself is spooled before (in place, the image's bytes were read back).
cp "$T/many.tar" "$T/self.tar"
"$MKFS" -q -f -j2 -U $UUID -T $EPOCH --tar="$T/self.tar" "$T/self.tar" 2>"$T/err" ||
	fail "a tar file as its own image: mkfs.czfs failed"
[ ! -s "$T/err" ] || { cat "$T/err" >&2; fail "a tar file as its own image: a message"; }
cmp -s "$T/many.img" "$T/self.tar" || fail "a tar file as its own image: the image differs"
note "a tar file overwritten by its own image (-f): spooled first, the image intact"

# ---- fsck.czfs --tar: the image as a tar stream again -----------------
FSCK="$top_builddir/fsck/fsck.czfs"
"$FSCK" -q --tar=- "$T/ref.img" >"$T/back.tar" || fail "fsck.czfs --tar=- failed"
same_as_ref back --tar="$T/back.tar"
[ "$(stat -c %s "$T/back.tar")" -lt $((10 << 20)) ] ||
	fail "fsck.czfs --tar wrote the 10 MiB sparse file's holes"
czfs_umount "$T/mdir"	# fsck.czfs refuses a mounted image
"$FSCK" -q --tar="$T/back2.tar" "$T/dir.img" || fail "fsck.czfs --tar=FILE failed"
X=$T/x
tmpfs_mount "$X"
tar --xattrs --xattrs-include='*' --acls -C "$X" -xf "$T/back2.tar" 2>"$T/err" ||
	{ cat "$T/err" >&2; fail "GNU tar cannot extract fsck.czfs --tar's stream"; }
"$MKFS" -q -d "$X" -U $UUID -T $EPOCH "$T/x.img"
cmp -s "$T/ref.img" "$T/x.img" ||
	fail "the tree GNU tar extracts from fsck.czfs --tar is not the source's"
getfacl -n "$X/a/b/rand" | grep -q 'user:1234:rwx' || fail "ACL lost on the way"
note "fsck.czfs --tar: mkfs.czfs --tar of it, and GNU tar's extraction of it, give the same image"

# A full output: the reason (not EIO), once, and a failing exit.
mkdir -p "$T/full"
mount -t tmpfs -o size=256k czfs-test "$T/full"
EXTRA_MOUNTS+=("$T/full")
if "$FSCK" -q --tar="$T/full/x.tar" "$T/dir.img" 2>"$T/err"; then
	fail "fsck.czfs --tar to a full filesystem succeeded"
fi
[ "$(grep -c 'No space left on device' "$T/err")" = 1 ] && [ "$(wc -l <"$T/err")" = 1 ] ||
	{ cat "$T/err" >&2; fail "fsck.czfs --tar to a full filesystem: not one ENOSPC message"; }
note "fsck.czfs --tar to a full filesystem: $(cat "$T/err")"

# ---- chattr flags: SCHILY.fflags in, lsattr on the mount, out again ----
F=$T/flags
tmpfs_mount "$F"		# tmpfs keeps +a +i +d +A
mkdir "$F/dir" "$F/idir"
for f in append immut nodump both idir/in; do echo "$f" >"$F/$f"; done
ln "$F/idir/in" "$F/link"	# a second name, made before +i forbids it
chattr +a "$F/append"; chattr +i "$F/immut"; chattr +d "$F/nodump"
chattr +A "$F/dir"; chattr +a +d "$F/both"; chattr +i "$F/idir/in" "$F/idir"
bsdtar --format=pax --fflags -C "$F" -cf "$T/flags.tar" .
attrs() { (cd "$1" && lsattr -d . append immut nodump both dir idir idir/in link); }
"$MKFS" -q --tar="$T/flags.tar" -U $UUID -T $EPOCH "$T/flags.img"
czfs_mount "$T/flags.img" "$T/m-flags" -o ro
diff -u <(attrs "$F") <(attrs "$T/m-flags") || fail "bsdtar --fflags: lsattr differs"
czfs_umount "$T/m-flags"
"$MKFS" -q -d "$F" -U $UUID -T $EPOCH "$T/flags-d.img" 2>"$T/err" ||
	{ cat "$T/err" >&2; fail "mkfs.czfs -d of the flags tree failed"; }
[ ! -s "$T/err" ] || { cat "$T/err" >&2; fail "mkfs.czfs -d: a warning"; }
czfs_mount "$T/flags-d.img" "$T/m-flags-d" -o ro
diff -u <(attrs "$F") <(attrs "$T/m-flags-d") || fail "mkfs.czfs -d: lsattr differs"
czfs_umount "$T/m-flags-d"
cmp -s "$T/flags.img" "$T/flags-d.img" ||
	fail "mkfs.czfs -d: not the image bsdtar --fflags gives"
tmpfs_mount "$T/xt-flags"
"$FSCK" -q --extract "$T/xt-flags/x" "$T/flags-d.img" ||
	fail "fsck.czfs --extract of the flags image failed"
diff -u <(attrs "$F") <(attrs "$T/xt-flags/x") || fail "fsck.czfs --extract: lsattr differs"
[ "$(stat -c %Y "$T/xt-flags/x/idir/in")" = $EPOCH ] ||
	fail "fsck.czfs --extract: an immutable file's mtime not set"
mkdir "$T/ramfs"
mount -t ramfs czfs-test "$T/ramfs"
EXTRA_MOUNTS+=("$T/ramfs")
st=0
"$FSCK" -q --extract "$T/ramfs/x" "$T/flags-d.img" 2>"$T/err" || st=$?
[ $st = 8 ] || { cat "$T/err" >&2; fail "fsck.czfs --extract to a ramfs: exit $st, not 8"; }
grep -q "chattr flags of 7 files not set (.*: Inappropriate ioctl for device)" "$T/err" &&
	[ "$(wc -l <"$T/err")" = 1 ] ||
	{ cat "$T/err" >&2; fail "fsck.czfs --extract to a ramfs: not one message"; }
cmp -s "$F/idir/in" "$T/ramfs/x/link" || fail "fsck.czfs --extract to a ramfs: a file lost"
"$FSCK" -q --tar="$T/flags-back.tar" "$T/flags.img" || fail "fsck.czfs --tar of flags failed"
"$MKFS" -q --tar="$T/flags-back.tar" -U $UUID -T $EPOCH "$T/flags2.img"
cmp -s "$T/flags.img" "$T/flags2.img" || fail "fsck.czfs --tar lost the flags"
python3 - "$T" <<'EOF'
import io, sys, tarfile
T = sys.argv[1]
with tarfile.open(f"{T}/fflags.tar", "w", format=tarfile.PAX_FORMAT) as tf:
    for name, fl in (("pax", "nodump,sappnd"), ("bsd", "uchg,nocow,bogus"),
                     ("cleared", "nosappnd,dump"), ("hint", "compress"),
                     ("hints", "compress,nodump")):
        ti = tarfile.TarInfo(name)
        ti.size, ti.pax_headers = 1, {"SCHILY.fflags": fl}
        tf.addfile(ti, io.BytesIO(b"x"))
EOF
"$MKFS" -q --tar="$T/fflags.tar" "$T/fflags.img" 2>"$T/err" ||
	fail "SCHILY.fflags: mkfs.czfs failed"
grep -q "member 'bsd': file flags nocow,bogus not kept" "$T/err" ||
	{ cat "$T/err" >&2; fail "no warning naming the flags not kept"; }
[ "$(grep -c warning "$T/err")" = 1 ] || fail "a warning for flags kept or cleared"
czfs_mount "$T/fflags.img" "$T/m-fflags" -o ro
got=$(cd "$T/m-fflags" && lsattr pax bsd cleared | tr '\n' ' ')
czfs_umount "$T/m-fflags"
[ "$got" = "-----ad--------------- pax ----i----------------- bsd ---------------------- cleared " ] ||
	fail "SCHILY.fflags on the mount: $got"
"$FSCK" -q --tar=- "$T/fflags.img" | python3 -c '
import sys, tarfile
for m in tarfile.open(fileobj=sys.stdin.buffer, mode="r|"):
    print(m.name, m.pax_headers.get("SCHILY.fflags"))' | sort >"$T/fflags.out"
printf '%s\n' ". None" "./bsd schg" "./cleared None" "./hint compress" \
	"./hints nodump,compress" "./pax sappnd,nodump" |
	diff -u - "$T/fflags.out" || fail "fsck.czfs --tar: SCHILY.fflags not written back"
# tmpfs takes no +c: fsck --extract drops it, and sets the rest
"$FSCK" -q --extract "$T/xt-flags/h" "$T/fflags.img" ||
	fail "fsck.czfs --extract of +c to a tmpfs failed"
got=$(cd "$T/xt-flags/h" && lsattr pax bsd cleared hint hints | tr '\n' ' ')
[ "$got" = "-----ad--------------- pax ----i----------------- bsd ---------------------- cleared ---------------------- hint ------d--------------- hints " ] ||
	fail "fsck.czfs --extract of SCHILY.fflags: $got"
st=0
"$FSCK" -q --extract "$T/ramfs/h" "$T/fflags.img" 2>"$T/err" || st=$?
[ $st = 8 ] && grep -q "chattr flags of 3 files not set" "$T/err" ||
	{ cat "$T/err" >&2; fail "fsck.czfs --extract to a ramfs: +c alone counted"; }
note "chattr flags: bsdtar --fflags and mkfs.czfs -d to lsattr, back through fsck.czfs --tar and --extract"

# ---- hostile tarballs: an error naming the member, no image ----------
hostile() {
	local name=$1 want=$2
	rm -f "$T/bad.img"
	if "$MKFS" -q --tar="$T/$name" "$T/bad.img" 2>"$T/err"; then
		fail "$name: mkfs.czfs succeeded"
	fi
	grep -q -- "$want" "$T/err" || { cat "$T/err" >&2; fail "$name: no '$want' in the message"; }
	! grep -q -e "(null)" -e "at byte -" "$T/err" ||
		{ cat "$T/err" >&2; fail "$name: a name or place that is none"; }
	[ ! -e "$T/bad.img" ] || fail "$name: an image was left"
}
python3 - "$T" <<'EOF'
import io, sys, tarfile
T = sys.argv[1]
def add(tf, name, data=b"", **kw):
    ti = tarfile.TarInfo(name)
    for k, v in kw.items():
        setattr(ti, k, v)
    ti.size = len(data) if ti.type == tarfile.REGTYPE else 0
    tf.addfile(ti, io.BytesIO(data) if ti.type == tarfile.REGTYPE else None)
with tarfile.open(f"{T}/dotdot.tar", "w", format=tarfile.PAX_FORMAT) as tf:
    add(tf, "ok", b"x")
    add(tf, "a/../../evil", b"y")
with tarfile.open(f"{T}/nolink.tar", "w", format=tarfile.GNU_FORMAT) as tf:
    add(tf, "ok", b"x")
    add(tf, "link", type=tarfile.LNKTYPE, linkname="never-seen")
with tarfile.open(f"{T}/linkup.tar", "w", format=tarfile.GNU_FORMAT) as tf:
    add(tf, "ok", b"x")
    add(tf, "link", type=tarfile.LNKTYPE, linkname="../ok")
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tf:
    add(tf, "first", b"1" * 600)
    add(tf, "second", b"2" * 600)
    add(tf, "third", b"3" * 600)
raw = bytearray(buf.getvalue())
open(f"{T}/trunc.tar", "wb").write(raw[:512 + 1024 + 512 + 300])
bad = bytearray(raw)
bad[1536 + 148] ^= 0x07			# second's checksum
open(f"{T}/cksum.tar", "wb").write(bad)
big = bytearray(raw)
big[1536 + 124:1536 + 136] = b"%011o\0" % 100	# second: 100 bytes said, 600 there
big[1536 + 148:1536 + 156] = b" " * 8
big[1536 + 148:1536 + 156] = b"%06o\0 " % sum(big[1536:2048])
open(f"{T}/larger.tar", "wb").write(big)
open(f"{T}/hdrcut.tar", "wb").write(raw[:1536 + 200])	# second's header cut
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
    add(tf, "p" * 120, b"x")		# a PAX header first, for the long name
open(f"{T}/paxcut.tar", "wb").write(buf.getvalue()[:600])
EOF
hostile dotdot.tar "member 'a/../../evil': its path has a '\.\.'"
hostile nolink.tar "member 'link'.*never-seen"
hostile linkup.tar "member 'link': its hard link target '\.\./ok' has a '\.\.'"
hostile trunc.tar "'second'.*runcated"
hostile cksum.tar "after 'first'"
hostile larger.tar "after 'second'"
hostile hdrcut.tar "the member after 'first': Truncated tar archive"
hostile paxcut.tar "paxcut.tar: the first member: cannot be read"
head -c 1000000 "$T/gnu.tgz" >"$T/cut.tgz"
hostile cut.tgz "runcated"
# decompressed on a thread of its own (unpack.c): the member still named
head -c 2000000 "$T/bsd.tzst" >"$T/cut.tzst"
hostile cut.tzst "member '[^']*': Truncated zstd input"
# not a tar file at all: said plainly (libarchive says "Failed to open")
mkdir -p "$T/a-dir"
hostile a-dir "a-dir: Is a directory"
hostile missing.tar "missing.tar: No such file or directory"
note "hostile: '..', unseen and escaping links, truncation, checksum, oversize; no tar file"

# An absolute member name loses its '/', as tar extracts it.
tar -C / -P -cf "$T/abs.tar" "$S/a/hello"
"$MKFS" -q --tar="$T/abs.tar" "$T/abs.img" 2>"$T/err"
grep -q "removing leading '/'" "$T/err" || fail "no word of the stripped '/'"
czfs_mount "$T/abs.img" "$T/m-abs" -o ro
[ "$(cat "$T/m-abs/${S#/}/a/hello")" = hello ] || fail "absolute member not under the root"
czfs_umount "$T/m-abs"

# ---- whiteouts ------------------------------------------------------------
L=$T/layer
mkdir -p "$L/d" "$L/e" "$T/base/d" "$T/base/e"
echo keep >"$L/d/keep"
: >"$L/d/.wh..wh..opq"
: >"$L/.wh.x"
: >"$L/e/.wh.gone"
echo old >"$T/base/d/old"
echo gone >"$T/base/e/gone"
echo stay >"$T/base/e/stay"
echo x >"$T/base/x"
echo y >"$T/base/y"
tar -C "$L" -cf "$T/layer.tar" .
"$MKFS" -q --tar="$T/layer.tar" "$T/keep.img"
czfs_mount "$T/keep.img" "$T/m-keep" -o ro
[ -f "$T/m-keep/.wh.x" ] && [ -f "$T/m-keep/d/.wh..wh..opq" ] ||
	fail "whiteouts not kept as plain files by default"
czfs_umount "$T/m-keep"
"$MKFS" -q --tar="$T/layer.tar" --tar-whiteouts=overlay "$T/wh.img"
W=$T/m-wh
czfs_mount "$T/wh.img" "$W" -o ro
[ "$(stat -c '%F %t:%T' "$W/x")" = "character special file 0:0" ] || fail "x is no whiteout"
[ "$(stat -c '%F %t:%T' "$W/e/gone")" = "character special file 0:0" ] || fail "e/gone is no whiteout"
[ ! -e "$W/d/.wh..wh..opq" ] && [ ! -e "$W/.wh.x" ] || fail ".wh. names left"
[ "$(getfattr --absolute-names --only-values -n trusted.overlay.opaque "$W/d")" = y ] || fail "d is not opaque"
O=$T/ovl
mkdir -p "$O"
mount -t overlay overlay -o "lowerdir=$W:$T/base" "$O"
EXTRA_MOUNTS+=("$O")
seen=$(cd "$O" && find . | LC_ALL=C sort | tr '\n' ' ')
umount "$O"		# before any failure: it holds the czfs mount
[ "$seen" = ". ./d ./d/keep ./e ./e/stay ./y " ] || fail "overlayfs over the layer: $seen"
note "whiteouts: kept by default; overlay: 0/0 devices, opaque dir, as overlayfs reads them"
