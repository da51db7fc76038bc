# Unit tests (Check, one program per module) and mounted integration tests.
# CK_DEFAULT_TIMEOUT: a test case that sets no timeout of its own gets 120 s
# (Check's default, 4 s, failed slow cases of a sanitizer build on a loaded
# machine); a hang guard, no test asserts on time.
TESTS_ENVIRONMENT = top_builddir='$(abs_top_builddir)' \
	top_srcdir='$(abs_top_srcdir)' CZFS_SANITIZE='$(CZFS_SANITIZE)' \
	CK_DEFAULT_TIMEOUT=120; \
	export top_builddir top_srcdir CZFS_SANITIZE CK_DEFAULT_TIMEOUT;
EXTRA_DIST += tests/sample-data
include tests/unit/local.mk
include tests/integration/local.mk

