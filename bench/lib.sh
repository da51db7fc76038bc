# Shared helpers of the benchmarks (sourced).  Benchmarks print numbers;
# they are not tests.  Mounts are cleaned up on exit.
set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN="$top/build"
MKFS="$BIN/mkfs/mkfs.czfs"
FUSE="$BIN/src/fuse/czfs-fuse"
CORPUS="${CZFS_CORPUS:-}"	# the Silesia corpus (*.zip), if you have it
W="${CZFS_BENCH_DIR:-/var/tmp/czfs-bench}"
RUNS="${RUNS:-3}"

declare -a BENCH_MOUNTS=()

bench_cleanup() {
	local m
	for m in "${BENCH_MOUNTS[@]}"; do
		mountpoint -q "$m" && { fusermount3 -u "$m" 2>/dev/null || umount -l "$m"; }
	done
	return 0
}
trap bench_cleanup EXIT

# drop_caches: under the lock the tests take around a walk whose requests
# they count, so that a benchmark beside them never drops their dentries
# mid-walk.
. "$top/tests/integration/cacheslib.sh"

bench_setup() {
	[ "$(id -u)" = 0 ] || { echo "benchmarks need root (drop_caches, mounts)" >&2; exit 1; }
	"$top/scripts/install-deps" bench
	(cd "$top" && [ -x configure ] || autoreconf -fi >/dev/null)
	"$top/scripts/build" build
	mkdir -p "$W"
}

