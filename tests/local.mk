# Unit tests (Check, one program per module) and mounted integration tests.
TESTS_ENVIRONMENT = top_builddir='$(abs_top_builddir)' \
	top_srcdir='$(abs_top_srcdir)' CZFS_SANITIZE='$(CZFS_SANITIZE)' \
	CZFS_CORPUS="$$($(abs_top_srcdir)/tests/find-corpus 2>/dev/null)"; \
	export top_builddir top_srcdir CZFS_SANITIZE CZFS_CORPUS;
EXTRA_DIST += tests/find-corpus
include tests/unit/local.mk
include tests/integration/local.mk

