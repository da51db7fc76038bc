# Unit tests (Check, one program per module) and mounted integration tests.
TESTS_ENVIRONMENT = top_builddir='$(abs_top_builddir)' \
	top_srcdir='$(abs_top_srcdir)' CZFS_SANITIZE='$(CZFS_SANITIZE)'; \
	export top_builddir top_srcdir CZFS_SANITIZE;
EXTRA_DIST += tests/sample-data
include tests/unit/local.mk
include tests/integration/local.mk