# Real data to SIZE MiB in FILE: the Silesia corpus (CZFS_CORPUS) or, by
# default, the test suite's sample data (this system's own files),
# concatenated and repeated.
make_real_file() {
	local file=$1 mib=$2 tmp
	[ -s "$file" ] && [ "$(stat -c %s "$file")" = $((mib << 20)) ] && return 0
	tmp=$(mktemp -d "$W/corpus.XXXXXX")
	if [ -n "$CORPUS" ]; then
		for z in "$CORPUS"/*.zip; do unzip -qo "$z" -d "$tmp"; done
	else
		"$top/tests/sample-data" "$tmp"
	fi
	mkdir -p "$(dirname "$file")"
	# cat fails once head has enough: that ends the loop
	while cat "$tmp"/*; do :; done 2>/dev/null | head -c $((mib << 20)) >"$file" || true
	rm -rf "$tmp"
}

make_zero_file() {
	local file=$1 mib=$2
	[ -s "$file" ] && [ "$(stat -c %s "$file")" = $((mib << 20)) ] && return 0
	mkdir -p "$(dirname "$file")"
	dd if=/dev/zero of="$file" bs=1M count="$mib" status=none
}

# mount_bg MNT CMD...: run a FUSE daemon in the foreground in the
# background, wait for the mount; prints the daemon's pid.
mount_bg() {
	local mnt=$1 i
	shift
	mkdir -p "$mnt"
	"$@" >"$W/daemon.log" 2>&1 &
	local pid=$!
	BENCH_MOUNTS+=("$mnt")
	for i in $(seq 1 100); do
		mountpoint -q "$mnt" && { echo "$pid"; return 0; }
		sleep 0.1
	done
	cat "$W/daemon.log" >&2
	echo "mount on $mnt failed" >&2
	exit 1
}

umount_bg() {
	local i
	fusermount3 -u "$1" 2>/dev/null || umount -l "$1"
	# a writable czfs mount checkpoints after the unmount: the image is
	# ready (and unlocked) when its daemon has exited
	for i in $(seq 1 300); do
		pgrep -f -- " $1( |$)" >/dev/null || break
		sleep 0.1
	done
}

# set_ra MNT: the mount's kernel readahead (its bdi's read_ahead_kb) to
# RA_KB, as czfs-fuse sets its own (kernel_readahead, 1024 KiB by default):
# peers are compared at equal readahead.  RA_BEFORE is what it had.
RA_KB=${RA_KB:-1024}
set_ra() {
	local f
	f="/sys/class/bdi/$(mountpoint -d "$1")/read_ahead_kb"
	RA_BEFORE=$(cat "$f" 2>/dev/null || echo "?")
	echo "$RA_KB" >"$f" 2>/dev/null ||
		echo "warning: cannot set $f to $RA_KB" >&2
}

ra_of() {
	cat "/sys/class/bdi/$(mountpoint -d "$1")/read_ahead_kb" 2>/dev/null || echo "?"
}

# CPU seconds (user + system) a process has used, all threads.
proc_cpu() {
	[ -n "${1:-}" ] && [ -r "/proc/$1/stat" ] || { echo 0; return; }
	awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat"
}

# dd_cold FILE PID: drop caches, dd it with bs=512k; prints
# "MB/s cpu_s_per_GB" (CPU of dd plus the daemon PID, if any).
dd_cold() {
	local file=$1 pid=${2:-} c0 c1 out secs bytes user sys
	drop_caches
	c0=$(proc_cpu "$pid")
	out=$( { TIMEFORMAT='%U %S'; time dd if="$file" of=/dev/null bs=512k 2>&1; } 2>&1 )
	c1=$(proc_cpu "$pid")
	grep copied <<<"$out" >"$W/last_dd"
	bytes=$(awk '/copied/ {print $1}' <<<"$out")
	secs=$(awk '/copied/ {for (i = 1; i <= NF; i++) if ($i == "s,") print $(i-1)}' <<<"$out")
	read -r user sys < <(tail -1 <<<"$out")
	awk -v b="$bytes" -v s="$secs" -v u="$user" -v y="$sys" -v c0="$c0" -v c1="$c1" \
		'BEGIN { printf "%.0f %.2f\n", b / s / 1e6, (u + y + c1 - c0) / (b / 1e9) }'
}

# A counter of a czfs mount (czfs-stat).
czfs_counter() {
	"$BIN/src/fuse/czfs-stat" "$1" | awk -v k="$2" '$1 == k { print $2 }'
}

median() {
	printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'
}

# --- the floor and the peers of issue 33: per-GB costs of a cold read ---

# proc_ctxsw PID: context switches (voluntary + involuntary) of all of a
# daemon's live threads (/proc/PID/task/*/status); 0 without PID.
proc_ctxsw() {
	[ -n "${1:-}" ] && [ -d "/proc/$1/task" ] || { echo 0; return; }
	cat /proc/"$1"/task/*/status 2>/dev/null |
		awk '/^(voluntary|nonvoluntary)_ctxt_switches:/ { n += $2 } END { print n + 0 }'
}

# proc_mem PID: "VmRSS VmHWM" of a process in MiB (- - without PID).
proc_mem() {
	[ -n "${1:-}" ] && [ -r "/proc/$1/status" ] || { echo "- -"; return; }
	awk '/^VmRSS:/ { r = $2 } /^VmHWM:/ { h = $2 }
		END { printf "%.1f %.1f\n", r / 1024, h / 1024 }' "/proc/$1/status"
}

# ctxsw_start PID / ctxsw_stop: context switches of a daemon over an
# interval, all its threads, including those that start or end in it
# (libfuse's workers come and go: /proc/PID/task misses them), counted by
# perf stat -p; without perf, the difference of proc_ctxsw.  ctxsw_stop
# sets CTXSW_N (not a command substitution: perf is this shell's child).
ctxsw_start() {
	CTXSW_PID=${1:-} CTXSW_PERF= CTXSW0=
	[ -n "$CTXSW_PID" ] || return 0
	if command -v perf >/dev/null; then
		rm -f "$W/perf.out"
		perf stat -e context-switches -x, -p "$CTXSW_PID" -o "$W/perf.out" 2>/dev/null &
		CTXSW_PERF=$!
		sleep 0.3	# attached
	fi
	CTXSW0=$(proc_ctxsw "$CTXSW_PID")
}
ctxsw_stop() {
	local n=
	CTXSW_N=0
	[ -n "$CTXSW_PID" ] || return 0
	if [ -n "$CTXSW_PERF" ]; then
		kill -INT "$CTXSW_PERF" 2>/dev/null
		wait "$CTXSW_PERF" 2>/dev/null || true
		n=$(awk -F, '$3 == "context-switches" { print ($1 ~ /^[0-9]+$/) ? $1 : 0 }' "$W/perf.out" 2>/dev/null)
	fi
	CTXSW_N=${n:-$(( $(proc_ctxsw "$CTXSW_PID") - CTXSW0 ))}
}

# cold_cost PID CMD...: drop caches, run CMD (a reader) with the daemon
# PID (may be empty) serving it; prints "wall_s reader_cpu_s daemon_cpu_s
# daemon_ctxsw reader_ctxsw".  The reader's CPU and context switches are
# its rusage (with its children's), from GNU time.
cold_cost() {
	local pid=$1 c0 c1 t0 t1 ru dcs
	shift
	drop_caches
	ctxsw_start "$pid"
	c0=$(proc_cpu "$pid")
	t0=$(date +%s.%N)
	/usr/bin/time -f '%U %S %w %c' -o "$W/last_rusage" "$@" >/dev/null
	t1=$(date +%s.%N)
	c1=$(proc_cpu "$pid")
	ctxsw_stop
	dcs=$CTXSW_N
	ru=$(tail -1 "$W/last_rusage")
	awk -v t0="$t0" -v t1="$t1" -v c0="$c0" -v c1="$c1" -v dcs="$dcs" -v ru="$ru" 'BEGIN {
		split(ru, r, " ")
		printf "%.3f %.3f %.3f %d %d\n", t1 - t0, r[1] + r[2], c1 - c0, dcs, r[3] + r[4] }'
}

# bench_cc NAME CC_ARGS...: bench/NAME.c (a helper program of the benches,
# not part of czfs) compiled into $W/NAME, again when the source is newer;
# prints its path, or nothing (with a message) when it cannot be built.
bench_cc() {
	local name=$1 src="$top/bench/$1.c" bin="$W/$1"
	shift
	if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
		cc -O2 -o "$bin" "$src" "$@" >&2 || {
			echo "$name: cannot build $src: skipped" >&2
			return 0
		}
	fi
	echo "$bin"
}

# clone_newest GIT PREFIX NAME: a clone of GIT at its newest PREFIX<version>
# tag in $W/NAME-<tag> (kept for the next run); prints its path, nothing
# without network.
clone_newest() {
	local tag src
	tag=$(timeout 30 git ls-remote --tags --refs "$1" "$2*" 2>/dev/null |
		sed 's,.*refs/tags/,,' | grep -E "^$2[0-9.]+\$" | sort -V | tail -1) || true
	[ -n "$tag" ] || return 0
	src="$W/$3-$tag"
	[ -d "$src" ] || { rm -rf "$src.tmp" &&
		timeout 300 git clone -q --depth 1 --branch "$tag" "$1" "$src.tmp" &&
		mv "$src.tmp" "$src"; } >&2 || return 0
	echo "$src"
}

# earlier_build PREFIX WHAT: the newest $W/PREFIX* (a build of an earlier
# run), with a message; prints nothing when there is none.
earlier_build() {
	local dir
	dir=$(ls -d "$W/$1"*/ 2>/dev/null | sort -V | tail -1) || true
	[ -n "$dir" ] || return 0
	echo "$2: no source given, no network: the earlier build in ${dir%/}" >&2
	echo "${dir%/}"
}

