# mounted integration tests
include tests/integration/mkfs.mk
