# mkfs command-line, reproducibility, layout and tar tests (several mount).
# TESTS_ENVIRONMENT (top_builddir, top_srcdir) comes from tests/local.mk.
MKFS_TESTS = \
	tests/integration/mkfs_cli.sh \
	tests/integration/mkfs_repro.sh \
	tests/integration/mkfs_layout.sh \
	tests/integration/mkfs_pack.sh \
	tests/integration/mkfs_tar.sh
TESTS += $(MKFS_TESTS)
EXTRA_DIST += $(MKFS_TESTS)
