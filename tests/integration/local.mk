# Mounted integration tests (root and /dev/fuse; CI has both).
noinst_PROGRAMS += tests/czfs-locate
tests_czfs_locate_SOURCES = tests/czfs_locate.c
tests_czfs_locate_LDADD = $(CZFS_LIBS)
noinst_PROGRAMS += tests/czfs-corrupt
tests_czfs_corrupt_SOURCES = tests/czfs_corrupt.c
tests_czfs_corrupt_LDADD = $(CZFS_LIBS)
noinst_PROGRAMS += tests/czfs-replay
tests_czfs_replay_SOURCES = tests/czfs_replay.c
tests_czfs_replay_LDADD = $(CZFS_LIBS)

INTEGRATION_TESTS = \
	tests/integration/sample_data.sh \
	tests/integration/fuse_cli.sh \
	tests/integration/mount_helper.sh \
	tests/integration/man_options.sh \
	tests/integration/mount_roundtrip.sh \
	tests/integration/bigdir.sh \
	tests/integration/bigfile.sh \
	tests/integration/concurrent.sh \
	tests/integration/damaged.sh \
	tests/integration/options.sh \
	tests/integration/pool_memory.sh \
	tests/integration/inode_memory.sh \
	tests/integration/direct_reads.sh \
	tests/integration/ro_requests.sh \
	tests/integration/random_reads.sh \
	tests/integration/fsck_cli.sh \
	tests/integration/fsck_clean.sh \
	tests/integration/fsck_damage.sh \
	tests/integration/fsck_pack.sh \
	tests/integration/fsck_runs.sh \
	tests/integration/leafpack.sh \
	tests/integration/dump.sh \
	tests/integration/rw_basic.sh \
	tests/integration/remote_http.sh \
	tests/integration/remote_cache.sh \
	tests/integration/remote_faults.sh \
	tests/integration/remote_s3.sh \
	tests/integration/remote_swift.sh
TESTS += $(INTEGRATION_TESTS)
EXTRA_DIST += $(INTEGRATION_TESTS) tests/integration/lib.sh \
	tests/integration/cacheslib.sh \
	tests/integration/fscklib.sh \
	tests/integration/mktree.sh tests/integration/remotelib.sh \
	tests/integration/swiftlib.sh \
	tests/integration/faultproxy.py tests/integration/s3server.py

include tests/integration/mkfs.mk
include tests/integration/rw.mk
include tests/integration/space.mk