# build_erofs: erofsfuse and mkfs.erofs of erofs-utils (Debian 12 has no
# erofsfuse, and its mkfs.erofs 1.5 no zstd), built from a source tree
# into a scratch folder of $W, kept for the next run.  The source:
# EROFS_SRC=DIR (a checkout or release tree), else a clone of EROFS_GIT at
# its newest v* tag when the network allows, else the newest earlier
# build in $W; EROFS_BIN=DIR, an erofs-utils build directory (its
# fuse/erofsfuse and mkfs/mkfs.erofs), skips all that.  Sets EROFSFUSE and
# MKFS_EROFS, both empty (with a message) when there is none.
EROFS_GIT=${EROFS_GIT:-https://github.com/erofs/erofs-utils.git}
build_erofs() {
	local src=${EROFS_SRC:-} ver dir
	EROFSFUSE= MKFS_EROFS=
	if [ -n "${EROFS_BIN:-}" ]; then
		dir=$EROFS_BIN
	elif [ -n "$src" ] && [ ! -f "$src/configure.ac" ]; then
		echo "erofs: EROFS_SRC=$src is not an erofs-utils source tree" >&2
		src=
	elif [ -z "$src" ]; then
		src=$(clone_newest "$EROFS_GIT" v erofs-src)
		[ -n "$src" ] || dir=$(earlier_build erofs-utils-v erofs)
	fi
	if [ -n "$src" ]; then
		# a release tree's VERSION; a checkout's tag (not that of a
		# repository the tree happens to sit in)
		ver=$( { [ -e "$src/.git" ] && git -C "$src" describe --tags; } 2>/dev/null ||
			head -1 "$src/VERSION" 2>/dev/null || echo src)
		dir="$W/erofs-utils-v${ver#v}"
		if [ ! -x "$dir/fuse/erofsfuse" ] || [ ! -x "$dir/mkfs/mkfs.erofs" ]; then
			echo "erofs: building erofs-utils $ver from $src in $dir" >&2
			rm -rf "$dir" && mkdir -p "$dir" && cp -a "$src/." "$dir/" &&
			(cd "$dir" && ./autogen.sh && ./configure --enable-fuse --enable-lz4 \
				--with-libzstd --disable-lzma --without-zlib --without-xxhash \
				--without-libcurl --without-openssl --without-libxml2 \
				--without-json-c --without-libnl3 && nice make -j2) \
				>"$W/erofs-build.log" 2>&1 ||
				echo "erofs: the build failed (see $W/erofs-build.log)" >&2
		fi
	fi
	if [ -z "${dir:-}" ] || [ ! -x "$dir/fuse/erofsfuse" ] || [ ! -x "$dir/mkfs/mkfs.erofs" ]; then
		echo "erofs: erofsfuse skipped: set EROFS_SRC=DIR to an erofs-utils source tree" \
			"(or EROFS_BIN=DIR to its built fuse/erofsfuse and mkfs/mkfs.erofs)" >&2
		return 0
	fi
	EROFSFUSE=$dir/fuse/erofsfuse MKFS_EROFS=$dir/mkfs/mkfs.erofs
	echo "erofs: $("$MKFS_EROFS" --version 2>&1 | head -1) in $dir" >&2
}

# build_passthrough_hp: libfuse's example/passthrough_hp, the FUSE peer of
# the write benches (issue 34), built (meson, ninja) into a scratch folder
# of $W, kept for the next run.  The source: LIBFUSE_SRC=DIR (a checkout
# or release tree), else a clone of LIBFUSE_GIT at its newest fuse-* tag
# when the network allows, else the newest earlier build in $W;
# PASSTHROUGH_HP=PATH, a built binary, skips all that.  Sets
# PASSTHROUGH_HP, empty (with a message) when there is none, and PT_ARGS:
# --nopassthrough when it has it (data through the daemon, as czfs's).
# PT_URING=1: built with FUSE-over-io_uring (liburing-dev), in folders of
# their own (libfuse-uring-build-*), for bench/transport.
LIBFUSE_GIT=${LIBFUSE_GIT:-https://github.com/libfuse/libfuse.git}
build_passthrough_hp() {
	local src=${LIBFUSE_SRC:-} ver dir='' bin uring=false pre=libfuse-build-
	[ "${PT_URING:-0}" = 1 ] && uring=true pre=libfuse-uring-build-
	PT_ARGS=
	if [ -n "${PASSTHROUGH_HP:-}" ]; then
		bin=$PASSTHROUGH_HP
	elif [ -n "$src" ] && [ ! -f "$src/example/passthrough_hp.cc" ]; then
		echo "passthrough_hp: LIBFUSE_SRC=$src is not a libfuse source tree" >&2
		src=
	elif [ -z "$src" ]; then
		src=$(clone_newest "$LIBFUSE_GIT" fuse- libfuse-src)
		[ -n "$src" ] || dir=$(earlier_build "$pre" passthrough_hp)
	fi
	if [ -n "$src" ]; then
		ver=$( { [ -e "$src/.git" ] && git -C "$src" describe --tags; } 2>/dev/null ||
			sed -n "s/^ *version: *'\([^']*\)'.*/\1/p" "$src/meson.build" | head -1)
		dir="$W/$pre${ver:-src}"
		if [ ! -x "$dir/example/passthrough_hp" ]; then
			echo "passthrough_hp: building libfuse ${ver:-} from $src in $dir" >&2
			rm -rf "$dir" &&
			meson setup "$dir" "$src" -Dutils=false -Dtests=false \
				-Denable-io-uring=$uring -Dbuildtype=release >"$W/libfuse-build.log" 2>&1 &&
			nice ninja -C "$dir" -j2 example/passthrough_hp >>"$W/libfuse-build.log" 2>&1 ||
				echo "passthrough_hp: the build failed (see $W/libfuse-build.log)" >&2
		fi
	fi
	[ -n "${bin:-}" ] || bin=${dir:+$dir/example/passthrough_hp}
	if [ -z "${bin:-}" ] || [ ! -x "$bin" ]; then
		echo "passthrough_hp skipped: set LIBFUSE_SRC=DIR to a libfuse source tree" \
			"(or PASSTHROUGH_HP=PATH to a built example/passthrough_hp)" >&2
		PASSTHROUGH_HP=
		return 0
	fi
	PASSTHROUGH_HP=$bin
	case $("$bin" --help 2>&1) in *--nopassthrough*) PT_ARGS=--nopassthrough ;; esac
	echo "passthrough_hp: $bin ${PT_ARGS:-(no --nopassthrough)}" >&2
}

# ratio A B: A / B with two decimals; - when either is missing (empty or
# -) or B is not above 0.
ratio() {
	case "${1:-}" in ''|-) echo -; return ;; esac
	case "${2:-}" in ''|-) echo -; return ;; esac
	[ "$(bc -l <<<"$2 > 0")" = 1 ] || { echo -; return; }
	bc -l <<<"$1 / $2" | xargs printf '%.2f'
}
