# Space tests (issue 11): st_blocks, giving freed space back to the host,
# compact allocation, growing an image, fallocate's promise.
SPACE_TESTS = \
	tests/integration/space_blocks.sh \
	tests/integration/space_falloc.sh \
	tests/integration/space_host.sh \
	tests/integration/space_grow.sh \
	tests/integration/space_autogrow.sh
TESTS += $(SPACE_TESTS)
EXTRA_DIST += $(SPACE_TESTS)
