// SPDX-License-Identifier: MIT
/* libFuzzer target: an image from the fuzzer's bytes. */
#include "config.h"

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	czfs_fuzz_image(data, size);
	return 0;
}
