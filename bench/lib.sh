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

# proc_mem PID: "VmRSS VmHWM" of a process now, in MiB (0 0 if gone).
proc_mem() {
	awk '/^VmRSS:/ { r = $2 } /^VmHWM:/ { h = $2 }
		END { printf "%.0f %.0f\n", r / 1024, h / 1024 }' "/proc/$1/status" 2>/dev/null ||
		echo "0 0"
}

# dd_cold FILE PID: drop caches, dd it with bs=512k; prints
# "MB/s cpu_s_per_GB" (CPU of dd plus the daemon PID, if any).
dd_cold() {
	local file=$1 pid=${2:-} c0 c1 out secs bytes user sys
	sync
	echo 3 >/proc/sys/vm/drop_caches
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
