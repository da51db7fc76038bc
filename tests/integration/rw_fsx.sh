#!/bin/bash
# The fsx-style exerciser (tests/fsx/czfs_fsx) on the target: several seeds
# times several configurations, each checked against the model after every
# op; then, after a remount where the target allows one, every file again
# against the model the exerciser dumped.
#
# On czfs each configuration is a fresh image: CODEC:CLUSTER pairs cover
# the default cluster (64k), 4k and 256k and every codec.  On tmpfs and
# ext4 the cluster size only sets the boundary czfs_fsx favours (-c).
#
#   CZFS_FSX_SEEDS   seeds (default "1 2 3")
#   CZFS_FSX_OPS     ops per run (default 3000: about 60 s on czfs in CI)
#   CZFS_FSX_CONFIGS CODEC:CLUSTER list (default "lz4:64k zstd:4k lz4hc:256k")
#   CZFS_FSX_ARGS    more czfs_fsx options (for example "-l 16M")
# A long run: CZFS_FSX_OPS=200000 CZFS_FSX_SEEDS="$(seq 1 20)".
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/rwlib.sh"
# with recompression at work underneath: a cluster written in part and
# left a second is compressed again while the test goes on
[ "$RW_TARGET" != czfs ] || RW_MOUNT_OPTS+=(-o recompress=1)
require_fuse
[ -x "$FSX" ] || fail "$FSX not built"

seeds=${CZFS_FSX_SEEDS:-1 2 3}
ops=${CZFS_FSX_OPS:-3000}
configs=${CZFS_FSX_CONFIGS:-lz4:64k zstd:4k lz4hc:256k}
read -r -a extra <<<"${CZFS_FSX_ARGS:-}"

# run_fsx NAME SEED CLUSTER [options]: one run; its model in $T/NAME.model.
run_fsx() {
	local name=$1 seed=$2 cluster=$3
	shift 3
	"$FSX" -N "$ops" -S "$seed" -c "$cluster" -Z -d "$T/$name.model" \
		"${extra[@]}" "$@" "$M/$name" >"$T/$name.log" 2>&1 || {
		cat "$T/$name.log" >&2
		fail "czfs_fsx $name (seed $seed, -c $cluster) failed"
	}
	tail -n +2 "$T/$name.log" | grep -q skipped &&
		note "$name: $(grep skipped "$T/$name.log" | tr -s ' ' | tr '\n' ';')"
	return 0
}

# Every file of this configuration against its model.
check_models() {
	local m name
	for m in "$T"/*.model; do
		name=$(basename "$m" .model)
		cmp "$m" "$M/$name" || fail "$name differs from its model after $1"
	done
}

# The exerciser must catch a fault: a model byte inverted after op 50.
self_test() {
	if "$FSX" -N 2000 -S 9 -X 50 "$M/selftest" >"$T/selftest.log" 2>&1; then
		fail "czfs_fsx -X did not detect the injected fault"
	fi
	grep -q '^MISMATCH' "$T/selftest.log" ||
		{ cat "$T/selftest.log" >&2; fail "czfs_fsx -X failed without a mismatch report"; }
	rm -f "$M/selftest"
}

start=$(date +%s)
first=1
for config in $configs; do
	codec=${config%%:*}
	cluster=${config#*:}
	if [ "$RW_TARGET" = czfs ] || [ $first = 1 ]; then
		if [ $first = 0 ]; then
			rw_umount
			rw_fsck
		fi
		rm -f "$T"/*.model
		rw_setup 2G -c "$codec" -C "$cluster"
	fi
	[ $first = 1 ] && self_test
	first=0
	for seed in $seeds; do
		run_fsx "fsx.$codec.$cluster.$seed" "$seed" "$cluster"
		if rw_can_remount; then
			rw_remount
			check_models "a remount"
		fi
	done
	# a run with mmap and fallocate off: plain read/write/truncate paths
	run_fsx "fsx.$codec.$cluster.plain" 100 "$cluster" -M -F
	check_models "the runs"
done
if rw_can_remount; then
	rw_remount
	check_models "the last remount"
	rw_umount
	rw_fsck
else
	note "tmpfs: no remount, models checked on the live mount only"
fi
note "$RW_TARGET: $(echo $seeds | wc -w) seeds x $(echo $configs | wc -w) configs, $ops ops each, $(($(date +%s) - start)) s"
