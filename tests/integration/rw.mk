# Read-write tests (issue 5).  They take their target from CZFS_RW_TARGET
# (czfs by default; tmpfs or ext4 to check the harness itself, see
# tests/integration/rwlib.sh).  They run with every other test in
# `make check`; `make check-rw` runs just them.
RW_TESTS = \
	tests/integration/rw_posix.sh \
	tests/integration/rw_fsx.sh \
	tests/integration/rw_stress.sh \
	tests/integration/rw_append_read.sh \
	tests/integration/rw_enospc.sh \
	tests/integration/rw_crash.sh \
	tests/integration/rw_fio.sh \
	tests/integration/rw_fileapi.sh \
	tests/integration/rw_chattr.sh \
	tests/integration/rw_pack.sh \
	tests/integration/rw_mpack.sh \
	tests/integration/rw_hot.sh \
	tests/integration/rw_recompress.sh \
	tests/integration/rw_fsync.sh \
	tests/integration/rw_fsync_inflight.sh \
	tests/integration/powerloss.sh \
	tests/integration/rw_size_order.sh \
	tests/integration/rw_wbpool.sh
TESTS += $(RW_TESTS)
EXTRA_DIST += $(RW_TESTS) tests/integration/rwlib.sh \
	tests/integration/rw_posix.py tests/integration/rw_stress.py \
	tests/integration/rw_append_read.py \
	tests/integration/rw_enospc.py tests/integration/rw_crash.py \
	tests/integration/rw_hot.py tests/integration/rw_recompress.py \
	tests/integration/powerloss.py

# The differential POSIX oracle (issue 31): czfs against ext4 itself, so
# not one of the RW_TESTS that take their target from CZFS_RW_TARGET.
TESTS += tests/integration/posix_oracle.sh
EXTRA_DIST += tests/integration/posix_oracle.sh \
	tests/integration/posix_oracle.py

# make check-rw CZFS_RW_TARGET=ext4: run them by hand on any target.
check-rw: all
	@set -e; for t in $(RW_TESTS); do \
		echo "== $$t"; \
		$(TESTS_ENVIRONMENT) bash $(srcdir)/$$t; \
	done
.PHONY: check-rw
