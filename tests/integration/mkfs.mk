# mkfs command-line and image tests (no mount needed).
# TESTS_ENVIRONMENT (top_builddir, top_srcdir) comes from tests/local.mk.
MKFS_TESTS = \
	tests/integration/mkfs_cli.sh \
	tests/integration/mkfs_repro.sh
TESTS += $(MKFS_TESTS)
EXTRA_DIST += $(MKFS_TESTS)
